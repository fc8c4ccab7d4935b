//! What the workspace's tests share: where the vendored test corpus and
//! judge scripts live, and how a test asks for an external tool.
//!
//! The repository tests itself with nothing beside it: captures, archives
//! and flow records are under `testdata/` (with their provenance and
//! licences), the neutral judge scripts under `bench/`.
//!
//! A test that needs a tool (tshark, tcpdump, python3, root for veth
//! pairs) calls [`require`]. Without the tool it prints one `SKIPPED` line
//! naming the tool and returns false; under `CI` (where `.ci/run` installs
//! every such tool) a missing tool is a failure, so a green CI never hides
//! a test that did not run. Skips are not hidden by libtest's output
//! capture either: each is written to stderr when it happens, and a test
//! binary that skipped any prints one summary line after its `test result`
//! line, naming every skipped test and what it lacked.
//!
//! A test network put in the root namespace takes its addresses from
//! [`free_subnet`] and its names where [`name_free`] allows ([`net`]), so
//! that it can neither take over a subnet the host routes nor delete an
//! interface it did not make.

pub mod net;
mod schema;
mod skips;
pub use net::{free_subnet, name_free, Subnet, SubnetLease};
pub use schema::{checked_json, checked_json_lines, schema_errors, schema_tags};
pub use skips::skip;

use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The workspace root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// `testdata/SUB` of the repository (`pcap`, `timeseries`, `flows`).
pub fn testdata(sub: &str) -> PathBuf {
    repo_root().join("testdata").join(sub)
}

/// A vendored script of `bench/` (`gaperr.py`, `ratejudge.py`, ...).
pub fn bench_script(name: &str) -> PathBuf {
    repo_root().join("bench").join(name)
}

/// Whether CI runs these tests (`CI` set): skipping is then a failure.
pub fn under_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// True when `tool` runs (`tool --version` starts). Otherwise: a failure
/// naming the tool under CI, else one `SKIPPED` line on stderr and false.
pub fn require(tool: &str, test: &str) -> bool {
    let runs = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    missing_unless(runs, tool, test)
}

/// True when running as root (veth pairs and namespaces need it);
/// otherwise as for [`require`].
pub fn require_root(test: &str) -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    missing_unless(root, "root", test)
}

fn missing_unless(present: bool, what: &str, test: &str) -> bool {
    if !present {
        skip(test, what);
    }
    present
}

/// splitmix64: small, seedable, good enough for picking mutations in the
/// seeded mutation suites.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// A reader that hands out at most `chunk` bytes per call (exercises the
/// readers' refill paths).
pub struct Trickle {
    pub data: Cursor<Vec<u8>>,
    pub chunk: usize,
}

impl Read for Trickle {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = out.len().min(self.chunk);
        self.data.read(&mut out[..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_and_the_judges_are_in_the_repository() {
        assert!(testdata("pcap").join("MANIFEST.tsv").is_file());
        assert!(testdata("timeseries").join("PROVENANCE.md").is_file());
        assert!(testdata("flows").join("PROVENANCE.md").is_file());
        assert!(bench_script("gaperr.py").is_file());
        assert!(bench_script("ratejudge.py").is_file());
    }

    /// Every file under `dir` (recursively), skipping build outputs.
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if !["target", "build", "__pycache__", ".git"].contains(&name.as_str()) {
                    files(&p, out);
                }
            } else {
                out.push(p);
            }
        }
    }

    /// Benches and tests end only the processes they started, by PID: a
    /// kill by name ends anyone's process of that name on the machine.
    #[test]
    fn no_script_or_test_kills_processes_by_name() {
        let root = repo_root();
        let mut all = Vec::new();
        for dir in ["bench", "crates", "python", "examples", ".ci", "fuzz"] {
            files(&root.join(dir), &mut all);
        }
        // Split so that this file does not name them itself.
        let words = [concat!("pk", "ill "), concat!("kill", "all ")];
        let mut found = Vec::new();
        for f in &all {
            let Ok(text) = std::fs::read_to_string(f) else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                if words.iter().any(|w| line.contains(w)) {
                    found.push(format!("{}:{}: {line}", f.display(), n + 1));
                }
            }
        }
        assert!(all.len() > 50, "the tree was read: {} files", all.len());
        assert!(found.is_empty(), "kills by name:\n{}", found.join("\n"));
    }
}
