//! Flow generation (FLOR: flows and meta-flows, a flow timer, packet
//! schedulers): sessions ([`session`]), their expansion into flows in
//! start order ([`expand`]), and the calendar-planned source that builds
//! every packet ([`source`]).

pub mod calendar;
pub mod dtree;
pub mod expand;
pub mod import;
pub mod session;
pub mod source;
pub mod stream;

pub use expand::{Expander, Flow};
pub use import::{import_csv, import_text, ImportError, ImportStats};
pub use session::{FlowEntry, Proto, Session, SessionError};
pub use source::{FlowConfig, FlowSource, Planner};
