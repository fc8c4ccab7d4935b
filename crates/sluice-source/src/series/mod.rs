//! Time-series replay (paper: timeseries-traffic-generation §V): records of
//! an archive become UDP datagrams, sent at their recorded time (or scaled,
//! or in a tight loop), each device's records on its own flow.
//!
//! This module holds the source side: reading the archive into buffers of
//! whole records ([`chunker`]), turning records into queue entries with due
//! times ([`index`]), the device → flow mapping ([`devices`]) and which
//! devices play when ([`select`]). The
//! threads (IO, workers, TX) live in the engine.

pub mod chunker;
pub mod cuts;
pub mod devices;
pub mod index;
pub mod select;

pub use chunker::{ArchiveChunker, Filled, MIN_BUFFER};
pub use cuts::GapCuts;
pub use devices::{device_id, device_name, DeviceCount, DeviceId, DeviceTable, FlowMap};
pub use index::{DueRecord, Indexer, Lane, Ooo, SeriesTiming};
pub use select::{DeviceFilter, DeviceSelect, DeviceSteps};
pub use sluice_archive::HEADER_LEN;

#[derive(Debug, thiserror::Error)]
pub enum SeriesError {
    /// The OS error is part of the text (not a separate source in the
    /// error chain, which would print it twice).
    #[error("{file}: {error}")]
    Io { file: String, error: std::io::Error },
    #[error("{file}: record {record} at byte {offset}: {what}")]
    Record {
        file: String,
        record: u64,
        offset: u64,
        what: String,
    },
    #[error("{file}: {what}")]
    Mapping { file: String, what: String },
    #[error("{file}: the archive holds no records")]
    Empty { file: String },
}

/// The first record's timestamp (UTC µs): T_g, the origin of every due time.
pub fn first_timestamp(path: &std::path::Path) -> Result<i64, SeriesError> {
    use std::io::Read;
    let file = path.display().to_string();
    let mut head = [0u8; sluice_archive::HEADER_LEN];
    let mut f = std::fs::File::open(path).map_err(|e| SeriesError::Io {
        file: file.clone(),
        error: e,
    })?;
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(SeriesError::Io { file, error: e }),
        }
    }
    if got == 0 {
        return Err(SeriesError::Empty { file });
    }
    let bad = |what: String| SeriesError::Record {
        file: file.clone(),
        record: 1,
        offset: 0,
        what,
    };
    if got < head.len() {
        return Err(bad(format!(
            "truncated record: {got} bytes, a record header is 30"
        )));
    }
    let stamp: &[u8; 12] = head[2..14].try_into().expect("12 bytes");
    sluice_archive::decode_micros(stamp).map_err(|e| bad(e.to_string()))
}
