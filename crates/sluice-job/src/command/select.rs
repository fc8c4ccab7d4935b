//! `--include` / `--exclude` (tcpreplay's and tcpprep's packet selection),
//! shared by `replay` and `prep`.

use clap::Args;
use sluice_source::{Select, SelectRule};

#[derive(Args, Debug, Clone, Default)]
pub struct SelectOpts {
    /// Send only these packets: numbers from 1 in each pass (7,11,20-23,174-, as tcpreplay; or P:LIST as tcpprep), or S:NETS, D:NETS, B:NETS, E:NETS (source, destination, both or either address in the networks, as tcpprep).
    #[arg(long, value_name = "RULE", conflicts_with = "exclude")]
    pub include: Option<SelectRule>,
    /// Send all but these packets (the same rules as the include option).
    #[arg(long, value_name = "RULE")]
    pub exclude: Option<SelectRule>,
}

impl SelectOpts {
    pub fn select(&self) -> Option<Select> {
        match (&self.include, &self.exclude) {
            (Some(r), _) => Some(Select::include(r.clone())),
            (None, Some(r)) => Some(Select::exclude(r.clone())),
            (None, None) => None,
        }
    }
}
