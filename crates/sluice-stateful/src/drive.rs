//! The wall-clock loop: each host on its own port, one thread. Frames
//! are read in batches and handed to the host, its timers and opens run,
//! and what it queued is sent in batches; the thread sleeps in `poll`
//! only when nothing arrived and nothing is due within the wait.

use crate::host::Host;
use crate::report::Snap;
use sluice_sys::packet_port::{PacketPort, RxBatch};
use sluice_sys::poll::PollSet;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Frames queued beyond this are dropped (counted `tx_dropped`): the
/// socket is full and TCP sends them again.
const MAX_QUEUED: usize = 1 << 16;
/// Receive batches per port per turn of the loop.
const RX_ROUNDS: usize = 16;

pub struct Port {
    pub port: PacketPort,
    pub host: Host,
    pub name: &'static str,
    batch: RxBatch,
    pub peak_active: u64,
}

impl Port {
    pub fn snap(&self) -> Snap {
        Snap::of(&self.host, self.name, self.port.iface(), self.peak_active)
    }
}

impl Port {
    pub fn new(port: PacketPort, host: Host, name: &'static str) -> Port {
        Port {
            port,
            host,
            name,
            batch: RxBatch::default(),
            peak_active: 0,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        let out = &mut self.host.x.out;
        if out.is_empty() {
            return Ok(());
        }
        let frames: Vec<&[u8]> = out.frames().collect();
        let sent = self.port.send(&frames)?;
        drop(frames);
        self.host.x.host.tx_frames += sent as u64;
        out.consume(sent);
        if out.len() > MAX_QUEUED {
            let extra = out.len() - MAX_QUEUED;
            self.host.x.host.tx_dropped += extra as u64;
            out.consume(out.len());
        }
        Ok(())
    }
}

/// When the loop ends.
#[derive(Clone)]
pub struct Until {
    /// Stop at once when set (SIGINT/SIGTERM).
    pub stop: Arc<AtomicBool>,
    /// Servers only: stop at this time (ns of the run's clock).
    pub deadline: Option<u64>,
    /// After the clients opened all, wait this long for their connections
    /// to end.
    pub drain: u64,
}

/// Runs the ports until the clients are done (or `until` says), calling
/// `tick` about every `interval`; then resets what is still open.
/// Returns the run's length, ns.
pub fn run(
    ports: &mut [Port],
    until: &Until,
    interval: Duration,
    mut tick: impl FnMut(&[Port], u64),
) -> io::Result<u64> {
    let start = Instant::now();
    let now_ns = || start.elapsed().as_nanos() as u64;
    let interval = interval.as_nanos() as u64;
    let mut next_tick = interval;
    let mut opened_all_at: Option<u64> = None;
    let mut polls = PollSet::new();
    let clients = ports.iter().any(|p| p.host.x.cfg.client.is_some());
    let mut now;
    loop {
        now = now_ns();
        let mut got = 0;
        for p in ports.iter_mut() {
            for _ in 0..RX_ROUNDS {
                let n = p.port.recv(&mut p.batch)?;
                for i in 0..n {
                    p.host.deliver(p.batch.frame(i), now);
                }
                got += n;
                if n < sluice_sys::packet_port::BATCH {
                    break;
                }
            }
            p.host.x.host.rx_cut = p.batch.cut;
            p.host.poll(now);
            p.flush()?;
            p.peak_active = p.peak_active.max(p.host.active());
        }
        if now >= next_tick {
            tick(ports, now);
            next_tick = now + interval;
        }
        // A signal ends the run now: what is still open is reset and
        // counted unfinished, and the summary is written.
        if until.stop.load(Ordering::Relaxed) {
            break;
        }
        if clients {
            let opened_all = ports.iter().all(|p| p.host.opening_done(now));
            if opened_all && opened_all_at.is_none() {
                opened_all_at = Some(now);
            }
            let quiet = ports
                .iter()
                .filter(|p| p.host.x.cfg.client.is_some())
                .all(|p| p.host.open_now() == 0);
            if let Some(t) = opened_all_at {
                if quiet || now >= t + until.drain {
                    break;
                }
            }
        } else if until.deadline.is_some_and(|d| now >= d) {
            break;
        }
        if got == 0 {
            let wake = ports
                .iter()
                .map(|p| p.host.next_wake(now))
                .min()
                .unwrap_or(now)
                .min(next_tick);
            if wake > now + 20_000 {
                polls.clear();
                for p in ports.iter() {
                    polls.add(p.port.fd(), libc::POLLIN);
                }
                polls.wait(Duration::from_nanos(wake - now))?;
            }
        }
    }
    for p in ports.iter_mut() {
        p.host.finish(now);
        p.flush()?;
    }
    tick(ports, now);
    Ok(now)
}

/// Runs each thread's ports on a thread of its own (the threads of a side
/// own its connections by client port: [`crate::fanout`]). `tick` runs on
/// the calling thread about every `interval` with a snapshot of every
/// port, and once more (`last`) when all have ended. Returns the run's
/// length, ns.
pub fn run_threads(
    threads: Vec<Vec<Port>>,
    until: &Until,
    interval: Duration,
    mut tick: impl FnMut(&[Snap], u64, bool),
) -> io::Result<u64> {
    let n = threads.len();
    let slots: Arc<Mutex<Vec<Vec<Snap>>>> = Arc::new(Mutex::new(vec![Vec::new(); n]));
    let start = Instant::now();
    let mut handles = Vec::new();
    for (i, mut ports) in threads.into_iter().enumerate() {
        let (slots, until) = (Arc::clone(&slots), until.clone());
        let h = std::thread::Builder::new()
            .name(format!("converse-{i}"))
            .spawn(move || -> io::Result<u64> {
                let publish = |ports: &[Port]| {
                    let snaps = ports.iter().map(Port::snap).collect();
                    slots.lock().unwrap_or_else(|e| e.into_inner())[i] = snaps;
                };
                run(&mut ports, &until, interval, |ports, _| publish(ports))
            })?;
        handles.push(h);
    }
    let all = |slots: &Mutex<Vec<Vec<Snap>>>| -> Vec<Snap> {
        slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .flatten()
            .cloned()
            .collect()
    };
    let mut next = interval;
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(50));
        let now = start.elapsed();
        if now >= next {
            tick(&all(&slots), now.as_nanos() as u64, false);
            next = now + interval;
        }
    }
    let mut len = 0;
    for h in handles {
        let r = h
            .join()
            .map_err(|_| io::Error::other("a converse thread panicked"))?;
        len = len.max(r?);
    }
    tick(&all(&slots), len, true);
    Ok(len)
}
