//! The injection protocol (`docs/FORMATS.md`, "Injection protocol"): its
//! messages, a decoder that never trusts its input, and the encoders of
//! sluice's answers. Pure: no sockets, no clock.
//!
//! Every message is `length:u32le type:u8 body`, `length` counting the
//! type byte and the body. All integers are little-endian.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const MAGIC: &[u8; 4] = b"SLIJ";
pub const VERSION: u16 = 1;
/// Longest message either side sends (type byte and body).
pub const MAX_MESSAGE: usize = 1 << 20;

/// Client → sluice.
pub const HELLO: u8 = 0x01;
pub const DESCS: u8 = 0x02;
pub const BYE: u8 = 0x03;
pub const PAYLOAD: u8 = 0x04;
/// Sluice → client.
pub const WELCOME: u8 = 0x81;
pub const ACKS: u8 = 0x82;
pub const FRAME: u8 = 0x83;
pub const ERROR: u8 = 0x84;
pub const DONE: u8 = 0x85;

/// Bytes of HELLO's body.
pub const HELLO_LEN: usize = 20;
/// Bytes of the secret a HELLO may carry after its body (a TCP server
/// started with a token file requires it).
pub const TOKEN_LEN: usize = 32;
/// Bytes of a description before its headers and prefix.
pub const DESC_HEAD: usize = 24;
/// Bytes of a `fields` description's header block.
pub const FIELDS_LEN: usize = 52;
/// Bytes of one acknowledgement.
pub const ACK_LEN: usize = 24;
/// A description's flag: its prefix is the u32 id of a payload the
/// session stored (PAYLOAD), attached behind the headers.
pub const STORED_PAYLOAD: u8 = 1;

/// What a description's and an acknowledgement's times count from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeBase {
    /// ns since the session start that WELCOME gives.
    Session,
    /// CLOCK_MONOTONIC ns.
    Monotonic,
    /// CLOCK_REALTIME ns.
    Realtime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    pub base: TimeBase,
    /// Hand the frames arriving on the return interface to this client.
    pub want_frames: bool,
    /// MACs of frames built from fields (None: sluice's defaults).
    pub src_mac: Option<[u8; 6]>,
    pub dst_mac: Option<[u8; 6]>,
    /// The secret the client sent, if any.
    pub token: Option<[u8; TOKEN_LEN]>,
}

/// The headers of a frame built from fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    /// 6 (TCP) or 17 (UDP).
    pub proto: u8,
    pub tcp_flags: u8,
    pub ttl: u8,
    pub tos: u8,
    pub window: u16,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
}

/// Where a description's headers come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Head<'a> {
    /// Ethernet, IP and L4 headers as they go on the wire; sluice sets the
    /// lengths and checksums.
    Raw(&'a [u8]),
    Fields(Fields),
}

/// One packet to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc<'a> {
    /// The client's number for it, echoed in its acknowledgement.
    pub seq: u64,
    /// Departure time in the session's time base.
    pub time: u64,
    /// Frame length (no FCS); payload bytes behind the prefix are zero.
    pub total_len: u16,
    pub head: Head<'a>,
    pub prefix: &'a [u8],
    /// A stored payload named instead of a prefix (its id): the session
    /// attaches its bytes (`Payloads::prefix`).
    pub payload: Option<u32>,
    /// Offset of the description in its DESCS body (for errors).
    pub pos: usize,
}

/// A decoded client message.
#[derive(Debug, PartialEq, Eq)]
pub enum Message<'a> {
    Hello(Hello),
    /// A validated DESCS body: [`descs`] walks it.
    Descs {
        count: u32,
        body: &'a [u8],
    },
    Bye,
    /// A payload to keep under `id` for this session's descriptions.
    Payload {
        id: u32,
        bytes: &'a [u8],
    },
}

/// What is wrong with a client's bytes, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("offset {offset}: {field}: {reason}")]
pub struct ProtoError {
    /// Byte offset in the client's stream of the offending field.
    pub offset: u64,
    pub field: &'static str,
    pub reason: String,
}

