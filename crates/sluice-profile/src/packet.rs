//! The packets a profile sends: their headers as a profile names them
//! (`packet:`) and the frames built from them, one flow after another.

use serde::Deserialize;
use std::net::IpAddr;

/// The packets' headers: UDP over IPv4 or IPv6; `flows` flows on
/// consecutive source ports, packet k on flow k mod `flows`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PacketSpec {
    #[serde(default = "udp4")]
    pub proto: String,
    #[serde(default = "src")]
    pub src: IpAddr,
    #[serde(default = "dst")]
    pub dst: IpAddr,
    #[serde(default = "sport")]
    pub sport: u16,
    #[serde(default = "dport")]
    pub dport: u16,
    #[serde(default = "one")]
    pub flows: u32,
    /// Layers in front of the IP header, outermost first (VLAN tags,
    /// QinQ, MPLS labels, tunnels; `sluice_wire::encap`): part of each
    /// frame's size.
    #[serde(default)]
    pub encap: Vec<sluice_wire::encap::EncapLayer>,
    /// IPv6 extension headers of udp6 packets (`sluice_wire::ip6ext`):
    /// part of each frame's size.
    #[serde(default)]
    pub ipv6_ext: Vec<sluice_wire::ip6ext::Ipv6Ext>,
    /// Header fields varied per flow (k, the flow's number) or per packet
    /// (`sluice_wire::fields`).
    #[serde(default)]
    pub fields: Vec<sluice_wire::fields::FieldSpec>,
}

fn udp4() -> String {
    "udp4".into()
}
fn src() -> IpAddr {
    IpAddr::from([10, 0, 0, 1])
}
fn dst() -> IpAddr {
    IpAddr::from([10, 0, 0, 2])
}
fn sport() -> u16 {
    1024
}
fn dport() -> u16 {
    9
}
fn one() -> u32 {
    1
}

impl Default for PacketSpec {
    fn default() -> Self {
        PacketSpec {
            proto: udp4(),
            src: src(),
            dst: dst(),
            sport: sport(),
            dport: dport(),
            flows: 1,
            encap: Vec::new(),
            ipv6_ext: Vec::new(),
            fields: Vec::new(),
        }
    }
}

impl PacketSpec {
    pub fn v6(&self) -> bool {
        self.proto == "udp6"
    }

    /// What builds the packets' frames; `seed` draws the random fields.
    pub fn frames(
        &self,
        src_mac: sluice_wire::MacAddr,
        dst_mac: sluice_wire::MacAddr,
        seed: u64,
    ) -> Result<Frames, String> {
        Frames::new(self.clone(), src_mac, dst_mac, seed)
    }

    /// Ethernet, the layers, IP and UDP headers: the smallest frame.
    pub fn header_len(&self) -> u16 {
        let layers = sluice_wire::encapstack::len(&self.encap) as u16;
        let ext = if self.v6() {
            sluice_wire::ip6ext::Ipv6ExtStack::new(&self.ipv6_ext).map_or(0, |x| x.len() as u16)
        } else {
            0
        };
        layers + ext + if self.v6() { 62 } else { 42 }
    }
}

/// What builds a profile's frames: each flow's UDP headers (flow k from
/// source port `sport + k`) behind the packet's layers, with its fields.
#[derive(Clone, Debug)]
pub struct Frames {
    spec: PacketSpec,
    macs: (sluice_wire::MacAddr, sluice_wire::MacAddr),
    stack: Option<std::sync::Arc<sluice_wire::encapstack::EncapStack>>,
    ext: Option<std::sync::Arc<sluice_wire::ip6ext::Ipv6ExtStack>>,
    engine: Option<sluice_wire::fields::FieldEngine>,
    /// Each flow's headers, its own fields written in.
    headers: Vec<sluice_wire::FlowHeaders>,
    /// Packets built so far (what a per-packet field counts).
    built: u64,
}

impl Frames {
    fn new(
        spec: PacketSpec,
        src_mac: sluice_wire::MacAddr,
        dst_mac: sluice_wire::MacAddr,
        seed: u64,
    ) -> Result<Frames, String> {
        let stack = if spec.encap.is_empty() {
            None
        } else {
            let s = sluice_wire::encapstack::EncapStack::new(&spec.encap, src_mac, dst_mac)?;
            Some(std::sync::Arc::new(s))
        };
        let ext = if spec.ipv6_ext.is_empty() || !spec.v6() {
            None
        } else {
            let x = sluice_wire::ip6ext::Ipv6ExtStack::new(&spec.ipv6_ext)?;
            Some(std::sync::Arc::new(x))
        };
        let engine = if spec.fields.is_empty() {
            None
        } else {
            let e = sluice_wire::fields::FieldEngine::new(&spec.fields, &spec.encap, seed)?;
            Some(e)
        };
        let mut f = Frames {
            spec,
            macs: (src_mac, dst_mac),
            stack,
            ext,
            engine,
            headers: Vec::new(),
            built: 0,
        };
        f.headers = (0..f.spec.flows)
            .map(|k| f.header(k, 0))
            .collect::<Result<_, _>>()?;
        Ok(f)
    }

    /// How many flows.
    pub fn flows(&self) -> usize {
        self.headers.len()
    }

    /// Flow k's headers for packet `packet` (its fields written in).
    fn header(&self, k: u32, packet: u64) -> Result<sluice_wire::FlowHeaders, String> {
        let p = &self.spec;
        let mut ends = sluice_wire::FlowEnds {
            src: p.src,
            dst: p.dst,
            sport: p.sport.wrapping_add(k as u16),
            dport: p.dport,
        };
        if let Some(e) = &self.engine {
            e.vary_ends(&mut ends, true, u64::from(k), packet);
        }
        let udp = sluice_wire::FlowProto::Udp;
        let mut h = sluice_wire::FlowHeaders::new(self.macs.0, self.macs.1, ends, udp, false)?;
        if let Some(e) = &self.engine {
            e.vary(&mut h, u64::from(k), packet);
        }
        if let Some(x) = &self.ext {
            h = h.with_ipv6_ext(x);
        }
        Ok(match &self.stack {
            None => h,
            Some(s) => h.with_encap(s),
        })
    }

    /// Appends flow `flow`'s frame with `fields` to `out`.
    pub fn write(
        &mut self,
        out: &mut Vec<u8>,
        flow: usize,
        fields: &sluice_wire::PacketFields<'_>,
    ) {
        let packet = self.built;
        self.built += 1;
        let Some(e) = &self.engine else {
            return self.headers[flow].write(out, fields);
        };
        let again;
        let h = if e.varies_packets() {
            // The same spec built every flow's headers when made.
            again = self.header(flow as u32, packet).expect("built before");
            &again
        } else {
            &self.headers[flow]
        };
        h.write_varied(out, fields, e, flow as u64, packet);
    }
}
