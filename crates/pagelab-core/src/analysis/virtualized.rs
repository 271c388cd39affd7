//! Guest × host page-table structures on one machine and one trace: each guest
//! structure alone (native), then over each host structure (`crate::virt`), so that a
//! two-dimensional walk's references and cycles, by dimension, compare with the
//! guest's native walk. Each run is the machine given (its TLBs, walk caches, data
//! caches and costs) with the page table replaced by the guest structure's defaults,
//! and a `[virtualization]` section (the machine's own, or the default one) whose host
//! table is the host structure's defaults.
//!
//! Walk caches hold radix-table entries: a guest (or host) structure other than the
//! radix table runs without the machine's `walk_caches` (`host_walk_caches`), which
//! its row says. An inverted table covers the memory of the allocator under it.

use crate::config::FramesConfig;
use crate::machine::Report;
use crate::pagetable::{default_structures, InvertedConfig, PageTableConfig, NAMES};
use crate::trace::{TraceError, TraceReader};
use crate::{Machine, MachineConfig};
use serde::Serialize;
use std::path::Path;

/// One run: a guest structure natively (`host` none) or over a host structure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub guest: String,
    pub host: Option<String>,
    pub references: u64,
    /// TLB misses: walks, and walks per thousand references.
    pub walks: u64,
    pub mpki: f64,
    /// Memory references per walk (after every walk cache), and of them the guest's
    /// and the host's (native: all the guest's).
    pub refs_per_walk: f64,
    pub guest_refs_per_walk: f64,
    pub host_refs_per_walk: f64,
    pub walk_cycles: f64,
    /// Walk cycles as a share of the cycles of the run without page faults, in
    /// percent.
    pub walk_overhead_percent: f64,
    /// Walk cycles over the same guest's native walk cycles (1 for a native row).
    pub walk_cycles_vs_native: f64,
    pub page_faults: u64,
    pub host_faults: u64,
    /// TLB entries smaller than their guest page (the host's page was smaller).
    pub splintered: u64,
    /// Whether the machine's walk caches (guest) and host walk caches served the
    /// run: only a radix table's walks have them.
    pub walk_caches: bool,
    pub host_walk_caches: bool,
    pub page_table_bytes: u64,
    pub host_table_bytes: u64,
}

/// What [`compare`] found: a native row per guest, then a row per guest × host
/// pair, guests in the order given, hosts within each.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub machine: String,
    pub host_page: String,
    /// Whether the machine has walk caches, and host walk caches: the rows say which
    /// runs they served.
    pub has_walk_caches: bool,
    pub has_host_walk_caches: bool,
    pub native: Vec<Row>,
    pub pairs: Vec<Row>,
}

/// The page-table configuration of structure `name` with its defaults, an inverted
/// table covering `frames`' memory.
fn structure(name: &str, frames: &FramesConfig) -> Result<PageTableConfig, String> {
    let i = NAMES.iter().position(|n| *n == name).ok_or_else(|| {
        format!(
            "no page-table structure {name:?} (known: {})",
            NAMES.join(", ")
        )
    })?;
    Ok(match default_structures().swap_remove(i) {
        PageTableConfig::Inverted(_) => {
            // The memory of whatever allocator it is, as built.
            let memory =
                crate::frames::build(frames, crate::PageSize::K4, crate::PageSize::M2, false, 0)?
                    .total_frames()
                    << crate::addr::BASE_SHIFT;
            PageTableConfig::Inverted(InvertedConfig {
                memory: crate::addr::ByteSize(memory),
                ..InvertedConfig::default()
            })
        }
        c => c,
    })
}

/// The machine of `guest` natively (`host` none) or over `host`, from `base`.
pub fn machine(
    base: &MachineConfig,
    guest: &str,
    host: Option<&str>,
) -> Result<MachineConfig, String> {
    let mut c = base.clone();
    c.page_table = structure(guest, &c.frames)?;
    if !matches!(c.page_table, PageTableConfig::Radix(_)) {
        c.walk_caches.clear();
    }
    c.virtualization = match host {
        None => None,
        Some(host) => {
            let mut v = base.virtualization.clone().unwrap_or_default();
            v.host_page_table = structure(host, &v.host_frames)?;
            if !matches!(v.host_page_table, PageTableConfig::Radix(_)) {
                v.host_walk_caches.clear();
            }
            Some(v)
        }
    };
    c.name = match host {
        None => format!("{} ({guest})", base.name),
        Some(host) => format!("{} ({guest} over {host})", base.name),
    };
    Ok(c)
}

