//! [`CaptureReader`]: format detection and the packet loop.
//!
//! Design: detection looks at the first bytes only: gzip (`1f 8b`) wraps
//! the stream in a `MultiGzDecoder` and looks again; then a pcap magic or
//! the pcapng Section Header Block type decides the parser. The file header
//! (or first section header) is parsed in `open`, so a file that is not a
//! capture fails there; everything after is read lazily by `next_packet`.
//! Errors are sticky: once `next_packet` fails, later calls return the same
//! error without touching the stream again.

use std::fmt;
use std::fs::File;
use std::io::{Cursor, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::buffer::StreamBuf;
use crate::error::{CaptureError, ErrorKind};
use crate::linktype::LinkType;
use crate::packet::{Format, Packet};
use crate::pcap::{self, PcapHeader, FILE_HEADER_LEN};
use crate::pcapng::{self, PcapngState};
use crate::Fault;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

enum State {
    Pcap(PcapHeader),
    Pcapng(PcapngState),
    Erf,
    Tsh,
}

/// A trace format known by its file name (ERF and TSH have no magic).
fn named_format(name: &str) -> Option<Format> {
    let lower = name.to_ascii_lowercase();
    let base = lower.strip_suffix(".gz").unwrap_or(&lower);
    if base.ends_with(".erf") {
        Some(Format::Erf)
    } else if base.ends_with(".tsh") {
        Some(Format::Tsh)
    } else {
        None
    }
}

/// Streaming reader of pcap, pcapng and gzip-compressed captures.
///
/// ```no_run
/// # fn main() -> Result<(), sluice_capture::CaptureError> {
/// let mut r = sluice_capture::CaptureReader::open("trace.pcapng")?;
/// while let Some(p) = r.next_packet()? {
///     println!("{} {} bytes on {}", p.ts_ns, p.data.len(), p.linktype);
/// }
/// # Ok(()) }
/// ```
pub struct CaptureReader {
    name: String,
    buf: StreamBuf,
    state: State,
    format: Format,
    compressed: bool,
    packets: u64,
    failed: Option<CaptureError>,
}

impl fmt::Debug for CaptureReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureReader")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("compressed", &self.compressed)
            .field("offset", &self.offset())
            .field("packets_read", &self.packets)
            .field("failed", &self.failed.is_some())
            .finish()
    }
}

fn error(name: &str, offset: u64, record: Option<u64>, kind: ErrorKind) -> CaptureError {
    CaptureError {
        file: name.to_owned(),
        offset,
        record,
        kind,
    }
}

/// True when `bytes` (shorter than 4) is the start of a known magic.
fn is_magic_prefix(bytes: &[u8]) -> Option<u64> {
    let pcap_magics: [[u8; 4]; 4] = [
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
    ];
    if pcap_magics.iter().any(|m| m.starts_with(bytes)) {
        return Some(FILE_HEADER_LEN as u64);
    }
    if pcapng::SHB.to_le_bytes().starts_with(bytes) {
        return Some(28);
    }
    None
}

