//! SIGINT/SIGTERM set a stop flag the engine watches; a second signal exits
//! at once (for a run that does not stop quickly enough).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::flag;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        // Order matters: the conditional shutdown fires only if the flag was
        // already set by an earlier signal.
        flag::register_conditional_shutdown(sig, 130, stop.clone())?;
        flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}
