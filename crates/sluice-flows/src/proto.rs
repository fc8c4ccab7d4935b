//! A flow's protocol as a session names it (`proto: udp4`...), and its
//! headers' lengths: what sessions and templates from outside share.

use serde::Deserialize;
use sluice_wire::FlowProto;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    Udp4,
    Udp6,
    Tcp4,
    Tcp6,
    Icmp4,
    Icmp6,
    /// IP without an L4 header (FLOR's "L4 None"): the entry's `ipproto`.
    Ip4,
    Ip6,
}

/// The IP protocol number of `ip4`/`ip6` flows that name none: 253, for
/// experimentation and testing (RFC 3692).
pub const DEFAULT_IPPROTO: u8 = 253;

impl Proto {
    /// The L4 header, `ipproto` being the protocol number of `ip4`/`ip6`.
    pub fn l4(self, ipproto: u8) -> FlowProto {
        match self {
            Proto::Udp4 | Proto::Udp6 => FlowProto::Udp,
            Proto::Tcp4 | Proto::Tcp6 => FlowProto::Tcp,
            Proto::Icmp4 | Proto::Icmp6 => FlowProto::Icmp,
            Proto::Ip4 | Proto::Ip6 => FlowProto::Ip(ipproto),
        }
    }
    pub fn v6(self) -> bool {
        matches!(self, Proto::Udp6 | Proto::Tcp6 | Proto::Icmp6 | Proto::Ip6)
    }
    /// True for `ip4`/`ip6`: no L4 header, no ports.
    pub fn ip_only(self) -> bool {
        matches!(self, Proto::Ip4 | Proto::Ip6)
    }
    /// The session-file spelling (`tcp4`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Proto::Udp4 => "udp4",
            Proto::Udp6 => "udp6",
            Proto::Tcp4 => "tcp4",
            Proto::Tcp6 => "tcp6",
            Proto::Icmp4 => "icmp4",
            Proto::Icmp6 => "icmp6",
            Proto::Ip4 => "ip4",
            Proto::Ip6 => "ip6",
        }
    }
    /// IP + L4 header bytes of every packet.
    pub fn header_len(self) -> usize {
        (if self.v6() { 40 } else { 20 })
            + match self {
                Proto::Tcp4 | Proto::Tcp6 => 20,
                Proto::Ip4 | Proto::Ip6 => 0,
                _ => 8,
            }
    }
}
