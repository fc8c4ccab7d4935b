//! The return path of `sluice pace --return`: frames arriving on the
//! outgoing interface addressed to the TAP device's MAC (or to a group
//! address: ARP, neighbour discovery) are written into the TAP, where the
//! kernel takes them as received. ACKs thus reach the TCP sender behind
//! the TAP, and its congestion control reacts to the paced path.

use sluice_sys::packet_rx::PacketRx;
use sluice_sys::tap::Tap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Default)]
struct Shared {
    returned: AtomicU64,
    dropped: AtomicU64,
    stop: AtomicBool,
    error: Mutex<Option<String>>,
}

/// What the return path did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Frames written into the TAP.
    pub returned: u64,
    /// Frames the TAP's queue refused.
    pub dropped: u64,
    /// The error that ended the return path early, if any.
    pub error: Option<String>,
}

/// A running return path (a thread); stopped when dropped.
pub struct Relay {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// What the thread needs, until it is spawned.
    pending: Option<(PacketRx, Arc<Tap>, [u8; 6])>,
}

/// The thread: frames from `rx` for `mac` into `tap` until stopped.
fn relay(rx: &PacketRx, tap: &Tap, mac: &[u8; 6], sh: &Shared) {
    let mut buf = vec![0u8; 65_536];
    let fail = |e: io::Error| {
        *sh.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
    };
    while !sh.stop.load(Ordering::Relaxed) {
        let n = match rx.recv(&mut buf, Duration::from_millis(20)) {
            Ok(Some(r)) => {
                if r.partial_checksum {
                    // Written into the TAP, the frame is checked as if it
                    // came off a wire.
                    sluice_wire::complete_checksum(&mut buf[..r.len]);
                }
                r.len
            }
            Ok(None) => continue,
            Err(e) => return fail(e),
        };
        if !for_us(&buf[..n], mac) {
            continue;
        }
        match tap.write(&buf[..n]) {
            Ok(true) => sh.returned.fetch_add(1, Ordering::Relaxed),
            Ok(false) => sh.dropped.fetch_add(1, Ordering::Relaxed),
            Err(e) => return fail(e),
        };
    }
}

/// Whether a frame is for `mac`: addressed to it, or to a group.
fn for_us(frame: &[u8], mac: &[u8; 6]) -> bool {
    frame.len() >= 14 && (frame[..6] == mac[..] || frame[0] & 1 == 1)
}

impl Relay {
    /// Opens the return path from `iface` into `tap` (errors now, before
    /// the run); its thread starts with [`Relay::spawn`], from the thread
    /// that should own it (one kept off the TX CPUs).
    pub fn open(iface: &str, tap: Arc<Tap>) -> io::Result<Relay> {
        let rx = PacketRx::open(iface)?;
        let mac = tap.mac()?;
        Ok(Relay {
            shared: Arc::new(Shared::default()),
            thread: None,
            pending: Some((rx, tap, mac)),
        })
    }

    /// Starts relaying (once).
    pub fn spawn(&mut self) -> io::Result<()> {
        let Some((rx, tap, mac)) = self.pending.take() else {
            return Ok(());
        };
        let sh = self.shared.clone();
        self.thread = Some(
            std::thread::Builder::new()
                .name("sluice-return".into())
                .spawn(move || relay(&rx, &tap, &mac, &sh))?,
        );
        Ok(())
    }

    /// Stops the thread and waits for it.
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    pub fn stats(&self) -> RelayStats {
        RelayStats {
            returned: self.shared.returned.load(Ordering::Relaxed),
            dropped: self.shared.dropped.load(Ordering::Relaxed),
            error: self
                .shared
                .error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_for_the_tap_or_a_group_are_returned_others_not() {
        let mac = [2, 0, 0, 0, 0, 7];
        let mut f = [0u8; 60];
        f[..6].copy_from_slice(&mac);
        assert!(for_us(&f, &mac));
        f[..6].copy_from_slice(&[0xff; 6]);
        assert!(for_us(&f, &mac));
        f[..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
        assert!(for_us(&f, &mac));
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 8]);
        assert!(!for_us(&f, &mac));
        assert!(!for_us(&mac, &mac), "a runt is never returned");
    }
}
