//! Errors of the capture reader: *where* (file, byte offset, packet record)
//! and *what* ([`ErrorKind`]).
//!
//! Design: one error struct for every failure so callers can always print a
//! message that lets a person find the bad bytes with `xxd -s OFFSET`. The
//! location lives in [`CaptureError`]; [`ErrorKind`] says what is wrong with
//! the numbers the reader saw (need/got, header/trailer, ...), so tests can
//! match on the variant instead of on message text. `ErrorKind` does not
//! expose its I/O error as a `source()`: its message is already part of the
//! `Display` text and error-chain printers would otherwise repeat it.

use std::fmt;
use std::io;

/// A failure while opening or reading a capture, with its location.
///
/// `Display` reads `"{file}: byte {offset} (record N): {kind}"`, e.g.
/// `x.pcap: byte 54451 (record 100): truncated record: header says 66
/// captured bytes, only 30 left in the file`. The record part is present
/// when the error concerns a packet record (1-based packet number).
#[derive(Debug, thiserror::Error)]
#[error("{file}: {}{kind}", Location(*offset, *record, kind))]
pub struct CaptureError {
    /// Name of the capture (the path, or the name given to `from_reader`).
    pub file: String,
    /// Byte offset in the (decompressed) stream where the offending header,
    /// record or block starts.
    pub offset: u64,
    /// 1-based number of the packet record involved, if any.
    pub record: Option<u64>,
    /// What is wrong.
    pub kind: ErrorKind,
}

/// `byte N (record M): `, or nothing for a file that did not open.
struct Location<'a>(u64, Option<u64>, &'a ErrorKind);

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if matches!(self.2, ErrorKind::Open(_)) {
            return Ok(());
        }
        write!(f, "byte {}", self.0)?;
        match self.1 {
            Some(n) => write!(f, " (record {n}): "),
            None => write!(f, ": "),
        }
    }
}

/// Human name of a pcapng block type, for messages.
struct BlockName(u32);

impl fmt::Display for BlockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.0 {
            0x0A0D_0D0A => "section header block",
            1 => "interface description block",
            2 => "packet block",
            3 => "simple packet block",
            4 => "name resolution block",
            5 => "interface statistics block",
            6 => "enhanced packet block",
            10 => "decryption secrets block",
            0x0BAD | 0x4000_0BAD => "custom block",
            _ => "block",
        };
        write!(f, "{name} (type 0x{:x})", self.0)
    }
}

/// An `if_tsresol` value as a power, e.g. `10^-100 s` or `2^-70 s`.
struct TsResol(u8);

impl fmt::Display for TsResol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let base = if self.0 & 0x80 != 0 { 2 } else { 10 };
        write!(f, "{base}^-{} s", self.0 & 0x7f)
    }
}

impl CaptureError {
    /// True when the capture simply ends early (a header, record or block is
    /// cut short, or a compressed stream ends unexpectedly): every packet
    /// returned before this error was complete and good.
    pub fn is_truncation(&self) -> bool {
        self.kind.is_truncation()
    }

    /// An equal copy (`io::Error` is not `Clone`; it is rebuilt from its kind
    /// and message). Used to repeat a sticky error.
    pub(crate) fn duplicate(&self) -> CaptureError {
        CaptureError {
            file: self.file.clone(),
            offset: self.offset,
            record: self.record,
            kind: self.kind.duplicate(),
        }
    }
}