impl CaptureReader {
    /// Opens a capture file (pcap, pcapng, or either gzip-compressed) and
    /// reads its file header. The kernel is told we read sequentially.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let file = open_input(path).map_err(|e| error(&name, 0, None, ErrorKind::Open(e)))?;
        advise_sequential(&file);
        Self::from_reader(Box::new(file), &name)
    }

    /// Reads a capture from any byte stream; `name` is used in errors.
    /// [`CaptureReader::open`], stopped by `stop`: a trace that can be read
    /// only once (a FIFO, a pipe, a device) may block a read for ever,
    /// past a signal whose handler restarts it, so its reads wait in
    /// `poll` and end with an error once `stop` is set. A regular file
    /// is read as `open` reads it.
    pub fn open_stoppable(
        path: impl AsRef<Path>,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        if !read_once(path) {
            return Self::open(path);
        }
        let name = path.display().to_string();
        let file = open_input(path).map_err(|e| error(&name, 0, None, ErrorKind::Open(e)))?;
        Self::from_reader(Box::new(Stoppable { file, stop }), &name)
    }

    pub fn from_reader(r: Box<dyn Read + Send>, name: &str) -> Result<Self, CaptureError> {
        let fail = |kind| error(name, 0, None, kind);
        let mut buf = StreamBuf::new(r);
        let mut have = buf.fill(4).map_err(|e| fail(ErrorKind::Io(e)))?;
        let mut compressed = false;
        if have >= 2 && buf.avail()[..2] == GZIP_MAGIC {
            let (prefix, rest) = buf.into_parts();
            let decoder = MultiGzDecoder::new(Cursor::new(prefix).chain(rest));
            buf = StreamBuf::new(Box::new(decoder));
            compressed = true;
            have = buf.fill(4).map_err(|e| fail(ErrorKind::Io(e)))?;
        }
        let (state, format) = match named_format(name) {
            Some(_) if have == 0 => return Err(fail(ErrorKind::Empty)),
            Some(Format::Erf) => (State::Erf, Format::Erf),
            Some(_) => (State::Tsh, Format::Tsh),
            None => Self::by_magic(&mut buf, have, name)?,
        };
        Ok(CaptureReader {
            name: name.to_owned(),
            buf,
            state,
            format,
            compressed,
            packets: 0,
            failed: None,
        })
    }

    /// The parser the first bytes name (a pcap magic or a pcapng section
    /// header), its file header read; `have` bytes are buffered.
    fn by_magic(
        buf: &mut StreamBuf,
        have: usize,
        name: &str,
    ) -> Result<(State, Format), CaptureError> {
        let fail = |kind| error(name, 0, None, kind);
        let head = buf.avail();
        if have < 4 {
            if have == 0 {
                return Err(fail(ErrorKind::Empty));
            }
            if let Some(need) = is_magic_prefix(head) {
                return Err(fail(ErrorKind::TruncatedHeader {
                    need,
                    got: have as u64,
                }));
            }
        }
        let mut first4 = [0u8; 4];
        let n = head.len().min(4);
        first4[..n].copy_from_slice(&head[..n]);

        let found = if let Some((big_endian, nanos)) = pcap::magic(first4) {
            let have = buf
                .fill(FILE_HEADER_LEN)
                .map_err(|e| fail(ErrorKind::Io(e)))?;
            if have < FILE_HEADER_LEN {
                return Err(fail(ErrorKind::TruncatedHeader {
                    need: FILE_HEADER_LEN as u64,
                    got: have as u64,
                }));
            }
            let h = pcap::parse_file_header(buf.avail()).map_err(fail)?;
            buf.consume(FILE_HEADER_LEN);
            (State::Pcap(h), Format::Pcap { nanos, big_endian })
        } else if first4 == pcapng::SHB.to_le_bytes() {
            let st = PcapngState::open(buf).map_err(|f| error(name, f.offset, None, f.kind))?;
            (State::Pcapng(st), Format::Pcapng)
        } else {
            return Err(fail(ErrorKind::NotACapture {
                magic: u32::from_be_bytes(first4),
            }));
        };
        Ok(found)
    }

    /// The next packet, `Ok(None)` at the end of the capture. The packet
    /// borrows the reader's buffer until the next call. After an error,
    /// every later call returns the same error.
    #[inline]
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        if let Some(e) = &self.failed {
            return Err(e.duplicate());
        }
        // Each format's result is turned into a packet in its own arm: one
        // result shared by both arms is an aggregate the compiler keeps on
        // the stack, written field by field and read back wider, which
        // stalls store forwarding on every packet.
        match &mut self.state {
            State::Pcap(h) => {
                let r = pcap::next_record(h, &mut self.buf);
                self.packet(r)
            }
            State::Pcapng(st) => {
                let r = st.next_packet(&mut self.buf);
                self.packet(r)
            }
            State::Erf => {
                let r = crate::erf::next_record(&mut self.buf);
                self.packet(r)
            }
            State::Tsh => {
                let r = crate::tsh::next_record(&mut self.buf);
                self.packet(r)
            }
        }
    }

    #[inline(always)]
    fn packet(
        &mut self,
        res: Result<Option<crate::PacketPos>, Fault>,
    ) -> Result<Option<Packet<'_>>, CaptureError> {
        match res {
            Ok(Some(p)) => {
                self.packets += 1;
                Ok(Some(Packet {
                    ts_ns: p.ts_ns,
                    data: &self.buf.storage()[p.data_start..p.data_start + p.caplen],
                    orig_len: p.orig_len,
                    linktype: p.linktype,
                    interface: p.interface,
                }))
            }
            Ok(None) => Ok(None),
            Err(f) => Err(self.fail(f)),
        }
    }

    #[cold]
    fn fail(&mut self, f: Fault) -> CaptureError {
        let record = f.is_record.then_some(self.packets + 1);
        let e = error(&self.name, f.offset, record, f.kind);
        self.failed = Some(e.duplicate());
        e
    }

    /// Container format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the file was gzip-compressed.
    pub fn compressed(&self) -> bool {
        self.compressed
    }

    /// Bytes of the (decompressed) stream consumed so far: after the last
    /// packet, the capture's size.
    pub fn offset(&self) -> u64 {
        self.buf.offset()
    }

    /// Packets returned so far.
    pub fn packets_read(&self) -> u64 {
        self.packets
    }

    /// The name used in errors (path or `from_reader` name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file-wide link type of a pcap file; for pcapng, the link type of
    /// interface 0 of the current section once described (packets carry
    /// their own, which may differ).
    pub fn linktype(&self) -> Option<LinkType> {
        match &self.state {
            State::Pcap(h) => Some(h.linktype),
            State::Pcapng(st) => st.first_linktype(),
            // Per record in ERF; always raw IPv4 in TSH.
            State::Erf => None,
            State::Tsh => Some(LinkType::IPV4),
        }
    }

    /// The snapshot length of a pcap file header (`None` for pcapng, where
    /// it is per interface).
    pub fn snaplen(&self) -> Option<u32> {
        match &self.state {
            State::Pcap(h) => Some(h.snaplen),
            State::Pcapng(_) | State::Erf | State::Tsh => None,
        }
    }
}

