//! Several outputs behind one TX thread: two-port replay (tcpreplay's
//! `--intf1`/`--intf2`), where one time-ordered stream leaves each frame
//! by the port its source chose, so the order between the two sides of a
//! conversation is the trace's; and a time series played through several
//! NICs at once (`series play --also-to`), each device by its own output.

use crate::{Sink, SinkError, Takes};

/// Port p is output p (port 0 `--to`); a port past the last is the last
/// (two-port replay: any other port is `--to2`, server to client).
pub struct PortSink {
    outs: Vec<Box<dyn Sink>>,
}

impl PortSink {
    /// The outputs in port order; at least one.
    pub fn new(outs: Vec<Box<dyn Sink>>) -> Self {
        assert!(!outs.is_empty(), "a port sink has at least one output");
        PortSink { outs }
    }

    fn out(&mut self, port: u8) -> &mut Box<dyn Sink> {
        let last = self.outs.len() - 1;
        &mut self.outs[usize::from(port).min(last)]
    }

    /// The first error of `f` over every output, after all ran.
    fn each(
        &mut self,
        f: impl Fn(&mut Box<dyn Sink>) -> Result<(), SinkError>,
    ) -> Result<(), SinkError> {
        let mut first = Ok(());
        for s in &mut self.outs {
            let r = f(s);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

impl Sink for PortSink {
    fn send(&mut self, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.outs[0].send(frame, stamp_ns)
    }

    fn send_on(&mut self, port: u8, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.out(port).send(frame, stamp_ns)
    }

    fn send_parts_on(
        &mut self,
        port: u8,
        head: &[u8],
        body: &[u8],
        stamp_ns: u64,
    ) -> Result<(), SinkError> {
        self.out(port).send_parts(head, body, stamp_ns)
    }

    fn ports(&self) -> usize {
        self.outs.len()
    }

    fn takes(&self) -> Takes {
        self.outs[0].takes()
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.each(|s| s.flush())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.each(|s| s.finish())
    }

    fn finish_incomplete(&mut self) -> Result<(), SinkError> {
        self.each(|s| s.finish_incomplete())
    }

    fn settle(&mut self, complete: bool) -> Result<(), SinkError> {
        self.each(|s| s.settle(complete))
    }

    fn describe(&self) -> String {
        self.outs
            .iter()
            .map(|s| s.describe())
            .collect::<Vec<_>>()
            .join(" + ")
    }

    fn tx_path(&self) -> Option<&'static str> {
        self.outs.iter().find_map(|s| s.tx_path())
    }

    fn rejected(&self) -> u64 {
        self.outs.iter().map(|s| s.rejected()).sum()
    }

    fn unsent(&self) -> (u64, u64) {
        self.outs
            .iter()
            .map(|s| s.unsent())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
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
    fn frames_go_by_their_port_and_every_output_flushes() {
        let mut d = PortSink::new(vec![Box::<Count>::default(), Box::<Count>::default()]);
        d.send(&[0; 10], 0).unwrap();
        d.send_on(0, &[0; 5], 0).unwrap();
        d.send_on(1, &[0; 7], 0).unwrap();
        // Past the last port: the last (two-port replay's second side).
        d.send_on(9, &[0; 1], 0).unwrap();
        d.flush().unwrap();
        assert_eq!(d.describe(), "15 + 8");
        let mut three = PortSink::new(
            (0..3)
                .map(|_| Box::<Count>::default() as Box<dyn Sink>)
                .collect(),
        );
        for p in 0..3u8 {
            three
                .send_parts_on(p, &[0; 2], &vec![0; usize::from(p)], 0)
                .unwrap();
        }
        assert_eq!(
            (three.ports(), three.describe()),
            (3, "2 + 3 + 4".to_string())
        );
    }
}
