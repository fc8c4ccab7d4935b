//! Packet selection (`--include` / `--exclude`): tcpreplay's packet-number
//! lists and tcpprep's rule forms.
//!
//! A rule is `P:LIST` or a bare `LIST` (packet numbers from 1 in each
//! pass: `7,11,20-23,174-`, where `N-` runs to the end), or `S:NETS`,
//! `D:NETS`, `B:NETS`, `E:NETS` (the source, the destination, both or
//! either address in one of the comma-separated networks). `--include`
//! sends the packets a rule matches, `--exclude` the others. As in
//! tcpprep, packets without IP pass address rules untouched.

use sluice_wire::{parse_layers, CidrMap, Ip, Layers};
use std::str::FromStr;

/// What a rule looks at.
#[derive(Clone, Debug, PartialEq)]
enum Rule {
    /// Inclusive ranges of packet numbers; `u64::MAX` ends an open one.
    Packets(Vec<(u64, u64)>),
    Source(Vec<CidrMap>),
    Dest(Vec<CidrMap>),
    Both(Vec<CidrMap>),
    Either(Vec<CidrMap>),
}

/// `--include RULE` or `--exclude RULE`.
#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    rule: Rule,
    /// `--exclude`: the rule's packets are the ones not sent.
    exclude: bool,
}

/// A rule as written (`--include`'s or `--exclude`'s value).
#[derive(Clone, Debug, PartialEq)]
pub struct SelectRule(Rule);

impl FromStr for SelectRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let nets = |list: &str| cidr_list(list).map_err(|e| format!("'{s}': {e}"));
        Ok(SelectRule(match s.split_once(':') {
            Some(("P", list)) => Rule::Packets(numbers(s, list)?),
            Some(("S", list)) => Rule::Source(nets(list)?),
            Some(("D", list)) => Rule::Dest(nets(list)?),
            Some(("B", list)) => Rule::Both(nets(list)?),
            Some(("E", list)) => Rule::Either(nets(list)?),
            Some(("F", _)) => {
                return Err(format!(
                    "'{s}': tcpprep's F: (a BPF filter) is not supported: filter the trace first"
                ))
            }
            Some((k, _)) => {
                return Err(format!(
                    "'{s}': '{k}:' is none of P: (packet numbers), S:, D:, B:, E: (networks)"
                ))
            }
            None => Rule::Packets(numbers(s, s)?),
        }))
    }
}

/// Comma-separated networks (`10.0.0.0/8,2001:db8::/32`), each mapping
/// onto itself.
pub(crate) fn cidr_list(list: &str) -> Result<Vec<CidrMap>, String> {
    list.split(',')
        .map(|n| format!("{n}:{n}").parse::<CidrMap>())
        .collect()
}

/// `7,11,20-23,174-`: inclusive ranges, from 1.
fn numbers(whole: &str, list: &str) -> Result<Vec<(u64, u64)>, String> {
    let num = |n: &str| -> Result<u64, String> {
        if n.len() > 1 && n.starts_with('0') {
            // tcpreplay reads a leading 0 as octal; refused rather than
            // read either way.
            return Err(format!("'{whole}': '{n}' has a leading zero"));
        }
        match n.parse::<u64>() {
            Ok(v) if v >= 1 => Ok(v),
            _ => Err(format!(
                "'{whole}': '{n}' is not a packet number (from 1; lists look like 7,11,20-23,174-)"
            )),
        }
    };
    list.split(',')
        .map(|item| match item.split_once('-') {
            None => num(item).map(|v| (v, v)),
            Some((a, "")) => num(a).map(|v| (v, u64::MAX)),
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if b < a {
                    return Err(format!("'{whole}': '{item}' runs backwards"));
                }
                Ok((a, b))
            }
        })
        .collect()
}

impl Select {
    pub fn include(rule: SelectRule) -> Self {
        Select {
            rule: rule.0,
            exclude: false,
        }
    }

    pub fn exclude(rule: SelectRule) -> Self {
        Select {
            rule: rule.0,
            exclude: true,
        }
    }

    /// Whether packet `number` (from 1 in its pass), an Ethernet frame
    /// (None: of a link type without one), is sent.
    pub fn keeps(&self, number: u64, frame: Option<&[u8]>) -> bool {
        let nets_hit = |nets: &[CidrMap], addr: &[u8]| nets.iter().any(|n| n.matches(addr));
        let hit = match &self.rule {
            Rule::Packets(r) => r.iter().any(|&(a, b)| (a..=b).contains(&number)),
            rule => {
                let l = frame.map(|f| (f, parse_layers(f)));
                let Some((src, dst)) = l.as_ref().and_then(|(f, l)| addresses(f, l)) else {
                    // Address rules pass packets without IP (tcpprep's).
                    return true;
                };
                match rule {
                    Rule::Source(n) => nets_hit(n, src),
                    Rule::Dest(n) => nets_hit(n, dst),
                    Rule::Both(n) => nets_hit(n, src) && nets_hit(n, dst),
                    Rule::Either(n) => nets_hit(n, src) || nets_hit(n, dst),
                    Rule::Packets(_) => unreachable!("matched above"),
                }
            }
        };
        hit != self.exclude
    }
}

/// A frame's source and destination addresses (4 or 16 bytes each), from
/// its parsed layers `l`.
pub(crate) fn addresses<'a>(frame: &'a [u8], l: &Layers) -> Option<(&'a [u8], &'a [u8])> {
    let at = l.l3_offset;
    match l.ip? {
        Ip::V4 { .. } => Some((&frame[at + 12..at + 16], &frame[at + 16..at + 20])),
        Ip::V6 { .. } => Some((&frame[at + 8..at + 24], &frame[at + 24..at + 40])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keeps(rule: &str, exclude: bool, n: u64) -> bool {
        let r: SelectRule = rule.parse().unwrap();
        let s = if exclude {
            Select::exclude(r)
        } else {
            Select::include(r)
        };
        s.keeps(n, None)
    }

    #[test]
    fn packet_lists_read_as_tcpreplay_reads_them() {
        // tcpreplay's own test: --include=7,11,20-23,174- on 179 packets.
        let kept: Vec<u64> = (1..=179)
            .filter(|&n| keeps("7,11,20-23,174-", false, n))
            .collect();
        assert_eq!(kept, [7, 11, 20, 21, 22, 23, 174, 175, 176, 177, 178, 179]);
        // --exclude=23-,11-20,2,3 keeps 1, 4-10, 21, 22.
        let kept: Vec<u64> = (1..=179)
            .filter(|&n| keeps("23-,11-20,2,3", true, n))
            .collect();
        assert_eq!(kept, [1, 4, 5, 6, 7, 8, 9, 10, 21, 22]);
        assert!(keeps("P:5", false, 5) && !keeps("P:5", false, 6));
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for (rule, says) in [
            ("0", "from 1"),
            ("010", "leading zero"),
            ("5-3", "backwards"),
            ("x", "not a packet number"),
            ("Q:1", "'Q:'"),
            ("F:tcp", "BPF"),
            ("S:10.0.0.0/33", "S:10.0.0.0/33"),
        ] {
            let e = rule.parse::<SelectRule>().unwrap_err();
            assert!(e.contains(says), "{rule}: {e}");
        }
    }
}
