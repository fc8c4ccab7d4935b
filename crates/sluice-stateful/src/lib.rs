//! Stateful traffic: client and server TCP and UDP conversations on a
//! user-space stack of sluice's own (see docs/ARCHITECTURE.md, "A room
//! for conversations", for why not smoltcp).
//!
//! The data path: frames arrive on a port ([`drive`]), a [`host::Host`]
//! finds each one's connection by 5-tuple ([`conn`]) and runs TCP
//! ([`tcp`]) or UDP ([`udp`]) for it; the connection's [`program`] says
//! what it sends next, written from shared bytes into the frame
//! ([`frame`]); timers sit in a [`wheel`]; what happened is counted in
//! [`counters`].

pub mod addr;
pub mod capture;
pub mod config;
pub mod conn;
pub mod counters;
pub mod ctx;
pub mod drive;
pub mod fanout;
pub mod frame;
pub mod host;
pub mod program;
pub mod report;
pub mod rxparse;
pub mod tcp;
pub mod templates;
pub mod udp;
pub mod wheel;
