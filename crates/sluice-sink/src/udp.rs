//! The UDP sink: datagrams through the kernel's UDP stack, so that a real
//! application receives the stream.
//!
//! It takes UDP payloads, not frames ([`Takes::Datagrams`]): the kernel adds
//! the headers and fragments datagrams larger than the path MTU. A datagram
//! sent with [`Sink::send_from`] leaves from its own source address and port
//! (one socket per source, bound with `IP_FREEBIND` so that an address not
//! yet configured still binds, and `SO_REUSEADDR` so that every TX thread
//! can send from it) to its own destination: what a summary reports per flow
//! is what went on the wire. [`Sink::send`] goes from a kernel-chosen port to
//! the `HOST:PORT` the sink was opened with. Datagrams are queued per socket
//! and handed over `sendmmsg` in batches of up to 64 (one syscall per batch)
//! on every `flush` or when a batch is full. Sockets are not connected, so
//! an ICMP port-unreachable from a receiver that is not (yet) listening never
//! fails a later send.

use crate::{Sink, SinkError, Takes};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd};

/// Datagrams per sendmmsg call.
const BATCH: usize = 64;
/// Largest UDP payload (IPv4: 65535 − 20 − 8).
pub const MAX_DATAGRAM: usize = 65_507;
/// UDP, IPv4 and Ethernet headers of a datagram on the wire.
const WIRE_HEADERS: u64 = 8 + 20 + 14;
/// Most source addresses one sink sends from (a socket each).
pub const MAX_SOURCES: usize = 1024;

pub struct UdpSink {
    dst: SocketAddr,
    /// Datagrams from a kernel-chosen port to `dst`.
    main: Queue,
    /// Datagrams from a given source, one socket each.
    by_source: HashMap<SocketAddrV4, Queue>,
    /// Datagrams the kernel refused (skipped and counted).
    rejected: u64,
}

/// Datagrams queued for one socket, each with its destination.
struct Queue {
    socket: UdpSocket,
    /// Payloads back to back, each one's end offset and destination.
    buf: Vec<u8>,
    ends: Vec<usize>,
    names: Vec<SockAddr>,
}

/// A sockaddr_in or sockaddr_in6 kept by value.
enum SockAddr {
    V4(libc::sockaddr_in),
    V6(libc::sockaddr_in6),
}

impl SockAddr {
    fn new(a: &SocketAddr) -> SockAddr {
        match a {
            SocketAddr::V4(a) => SockAddr::V4(libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            }),
            SocketAddr::V6(a) => SockAddr::V6(libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            }),
        }
    }

    fn ptr_len(&mut self) -> (*mut libc::c_void, libc::socklen_t) {
        match self {
            SockAddr::V4(a) => (
                (a as *mut libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ),
            SockAddr::V6(a) => (
                (a as *mut libc::sockaddr_in6).cast(),
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            ),
        }
    }
}

impl UdpSink {
    /// `target` is `HOST:PORT`; the host may be a name or an address.
    pub fn open(target: &str) -> Result<Self, SinkError> {
        let dst = target
            .to_socket_addrs()
            .map_err(|e| SinkError::Config(format!("udp:{target}: cannot resolve: {e}")))?
            .next()
            .ok_or_else(|| SinkError::Config(format!("udp:{target}: no address")))?;
        let bind: SocketAddr = if dst.is_ipv4() {
            "0.0.0.0:0".parse().expect("literal address")
        } else {
            "[::]:0".parse().expect("literal address")
        };
        let socket = UdpSocket::bind(bind)
            .map_err(|e| SinkError::os(format!("udp:{target}: cannot open a socket"), e))?;
        deepen_send_buffer(&socket);
        Ok(UdpSink {
            dst,
            main: Queue::new(socket),
            by_source: HashMap::new(),
            rejected: 0,
        })
    }

    /// The queue of source `from`, its socket bound on first use.
    fn source(&mut self, from: SocketAddrV4) -> Result<&mut Queue, SinkError> {
        if !self.by_source.contains_key(&from) {
            if self.by_source.len() >= MAX_SOURCES {
                return Err(SinkError::Config(format!(
                    "udp: cannot send from {from}: more than {MAX_SOURCES} source addresses \
                     (one socket each); give fewer flows their own source, or use afpacket"
                )));
            }
            let socket = bind_source(from)?;
            self.by_source.insert(from, Queue::new(socket));
        }
        Ok(self.by_source.get_mut(&from).expect("inserted above"))
    }
}

