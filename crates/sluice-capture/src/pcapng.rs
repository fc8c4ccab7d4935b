//! pcapng: sections, interfaces and packet blocks.
//!
//! Design: a block is validated as a frame before anything inside it is
//! believed: total length >= 12, a multiple of 4, at most
//! [`MAX_RECORD`](crate::MAX_RECORD), at least the fixed part of its type,
//! and equal to the trailer copy. Only the blocks that carry packets or
//! change how packets are read are parsed: Section Header (byte order; a new
//! section forgets its interfaces), Interface Description (link type,
//! snaplen, `if_tsresol`, `if_tsoffset`), Enhanced, Simple and the obsolete
//! Packet Block. Every other block (name resolution, statistics, secrets,
//! custom, unknown) is skipped by its length without being buffered.
//!
//! Timestamps are converted per interface (see `interface.rs`); a value
//! outside `0..=u64::MAX` ns is refused per packet ([`TimestampOverflow`]).
//! Simple Packet Blocks carry no timestamp; they get the timestamp of the
//! previous packet (0 before any), which keeps a replayed stream monotonic.
//!
//! Options of packet blocks are not parsed (nothing in them changes what we
//! return), so a damaged packet option does not cost the packet. Section and
//! interface options are walked and must stay inside their block.
//!
//! [`TimestampOverflow`]: crate::ErrorKind::TimestampOverflow

use crate::buffer::StreamBuf;
use crate::bytes::{u16_at, u32_at};
use crate::error::ErrorKind;
use crate::interface::Interface;
use crate::linktype::LinkType;
use crate::options::walk_options;
use crate::pcap::MAX_RECORD;
use crate::{Fault, PacketPos};

pub(crate) const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 1;
const OPB: u32 = 2;
const SPB: u32 = 3;
const EPB: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

/// Most interfaces one section may describe (bounds memory on garbage).
pub const MAX_INTERFACES: u32 = 1 << 16;

/// Reading state of a pcapng stream: current section's byte order and
/// interfaces.
#[derive(Debug)]
pub(crate) struct PcapngState {
    big_endian: bool,
    interfaces: Vec<Interface>,
    last_ts: u64,
}

/// Checks a block's total length field against the generic and per-type
/// rules.
fn check_length(block_type: u32, length: u32) -> Result<(), ErrorKind> {
    let bad = |reason| ErrorKind::BadBlockLength {
        block_type,
        length,
        reason,
    };
    if length < 12 {
        return Err(bad("less than the 12-byte minimum of a block"));
    }
    if !length.is_multiple_of(4) {
        return Err(bad("not a multiple of 4"));
    }
    if length > MAX_RECORD {
        return Err(bad("more than the 256 MiB limit"));
    }
    let (min, reason) = match block_type {
        SHB => (
            28,
            "less than the 28-byte minimum of a section header block",
        ),
        IDB => (
            20,
            "less than the 20-byte minimum of an interface description block",
        ),
        EPB | OPB => (32, "less than the 32-byte minimum of a packet block"),
        SPB => (16, "less than the 16-byte minimum of a simple packet block"),
        _ => (12, ""),
    };
    if length < min {
        return Err(bad(reason));
    }
    Ok(())
}

/// Byte order of a section from its byte-order magic (`true` = big-endian).
fn byte_order(bom: [u8; 4]) -> Result<bool, ErrorKind> {
    match u32::from_le_bytes(bom) {
        BYTE_ORDER_MAGIC => Ok(false),
        v if v.swap_bytes() == BYTE_ORDER_MAGIC => Ok(true),
        v => Err(ErrorKind::BadByteOrderMagic(v)),
    }
}

impl PcapngState {
    /// Reads the first section header block; the stream must start with
    /// the SHB type. A cut-short SHB here is a [`ErrorKind::TruncatedHeader`].
    pub(crate) fn open(buf: &mut StreamBuf) -> Result<PcapngState, Fault> {
        let mut st = PcapngState {
            big_endian: false,
            interfaces: Vec::new(),
            last_ts: 0,
        };
        st.read_shb(buf, true)?;
        Ok(st)
    }

    /// Link type of interface 0 of the current section, once described.
    pub(crate) fn first_linktype(&self) -> Option<LinkType> {
        self.interfaces.first().map(|i| i.linktype)
    }

