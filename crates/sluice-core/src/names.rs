//! Names of fieldless enums as users write them (command line, config
//! files): one table per enum gives `FromStr`, `Display` and the list of
//! names, so the library's type is the one the CLI parses (no mirror
//! enums) and its help lists the values.

/// `named_values!(Type { Variant => "name", ... })` implements `FromStr`
/// (an unknown name lists the known ones), `Display` and `Type::NAMES`.
#[macro_export]
macro_rules! named_values {
    ($ty:ty { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($name),+];
        }

        impl ::std::str::FromStr for $ty {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($name => Ok(Self::$variant),)+
                    _ => Err(format!("'{s}' is not one of: {}", Self::NAMES.join(", "))),
                }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(match self {
                    $(Self::$variant => $name,)+
                })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    #[derive(Debug, PartialEq)]
    enum Mode {
        Fast,
        Exact,
    }
    crate::named_values!(Mode { Fast => "fast", Exact => "exact" });

    #[test]
    fn names_read_back_and_an_unknown_one_lists_them() {
        for m in [Mode::Fast, Mode::Exact] {
            assert_eq!(m.to_string().parse::<Mode>(), Ok(m));
        }
        assert_eq!(
            "slow".parse::<Mode>(),
            Err("'slow' is not one of: fast, exact".to_string())
        );
        assert_eq!(Mode::NAMES, &["fast", "exact"]);
    }
}