/// What is wrong with a capture.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    /// The file could not be opened (missing, no permission, a FIFO whose
    /// wait for a writer a signal ended).
    #[error("cannot open it: {0}")]
    Open(io::Error),
    /// Reading (or decompressing) the underlying stream failed.
    #[error("I/O error: {0}")]
    Io(io::Error),
    /// The file (or the decompressed stream) has no bytes at all.
    #[error("file is empty (0 bytes of capture data): not a pcap or pcapng capture")]
    Empty,
    /// The first bytes are no pcap, pcapng or gzip magic. `magic` holds the
    /// first four bytes, big-endian (as `xxd` shows them), zero-padded.
    #[error(
        "not a pcap or pcapng capture (file starts with bytes {magic:08x}); ERF and TSH traces are \
         read by their name: .erf, .tsh (or .erf.gz, .tsh.gz)"
    )]
    NotACapture {
        /// First four bytes of the stream, read big-endian.
        magic: u32,
    },
    /// The file ends inside the pcap file header or the first pcapng
    /// section header block.
    #[error("truncated file header: need {need} bytes, only {got} in the file")]
    TruncatedHeader {
        /// Bytes the header needs.
        need: u64,
        /// Bytes present.
        got: u64,
    },
    /// The file ends inside a 16-byte pcap record header.
    #[error("truncated record header: need {need} bytes, only {got} left in the file")]
    TruncatedRecordHeader {
        /// Bytes the record header needs.
        need: u64,
        /// Bytes present.
        got: u64,
    },
    /// The file ends inside the data of a pcap record.
    #[error("truncated record: header says {need} captured bytes, only {got} left in the file")]
    TruncatedRecord {
        /// Captured length from the record header.
        need: u64,
        /// Data bytes present after the record header.
        got: u64,
    },
    /// The file ends inside a pcapng block.
    #[error("truncated pcapng block: need {need} bytes, only {got} left in the file")]
    TruncatedBlock {
        /// Bytes the block needs (its total length once known).
        need: u64,
        /// Bytes of the block present.
        got: u64,
    },
    /// pcap major version other than 2, or pcapng major version other than 1.
    #[error("unsupported format version {major}.{minor}")]
    UnsupportedVersion {
        /// Major version in the file.
        major: u16,
        /// Minor version in the file.
        minor: u16,
    },
    /// pcap link-type field with reserved bits (0x03ff0000) set.
    #[error("link-type field 0x{0:08x} has reserved bits set (mask 0x03ff0000)")]
    BadLinkType(u32),
    /// A pcap record claims more captured bytes than we are willing to buffer.
    #[error("record claims {caplen} captured bytes, more than the {limit}-byte limit")]
    RecordTooLarge {
        /// Captured length from the record header.
        caplen: u32,
        /// The reader's limit.
        limit: u32,
    },
    /// A pcapng section header block whose byte-order magic is neither
    /// 0x1a2b3c4d nor 0x4d3c2b1a.
    #[error("pcapng section header has byte-order magic 0x{0:08x}, not 0x1a2b3c4d")]
    BadByteOrderMagic(u32),
    /// A pcapng block total length that is too small, not a multiple of 4
    /// or above the limit.
    #[error("pcapng {} has total length {length}, {reason}", BlockName(*block_type))]
    BadBlockLength {
        /// Block type.
        block_type: u32,
        /// Total length from the block header.
        length: u32,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The block total length at the end of a pcapng block differs from the
    /// one at its start.
    #[error(
        "pcapng {} has total length {header} at its start but {trailer} (0x{trailer:08x}) \
         in its trailer",
        BlockName(*block_type)
    )]
    BlockTrailerMismatch {
        /// Block type.
        block_type: u32,
        /// Length in the block header.
        header: u32,
        /// Length in the block trailer.
        trailer: u32,
    },
    /// A packet block before any interface description block of its section.
    #[error(
        "pcapng {} before any interface description block in its section",
        BlockName(*block_type)
    )]
    PacketBeforeInterface {
        /// Block type.
        block_type: u32,
    },
    /// A packet block naming an interface the section does not have.
    #[error("pcapng packet block names interface {interface}, but the section has only {count}")]
    BadInterface {
        /// Interface id in the block.
        interface: u32,
        /// Interfaces described so far in the section.
        count: u32,
    },
    /// An `if_tsresol` finer than 10^-19 s or 2^-63 s.
    #[error(
        "interface if_tsresol 0x{0:02x} ({res}) is finer than the supported 10^-19 s / 2^-63 s",
        res = TsResol(*.0)
    )]
    BadTsResol(u8),
    /// An option of a pcapng block runs past the end of the block body.
    #[error(
        "pcapng {} option {code} has length {length}, but only {room} bytes are left in the block",
        BlockName(*block_type)
    )]
    OptionOverrun {
        /// Block type.
        block_type: u32,
        /// Option code.
        code: u16,
        /// Option length.
        length: u16,
        /// Bytes left in the block body after the option header.
        room: u64,
    },
    /// A packet timestamp that is before 1970 or beyond `u64` nanoseconds
    /// (year 2554) once resolution and offset are applied.
    #[error("packet timestamp does not fit in u64 nanoseconds since 1970")]
    TimestampOverflow,
    /// A pcapng packet block whose captured length exceeds its data area.
    #[error("pcapng packet block says {caplen} captured bytes, but the block has room for {room}")]
    PacketLengthOverrun {
        /// Captured length from the block.
        caplen: u32,
        /// Bytes available for packet data in the block.
        room: u64,
    },
    /// An ERF record whose framing is wrong.
    #[error("ERF record of length {rlen}: {reason}")]
    BadErfRecord {
        /// The record length from its header.
        rlen: u16,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A TSH record whose IP header is not IPv4.
    #[error("TSH record holds IP version {version}: TSH keeps IPv4 headers only")]
    BadTshRecord {
        /// The version nibble.
        version: u8,
    },
    /// More interface description blocks in one section than we keep.
    #[error("more than {limit} interface description blocks in one pcapng section")]
    TooManyInterfaces {
        /// The reader's limit.
        limit: u32,
    },
}

