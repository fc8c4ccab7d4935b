//! `sluice completions` and `sluice man`: generated from the same clap
//! definitions the parser uses, so they never drift from it.

use crate::args::docs::{CompletionsArgs, ManArgs};
use crate::args::Cli;
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use clap::CommandFactory;
use std::io::Write;
use std::path::Path;

pub fn completions(a: CompletionsArgs) -> Result<u8, Failure> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "sluice", &mut out);
    std::io::stdout()
        .write_all(&out)
        .context("writing the completion script")?;
    Ok(exit::OK)
}

pub fn man(a: ManArgs) -> Result<u8, Failure> {
    let mut cmd = Cli::command();
    cmd.build();
    let Some(dir) = a.dir else {
        let page = render(&cmd)?;
        std::io::stdout()
            .write_all(&page)
            .context("writing the man page")?;
        return Ok(exit::OK);
    };
    if !dir.is_dir() {
        return Err(bad_input(anyhow!(
            "--dir {}: not a directory",
            dir.display()
        )));
    }
    let mut pages = vec![("sluice".to_string(), cmd.clone())];
    collect(&cmd, "sluice", &mut pages);
    for (name, c) in &pages {
        let page = render(&c.clone().name(name.clone()))?;
        write_atomically(&dir.join(format!("{name}.1")), &page)?;
    }
    eoutln!(
        "sluice: {} man pages written to {}",
        pages.len(),
        dir.display()
    );
    Ok(exit::OK)
}

/// Every subcommand, depth first, named as man(1) expects: sluice-series-play.
fn collect(cmd: &clap::Command, prefix: &str, out: &mut Vec<(String, clap::Command)>) {
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("{prefix}-{}", sub.get_name());
        out.push((name.clone(), sub.clone()));
        collect(sub, &name, out);
    }
}

fn render(cmd: &clap::Command) -> Result<Vec<u8>, Failure> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .context("rendering the man page")?;
    Ok(page)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("{}: creating a temporary file", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("{}: writing", path.display()))?;
    tmp.persist(path)
        .map_err(|e| anyhow!("{}: {}", path.display(), e.error))?;
    Ok(())
}