/// Opens a file to read. A FIFO is opened without blocking and then
/// waited on until a writer has written (or come and gone): a blocking
/// open would wait for its writer in the kernel past any SIGINT/SIGTERM
/// (the handlers restart it); the wait ends with `Interrupted` when a
/// signal arrives.
pub fn open_input(path: &Path) -> std::io::Result<File> {
    use rustix::event::{poll, PollFd, PollFlags};
    use rustix::fs::{fcntl_getfl, fcntl_setfl, Mode, OFlags};
    use std::os::unix::fs::FileTypeExt;
    let fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    if !fifo {
        return File::open(path);
    }
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = File::from(rustix::fs::open(path, flags, Mode::empty())?);
    loop {
        let mut fds = [PollFd::new(&file, PollFlags::IN)];
        match poll(&mut fds, None) {
            Ok(_) if !fds[0].revents().is_empty() => break,
            Ok(_) => continue,
            Err(rustix::io::Errno::INTR) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "a FIFO: interrupted while waiting for its writer",
                ))
            }
            Err(e) => return Err(e.into()),
        }
    }
    let flags = fcntl_getfl(&file)?;
    fcntl_setfl(&file, flags - OFlags::NONBLOCK)?;
    Ok(file)
}

/// A file whose reads wait in `poll`, a slice at a time, until data
/// comes or the stop flag is set.
struct Stoppable {
    file: File,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Read for Stoppable {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let slice = Timespec {
            tv_sec: 0,
            tv_nsec: 50_000_000,
        };
        loop {
            if self.stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Not `Interrupted`: readers retry that.
                return Err(std::io::Error::other("stopped by a signal"));
            }
            let mut fds = [PollFd::new(&self.file, PollFlags::IN)];
            match poll(&mut fds, Some(&slice)) {
                Ok(0) | Err(rustix::io::Errno::INTR) => continue,
                Ok(_) => return self.file.read(buf),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Whether `path` can be read only once: a FIFO, a pipe (`/dev/fd/N`), a
/// character device or a socket. A path that cannot be read says false
/// (opening it reports why).
pub fn read_once(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| {
        let t = m.file_type();
        t.is_fifo() || t.is_char_device() || t.is_socket()
    })
}

/// Tells the kernel we read front to back (bigger read-ahead). Best effort.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn advise_sequential(file: &File) {
    let _ = rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::Sequential);
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
fn advise_sequential(_file: &File) {}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::Write;

    /// First two records of the testdata `tcpdump__tcp-handshake-nano.pcap`
    /// cut to 8 data bytes each (LE nanosecond pcap, LINUX_SLL).
    fn nano_pcap() -> Vec<u8> {
        let mut v = vec![
            0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0x71, 0, 0, 0,
        ];
        for (sec, nsec) in [(0x5487_2e59u32, 0x371a_d590u32), (0x5487_2e59, 0x371a_e000)] {
            v.extend(sec.to_le_bytes());
            v.extend(nsec.to_le_bytes());
            v.extend(8u32.to_le_bytes());
            v.extend(76u32.to_le_bytes());
            v.extend([0, 4, 2, 0, 0, 0, 0, 0]);
        }
        v
    }

    fn reader(bytes: Vec<u8>) -> Result<CaptureReader, CaptureError> {
        CaptureReader::from_reader(Box::new(Cursor::new(bytes)), "t.pcap")
    }

