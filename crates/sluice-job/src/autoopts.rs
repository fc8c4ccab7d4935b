//! Command lines as AutoOpts reads them (the option library of tcpreplay,
//! tcprewrite and tcpprep): `--name=VALUE`, `--name VALUE`, a long name
//! cut to any unique prefix, `-xVALUE`, `-x VALUE`, short flags bundled
//! (`-tq`), `--` before operands, and `--load-opts FILE`, whose lines
//! (`name value`, `name=value`, `name: value`, `name`; `#` comments;
//! `[PROGRAM]` sections, of which only the program's own applies) are
//! read where the option stands. Each option's most-times and the
//! options it needs or excludes are checked as AutoOpts checks them.

use std::io::Read;
use std::path::Path;

/// Longest `--load-opts` file read.
const MAX_OPTS_FILE: u64 = 1 << 20;

/// One option of a tool, as its `*_opts.def` defines it.
pub struct Opt {
    pub name: &'static str,
    pub short: Option<char>,
    pub arg: bool,
    /// Most times it may be given (0: any).
    pub max: u32,
    /// Options it needs.
    pub must: &'static [&'static str],
    /// Options it excludes.
    pub cant: &'static [&'static str],
}

/// `Opt` constructors, for short tables.
pub const fn flag(name: &'static str, short: Option<char>) -> Opt {
    Opt {
        name,
        short,
        arg: false,
        max: 1,
        must: &[],
        cant: &[],
    }
}

pub const fn arg(name: &'static str, short: Option<char>) -> Opt {
    Opt {
        name,
        short,
        arg: true,
        max: 1,
        must: &[],
        cant: &[],
    }
}

impl Opt {
    pub const fn times(mut self, max: u32) -> Opt {
        self.max = max;
        self
    }
    pub const fn needs(mut self, must: &'static [&'static str]) -> Opt {
        self.must = must;
        self
    }
    pub const fn excludes(mut self, cant: &'static [&'static str]) -> Opt {
        self.cant = cant;
        self
    }
}

/// A parsed command line: the options in the order given (a config
/// file's where `--load-opts` stood) and the operands.
#[derive(Debug, Default)]
pub struct Parsed {
    pub opts: Vec<(&'static str, Option<String>)>,
    pub operands: Vec<String>,
}

impl Parsed {
    pub fn has(&self, name: &str) -> bool {
        self.opts.iter().any(|(n, _)| *n == name)
    }
    /// The last value of `name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.as_deref())
    }
    /// Every value of `name`, in order.
    pub fn values(&self, name: &str) -> Vec<&str> {
        self.opts
            .iter()
            .filter(|(n, _)| *n == name)
            .filter_map(|(_, v)| v.as_deref())
            .collect()
    }
}

/// Options every AutoOpts program has beside its own.
pub const COMMON: &[Opt] = &[
    arg("load-opts", None).times(0),
    flag("no-load-opts", None),
    arg("save-opts", None),
    flag("help", None),
    flag("more-help", Some('!')),
];

/// Reads the text of an options file (what `--load-opts` reads) against
/// `table`, as if its options were given on a command line; `name` names
/// it in errors (`name:line: ...`).
pub fn parse_config(
    program: &str,
    table: &'static [Opt],
    name: &str,
    text: &str,
) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut reader = Reader {
        program,
        table,
        depth: 0,
    };
    reader.load_text(name, text, &mut p)?;
    check(program, table, &p)?;
    Ok(p)
}

/// Reads `args` (without the program name) against `table`; `program` names
/// the config file section that applies (`TCPREWRITE`).
pub fn parse(program: &str, table: &'static [Opt], args: &[String]) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut reader = Reader {
        program,
        table,
        depth: 0,
    };
    reader.args(args, &mut p)?;
    check(program, table, &p)?;
    Ok(p)
}

struct Reader<'a> {
    program: &'a str,
    table: &'static [Opt],
    /// Config files being read (a file that loads itself ends).
    depth: u32,
}