    /// Reads and applies a section header block at the current position.
    fn read_shb(&mut self, buf: &mut StreamBuf, first: bool) -> Result<(), Fault> {
        let at = buf.offset();
        let truncated = |need: u64, got: usize| {
            let got = got as u64;
            Fault::block(
                at,
                if first {
                    ErrorKind::TruncatedHeader { need, got }
                } else {
                    ErrorKind::TruncatedBlock { need, got }
                },
            )
        };
        let have = buf.fill(12).map_err(|e| Fault::io(at, e))?;
        if have < 12 {
            return Err(truncated(28, have));
        }
        let a = buf.avail();
        let be = byte_order([a[8], a[9], a[10], a[11]]).map_err(|k| Fault::block(at, k))?;
        let total = u32_at(a, 4, be);
        check_length(SHB, total).map_err(|k| Fault::block(at, k))?;
        let total = total as usize;
        let have = buf.fill(total).map_err(|e| Fault::io(at, e))?;
        if have < total {
            return Err(truncated(total as u64, have));
        }
        let block = &buf.avail()[..total];
        check_trailer(SHB, block, be).map_err(|k| Fault::block(at, k))?;
        let body = &block[8..total - 4];
        let major = u16_at(body, 4, be);
        let minor = u16_at(body, 6, be);
        if major != 1 {
            return Err(Fault::block(
                at,
                ErrorKind::UnsupportedVersion { major, minor },
            ));
        }
        walk_options(&body[16..], be, SHB, |_, _| Ok(())).map_err(|k| Fault::block(at, k))?;
        self.big_endian = be;
        self.interfaces.clear();
        buf.consume(total);
        Ok(())
    }

    /// Adds the interface an interface description block describes
    /// (`block` is the whole block).
    fn add_interface(&mut self, block: &[u8]) -> Result<(), ErrorKind> {
        if self.interfaces.len() >= MAX_INTERFACES as usize {
            return Err(ErrorKind::TooManyInterfaces {
                limit: MAX_INTERFACES,
            });
        }
        let body = &block[8..block.len() - 4];
        self.interfaces
            .push(Interface::parse(body, self.big_endian)?);
        Ok(())
    }

    fn interface(&self, block_type: u32, id: u32) -> Result<&Interface, ErrorKind> {
        match self.interfaces.get(id as usize) {
            Some(i) => Ok(i),
            None if self.interfaces.is_empty() => {
                Err(ErrorKind::PacketBeforeInterface { block_type })
            }
            None => Err(ErrorKind::BadInterface {
                interface: id,
                count: self.interfaces.len() as u32,
            }),
        }
    }

    /// Parses a packet block (`block` is the whole block, found at storage
    /// index `pos`).
    #[inline]
    fn packet(
        &mut self,
        block_type: u32,
        block: &[u8],
        pos: usize,
    ) -> Result<PacketPos, ErrorKind> {
        let be = self.big_endian;
        let body = &block[8..block.len() - 4];
        if block_type == SPB {
            let orig_len = u32_at(body, 0, be);
            let iface = self.interface(block_type, 0)?;
            let room = body.len() - 4;
            let mut caplen = (orig_len as usize).min(room);
            if iface.snaplen != 0 {
                caplen = caplen.min(iface.snaplen as usize);
            }
            return Ok(PacketPos {
                data_start: pos + 12,
                caplen,
                ts_ns: self.last_ts,
                orig_len,
                linktype: iface.linktype,
                interface: 0,
            });
        }
        // EPB and OPB share the layout after the interface field.
        let id = if block_type == EPB {
            u32_at(body, 0, be)
        } else {
            u32::from(u16_at(body, 0, be))
        };
        let ts = (u64::from(u32_at(body, 4, be)) << 32) | u64::from(u32_at(body, 8, be));
        let caplen = u32_at(body, 12, be);
        let orig_len = u32_at(body, 16, be);
        let room = body.len() - 20;
        if caplen as usize > room {
            return Err(ErrorKind::PacketLengthOverrun {
                caplen,
                room: room as u64,
            });
        }
        let iface = self.interface(block_type, id)?;
        let ts_ns = iface.ts_ns(ts).ok_or(ErrorKind::TimestampOverflow)?;
        let linktype = iface.linktype;
        self.last_ts = ts_ns;
        Ok(PacketPos {
            data_start: pos + 28,
            caplen: caplen as usize,
            ts_ns,
            orig_len,
            linktype,
            interface: id,
        })
    }

