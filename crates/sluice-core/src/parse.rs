//! Parsing of the human units the CLI and config files accept:
//! durations (`250ns`, `10us`, `1.5ms`, `2s`, `1m`), rates and counts with SI
//! suffixes (`100k`, `1.5M`, `2G`).

use crate::time::Nanos;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("empty value")]
    Empty,
    #[error("'{0}' is not a number")]
    NotANumber(String),
    #[error("'{value}': unknown unit '{unit}' (expected {expected})")]
    UnknownUnit {
        value: String,
        unit: String,
        expected: &'static str,
    },
    #[error("'{0}' must not be negative")]
    Negative(String),
    #[error("'{0}' is too large")]
    TooLarge(String),
    #[error("'{0}': a rate must be more than 0")]
    ZeroRate(String),
    #[error("'{0}': a bare number needs a unit: {0}s, {0}ms, {0}us or {0}ns")]
    NoUnit(String),
}

fn split_number(s: &str) -> Result<(f64, &str), ParseError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(ParseError::Empty);
    }
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let v: f64 = num
        .parse()
        .map_err(|_| ParseError::NotANumber(s.to_string()))?;
    if !v.is_finite() {
        return Err(ParseError::NotANumber(s.to_string()));
    }
    if v < 0.0 {
        return Err(ParseError::Negative(s.to_string()));
    }
    Ok((v, unit.trim()))
}

fn checked_u64(v: f64, s: &str) -> Result<u64, ParseError> {
    if v >= u64::MAX as f64 {
        return Err(ParseError::TooLarge(s.to_string()));
    }
    Ok(v.round() as u64)
}

/// Parses a duration. A bare number is refused (its unit would be a guess),
/// except 0.
pub fn parse_duration(s: &str) -> Result<Nanos, ParseError> {
    let (v, unit) = split_number(s)?;
    let scale = match unit {
        "" if v == 0.0 => 0.0,
        "" => return Err(ParseError::NoUnit(s.trim().to_string())),
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(ParseError::UnknownUnit {
                value: s.to_string(),
                unit: unit.to_string(),
                expected: "ns, us, ms, s, m or h",
            })
        }
    };
    checked_u64(v * scale, s).map(Nanos)
}

fn si_scale(s: &str, unit: &str) -> Result<f64, ParseError> {
    Ok(match unit {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        _ => {
            return Err(ParseError::UnknownUnit {
                value: s.to_string(),
                unit: unit.to_string(),
                expected: "k, M or G",
            })
        }
    })
}

/// Parses a rate such as `100k` or `1.5M` into a positive float.
pub fn parse_rate(s: &str) -> Result<f64, ParseError> {
    let (v, unit) = split_number(s)?;
    let v = v * si_scale(s, unit)?;
    if v == 0.0 {
        return Err(ParseError::ZeroRate(s.to_owned()));
    }
    Ok(v)
}

/// Parses a count such as `1M` or `250000`.
pub fn parse_count(s: &str) -> Result<u64, ParseError> {
    let (v, unit) = split_number(s)?;
    checked_u64(v * si_scale(s, unit)?, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ns"), Ok(Nanos(250)));
        assert_eq!(parse_duration("10us"), Ok(Nanos(10_000)));
        assert_eq!(parse_duration("1.5ms"), Ok(Nanos(1_500_000)));
        assert_eq!(parse_duration("2s"), Ok(Nanos(2_000_000_000)));
        assert_eq!(parse_duration("3"), Err(ParseError::NoUnit("3".into())));
        assert_eq!(parse_duration("0"), Ok(Nanos(0)));
        assert_eq!(parse_duration("1m"), Ok(Nanos(60_000_000_000)));
        assert!(matches!(
            parse_duration("5parsecs"),
            Err(ParseError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_duration("-1s"),
            Err(ParseError::Negative(_))
        ));
        assert!(matches!(parse_duration(""), Err(ParseError::Empty)));
        assert!(matches!(
            parse_duration("abc"),
            Err(ParseError::NotANumber(_))
        ));
    }

    #[test]
    fn rates_and_counts() {
        assert_eq!(parse_rate("100k"), Ok(100_000.0));
        assert_eq!(parse_rate("1.5M"), Ok(1_500_000.0));
        assert!(parse_rate("0").is_err());
        assert_eq!(parse_count("1M"), Ok(1_000_000));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert!(parse_count("1e999").is_err());
    }
}

/// Rates in documents (sessions, profiles) as the command line takes
/// them: a number, or text with an SI suffix (`10k`, `1.5M`), through
/// `#[serde(deserialize_with = ...)]`.
pub mod de {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrText {
        Num(f64),
        Text(String),
    }

    fn rate_of<E: serde::de::Error>(v: NumOrText) -> Result<f64, E> {
        match v {
            NumOrText::Num(n) => Ok(n),
            NumOrText::Text(t) => super::parse_rate(&t).map_err(E::custom),
        }
    }

    /// An optional rate: `pps: 10k` or `pps: 10000`.
    pub fn opt_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Option::<NumOrText>::deserialize(d)?
            .map(rate_of)
            .transpose()
    }

    /// An optional pair of rates: `pps: [1k, 10k]`.
    pub fn opt_rate_pair<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[f64; 2]>, D::Error> {
        match Option::<[NumOrText; 2]>::deserialize(d)? {
            None => Ok(None),
            Some([a, b]) => Ok(Some([rate_of(a)?, rate_of(b)?])),
        }
    }
}
