//! `pagelab compare translation`: one run per translation scheme (4K, THP 2M, 1G,
//! direct segment, RMM; with `--coalescing`, mTHP 64K and PTE coalescing) of one
//! trace on one machine
//! (`pagelab_core::analysis::translation`), as a table, JSON or CSV; with
//! `--virtualized`, guest × host page tables instead (`virtualized.rs`).

use crate::trace_args::TraceRunArgs;
use crate::MachineArgs;
use anyhow::Result;
use pagelab_core::analysis::translation::{self, Row};
use std::fmt::Write as _;

#[derive(clap::Args)]
pub struct TranslationArgs {
    #[command(flatten)]
    run: TraceRunArgs,
    /// The machine the schemes are built on (its TLBs, page table, walk caches and
    /// costs). Default sandy-bridge, the paper's.
    #[command(flatten)]
    machine: MachineArgs,
    /// Instead of the schemes: each guest page-table structure natively and over each
    /// host structure, a two-dimensional walk per TLB miss (`[virtualization]`; the
    /// machine's own section, if it has one, gives the host's memory and caches).
    #[arg(long)]
    virtualized: bool,
    /// With --virtualized: the guest structures, comma-separated (default all seven).
    #[arg(long, value_delimiter = ',', requires = "virtualized")]
    guests: Vec<String>,
    /// With --virtualized: the host structures, comma-separated (default all seven).
    #[arg(long, value_delimiter = ',', requires = "virtualized")]
    hosts: Vec<String>,
    /// With --virtualized: the page a host fault maps when it can
    /// (`virtualization.host_page`; default the machine's, else 4K).
    #[arg(long, requires = "virtualized")]
    host_page: Option<String>,
    /// Also the schemes whose TLB entries cover contiguous, aligned frames, after THP
    /// 2M: "mTHP 64K" (64 KiB folios with arm64's contiguous bit) and "PTE coalescing"
    /// (base pages, AMD's coalescing of 4). Every TLB array that holds 4K pages is
    /// given the coalesced size too (a hypothetical machine where it has none).
    #[arg(long, conflicts_with = "virtualized")]
    coalescing: bool,
}

pub fn run(args: &TranslationArgs) -> Result<()> {
    let run = &args.run;
    run.check_outputs(args.machine.config.as_deref())?;
    if args.machine.policy.is_some() {
        anyhow::bail!("--policy: compare translation gives each scheme its own policy (none, thp); name the machine only");
    }
    let base = if args.machine.config.is_none() && args.machine.machine.is_none() {
        pagelab_core::presets::load(translation::DEFAULT_MACHINE)?
    } else {
        crate::load_config(&args.machine)?
    };
    if args.virtualized {
        let pairs = crate::virtualized::Pairs {
            guests: &args.guests,
            hosts: &args.hosts,
            host_page: args.host_page.as_deref(),
        };
        return crate::virtualized::run(run, base, &pairs);
    }
    let format = crate::parse_format(&run.format)?;
    // A progress line per scheme.
    let mut progress = crate::progress::PerRun::new(&run.trace, run.quiet);
    let result = translation::compare_with(
        &base,
        &run.regions,
        args.coalescing,
        || pagelab_core::trace::open(&run.trace, format),
        &run.trace,
        |scheme, refs, position| progress.tick(scheme, refs, position),
    )?;
    progress.finish();
    let (rows, skipped) = (&result.schemes, &result.skipped);
    let source = format!("{} on {}", run.trace.display(), base.name);
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "trace": run.trace,
        "machine": result.machine,
        "skipped": skipped,
        "schemes": rows,
    }))? + "\n";
    crate::output::emit(
        &[(run.json.as_ref(), json), (run.csv.as_ref(), csv(rows))],
        || {
            let mut s = format!("{source}\n{}", table(rows));
            for k in skipped {
                let _ = writeln!(s, "not run: {k}");
            }
            s
        },
    )
}

fn table(rows: &[Row]) -> String {
    let bytes = pagelab_core::addr::human_bytes;
    let mut t = crate::table::Columns::new([
        "scheme",
        "MPKI",
        "walk refs",
        "walk cycles",
        "range walks",
        "walk ovh",
        "removed",
        "translation",
        "faults",
        "peak",
        "bloat",
        "untouched",
    ]);
    for r in rows {
        let bloat = if r.bloat_bytes < 0 {
            format!("-{}", bytes(r.bloat_bytes.unsigned_abs()))
        } else {
            bytes(r.bloat_bytes as u64)
        };
        t.row([
            r.scheme.clone(),
            format!("{:.3}", r.mpki),
            r.walk_refs.to_string(),
            format!("{:.0}", r.walk_cycles),
            r.range_walks.to_string(),
            format!("{:.2}%", r.walk_overhead_percent),
            format!("{:.1}%", r.walk_cycles_removed_percent),
            format!("{:.2}%", r.translation_overhead_percent),
            r.page_faults.to_string(),
            bytes(r.peak_bytes),
            bloat,
            bytes(r.untouched_bytes),
        ]);
    }
    t.render() + "(MPKI: page walks per 1000 references; walk ovh: page- and range-walk cycles in the run without faults; removed: of the 4K scheme's walk cycles; translation: all translation cycles, faults and eager paging included; bloat: peak memory beyond the 4K scheme's; untouched: allocated eagerly, never used)\n"
}

fn csv(rows: &[Row]) -> String {
    let mut s = String::from("scheme,references,tlb_misses,mpki,walk_refs,walk_cycles,range_walks,range_walk_cycles,walk_overhead_percent,translation_overhead_percent,walk_cycles_removed_percent,page_faults,range_hits,promotions,peak_bytes,bloat_bytes,untouched_bytes\n");
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.scheme,
            r.references,
            r.tlb_misses,
            r.mpki,
            r.walk_refs,
            r.walk_cycles,
            r.range_walks,
            r.range_walk_cycles,
            r.walk_overhead_percent,
            r.translation_overhead_percent,
            r.walk_cycles_removed_percent,
            r.page_faults,
            r.range_hits,
            r.promotions,
            r.peak_bytes,
            r.bloat_bytes,
            r.untouched_bytes
        );
    }
    s
}