/// A UDP socket bound to `from` for sending: `SO_REUSEADDR` (every TX
/// thread sends from the same source), `IP_FREEBIND` (the address need not
/// be configured yet), a deep send buffer.
fn bind_source(from: SocketAddrV4) -> Result<UdpSocket, SinkError> {
    let fail = |what: &str| {
        SinkError::os(
            format!("udp: cannot send from {from} ({what})"),
            std::io::Error::last_os_error(),
        )
    };
    // SAFETY: plain socket(2); the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(fail("socket"));
    }
    // SAFETY: `fd` is a fresh, valid descriptor that nothing else owns.
    let socket = unsafe { UdpSocket::from_raw_fd(fd) };
    let one: libc::c_int = 1;
    for (level, opt) in [
        (libc::SOL_SOCKET, libc::SO_REUSEADDR),
        (libc::IPPROTO_IP, libc::IP_FREEBIND),
    ] {
        if crate::sockopt::setsockopt(&socket, level, opt, &one).is_err() {
            return Err(fail("setsockopt"));
        }
    }
    deepen_send_buffer(&socket);
    let mut name = SockAddr::new(&SocketAddr::V4(from));
    let (ptr, len) = name.ptr_len();
    // SAFETY: `ptr`/`len` describe `name`, a live sockaddr_in.
    let rc = unsafe { libc::bind(socket.as_raw_fd(), ptr.cast(), len) };
    if rc != 0 {
        return Err(fail("bind"));
    }
    Ok(socket)
}

/// Whether this host can send from `from` (0.0.0.0: the kernel's choice)
/// to `to`: the route lookup `connect(2)` makes, before any datagram is
/// queued. An address not configured here (IP_FREEBIND binds it, but the
/// kernel refuses each datagram from it) or a destination without a route
/// fails here, named, instead of as datagrams refused one by one.
pub fn check_route(from: Ipv4Addr, to: SocketAddrV4) -> Result<(), SinkError> {
    let socket = if from.is_unspecified() {
        UdpSocket::bind("0.0.0.0:0").map_err(|e| SinkError::os("udp: cannot open a socket", e))?
    } else {
        bind_source(SocketAddrV4::new(from, 0))?
    };
    socket.connect(to).map_err(|e| {
        let from = if from.is_unspecified() {
            "this host".to_string()
        } else {
            from.to_string()
        };
        let why = match e.raw_os_error() {
            Some(libc::EINVAL | libc::ENETUNREACH) if from != "this host" => {
                " (is the source address configured on this host?)"
            }
            _ => "",
        };
        SinkError::os(format!("udp: no route from {from} to {to}{why}"), e)
    })
}

/// A deep send buffer absorbs bursts; failure to enlarge it is harmless.
fn deepen_send_buffer(socket: &UdpSocket) {
    let size: libc::c_int = 4 << 20;
    let _ = crate::sockopt::setsockopt(socket, libc::SOL_SOCKET, libc::SO_SNDBUF, &size);
}

impl Queue {
    fn new(socket: UdpSocket) -> Queue {
        Queue {
            socket,
            buf: Vec::with_capacity(BATCH * 2048),
            ends: Vec::with_capacity(BATCH),
            names: Vec::with_capacity(BATCH),
        }
    }

    /// Queues one datagram for `to`; true when the batch is full.
    fn push(&mut self, head: &[u8], body: &[u8], to: SockAddr) -> bool {
        self.buf.extend_from_slice(head);
        self.buf.extend_from_slice(body);
        self.ends.push(self.buf.len());
        self.names.push(to);
        self.ends.len() == BATCH
    }

    /// Sends what is queued; returns the datagrams the kernel refused.
    fn send(&mut self, what: &dyn Fn() -> String) -> Result<u64, SinkError> {
        let n = self.ends.len();
        if n == 0 {
            return Ok(0);
        }
        let base = self.buf.as_mut_ptr();
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; BATCH];
        let mut start = 0;
        for (i, &end) in self.ends.iter().enumerate() {
            // SAFETY: start ≤ end ≤ buf.len(), so the pointer stays inside buf.
            iov[i].iov_base = unsafe { base.add(start) }.cast();
            iov[i].iov_len = end - start;
            start = end;
        }
        // SAFETY: mmsghdr is plain data; all-zero is a valid value.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for ((m, v), name) in msgs
            .iter_mut()
            .zip(iov.iter_mut())
            .zip(self.names.iter_mut())
        {
            let (ptr, len) = name.ptr_len();
            m.msg_hdr.msg_name = ptr;
            m.msg_hdr.msg_namelen = len;
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
        }
        let mut done = 0;
        // SAFETY: the iovecs point into self.buf and the names into
        // self.names, both alive and unmoved during the call.
        let result = unsafe {
            crate::mmsg::sendmmsg_all(self.socket.as_raw_fd(), &mut msgs[..n], what, &mut done)
        };
        if result.is_err() && done > 0 {
            // The kernel took the first `done`: only the rest stay queued
            // (and unsent, in the counts).
            let cut = self.ends[done - 1];
            self.buf.drain(..cut);
            self.ends.drain(..done);
            self.ends.iter_mut().for_each(|e| *e -= cut);
            self.names.drain(..done);
            return result;
        }
        let refused = result?;
        self.buf.clear();
        self.ends.clear();
        self.names.clear();
        Ok(refused)
    }
}

