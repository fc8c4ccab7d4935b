//! A cache-line prefetch for the receive paths, which read frames the
//! kernel wrote from another CPU.

/// Asks for the cache line at `p` (a hint: no fault, whatever `p` is).
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    // SAFETY: SSE is part of x86_64's baseline; a prefetch reads nothing
    // and never faults, whatever the address.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
