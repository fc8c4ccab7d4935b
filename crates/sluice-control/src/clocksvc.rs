//! The worker host's own clock service — chrony or linuxptp — read when a
//! controller registers, so the summary shows what they think of the clock
//! next to sluice's own offset measurement.
//!
//! chrony: `chronyc -c tracking`; the offset of the system clock from its
//! reference is −"System time" (chrony prints the correction it would still
//! apply, positive when the clock is slow), and its documented error bound
//! is |system time| + root dispersion + root delay / 2.
//! linuxptp: `pmc -u -b 0 'GET TIME_STATUS_NP'`; master_offset is the last
//! measured offset of this clock from its master. pmc gives no error bound,
//! so the bound is |master_offset| (what the servo still has to remove).
//! A reply that says nothing (no daemon, no grandmaster, no measurement
//! yet) is no service:
//! pmc exits 0 after a timeout with no answer, so success alone proves
//! nothing.

use std::process::Command;
use std::time::Duration;

/// Which service to ask, from `sluice worker --clock-service`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClockServiceSpec {
    /// chrony at its default address, then linuxptp at its default socket.
    Auto,
    None,
    /// chrony; `Some(addr)` is `chronyc -h ADDR` (a socket path or host).
    Chrony(Option<String>),
    /// linuxptp; `Some(path)` is ptp4l's `uds_address` (`pmc -s PATH`).
    Ptp(Option<String>),
}

impl std::str::FromStr for ClockServiceSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) if !a.is_empty() => (k, Some(a.to_string())),
            Some((k, _)) => (k, None),
            None => (s, None),
        };
        match (kind, arg) {
            ("auto", None) => Ok(Self::Auto),
            ("none", None) => Ok(Self::None),
            ("chrony", a) => Ok(Self::Chrony(a)),
            ("ptp", a) => Ok(Self::Ptp(a)),
            _ => Err(format!(
                "'{s}': expected auto, none, chrony[:ADDRESS] or ptp[:UDS_PATH]"
            )),
        }
    }
}

/// What the service reports.
#[derive(Clone, Debug, PartialEq)]
pub struct ClockService {
    /// One line: the service, its reference and state.
    pub text: String,
    /// This host's clock minus the service's reference, ns.
    pub offset_ns: i64,
    /// The service's bound on |offset|, ns.
    pub bound_ns: u64,
}

/// Asks the service named by `spec`; None when none answers.
pub fn read(spec: &ClockServiceSpec) -> Option<ClockService> {
    match spec {
        ClockServiceSpec::None => None,
        ClockServiceSpec::Auto => chrony(None).or_else(|| ptp(None)),
        ClockServiceSpec::Chrony(a) => chrony(a.as_deref()),
        ClockServiceSpec::Ptp(p) => ptp(p.as_deref()),
    }
}

fn chrony(addr: Option<&str>) -> Option<ClockService> {
    let mut args = Vec::new();
    if let Some(a) = addr {
        args.extend(["-h", a]);
    }
    args.extend(["-c", "tracking"]);
    parse_chrony(&output("chronyc", &args)?)
}

fn ptp(uds: Option<&str>) -> Option<ClockService> {
    let mut args = vec!["-u", "-b", "0"];
    if let Some(p) = uds {
        args.extend(["-s", p]);
    }
    args.push("GET TIME_STATUS_NP");
    parse_pmc(&output("pmc", &args)?)
}

