//! `pagelab analyze contiguity`: how many translation entries map a trace's footprint
//! with 4K, 2M and 1G pages, ideal ranges and the ranges eager paging made
//! (`pagelab_core::analysis::contiguity`), as a table, JSON or CSV.

use crate::trace_args::TraceRunArgs;
use crate::MachineArgs;
use anyhow::Result;
use pagelab_core::analysis::contiguity::{self, Contiguity, TABLE_PERCENTS};
use std::fmt::Write as _;

#[derive(clap::Args)]
pub struct ContiguityArgs {
    #[command(flatten)]
    run: TraceRunArgs,
    /// The machine whose eager paging makes the "eager ranges" (a preset or --config
    /// file with ranges.allocation = "eager"). Default sandy-bridge-rmm.
    #[command(flatten)]
    machine: MachineArgs,
}

pub fn run(args: &ContiguityArgs) -> Result<()> {
    let run = &args.run;
    run.check_outputs(args.machine.config.as_deref())?;
    let config = if args.machine.config.is_none() && args.machine.machine.is_none() {
        pagelab_core::presets::load(contiguity::DEFAULT_MACHINE)?
    } else {
        crate::load_config(&args.machine)?
    };
    let mut reader = run.open()?;
    let mut progress = crate::progress::Progress::new("reading", run.quiet);
    let result = contiguity::analyze_with(
        &config,
        &run.regions,
        reader.as_mut(),
        &run.trace,
        |refs, position| progress.tick(refs, position),
    )?;
    progress.finish();
    let note = &result.note;
    let source = format!(
        "{}: {} pages of 4K in {} address space{}, eager ranges by {}",
        run.trace.display(),
        result.footprint_pages,
        result.address_spaces,
        if result.address_spaces == 1 { "" } else { "s" },
        config.name
    );
    let mut json = serde_json::to_value(&result)?;
    json["trace"] = serde_json::json!(run.trace);
    let json = serde_json::to_string_pretty(&json)? + "\n";
    crate::output::emit(
        &[(run.json.as_ref(), json), (run.csv.as_ref(), csv(&result))],
        || {
            let mut s = format!("{source}\n{}", table(&result));
            if let Some(n) = note {
                let _ = writeln!(s, "note: {n}");
            }
            s
        },
    )
}

fn table(c: &Contiguity) -> String {
    let mut s = format!("{:<14}{:>12}{:>14}", "mapping", "entries", "largest");
    for p in TABLE_PERCENTS {
        let _ = write!(s, "{:>11}", format!("{}%", p as f64 / 100.0));
    }
    s.push('\n');
    for m in &c.mappings {
        let _ = write!(
            s,
            "{:<14}{:>12}{:>14}",
            m.name,
            m.entries,
            pagelab_core::addr::format_bytes(m.largest_pages << 12)
        );
        for p in TABLE_PERCENTS {
            let n = m.entries_for(p).unwrap_or(0);
            let _ = write!(s, "{n:>11}");
        }
        s.push('\n');
    }
    s.push_str("(entries that map that share of the footprint, largest entries first; largest: the footprint the largest entry maps)\n");
    s
}

fn csv(c: &Contiguity) -> String {
    let mut s = String::from("mapping,percent,entries\n");
    for m in &c.mappings {
        for (p, n) in &m.curve {
            let _ = writeln!(s, "{},{p},{n}", m.name);
        }
    }
    s
}