impl Reader<'_> {
    fn find_long(&self, name: &str) -> Result<&'static Opt, String> {
        let all = || self.table.iter().chain(COMMON.iter());
        if let Some(o) = all().find(|o| o.name == name) {
            return Ok(o);
        }
        let hits: Vec<&'static Opt> = all().filter(|o| o.name.starts_with(name)).collect();
        match hits.as_slice() {
            [o] => Ok(o),
            [] => Err(format!("{}: illegal option -- {name}", self.low())),
            many => Err(format!(
                "{}: ambiguous option -- {name} (could be {})",
                self.low(),
                many.iter()
                    .map(|o| format!("--{}", o.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn find_short(&self, c: char) -> Result<&'static Opt, String> {
        self.table
            .iter()
            .chain(COMMON.iter())
            .find(|o| o.short == Some(c))
            .ok_or_else(|| format!("{}: illegal option -- {c}", self.low()))
    }

    fn low(&self) -> String {
        self.program.to_lowercase()
    }

    fn args(&mut self, args: &[String], p: &mut Parsed) -> Result<(), String> {
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            i += 1;
            if a == "--" {
                p.operands.extend(args[i..].iter().cloned());
                break;
            }
            if let Some(long) = a.strip_prefix("--") {
                let (name, inline) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (long, None),
                };
                let o = self.find_long(name)?;
                let value = if !o.arg {
                    if inline.is_some() {
                        return Err(format!("--{}: takes no value", o.name));
                    }
                    None
                } else if let Some(v) = inline {
                    Some(v)
                } else {
                    let v = args
                        .get(i)
                        .ok_or_else(|| format!("--{}: needs a value", o.name))?;
                    i += 1;
                    Some(v.clone())
                };
                self.take(o, value, p)?;
            } else if a.len() > 1 && a.starts_with('-') {
                let chars: Vec<char> = a[1..].chars().collect();
                let mut k = 0;
                while k < chars.len() {
                    let o = self.find_short(chars[k])?;
                    k += 1;
                    if !o.arg {
                        self.take(o, None, p)?;
                        continue;
                    }
                    let rest: String = chars[k..].iter().collect();
                    let v = if !rest.is_empty() {
                        rest
                    } else {
                        let v = args
                            .get(i)
                            .ok_or_else(|| format!("-{}: needs a value", chars[k - 1]))?;
                        i += 1;
                        v.clone()
                    };
                    self.take(o, Some(v), p)?;
                    break;
                }
            } else {
                p.operands.push(a.clone());
            }
        }
        Ok(())
    }

    fn take(
        &mut self,
        o: &'static Opt,
        value: Option<String>,
        p: &mut Parsed,
    ) -> Result<(), String> {
        if o.name == "load-opts" {
            let file = value.unwrap_or_default();
            return self.load(Path::new(&file), p);
        }
        p.opts.push((o.name, value));
        Ok(())
    }

    /// Reads a config file's lines for this program as options.
    fn load(&mut self, file: &Path, p: &mut Parsed) -> Result<(), String> {
        // An options file is a few lines: a bounded read, so a device or
        // a huge file is refused, not read into memory.
        let mut text = String::new();
        std::fs::File::open(file)
            .and_then(|f| f.take(MAX_OPTS_FILE + 1).read_to_string(&mut text))
            .map_err(|e| format!("--load-opts {}: {e}", file.display()))?;
        if text.len() as u64 > MAX_OPTS_FILE {
            return Err(format!(
                "--load-opts {}: longer than {MAX_OPTS_FILE} bytes",
                file.display()
            ));
        }
        self.load_text(&file.display().to_string(), &text, p)
    }

    /// The lines of a config file named `name`, read as options.
    fn load_text(&mut self, name: &str, text: &str, p: &mut Parsed) -> Result<(), String> {
        if self.depth >= 8 {
            return Err(format!("{name}: --load-opts nested too deep"));
        }
        self.depth += 1;
        let mut mine = true;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(sec) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                mine = sec.eq_ignore_ascii_case(self.program);
                continue;
            }
            if !mine {
                continue;
            }
            let at = |e: String| format!("{name}:{}: {e}", n + 1);
            let split = line
                .find(|c: char| c.is_whitespace() || c == '=' || c == ':')
                .unwrap_or(line.len());
            let opt = &line[..split];
            let rest = line[split..].trim_start_matches([' ', '\t']);
            let rest = rest.strip_prefix(['=', ':']).unwrap_or(rest).trim();
            let o = self.find_long(opt).map_err(at)?;
            let value = if o.arg {
                if rest.is_empty() {
                    return Err(at(format!("{opt}: needs a value")));
                }
                Some(unquote(rest))
            } else {
                None
            };
            self.take(o, value, p).map_err(at)?;
        }
        self.depth -= 1;
        Ok(())
    }
}

