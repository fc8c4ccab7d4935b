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

/// Most bytes every `--load-opts` file of one command line reads,
/// together (a file loaded twice counts twice).
const MAX_OPTS_BYTES: u64 = 1 << 20;
/// Most `--load-opts` files one command line reads, together: nesting is
/// bounded by depth, fan-out (a file that loads another many times) by
/// this.
const MAX_OPTS_FILES: u32 = 64;

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
    let mut reader = Reader::new(program, table);
    reader.load_text(name, text, &mut p)?;
    check(program, table, &p)?;
    Ok(p)
}

/// Reads `args` (without the program name) against `table`; `program` names
/// the config file section that applies (`TCPREWRITE`).
pub fn parse(program: &str, table: &'static [Opt], args: &[String]) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut reader = Reader::new(program, table);
    reader.args(args, &mut p)?;
    check(program, table, &p)?;
    Ok(p)
}

struct Reader<'a> {
    program: &'a str,
    table: &'static [Opt],
    /// Config files being read (a file that loads itself ends).
    depth: u32,
    /// Config files read so far, and their bytes, together.
    files: u32,
    bytes: u64,
    /// Where each file being read loaded the next (`a.opts:3`), for the
    /// one error that names the chain.
    reading: Vec<String>,
    /// The files being read, resolved.
    open: Vec<std::path::PathBuf>,
}

impl<'a> Reader<'a> {
    /// A reader of `program`'s options in `table`, nothing read yet.
    fn new(program: &'a str, table: &'static [Opt]) -> Self {
        Reader {
            program,
            table,
            depth: 0,
            files: 0,
            bytes: 0,
            reading: Vec::new(),
            open: Vec::new(),
        }
    }

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
        let shown = file.display().to_string();
        self.files += 1;
        if self.files > MAX_OPTS_FILES {
            return Err(self.chained(format!(
                "--load-opts {shown}: more than {MAX_OPTS_FILES} option files in all"
            )));
        }
        // A bounded read, so a device or a huge file is refused, not read
        // into memory; what is left of the budget of every file together.
        let left = MAX_OPTS_BYTES - self.bytes;
        let mut text = String::new();
        std::fs::File::open(file)
            .and_then(|f| f.take(left + 1).read_to_string(&mut text))
            .map_err(|e| self.chained(format!("--load-opts {shown}: {e}")))?;
        if text.len() as u64 > left {
            return Err(self.chained(format!(
                "--load-opts {shown}: the option files pass {MAX_OPTS_BYTES} bytes in all"
            )));
        }
        self.bytes += text.len() as u64;
        // A file that loads itself, directly or through others, is a loop
        // the depth limit would only cut after repeating it.
        let id = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        if self.open.contains(&id) {
            return Err(self.chained(format!(
                "--load-opts {shown}: loads itself (a file being read)"
            )));
        }
        self.open.push(id);
        let read = self.load_text(&shown, &text, p);
        self.open.pop();
        read
    }

    /// `e`, after the chain of files that led to it (`a.opts:3 -> b.opts:1:
    /// e`), named once.
    fn chained(&self, e: String) -> String {
        if self.reading.is_empty() {
            e
        } else {
            format!("{} -> {e}", self.reading.join(" -> "))
        }
    }

    /// The lines of a config file named `name`, read as options.
    fn load_text(&mut self, name: &str, text: &str, p: &mut Parsed) -> Result<(), String> {
        if self.depth >= 8 {
            return Err(self.chained(format!("{name}: --load-opts nested too deep (8 files)")));
        }
        self.depth += 1;
        let mut mine = true;
        // A byte-order mark, as some editors write, is no option.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
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
            let here = format!("{name}:{}", n + 1);
            let at = |e: String| self.chained(format!("{here}: {e}"));
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
            if o.name == "load-opts" {
                // The nested file's errors carry the whole chain already.
                self.reading.push(here);
                self.take(o, value, p)?;
                self.reading.pop();
            } else if let Err(e) = self.take(o, value, p) {
                return Err(self.chained(format!("{here}: {e}")));
            }
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
        // A byte-order mark before the first option.
        let p = parse_config("TEST", T, "cfg", "\u{feff}topspeed\n").unwrap();
        assert!(p.has("topspeed"));
    }

    #[test]
    fn option_files_are_bounded_in_all_and_loops_named_once() {
        let d = tempfile::tempdir().unwrap();
        let f = |n: usize| d.path().join(format!("f{n}"));
        // Each file loads the next twelve times: 12^6 files without a
        // bound on the total.
        for n in 0..7 {
            let next = format!("load-opts {}\n", f(n + 1).display()).repeat(12);
            std::fs::write(f(n), if n == 6 { "topspeed\n".into() } else { next }).unwrap();
        }
        let arg = format!("--load-opts={}", f(0).display());
        let e = parse("TEST", T, &[arg]).unwrap_err();
        assert!(e.contains("more than 64 option files in all"), "{e}");
        // A file that loads itself: one error, the chain once.
        let me = d.path().join("me");
        std::fs::write(&me, format!("topspeed\nload-opts {}\n", me.display())).unwrap();
        let e = parse("TEST", T, &[format!("--load-opts={}", me.display())]).unwrap_err();
        assert!(e.contains("loads itself"), "{e}");
        assert_eq!(e.matches(":2").count(), 1, "{e}");
        // An endless device is read no further than the budget.
        let e = parse("TEST", T, &["--load-opts=/dev/zero".to_string()]).unwrap_err();
        assert!(e.contains("bytes in all") || e.contains("UTF-8"), "{e}");
    }
}
