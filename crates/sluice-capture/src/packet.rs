//! What the reader hands out: one [`Packet`] and the [`Format`] of the file.
//!
//! Design: a packet is a borrowed view (no copy) carrying everything a
//! replayer needs per packet, including the link type, because in pcapng it
//! can change from one interface to the next.

use std::fmt;

use crate::linktype::LinkType;

/// One captured packet, borrowed from the reader's buffer until the next
/// call to [`CaptureReader::next_packet`](crate::CaptureReader::next_packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Nanoseconds since the UNIX epoch (after `if_tsoffset` and resolution
    /// conversion).
    pub ts_ns: u64,
    /// The captured bytes.
    pub data: &'a [u8],
    /// Original length on the wire (as recorded; may be less than
    /// `data.len()` in damaged files).
    pub orig_len: u32,
    /// Link type of this packet's interface.
    pub linktype: LinkType,
    /// pcapng interface index within its section (0 for pcap).
    pub interface: u32,
}

/// Container format of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap.
    Pcap {
        /// Nanosecond timestamps (magic 0xa1b23c4d) instead of microseconds.
        nanos: bool,
        /// Big-endian file.
        big_endian: bool,
    },
    /// pcapng (byte order is per section).
    Pcapng,
    /// Endace ERF (a `.erf` file).
    Erf,
    /// NLANR TSH (a `.tsh` file).
    Tsh,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Format::Pcap { nanos, big_endian } => write!(
                f,
                "pcap ({}-endian, {})",
                if *big_endian { "big" } else { "little" },
                if *nanos { "nanosecond" } else { "microsecond" }
            ),
            Format::Pcapng => f.write_str("pcapng"),
            Format::Erf => f.write_str("ERF"),
            Format::Tsh => f.write_str("TSH"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_display() {
        let f = Format::Pcap {
            nanos: true,
            big_endian: false,
        };
        assert_eq!(f.to_string(), "pcap (little-endian, nanosecond)");
        assert_eq!(Format::Pcapng.to_string(), "pcapng");
    }
}
