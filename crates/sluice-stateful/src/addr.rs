//! Address ranges as the command line gives them: `A`, `A-B` or
//! `A/prefix` (its host addresses: without the network and broadcast
//! addresses where the prefix is shorter than /31).

use std::net::Ipv4Addr;

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{what} {text:?}: {why}")]
pub struct AddrError {
    pub what: &'static str,
    pub text: String,
    pub why: String,
}

fn ip(what: &'static str, text: &str, s: &str) -> Result<u32, AddrError> {
    s.trim()
        .parse::<Ipv4Addr>()
        .map(u32::from)
        .map_err(|_| AddrError {
            what,
            text: text.into(),
            why: format!("{s:?} is not an IPv4 address"),
        })
}

/// The inclusive range `text` names; `what` names it in errors.
pub fn range(what: &'static str, text: &str) -> Result<(u32, u32), AddrError> {
    let err = |why: String| AddrError {
        what,
        text: text.into(),
        why,
    };
    if let Some((a, p)) = text.split_once('/') {
        let base = ip(what, text, a)?;
        let p: u32 = p
            .parse()
            .ok()
            .filter(|&p| p <= 32)
            .ok_or_else(|| err(format!("{p:?} is not a prefix length (0-32)")))?;
        let mask = if p == 0 { 0 } else { u32::MAX << (32 - p) };
        let (net, last) = (base & mask, (base & mask) | !mask);
        return Ok(if p >= 31 {
            (net, last)
        } else {
            (net + 1, last - 1)
        });
    }
    if let Some((a, b)) = text.split_once('-') {
        let (a, b) = (ip(what, text, a)?, ip(what, text, b)?);
        if a > b {
            return Err(err("the first address is above the last".into()));
        }
        return Ok((a, b));
    }
    let a = ip(what, text, text)?;
    Ok((a, a))
}

/// An inclusive port range `LO-HI` (or one port).
pub fn ports(text: &str) -> Result<(u16, u16), AddrError> {
    let err = |why: &str| AddrError {
        what: "--ports",
        text: text.into(),
        why: why.into(),
    };
    let (a, b) = text.split_once('-').unwrap_or((text, text));
    let a: u16 = a.trim().parse().map_err(|_| err("not a port number"))?;
    let b: u16 = b.trim().parse().map_err(|_| err("not a port number"))?;
    if a == 0 || a > b {
        return Err(err("ports run from LO to HI, 1 or more"));
    }
    Ok((a, b))
}

pub fn show(ip: u32) -> String {
    Ipv4Addr::from(ip).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_as_written_and_mistakes_are_named() {
        assert_eq!(
            range("--pool", "10.0.0.0/30").unwrap(),
            (0x0a00_0001, 0x0a00_0002)
        );
        assert_eq!(
            range("--pool", "10.0.0.5-10.0.0.9").unwrap(),
            (0x0a00_0005, 0x0a00_0009)
        );
        assert_eq!(
            range("--pool", "10.0.0.7/32").unwrap(),
            (0x0a00_0007, 0x0a00_0007)
        );
        assert_eq!(
            range("--pool", "10.0.0.7").unwrap(),
            (0x0a00_0007, 0x0a00_0007)
        );
        let e = range("--pool", "10.0.0.9-10.0.0.1").unwrap_err();
        assert!(e.to_string().contains("--pool"), "{e}");
        assert!(range("--pool", "10.0.0.0/33").is_err());
        assert!(range("--pool", "ten").is_err());
        assert_eq!(ports("1000-2000").unwrap(), (1000, 2000));
        assert!(ports("0-5").is_err());
        assert!(ports("9-5").is_err());
    }
}