fn err(offset: u64, field: &'static str, reason: impl Into<String>) -> ProtoError {
    ProtoError {
        offset,
        field,
        reason: reason.into(),
    }
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}
fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}
fn mac_at(b: &[u8], i: usize) -> Option<[u8; 6]> {
    let m: [u8; 6] = b[i..i + 6].try_into().expect("6 bytes");
    (m != [0; 6]).then_some(m)
}

/// One message split off a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Framed<'a> {
    pub kind: u8,
    pub body: &'a [u8],
    /// Stream offset of the body.
    pub at: u64,
    /// Bytes the whole message takes.
    pub len: usize,
}

/// The first complete message of `buf` (which starts at stream offset
/// `at`); None until all of it has arrived.
pub fn split(buf: &[u8], at: u64) -> Result<Option<Framed<'_>>, ProtoError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32_at(buf, 0) as usize;
    if len == 0 {
        return Err(err(at, "length", "0: a message holds at least its type"));
    }
    if len > MAX_MESSAGE {
        return Err(err(
            at,
            "length",
            format!("{len} bytes is more than the {MAX_MESSAGE} a message may hold"),
        ));
    }
    if buf.len() < 4 + len {
        return Ok(None);
    }
    Ok(Some(Framed {
        kind: buf[4],
        body: &buf[5..4 + len],
        at: at + 5,
        len: 4 + len,
    }))
}

/// Decodes a message body of type `kind` starting at stream offset `at`
/// (the offset of the body). HELLO must come first and only once; the
/// caller knows which it is (`hello_seen`).
pub fn decode(kind: u8, body: &[u8], at: u64, hello_seen: bool) -> Result<Message<'_>, ProtoError> {
    let type_at = at.saturating_sub(1);
    match kind {
        HELLO if hello_seen => Err(err(type_at, "type", "a second HELLO")),
        HELLO => decode_hello(body, at).map(Message::Hello),
        _ if !hello_seen => Err(err(
            type_at,
            "type",
            format!("0x{kind:02x} before HELLO: a session starts with HELLO (0x01)"),
        )),
        DESCS => {
            if body.len() < 4 {
                return Err(err(at, "count", "truncated: DESCS starts with a u32 count"));
            }
            let count = u32_at(body, 0);
            let mut pos = 4;
            for _ in 0..count {
                pos = check_desc(body, pos, at)?;
            }
            if pos != body.len() {
                return Err(err(
                    at + pos as u64,
                    "count",
                    format!(
                        "{} bytes follow the {count} descriptions the message counts",
                        body.len() - pos
                    ),
                ));
            }
            Ok(Message::Descs { count, body })
        }
        BYE if body.is_empty() => Ok(Message::Bye),
        BYE => Err(err(at, "length", "BYE has no body")),
        PAYLOAD => {
            if body.len() < 4 {
                return Err(err(at, "id", "truncated: PAYLOAD starts with a u32 id"));
            }
            let bytes = &body[4..];
            if bytes.len() > usize::from(u16::MAX) {
                return Err(err(
                    at + 4,
                    "payload",
                    format!("{} bytes: a frame holds at most 65535", bytes.len()),
                ));
            }
            Ok(Message::Payload {
                id: u32_at(body, 0),
                bytes,
            })
        }
        k => Err(err(
            type_at,
            "type",
            format!("unknown message type 0x{k:02x}"),
        )),
    }
}

