//! Sessions: flows and meta-flows (FLOR §5.1, §5.9.1) in YAML or JSON.
//!
//! ```yaml
//! seed: 42                     # optional; --seed overrides
//! flows:
//!   - proto: tcp4              # udp4 udp6 tcp4 tcp6 icmp4 icmp6
//!     src: 10.0.0.1
//!     dst: 10.0.0.2
//!     sport: 40000             # ICMP: the echo identifier
//!     dport: 80                # ignored for ICMP
//!     start: 1.5ms             # a duration with its unit (bare: only 0)
//!     packets: 100
//!     pps: 10                  # or spp: 2 (seconds per packet)
//!     payload: 64              # or [min, max]: uniform per packet
//!     prefix: "GET / HTTP/1.1" # or {hex: "deadbeef"}; at most 64 bytes
//!     biflow: false            # also the reverse direction
//!     count: 1000              # meta-flow: this many flows ...
//!     period: 1ms              # ... flow k starting at start + k·period
//!     vary:                    # per flow, uniform
//!       src: 10.0.0.0/16
//!       sport: [1024, 65535]
//!       pps: [1, 100]
//!       packets: [10, 1000]
//!       payload: [64, 512]
//!     step: {src: 1, sport: 1} # per flow increments
//! ```
//!
//! Intensity is FLOR's (eq. 5.1): packets are `1/pps` (or `spp` seconds)
//! apart, so a flow of n packets lasts (n − 1)/pps.

pub use crate::proto::{Proto, DEFAULT_IPPROTO};
use serde::Deserialize;
pub use sluice_source::text::Time;
use std::net::IpAddr;

/// Largest custom payload prefix (FLOR's compile-time constant).
pub const MAX_PREFIX: usize = 64;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    #[serde(default)]
    pub seed: Option<u64>,
    /// Layers every frame carries between its Ethernet addresses and its
    /// IP header, outermost first: VLAN tags (`vlan`, 802.1Q; `svlan`,
    /// 802.1ad), MPLS labels, tunnels (`sluice_wire::encap`).
    #[serde(default)]
    pub encap: Vec<sluice_wire::encap::EncapLayer>,
    /// Header fields varied per flow or per packet
    /// (`sluice_wire::fields`).
    #[serde(default)]
    pub fields: Vec<sluice_wire::fields::FieldSpec>,
    /// IPv6 extension headers of the IPv6 flows' packets
    /// (`sluice_wire::ip6ext`).
    #[serde(default)]
    pub ipv6_ext: Vec<sluice_wire::ip6ext::Ipv6Ext>,
    /// The frame every flow sends, from outside (`crate::template`).
    #[serde(default)]
    pub template: Option<crate::template::TemplateSpec>,
    pub flows: Vec<FlowEntry>,
    /// The file it came from, for error messages.
    #[serde(skip)]
    pub name: String,
    /// The template, read when the session was.
    #[serde(skip)]
    pub frame: Option<std::sync::Arc<sluice_wire::template::Template>>,
}

/// Why a session cannot be generated. Every variant names the file; the
/// text of a schema error names the line, column and key.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{file}: {error}")]
    Read { file: String, error: std::io::Error },
    /// YAML or JSON that does not fit the schema.
    #[error("{file}: {what}")]
    Syntax { file: String, what: String },
    /// An entry that fits the schema but cannot be generated.
    #[error("{file}: flows[{index}]: {what}")]
    Entry {
        file: String,
        index: usize,
        what: String,
    },
}