    /// Reads blocks until the next packet. `Ok(None)` at a clean end of
    /// stream (between blocks).
    pub(crate) fn next_packet(&mut self, buf: &mut StreamBuf) -> Result<Option<PacketPos>, Fault> {
        loop {
            let at = buf.offset();
            let have = buf.fill(8).map_err(|e| Fault::io(at, e))?;
            if have < 8 {
                if have == 0 {
                    return Ok(None);
                }
                return Err(Fault::block(
                    at,
                    ErrorKind::TruncatedBlock {
                        need: 12,
                        got: have as u64,
                    },
                ));
            }
            let a = buf.avail();
            let block_type = u32_at(a, 0, self.big_endian);
            if block_type == SHB {
                self.read_shb(buf, false)?;
                continue;
            }
            let be = self.big_endian;
            let total = u32_at(a, 4, be);
            let is_packet = matches!(block_type, EPB | SPB | OPB);
            let fault = |kind| {
                if is_packet {
                    Fault::record(at, kind)
                } else {
                    Fault::block(at, kind)
                }
            };
            check_length(block_type, total).map_err(fault)?;
            let total = total as usize;
            if !is_packet && block_type != IDB {
                skip_block(buf, at, block_type, total, be)?;
                continue;
            }
            let have = buf.fill(total).map_err(|e| fault(ErrorKind::Io(e)))?;
            if have < total {
                return Err(fault(ErrorKind::TruncatedBlock {
                    need: total as u64,
                    got: have as u64,
                }));
            }
            let block = &buf.avail()[..total];
            check_trailer(block_type, block, be).map_err(fault)?;
            if block_type == IDB {
                self.add_interface(block).map_err(fault)?;
                buf.consume(total);
                continue;
            }
            let pos = buf.pos();
            let p = self.packet(block_type, block, pos).map_err(fault)?;
            buf.consume(total);
            return Ok(Some(p));
        }
    }
}

/// Skips a block we do not interpret without buffering it, then checks its
/// trailer.
fn skip_block(
    buf: &mut StreamBuf,
    at: u64,
    block_type: u32,
    total: usize,
    be: bool,
) -> Result<(), Fault> {
    let need = total as u64;
    let body = need - 4;
    let skipped = buf.skip(body).map_err(|e| Fault::io(at, e))?;
    let have = if skipped < body {
        0
    } else {
        buf.fill(4).map_err(|e| Fault::io(at, e))?
    };
    if have < 4 {
        return Err(Fault::block(
            at,
            ErrorKind::TruncatedBlock {
                need,
                got: skipped + have as u64,
            },
        ));
    }
    let trailer = u32_at(buf.avail(), 0, be);
    if trailer as usize != total {
        return Err(Fault::block(
            at,
            ErrorKind::BlockTrailerMismatch {
                block_type,
                header: total as u32,
                trailer,
            },
        ));
    }
    buf.consume(4);
    Ok(())
}

