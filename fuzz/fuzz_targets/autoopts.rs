//! Fuzzes the AutoOpts command-line and `--load-opts` file reader behind
//! `sluice tcpreplay|tcprewrite|tcpprep`: arguments (the input split at
//! NUL bytes) and an options file's text must give options or an error,
//! never a panic; what is accepted holds together: an option that takes a
//! value has one, a flag has none, and each appears no more often than
//! allowed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_job::autoopts::{arg, flag, parse, parse_config, Opt, Parsed};

static TABLE: &[Opt] = &[
    arg("infile", Some('i')),
    arg("outfile", Some('o')),
    arg("cachefile", Some('c')),
    flag("topspeed", Some('t')),
    flag("quiet", Some('q')),
    arg("portmap", Some('r')).times(9999),
    arg("pnat", Some('N')).times(2),
    arg("enet-vlan", None),
    arg("enet-vlan-tag", None).needs(&["enet-vlan"]),
    arg("endpoints", Some('e')).needs(&["cachefile"]),
    arg("pps", Some('p')).excludes(&["topspeed"]),
    flag("fixcsum", Some('C')),
];

fn holds(p: &Parsed) {
    for (name, value) in &p.opts {
        let o = TABLE
            .iter()
            .chain(sluice_job::autoopts::COMMON)
            .find(|o| o.name == *name)
            .expect("options come from the table");
        assert_eq!(o.arg, value.is_some(), "{name}");
        let n = p.opts.iter().filter(|(x, _)| x == name).count();
        assert!(o.max == 0 || n <= o.max as usize, "{name} {n} times");
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // --load-opts FILE reads a file: keep the fuzzer off the disk.
    let args: Vec<String> = text
        .split('\0')
        .filter(|a| !a.starts_with("--load") && !a.starts_with("--lo"))
        .map(str::to_string)
        .collect();
    if let Ok(p) = parse("FUZZ", TABLE, &args) {
        holds(&p);
    }
    // Nor through a file's own load-opts line.
    let loads = text.lines().any(|l| l.trim_start().starts_with("lo"));
    if !loads {
        if let Ok(p) = parse_config("FUZZ", TABLE, "fuzz.cfg", &text) {
            holds(&p);
        }
    }
});