fn decode_hello(b: &[u8], at: u64) -> Result<Hello, ProtoError> {
    if b.len() != HELLO_LEN && b.len() != HELLO_LEN + TOKEN_LEN {
        return Err(err(
            at,
            "length",
            format!(
                "HELLO has {HELLO_LEN} bytes of body ({} with a token), not {}",
                HELLO_LEN + TOKEN_LEN,
                b.len()
            ),
        ));
    }
    if &b[0..4] != MAGIC {
        return Err(err(
            at,
            "magic",
            "not \"SLIJ\": not a sluice injection client",
        ));
    }
    let version = u16_at(b, 4);
    if version != VERSION {
        return Err(err(
            at + 4,
            "version",
            format!("{version} (this sluice speaks version {VERSION})"),
        ));
    }
    let base = match b[6] {
        0 => TimeBase::Session,
        1 => TimeBase::Monotonic,
        2 => TimeBase::Realtime,
        v => {
            return Err(err(
                at + 6,
                "time_base",
                format!("{v} (0 session, 1 CLOCK_MONOTONIC, 2 CLOCK_REALTIME)"),
            ))
        }
    };
    let flags = b[7];
    if flags & !1 != 0 {
        return Err(err(at + 7, "flags", format!("unknown bits 0x{flags:02x}")));
    }
    Ok(Hello {
        base,
        want_frames: flags & 1 != 0,
        src_mac: mac_at(b, 8),
        dst_mac: mac_at(b, 14),
        token: b
            .get(HELLO_LEN..HELLO_LEN + TOKEN_LEN)
            .map(|t| t.try_into().expect("TOKEN_LEN bytes")),
    })
}

/// Whether `got` is `want`, in time that does not depend on where they
/// differ (no byte-by-byte early exit an attacker could time).
pub fn token_matches(want: &[u8; TOKEN_LEN], got: Option<&[u8; TOKEN_LEN]>) -> bool {
    let Some(got) = got else {
        return false;
    };
    sluice_sys::secret::same(want, got)
}

/// Checks the description at `pos` of a DESCS body (at stream offset
/// `at`); returns where the next one starts.
fn check_desc(b: &[u8], pos: usize, at: u64) -> Result<usize, ProtoError> {
    let off = |i: usize| at + (pos + i) as u64;
    if b.len() < pos + DESC_HEAD {
        return Err(err(off(0), "description", "truncated header"));
    }
    let d = &b[pos..];
    let total = usize::from(u16_at(d, 16));
    let head_len = usize::from(u16_at(d, 18));
    let prefix_len = usize::from(u16_at(d, 20));
    let kind = d[22];
    if d[23] & !STORED_PAYLOAD != 0 {
        return Err(err(
            off(23),
            "flags",
            format!("unknown bits 0x{:02x}", d[23]),
        ));
    }
    if d[23] & STORED_PAYLOAD != 0 && prefix_len != 4 {
        return Err(err(
            off(20),
            "prefix_len",
            format!("{prefix_len}: a stored payload is named by its u32 id (4 bytes)"),
        ));
    }
    // A stored payload's length is checked against the session's store.
    let attached = if d[23] & STORED_PAYLOAD != 0 {
        0
    } else {
        prefix_len
    };
    let end = DESC_HEAD + head_len + prefix_len;
    if d.len() < end {
        return Err(err(
            off(18),
            "head_len",
            format!("{head_len} header and {prefix_len} prefix bytes run past the message's end"),
        ));
    }
    let built = match kind {
        0 => {
            if head_len < 14 {
                return Err(err(
                    off(18),
                    "head_len",
                    format!("{head_len}: raw headers start with a 14-byte Ethernet header"),
                ));
            }
            head_len
        }
        1 => {
            if head_len != FIELDS_LEN {
                return Err(err(
                    off(18),
                    "head_len",
                    format!("{head_len}: a fields block has {FIELDS_LEN} bytes"),
                ));
            }
            let f = fields(&d[DESC_HEAD..DESC_HEAD + FIELDS_LEN], off(DESC_HEAD))?;
            fields_header_len(&f)
        }
        k => {
            return Err(err(
                off(22),
                "kind",
                format!("{k} (0 raw headers, 1 fields)"),
            ))
        }
    };
    if total < built + attached {
        return Err(err(
            off(16),
            "total_len",
            format!("{total} is less than the {built} header and {attached} prefix bytes"),
        ));
    }
    Ok(pos + end)
}

/// Frame bytes of the headers built from `f`.
pub fn fields_header_len(f: &Fields) -> usize {
    let ip = if f.src.is_ipv4() { 20 } else { 40 };
    14 + ip + if f.proto == 6 { 20 } else { 8 }
}

