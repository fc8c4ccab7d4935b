//! What the workspace's tests share: where the vendored test corpus and
//! judge scripts live, and how a test asks for an external tool.
//!
//! The repository tests itself with nothing beside it: captures, archives
//! and flow records are under `testdata/` (with their provenance and
//! licences), the neutral judge scripts under `bench/`.
//!
//! A test that needs a tool (tshark, tcpdump, python3, root for veth
//! pairs) calls [`require`]. Without the tool it prints one `SKIPPED` line
//! naming the tool and returns false; under `CI` (where `.ci/run` installs
//! every such tool) a missing tool is a failure, so a green CI never hides
//! a test that did not run.

mod schema;
pub use schema::{checked_json, checked_json_lines, schema_errors};

use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The workspace root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// `testdata/SUB` of the repository (`pcap`, `timeseries`, `flows`).
pub fn testdata(sub: &str) -> PathBuf {
    repo_root().join("testdata").join(sub)
}

/// A vendored script of `bench/` (`gaperr.py`, `ratejudge.py`, ...).
pub fn bench_script(name: &str) -> PathBuf {
    repo_root().join("bench").join(name)
}

/// Whether CI runs these tests (`CI` set): skipping is then a failure.
pub fn under_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// True when `tool` runs (`tool --version` starts). Otherwise: a failure
/// naming the tool under CI, else one `SKIPPED` line on stderr and false.
pub fn require(tool: &str, test: &str) -> bool {
    let runs = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    missing_unless(runs, tool, test)
}

/// True when running as root (veth pairs and namespaces need it);
/// otherwise as for [`require`].
pub fn require_root(test: &str) -> bool {
    // `id -u` keeps this crate free of libc and of unsafe.
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    missing_unless(root, "root", test)
}

fn missing_unless(present: bool, what: &str, test: &str) -> bool {
    if present {
        return true;
    }
    assert!(
        !under_ci(),
        "{test}: needs {what}, which CI must provide (.ci/run installs it)"
    );
    eprintln!("SKIPPED {test}: needs {what}, which is not available here");
    false
}

/// splitmix64: small, seedable, good enough for picking mutations in the
/// seeded mutation suites.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// A reader that hands out at most `chunk` bytes per call (exercises the
/// readers' refill paths).
pub struct Trickle {
    pub data: Cursor<Vec<u8>>,
    pub chunk: usize,
}

impl Read for Trickle {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = out.len().min(self.chunk);
        self.data.read(&mut out[..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_and_the_judges_are_in_the_repository() {
        assert!(testdata("pcap").join("MANIFEST.tsv").is_file());
        assert!(testdata("timeseries").join("PROVENANCE.md").is_file());
        assert!(testdata("flows").join("PROVENANCE.md").is_file());
        assert!(bench_script("gaperr.py").is_file());
        assert!(bench_script("ratejudge.py").is_file());
    }

    #[test]
    fn a_missing_tool_is_skipped_or_fails_under_ci() {
        let r = std::panic::catch_unwind(|| require("sluice-no-such-tool", "self-test"));
        match r {
            Ok(present) => {
                assert!(!under_ci());
                assert!(!present);
            }
            Err(_) => assert!(under_ci()),
        }
    }
}
