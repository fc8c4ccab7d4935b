//! Flow generation (FLOR: flows and meta-flows, a flow timer, packet
//! schedulers): sessions ([`session`]), their expansion into flows in
//! start order ([`expand`]), and the calendar-planned source that builds
//! every packet ([`source`]).

mod calendar;
mod dtree;
pub mod edit;
mod expand;
mod import;
mod onoff;
mod proto;
mod session;
mod source;
mod stream;
pub mod template;

pub use edit::{Edit, EditError, MAX_EDIT};
pub use expand::{Expander, Flow, NO_TOTAL};
pub use import::{import_csv, import_text, ImportError, ImportStats};
pub use onoff::OnOff;
pub use session::{FlowEntry, Proto, Session, SessionError, DEFAULT_IPPROTO};
pub use sluice_source::confine::confine_inputs;
pub use source::{FlowConfig, FlowSource, Planner};
