//! `pagelab compare translation --virtualized`: every guest page-table structure
//! natively and over every host structure (`pagelab_core::analysis::virtualized`), as
//! a table, JSON or CSV.

use crate::trace_args::TraceRunArgs;
use anyhow::Result;
use pagelab_core::analysis::virtualized::{self, Row};
use pagelab_core::MachineConfig;
use std::fmt::Write as _;

/// What `--virtualized` compares: the guests, the hosts, the host's page.
pub struct Pairs<'a> {
    pub guests: &'a [String],
    pub hosts: &'a [String],
    pub host_page: Option<&'a str>,
}

pub fn run(run: &TraceRunArgs, mut base: MachineConfig, pairs: &Pairs) -> Result<()> {
    if !run.regions.is_empty() {
        anyhow::bail!("--region: eager paging is not modelled under virtualization; leave it out with --virtualized");
    }
    if let Some(page) = pairs.host_page {
        virtualized::with_host_page(&mut base, page)
            .map_err(|e| anyhow::anyhow!("--host-page: {e}"))?;
    }
    for (names, flag) in [(pairs.guests, "--guests"), (pairs.hosts, "--hosts")] {
        if let Some(n) = names
            .iter()
            .find(|n| !pagelab_core::pagetable::NAMES.contains(&n.as_str()))
        {
            anyhow::bail!(
                "{flag}: no page-table structure {n:?} (known: {})",
                pagelab_core::pagetable::NAMES.join(", ")
            );
        }
    }
    let format = crate::parse_format(&run.format)?;
    let mut progress = crate::progress::PerRun::new(&run.trace, run.quiet);
    let result = virtualized::compare(
        &base,
        pairs.guests,
        pairs.hosts,
        || pagelab_core::trace::open(&run.trace, format),
        &run.trace,
        |name, refs, position| progress.tick(name, refs, position),
    )?;
    progress.finish();
    let rows: Vec<&Row> = result.native.iter().chain(&result.pairs).collect();
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "trace": run.trace,
        "comparison": result,
    }))? + "\n";
    let source = format!(
        "{} on {}, host pages {}",
        run.trace.display(),
        base.name,
        result.host_page
    );
    crate::output::emit(
        &[(run.json.as_ref(), json), (run.csv.as_ref(), csv(&rows))],
        || {
            let cached = (result.has_walk_caches, result.has_host_walk_caches);
            format!("{source}\n{}", table(&rows, cached))
        },
    )
}

/// `cached`: whether the machine has walk caches and host walk caches (a structure
/// that ran without them is marked).
fn table(rows: &[&Row], (guest_cached, host_cached): (bool, bool)) -> String {
    let mut t = crate::table::Columns::new([
        "guest",
        "host",
        "MPKI",
        "refs/walk",
        "guest",
        "host",
        "walk cycles",
        "walk ovh",
        "× native",
        "host faults",
        "splintered",
    ]);
    for r in rows {
        let cached = |name: &str, dropped: bool| {
            if dropped {
                format!("{name}*")
            } else {
                name.to_string()
            }
        };
        t.row([
            cached(&r.guest, guest_cached && !r.walk_caches),
            r.host.as_deref().map_or("(native)".into(), |h| {
                cached(h, host_cached && !r.host_walk_caches)
            }),
            format!("{:.3}", r.mpki),
            format!("{:.2}", r.refs_per_walk),
            format!("{:.2}", r.guest_refs_per_walk),
            format!("{:.2}", r.host_refs_per_walk),
            format!("{:.0}", r.walk_cycles),
            format!("{:.2}%", r.walk_overhead_percent),
            format!("{:.2}", r.walk_cycles_vs_native),
            r.host_faults.to_string(),
            r.splintered.to_string(),
        ]);
    }
    t.render() + "(refs/walk: memory references a TLB miss makes, after every walk cache, and of them the guest's and the host's; walk ovh: walk cycles in the run without faults; × native: walk cycles over the guest's native run's; *: without the machine's walk caches (host walk caches for a host), which hold radix entries only)\n"
}

fn csv(rows: &[&Row]) -> String {
    let mut s = String::from("guest,host,references,walks,mpki,refs_per_walk,guest_refs_per_walk,host_refs_per_walk,walk_cycles,walk_overhead_percent,walk_cycles_vs_native,page_faults,host_faults,splintered,walk_caches,host_walk_caches,page_table_bytes,host_table_bytes\n");
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.guest,
            r.host.as_deref().unwrap_or(""),
            r.references,
            r.walks,
            r.mpki,
            r.refs_per_walk,
            r.guest_refs_per_walk,
            r.host_refs_per_walk,
            r.walk_cycles,
            r.walk_overhead_percent,
            r.walk_cycles_vs_native,
            r.page_faults,
            r.host_faults,
            r.splintered,
            r.walk_caches,
            r.host_walk_caches,
            r.page_table_bytes,
            r.host_table_bytes
        );
    }
    s
}
