//! Which devices play, and how many at a time (paper §V-C.2: "dynamically
//! change the number of simulated flows, apply arbitrary filtering").
//!
//! - A [`DeviceFilter`] is a list of shell-style patterns over device names
//!   (`*` any run of characters, `?` one character, `[EZ]`, `[a-f0-9]` and
//!   `[!0-9]` one of a class or not, `{a,b}` either, `\\*` a literal `*`);
//!   a pattern starting with `!` excludes. A device plays if it matches an
//!   including pattern (or there is none) and no excluding one. It is
//!   decided once per device, before `--devices N` counts it; a filter no
//!   device of the archive passes is an error before the play
//!   ([`DeviceFilter::check_archive`]).
//! - [`DeviceSteps`] is the number of simulated devices live at each moment
//!   of the play: `0s=4,2s=16,5s=8` plays simulated devices 0-3 from the
//!   start, 0-15 from 2 s, 0-7 from 5 s. A simulated device is a flow
//!   index (device index × copies + copy, devices in order of first
//!   appearance), so with `--devices xK` the count ramps copies too. The
//!   moment is the record's due time, so the steps hold in play time
//!   whatever `--fast-forward` does.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use sluice_core::{parse_duration, Nanos};
use std::path::Path;
use std::str::FromStr;

/// Most patterns of one filter and steps of one schedule.
pub const MAX_PATTERNS: usize = 1024;
pub const MAX_STEPS: usize = 4096;

/// Device-name patterns, including and excluding.
#[derive(Clone, Debug, Default)]
pub struct DeviceFilter {
    include: GlobSet,
    exclude: GlobSet,
    /// The patterns as given, for messages.
    given: Vec<String>,
}

impl DeviceFilter {
    /// Compiles `patterns` (each a glob, `!glob` to exclude, or several
    /// separated by commas outside `{...}` and `[...]`).
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, String> {
        let patterns: Vec<&str> = patterns
            .iter()
            .flat_map(|p| split_list(p.as_ref()))
            .collect();
        if patterns.len() > MAX_PATTERNS {
            return Err(format!(
                "{} device patterns: at most {MAX_PATTERNS}",
                patterns.len()
            ));
        }
        let (mut include, mut exclude) = (GlobSetBuilder::new(), GlobSetBuilder::new());
        let mut given = Vec::new();
        for p in patterns {
            let (list, glob) = match p.strip_prefix('!') {
                Some(g) => (&mut exclude, g),
                None => (&mut include, p),
            };
            if glob.is_empty() || glob.len() > 64 {
                return Err(format!(
                    "device pattern '{p}': expected 1 to 64 characters after any '!'"
                ));
            }
            list.add(
                GlobBuilder::new(glob)
                    .literal_separator(false)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| format!("device pattern '{p}': {}", e.kind()))?,
            );
            given.push(p.to_string());
        }
        let built = |b: GlobSetBuilder| b.build().map_err(|e| format!("device patterns: {e}"));
        Ok(DeviceFilter {
            include: built(include)?,
            exclude: built(exclude)?,
            given,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.given.is_empty()
    }

    /// Whether the device named `name` plays.
    pub fn admits(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.is_match(name)) && !self.exclude.is_match(name)
    }

    /// Reads `archive` up to the first record of a device this filter
    /// lets play: an error naming the patterns, the archive and some of
    /// its devices when none does (a play that would send nothing). An
    /// empty filter passes without reading. Memory stays at the reader's
    /// buffer and a few names; an archive that cannot be read, or a bad record, is left
    /// for the play to name.
    pub fn check_archive(&self, archive: &Path) -> Result<(), String> {
        if self.is_empty() {
            return Ok(());
        }
        let Ok(mut r) = sluice_archive::ArchiveReader::open(archive) else {
            return Ok(());
        };
        let (mut seen, mut records) = (Vec::<String>::new(), 0u64);
        while let Ok(Some(rec)) = r.next_record() {
            let name = super::devices::device_name(rec.device);
            if self.admits(&name) {
                return Ok(());
            }
            records += 1;
            if seen.len() < 5 && !seen.contains(&name) {
                seen.push(name);
            }
        }
        let patterns = self
            .given
            .iter()
            .map(|p| format!("'{p}'"))
            .collect::<Vec<_>>()
            .join(", ");
        Err(if records == 0 {
            format!("{patterns}: {} holds no records", archive.display())
        } else {
            format!(
                "{patterns}: no device of {} matches ({records} records read; its devices include {})",
                archive.display(),
                seen.join(", ")
            )
        })
    }
}

