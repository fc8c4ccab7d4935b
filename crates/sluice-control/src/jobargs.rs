//! The options a distributed job may carry: an allow-list per command.
//!
//! A worker runs what a controller asks as root, so a job's options must
//! not name anything on the worker's filesystem (a second output,
//! `--summary-json`, a path), nor set what the worker sets itself (its
//! sink, start, share and outputs). Every file a job reads is uploaded:
//! an option that reads a file (series `--map`) takes the plain name of an
//! upload, which the worker turns into its own path. Options missing from
//! the list are refused: a new option reaches workers only once it is
//! added here (a test in the CLI keeps the list and the command line in
//! step).

use crate::pb;

/// `(long name, takes a value)` of the options every sending command has.
const RUN: &[(&str, bool)] = &[
    ("limit", true),
    ("duration", true),
    ("src-mac", true),
    ("dst-mac", true),
    ("threads", true),
    ("cpu", true),
    ("no-pin", false),
    ("rt", false),
    ("tx-mode", true),
    ("csum-offload", false),
    ("xdp-mode", true),
    ("tx-queues", true),
    ("launch-time", true),
    ("rx-stamp", true),
    ("quiet", false),
    ("drift", true),
    ("late-threshold", true),
    ("spin", true),
    ("clock", true),
];

const REPLAY: &[(&str, bool)] = &[
    ("multiplier", true),
    ("pps", true),
    ("mbps", true),
    ("topspeed", false),
    ("loop", true),
    ("loopdelay", true),
    ("loopdelay-ms", true),
    ("loopdelay-ns", true),
    ("preload", false),
    ("preload-max", true),
    ("max-gap", true),
    ("payload", true),
    ("skip-unsupported", false),
    ("enet-dmac", true),
    ("enet-smac", true),
    ("endpoints", true),
    ("srcipmap", true),
    ("dstipmap", true),
    ("portmap", true),
    ("ttl", true),
    ("tos", true),
    ("pnat", true),
    ("seed", true),
    ("unique-ip", false),
    ("enet-vlan", true),
    ("enet-vlan-tag", true),
    ("enet-vlan-pri", true),
    ("enet-vlan-cfi", true),
    ("enet-vlan-proto", true),
    ("mtu-trunc", false),
    ("mtu", true),
    ("fixlen", true),
    ("fixcsum", false),
    ("tunnel", true),
];

const FLOWS: &[(&str, bool)] = &[
    ("planner", true),
    ("planners", true),
    ("seed", true),
    ("stamp", false),
    ("topspeed", false),
];

const SERIES: &[(&str, bool)] = &[
    ("tight-loop", true),
    ("fast-forward", true),
    ("max-gap", true),
    ("ooo-prob", true),
    ("ooo-window", true),
    ("ooo-threads", true),
    ("devices", true),
    ("device-filter", true),
    ("device-steps", true),
    ("dst-ip", true),
    ("dst-port", true),
    ("payload", true),
    ("mtu", true),
    ("seed", true),
    ("buffer-size", true),
    ("workers", true),
    ("queues", true),
    ("preload", false),
    ("preload-max", true),
    ("rescue-after", true),
    ("no-rescue", false),
];

/// Options whose value names an uploaded file (by its plain name).
const SERIES_FILES: &[&str] = &["map"];

const PROFILE: &[(&str, bool)] = &[
    ("mode", true),
    ("sample", true),
    ("keep", true),
    ("cutoff", true),
    ("queues", true),
    ("scale", true),
    ("seed", true),
];

/// Short options and the long ones they stand for.
const SHORT: &[(char, &str)] = &[('x', "multiplier"), ('q', "quiet")];

/// The allowed options of `command`: `(long name, takes a value)`.
pub fn allowed(command: pb::Command) -> Vec<(&'static str, bool)> {
    let own: &[(&str, bool)] = match command {
        pb::Command::Replay => REPLAY,
        pb::Command::Flows => FLOWS,
        pb::Command::Series => SERIES,
        pb::Command::Profile => PROFILE,
        pb::Command::Unspecified => return Vec::new(),
    };
    let files = file_options(command).iter().map(|n| (*n, true));
    RUN.iter().chain(own).copied().chain(files).collect()
}

/// The options of `command` whose value is the plain name of an upload.
pub fn file_options(command: pb::Command) -> &'static [&'static str] {
    match command {
        pb::Command::Series => SERIES_FILES,
        _ => &[],
    }
}

/// Whether `name` may name an upload: one plain component, no leading dot
/// (no `..`, no hidden file), printable, at most 128 characters.
pub fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= 128
        && !name.starts_with('.')
        && !name.contains('/')
        && name.chars().all(|c| !c.is_control())
}

/// Refuses, naming it, the first word of `args` that is not an allowed
/// option of `command` or its value.
pub fn check(command: pb::Command, args: &[String]) -> Result<(), String> {
    resolve(command, args, |n| Some(n.to_string())).map(drop)
}

