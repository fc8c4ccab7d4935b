//! The TX side, one for every source: [`TxCore`] (pace, send, count, hand
//! ε over), the one TX loop ([`TxLoop`]) over a [`Feed`] of [`Unit`]s,
//! rescue between TX threads ([`Board`]), and the feed of the batch
//! pipeline ([`BatchFeed`]). The time-series pipeline's feed is
//! `series/feed.rs`.

mod batches;
mod board;
mod core;
mod send;
mod stamps;
mod unit;

pub(crate) use self::core::{TxCore, TxReport, TxSetup, Verdict};
pub(crate) use batches::{BatchFeed, Stamper};
pub(crate) use board::Board;
pub(crate) use send::{Feed, Next, TxLoop};
pub(crate) use stamps::StampNumbers;
pub(crate) use unit::Unit;