impl From<SessionError> for sluice_source::SourceError {
    /// A session the source refused is the input's fault.
    fn from(e: SessionError) -> Self {
        sluice_source::SourceError::Input(Box::new(e))
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowEntry {
    pub proto: Proto,
    pub src: IpAddr,
    pub dst: IpAddr,
    #[serde(default)]
    pub sport: u16,
    #[serde(default)]
    pub dport: u16,
    /// The IP protocol number of an `ip4`/`ip6` flow (default
    /// [`DEFAULT_IPPROTO`]).
    #[serde(default)]
    pub ipproto: Option<u8>,
    #[serde(default)]
    pub start: Time,
    pub packets: u64,
    #[serde(default, deserialize_with = "sluice_core::parse::de::opt_rate")]
    pub pps: Option<f64>,
    #[serde(default)]
    pub spp: Option<f64>,
    #[serde(default)]
    pub payload: Length,
    /// Total IP bytes of the flow (header included): overrides `payload`,
    /// spreading the payload so the total is exact (flow-record import).
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub prefix: Option<Prefix>,
    #[serde(default)]
    pub biflow: bool,
    #[serde(default)]
    pub count: Option<u64>,
    #[serde(default)]
    pub period: Option<Time>,
    /// Meta-flow arrivals only in ON periods (boxed: most entries have
    /// none, and a streamed session keeps every entry).
    #[serde(default)]
    pub onoff: Option<Box<crate::onoff::OnOff>>,
    #[serde(default)]
    pub vary: Vary,
    #[serde(default)]
    pub step: Step,
}

/// A payload length: fixed, or `[min, max]` drawn uniformly per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Length {
    Fixed(u16),
    Range([u16; 2]),
}

impl Default for Length {
    fn default() -> Self {
        Length::Fixed(0)
    }
}

impl Length {
    pub fn bounds(self) -> (u16, u16) {
        match self {
            Length::Fixed(n) => (n, n),
            Length::Range([a, b]) => (a.min(b), a.max(b)),
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Prefix {
    Text(String),
    Hex { hex: String },
}

impl Prefix {
    pub fn bytes(&self) -> Result<Vec<u8>, String> {
        let b = match self {
            Prefix::Text(t) => t.as_bytes().to_vec(),
            Prefix::Hex { hex } => {
                let h: String = hex.chars().filter(|c| !c.is_whitespace()).collect();
                if let Some(c) = h.chars().find(|c| !c.is_ascii_hexdigit()) {
                    return Err(format!("prefix hex '{hex}': '{c}' is not a hex digit"));
                }
                if !h.len().is_multiple_of(2) {
                    return Err(format!("prefix hex '{hex}' has an odd number of digits"));
                }
                (0..h.len())
                    .step_by(2)
                    .map(|i| {
                        u8::from_str_radix(&h[i..i + 2], 16).map_err(|_| {
                            format!("prefix hex '{hex}': '{}' is not a hex byte", &h[i..i + 2])
                        })
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        if b.len() > MAX_PREFIX {
            return Err(format!("prefix of {} bytes: at most {MAX_PREFIX}", b.len()));
        }
        Ok(b)
    }
}

/// Per-flow uniform randomization of a meta-flow.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vary {
    pub src: Option<Net>,
    pub dst: Option<Net>,
    pub sport: Option<[u16; 2]>,
    pub dport: Option<[u16; 2]>,
    pub payload: Option<[u16; 2]>,
    #[serde(default, deserialize_with = "sluice_core::parse::de::opt_rate_pair")]
    pub pps: Option<[f64; 2]>,
    pub packets: Option<[u64; 2]>,
}

/// Per-flow increments of a meta-flow (flow k adds k × step).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    #[serde(default)]
    pub src: u64,
    #[serde(default)]
    pub dst: u64,
    #[serde(default)]
    pub sport: u16,
    #[serde(default)]
    pub dport: u16,
}

/// An address block `ADDR/LEN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Net {
    pub base: IpAddr,
    pub prefix: u8,
}

impl TryFrom<String> for Net {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let (a, l) = s
            .split_once('/')
            .ok_or_else(|| format!("'{s}': expected ADDRESS/PREFIX"))?;
        let base: IpAddr = a
            .parse()
            .map_err(|_| format!("'{a}' is not an IP address"))?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = l
            .parse()
            .ok()
            .filter(|p| *p <= max)
            .ok_or_else(|| format!("'{l}' is not a prefix length (0..={max})"))?;
        Ok(Net { base, prefix })
    }
}

impl Session {
    /// Parses session text (YAML or JSON); errors name `name`.
    pub fn parse(name: &str, text: &str, yaml: bool) -> Result<Session, SessionError> {
        let syntax = |what: String| SessionError::Syntax {
            file: name.to_owned(),
            what,
        };
        sluice_source::text::check_depth(text).map_err(syntax)?;
        // A template fills what its flows leave out: read it first (YAML
        // reads JSON too; positions in errors are lost on this path).
        if text.contains("template") {
            let mut doc: serde_yaml_ng::Value =
                serde_yaml_ng::from_str(text).map_err(|e| syntax(e.to_string()))?;
            if let Some(spec) = doc.get("template").filter(|t| !t.is_null()) {
                let spec: crate::template::TemplateSpec =
                    serde_yaml_ng::from_value(spec.clone())
                        .map_err(|e| syntax(format!("template: {e}")))?;
                let dir = std::path::Path::new(name)
                    .parent()
                    .unwrap_or(std::path::Path::new(""));
                let t = spec.load(dir).map_err(syntax)?;
                if let Some(flows) = doc.get_mut("flows") {
                    crate::template::fill(flows, &t).map_err(syntax)?;
                }
                let mut s: Session =
                    serde_yaml_ng::from_value(doc).map_err(|e| syntax(e.to_string()))?;
                s.name = name.to_owned();
                s.frame = Some(std::sync::Arc::new(t));
                return s.checked();
            }
        }
        let mut s: Session = if yaml {
            serde_yaml_ng::from_str(text).map_err(|e| syntax(e.to_string()))?
        } else {
            serde_json::from_str(text).map_err(|e| syntax(e.to_string()))?
        };
        s.name = name.to_owned();
        s.checked()
    }

    /// The session, once every entry passed [`FlowEntry::check`].
    pub(crate) fn checked(self) -> Result<Session, SessionError> {
        sluice_wire::encap::check(&self.encap).map_err(|what| SessionError::Syntax {
            file: self.name.clone(),
            what,
        })?;
        if self.template.is_some() && self.frame.is_none() {
            return Err(SessionError::Syntax {
                file: self.name.clone(),
                what: "template: not read (a session over 4 MiB is read entry by entry, \
                       and takes no template)"
                    .into(),
            });
        }
        if self.frame.is_some() {
            for (key, given) in [
                ("encap", !self.encap.is_empty()),
                ("ipv6_ext", !self.ipv6_ext.is_empty()),
            ] {
                if given {
                    return Err(SessionError::Syntax {
                        file: self.name.clone(),
                        what: format!("{key}: a template carries its own headers"),
                    });
                }
            }
        }
        let engine = self.field_engine()?;
        let lens = self.layer_lens()?;
        for (i, f) in self.flows.iter().enumerate() {
            f.check()
                .and_then(|()| self.check_built(engine.as_ref(), lens, f))
                .map_err(|what| self.entry_error(i, what))?;
        }
        Ok(self)
    }

    /// Bytes the layers put in front of the IP header, and the IPv6
    /// extension headers behind it (checked).
    pub(crate) fn layer_lens(&self) -> Result<(usize, usize), SessionError> {
        let ext = sluice_wire::ip6ext::Ipv6ExtStack::new(&self.ipv6_ext).map_err(|what| {
            SessionError::Syntax {
                file: self.name.clone(),
                what,
            }
        })?;
        Ok((sluice_wire::encapstack::len(&self.encap), ext.len()))
    }

    /// What a checked entry `f` must also hold to be built: its largest
    /// packet fits an IP length with its layers (the extension headers on
    /// IPv6 flows only), and it has what the fields vary.
    pub(crate) fn check_built(
        &self,
        e: Option<&sluice_wire::fields::FieldEngine>,
        (encap, ext): (usize, usize),
        f: &FlowEntry,
    ) -> Result<(), String> {
        if self.frame.is_some() {
            return f.fits_template();
        }
        let layers = encap + if f.proto.v6() { ext } else { 0 };
        f.fits_ip(layers as u64)?;
        self.fields_fit(e, f, layers)
    }

    /// The field engine of the session's `fields`, checked against its
    /// layers.
    pub fn field_engine(&self) -> Result<Option<sluice_wire::fields::FieldEngine>, SessionError> {
        if self.fields.is_empty() {
            return Ok(None);
        }
        let seed = self.seed.unwrap_or(1);
        match &self.frame {
            Some(t) => t.engine(&self.fields, seed),
            None => sluice_wire::fields::FieldEngine::new(&self.fields, &self.encap, seed),
        }
        .map(Some)
        .map_err(|what| SessionError::Syntax {
            file: self.name.clone(),
            what,
        })
    }

    /// Whether flow `f` has what the fields vary: ports, and bytes up to
    /// the furthest field given by offset in its smallest frame.
    fn fields_fit(
        &self,
        e: Option<&sluice_wire::fields::FieldEngine>,
        f: &FlowEntry,
        layers: usize,
    ) -> Result<(), String> {
        let Some(e) = e else {
            return Ok(());
        };
        let portless = f.proto.ip_only() || matches!(f.proto, Proto::Icmp4 | Proto::Icmp6);
        if e.uses_ports() && portless {
            return Err(format!(
                "fields vary sport or dport, and {} flows have no ports",
                f.proto.name()
            ));
        }
        let least = 14
            + layers
            + f.header_len()
            + usize::from(
                f.payload
                    .bounds()
                    .0
                    .min(f.vary.payload.map_or(u16::MAX, |[a, b]| a.min(b))),
            );
        if e.min_frame() > least && f.bytes.is_none() {
            return Err(format!(
                "a field by offset ends at byte {}, past this flow's smallest frame ({least} bytes)",
                e.min_frame()
            ));
        }
        Ok(())
    }

    /// An error of entry `index` of this session.
    pub fn entry_error(&self, index: usize, what: String) -> SessionError {
        SessionError::Entry {
            file: self.name.clone(),
            index,
            what,
        }
    }
}

impl Session {
    /// Checks, before anything is allocated, that `per_flow` bytes for each
    /// of `flows(entry)` flows fit in `budget`; the error names the entry
    /// that needs most and the budget. `what` says what the flows are for.
    pub fn admit(
        &self,
        per_flow: u64,
        budget: u64,
        what: &str,
        flows: impl Fn(&FlowEntry) -> u64,
    ) -> Result<(), SessionError> {
        let each: Vec<u64> = self.flows.iter().map(&flows).collect();
        let need = each
            .iter()
            .fold(0u64, |a, &n| a.saturating_add(n))
            .saturating_mul(per_flow);
        if need <= budget {
            return Ok(());
        }
        let (index, most) = each
            .iter()
            .copied()
            .enumerate()
            .max_by_key(|&(_, n)| n)
            .unwrap_or((0, 0));
        Err(self.entry_error(
            index,
            format!(
                "count: {most} flows {what} need {} MiB with the session's other flows, over the \
                 memory budget of {} MiB (half of the available memory)",
                need >> 20,
                budget >> 20
            ),
        ))
    }
}

impl FlowEntry {
    /// Flows this entry stands for (both directions of a biflow).
    pub fn flows(&self) -> u64 {
        self.count
            .unwrap_or(1)
            .saturating_mul(1 + u64::from(self.biflow))
    }

    /// Most of its flows active at once: all of them when they start
    /// together (no `period`), else as many as start within the longest
    /// flow's life.
    pub fn peak_active(&self) -> u64 {
        let all = self.flows();
        let period = self.period.map_or(0, |p| p.0 .0);
        if self.count.unwrap_or(1) <= 1 || period == 0 {
            return all;
        }
        let packets = self
            .vary
            .packets
            .map_or(self.packets, |[_, most]| most.max(self.packets));
        let slowest = match (self.pps, self.spp, self.vary.pps) {
            (_, _, Some([least, _])) => least,
            (Some(p), _, None) => p,
            (None, Some(s), None) => 1.0 / s,
            (None, None, None) => f64::INFINITY,
        };
        let life_ns = packets.saturating_sub(1) as f64 * 1e9 / slowest;
        let overlap = (life_ns / period as f64).floor().min(u64::MAX as f64 / 4.0) as u64 + 1;
        all.min(overlap.saturating_mul(1 + u64::from(self.biflow)))
    }

    /// Checks what serde cannot: families, intensity, ranges.
    pub fn check(&self) -> Result<(), String> {
        let v6 = self.proto.v6();
        for (what, a) in [("src", self.src), ("dst", self.dst)] {
            if a.is_ipv6() != v6 {
                return Err(format!(
                    "{what} {a} is not an IPv{} address as {:?} needs",
                    if v6 { 6 } else { 4 },
                    self.proto
                ));
            }
        }
        for (what, n) in [("vary.src", self.vary.src), ("vary.dst", self.vary.dst)] {
            if let Some(n) = n {
                if n.base.is_ipv6() != v6 {
                    return Err(format!(
                        "{what} {}/{} is of the wrong IP version",
                        n.base, n.prefix
                    ));
                }
            }
        }
        if self.packets == 0 {
            return Err("packets must be at least 1".into());
        }
        if self.proto.ip_only() {
            let ports = self.sport != 0
                || self.dport != 0
                || self.step.sport != 0
                || self.step.dport != 0
                || self.vary.sport.is_some()
                || self.vary.dport.is_some();
            if ports {
                return Err(format!(
                    "{} flows have no ports: remove sport, dport and their step and vary",
                    self.proto.name()
                ));
            }
        } else if self.ipproto.is_some() {
            return Err(format!(
                "ipproto is for ip4 and ip6 flows; {} has its own",
                self.proto.name()
            ));
        }
        match (self.pps, self.spp) {
            (Some(_), Some(_)) => return Err("give pps or spp, not both".into()),
            (None, None) if self.packets > 1 => {
                return Err("a flow of more than one packet needs an intensity: pps or spp".into())
            }
            (Some(p), None) if !(p.is_finite() && p > 0.0) => {
                return Err(format!("pps {p} must be positive"))
            }
            (None, Some(p)) if !(p.is_finite() && p > 0.0) => {
                return Err(format!("spp {p} must be positive"))
            }
            _ => {}
        }
        if let Some(p) = &self.prefix {
            p.bytes()?;
        }
        if let Some(b) = self.bytes {
            let h = self.header_len() as u64;
            let headers = h.checked_mul(self.packets).ok_or_else(|| {
                format!(
                    "packets {} of {h} header bytes each overflow a byte count",
                    self.packets
                )
            })?;
            if b < headers || (b - headers).div_ceil(self.packets) + h > 65_535 {
                return Err(format!(
                    "bytes {b} cannot be spread over {} packets of {h} header bytes each (at most 65535 per packet)",
                    self.packets
                ));
            }
        }
        if self.count == Some(0) {
            return Err("count must be at least 1".into());
        }
        if let Some(m) = &self.onoff {
            if self.count.unwrap_or(1) < 2 {
                return Err("onoff is for meta-flows: give a count of 2 or more".into());
            }
            m.check(self.period.map_or(0, |p| p.0 .0))?;
        }
        for (what, range) in [
            ("vary.sport", self.vary.sport),
            ("vary.dport", self.vary.dport),
            ("vary.payload", self.vary.payload),
        ] {
            if let Some([a, b]) = range {
                if b < a {
                    return Err(format!("{what} [{a}, {b}] must be ordered (low, high)"));
                }
            }
        }
        if let Length::Range([a, b]) = self.payload {
            if b < a {
                return Err(format!("payload [{a}, {b}] must be ordered (low, high)"));
            }
        }
        if let Some([a, b]) = self.vary.pps {
            if !(a.is_finite() && b.is_finite() && a > 0.0 && b >= a) {
                return Err(format!("vary.pps [{a}, {b}] must be positive and ordered"));
            }
        }
        if let Some([a, b]) = self.vary.packets {
            if a == 0 || b < a {
                return Err(format!(
                    "vary.packets [{a}, {b}] must be positive and ordered"
                ));
            }
        }
        Ok(())
    }

    /// IP + L4 header bytes of every packet.
    pub fn header_len(&self) -> usize {
        self.proto.header_len()
    }

    /// A flow of a template sends its frame: it builds no payload of its
    /// own and has no reverse direction.
    pub fn fits_template(&self) -> Result<(), String> {
        let own_payload = self.payload != Length::default()
            || self.prefix.is_some()
            || self.bytes.is_some()
            || self.vary.payload.is_some();
        if own_payload {
            return Err(
                "payload, prefix, bytes and vary.payload: a template's flows send its frame as it is"
                    .into(),
            );
        }
        if self.biflow {
            return Err("biflow: a template's frame has one direction".into());
        }
        Ok(())
    }

    /// Whether the largest packet, behind `layers` bytes of encapsulation,
    /// fits an IP packet's length (checked after [`FlowEntry::check`]).
    pub fn fits_ip(&self, layers: u64) -> Result<(), String> {
        let h = self.header_len() as u64;
        let most = match self.bytes {
            Some(b) => (b - h * self.packets).div_ceil(self.packets),
            None => {
                let vary = self.vary.payload.map_or(0, |[a, b]| a.max(b));
                u64::from(self.payload.bounds().1.max(vary))
            }
        };
        if most + h + layers > 65_535 {
            return Err(format!(
                "a payload of {most} bytes behind {h} bytes of headers and {layers} of encap is over an IP packet's 65535"
            ));
        }
        Ok(())
    }

    /// Gap between packets in ns (FLOR eq. 5.1), 0 for one-packet flows.
    pub fn gap_ns(&self) -> f64 {
        match (self.pps, self.spp) {
            (Some(p), _) => 1e9 / p,
            (_, Some(s)) => s * 1e9,
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const GOOD: &str = "{proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1}";

    #[test]
    fn a_bad_entry_is_named_by_file_and_index() {
        let text = format!(
            "flows:\n  - {GOOD}\n  - {{proto: udp4, src: '::1', dst: 10.0.0.2, packets: 1}}\n"
        );
        let e = Session::parse("s.yaml", &text, true).unwrap_err();
        assert!(matches!(e, SessionError::Entry { index: 1, .. }), "{e:?}");
        assert!(
            e.to_string().starts_with("s.yaml: flows[1]: src ::1"),
            "{e}"
        );
    }

    #[test]
    fn rates_are_taken_as_the_command_line_takes_them() {
        let text = "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 2, \
                    pps: 10k}\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 2, \
                    pps: 2500}\n";
        let s = Session::parse("s.yaml", text, true).unwrap();
        let rates: Vec<Option<f64>> = s.flows.iter().map(|f| f.pps).collect();
        assert_eq!(rates, [Some(10_000.0), Some(2500.0)]);
        let bad = "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 2, pps: 10q}\n";
        let e = Session::parse("s.yaml", bad, true).unwrap_err().to_string();
        assert!(e.starts_with("s.yaml") && e.contains("10q"), "{e}");
    }

    #[test]
    fn a_payload_range_must_be_ordered() {
        let text = "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1, \
                    payload: [900, 100]}\n";
        let e = Session::parse("s.yaml", text, true).unwrap_err();
        assert!(
            e.to_string().contains("payload [900, 100] must be ordered"),
            "{e}"
        );
    }

    #[test]
    fn a_schema_error_names_the_file_and_the_key() {
        let e =
            Session::parse("s.yaml", "flows:\n  - {proto: udp4, sauce: 1}\n", true).unwrap_err();
        assert!(matches!(e, SessionError::Syntax { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.starts_with("s.yaml: ") && text.contains("sauce"),
            "{text}"
        );
    }

    #[test]
    fn a_missing_file_is_named_once() {
        let e = Session::load(Path::new("/nonexistent/s.yaml")).unwrap_err();
        assert!(matches!(e, SessionError::Read { .. }));
        let text = e.to_string();
        assert!(text.starts_with("/nonexistent/s.yaml: "), "{text}");
        // Not a source in the error chain: printed once, not twice.
        assert!(std::error::Error::source(&e).is_none());
    }

    #[test]
    fn the_session_remembers_its_file() {
        let s = Session::parse("s.yaml", &format!("flows: [{GOOD}]"), true).unwrap();
        assert_eq!(s.name, "s.yaml");
    }

    #[test]
    fn packets_times_header_bytes_that_overflow_are_refused() {
        let text = "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 9223372036854775808, pps: 1, bytes: 100}\n";
        let e = Session::parse("s.yaml", text, true).unwrap_err();
        assert!(e.to_string().contains("overflow"), "{e}");
    }

    fn entry(text: &str) -> FlowEntry {
        let s = Session::parse("s.yaml", &format!("flows: [{text}]"), true).unwrap();
        s.flows[0].clone()
    }

    #[test]
    fn flows_that_start_together_are_all_active_at_once() {
        let e = entry(
            "{proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 10, pps: 1000, count: 1000000}",
        );
        assert_eq!(e.peak_active(), 1_000_000);
        // 10 packets at 1000 pps live 9 ms: with a flow every 1 ms, 10 at once.
        let e = entry("{proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 10, pps: 1000, count: 1000000, period: 1ms}");
        assert_eq!(e.peak_active(), 10);
        let e = entry("{proto: tcp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 10, pps: 1000, count: 1000000, period: 1ms, biflow: true}");
        assert_eq!((e.flows(), e.peak_active()), (2_000_000, 20));
    }

    #[test]
    fn a_session_over_the_memory_budget_is_refused_naming_the_entry() {
        let text = "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1}\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 2, pps: 1, count: 1000000000}\n";
        let s = Session::parse("s.yaml", text, true).unwrap();
        let e = s
            .admit(128, 1 << 30, "active at once", FlowEntry::peak_active)
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("s.yaml: flows[1]: count: 1000000000"),
            "{msg}"
        );
        assert!(msg.contains("memory budget of 1024 MiB"), "{msg}");
        assert!(s.admit(128, u64::MAX, "x", FlowEntry::peak_active).is_ok());
    }

    #[test]
    fn every_reversed_vary_range_is_refused() {
        for field in ["sport", "dport", "payload"] {
            let text = format!(
                "flows: [{{proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1, count: 2, vary: {{{field}: [9, 3]}}}}]"
            );
            let e = Session::parse("s.yaml", &text, true).unwrap_err();
            assert!(
                e.to_string().contains(&format!("vary.{field} [9, 3]")),
                "{e}"
            );
        }
    }
}