/// `base` with its host faults mapping `page` ("2M") when they can.
pub fn with_host_page(base: &mut MachineConfig, page: &str) -> Result<(), String> {
    let size = crate::PageSize::parse(page).map_err(|e| format!("host page {page:?}: {e}"))?;
    base.virtualization
        .get_or_insert_with(Default::default)
        .host_page = size;
    Ok(())
}

/// Every guest of `guests` natively and over every host of `hosts` (names from
/// [`NAMES`]; empty: all seven), over the trace `open` reads from its start (once a
/// run); `progress` is told the run's name, each batch's references and the reader's
/// position.
pub fn compare(
    base: &MachineConfig,
    guests: &[String],
    hosts: &[String],
    mut open: impl FnMut() -> Result<Box<dyn TraceReader + Send>, TraceError>,
    path: &Path,
    mut progress: impl FnMut(&str, u64, u64),
) -> Result<Comparison, TraceError> {
    let config_error = |e: String| TraceError::new(path, crate::trace::Location::File, e);
    let all: Vec<String> = NAMES.iter().map(|s| s.to_string()).collect();
    let guests = if guests.is_empty() { &all } else { guests };
    let hosts = if hosts.is_empty() { &all } else { hosts };
    // Every machine is built once before any runs, so that a configuration one of
    // them refuses is said at once, not after the runs before it.
    for guest in guests {
        for host in hosts.iter().map(Some).chain([None]) {
            let config = machine(base, guest, host.map(String::as_str)).map_err(config_error)?;
            Machine::build(&config).map_err(|e| config_error(format!("{}: {e}", config.name)))?;
        }
    }
    let mut run = |config: &MachineConfig| -> Result<Report, TraceError> {
        let mut m =
            Machine::build(config).map_err(|e| config_error(format!("{}: {e}", config.name)))?;
        let mut reader = open()?;
        m.run_trace(reader.as_mut(), path, |refs, position| {
            progress(&config.name, refs, position)
        })?;
        Ok(m.report())
    };
    let (mut native, mut pairs) = (Vec::new(), Vec::new());
    for guest in guests {
        let alone = run(&machine(base, guest, None).map_err(config_error)?)?;
        if alone.counts.references == 0 {
            return Err(config_error(
                "holds no references: nothing to compare".into(),
            ));
        }
        for host in hosts {
            let config = machine(base, guest, Some(host.as_str())).map_err(config_error)?;
            let report = run(&config)?;
            pairs.push(row(guest, Some(host), &report, &alone));
        }
        native.push(row(guest, None, &alone, &alone));
    }
    let v = base.virtualization.clone().unwrap_or_default();
    Ok(Comparison {
        machine: base.name.clone(),
        host_page: v.host_page.to_string(),
        has_walk_caches: !base.walk_caches.is_empty(),
        has_host_walk_caches: !v.host_walk_caches.is_empty(),
        native,
        pairs,
    })
}

/// The row of `r`, a run of `guest` (over `host`), beside `alone`, the guest's
/// native run.
fn row(guest: &str, host: Option<&String>, r: &Report, alone: &Report) -> Row {
    let c = &r.counts;
    let per_walk = |n: u64| {
        if c.walks > 0 {
            n as f64 / c.walks as f64
        } else {
            0.0
        }
    };
    let v = r.virtualization.as_ref();
    let run = r.cycles.base + r.cycles.tlb();
    Row {
        guest: guest.to_string(),
        host: host.cloned(),
        references: c.references,
        walks: c.walks,
        mpki: if c.references > 0 {
            1000.0 * c.walks as f64 / c.references as f64
        } else {
            0.0
        },
        refs_per_walk: per_walk(c.walk_refs),
        guest_refs_per_walk: v.map_or(per_walk(c.walk_refs), |v| v.guest_refs_per_walk),
        host_refs_per_walk: v.map_or(0.0, |v| v.host_refs_per_walk),
        walk_cycles: r.cycles.walks,
        walk_overhead_percent: if run > 0.0 {
            100.0 * r.cycles.walks / run
        } else {
            0.0
        },
        walk_cycles_vs_native: if alone.cycles.walks > 0.0 {
            r.cycles.walks / alone.cycles.walks
        } else {
            0.0
        },
        page_faults: c.page_faults,
        host_faults: v.map_or(0, |v| v.host_faults),
        splintered: v.map_or(0, |v| v.splintered),
        walk_caches: !r.walk_caches.is_empty(),
        host_walk_caches: v.is_some_and(|v| !v.host_walk_caches.is_empty()),
        page_table_bytes: r.page_table_bytes,
        host_table_bytes: v.map_or(0, |v| v.host_table_bytes),
    }
}