/// stdout of a command that succeeded within 3 s.
fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let t0 = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if t0.elapsed() < Duration::from_secs(3) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let o = child.wait_with_output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// `chronyc -c tracking`: reference ID, name, stratum, ref time, system
/// time (s), last offset, RMS offset, frequency, residual frequency, skew,
/// root delay (s), root dispersion (s), update interval, leap status.
pub fn parse_chrony(csv: &str) -> Option<ClockService> {
    let f: Vec<&str> = csv.lines().next()?.split(',').collect();
    if f.len() < 14 {
        return None;
    }
    let num = |i: usize| f[i].trim().parse::<f64>().ok().filter(|v| v.is_finite());
    let (system, delay, dispersion) = (num(4)?, num(10)?, num(11)?);
    let stratum: u32 = f[2].trim().parse().ok()?;
    // Reference ID 0 (or stratum 0): chronyd runs but is synchronised to
    // nothing, so its figures mean nothing.
    if stratum == 0 || u32::from_str_radix(f[0].trim(), 16).ok()? == 0 {
        return None;
    }
    let bound = system.abs() + dispersion + delay / 2.0;
    Some(ClockService {
        text: format!(
            "chrony: reference {} stratum {stratum}, leap {}",
            f[1].trim(),
            f[13].trim()
        ),
        offset_ns: (-system * 1e9).round() as i64,
        bound_ns: (bound * 1e9).ceil() as u64,
    })
}

/// `pmc … GET TIME_STATUS_NP`: a RESPONSE with master_offset and
/// gmPresent true; anything else (no answer, no grandmaster) is None.
pub fn parse_pmc(text: &str) -> Option<ClockService> {
    if !text.contains("RESPONSE MANAGEMENT TIME_STATUS_NP") {
        return None;
    }
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(name)).then(|| w.next().unwrap_or("").to_string())
        })
    };
    // No grandmaster, or none measured yet (ingress_time 0).
    if field("gmPresent").as_deref() != Some("true")
        || field("ingress_time").is_none_or(|t| t == "0")
    {
        return None;
    }
    let offset: i64 = field("master_offset")?.parse().ok()?;
    Some(ClockService {
        text: format!(
            "linuxptp: grandmaster {}",
            field("gmIdentity").unwrap_or_default()
        ),
        offset_ns: offset,
        bound_ns: offset.unsigned_abs(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chrony_csv_sign_and_bound() {
        // System time +20 µs: the clock is 20 µs slow; bound 20 + 100 + 250 µs.
        let s = parse_chrony(
            "0A4E0001,10.78.0.1,9,1764000000.1,0.000020000,-0.000001,0.000002,-1.5,0.01,0.2,0.000500000,0.000100000,1.0,Normal",
        )
        .unwrap();
        assert_eq!(s.offset_ns, -20_000);
        assert_eq!(s.bound_ns, 370_000);
        assert!(s.text.contains("10.78.0.1") && s.text.contains("stratum 9"));
        // Not synchronised: reference ID 0.
        assert!(parse_chrony(
            "00000000,,0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,1.0,1.0,0.0,Not synchronised"
        )
        .is_none());
        assert!(parse_chrony("506 Cannot talk to daemon").is_none());
    }

    #[test]
    fn pmc_needs_an_answer_with_a_grandmaster() {
        assert!(parse_pmc("sending: GET TIME_STATUS_NP").is_none());
        let reply = "sending: GET TIME_STATUS_NP\n\t\
            3a3b3c.fffe.3d3e3f-1 seq 0 RESPONSE MANAGEMENT TIME_STATUS_NP\n\t\t\
            master_offset              -1234\n\t\t\
            ingress_time               1764000000000000000\n\t\t\
            gmPresent                  true\n\t\t\
            gmIdentity                 0a0b0c.fffe.0d0e0f";
        let s = parse_pmc(reply).unwrap();
        assert_eq!((s.offset_ns, s.bound_ns), (-1234, 1234));
        assert!(s.text.contains("0a0b0c.fffe.0d0e0f"));
        assert!(
            parse_pmc(&reply.replace("gmPresent                  true", "gmPresent false"))
                .is_none()
        );
    }

    #[test]
    fn specs() {
        assert_eq!("auto".parse(), Ok(ClockServiceSpec::Auto));
        assert_eq!(
            "chrony:127.0.0.1".parse(),
            Ok(ClockServiceSpec::Chrony(Some("127.0.0.1".into())))
        );
        assert_eq!(
            "ptp:/run/x".parse(),
            Ok(ClockServiceSpec::Ptp(Some("/run/x".into())))
        );
        assert!("ntp".parse::<ClockServiceSpec>().is_err());
    }
}
