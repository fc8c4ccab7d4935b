//! Records the commit sluice is built from, for `sluice --version` and
//! every run's summary.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // --no-optional-locks: `git status` would otherwise refresh and write
    // the index, which this script watches, so the next build would run it
    // again and rebuild the binary (a second build of an unchanged tree).
    let dirty = git(&[
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
    ])
    .is_some_and(|s| !s.is_empty());
    let suffix = if dirty { "-modified" } else { "" };
    println!("cargo:rustc-env=SLUICE_COMMIT={commit}{suffix}");
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/refs/heads");
        println!("cargo:rerun-if-changed={dir}/packed-refs");
        println!("cargo:rerun-if-changed={dir}/index");
    }
}
