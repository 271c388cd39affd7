//! `pagelab analyze contiguity`: how many translation entries map a trace's footprint
//! with 4K, 2M and 1G pages, ideal ranges and the ranges eager paging made
//! (`pagelab_core::analysis::contiguity`), and how much of it the machine's frames
//! leave coalescable at each run length (`pagelab_core::analysis::coalescable`), as
//! tables, JSON or CSV (the curves).

use crate::trace_args::TraceRunArgs;
use crate::MachineArgs;
use anyhow::Result;
use pagelab_core::analysis::contiguity::{self, Contiguity, TABLE_PERCENTS};
use std::fmt::Write as _;

#[derive(clap::Args)]
pub struct ContiguityArgs {
    #[command(flatten)]
    run: TraceRunArgs,
    /// The machine that runs the trace: its eager paging makes the "eager ranges" (a
    /// preset or --config file with ranges.allocation = "eager"), its frame allocator
    /// the frames whose contiguity is counted. Default sandy-bridge-rmm.
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
    let mut progress =
        crate::progress::Progress::new("reading", run.quiet).of_files([run.trace.as_path()]);
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
        "{}: {} pages of 4K in {} address space{}, run on {}",
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
            if !result.coalescable.is_empty() {
                s += &coalescable_table(&result);
            }
            if let Some(n) = note {
                let _ = writeln!(s, "note: {n}");
            }
            s
        },
    )
}

fn table(c: &Contiguity) -> String {
    let mut header = vec!["mapping".to_string(), "entries".into(), "largest".into()];
    header.extend(
        TABLE_PERCENTS
            .iter()
            .map(|&p| format!("{}%", p as f64 / 100.0)),
    );
    let mut t = crate::table::Columns::new(header);
    for m in &c.mappings {
        let mut cells = vec![
            m.name.clone(),
            m.entries.to_string(),
            pagelab_core::addr::format_bytes(m.largest_pages << 12),
        ];
        cells.extend(
            TABLE_PERCENTS
                .iter()
                .map(|&p| m.entries_for(p).unwrap_or(0).to_string()),
        );
        t.row(cells);
    }
    t.render() + "(entries that map that share of the footprint, largest entries first; largest: the footprint the largest entry maps)\n"
}

fn coalescable_table(c: &Contiguity) -> String {
    let mut t = crate::table::Columns::new(["run", "entry", "groups", "footprint", "share"]);
    for g in &c.coalescable {
        t.row([
            format!("{} × 4K", g.pages),
            pagelab_core::addr::format_bytes(g.pages << 12),
            g.groups.to_string(),
            g.footprint_pages.to_string(),
            format!("{:.1}%", g.percent),
        ]);
    }
    "\n".to_string() + &t.render() + "(coalescable: footprint pages in aligned groups of that many 4K pages all mapped, when the trace ends, to contiguous frames aligned like the group, with the same rights: one contiguous-bit or PTE-coalesced TLB entry each, or part of a huge page; a page unmapped by then is not coalescable)\n"
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
