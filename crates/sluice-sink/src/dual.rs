//! Two-port output (tcpreplay's `--intf1`/`--intf2`): one TX thread sends
//! a single time-ordered stream, each frame by the port its source chose,
//! so the order between the two sides of a conversation is the trace's.

use crate::{Sink, SinkError, Takes};

/// Port 0 is the first sink (`--to`, client to server), any other port
/// the second (`--to2`, server to client).
pub struct DualSink {
    first: Box<dyn Sink>,
    second: Box<dyn Sink>,
}

impl DualSink {
    pub fn new(first: Box<dyn Sink>, second: Box<dyn Sink>) -> Self {
        DualSink { first, second }
    }
}

impl Sink for DualSink {
    fn send(&mut self, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.first.send(frame, stamp_ns)
    }

    fn send_on(&mut self, port: u8, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        if port == 0 {
            self.first.send(frame, stamp_ns)
        } else {
            self.second.send(frame, stamp_ns)
        }
    }

    fn takes(&self) -> Takes {
        self.first.takes()
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        let a = self.first.flush();
        let b = self.second.flush();
        a.and(b)
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        let a = self.first.finish();
        let b = self.second.finish();
        a.and(b)
    }

    fn finish_incomplete(&mut self) -> Result<(), SinkError> {
        let a = self.first.finish_incomplete();
        let b = self.second.finish_incomplete();
        a.and(b)
    }

    fn settle(&mut self, complete: bool) -> Result<(), SinkError> {
        let a = self.first.settle(complete);
        let b = self.second.settle(complete);
        a.and(b)
    }

    fn describe(&self) -> String {
        format!("{} + {}", self.first.describe(), self.second.describe())
    }

    fn tx_path(&self) -> Option<&'static str> {
        self.first.tx_path().or(self.second.tx_path())
    }

    fn rejected(&self) -> u64 {
        self.first.rejected() + self.second.rejected()
    }

    fn unsent(&self) -> (u64, u64) {
        let (a, b) = (self.first.unsent(), self.second.unsent());
        (a.0 + b.0, a.1 + b.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Count(u64, u64);
    impl Sink for Count {
        fn send(&mut self, f: &[u8], _: u64) -> Result<(), SinkError> {
            self.0 += f.len() as u64;
            Ok(())
        }
        fn flush(&mut self) -> Result<(), SinkError> {
            self.1 += 1;
            Ok(())
        }
        fn describe(&self) -> String {
            format!("{}", self.0)
        }
    }

    #[test]
    fn frames_go_by_their_port_and_both_sides_flush() {
        let mut d = DualSink::new(Box::<Count>::default(), Box::<Count>::default());
        d.send(&[0; 10], 0).unwrap();
        d.send_on(0, &[0; 5], 0).unwrap();
        d.send_on(1, &[0; 7], 0).unwrap();
        d.flush().unwrap();
        assert_eq!(d.describe(), "15 + 7");
    }
}
