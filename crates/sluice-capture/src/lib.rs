//! Streaming pcap/pcapng reading and nanosecond pcap writing.
//!
//! [`CaptureReader`] reads classic pcap (microsecond or nanosecond, either
//! byte order) and pcapng (any number of sections and interfaces, either
//! byte order per section), Endace ERF and NLANR TSH traces (known by their
//! names, `.erf` and `.tsh`: neither has a magic number), transparently
//! gunzipping `.gz` input, and hands
//! out one [`Packet`] at a time as a slice of its own buffer. [`PcapWriter`]
//! writes little-endian nanosecond pcap. [`StreamBuf`], the bounded read
//! buffer under the readers, is public so that the archive format
//! (`sluice-archive`) streams the same way.
//!
//! Design decisions:
//! - **Streaming, bounded memory.** The reader owns one buffer (1 MiB,
//!   grown only for a record that does not fit, up to [`MAX_RECORD`]) and
//!   never copies packet bytes: `next_packet` is a lending call whose slice
//!   lives until the next call. Memory does not depend on file size.
//! - **Never panic, never loop.** Every length is checked before use; all
//!   arithmetic is checked or proven in range; each call consumes bytes or
//!   ends. The test suite runs thousands of seeded mutants of real captures,
//!   and `fuzz/` has cargo-fuzz targets.
//! - **Precise, sticky errors.** A [`CaptureError`] names the file, the byte
//!   offset of the bad header/record/block, the packet record number and the
//!   numbers that disagree. After an error, `next_packet` returns the same
//!   error again. A capture cut short yields every complete packet first and
//!   then an error whose [`CaptureError::is_truncation`] is true.
//! - **As liberal as libpcap/Wireshark where they agree**: records longer
//!   than the snaplen, out-of-range microsecond fields, per-interface link
//!   types and snaplens, mixed-endian sections; as strict as they are about
//!   versions, reserved link-type bits and block framing.

#![forbid(unsafe_code)]

mod buffer;
mod bytes;
mod erf;
mod error;
mod interface;
mod linktype;
mod options;
mod packet;
mod pcap;
mod pcapng;
mod reader;
mod tsh;
mod writer;

pub use buffer::StreamBuf;
pub use erf::LINKTYPE_ERF;
pub use error::{CaptureError, ErrorKind};
pub use linktype::LinkType;
pub use packet::{Format, Packet};
pub use pcap::MAX_RECORD;
pub use pcapng::MAX_INTERFACES;
pub use reader::{open_input, read_once, CaptureReader};
pub use writer::{PcapWriter, Stamps, MAX_SNAPLEN, WRITE_BUFFER};

/// Where a parsed packet lies in the reader's buffer storage, and its
/// metadata (shared by the pcap and pcapng parsers).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PacketPos {
    pub data_start: usize,
    pub caplen: usize,
    pub ts_ns: u64,
    pub orig_len: u32,
    pub linktype: LinkType,
    pub interface: u32,
}

/// A parse failure before the reader adds the file name and record number.
#[derive(Debug)]
pub(crate) struct Fault {
    /// Stream offset of the offending header, record or block.
    pub offset: u64,
    /// Whether the failure concerns a packet record (gets a record number).
    pub is_record: bool,
    pub kind: ErrorKind,
}

impl Fault {
    pub(crate) fn record(offset: u64, kind: ErrorKind) -> Fault {
        Fault {
            offset,
            is_record: true,
            kind,
        }
    }

    pub(crate) fn block(offset: u64, kind: ErrorKind) -> Fault {
        Fault {
            offset,
            is_record: false,
            kind,
        }
    }

    pub(crate) fn io(offset: u64, e: std::io::Error) -> Fault {
        Fault::block(offset, ErrorKind::Io(e))
    }
}
