//! A session's `template`: the frame every flow sends, from outside (hex,
//! a capture's N-th frame, a short description), its flows' addresses and
//! ports and the session's `fields` written into it
//! (`sluice_wire::template`).
//!
//! ```yaml
//! template: {pcap: syn.pcap, frame: 3}   # or {hex: "…"}, {describe: "udp4 dport=53 payload=32"}
//! fields: [{field: ip.id, per: packet}]
//! flows:
//!   - {packets: 1000, pps: 100, count: 50, vary: {src: 10.9.0.0/16}}
//! ```
//!
//! A flow's `proto`, `src`, `dst`, `sport` and `dport` default to the
//! template's innermost packet's; given, they must be of its protocol.

use crate::proto::Proto;
use serde::Deserialize;
use sluice_wire::template::{describe, parse_hex, Template};
use sluice_wire::FlowProto;
use std::path::{Path, PathBuf};

/// The most frames read from a capture to find the N-th.
pub const MAX_FRAME: u64 = 1 << 20;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TemplateSpec {
    /// The frame as hex.
    #[serde(default)]
    pub hex: Option<String>,
    /// Or a capture (pcap or pcapng, Ethernet), relative to the session's
    /// directory, and the frame's number in it (1 for the first, as
    /// Wireshark counts).
    #[serde(default)]
    pub pcap: Option<PathBuf>,
    #[serde(default)]
    pub frame: Option<u64>,
    /// Or a description (`sluice_wire::template::describe`).
    #[serde(default)]
    pub describe: Option<String>,
    /// `fix` (the default): every checksum of the template is computed
    /// when it is read; `keep`: they stay as given (a wrong one stays
    /// wrong in every frame).
    #[serde(default)]
    pub checksums: Checksums,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Checksums {
    #[default]
    Fix,
    Keep,
}

impl TemplateSpec {
    /// Reads the template; `dir` resolves `pcap:`. Errors start with the
    /// key (`template.frame: …`).
    pub fn load(&self, dir: &Path) -> Result<Template, String> {
        let fix = self.checksums == Checksums::Fix;
        let bytes = match (&self.hex, &self.pcap, &self.describe) {
            (Some(h), None, None) => parse_hex(h).map_err(|e| format!("template.hex: {e}"))?,
            (None, Some(p), None) => {
                let path = sluice_source::confine::input(dir, p)
                    .map_err(|e| format!("template.pcap: {e}"))?;
                nth_frame(&path, self.frame.unwrap_or(1))?
            }
            (None, None, Some(d)) => describe(d).map_err(|e| format!("template.describe: {e}"))?,
            _ => return Err("template: give one of hex, pcap (with frame) or describe".into()),
        };
        if self.frame.is_some() && self.pcap.is_none() {
            return Err("template.frame: the number of a frame of pcap".into());
        }
        let key = match (&self.hex, &self.pcap) {
            (Some(_), _) => "template.hex",
            (_, Some(_)) => "template.pcap",
            _ => "template.describe",
        };
        Template::new(bytes, fix).map_err(|e| format!("{key}: {e}"))
    }
}

/// Frame `n` (1-based) of a capture of Ethernet frames, whole.
fn nth_frame(path: &Path, n: u64) -> Result<Vec<u8>, String> {
    let at = |e: &dyn std::fmt::Display| format!("template.pcap: {}: {e}", path.display());
    if !(1..=MAX_FRAME).contains(&n) {
        return Err(format!("template.frame: {n}: 1..={MAX_FRAME} expected"));
    }
    let mut r = sluice_capture::CaptureReader::open(path).map_err(|e| at(&e))?;
    let mut k = 0;
    while let Some(p) = r.next_packet().map_err(|e| at(&e))? {
        k += 1;
        if k < n {
            continue;
        }
        if p.linktype.0 != 1 {
            return Err(format!(
                "template.frame: {n}: link type {}, not Ethernet (1)",
                p.linktype.0
            ));
        }
        if p.data.len() < p.orig_len as usize {
            return Err(format!(
                "template.frame: {n}: cut to {} of its {} bytes by the capture's snap length",
                p.data.len(),
                p.orig_len
            ));
        }
        return Ok(p.data.to_vec());
    }
    Err(format!(
        "template.frame: {n}: {} holds {k} frames",
        path.display()
    ))
}

/// The session protocol (and `ipproto`) of a template's innermost packet;
/// None without one.
pub fn proto_of(t: &Template) -> Option<(Proto, Option<u8>)> {
    let i = t.inner()?;
    Some(match (i.flow_proto(), i.v6) {
        (FlowProto::Udp, false) => (Proto::Udp4, None),
        (FlowProto::Udp, true) => (Proto::Udp6, None),
        (FlowProto::Tcp, false) => (Proto::Tcp4, None),
        (FlowProto::Tcp, true) => (Proto::Tcp6, None),
        (FlowProto::Icmp, false) => (Proto::Icmp4, None),
        (FlowProto::Icmp, true) => (Proto::Icmp6, None),
        (FlowProto::Ip(p), false) => (Proto::Ip4, Some(p)),
        (FlowProto::Ip(p), true) => (Proto::Ip6, Some(p)),
    })
}

/// Fills each entry of `flows` (a YAML sequence of mappings) with the
/// template's protocol, addresses and ports where it names none; an entry
/// naming another protocol, or any of them for a template without an IP
/// packet, is refused (`flows[2].proto: …`).
pub fn fill(flows: &mut serde_yaml_ng::Value, t: &Template) -> Result<(), String> {
    use serde_yaml_ng::Value;
    let Some(items) = flows.as_sequence_mut() else {
        return Ok(()); // serde names the error
    };
    let own = proto_of(t);
    let ends = t.ends();
    for (i, item) in items.iter_mut().enumerate() {
        let Some(m) = item.as_mapping_mut() else {
            continue;
        };
        // Where an address or port of the flow is varied or stepped.
        let moved = |m: &serde_yaml_ng::Mapping| {
            ["vary", "step"].into_iter().find_map(|outer| {
                let inner = m.get(outer)?.as_mapping()?;
                ["src", "dst", "sport", "dport"]
                    .into_iter()
                    .find(|k| inner.contains_key(*k))
                    .map(|k| format!("{outer}.{k}"))
            })
        };
        let Some(((proto, ipproto), ends)) = own.zip(ends) else {
            // No IP packet: the flows give timing only.
            let given = ["proto", "src", "dst", "sport", "dport", "ipproto"]
                .into_iter()
                .find(|k| m.contains_key(*k))
                .map(String::from)
                .or_else(|| moved(m));
            if let Some(k) = given {
                return Err(format!(
                    "flows[{i}].{k}: the template carries no IP packet to write it into"
                ));
            }
            m.insert("proto".into(), "udp4".into());
            m.insert("src".into(), "0.0.0.0".into());
            m.insert("dst".into(), "0.0.0.0".into());
            continue;
        };
        if let Some(p) = m.get("proto") {
            if p.as_str() != Some(proto.name()) {
                return Err(format!(
                    "flows[{i}].proto: {}: the template's packet is {}",
                    p.as_str().unwrap_or("?"),
                    proto.name()
                ));
            }
        }
        if let (Some(given), Some(p)) = (m.get("ipproto"), ipproto) {
            if given.as_u64() != Some(u64::from(p)) {
                return Err(format!(
                    "flows[{i}].ipproto: the template's packet is protocol {p}"
                ));
            }
        }
        let ports = t.has_ports();
        if !ports && ipproto.is_none() {
            let given = ["sport", "dport"]
                .into_iter()
                .find(|k| m.contains_key(*k))
                .map(String::from)
                .or_else(|| moved(m).filter(|k| k.ends_with("port")));
            if let Some(k) = given {
                return Err(format!(
                    "flows[{i}].{k}: the template's packet has no ports to write it into \
                     (a fragment, or cut by its IP length)"
                ));
            }
        }
        let mut put = |k: &str, v: Value| {
            if !m.contains_key(k) {
                m.insert(k.into(), v);
            }
        };
        put("proto", proto.name().into());
        put("src", ends.src.to_string().into());
        put("dst", ends.dst.to_string().into());
        if let Some(p) = ipproto {
            put("ipproto", u64::from(p).into());
        } else if ports {
            put("sport", u64::from(ends.sport).into());
            if !matches!(proto, Proto::Icmp4 | Proto::Icmp6) {
                put("dport", u64::from(ends.dport).into());
            }
        }
    }
    Ok(())
}