fn check_trailer(block_type: u32, block: &[u8], be: bool) -> Result<(), ErrorKind> {
    let header = u32_at(block, 4, be);
    let trailer = u32_at(block, block.len() - 4, be);
    if header != trailer {
        return Err(ErrorKind::BlockTrailerMismatch {
            block_type,
            header,
            trailer,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// Builds blocks in one byte order.
    struct B {
        be: bool,
    }

    impl B {
        fn u16(&self, v: u16) -> [u8; 2] {
            if self.be {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        }
        fn u32(&self, v: u32) -> [u8; 4] {
            if self.be {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        }
        fn block(&self, t: u32, body: &[u8]) -> Vec<u8> {
            let mut body = body.to_vec();
            while !body.len().is_multiple_of(4) {
                body.push(0);
            }
            let total = 12 + body.len() as u32;
            let mut v = self.u32(t).to_vec();
            v.extend(self.u32(total));
            v.extend(body);
            v.extend(self.u32(total));
            v
        }
        fn opt(&self, code: u16, value: &[u8]) -> Vec<u8> {
            let mut v = self.u16(code).to_vec();
            v.extend(self.u16(value.len() as u16));
            v.extend(value);
            while !v.len().is_multiple_of(4) {
                v.push(0);
            }
            v
        }
        fn shb(&self) -> Vec<u8> {
            let mut body = self.u32(BYTE_ORDER_MAGIC).to_vec();
            body.extend(self.u16(1));
            body.extend(self.u16(0));
            body.extend([0xff; 8]);
            self.block(SHB, &body)
        }
        fn idb(&self, linktype: u16, snaplen: u32, opts: &[Vec<u8>]) -> Vec<u8> {
            let mut body = self.u16(linktype).to_vec();
            body.extend([0, 0]);
            body.extend(self.u32(snaplen));
            for o in opts {
                body.extend(o);
            }
            self.block(IDB, &body)
        }
        fn epb(&self, iface: u32, ts: u64, data: &[u8], orig: u32) -> Vec<u8> {
            let mut body = self.u32(iface).to_vec();
            body.extend(self.u32((ts >> 32) as u32));
            body.extend(self.u32(ts as u32));
            body.extend(self.u32(data.len() as u32));
            body.extend(self.u32(orig));
            body.extend(data);
            self.block(EPB, &body)
        }
    }

    const LE: B = B { be: false };
    const BE: B = B { be: true };

    /// Reads everything: packets as (ts, data, orig, linktype, iface), then
    /// the error if any.
    #[allow(clippy::type_complexity)]
    fn read_all(bytes: Vec<u8>) -> (Vec<(u64, Vec<u8>, u32, u32, u32)>, Option<Fault>) {
        let mut buf = StreamBuf::new(Box::new(Cursor::new(bytes)));
        let mut out = Vec::new();
        let mut st = match PcapngState::open(&mut buf) {
            Ok(s) => s,
            Err(f) => return (out, Some(f)),
        };
        loop {
            match st.next_packet(&mut buf) {
                Ok(Some(p)) => out.push((
                    p.ts_ns,
                    buf.storage()[p.data_start..p.data_start + p.caplen].to_vec(),
                    p.orig_len,
                    p.linktype.0,
                    p.interface,
                )),
                Ok(None) => return (out, None),
                Err(f) => return (out, Some(f)),
            }
        }
    }

    #[test]
    fn sections_of_both_byte_orders_reset_interfaces() {
        let mut f = LE.shb();
        f.extend(LE.idb(1, 0, &[]));
        f.extend(LE.idb(101, 0, &[LE.opt(crate::interface::OPT_IF_TSRESOL, &[9])]));
        f.extend(LE.epb(1, 5, b"ab", 2));
        f.extend(LE.epb(0, 7, b"abc", 99));
        f.extend(BE.shb());
        f.extend(BE.idb(113, 0, &[]));
        f.extend(BE.block(4, b"name resolution"));
        f.extend(BE.epb(0, 1_000_001, b"xyzw", 4));
        let (pkts, err) = read_all(f.clone());
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            pkts,
            vec![
                (5, b"ab".to_vec(), 2, 101, 1),
                (7_000, b"abc".to_vec(), 99, 1, 0),
                (1_000_001_000, b"xyzw".to_vec(), 4, 113, 0),
            ]
        );
        // Interface 1 is gone in the second section.
        f.extend(BE.epb(1, 0, b"", 0));
        let (pkts, err) = read_all(f);
        assert_eq!(pkts.len(), 3);
        assert!(matches!(
            err.unwrap().kind,
            ErrorKind::BadInterface {
                interface: 1,
                count: 1
            }
        ));
    }

    #[test]
    fn tsresol_and_tsoffset() {
        let mut f = LE.shb();
        // 2^-63 s per unit (libpcap pcapng-tsresol-bin-overflow.pcapng).
        f.extend(LE.idb(1, 0, &[LE.opt(crate::interface::OPT_IF_TSRESOL, &[0xbf])]));
        // 10^-19 s per unit, one hour offset.
        f.extend(LE.idb(
            1,
            0,
            &[
                LE.opt(crate::interface::OPT_IF_TSRESOL, &[19]),
                LE.opt(crate::interface::OPT_IF_TSOFFSET, &3600i64.to_le_bytes()),
            ],
        ));
        // Seconds, offset back before 1970 for a small value.
        f.extend(LE.idb(
            1,
            0,
            &[
                LE.opt(crate::interface::OPT_IF_TSRESOL, &[0]),
                LE.opt(crate::interface::OPT_IF_TSOFFSET, &(-10i64).to_le_bytes()),
            ],
        ));
        f.extend(LE.epb(0, 0x7fff_ffff_ffff_ffff, b"", 0));
        f.extend(LE.epb(1, 25_000_000_000, b"", 0));
        f.extend(LE.epb(2, 11, b"", 0));
        f.extend(LE.epb(2, 9, b"", 0));
        let (pkts, err) = read_all(f);
        let ts: Vec<u64> = pkts.iter().map(|p| p.0).collect();
        assert_eq!(ts, vec![999_999_999, 3_600_000_000_002, 1_000_000_000]);
        assert!(matches!(err.unwrap().kind, ErrorKind::TimestampOverflow));

        // Seconds resolution overflowing u64 ns.
        let mut f = LE.shb();
        f.extend(LE.idb(1, 0, &[LE.opt(crate::interface::OPT_IF_TSRESOL, &[0x80])]));
        f.extend(LE.epb(0, u64::MAX / 1000, b"", 0));
        let e = read_all(f).1.unwrap();
        assert!(e.is_record);
        assert!(matches!(e.kind, ErrorKind::TimestampOverflow));

        // libpcap pcapng-idb-tsresol-dec-high.pcapng: 10^-100.
        for bad in [100u8, 20, 0x80 | 64] {
            let mut f = LE.shb();
            f.extend(LE.idb(1, 0, &[LE.opt(crate::interface::OPT_IF_TSRESOL, &[bad])]));
            let e = read_all(f).1.unwrap();
            assert_eq!(e.offset, 28);
            assert!(matches!(e.kind, ErrorKind::BadTsResol(v) if v == bad));
        }
    }

    #[test]
    fn simple_and_obsolete_packet_blocks() {
        let mut f = LE.shb();
        f.extend(LE.idb(1, 4, &[]));
        f.extend(LE.epb(0, 42, b"e", 1));
        // SPB: orig 6, 6 bytes stored, snaplen 4 => 4 captured.
        let mut spb = LE.u32(6).to_vec();
        spb.extend(b"abcdef");
        f.extend(LE.block(SPB, &spb));
        // SPB: orig 2 but padded room is larger => 2 captured.
        let mut spb = LE.u32(2).to_vec();
        spb.extend(b"xy");
        f.extend(LE.block(SPB, &spb));
        // OPB: u16 interface, u16 drops.
        let mut opb = LE.u16(0).to_vec();
        opb.extend(LE.u16(3));
        opb.extend(LE.u32(0));
        opb.extend(LE.u32(77));
        opb.extend(LE.u32(1));
        opb.extend(LE.u32(1));
        opb.extend(b"o");
        f.extend(LE.block(OPB, &opb));
        let (pkts, err) = read_all(f);
        assert!(err.is_none());
        assert_eq!(
            pkts,
            vec![
                (42_000, b"e".to_vec(), 1, 1, 0),
                (42_000, b"abcd".to_vec(), 6, 1, 0),
                (42_000, b"xy".to_vec(), 2, 1, 0),
                (77_000, b"o".to_vec(), 1, 1, 0),
            ]
        );
    }

    #[test]
    fn framing_errors() {
        // libpcap pcapng-block-len-not-mult4.pcapng.
        let mut f = LE.shb();
        f.extend([
            1, 0, 0, 0, 21, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 21, 0, 0, 0,
        ]);
        let e = read_all(f).1.unwrap();
        assert_eq!(e.offset, 28);
        assert!(matches!(
            e.kind,
            ErrorKind::BadBlockLength {
                block_type: 1,
                length: 21,
                reason: "not a multiple of 4"
            }
        ));

        // Trailer differs.
        let mut f = LE.shb();
        let mut idb = LE.idb(1, 0, &[]);
        let n = idb.len();
        idb[n - 4] = 0x30;
        f.extend(idb);
        let e = read_all(f).1.unwrap();
        assert!(matches!(
            e.kind,
            ErrorKind::BlockTrailerMismatch {
                block_type: 1,
                header: 20,
                trailer: 0x30
            }
        ));

        // Option longer than the block (libpcap shb-option-too-long.pcapng).
        let mut f = LE.shb();
        let mut idb = LE.idb(1, 0, &[LE.opt(2, b"eth0")]);
        idb[18] = 9; // option length 9 > 4 left
        f.extend(idb);
        let e = read_all(f).1.unwrap();
        assert!(matches!(
            e.kind,
            ErrorKind::OptionOverrun {
                block_type: 1,
                code: 2,
                length: 9,
                room: 4
            }
        ));

        // Packet before any IDB (libpcap pcapng-packet-before-idb.pcapng).
        let mut f = LE.shb();
        f.extend(LE.epb(0, 0, b"AAAA", 4));
        let e = read_all(f).1.unwrap();
        assert!(e.is_record && e.offset == 28);
        assert!(matches!(
            e.kind,
            ErrorKind::PacketBeforeInterface { block_type: EPB }
        ));

        // Captured length larger than the block.
        let mut f = LE.shb();
        f.extend(LE.idb(1, 0, &[]));
        let mut epb = LE.epb(0, 0, b"abcd", 4);
        epb[20] = 9;
        f.extend(epb);
        let e = read_all(f).1.unwrap();
        assert!(matches!(
            e.kind,
            ErrorKind::PacketLengthOverrun { caplen: 9, room: 4 }
        ));

        // Packet block too short for its fixed part.
        let mut f = LE.shb();
        f.extend(LE.idb(1, 0, &[]));
        f.extend(LE.block(EPB, &[0; 12]));
        let e = read_all(f).1.unwrap();
        assert!(matches!(
            e.kind,
            ErrorKind::BadBlockLength { length: 24, .. }
        ));

        // Bad byte-order magic in a later section.
        let mut f = LE.shb();
        let mut shb2 = LE.shb();
        shb2[8] = 0;
        f.extend(shb2);
        let e = read_all(f).1.unwrap();
        assert!(matches!(e.kind, ErrorKind::BadByteOrderMagic(_)));
    }

    #[test]
    fn truncation() {
        // First SHB cut (libpcap pcapng-truncated-shb.pcapng: 16 of 28).
        let e = read_all(LE.shb()[..16].to_vec()).1.unwrap();
        assert!(matches!(
            e.kind,
            ErrorKind::TruncatedHeader { need: 28, got: 16 }
        ));

        let mut f = LE.shb();
        f.extend(LE.idb(1, 0, &[]));
        f.extend(LE.epb(0, 1, b"one", 3));
        let cut_at = f.len();
        f.extend(LE.epb(0, 2, &[9; 64], 64));
        let whole = f.len();
        let (pkts, err) = read_all(f[..whole - 10].to_vec());
        assert_eq!(pkts.len(), 1);
        let e = err.unwrap();
        assert!(e.is_record && e.kind.is_truncation());
        assert_eq!(e.offset, cut_at as u64);
        assert!(matches!(
            e.kind,
            ErrorKind::TruncatedBlock { need: 96, got: 86 }
        ));

        // Cut inside a skipped block, and inside a block header.
        let mut f = LE.shb();
        f.extend(&LE.block(0x0bad, &[1; 40])[..30]);
        let e = read_all(f).1.unwrap();
        assert!(!e.is_record);
        assert!(matches!(
            e.kind,
            ErrorKind::TruncatedBlock { need: 52, got: 30 }
        ));
        let mut f = LE.shb();
        f.extend([6, 0, 0]);
        let e = read_all(f).1.unwrap();
        assert!(matches!(
            e.kind,
            ErrorKind::TruncatedBlock { need: 12, got: 3 }
        ));
    }

    #[test]
    fn large_skipped_block_streams_through_a_small_buffer() {
        let mut f = LE.shb();
        f.extend(LE.idb(1, 0, &[]));
        f.extend(LE.block(0x4000_0bad, &vec![7; 3 * crate::buffer::STEADY_CAPACITY]));
        f.extend(LE.epb(0, 1, b"after", 5));
        let mut buf = StreamBuf::new(Box::new(Cursor::new(f)));
        let mut st = PcapngState::open(&mut buf).unwrap();
        let p = st.next_packet(&mut buf).unwrap().unwrap();
        assert_eq!(
            &buf.storage()[p.data_start..p.data_start + p.caplen],
            b"after"
        );
        assert!(buf.storage().len() <= crate::buffer::STEADY_CAPACITY);
    }
}