impl Sink for UdpSink {
    /// `payload` is a UDP payload here (see [`Takes::Datagrams`]).
    fn send(&mut self, payload: &[u8], _stamp_ns: u64) -> Result<(), SinkError> {
        self.send_parts(payload, &[], _stamp_ns)
    }

    fn send_parts(&mut self, head: &[u8], body: &[u8], _stamp_ns: u64) -> Result<(), SinkError> {
        check_len(head.len() + body.len())?;
        let dst = self.dst;
        if self.main.push(head, body, SockAddr::new(&dst)) {
            self.rejected += self.main.send(&|| format!("to {dst}"))?;
        }
        Ok(())
    }

    fn send_from(
        &mut self,
        from: SocketAddrV4,
        to: SocketAddrV4,
        payload: &[u8],
        _stamp_ns: u64,
    ) -> Result<(), SinkError> {
        check_len(payload.len())?;
        let q = self.source(from)?;
        if q.push(payload, &[], SockAddr::new(&SocketAddr::V4(to))) {
            let refused = q.send(&|| format!("from {from}"))?;
            self.rejected += refused;
        }
        Ok(())
    }

    fn rejected(&self) -> u64 {
        self.rejected
    }

    /// Datagrams queued for sendmmsg: sent only once the kernel took them.
    /// Bytes as the engine counts a datagram: its payload and the UDP,
    /// IPv4 and Ethernet headers it gets on the wire.
    fn unsent(&self) -> (u64, u64) {
        std::iter::once(&self.main)
            .chain(self.by_source.values())
            .fold((0, 0), |(n, b), q| {
                let k = q.ends.len() as u64;
                (n + k, b + q.buf.len() as u64 + k * WIRE_HEADERS)
            })
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        let dst = self.dst;
        self.rejected += self.main.send(&|| format!("to {dst}"))?;
        for (from, q) in self.by_source.iter_mut() {
            self.rejected += q.send(&|| format!("from {from}"))?;
        }
        Ok(())
    }

    fn takes(&self) -> Takes {
        Takes::Datagrams
    }

    fn describe(&self) -> String {
        format!("udp:{} (kernel UDP, sendmmsg)", self.dst)
    }
}

/// A UDP payload the kernel can carry.
fn check_len(len: usize) -> Result<(), SinkError> {
    if len > MAX_DATAGRAM {
        return Err(SinkError::Oversize {
            len,
            limit: MAX_DATAGRAM,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn datagrams_arrive_intact_and_in_order() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut sink = UdpSink::open(&rx.local_addr().unwrap().to_string()).unwrap();
        assert_eq!(sink.takes(), Takes::Datagrams);
        rx.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        // Receive while sending: the default receive buffer holds fewer
        // datagrams than we send. Each batch waits until the receiver has
        // read the one before (a handshake, not a sleep: a loaded machine
        // may keep the receiver off its CPU for any time).
        let (read_tx, read_rx) = std::sync::mpsc::channel::<usize>();
        let receiver = std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            (0..150usize)
                .map(|i| {
                    let n = rx.recv(&mut buf).unwrap();
                    let _ = read_tx.send(i + 1);
                    buf[..n].to_vec()
                })
                .collect::<Vec<_>>()
        });
        let mut read = 0;
        for i in 0..150u32 {
            let body = vec![i as u8; (i as usize * 13) % 1400 + 1];
            sink.send_parts(&i.to_be_bytes(), &body, 0).unwrap();
            if i % 16 == 15 {
                sink.flush().unwrap();
                while read < i as usize + 1 {
                    read = read_rx.recv_timeout(Duration::from_secs(60)).unwrap();
                }
            }
        }
        sink.finish().unwrap();
        for (i, d) in receiver.join().unwrap().into_iter().enumerate() {
            assert_eq!(&d[..4], &(i as u32).to_be_bytes());
            assert_eq!(d.len(), 4 + (i * 13) % 1400 + 1);
            assert!(d[4..].iter().all(|&b| b == i as u8));
        }
    }

    #[test]
    fn oversize_is_per_packet_and_bad_targets_are_config_errors() {
        let mut sink = UdpSink::open("127.0.0.1:9").unwrap();
        let e = sink.send(&vec![0; MAX_DATAGRAM + 1], 0).unwrap_err();
        assert!(e.is_per_packet());
        assert!(UdpSink::open("no-such-host.invalid:1").is_err());
        assert!(UdpSink::open("127.0.0.1").is_err());
    }

    #[test]
    fn a_datagram_leaves_from_its_own_source_port() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let to = match rx.local_addr().unwrap() {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(_) => unreachable!("bound to IPv4"),
        };
        // A free port to send from.
        let port = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let from = SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, port);
        let mut sink = UdpSink::open("127.0.0.1:9").unwrap();
        sink.send_from(from, to, b"hello", 0).unwrap();
        sink.flush().unwrap();
        let mut buf = [0u8; 16];
        let (n, src) = rx.recv_from(&mut buf).unwrap();
        assert_eq!((&buf[..n], src), (&b"hello"[..], SocketAddr::V4(from)));
    }
}
