//! Frame-level helpers the sluice replay engine needs between reading a
//! capture and putting bytes on the wire.
//!
//! * [`checksum`]: Internet checksum primitives (RFC 1071, RFC 1624).
//! * [`layers`]: locate the L2/L3/L4 headers inside an Ethernet frame.
//! * [`payload`]: the TCPivo §3.3 payload options (keep, zero, truncate)
//!   with the length fields and checksums fixed up, plus a checksum verifier.
//! * [`ethernet`]: synthesize an Ethernet header for captures taken on other
//!   link types (raw IP, Linux cooked, BSD loopback).
//! * [`rxstamp`]: the receive stamp (stream, sequence, departure) a
//!   receiver counts loss, reordering and one-way latency by.
//! * [`tunnel`]: where VXLAN, GRE, GTP-U and IP-in-IP carry their packet,
//!   so the header rewrite can reach it.
//! * [`encap`]: VLAN tags, QinQ, MPLS label stacks and tunnels (VXLAN,
//!   GRE, GTP-U, IP-in-IP) in front of a generated frame's IP header, as
//!   written; [`encapstack`]: their bytes, built once, and the fields each
//!   packet changes in them; [`fields`]: the field engine, header fields
//!   varied per flow or per packet with their checksums kept right;
//!   [`ip6ext`]: IPv6 extension headers of generated IPv6 packets;
//!   [`template`]: frames from outside (hex, a capture, a description)
//!   the field engine varies.
//! * [`flow`]: a symmetric, stable flow hash for spreading frames over
//!   senders while keeping both directions of a connection together.
//!
//! Design: everything works in place on `&[u8]` / `&mut [u8]` frames with no
//! allocation on the per-frame path (only [`ethernet::to_ethernet`] writes
//! into a caller-owned, reusable `Vec`). Parsing is hand-written rather than
//! delegated to a general packet library because the replay engine needs
//! exact byte offsets (to patch lengths and checksums in place), a fixed set
//! of VLAN TPIDs, and a guarantee that no input — short, cut by a snaplen or
//! plain garbage — can make it panic.

#![forbid(unsafe_code)]

pub mod checksum;
pub mod encap;
pub mod encapstack;
pub mod ethernet;
pub mod fields;
pub mod flow;
pub mod flowpkt;
pub mod ip6ext;
pub mod layers;
pub mod payload;
pub mod rewrite;
pub mod rxstamp;
pub mod tcpedit;
pub mod template;
mod textforms;
pub mod tunnel;
pub mod udp4;

pub use checksum::{fold, incremental_update, ipv4_header_checksum, sum16};
pub use ethernet::{
    framing_of_linktype, to_ethernet, FramingError, LinkFraming, MacAddr, ParseMacError,
};
pub use flow::flow_hash;
pub use flowpkt::{FlowEnds, FlowHeaders, FlowProto, Layout, PacketFields};
pub use layers::{parse_layers, Ip, Layers, L4};
pub use payload::{
    complete_checksum, leave_checksum_to_device, rewrite_payload, verify_checksums, ChecksumError,
    DeviceChecksum, ParsePayloadModeError, PayloadMode, Rewrite,
};
pub use rewrite::{
    group_mac, tcp_sequence_offset, tcpr_random, CidrMap, FixLen, HeaderRewrite, PortMap,
    Rewritten, TtlOp, VlanOp,
};
pub use tunnel::TunnelMode;
pub use udp4::{Udp4Error, Udp4Flow, Udp4Template};
