//! `--to SINK` specifications: `null`, `pcap:PATH`, `afpacket:IFACE`,
//! `xdp:IFACE`, `udp:HOST:PORT`, and a bare `IFACE` (the fastest of
//! `xdp:` and `afpacket:` the interface allows, chosen as it opens).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SinkSpec {
    Null,
    Pcap(PathBuf),
    AfPacket(String),
    /// AF_XDP on an interface: one XDP socket per TX thread and queue.
    Xdp(String),
    /// A bare interface name: `xdp:` where AF_XDP binds there, else
    /// `afpacket:` ([`SinkSpec::open`] chooses, the summary says which).
    Iface(String),
    /// `HOST:PORT`, resolved when the sink opens.
    Udp(String),
}

impl FromStr for SinkSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, arg) = s.split_once(':').unwrap_or((s, ""));
        match (kind, arg) {
            ("null", "") => Ok(SinkSpec::Null),
            ("pcap", p) if !p.is_empty() => Ok(SinkSpec::Pcap(PathBuf::from(p))),
            ("afpacket" | "xdp", i) if !i.is_empty() => {
                if i.len() >= 16 || i.contains('/') {
                    Err(format!("'{i}' is not a valid interface name"))
                } else if kind == "xdp" {
                    Ok(SinkSpec::Xdp(i.to_string()))
                } else {
                    Ok(SinkSpec::AfPacket(i.to_string()))
                }
            }
            ("udp", t)
                if t.rsplit_once(':')
                    .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) =>
            {
                Ok(SinkSpec::Udp(t.to_string()))
            }
            ("udp", _) => Err("udp sink needs a destination: udp:HOST:PORT".into()),
            ("pcap", _) => Err("pcap sink needs a path: pcap:PATH".into()),
            ("afpacket", _) => Err("afpacket sink needs an interface: afpacket:IFACE".into()),
            ("xdp", _) => Err("xdp sink needs an interface: xdp:IFACE".into()),
            (i, "") if !s.contains(':') && iface_name(i) => Ok(SinkSpec::Iface(i.to_string())),
            _ => Err(format!(
                "unknown sink '{s}': expected null, pcap:PATH, afpacket:IFACE, xdp:IFACE, IFACE or udp:HOST:PORT"
            )),
        }
    }
}

/// Whether `i` can name an interface (what the kernel takes: 1 to 15
/// bytes, no `/`, no white space).
fn iface_name(i: &str) -> bool {
    !i.is_empty() && i.len() < 16 && !i.contains('/') && !i.chars().any(char::is_whitespace)
}

impl SinkSpec {
    /// The network interface frames leave by (`afpacket:`, `xdp:`, a bare
    /// `IFACE`).
    pub fn iface(&self) -> Option<&str> {
        match self {
            SinkSpec::AfPacket(i) | SinkSpec::Xdp(i) | SinkSpec::Iface(i) => Some(i),
            _ => None,
        }
    }
}

impl fmt::Display for SinkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SinkSpec::Null => write!(f, "null"),
            SinkSpec::Pcap(p) => write!(f, "pcap:{}", p.display()),
            SinkSpec::AfPacket(i) => write!(f, "afpacket:{i}"),
            SinkSpec::Xdp(i) => write!(f, "xdp:{i}"),
            SinkSpec::Iface(i) => write!(f, "{i}"),
            SinkSpec::Udp(t) => write!(f, "udp:{t}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_and_rejects_garbage() {
        assert_eq!("null".parse(), Ok(SinkSpec::Null));
        assert_eq!(
            "pcap:/tmp/x.pcap".parse(),
            Ok(SinkSpec::Pcap("/tmp/x.pcap".into()))
        );
        assert_eq!("afpacket:va".parse(), Ok(SinkSpec::AfPacket("va".into())));
        assert_eq!("xdp:va".parse(), Ok(SinkSpec::Xdp("va".into())));
        assert!("xdp:"
            .parse::<SinkSpec>()
            .unwrap_err()
            .contains("xdp:IFACE"));
        assert!("xdp:a/b".parse::<SinkSpec>().is_err());
        assert_eq!(SinkSpec::Xdp("va".into()).to_string(), "xdp:va");
        assert_eq!(SinkSpec::Xdp("va".into()).iface(), Some("va"));
        assert!("pcap:"
            .parse::<SinkSpec>()
            .unwrap_err()
            .contains("needs a path"));
        assert!("udp:1.2.3.4"
            .parse::<SinkSpec>()
            .unwrap_err()
            .contains("udp:HOST:PORT"));
        assert_eq!(
            "udp:10.0.0.2:9000".parse(),
            Ok(SinkSpec::Udp("10.0.0.2:9000".into()))
        );
        assert_eq!(
            "udp:[::1]:9000".parse(),
            Ok(SinkSpec::Udp("[::1]:9000".into()))
        );
        assert!("tcp:x"
            .parse::<SinkSpec>()
            .unwrap_err()
            .contains("unknown sink"));
        assert_eq!("veth0".parse(), Ok(SinkSpec::Iface("veth0".into())));
        assert_eq!(SinkSpec::Iface("veth0".into()).to_string(), "veth0");
        assert_eq!(SinkSpec::Iface("veth0".into()).iface(), Some("veth0"));
        assert!("a b".parse::<SinkSpec>().is_err());
        assert!("aaaaaaaaaaaaaaaaaaaa".parse::<SinkSpec>().is_err());
        assert!("pcap"
            .parse::<SinkSpec>()
            .unwrap_err()
            .contains("needs a path"));
        assert!("afpacket:aaaaaaaaaaaaaaaaaaaa".parse::<SinkSpec>().is_err());
    }
}