/// A config value in double quotes loses them (C escapes `\"`, `\\`, `\n`).
fn unquote(v: &str) -> String {
    let Some(inner) = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) else {
        return v.to_string();
    };
    let mut out = String::new();
    let mut it = inner.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Most-times, needed and excluded options, as AutoOpts words them.
fn check(program: &str, table: &[Opt], p: &Parsed) -> Result<(), String> {
    let prog = program.to_lowercase();
    for o in table.iter().chain(COMMON.iter()) {
        let n = p.opts.iter().filter(|(x, _)| *x == o.name).count();
        if n == 0 {
            continue;
        }
        if o.max > 0 && n > o.max as usize {
            return Err(format!(
                "{prog}: the '{}' option can only be specified {} time{}",
                o.name,
                o.max,
                if o.max == 1 { "" } else { "s" }
            ));
        }
        if let Some(m) = o.must.iter().find(|m| !p.has(m)) {
            return Err(format!("{prog}: option '{}' needs option '{m}'", o.name));
        }
        if let Some(c) = o.cant.iter().find(|c| p.has(c)) {
            return Err(format!(
                "{prog}: option '{}' cannot be used with option '{c}'",
                o.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    static T: &[Opt] = &[
        arg("infile", Some('i')),
        arg("outfile", Some('o')),
        flag("topspeed", Some('t')),
        flag("quiet", Some('q')),
        arg("portmap", Some('r')).times(0),
        arg("enet-vlan", None),
        arg("enet-vlan-tag", None).needs(&["enet-vlan"]),
        arg("pps", Some('p')).excludes(&["topspeed"]),
    ];

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn long_short_bundled_prefixed_and_operands() {
        let p = parse(
            "TEST",
            T,
            &words("-tq -ia.pcap --outf=b.pcap -r 1:2 --portmap 3:4 x y"),
        )
        .unwrap();
        assert!(p.has("topspeed") && p.has("quiet"));
        assert_eq!(p.value("infile"), Some("a.pcap"));
        assert_eq!(p.value("outfile"), Some("b.pcap"));
        assert_eq!(p.values("portmap"), ["1:2", "3:4"]);
        assert_eq!(p.operands, ["x", "y"]);
        let p = parse("TEST", T, &words("-- -t")).unwrap();
        assert_eq!(p.operands, ["-t"]);
    }

    #[test]
    fn autoopts_checks_name_the_options() {
        let e = |s: &str| parse("TEST", T, &words(s)).unwrap_err();
        assert!(e("--enet").contains("ambiguous option -- enet"));
        assert!(e("--nope").contains("illegal option -- nope"));
        assert!(e("-i a -i b").contains("'infile' option can only be specified 1 time"));
        assert!(e("--enet-vlan-tag 4").contains("option 'enet-vlan-tag' needs option 'enet-vlan'"));
        assert!(e("-t -p 5").contains("option 'pps' cannot be used with option 'topspeed'"));
        assert!(e("-t=1").contains("illegal option -- ="));
        assert!(e("--topspeed=1").contains("--topspeed: takes no value"));
        assert!(e("-i").contains("-i: needs a value"));
    }

    #[test]
    fn config_text_reads_its_own_section_with_line_numbers() {
        let text = "# c\ntopspeed\n[OTHER]\npps 5\n[TEST]\ninfile \"a b.pcap\"\noutfile=o.pcap\nportmap: 1:2\n";
        let p = parse_config("TEST", T, "cfg", text).unwrap();
        assert!(p.has("topspeed") && !p.has("pps"));
        assert_eq!(p.value("infile"), Some("a b.pcap"));
        assert_eq!(p.value("outfile"), Some("o.pcap"));
        assert_eq!(p.value("portmap"), Some("1:2"));
        let e = parse_config("TEST", T, "cfg", "[TEST]\n\nbogus 1\n").unwrap_err();
        assert_eq!(e, "cfg:3: test: illegal option -- bogus");
        let e = parse_config("TEST", T, "cfg", "infile\n").unwrap_err();
        assert_eq!(e, "cfg:1: infile: needs a value");
    }
}
