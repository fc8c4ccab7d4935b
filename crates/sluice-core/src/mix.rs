//! SplitMix64 (FLOR §5.6's generator): a seeded stream of 64-bit values
//! in one word of state, for per-flow and per-thread draws where a full
//! RNG per stream would cost too much memory.

/// The next value of `state`.
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