/// [`check`], and every upload-valued option's name replaced by
/// `upload(name)`: None refuses the name (no such upload).
pub fn resolve(
    command: pb::Command,
    args: &[String],
    upload: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, String> {
    let allowed = allowed(command);
    let files = file_options(command);
    let mut out = Vec::with_capacity(args.len());
    let mut words = args.iter();
    while let Some(w) = words.next() {
        if let Some((n, v)) = w.strip_prefix("--").and_then(|l| l.split_once('=')) {
            if files.contains(&n) {
                out.push(format!("--{n}"));
                out.push(upload_path(n, v, &upload)?);
                continue;
            }
        } else if let Some(n) = w.strip_prefix("--").filter(|n| files.contains(n)) {
            let v = words
                .next()
                .ok_or_else(|| format!("option '--{n}' needs a value"))?;
            out.push(w.clone());
            out.push(upload_path(n, v, &upload)?);
            continue;
        }
        out.push(w.clone());
        let (name, inline) = if let Some(long) = w.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, _)) => (n.to_string(), true),
                None => (long.to_string(), false),
            }
        } else if let Some(short) = w.strip_prefix('-').filter(|s| !s.is_empty()) {
            let mut chars = short.chars();
            let c = chars.next().unwrap_or_default();
            let Some((_, long)) = SHORT.iter().find(|(s, _)| *s == c) else {
                return Err(refused(w));
            };
            let rest = chars.next().is_some();
            let takes_value = allowed.iter().any(|(n, v)| n == long && *v);
            if rest && !takes_value {
                // clap reads `-qtX` as `-q -t X`: the rest is more options,
                // which this check would otherwise not see.
                return Err(format!(
                    "'{}': short options bundled in one word are not allowed in a \
                     distributed job; write each apart",
                    shown(w)
                ));
            }
            (long.to_string(), rest)
        } else {
            return Err(format!(
                "'{}': a distributed job takes options only (its input is uploaded)",
                shown(w)
            ));
        };
        let Some(&(_, takes_value)) = allowed.iter().find(|(n, _)| *n == name) else {
            return Err(refused(w));
        };
        if takes_value && !inline {
            match words.next() {
                Some(v) => out.push(v.clone()),
                None => return Err(format!("option '--{name}' needs a value")),
            }
        }
    }
    Ok(out)
}

/// The worker's path of the upload option `--{option}` names.
fn upload_path(
    option: &str,
    name: &str,
    upload: &impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    if !plain_name(name) {
        return Err(format!(
            "option '--{option}': '{}' is not the plain name of an uploaded file \
             (list the file in the plan's job.files; no directories)",
            shown(name)
        ));
    }
    upload(name).ok_or_else(|| {
        format!(
            "option '--{option}': no uploaded file '{}' (list it in the plan's job.files)",
            shown(name)
        )
    })
}

fn refused(word: &str) -> String {
    format!(
        "option '{}' is not allowed in a distributed job: it names a file on the worker, \
         sets what the worker sets itself, or is unknown",
        shown(word)
    )
}

/// Text from a peer as an error or a log line shows it: escaped, at most
/// 64 characters.
pub fn shown(word: &str) -> String {
    let mut s: String = word
        .chars()
        .take(64)
        .flat_map(char::escape_default)
        .collect();
    if word.chars().count() > 64 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_that_name_files_or_are_the_workers_own_are_refused() {
        let ok = words(&["--pps", "10k", "--topspeed", "-x", "2", "--ttl=5", "-q"]);
        assert_eq!(check(pb::Command::Replay, &ok), Ok(()));
        for bad in [
            &["--map", "/etc/shadow"][..],
            &["--to2", "pcap:/etc/passwd"],
            &["--split", "cache:/etc/shadow"],
            &["--summary-json", "/root/.bashrc"],
            &["--stats-json=/tmp/x"],
            &["--to", "pcap:/tmp/x"],
            &["--start-at", "0"],
            &["--share", "1/2"],
            &["/etc/shadow"],
            &["--no-such-option"],
            &["-t", "pcap:/x"],
            &["-qtpcap:/tmp/x"],
        ] {
            let e = check(pb::Command::Replay, &words(bad)).unwrap_err();
            assert!(e.contains(bad[0].split('=').next().unwrap()), "{e}");
            assert!(!e.contains("root:"), "{e}");
        }
        // A map names an upload, never a path.
        assert!(check(pb::Command::Series, &words(&["--map", "m.csv"])).is_ok());
        for bad in ["/etc/shadow", "../m.csv", ".m", "a/b"] {
            let e = check(pb::Command::Series, &words(&["--map", bad])).unwrap_err();
            assert!(e.contains("plain name"), "{e}");
        }
        let up = |n: &str| (n == "m.csv").then(|| format!("/w/{n}"));
        assert_eq!(
            resolve(pb::Command::Series, &words(&["--map=m.csv", "-q"]), up).unwrap(),
            words(&["--map", "/w/m.csv", "-q"])
        );
        let e = resolve(pb::Command::Series, &words(&["--map", "n.csv"]), up).unwrap_err();
        assert!(e.contains("no uploaded file 'n.csv'"), "{e}");
        assert!(check(pb::Command::Replay, &words(&["--map", "m.csv"])).is_err());
        assert!(check(pb::Command::Flows, &words(&["--pps", "1"])).is_err());
        assert!(check(pb::Command::Replay, &words(&["--pps"])).is_err());
        let long = "--".to_string() + &"a\n".repeat(100);
        let e = check(pb::Command::Replay, &[long]).unwrap_err();
        assert!(!e.contains('\n') && e.len() < 400, "{e}");
    }
}
