//! `pagelab machines`: the presets with their sources, and with `--host` what pagelab
//! reads of this machine (`--machine host`): its TLBs from CPUID, its caches and huge
//! page sizes from Linux, each with where it came from.

use anyhow::Result;
use pagelab_core::host::{cpuid, Host};
use std::io::Write;

#[derive(clap::Args)]
pub struct MachinesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// This machine, as `--machine host` builds it: what CPUID and Linux say, with
    /// the source of each number and what comes from the nearest preset instead.
    #[arg(long)]
    host: bool,
    /// With --host: the raw CPUID answers pagelab reads, one query a line (what a
    /// test replays to decode another processor).
    #[arg(long, requires = "host")]
    cpuid: bool,
}

pub fn run(args: &MachinesArgs) -> Result<()> {
    if args.host {
        return host(args);
    }
    let presets = pagelab_core::presets::describe_all().map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&presets)?)?;
        return Ok(());
    }
    // One line per level: "l1d: 64×4K + 32×2M (lru) → stlb".
    for p in presets {
        writeln!(out, "{}\n  {}", p.name, p.description)?;
        for l in p.levels {
            writeln!(out, "    {l}")?;
        }
    }
    writeln!(
        out,
        "host\n  this processor, read at run time (pagelab machines --host)"
    )?;
    Ok(())
}

fn host(args: &MachinesArgs) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if args.cpuid {
        write!(out, "{}", cpuid::Recorded::dump(&cpuid::Live).to_text())?;
        return Ok(());
    }
    let d =
        pagelab_core::presets::describe_host(Host::this_machine()).map_err(anyhow::Error::msg)?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&d)?)?;
        return Ok(());
    }
    // The host's own notes are among the preset's.
    for line in d
        .host
        .to_string()
        .lines()
        .filter(|l| !l.starts_with("note: "))
    {
        writeln!(out, "{line}")?;
    }
    writeln!(out, "as --machine host ({}):", d.config.description)?;
    for l in &d.levels {
        writeln!(out, "  {l}")?;
    }
    for n in &d.notes {
        writeln!(out, "note: {n}")?;
    }
    Ok(())
}
