//! OS glue: every system call of sluice outside the sink backends, and
//! every `unsafe` block outside them.
//!
//! - [`sched`]: what a TX thread asks of the scheduler (CPU pinning,
//!   SCHED_FIFO, mlockall, timer slack). Each call returns the OS error
//!   for the caller to report ("--rt refused: Operation not permitted")
//!   rather than failing the run.
//! - [`cpus`]: how many CPUs the process may use, and `--cpu` lists.
//! - [`mem`]: the memory available, for budgets checked before allocating.
//! - [`net`]: facts about network interfaces (the MTU, queues), and
//!   [`ethtool`]: what their drivers offer (timestamps, checksum offload).
//! - [`tap`]: TAP devices (`sluice pace`), and [`packet_rx`]: receiving
//!   the frames of one interface (the return path to a TAP), and
//!   [`rx_ring`]: a TPACKET_V3 receive ring (`sluice rx`, `--rx`), and
//!   [`xdp`]: AF_XDP's rings (the `xdp:` sink's hot path) and receiving
//!   through them, with the small XDP program that steers frames there.
//! - [`process`]: a worker's jobs: stopped by SIGTERM, and dying with it.
//! - [`filemap`]: a file mapped read-only, and its pages dropped from the
//!   page cache (benches of reading strategies).
//! - [`input`]: files read whole, each kind with a ceiling.
//! - [`output`]: file outputs written to a temporary file and renamed into
//!   place, locked while written, never aliasing an input.
//!
//! Design: the engine decides *when* to pin or raise priority; this crate
//! only knows *how*, so the engine and the CLI stay free of `unsafe` and of
//! `libc`.

pub mod clock;
pub mod cpus;
pub mod ethtool;
pub mod filemap;
pub mod input;
pub mod mem;
pub mod net;
pub mod numa;
pub mod output;
pub mod packet_port;
pub mod packet_rx;
pub mod peer;
pub mod poll;
mod prefetch;
pub mod process;
pub mod rx_ring;
pub mod sched;
pub mod secret;
pub mod tap;
pub mod tsc;
pub mod xdp;
