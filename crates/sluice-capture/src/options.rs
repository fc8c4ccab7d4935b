//! pcapng options: the `code, length, value, padding` list at the end of
//! section, interface and packet blocks.
//!
//! Design: one walker that validates as it goes and hands each option's
//! value to a closure, so the block parsers only say which codes they care
//! about. An option whose value would run past the end of its block is an
//! error ([`OptionOverrun`](crate::ErrorKind::OptionOverrun)); a missing
//! final padding and trailing bytes too short for an option header are
//! tolerated (writers in the wild produce both).

use crate::bytes::u16_at;
use crate::error::ErrorKind;

/// `opt_endofopt`: ends the list.
const OPT_ENDOFOPT: u16 = 0;

/// Walks the options in `opts`, calling `f(code, value)` for each until
/// `opt_endofopt` or the end. An option whose value runs past the end is an
/// error; a missing final padding is tolerated.
pub(crate) fn walk_options(
    opts: &[u8],
    be: bool,
    block_type: u32,
    mut f: impl FnMut(u16, &[u8]) -> Result<(), ErrorKind>,
) -> Result<(), ErrorKind> {
    let mut p = 0usize;
    while opts.len() - p >= 4 {
        let code = u16_at(opts, p, be);
        let length = u16_at(opts, p + 2, be);
        if code == OPT_ENDOFOPT {
            break;
        }
        let room = opts.len() - p - 4;
        let len = usize::from(length);
        if len > room {
            return Err(ErrorKind::OptionOverrun {
                block_type,
                code,
                length,
                room: room as u64,
            });
        }
        f(code, &opts[p + 4..p + 4 + len])?;
        p += 4 + ((len + 3) & !3).min(room);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(opts: &[u8], be: bool) -> Result<Vec<(u16, Vec<u8>)>, ErrorKind> {
        let mut v = Vec::new();
        walk_options(opts, be, 1, |c, val| {
            v.push((c, val.to_vec()));
            Ok(())
        })?;
        Ok(v)
    }

    #[test]
    fn walks_padded_options_until_end_of_options() {
        // if_name "eth0", if_tsresol 9, opt_endofopt, then junk never read.
        let opts = [
            2, 0, 4, 0, b'e', b't', b'h', b'0', 9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
        ];
        assert_eq!(
            collect(&opts, false).unwrap(),
            vec![(2, b"eth0".to_vec()), (9, vec![9])]
        );
        // Big-endian, last option unpadded, no end marker.
        let opts = [0, 9, 0, 1, 6];
        assert_eq!(collect(&opts, true).unwrap(), vec![(9, vec![6])]);
        assert!(collect(&[], false).unwrap().is_empty());
        assert!(collect(&[1, 0], false).unwrap().is_empty());
    }

    #[test]
    fn value_past_the_block_is_an_overrun() {
        // libpcap shb-option-too-long.pcapng: option 0x3030 of length 0x3030.
        let opts = [0x30; 24];
        assert!(matches!(
            collect(&opts, false),
            Err(ErrorKind::OptionOverrun {
                block_type: 1,
                code: 0x3030,
                length: 0x3030,
                room: 20
            })
        ));
    }
}
