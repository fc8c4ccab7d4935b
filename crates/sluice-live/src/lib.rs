//! Live sources: packets that arrive while the clock runs. [`tap`] paces
//! the frames any program sends through a TAP device out at requested
//! gaps (closed loop with its return path); [`inject`] sends frames that
//! clients describe over a socket at their times and acknowledges each
//! with its departure. Both stamp arrivals on the run's clock from the
//! start the engine fixes before they begin (`Origin::Live`).

pub mod inject;
pub mod tap;
