//! Pacing: when exactly each packet leaves.
//!
//! Mechanism and policy are separate (quinn's pacer is the model):
//! - [`Schedule`] (pure) turns a source's timestamps into *due offsets* from
//!   the start of the run, for each timing mode (as recorded, multiplier,
//!   pps, Mbit/s, top speed), with loops that continue time across the seam.
//! - [`Pacer`] (pure) compares a due time with a `now` passed in and answers
//!   send, wait until `t`, or drop (drift window T_d exceeded).
//! - [`GapWatch`] notes implausible recorded time (long gaps, steps back)
//!   and caps long gaps when asked.
//! - [`Waiter`] is the policy that actually waits: sleep until shortly before
//!   the deadline, spin the rest. It is the only part that reads a clock.

pub mod gaps;
pub mod pacer;
pub mod schedule;
pub mod timeline;
pub mod wait;

pub use gaps::{GapWatch, DEFAULT_MAX_GAP};
pub use pacer::{Decision, Pacer};
pub use schedule::{Schedule, TimingMode};
pub use timeline::{Change, ChangeError, Line, Timeline};
pub use wait::{SpinSleep, Waiter};
