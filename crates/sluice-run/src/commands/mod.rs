//! Each sending command's preparation: its options checked, its inputs
//! opened, its source built and its plan typed (`crate::prepare` names
//! them all; they do not name each other).

pub mod flows;
pub mod inject;
pub mod onoff;
pub mod pace;
pub mod profile;
pub mod replay;
pub mod series;
