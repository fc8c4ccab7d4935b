//! Fixed-width integer fields in a given byte order.
//!
//! Design: pcap and pcapng files are written in the byte order of the
//! machine that made them, recorded once per file or section; every field
//! read goes through these helpers with that flag, so there is one place
//! where byte order is handled. Callers check lengths first; the indexing
//! here is the last line of defence (a panic would be a bug, found by the
//! mutation tests and the fuzzers).

#[inline]
pub(crate) fn u16_at(b: &[u8], at: usize, be: bool) -> u16 {
    let v = [b[at], b[at + 1]];
    if be {
        u16::from_be_bytes(v)
    } else {
        u16::from_le_bytes(v)
    }
}

#[inline]
pub(crate) fn u32_at(b: &[u8], at: usize, be: bool) -> u32 {
    let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if be {
        u32::from_be_bytes(v)
    } else {
        u32::from_le_bytes(v)
    }
}

#[inline]
pub(crate) fn i64_at(b: &[u8], at: usize, be: bool) -> i64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    if be {
        i64::from_be_bytes(v)
    } else {
        i64::from_le_bytes(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_byte_orders() {
        let b = [0x0a, 0x0d, 0x0d, 0x0a, 0x4d, 0x3c, 0x2b, 0x1a];
        assert_eq!(u32_at(&b, 4, false), 0x1a2b_3c4d);
        assert_eq!(u32_at(&b, 4, true), 0x4d3c_2b1a);
        assert_eq!(u16_at(&b, 3, false), 0x4d0a);
        assert_eq!(u16_at(&b, 3, true), 0x0a4d);
        let t = (-3600i64).to_be_bytes();
        assert_eq!(i64_at(&t, 0, true), -3600);
        assert_eq!(i64_at(&(-3600i64).to_le_bytes(), 0, false), -3600);
    }
}