fn fields(b: &[u8], at: u64) -> Result<Fields, ProtoError> {
    let version = b[0];
    let proto = b[1];
    if proto != 6 && proto != 17 {
        return Err(err(at + 1, "proto", format!("{proto} (6 TCP or 17 UDP)")));
    }
    let ip = |i: usize| -> IpAddr {
        if version == 4 {
            IpAddr::V4(Ipv4Addr::new(b[i], b[i + 1], b[i + 2], b[i + 3]))
        } else {
            let o: [u8; 16] = b[i..i + 16].try_into().expect("16 bytes");
            IpAddr::V6(Ipv6Addr::from(o))
        }
    };
    if version != 4 && version != 6 {
        return Err(err(at, "ip_version", format!("{version} (4 or 6)")));
    }
    Ok(Fields {
        proto,
        tcp_flags: b[2],
        ttl: b[3],
        tos: b[4],
        window: u16_at(b, 6),
        src: ip(8),
        dst: ip(24),
        sport: u16_at(b, 40),
        dport: u16_at(b, 42),
        seq: u32_at(b, 44),
        ack: u32_at(b, 48),
    })
}

/// The descriptions of a DESCS body that [`decode`] accepted.
pub fn descs(body: &[u8]) -> impl Iterator<Item = Desc<'_>> + '_ {
    let count = u32_at(body, 0);
    let mut pos = 4;
    (0..count).map(move |_| {
        let d = &body[pos..];
        let head_len = usize::from(u16_at(d, 18));
        let prefix_len = usize::from(u16_at(d, 20));
        let h = &d[DESC_HEAD..DESC_HEAD + head_len];
        let head = if d[22] == 0 {
            Head::Raw(h)
        } else {
            Head::Fields(fields(h, 0).expect("checked by decode"))
        };
        let at = pos;
        pos += DESC_HEAD + head_len + prefix_len;
        let prefix = &d[DESC_HEAD + head_len..DESC_HEAD + head_len + prefix_len];
        let stored = d[23] & STORED_PAYLOAD != 0;
        Desc {
            seq: u64_at(d, 0),
            time: u64_at(d, 8),
            total_len: u16_at(d, 16),
            head,
            prefix: if stored { &[] } else { prefix },
            payload: stored.then(|| u32_at(prefix, 0)),
            pos: at,
        }
    })
}

/// Starts a message of type `kind` in `out`; [`end`] fills in its length.
pub fn begin(out: &mut Vec<u8>, kind: u8) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, kind]);
    at
}

/// Ends the message [`begin`] started at `at`.
pub fn end(out: &mut [u8], at: usize) {
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// WELCOME: the session's start on both clocks and the MACs that frames
/// built from fields get.
pub fn welcome(out: &mut Vec<u8>, mono: u64, real: u64, src: [u8; 6], dst: [u8; 6]) {
    let at = begin(out, WELCOME);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&mono.to_le_bytes());
    out.extend_from_slice(&real.to_le_bytes());
    out.extend_from_slice(&(MAX_MESSAGE as u32).to_le_bytes());
    out.extend_from_slice(&src);
    out.extend_from_slice(&dst);
    end(out, at);
}

/// What became of a description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Sent = 0,
    /// Its time had passed when it arrived: sent at once.
    SentLate = 1,
    /// More descriptions were waiting than `--queue-limit`.
    DroppedQueueFull = 2,
    /// The link refused it (longer than the MTU, shorter than a frame).
    Refused = 3,
    /// Later than the drift window (`--drift`) when its turn came.
    DroppedLate = 4,
    /// The run stopped first.
    NotSent = 5,
    /// Sent, but later than the late threshold after its time: the
    /// description was on time, the engine was not (a stall).
    LeftLate = 6,
}

impl Status {
    /// The name docs/FORMATS.md gives it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Sent => "sent",
            Status::SentLate => "sent_late",
            Status::DroppedQueueFull => "dropped_queue_full",
            Status::Refused => "refused",
            Status::DroppedLate => "dropped_late",
            Status::NotSent => "not_sent",
            Status::LeftLate => "left_late",
        }
    }
}

/// Appends one acknowledgement to an ACKS body being built.
pub fn ack(out: &mut Vec<u8>, seq: u64, departure: u64, status: Status) {
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&departure.to_le_bytes());
    out.extend_from_slice(&[status as u8, 0, 0, 0, 0, 0, 0, 0]);
}

