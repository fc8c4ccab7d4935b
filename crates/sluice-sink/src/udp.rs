//! The UDP sink: datagrams through the kernel's UDP stack to `HOST:PORT`,
//! so that a real application receives the stream.
//!
//! It takes UDP payloads, not frames ([`Takes::Datagrams`]): the kernel adds
//! the headers, picks the source address and fragments datagrams larger than
//! the path MTU. Datagrams are queued and handed over `sendmmsg` in batches
//! of up to 64 (one syscall per batch) on every `flush` or when the batch is
//! full. The socket is not connected, so an ICMP port-unreachable from a
//! receiver that is not (yet) listening never fails a later send.

use crate::{Sink, SinkError, Takes};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;

/// Datagrams per sendmmsg call.
const BATCH: usize = 64;
/// Largest UDP payload (IPv4: 65535 − 20 − 8).
pub const MAX_DATAGRAM: usize = 65_507;

pub struct UdpSink {
    socket: UdpSocket,
    dst: SocketAddr,
    /// The destination as sendmmsg wants it.
    name: SockAddr,
    /// Queued payloads back to back, and each one's end offset.
    buf: Vec<u8>,
    ends: Vec<usize>,
    /// Datagrams the kernel refused (skipped and counted).
    rejected: u64,
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
        // A deep send buffer absorbs bursts; failure to enlarge it is harmless.
        let size: libc::c_int = 4 << 20;
        // SAFETY: setsockopt reads exactly size_of::<c_int>() bytes from a
        // live local; the fd is open for the duration of the call.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        Ok(UdpSink {
            socket,
            name: SockAddr::new(&dst),
            dst,
            buf: Vec::with_capacity(BATCH * 2048),
            ends: Vec::with_capacity(BATCH),
            rejected: 0,
        })
    }

    fn send_batch(&mut self) -> Result<(), SinkError> {
        let n = self.ends.len();
        if n == 0 {
            return Ok(());
        }
        let (name, name_len) = self.name.ptr_len();
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
        for (m, v) in msgs.iter_mut().zip(iov.iter_mut()).take(n) {
            m.msg_hdr.msg_name = name;
            m.msg_hdr.msg_namelen = name_len;
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
        }
        let dst = self.dst;
        // SAFETY: the iovecs point into self.buf and the names into
        // self.name, both alive and unmoved during the call.
        self.rejected += unsafe {
            crate::mmsg::sendmmsg_all(self.socket.as_raw_fd(), &mut msgs[..n], &|| {
                format!("to {dst}")
            })?
        };
        self.buf.clear();
        self.ends.clear();
        Ok(())
    }
}

impl Sink for UdpSink {
    /// `frame` is a UDP payload here (see [`Takes::Datagrams`]).
    fn send(&mut self, payload: &[u8], _stamp_ns: u64) -> Result<(), SinkError> {
        self.send_parts(payload, &[], _stamp_ns)
    }

    fn send_parts(&mut self, head: &[u8], body: &[u8], _stamp_ns: u64) -> Result<(), SinkError> {
        let len = head.len() + body.len();
        if len > MAX_DATAGRAM {
            return Err(SinkError::Oversize {
                len,
                limit: MAX_DATAGRAM,
            });
        }
        self.buf.extend_from_slice(head);
        self.buf.extend_from_slice(body);
        self.ends.push(self.buf.len());
        if self.ends.len() == BATCH {
            self.send_batch()?;
        }
        Ok(())
    }

    fn rejected(&self) -> u64 {
        self.rejected
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.send_batch()
    }

    fn takes(&self) -> Takes {
        Takes::Datagrams
    }

    fn describe(&self) -> String {
        format!("udp:{} (kernel UDP, sendmmsg)", self.dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn datagrams_arrive_intact_and_in_order() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut sink = UdpSink::open(&rx.local_addr().unwrap().to_string()).unwrap();
        assert_eq!(sink.takes(), Takes::Datagrams);
        // Receive while sending: the default receive buffer holds fewer
        // datagrams than we send.
        let receiver = std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            (0..150u32)
                .map(|_| {
                    let n = rx.recv(&mut buf).unwrap();
                    buf[..n].to_vec()
                })
                .collect::<Vec<_>>()
        });
        for i in 0..150u32 {
            let body = vec![i as u8; (i as usize * 13) % 1400 + 1];
            sink.send_parts(&i.to_be_bytes(), &body, 0).unwrap();
            if i % 16 == 15 {
                sink.flush().unwrap();
                std::thread::sleep(Duration::from_millis(1));
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
}
