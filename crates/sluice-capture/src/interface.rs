//! pcapng interfaces: link type, snaplen and timestamp conversion.
//!
//! Design: each Interface Description Block is turned once into an
//! [`Interface`] whose timestamp conversion is precomputed as a [`Scale`]
//! from `if_tsresol` (10^-n, or 2^-n with the high bit set; default 10^-6):
//! decimal resolutions become one multiply or divide per packet, binary ones
//! use `u128` math so `ts * 1e9 / 2^63` cannot overflow. Resolutions finer
//! than 10^-19 or 2^-63 (the most a `u64` count of units per second can
//! express) are refused when the interface is described
//! ([`BadTsResol`](crate::ErrorKind::BadTsResol)). `if_tsoffset` (whole
//! seconds, signed) is added in `i128` and the result must fit `u64` ns.
//! Unknown options and known ones with the wrong length are ignored, as
//! Wireshark does.

use crate::bytes::{i64_at, u16_at, u32_at};
use crate::error::ErrorKind;
use crate::linktype::LinkType;
use crate::options::walk_options;

/// Block type of an Interface Description Block.
const IDB: u32 = 1;
/// `if_tsresol`: one byte, the timestamp resolution.
pub(crate) const OPT_IF_TSRESOL: u16 = 9;
/// `if_tsoffset`: eight bytes, seconds to add to every timestamp.
pub(crate) const OPT_IF_TSOFFSET: u16 = 14;

/// Converts interface timestamp units to nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scale {
    /// `ns = ts * k` (resolutions 1 s .. 1 ns, decimal).
    Mul(u64),
    /// `ns = ts / k` (decimal resolutions finer than 1 ns).
    Div(u64),
    /// `ns = ts * 1e9 / units` (binary resolutions).
    PerSecond(u64),
}

impl Scale {
    fn from_tsresol(v: u8) -> Result<Scale, ErrorKind> {
        let e = u32::from(v & 0x7f);
        if v & 0x80 != 0 {
            match e {
                0 => Ok(Scale::Mul(1_000_000_000)),
                1..=63 => Ok(Scale::PerSecond(1u64 << e)),
                _ => Err(ErrorKind::BadTsResol(v)),
            }
        } else {
            match e {
                0..=9 => Ok(Scale::Mul(10u64.pow(9 - e))),
                10..=19 => Ok(Scale::Div(10u64.pow(e - 9))),
                _ => Err(ErrorKind::BadTsResol(v)),
            }
        }
    }

    #[inline]
    fn to_ns(self, ts: u64) -> Option<u64> {
        match self {
            Scale::Mul(k) => ts.checked_mul(k),
            Scale::Div(k) => Some(ts / k),
            Scale::PerSecond(u) => {
                u64::try_from(u128::from(ts) * 1_000_000_000 / u128::from(u)).ok()
            }
        }
    }

    /// [`to_ns`](Self::to_ns) without the `u64` limit (`ts * 1e9 < 2^94`),
    /// for an offset to bring back into range.
    fn to_ns_wide(self, ts: u64) -> u128 {
        match self {
            Scale::Mul(k) => u128::from(ts) * u128::from(k),
            Scale::Div(k) => u128::from(ts / k),
            Scale::PerSecond(u) => u128::from(ts) * 1_000_000_000 / u128::from(u),
        }
    }
}

/// One interface of a pcapng section.
#[derive(Debug, Clone)]
pub(crate) struct Interface {
    pub linktype: LinkType,
    pub snaplen: u32,
    scale: Scale,
    /// `if_tsoffset` in nanoseconds.
    offset_ns: i128,
}