/// A frame received on the return interface.
pub fn frame(out: &mut Vec<u8>, arrival: u64, bytes: &[u8]) {
    let at = begin(out, FRAME);
    out.extend_from_slice(&arrival.to_le_bytes());
    out.extend_from_slice(bytes);
    end(out, at);
}

/// The error that ends a session.
pub fn error(out: &mut Vec<u8>, e: &ProtoError) {
    let at = begin(out, ERROR);
    out.extend_from_slice(&e.offset.to_le_bytes());
    out.extend_from_slice(e.to_string().as_bytes());
    end(out, at);
}

/// The session's last message: every description was acknowledged.
pub fn done(out: &mut Vec<u8>, descriptions: u64) {
    let at = begin(out, DONE);
    out.extend_from_slice(&descriptions.to_le_bytes());
    end(out, at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inject::build::walk_stream;
    use rand::{Rng, SeedableRng};

    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = ((body.len() + 1) as u32).to_le_bytes().to_vec();
        m.push(kind);
        m.extend_from_slice(body);
        m
    }

    fn hello_body() -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&[0, 1]);
        b.extend_from_slice(&[0; 12]);
        b
    }

    fn fields_desc(seq: u64, total: u16, prefix: &[u8]) -> Vec<u8> {
        let mut d = seq.to_le_bytes().to_vec();
        d.extend_from_slice(&(seq * 1000).to_le_bytes());
        d.extend_from_slice(&total.to_le_bytes());
        d.extend_from_slice(&(FIELDS_LEN as u16).to_le_bytes());
        d.extend_from_slice(&(prefix.len() as u16).to_le_bytes());
        d.extend_from_slice(&[1, 0]);
        let mut f = vec![4, 17, 0, 64, 0, 0, 0xff, 0xff];
        f.extend_from_slice(&[10, 0, 0, 1]);
        f.extend_from_slice(&[0; 12]);
        f.extend_from_slice(&[10, 0, 0, 2]);
        f.extend_from_slice(&[0; 12]);
        f.extend_from_slice(&[0x10, 0x27, 0x20, 0x4e, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(f.len(), FIELDS_LEN);
        d.extend_from_slice(&f);
        d.extend_from_slice(prefix);
        d
    }

    fn raw_desc(seq: u64, total: u16) -> Vec<u8> {
        let head = [0xaau8; 14];
        let mut d = seq.to_le_bytes().to_vec();
        d.extend_from_slice(&0u64.to_le_bytes());
        d.extend_from_slice(&total.to_le_bytes());
        d.extend_from_slice(&14u16.to_le_bytes());
        d.extend_from_slice(&0u16.to_le_bytes());
        d.extend_from_slice(&[0, 0]);
        d.extend_from_slice(&head);
        d
    }

    fn descs_msg(ds: &[Vec<u8>]) -> Vec<u8> {
        let mut b = (ds.len() as u32).to_le_bytes().to_vec();
        for d in ds {
            b.extend_from_slice(d);
        }
        msg(DESCS, &b)
    }

    fn stream() -> Vec<u8> {
        let mut s = msg(HELLO, &hello_body());
        s.extend(descs_msg(&[fields_desc(0, 100, b"ab"), raw_desc(1, 60)]));
        s.extend(descs_msg(&[fields_desc(2, 1514, b"")]));
        s.extend(msg(BYE, &[]));
        s
    }

    #[test]
    fn a_valid_stream_decodes_and_builds() {
        assert_eq!(walk_stream(&stream()), Ok(3));
        let s = stream();
        let m = split(&s, 0).unwrap().unwrap();
        assert_eq!((m.kind, m.at), (HELLO, 5));
        let Message::Hello(h) = decode(m.kind, m.body, m.at, false).unwrap() else {
            panic!()
        };
        assert_eq!(h.base, TimeBase::Session);
        assert!(h.want_frames);
        assert_eq!(h.src_mac, None);
        let m = split(&s[m.len..], m.len as u64).unwrap().unwrap();
        let Message::Descs { count, body } = decode(m.kind, m.body, m.at, true).unwrap() else {
            panic!()
        };
        assert_eq!(count, 2);
        let ds: Vec<_> = descs(body).collect();
        assert_eq!(ds[0].seq, 0);
        assert_eq!(ds[0].prefix, b"ab");
        assert!(matches!(ds[0].head, Head::Fields(f) if f.dport == 20000 && f.sport == 10000));
        assert!(matches!(ds[1].head, Head::Raw(h) if h == [0xaa; 14]));
    }

    #[test]
    fn errors_name_offset_and_field() {
        // Each case: the stream, the offset and field the error must name.
        let hello = msg(HELLO, &hello_body());
        let h = hello.len() as u64;
        let with = |tail: Vec<u8>| {
            let mut s = hello.clone();
            s.extend(tail);
            s
        };
        let mut short = fields_desc(0, 100, b"");
        short.truncate(20);
        let mut bad_kind = fields_desc(0, 100, b"");
        bad_kind[22] = 7;
        let mut bad_proto = fields_desc(0, 100, b"");
        bad_proto[DESC_HEAD + 1] = 1;
        let mut big = u32::MAX.to_le_bytes().to_vec();
        big.push(DESCS);
        let mut bad_magic = hello_body();
        bad_magic[0] = b'X';
        let cases: Vec<(Vec<u8>, u64, &str)> = vec![
            (msg(DESCS, &[0, 0, 0, 0]), 4, "type"),
            (msg(HELLO, &bad_magic), 5, "magic"),
            (with(msg(0x7f, &[])), h + 4, "type"),
            (with(msg(HELLO, &hello_body())), h + 4, "type"),
            (with(big), h, "length"),
            (with(vec![0, 0, 0, 0, 2]), h, "length"),
            (with(descs_msg(&[short])), h + 9, "description"),
            (with(descs_msg(&[bad_kind])), h + 9 + 22, "kind"),
            (with(descs_msg(&[bad_proto])), h + 9 + 25, "proto"),
            (
                with(descs_msg(&[fields_desc(0, 40, b"")])),
                h + 9 + 16,
                "total_len",
            ),
            (with(msg(BYE, &[1])), h + 5, "length"),
        ];
        for (i, (s, offset, field)) in cases.into_iter().enumerate() {
            let e = walk_stream(&s).unwrap_err();
            assert_eq!((e.offset, e.field), (offset, field), "case {i}: {e}");
            assert!(e
                .to_string()
                .starts_with(&format!("offset {offset}: {field}: ")));
        }
        // A count that promises more than the message holds.
        let mut m = descs_msg(&[raw_desc(0, 60)]);
        m[5] = 2;
        assert_eq!(walk_stream(&with(m)).unwrap_err().field, "description");
    }

    #[test]
    fn a_message_not_complete_yet_is_waited_for() {
        let s = stream();
        for cut in 0..5 {
            assert_eq!(split(&s[..cut], 0), Ok(None));
        }
        assert_eq!(split(&s[..s.len() - 1], 0).map(|o| o.is_some()), Ok(true));
    }

    #[test]
    fn mutated_streams_give_errors_never_panics() {
        let base = stream();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut ok = 0;
        for _ in 0..20_000 {
            let mut s = base.clone();
            for _ in 0..rng.random_range(1..6) {
                if s.is_empty() {
                    break;
                }
                let i = rng.random_range(0..s.len());
                match rng.random_range(0..3) {
                    0 => s[i] = rng.random(),
                    1 => s.truncate(i),
                    _ => s.insert(i, rng.random()),
                }
            }
            if walk_stream(&s).is_ok() {
                ok += 1;
            }
        }
        // Some mutations only touch payload bytes and stay valid.
        assert!(ok > 0);
    }

    /// Caliper §5's predefined payloads: a payload stored once and named
    /// by id builds the very frames its bytes sent as a prefix would; the
    /// store refuses, by offset and field, an id never stored, an id not
    /// 4 bytes long, a payload that does not fit the frame, and more
    /// than a session's bytes (storing an id again replaces it).
    #[test]
    fn stored_payloads_build_the_frames_their_bytes_would() {
        use crate::inject::build::build;
        use crate::inject::payloads::{Payloads, MAX_STORED_BYTES};
        let payload: Vec<u8> = (0..200u8).collect();
        let stored = |seq: u64, total: u16, id: u32| {
            let mut d = fields_desc(seq, total, &id.to_le_bytes());
            d[23] = STORED_PAYLOAD;
            d
        };
        let descs_body = |ds: &[Vec<u8>]| {
            let mut b = (ds.len() as u32).to_le_bytes().to_vec();
            ds.iter().for_each(|d| b.extend_from_slice(d));
            b
        };
        let mut store = Payloads::default();
        store.store(7, payload.clone(), 0).unwrap();
        let named = descs_body(&[stored(1, 300, 7), stored(2, 60, 9)]);
        assert!(decode(DESCS, &named, 0, true).is_ok());
        let e = store.check(&named, 1000).unwrap_err();
        // The second description's id: after the count, the first
        // description (24 + 52 + 4) and the second's head and fields.
        assert_eq!(
            (e.field, e.offset),
            ("payload_id", 1000 + 4 + 80 + 76),
            "{e}"
        );
        store.store(9, b"tiny".to_vec(), 0).unwrap();
        store.check(&named, 0).unwrap();
        let inline = descs_body(&[fields_desc(1, 300, &payload), fields_desc(2, 60, b"tiny")]);
        let frames = |body: &[u8]| -> Vec<Vec<u8>> {
            descs(body)
                .map(|d| {
                    let d = Desc {
                        prefix: store.prefix(&d),
                        ..d
                    };
                    let mut f = Vec::new();
                    build(&mut f, &d, ([2; 6], [4; 6]));
                    f
                })
                .collect()
        };
        let (a, b) = (frames(&named), frames(&inline));
        assert_eq!(a, b);
        assert_eq!(&a[0][42..242], &payload[..]);
        // Whole streams, as a session reads them.
        let mut s = msg(HELLO, &hello_body());
        let mut p = 7u32.to_le_bytes().to_vec();
        p.extend_from_slice(&payload);
        s.extend(msg(PAYLOAD, &p));
        s.extend(msg(
            DESCS,
            &descs_body(&[stored(1, 300, 7), stored(2, 400, 7)]),
        ));
        assert_eq!(walk_stream(&s), Ok(2));
        let too_short = [s.clone(), msg(DESCS, &descs_body(&[stored(3, 100, 7)]))].concat();
        let e = walk_stream(&too_short).unwrap_err();
        assert_eq!(
            (e.field, e.offset),
            ("total_len", s.len() as u64 + 5 + 4 + 16),
            "{e}"
        );
        let mut three = stored(4, 300, 7);
        three[20] = 3;
        three.truncate(three.len() - 1);
        let e = walk_stream(&[s.clone(), msg(DESCS, &descs_body(&[three]))].concat()).unwrap_err();
        assert_eq!(
            (e.field, e.offset),
            ("prefix_len", s.len() as u64 + 5 + 4 + 20),
            "{e}"
        );
        let e = walk_stream(&[s.clone(), msg(PAYLOAD, &[1, 0])].concat()).unwrap_err();
        assert_eq!(e.field, "id", "{e}");
        let e = walk_stream(&[msg(PAYLOAD, &p), s.clone()].concat()).unwrap_err();
        assert_eq!((e.field, e.offset), ("type", 4), "{e}");
        // Bounded: the same id again and again replaces, new ids add up.
        let big = vec![0xa5u8; usize::from(u16::MAX)];
        let mut store = Payloads::default();
        for _ in 0..100 {
            store.store(1, big.clone(), 0).unwrap();
        }
        let fit = MAX_STORED_BYTES / big.len();
        for id in 2..=fit as u32 {
            store.store(id, big.clone(), 0).unwrap();
        }
        let e = store.store(0, big.clone(), 50).unwrap_err();
        assert_eq!((e.field, e.offset), ("payload", 54), "{e}");
        let over = vec![0u8; usize::from(u16::MAX) + 5];
        let e = decode(PAYLOAD, &over, 0, true).unwrap_err();
        assert_eq!(e.field, "payload", "{e}");
    }
}