/// `a,b{c,d},[,x]` as `a`, `b{c,d}`, `[,x]`: commas split patterns except
/// inside an alternation or a class, or after a backslash.
fn split_list(list: &str) -> Vec<&str> {
    let (mut out, mut from, mut depth, mut class, mut escaped) =
        (Vec::new(), 0, 0u32, false, false);
    for (i, c) in list.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' if !class => class = true,
            ']' if class => class = false,
            '{' if !class => depth += 1,
            '}' if !class => depth = depth.saturating_sub(1),
            ',' if !class && depth == 0 => {
                out.push(&list[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[from..]);
    out
}

/// Live simulated devices over play time: sorted `(from, count)` steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSteps {
    steps: Vec<(Nanos, u32)>,
}

impl FromStr for DeviceSteps {
    type Err = String;
    /// `T=N[,T=N...]`, times rising, the first at 0 (or else no device
    /// plays before it).
    fn from_str(s: &str) -> Result<Self, String> {
        let mut steps: Vec<(Nanos, u32)> = Vec::new();
        for (i, part) in s.split(',').enumerate() {
            let part = part.trim();
            let (t, n) = part.split_once('=').ok_or_else(|| {
                format!("step {} '{part}': expected TIME=COUNT, e.g. 2s=16", i + 1)
            })?;
            let t = parse_duration(t.trim())
                .map_err(|e| format!("step {} '{part}': time: {e}", i + 1))?;
            let n: u32 = n.trim().parse().map_err(|_| {
                format!(
                    "step {} '{part}': '{}' is not a device count",
                    i + 1,
                    n.trim()
                )
            })?;
            if let Some(&(prev, _)) = steps.last() {
                if t <= prev {
                    return Err(format!(
                        "step {} '{part}': times must rise ({t} after {prev})",
                        i + 1
                    ));
                }
            }
            if steps.len() == MAX_STEPS {
                return Err(format!("more than {MAX_STEPS} steps"));
            }
            steps.push((t, n));
        }
        Ok(DeviceSteps { steps })
    }
}

impl std::fmt::Display for DeviceSteps {
    /// `T=N[,T=N...]`, as [`DeviceSteps::from_str`] reads it back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (t, n)) in self.steps.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{t}={n}")?;
        }
        Ok(())
    }
}

impl DeviceSteps {
    /// Simulated devices live at play time `t` (0 before the first step).
    pub fn live_at(&self, t: Nanos) -> u32 {
        match self.steps.partition_point(|&(from, _)| from <= t) {
            0 => 0,
            i => self.steps[i - 1].1,
        }
    }

    /// The most devices ever live.
    pub fn peak(&self) -> u32 {
        self.steps.iter().map(|s| s.1).max().unwrap_or(0)
    }
}

/// What a play leaves out and keeps live.
#[derive(Clone, Debug, Default)]
pub struct DeviceSelect {
    pub filter: DeviceFilter,
    pub steps: Option<DeviceSteps>,
}

impl DeviceSelect {
    pub fn is_empty(&self) -> bool {
        self.filter.is_empty() && self.steps.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_include_and_exclude() {
        let f = DeviceFilter::new(&["meter-*", "!meter-1?", "pump.3"]).unwrap();
        assert!(f.admits("meter-7"));
        assert!(f.admits("meter-100"));
        assert!(!f.admits("meter-13"));
        assert!(f.admits("pump.3"));
        // '.' is literal, not any character.
        assert!(!f.admits("pumpx3"));
        assert!(!f.admits("valve-1"));
        let only_out = DeviceFilter::new(&["!a*"]).unwrap();
        assert!(only_out.admits("b") && !only_out.admits("abc"));
        assert!(DeviceFilter::new::<&str>(&[]).unwrap().admits("x"));
    }

    #[test]
    fn globs_take_classes_ranges_alternatives_and_escapes() {
        let f = DeviceFilter::new(&["*EH[EZ]", "s[0-3]?", "{pump,valve}-[!0-4]", "a\\*"]).unwrap();
        for yes in ["WHEHE", "EHZ", "s01", "s3x", "pump-7", "valve-a", "a*"] {
            assert!(f.admits(yes), "{yes}");
        }
        for no in ["WHEHA", "EH", "s41", "s0", "pump-3", "tank-9", "ab"] {
            assert!(!f.admits(no), "{no}");
        }
        // Commas split patterns outside braces and classes.
        let g = DeviceFilter::new(&["m1,{pump,valve}-[,0]"]).unwrap();
        assert!(g.admits("m1") && g.admits("pump-,") && g.admits("valve-0"));
        assert!(!g.admits("pump") && !g.admits("m1,pump-0"));
        let e = DeviceFilter::new(&["x[ab"]).unwrap_err();
        assert!(e.starts_with("device pattern 'x[ab': unclosed"), "{e}");
    }

    #[test]
    fn bad_patterns_are_named() {
        let e = DeviceFilter::new(&["!"]).unwrap_err();
        assert!(e.contains("'!'"), "{e}");
        let long = "x".repeat(65);
        assert!(DeviceFilter::new(&[long]).is_err());
    }

    #[test]
    fn steps_count_over_time() {
        let s: DeviceSteps = "0s=4, 2s=16,5s=8".parse().unwrap();
        assert_eq!(s.live_at(Nanos(0)), 4);
        assert_eq!(s.live_at(Nanos::from_millis(1999)), 4);
        assert_eq!(s.live_at(Nanos::from_secs(2)), 16);
        assert_eq!(s.live_at(Nanos::from_secs(60)), 8);
        assert_eq!(s.peak(), 16);
        let late: DeviceSteps = "1s=3".parse().unwrap();
        assert_eq!(late.live_at(Nanos(5)), 0);
    }

    #[test]
    fn bad_steps_are_named() {
        for (s, want) in [
            ("2s", "step 1 '2s': expected TIME=COUNT"),
            ("0s=1,1s=x", "step 2 '1s=x': 'x' is not a device count"),
            ("1s=1,1s=2", "step 2 '1s=2': times must rise"),
            ("zz=1", "step 1 'zz=1': time"),
        ] {
            let e = s.parse::<DeviceSteps>().unwrap_err();
            assert!(e.starts_with(want), "{s}: {e}");
        }
    }
}