    #[test]
    fn reads_pcap_and_reports_progress() {
        let mut r = reader(nano_pcap()).unwrap();
        assert_eq!(
            r.format(),
            Format::Pcap {
                nanos: true,
                big_endian: false
            }
        );
        assert!(!r.compressed());
        assert_eq!(r.linktype(), Some(LinkType::LINUX_SLL));
        assert_eq!(r.snaplen(), Some(262_144));
        assert_eq!(r.offset(), 24);
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(p.ts_ns, 0x5487_2e59 * 1_000_000_000 + 0x371a_d590);
        assert_eq!((p.data.len(), p.orig_len, p.interface), (8, 76, 0));
        assert_eq!(p.linktype, LinkType::LINUX_SLL);
        assert!(r.next_packet().unwrap().is_some());
        assert!(r.next_packet().unwrap().is_none());
        assert!(r.next_packet().unwrap().is_none());
        assert_eq!((r.packets_read(), r.offset()), (2, 24 + 2 * 24));
        assert_eq!(r.name(), "t.pcap");
    }

    #[test]
    fn gzip_is_transparent_and_multi_member() {
        let plain = nano_pcap();
        let (a, b) = plain.split_at(30);
        let mut gz = Vec::new();
        for part in [a, b] {
            let mut e = GzEncoder::new(Vec::new(), Compression::fast());
            e.write_all(part).unwrap();
            gz.extend(e.finish().unwrap());
        }
        let mut r = reader(gz).unwrap();
        assert!(r.compressed());
        let mut n = 0;
        while r.next_packet().unwrap().is_some() {
            n += 1;
        }
        assert_eq!((n, r.offset()), (2, plain.len() as u64));

        // gzip of nothing.
        let e = reader(
            GzEncoder::new(Vec::new(), Compression::fast())
                .finish()
                .unwrap(),
        )
        .unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Empty));
    }

    #[test]
    fn cut_gzip_is_a_truncation_after_the_good_packets() {
        let mut plain = nano_pcap();
        for _ in 0..200 {
            let rec = plain[24..48].to_vec();
            plain.extend(rec);
        }
        let mut e = GzEncoder::new(Vec::new(), Compression::fast());
        e.write_all(&plain).unwrap();
        let gz = e.finish().unwrap();
        let mut r = reader(gz[..gz.len() / 2].to_vec()).unwrap();
        let err = loop {
            match r.next_packet() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("cut gzip read to a clean end"),
                Err(e) => break e,
            }
        };
        assert!(err.is_truncation(), "{err}");
    }

    #[test]
    fn detection_errors() {
        let e = reader(Vec::new()).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Empty));
        assert_eq!(
            e.to_string(),
            "t.pcap: byte 0: file is empty (0 bytes of capture data): not a pcap or pcapng capture"
        );

        let e = reader(b"GET / HTTP/1.1\r\n".to_vec()).unwrap_err();
        assert!(matches!(
            e.kind,
            ErrorKind::NotACapture { magic: 0x4745_5420 }
        ));

        let e = reader(vec![0xd4, 0xc3]).unwrap_err();
        assert!(matches!(
            e.kind,
            ErrorKind::TruncatedHeader { need: 24, got: 2 }
        ));
        let e = reader(vec![0x0a, 0x0d, 0x0d]).unwrap_err();
        assert!(matches!(
            e.kind,
            ErrorKind::TruncatedHeader { need: 28, got: 3 }
        ));
        let e = reader(vec![0x01]).unwrap_err();
        assert!(matches!(
            e.kind,
            ErrorKind::NotACapture { magic: 0x0100_0000 }
        ));

        // libpcap pcap-truncated-hdr-23.pcap
        let e = reader(nano_pcap()[..23].to_vec()).unwrap_err();
        assert!(matches!(
            e.kind,
            ErrorKind::TruncatedHeader { need: 24, got: 23 }
        ));
        assert!(e.is_truncation());
    }

    #[test]
    fn errors_are_sticky_and_carry_the_record_number() {
        let mut bytes = nano_pcap();
        bytes.truncate(bytes.len() - 3);
        let mut r = reader(bytes).unwrap();
        assert!(r.next_packet().unwrap().is_some());
        for _ in 0..3 {
            let e = r.next_packet().unwrap_err();
            assert_eq!((e.offset, e.record), (48, Some(2)));
            assert!(matches!(
                e.kind,
                ErrorKind::TruncatedRecord { need: 8, got: 5 }
            ));
            assert_eq!(
                e.to_string(),
                "t.pcap: byte 48 (record 2): truncated record: header says 8 captured bytes, \
                 only 5 left in the file"
            );
        }
        assert_eq!(r.packets_read(), 1);
    }

    #[test]
    fn open_reports_missing_files_and_reader_is_send() {
        fn send<T: Send>() {}
        send::<CaptureReader>();
        let e = CaptureReader::open("/nonexistent/x.pcap").unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Open(_)));
        assert!(e
            .to_string()
            .starts_with("/nonexistent/x.pcap: cannot open it: No such file"));
    }
}
