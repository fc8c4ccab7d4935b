//! docs/ARCHITECTURE.md's invariants that the code's text can show, held
//! by reading the sources: where `unsafe` may be, that sources neither
//! sleep nor read the clock, and where files are written. (The others are
//! held by tests of their own, named in the document.)

use std::path::{Path, PathBuf};

/// The product code of every crate (`src/`, before any test module),
/// as (crate, file, text).
fn product_sources() -> Vec<(String, PathBuf, String)> {
    let root = sluice_testkit::repo_root().join("crates");
    let mut out = Vec::new();
    for c in std::fs::read_dir(&root).unwrap() {
        let c = c.unwrap().path();
        let name = c.file_name().unwrap().to_string_lossy().into_owned();
        if name == "sluice-testkit" {
            continue;
        }
        walk(&c.join("src"), &mut |p| {
            let text = std::fs::read_to_string(p).unwrap();
            let product = text.split("#[cfg(test)]").next().unwrap().to_string();
            let test_file = p
                .file_name()
                .is_some_and(|f| f.to_string_lossy().contains("tests"));
            if !test_file {
                out.push((name.clone(), p.to_path_buf(), product));
            }
        });
    }
    out
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, f);
        } else if p.extension().is_some_and(|x| x == "rs") {
            f(&p);
        }
    }
}

/// Lines of `text` (not comments) holding any of `words`.
fn lines_with<'t>(text: &'t str, words: &[&str]) -> Vec<&'t str> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter(|l| words.iter().any(|w| l.contains(w)))
        .collect()
}

#[test]
fn unsafe_code_lives_in_the_sink_and_sys_crates_only() {
    for (krate, file, text) in product_sources() {
        if krate == "sluice-sink" || krate == "sluice-sys" {
            continue;
        }
        let found = lines_with(
            &text,
            &["unsafe {", "unsafe fn", "unsafe impl", "allow(unsafe_code)"],
        );
        assert!(found.is_empty(), "{}: {found:?}", file.display());
    }
    let root = sluice_testkit::repo_root();
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        workspace.contains("unsafe_code = \"deny\""),
        "the workspace denies unsafe_code"
    );
    for c in std::fs::read_dir(root.join("crates")).unwrap() {
        let c = c.unwrap().path();
        let manifest = std::fs::read_to_string(c.join("Cargo.toml")).unwrap();
        let name = c.file_name().unwrap().to_string_lossy().into_owned();
        let allows = manifest.contains("unsafe_code = \"allow\"");
        let may = ["sluice-sink", "sluice-sys", "sluice-testkit"].contains(&name.as_str());
        assert!(!allows || may, "{name} allows unsafe_code");
        assert!(
            manifest.contains("[lints]\nworkspace = true") || allows,
            "{name} keeps the workspace's lints"
        );
    }
}

#[test]
fn sources_never_sleep_and_read_the_clock_only_to_stamp_captures() {
    let clock = [
        "sleep(",
        "Instant::now",
        "SystemTime",
        "monotonic_ns",
        "realtime_ns",
        ".now()",
    ];
    for (krate, file, text) in product_sources() {
        if !["sluice-source", "sluice-flows", "sluice-profile"].contains(&krate.as_str()) {
            continue;
        }
        let found: Vec<&str> = lines_with(&text, &clock)
            .into_iter()
            // A flow source stamps its captures from the wall clock at
            // construction, never while it fills.
            .filter(|l| {
                !(file.ends_with("sluice-flows/src/source.rs")
                    && l.contains("unwrap_or_else(sluice_sys::clock::realtime_ns)"))
            })
            .collect();
        assert!(found.is_empty(), "{}: {found:?}", file.display());
    }
}

#[test]
fn files_are_written_through_sluice_sys_output_but_for_named_exceptions() {
    // (file, why it writes without sluice_sys::output)
    let exceptions: &[(&str, &str)] = &[
        (
            "sluice-archive/src/writer.rs",
            "ArchiveWriter::create, for tests; commands write archives through Dest",
        ),
        (
            "sluice-cli/src/cmd/doctor_nic.rs",
            "restores a sysfs setting, not a file output",
        ),
        (
            "sluice-cli/src/cmd/rfc2544.rs",
            "the trial frames, in its own temporary directory",
        ),
        ("sluice-control/src/control/tests.rs", "a test module"),
    ];
    for (_, file, text) in product_sources() {
        // `sluice_sys::secret::NewFile` is sluice-sys's own writer (of
        // uploads, job files, keys and tokens).
        let found: Vec<&str> = lines_with(
            &text,
            &["File::create(", "OpenOptions::new()", "fs::write("],
        )
        .into_iter()
        .filter(|l| !l.contains("NewFile::create("))
        .collect();
        if found.is_empty() || file.to_string_lossy().contains("sluice-sys/") {
            continue;
        }
        let known = exceptions.iter().any(|(f, _)| file.ends_with(f));
        assert!(
            known,
            "{} writes a file without sluice_sys::output: {found:?}",
            file.display()
        );
    }
}
