//! Serde for option values that are written as text: a job file, a
//! peer's job and the command line read a value the same way (its
//! `FromStr`, which checks it, or one of [`crate::values`]' parsers), and
//! write it as its `Display` gives it, so that a value read back is the
//! value written.

use serde::de::{Deserialize, Deserializer, Error};
use serde::ser::Serializer;
use std::fmt::Display;
use std::str::FromStr;

/// `text` read by `parse`, an error naming the text.
fn read<T, E: Error>(text: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<T, E> {
    parse(text).map_err(|e| E::custom(format!("'{text}': {e}")))
}

/// The type's own reading of its text.
fn from_str<T: FromStr>(s: &str) -> Result<T, String>
where
    T::Err: Display,
{
    s.parse().map_err(|e: T::Err| e.to_string())
}

pub fn serialize<T: Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
where
    T: FromStr,
    T::Err: Display,
    D: Deserializer<'de>,
{
    parsed(d, from_str)
}

/// `Option<T>` as text or null.
pub mod opt {
    use super::*;

    pub fn serialize<T: Display, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(v),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        parsed_opt(d, from_str)
    }
}

/// `Vec<T>` as a list of texts.
pub mod vec {
    use super::*;
    use serde::ser::SerializeSeq;

    pub fn serialize<T: Display, S: Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for x in v {
            seq.serialize_element(&x.to_string())?;
        }
        seq.end()
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<Vec<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|s| read(s, from_str))
            .collect()
    }
}

/// A value read by `parse`: one of [`crate::values`]' parsers (which
/// check more than the type's `FromStr`, or where the type has none).
pub fn parsed<'de, T, D>(d: D, parse: fn(&str) -> Result<T, String>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    read(&String::deserialize(d)?, parse)
}

/// As [`parsed`], for an optional value.
pub fn parsed_opt<'de, T, D>(
    d: D,
    parse: fn(&str) -> Result<T, String>,
) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
{
    Option::<String>::deserialize(d)?
        .map(|s| read(&s, parse))
        .transpose()
}

/// Declares `mod $name { serialize, deserialize }` for a field read by the
/// value parser `$parse` (`opt` for an `Option`).
macro_rules! parsed_field {
    ($name:ident, $ty:ty, $parse:path) => {
        pub mod $name {
            pub use $crate::text::serialize;
            pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                $crate::text::parsed(d, $parse)
            }
        }
    };
    (opt $name:ident, $ty:ty, $parse:path) => {
        pub mod $name {
            pub use $crate::text::opt::serialize;
            pub fn deserialize<'de, D: serde::Deserializer<'de>>(
                d: D,
            ) -> Result<Option<$ty>, D::Error> {
                $crate::text::parsed_opt(d, $parse)
            }
        }
    };
}
pub(crate) use parsed_field;
