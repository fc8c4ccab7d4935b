//! SIGINT/SIGTERM set a stop flag the engine watches; a second signal exits
//! at once (for a run that does not stop quickly enough). They also set
//! `sluice_sys::output::stop_flag`, which ends a wait for a FIFO's reader.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::flag;
    static OUTPUTS: std::sync::Once = std::sync::Once::new();
    let mut outputs = Ok(());
    OUTPUTS.call_once(|| {
        for sig in [SIGINT, SIGTERM] {
            if let Err(e) = flag::register(sig, sluice_sys::output::stop_flag()) {
                outputs = Err(e);
            }
        }
    });
    outputs?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        // Order matters: the conditional shutdown fires only if the flag was
        // already set by an earlier signal.
        flag::register_conditional_shutdown(sig, 130, stop.clone())?;
        flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}
