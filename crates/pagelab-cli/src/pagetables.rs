//! `pagelab pagetables compare`: every page-table structure over one trace or one
//! synthetic layout, as a table, JSON or CSV (`pagelab_core::analysis::pagetables`).

use anyhow::{Context, Result};
use pagelab_core::analysis::layout::Layout;
use pagelab_core::analysis::pagetable_comparison::{self, Comparison, Lookups};
use pagelab_core::analysis::pagetables::Row;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct CompareArgs {
    /// The trace whose references every structure looks up.
    #[arg(long, required_unless_present = "layout", conflicts_with = "layout")]
    trace: Option<PathBuf>,
    /// A synthetic layout instead of a trace: dense (a program's code, 64 MiB heap and
    /// stack), compact (the same pages laid out as a MIPS process, in the low 2 GiB), sparse (256 small objects over the 47-bit user space) or shared (128
    /// segments of 16 pages shared by 4 address spaces).
    #[arg(long, value_parser = Layout::NAMES)]
    layout: Option<String>,
    /// Input format; detected when omitted.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(pagelab_core::trace::NAMES.iter().copied()))]
    format: Option<String>,
    /// Stop after this many references of the trace.
    #[arg(long)]
    max_refs: Option<u64>,
    /// Look up only the references this preset's TLB misses: one lookup per TLB
    /// reload, as Szmajda and Heiser's VRPT paper (ACSAC 2003) §5.2 counts
    /// (`pagelab machines` lists the presets); the preset's own structure is as it
    /// configures it. Without it or --config, every reference is a lookup.
    #[arg(long, conflicts_with = "config")]
    machine: Option<String>,
    /// As --machine, the TLB of a machine configuration file (TOML).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Set one field of --machine or --config by its dotted key
    /// (`--set tlb.levels.stlb.ways=16`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Also write the results as JSON to this file ("-" for standard output, instead of the table).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Also write the results as CSV to this file ("-" for standard output, instead of the table).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// No progress on standard error.
    #[arg(long, short)]
    quiet: bool,
}

pub fn compare(args: &CompareArgs) -> Result<()> {
    let inputs: Vec<&Path> = args.trace.iter().map(PathBuf::as_path).collect();
    for (path, what) in [(&args.json, "--json"), (&args.csv, "--csv")] {
        if let Some(p) = path {
            crate::output::check(p, what, &inputs)?;
        }
    }
    let machine = match (&args.machine, &args.config) {
        (Some(name), _) => Some((
            pagelab_core::presets::load(name).context("--machine")?,
            name.clone(),
        )),
        (None, Some(p)) => Some((
            pagelab_core::MachineConfig::load(p)?,
            p.display().to_string(),
        )),
        (None, None) => None,
    };
    if machine.is_none() && !args.set.is_empty() {
        anyhow::bail!("--set changes the machine of --machine or --config; name one");
    }
    let machine = match machine {
        Some((config, name)) => Some((crate::with_settings(config, &args.set)?, name)),
        None => None,
    };
    let lookups = match (&args.trace, &args.layout) {
        (Some(path), _) => Lookups::Trace {
            path: path.clone(),
            format: crate::parse_format(&args.format)?,
            max_refs: args.max_refs,
        },
        (None, Some(name)) => Lookups::Layout(name.clone()),
        (None, None) => unreachable!("clap requires --trace or --layout"),
    };
    // Every structure looks up each batch in turn: the share is of the references to
    // look up (--max-refs), else of the trace read.
    let progress = crate::progress::Progress::new("looking up", args.quiet);
    let mut progress = match (&args.trace, args.max_refs) {
        (_, Some(n)) => progress.of_references(n),
        (Some(path), None) => progress.of_files([path.as_path()]),
        (None, None) => progress,
    };
    let compared = pagetable_comparison::compare(
        &lookups,
        machine.as_ref().map(|(c, name)| (c, name.as_str())),
        |refs, position| progress.tick(refs, position),
    );
    progress.finish();
    let Comparison {
        source,
        structures: rows,
    } = compared.map_err(anyhow::Error::msg)?;
    let json =
        serde_json::to_string_pretty(&serde_json::json!({ "source": source, "structures": rows }))?
            + "\n";
    crate::output::emit(
        &[(args.json.as_ref(), json), (args.csv.as_ref(), csv(&rows))],
        || format!("{source}\n{}", table(&rows)),
    )
}

fn table(rows: &[Row]) -> String {
    // The cost of mapping the shared segments, only for a layout that has them.
    let shared = rows.iter().any(|r| r.shared_map_refs > 0);
    let mut header = vec![
        "structure",
        "refs/lookup",
        "p99",
        "lines/lookup",
        "bytes",
        "reclaimable",
        "refs/map",
        "M lookups/s",
    ];
    if shared {
        header.push("shared-map refs");
    }
    let mut t = crate::table::Columns::new(header);
    for r in rows {
        let mut cells = vec![
            r.structure.clone(),
            format!("{:.2}", r.refs_mean),
            r.refs_p99.to_string(),
            format!("{:.2}", r.lines_mean),
            crate::human_bytes(r.footprint_bytes),
            crate::human_bytes(r.reclaimable_bytes),
            format!("{:.2}", r.map_refs_mean),
            format!("{:.1}", r.lookups_per_second / 1e6),
        ];
        if shared {
            cells.push(r.shared_map_refs.to_string());
        }
        t.row(cells);
    }
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut segment =
        crate::table::Columns::new(["structure", "map", "protect", "promote", "demote", "unmap"]);
    for r in rows {
        let u = &r.segment;
        segment.row([
            r.structure.clone(),
            u.map.to_string(),
            u.protect.to_string(),
            opt(u.promote),
            opt(u.demote),
            u.unmap.to_string(),
        ]);
    }
    format!(
        "{}\ntable references to update one 2 MiB segment of 512 pages:\n{}",
        t.render(),
        segment.render()
    )
}

fn csv(rows: &[Row]) -> String {
    let mut out = csv::Writer::from_writer(Vec::new());
    let header = [
        "structure",
        "lookups",
        "refs_mean",
        "refs_p99",
        "lines_mean",
        "footprint_bytes",
        "reclaimable_bytes",
        "in_use_bytes",
        "maps",
        "map_refs_mean",
        "shared_map_refs",
        "lookups_per_second",
        "segment_map",
        "segment_protect",
        "segment_promote",
        "segment_demote",
        "segment_unmap",
    ];
    out.write_record(header).expect("CSV into memory");
    let optional = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    for r in rows {
        out.write_record([
            r.structure.clone(),
            r.lookups.to_string(),
            format!("{:.4}", r.refs_mean),
            r.refs_p99.to_string(),
            format!("{:.4}", r.lines_mean),
            r.footprint_bytes.to_string(),
            r.reclaimable_bytes.to_string(),
            r.in_use_bytes.to_string(),
            r.maps.to_string(),
            format!("{:.4}", r.map_refs_mean),
            r.shared_map_refs.to_string(),
            format!("{:.0}", r.lookups_per_second),
            r.segment.map.to_string(),
            r.segment.protect.to_string(),
            optional(r.segment.promote),
            optional(r.segment.demote),
            r.segment.unmap.to_string(),
        ])
        .expect("CSV into memory");
    }
    String::from_utf8(out.into_inner().expect("CSV into memory")).expect("UTF-8")
}
