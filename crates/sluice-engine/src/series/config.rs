//! Settings of a time-series play run.

use sluice_core::Nanos;
use sluice_source::series::{DeviceCount, DeviceSelect, FlowMap, Ooo, SeriesTiming};
use sluice_wire::MacAddr;
use std::path::PathBuf;

/// What goes into each datagram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SeriesPayload {
    /// The record's Data field.
    #[default]
    Data,
    /// The whole record (length, timestamp, device ID, data).
    Record,
}

sluice_core::named_values!(SeriesPayload {
    Data => "data",
    Record => "record",
});

#[derive(Clone, Debug)]
pub struct SeriesConfig {
    pub path: PathBuf,
    /// Bytes per buffer (two per worker).
    pub buffer_size: usize,
    pub workers: usize,
    /// In-order MPMC queues; worker w feeds queue w % queues, TX thread t
    /// drains queue t % queues.
    pub queues: usize,
    pub timing: SeriesTiming,
    pub ooo: Option<Ooo>,
    /// TX threads (the first ones) that also send out-of-order records.
    pub ooo_threads: usize,
    pub flows: FlowMap,
    pub devices: DeviceCount,
    /// `--device-filter` and `--device-steps`.
    pub select: DeviceSelect,
    pub payload: SeriesPayload,
    /// IP MTU of the link: larger datagrams are fragmented.
    pub mtu: usize,
    pub src_mac: MacAddr,
    pub dst_mac: MacAddr,
    pub ttl: u8,
    /// Seeds the out-of-order choices (per worker).
    pub seed: u64,
    /// With several TX threads: a record its own thread has not claimed
    /// this long after its due time is sent by another (None: never).
    pub rescue_after: Option<Nanos>,
    /// Recorded gaps longer than this are shortened to it (None: reported
    /// past an hour, kept).
    pub max_gap: Option<Nanos>,
    /// A distributed run's share: only devices whose id falls to it are
    /// sent (their flow addresses are those of the whole run).
    pub share: Option<sluice_source::Share>,
}

impl SeriesConfig {
    pub fn new(path: PathBuf, flows: FlowMap) -> Self {
        SeriesConfig {
            path,
            flows,
            ..SeriesConfig::default()
        }
    }
}

impl Default for SeriesConfig {
    fn default() -> Self {
        SeriesConfig {
            path: PathBuf::new(),
            buffer_size: 64 << 20,
            workers: 1,
            queues: 1,
            timing: SeriesTiming::Conforming,
            ooo: None,
            ooo_threads: 1,
            flows: FlowMap::new(FlowMap::DEFAULT_DST_IP, FlowMap::DEFAULT_DST_PORT),
            devices: DeviceCount::All,
            select: DeviceSelect::default(),
            payload: SeriesPayload::Data,
            mtu: 1500,
            src_mac: MacAddr::LOCAL_SRC,
            dst_mac: MacAddr::LOCAL_DST,
            ttl: 64,
            seed: 1,
            rescue_after: Some(Nanos::from_micros(2)),
            max_gap: None,
            share: None,
        }
    }
}
