//! `pagelab analyze contiguity`: how many translation entries map a trace's footprint
//! with 4K, 2M and 1G pages, ideal ranges and the ranges eager paging made
//! (`pagelab_core::analysis::contiguity`), as a table, JSON or CSV.

use crate::trace_args::TraceRunArgs;
use crate::MachineArgs;
use anyhow::{Context, Result};
use pagelab_core::analysis::contiguity::{self, Contiguity, TABLE_PERCENTS};
use pagelab_core::config::Allocation;
use pagelab_core::MachineConfig;
use std::fmt::Write as _;

/// The machine whose eager paging makes the ranges when none is given.
pub const DEFAULT_MACHINE: &str = "sandy-bridge-rmm";

#[derive(clap::Args)]
pub struct ContiguityArgs {
    #[command(flatten)]
    run: TraceRunArgs,
    /// The machine whose eager paging makes the "eager ranges" (a preset or --config
    /// file with ranges.allocation = "eager"). Default sandy-bridge-rmm.
    #[command(flatten)]
    machine: MachineArgs,
}

/// The machine of `args` (sandy-bridge-rmm by default), its regions set; with a note
/// when it does not allocate eagerly.
pub fn eager_machine(
    args: &MachineArgs,
    regions: &[String],
) -> Result<(MachineConfig, Option<String>)> {
    let mut config = if args.config.is_none() && args.machine.is_none() {
        pagelab_core::presets::load(DEFAULT_MACHINE)?
    } else {
        crate::load_config(args)?
    };
    if !regions.is_empty() {
        config.ranges.regions = regions.to_vec();
    }
    let note = (config.ranges.allocation != Allocation::Eager).then(|| {
        format!(
            "{} does not allocate eagerly (ranges.allocation): no eager ranges",
            config.name
        )
    });
    Ok((config, note))
}

pub fn run(args: &ContiguityArgs) -> Result<()> {
    let run = &args.run;
    run.check_outputs(args.machine.config.as_deref())?;
    let (config, mut note) = eager_machine(&args.machine, &run.regions)?;
    let mut machine = match note {
        Some(_) => None,
        None => Some(crate::build_machine(&config, &args.machine)?),
    };
    let mut reader = run.open()?;
    let mut progress = crate::progress::Progress::new("reading", run.quiet);
    let result = contiguity::analyze_trace(
        reader.as_mut(),
        &run.trace,
        machine.as_mut(),
        |refs, position| progress.tick(refs, position),
    )
    .with_context(|| format!("--machine {}", config.name))?;
    progress.finish();
    if result.eager_ranges == Some(0) {
        note = Some(
            "eager paging made no ranges: the trace has no allocation events or memory map; give its regions with --region".into(),
        );
    }
    let source = format!(
        "{}: {} pages of 4K in {} address space{}, eager ranges by {}",
        run.trace.display(),
        result.footprint_pages,
        result.address_spaces,
        if result.address_spaces == 1 { "" } else { "s" },
        config.name
    );
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "trace": run.trace,
        "machine": config.name,
        "note": note,
        "footprint_pages": result.footprint_pages,
        "address_spaces": result.address_spaces,
        "mappings": result.mappings,
        "eager_ranges": result.eager_ranges,
    }))? + "\n";
    crate::output::emit(
        &[
            (run.json.as_ref(), json),
            (run.csv.as_ref(), csv(&result)),
        ],
        || {
            let mut s = format!("{source}\n{}", table(&result));
            if let Some(n) = &note {
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
