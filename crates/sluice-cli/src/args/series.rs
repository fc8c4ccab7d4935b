//! `sluice series` arguments: convert, dump, play.

use clap::{Args, Subcommand};
use sluice_archive::DataEncoding;
use sluice_job::command::PlayArgs;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SeriesArgs {
    #[command(subcommand)]
    pub command: SeriesCommand,
}

#[derive(Subcommand, Debug)]
pub enum SeriesCommand {
    /// Convert a CSV (header `timestamp,device_id,value...`) into a time-series archive.
    Convert(ConvertArgs),
    /// Print a time-series archive as CSV.
    Dump(DumpArgs),
    /// Play an archive as UDP datagrams: on time, faster, or as fast as possible.
    ///
    /// Records of one device may leave from several TX threads; with 2+ TX
    /// threads a record its own thread left unsent past its time is sent by
    /// another (rescue).
    Play(Box<PlayArgs>),
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// CSV input: `timestamp,device_id,value...` header, ISO 8601 timestamps.
    pub input: PathBuf,
    /// Archive to write (created or overwritten; removed again on error).
    pub output: PathBuf,
    /// How values are stored: text (columns as written), i32, f32 or f64 (big-endian binary).
    #[arg(long, default_value_t = DataEncoding::Text, value_name = "text|i32|f32|f64")]
    pub data: DataEncoding,
}

#[derive(Args, Debug)]
pub struct DumpArgs {
    /// Archive to print.
    pub archive: PathBuf,
    /// How the data fields were stored: text, i32, f32 or f64.
    #[arg(long, default_value_t = DataEncoding::Text, value_name = "text|i32|f32|f64")]
    pub data: DataEncoding,
    /// Write the CSV here instead of to stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}
