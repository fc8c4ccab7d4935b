//! The IO thread of time-series play: fills buffers of whole records and
//! deals them to the workers in turn (double buffering: two buffers per
//! worker, refilled as soon as a worker hands one back; as many as the
//! archive needs when it is preloaded).

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use sluice_source::series::{ArchiveChunker, Filled, SeriesError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct IoOut {
    /// A cut-off last record (the ones before it were played).
    pub truncation: Option<String>,
}

pub(crate) fn run(
    mut chunker: ArchiveChunker,
    to_workers: Vec<Sender<Filled>>,
    recycled: Receiver<Filled>,
    buffer_size: usize,
    preload: bool,
    stop: Arc<AtomicBool>,
    starved: Arc<AtomicBool>,
) -> Result<IoOut, SeriesError> {
    let limit = if preload {
        usize::MAX
    } else {
        2 * to_workers.len()
    };
    let mut allocated = 0;
    let mut truncation = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let mut buf = match recycled.try_recv() {
            Ok(b) => b,
            Err(_) if allocated < limit => {
                allocated += 1;
                Filled::new(buffer_size)
            }
            Err(_) => {
                // Every buffer is out: with small buffers, this may happen
                // before the TX threads start (see the priming in mod.rs).
                starved.store(true, Ordering::Relaxed);
                let got = recycled.recv_timeout(Duration::from_millis(20));
                starved.store(false, Ordering::Relaxed);
                match got {
                    Ok(b) => b,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        };
        match chunker.fill(&mut buf) {
            Ok(true) => {}
            Ok(false) => break,
            Err(SeriesError::Record { what, .. }) if what.starts_with("truncated") => {
                truncation = Some(format!(
                    "{}: record {} is truncated ({what}); the records before it were played",
                    chunker.name(),
                    chunker.records() + 1
                ));
                break;
            }
            Err(e) => return Err(e),
        }
        let w = (buf.seq % to_workers.len() as u64) as usize;
        if to_workers[w].send(buf).is_err() {
            break;
        }
    }
    Ok(IoOut { truncation })
}