impl ErrorKind {
    /// See [`CaptureError::is_truncation`].
    pub fn is_truncation(&self) -> bool {
        match self {
            ErrorKind::TruncatedHeader { .. }
            | ErrorKind::TruncatedRecordHeader { .. }
            | ErrorKind::TruncatedRecord { .. }
            | ErrorKind::TruncatedBlock { .. } => true,
            ErrorKind::Io(e) => e.kind() == io::ErrorKind::UnexpectedEof,
            _ => false,
        }
    }

    fn duplicate(&self) -> ErrorKind {
        use ErrorKind::*;
        match self {
            Io(e) => Io(io::Error::new(e.kind(), e.to_string())),
            Open(e) => Open(io::Error::new(e.kind(), e.to_string())),
            Empty => Empty,
            NotACapture { magic } => NotACapture { magic: *magic },
            TruncatedHeader { need, got } => TruncatedHeader {
                need: *need,
                got: *got,
            },
            TruncatedRecordHeader { need, got } => TruncatedRecordHeader {
                need: *need,
                got: *got,
            },
            TruncatedRecord { need, got } => TruncatedRecord {
                need: *need,
                got: *got,
            },
            TruncatedBlock { need, got } => TruncatedBlock {
                need: *need,
                got: *got,
            },
            UnsupportedVersion { major, minor } => UnsupportedVersion {
                major: *major,
                minor: *minor,
            },
            BadLinkType(v) => BadLinkType(*v),
            RecordTooLarge { caplen, limit } => RecordTooLarge {
                caplen: *caplen,
                limit: *limit,
            },
            BadByteOrderMagic(v) => BadByteOrderMagic(*v),
            BadBlockLength {
                block_type,
                length,
                reason,
            } => BadBlockLength {
                block_type: *block_type,
                length: *length,
                reason,
            },
            BlockTrailerMismatch {
                block_type,
                header,
                trailer,
            } => BlockTrailerMismatch {
                block_type: *block_type,
                header: *header,
                trailer: *trailer,
            },
            PacketBeforeInterface { block_type } => PacketBeforeInterface {
                block_type: *block_type,
            },
            BadInterface { interface, count } => BadInterface {
                interface: *interface,
                count: *count,
            },
            BadTsResol(v) => BadTsResol(*v),
            OptionOverrun {
                block_type,
                code,
                length,
                room,
            } => OptionOverrun {
                block_type: *block_type,
                code: *code,
                length: *length,
                room: *room,
            },
            TimestampOverflow => TimestampOverflow,
            PacketLengthOverrun { caplen, room } => PacketLengthOverrun {
                caplen: *caplen,
                room: *room,
            },
            TooManyInterfaces { limit } => TooManyInterfaces { limit: *limit },
            BadErfRecord { rlen, reason } => BadErfRecord {
                rlen: *rlen,
                reason,
            },
            BadTshRecord { version } => BadTshRecord { version: *version },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_offset_record_and_problem() {
        let e = CaptureError {
            file: "x.pcap".into(),
            offset: 54451,
            record: Some(100),
            kind: ErrorKind::TruncatedRecord { need: 66, got: 30 },
        };
        assert_eq!(
            e.to_string(),
            "x.pcap: byte 54451 (record 100): truncated record: header says 66 captured bytes, \
             only 30 left in the file"
        );
        assert!(e.is_truncation());

        let e = CaptureError {
            file: "y.pcapng".into(),
            offset: 28,
            record: None,
            kind: ErrorKind::BadBlockLength {
                block_type: 1,
                length: 21,
                reason: "not a multiple of 4",
            },
        };
        assert_eq!(
            e.to_string(),
            "y.pcapng: byte 28: pcapng interface description block (type 0x1) has total length 21, \
             not a multiple of 4"
        );
        assert!(!e.is_truncation());
    }

    #[test]
    fn duplicate_keeps_kind_and_io_message() {
        let e = CaptureError {
            file: "z".into(),
            offset: 1,
            record: None,
            kind: ErrorKind::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "gzip ended")),
        };
        let d = e.duplicate();
        assert_eq!(d.to_string(), e.to_string());
        assert!(d.is_truncation());
        assert!(matches!(d.kind, ErrorKind::Io(ref x) if x.kind() == io::ErrorKind::UnexpectedEof));
    }
}
