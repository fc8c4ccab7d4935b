//! What a TX thread takes from its feed at once: packets in due order.

use sluice_core::Nanos;

/// Packets in due order that a TX thread takes at once.
pub(crate) trait Unit: Send + Sync + 'static {
    fn len(&self) -> usize;
    /// Due offset of packet `i` from the start of the run.
    fn due(&self, i: usize) -> Nanos;
    /// Every due offset in order (the hot loop's way through a unit).
    fn dues(&self) -> impl Iterator<Item = Nanos> + '_;
    /// The gap packet `i` keeps after the packet sent before it (0: none;
    /// see `Batch::gaps`).
    fn spacing(&self, _i: usize) -> u32 {
        0
    }
}
