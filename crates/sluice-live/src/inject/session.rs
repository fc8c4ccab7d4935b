//! One client of `sluice inject`: its socket, the bytes read and not yet
//! decoded, the bytes to write, and where its session stands.

use super::listen::Stream;
use super::proto::{self, Hello, ProtoError, ACK_LEN};
use std::io::{self, Read, Write};

/// Bytes read from one client per turn (others get theirs).
const READ_CHUNK: usize = 256 * 1024;
/// Answers waiting to be written past which the client is not read: it
/// must read its acknowledgements to send more.
pub const WRITE_BACKLOG: usize = 4 << 20;
/// Answers waiting past which a returned frame is dropped for this client
/// (and counted): a client that never reads cannot grow its backlog.
pub const RETURN_BACKLOG: usize = 16 << 20;

pub struct Session {
    pub id: u64,
    pub name: String,
    pub stream: Stream,
    rbuf: Vec<u8>,
    /// Bytes of `rbuf` already decoded.
    rpos: usize,
    /// Stream offset of `rbuf[0]`.
    roff: u64,
    wbuf: Vec<u8>,
    wpos: usize,
    pub hello: Option<Hello>,
    /// Run offset (ns) of the session's start.
    pub t0: u64,
    pub macs: ([u8; 6], [u8; 6]),
    /// Descriptions accepted and not yet acknowledged.
    pub outstanding: u64,
    pub accepted: u64,
    /// BYE received: the session ends once everything is acknowledged.
    pub bye: bool,
    /// The peer closed its side.
    pub eof: bool,
    /// The last message (DONE or ERROR) is queued: close once written.
    pub closing: bool,
    /// Acknowledgement entries of the ACKS message being gathered.
    acks: Vec<u8>,
    /// Run offset (ns) of the connection (a HELLO is due within seconds).
    pub opened: u64,
    /// It went away without BYE: what it still had waiting was dropped.
    pub departed: bool,
    /// Payloads it stored (PAYLOAD) for its descriptions to name.
    pub payloads: super::payloads::Payloads,
}

impl Session {
    pub fn new(id: u64, name: String, stream: Stream, opened: u64) -> Self {
        Session {
            id,
            name,
            stream,
            rbuf: Vec::new(),
            rpos: 0,
            roff: 0,
            wbuf: Vec::new(),
            wpos: 0,
            hello: None,
            t0: 0,
            macs: ([0; 6], [0; 6]),
            outstanding: 0,
            accepted: 0,
            bye: false,
            eof: false,
            closing: false,
            acks: Vec::new(),
            opened,
            departed: false,
            payloads: Default::default(),
        }
    }

    /// Bytes of answers queued and not yet written.
    pub fn backlog(&self) -> usize {
        self.wbuf.len() - self.wpos
    }

    /// Whether to read more from the client now.
    pub fn wants_read(&self, window: u64) -> bool {
        !self.eof
            && !self.closing
            && !self.bye
            && self.outstanding < window
            && self.backlog() < WRITE_BACKLOG
    }

    /// Reads what the client has sent (up to a chunk); false at its end.
    pub fn read(&mut self) -> io::Result<()> {
        if self.rpos > 0 && self.rpos * 2 >= self.rbuf.len() {
            self.rbuf.drain(..self.rpos);
            self.roff += self.rpos as u64;
            self.rpos = 0;
        }
        let have = self.rbuf.len();
        self.rbuf.resize(have + READ_CHUNK, 0);
        let r = self.stream.read(&mut self.rbuf[have..]);
        let n = match r {
            Ok(0) => {
                self.eof = true;
                0
            }
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                0
            }
            Err(e) => {
                self.rbuf.truncate(have);
                return Err(e);
            }
        };
        self.rbuf.truncate(have + n);
        Ok(())
    }

    /// The next complete message; it counts as consumed.
    pub fn next_message(&mut self) -> Result<Option<proto::Framed<'_>>, ProtoError> {
        let at = self.roff + self.rpos as u64;
        match proto::split(&self.rbuf[self.rpos..], at)? {
            None => {
                if self.eof && self.rpos < self.rbuf.len() {
                    return Err(ProtoError {
                        offset: at,
                        field: "message",
                        reason: format!(
                            "the stream ends inside a message ({} bytes of it came)",
                            self.rbuf.len() - self.rpos
                        ),
                    });
                }
                Ok(None)
            }
            Some(m) => {
                let (start, len) = (self.rpos, m.len);
                self.rpos += len;
                proto::split(&self.rbuf[start..start + len], at)
            }
        }
    }

    /// Queues one acknowledgement.
    pub fn ack(&mut self, seq: u64, departure: u64, status: proto::Status) {
        self.outstanding = self.outstanding.saturating_sub(1);
        if !self.closing {
            proto::ack(&mut self.acks, seq, departure, status);
        }
    }

    /// Ends the connection without another word: nothing more is read,
    /// queued or written.
    pub fn abandon(&mut self) {
        self.closing = true;
        self.eof = true;
        self.discard_output();
    }

    /// The client cannot be written to any more: nothing is queued.
    fn discard_output(&mut self) {
        self.wbuf.clear();
        self.wpos = 0;
        self.acks.clear();
    }

    /// Turns the gathered acknowledgements into one ACKS message.
    pub fn seal_acks(&mut self) {
        if self.acks.is_empty() {
            return;
        }
        // One message holds at most MAX_MESSAGE bytes.
        let per = (proto::MAX_MESSAGE - 5) / ACK_LEN;
        for chunk in self.acks.chunks(per * ACK_LEN) {
            let at = proto::begin(&mut self.wbuf, proto::ACKS);
            self.wbuf
                .extend_from_slice(&((chunk.len() / ACK_LEN) as u32).to_le_bytes());
            self.wbuf.extend_from_slice(chunk);
            proto::end(&mut self.wbuf, at);
        }
        self.acks.clear();
    }

    /// The buffer answers are appended to.
    pub fn out(&mut self) -> &mut Vec<u8> {
        &mut self.wbuf
    }

    pub fn wants_write(&self) -> bool {
        self.wpos < self.wbuf.len()
    }

    /// Writes what it can of the queued answers.
    pub fn write(&mut self) -> io::Result<()> {
        while self.wpos < self.wbuf.len() {
            match self.stream.write(&self.wbuf[self.wpos..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
        } else if self.wpos > (1 << 20) {
            self.wbuf.drain(..self.wpos);
            self.wpos = 0;
        }
        Ok(())
    }

    /// True when the session is over and everything was written.
    pub fn finished(&self) -> bool {
        self.closing && !self.wants_write()
    }
}
