//! tcpprep's modifiers of a split, shared by `replay --split` and `prep`.

use clap::Args;
use sluice_source::{Split, SplitMode};

#[derive(Args, Debug, Clone, Default)]
pub struct SplitOpts {
    /// Swap the sides of a cidr:, regex: or mac: split (tcpprep's option of that name).
    #[arg(long, help_heading = "Two ports")]
    pub reverse: bool,
    /// Non-IP packets (and in port mode IP without TCP/UDP) are client to server, the first port (tcpprep's option of that name).
    #[arg(long, help_heading = "Two ports")]
    pub nonip: bool,
    /// auto:KIND: a host is a server when it looks one at least this many times as often as a client (tcpprep's option of that name; default 2).
    #[arg(long, value_name = "R", help_heading = "Two ports")]
    pub ratio: Option<f64>,
    /// auto:router: the narrowest network mask tried, 0-32 (tcpprep's option of that name; default 30).
    #[arg(long, value_name = "BITS", help_heading = "Two ports")]
    pub minmask: Option<u8>,
    /// auto:router: the widest network mask tried, 0-32, below the narrowest (tcpprep's option of that name; default 8).
    #[arg(long, value_name = "BITS", help_heading = "Two ports")]
    pub maxmask: Option<u8>,
}

impl SplitOpts {
    /// The split of `mode` with these modifiers, checked as tcpprep checks
    /// them (errors name the option).
    pub fn split(&self, mode: SplitMode) -> Result<Split, String> {
        let auto = matches!(mode, SplitMode::TcpAuto(_));
        for (given, name) in [
            (self.ratio.is_some(), "--ratio"),
            (self.minmask.is_some(), "--minmask"),
            (self.maxmask.is_some(), "--maxmask"),
        ] {
            if given && !auto {
                return Err(format!(
                    "{name} applies to the auto:KIND splits (as in tcpprep)"
                ));
            }
        }
        // --ratio's value and --reverse's mode are checked where the split
        // is made (Splitter::new), for every caller.
        let ratio = self.ratio.unwrap_or(2.0);
        let (min, max) = (self.minmask.unwrap_or(30), self.maxmask.unwrap_or(8));
        if min > 32 || max > 32 {
            return Err(format!(
                "--minmask {min} / --maxmask {max}: masks are 0 to 32 bits"
            ));
        }
        if min <= max {
            return Err(format!(
                "--minmask {min} must be greater than --maxmask {max} (tcpprep's order: the narrowest first)"
            ));
        }
        Ok(Split {
            mode,
            reverse: self.reverse,
            nonip: self.nonip,
            ratio,
        })
    }
}
