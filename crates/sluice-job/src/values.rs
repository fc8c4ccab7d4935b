//! Parsers of option values, each written once: durations, rates, counts,
//! byte sizes, probabilities, CPU lists and the named values of library
//! enums.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use sluice_core::{parse_count, parse_duration, parse_rate, Nanos};
use std::fmt;
use std::str::FromStr;

pub fn duration(s: &str) -> Result<Nanos, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// A duration that must be more than zero (`--duration 0` would send one
/// packet in one mode and none in another).
pub fn positive_duration(s: &str) -> Result<Nanos, String> {
    match duration(s)? {
        Nanos(0) => Err(format!("'{s}': must be more than 0")),
        d => Ok(d),
    }
}

pub fn rate(s: &str) -> Result<f64, String> {
    parse_rate(s).map_err(|e| e.to_string())
}

pub fn count(s: &str) -> Result<u64, String> {
    parse_count(s).map_err(|e| e.to_string())
}

/// Furthest ahead a `--start-at` instant may be.
pub const MAX_START_AHEAD_NS: u64 = 7 * 24 * 3600 * 1_000_000_000;

/// A `--start-at` instant: ns since the epoch, at most
/// [`MAX_START_AHEAD_NS`] from now (a later one is a typo that would wait
/// for years).
pub fn start_instant(s: &str) -> Result<u64, String> {
    let at: u64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not an instant in ns since the epoch"))?;
    let now = sluice_sys::clock::realtime_ns();
    if at > now.saturating_add(MAX_START_AHEAD_NS) {
        return Err(format!(
            "{at} is {:.1} days from now: a start may be at most 7 days ahead",
            (at - now) as f64 / 86_400e9
        ));
    }
    Ok(at)
}

/// A count of at least 1 (where 0 would make the run do nothing, or
/// drop everything, without saying so).
pub fn positive_count(s: &str) -> Result<u64, String> {
    match count(s)? {
        0 => Err(format!("'{s}': must be at least 1")),
        n => Ok(n),
    }
}

/// A share of frames in percent, `0 <= PCT <= 100` (`10` or `10%`).
pub fn loss_percent(s: &str) -> Result<f64, String> {
    match s.strip_suffix('%').unwrap_or(s).parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("'{s}' is not a percentage between 0 and 100")),
    }
}

pub fn probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("'{s}' is not a probability between 0 and 1")),
    }
}

/// Where `--metrics` listens: `ADDR:PORT`, or a bare `PORT` on the
/// loopback address (127.0.0.1).
pub fn listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok((std::net::Ipv4Addr::LOCALHOST, port).into());
    }
    s.parse()
        .map_err(|_| format!("'{s}' is not PORT or ADDR:PORT (e.g. 9464, 127.0.0.1:9464)"))
}

/// A comma-separated CPU list (a newtype: clap reads `Option<Vec<T>>` as a
/// repeated option of T, not as one value parsed into a list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

impl fmt::Display for CpuList {
    /// Comma-separated, as [`cpus`] and [`queues`] read it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text: Vec<String> = self.0.iter().map(|c| c.to_string()).collect();
        f.write_str(&text.join(","))
    }
}

pub fn cpus(s: &str) -> Result<CpuList, String> {
    sluice_sys::cpus::parse_cpu_list(s).map(CpuList)
}

/// A comma-separated list of interface queues (written as a CPU list).
pub fn queues(s: &str) -> Result<CpuList, String> {
    sluice_sys::cpus::parse_queue_list(s).map(CpuList)
}

/// Bytes, written with an optional binary suffix: 65536, 512K, 64M, 1G.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub usize);

impl FromStr for Size {
    type Err = String;

    fn from_str(s: &str) -> Result<Size, String> {
        let (num, mul) = match s.chars().last() {
            Some('K' | 'k') => (&s[..s.len() - 1], 1usize << 10),
            Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
            Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
            _ => (s, 1),
        };
        num.parse::<usize>()
            .ok()
            .and_then(|n| n.checked_mul(mul))
            .map(Size)
            .ok_or_else(|| format!("'{s}' is not a size (e.g. 65536, 512K, 64M)"))
    }
}

impl fmt::Display for Size {
    /// The largest binary suffix that divides the size exactly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
            if n != 0 && n & ((1 << shift) - 1) == 0 {
                return write!(f, "{}{suffix}", n >> shift);
            }
        }
        write!(f, "{n}")
    }
}

/// The parser of a library enum by its names (`named_values!`): the help
/// lists the names, and a wrong one is refused with the list.
pub fn named<T>(names: &'static [&'static str]) -> impl TypedValueParser<Value = T>
where
    T: FromStr<Err = String> + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(names).try_map(|s| s.parse::<T>())
}

/// A duration with an optional sign (`-2ms`, `+5us`), in ns.
pub fn signed_duration(s: &str) -> Result<i64, String> {
    match s.strip_prefix('-') {
        Some(rest) => duration(rest).map(|n| -(n.0 as i64)),
        None => duration(s.strip_prefix('+').unwrap_or(s)).map(|n| n.0 as i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_and_print_with_binary_suffixes() {
        for (text, n) in [
            ("65536", 65_536),
            ("512K", 512 << 10),
            ("64M", 64 << 20),
            ("1G", 1 << 30),
        ] {
            assert_eq!(text.parse::<Size>(), Ok(Size(n)));
        }
        assert_eq!(Size(64 << 20).to_string(), "64M");
        assert_eq!(Size(1000).to_string(), "1000");
        assert!("12Q".parse::<Size>().is_err());
        assert!("18446744073709551615G".parse::<Size>().is_err());
    }

    #[test]
    fn a_bare_port_listens_on_loopback() {
        assert_eq!(listen_addr("9464"), Ok("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(listen_addr("0.0.0.0:80"), Ok("0.0.0.0:80".parse().unwrap()));
        assert_eq!(listen_addr("[::1]:9464"), Ok("[::1]:9464".parse().unwrap()));
        assert!(listen_addr("localhost")
            .unwrap_err()
            .contains("PORT or ADDR:PORT"));
    }

    #[test]
    fn a_probability_is_between_0_and_1() {
        assert_eq!(probability("0.25"), Ok(0.25));
        assert!(probability("1.5").is_err());
        assert!(probability("x").is_err());
    }
}