impl Interface {
    /// Parses the body of an interface description block (link type,
    /// reserved, snaplen, options; at least 8 bytes).
    pub(crate) fn parse(body: &[u8], be: bool) -> Result<Interface, ErrorKind> {
        let linktype = LinkType::from_header(u32::from(u16_at(body, 0, be)));
        let snaplen = u32_at(body, 4, be);
        let mut scale = Scale::Mul(1_000);
        let mut offset_ns = 0i128;
        walk_options(&body[8..], be, IDB, |code, value| {
            match (code, value.len()) {
                (OPT_IF_TSRESOL, 1) => scale = Scale::from_tsresol(value[0])?,
                (OPT_IF_TSOFFSET, 8) => {
                    offset_ns = i128::from(i64_at(value, 0, be)) * 1_000_000_000;
                }
                _ => {}
            }
            Ok(())
        })?;
        Ok(Interface {
            linktype,
            snaplen,
            scale,
            offset_ns,
        })
    }

    /// Converts a raw 64-bit timestamp to ns since 1970; `None` if it does
    /// not fit.
    #[inline]
    pub(crate) fn ts_ns(&self, ts: u64) -> Option<u64> {
        if self.offset_ns == 0 {
            return self.scale.to_ns(ts);
        }
        // Converted without a limit first: a time past u64 ns before a
        // negative offset is in range after it. Both terms are below 2^94
        // in magnitude, so neither the cast nor the sum can overflow.
        let ns = self.scale.to_ns_wide(ts) as i128 + self.offset_ns;
        u64::try_from(ns).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_and_binary_resolutions() {
        let ns = |v: u8, ts: u64| Scale::from_tsresol(v).unwrap().to_ns(ts);
        assert_eq!(ns(6, 1_500_000), Some(1_500_000_000));
        assert_eq!(ns(9, 42), Some(42));
        assert_eq!(ns(0, 2), Some(2_000_000_000));
        assert_eq!(ns(12, 5_000), Some(5));
        assert_eq!(ns(19, u64::MAX), Some(u64::MAX / 10_000_000_000));
        assert_eq!(ns(0x80 | 10, 1024), Some(1_000_000_000));
        assert_eq!(ns(0x80 | 63, (1 << 63) - 1), Some(999_999_999));
        assert_eq!(ns(0x80, 3), Some(3_000_000_000));
        assert_eq!(ns(0, u64::MAX / 1_000_000_000 + 1), None);
        for bad in [20u8, 100, 0x7f, 0x80 | 64, 0xff] {
            assert!(matches!(Scale::from_tsresol(bad), Err(ErrorKind::BadTsResol(v)) if v == bad));
        }
    }

    #[test]
    fn parses_an_idb_body_with_options() {
        // LINUX_SLL, snaplen 262144, if_tsresol 9, if_tsoffset -1 s, end.
        let mut body = vec![
            113, 0, 0, 0, 0, 0, 4, 0, 9, 0, 1, 0, 9, 0, 0, 0, 14, 0, 8, 0,
        ];
        body.extend((-1i64).to_le_bytes());
        body.extend([0, 0, 0, 0]);
        let i = Interface::parse(&body, false).unwrap();
        assert_eq!((i.linktype, i.snaplen), (LinkType::LINUX_SLL, 262_144));
        assert_eq!(i.ts_ns(1_000_000_007), Some(7));
        assert_eq!(i.ts_ns(999_999_999), None);
        // Past u64 ns before the offset, in range after it.
        let mut i = i;
        i.scale = Scale::Mul(1_000);
        i.offset_ns = -1_000_000_000_000;
        let ts = u64::MAX / 1_000 + 5;
        assert_eq!(
            i.ts_ns(ts),
            Some(u64::MAX / 1_000 * 1_000 - 1_000_000_000_000 + 5_000)
        );
        assert_eq!(i.ts_ns(u64::MAX), None);
        i.scale = Scale::PerSecond(1 << 10);
        let ts = (u64::MAX / 1_000_000_000 + 1) << 10;
        assert_eq!(
            i.ts_ns(ts),
            Some((u64::MAX / 1_000_000_000 + 1 - 1_000) * 1_000_000_000)
        );

        // Defaults: microseconds, no offset. Link type 14 read as RAW.
        let i = Interface::parse(&[0, 14, 0, 0, 0, 0, 0, 0], true).unwrap();
        assert_eq!((i.linktype, i.snaplen), (LinkType::RAW, 0));
        assert_eq!(i.ts_ns(3), Some(3_000));
    }
}
