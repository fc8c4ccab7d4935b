//! Mutual TLS between controller and workers: one private CA (`sluice
//! keygen`), a worker certificate that may only serve (serverAuth) and a
//! controller certificate that may only be a client (clientAuth). A worker
//! accepts a connection only from a client whose certificate chains to
//! the CA and is meant for clients, so neither an outside certificate nor a
//! worker's own can drive it. Workers are addressed by IP; they all prove
//! the name [`WORKER_NAME`] (plus any `--san` given to keygen).

use crate::error::{input, Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The name every worker certificate carries and the controller checks.
pub const WORKER_NAME: &str = "sluice-worker";

/// Files of a key directory.
pub const CA_CERT: &str = "ca.pem";
pub const CA_KEY: &str = "ca.key";
pub const WORKER_CERT: &str = "worker.pem";
pub const WORKER_KEY: &str = "worker.key";
pub const CONTROLLER_CERT: &str = "controller.pem";
pub const CONTROLLER_KEY: &str = "controller.key";
/// Every file of a key directory.
pub const FILES: [&str; 6] = [
    CA_CERT,
    CA_KEY,
    WORKER_CERT,
    WORKER_KEY,
    CONTROLLER_CERT,
    CONTROLLER_KEY,
];

/// Writes a CA and a worker and a controller certificate into `dir`
/// (created if missing). Refuses to overwrite: an existing key directory
/// is someone's trust. Keys are written mode 0600, each file atomically.
pub fn keygen(dir: &Path, sans: &[String]) -> Result<Vec<PathBuf>> {
    for n in FILES {
        let p = dir.join(n);
        if p.exists() {
            return Err(input!(
                "{}: exists; keygen never overwrites keys (use another directory)",
                p.display()
            ));
        }
    }
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.distinguished_name.push(DnType::CommonName, "sluice CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    // Not for ever (rcgen's default is the year 4096): the CA for 10
    // years, the two leaves for 2; a compromised key ages out, and a new
    // `keygen` replaces all three.
    let year = this_year();
    ca.not_before = rcgen::date_time_ymd(year - 1, 1, 1);
    ca.not_after = rcgen::date_time_ymd(year + 10, 1, 1);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, &ca_key);

    let leaf =
        |cn: &str, names: Vec<String>, eku: ExtendedKeyUsagePurpose| -> Result<(String, String)> {
            let key = KeyPair::generate()?;
            let mut p = CertificateParams::new(names)?;
            p.distinguished_name.push(DnType::CommonName, cn);
            p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
            p.not_before = rcgen::date_time_ymd(year - 1, 1, 1);
            p.not_after = rcgen::date_time_ymd(year + 2, 1, 1);
            p.extended_key_usages = vec![eku];
            let cert = p.signed_by(&key, &issuer)?;
            Ok((cert.pem(), key.serialize_pem()))
        };
    let mut worker_names = vec![WORKER_NAME.to_string()];
    worker_names.extend(sans.iter().cloned());
    let (wc, wk) = leaf(
        "sluice worker",
        worker_names,
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    let (cc, ck) = leaf(
        "sluice controller",
        vec!["sluice-controller".into()],
        ExtendedKeyUsagePurpose::ClientAuth,
    )?;
    let files = [
        (CA_CERT, ca_cert.pem(), false),
        (CA_KEY, ca_key.serialize_pem(), true),
        (WORKER_CERT, wc, false),
        (WORKER_KEY, wk, true),
        (CONTROLLER_CERT, cc, false),
        (CONTROLLER_KEY, ck, true),
    ];
    // All or nothing: every file is written in a private staging
    // directory beside the target, then moved in; a failure (a full disk)
    // leaves nothing that would block a re-run.
    let parent = sluice_sys::output::parent_dir(dir);
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".sluice-keygen.")
        .tempdir_in(parent)
        .with_context(|| format!("a staging directory in {}", parent.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("{}: making it private", staging.path().display()))?;
    }
    for (name, text, secret) in &files {
        write_new(&staging.path().join(name), text.as_bytes(), *secret)?;
    }
    let out: Vec<PathBuf> = files.iter().map(|(n, _, _)| dir.join(n)).collect();
    if !dir.exists() {
        std::fs::rename(staging.path(), dir)
            .with_context(|| format!("moving the keys to {}", dir.display()))?;
        let _ = staging.keep();
        return Ok(out);
    }
    let mut moved = Vec::new();
    for (name, _, _) in &files {
        let to = dir.join(name);
        if let Err(e) = std::fs::rename(staging.path().join(name), &to) {
            for m in &moved {
                let _ = std::fs::remove_file(m);
            }
            return Err(input!("moving the keys to {}: {e}", dir.display()));
        }
        moved.push(to);
    }
    Ok(out)
}

/// Writes a new file (mode 0600 for a secret, else 0644) and syncs it.
fn write_new(path: &Path, data: &[u8], secret: bool) -> Result<()> {
    sluice_sys::secret::write_new(path, data, secret)
        .with_context(|| format!("writing {}", path.display()))
}

/// The current year (UTC), near enough for validity periods.
fn this_year() -> i32 {
    let secs = sluice_sys::clock::realtime_ns() / 1_000_000_000;
    1970 + (secs / 31_556_952) as i32
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let p = dir.join(name);
    // PEM certificates and keys: a few KiB each.
    sluice_sys::input::read_capped(&p, 1 << 20, "certificate or key file")
        .with_context(|| format!("{}: cannot read (made by sluice keygen?)", p.display()))
}

fn certs(dir: &Path, name: &str) -> Result<Vec<CertificateDer<'static>>> {
    let pem = read(dir, name)?;
    let v: Vec<_> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| input!("{}: {e}", dir.join(name).display()))?;
    if v.is_empty() {
        return Err(input!("{}: no certificate", dir.join(name).display()));
    }
    Ok(v)
}

fn key(dir: &Path, name: &str) -> Result<PrivateKeyDer<'static>> {
    let pem = read(dir, name)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| input!("{}: {e}", dir.join(name).display()))
}

/// The worker's side: its certificate, and clients must present one that
/// chains to the CA with the clientAuth usage.
pub fn server_config(dir: &Path) -> Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in certs(dir, CA_CERT)? {
        roots.add(c).context("the CA certificate")?;
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .context("client verifier")?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs(dir, WORKER_CERT)?, key(dir, WORKER_KEY)?)
        .context("the worker certificate and key")?;
    // gRPC runs over HTTP/2.
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

/// The controller's side: the CA to check workers by, its own identity.
pub fn client_config(dir: &Path) -> Result<tonic::transport::ClientTlsConfig> {
    use tonic::transport::{Certificate, ClientTlsConfig, Identity};
    Ok(ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read(dir, CA_CERT)?))
        .identity(Identity::from_pem(
            read(dir, CONTROLLER_CERT)?,
            read(dir, CONTROLLER_KEY)?,
        ))
        .domain_name(WORKER_NAME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keygen_writes_usable_files_and_never_overwrites() {
        let d = tempfile::tempdir().unwrap();
        let files = keygen(d.path(), &["10.0.0.1".into()]).unwrap();
        assert_eq!(files.len(), 6);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.path().join(WORKER_KEY))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        server_config(d.path()).unwrap();
        client_config(d.path()).unwrap();
        let again = keygen(d.path(), &[]).unwrap_err().to_string();
        assert!(again.contains("never overwrites"), "{again}");
    }
}
