//! A run's results: the report of every level, walk cache and count, as JSON
//! (`Serialize`); `report_table.rs` prints it as a table.

use super::*;
use crate::cost::Cycles;
use crate::tlb::hierarchy::SizeCounts;
use crate::tlb::walk_cache::WalkCacheReport;

impl Machine {
    /// The results so far, of the whole run: the warm-up included.
    pub(super) fn report_whole(&self) -> Report {
        let mut c = self.counts.clone();
        let unit = self.tlb.range_unit();
        if let Some((u, _)) = unit {
            c.range_hits = u.hits;
            c.range_walks = u.walks;
            c.range_walk_refs = u.walk_refs;
        }
        let eager = self.ranges.eager.as_ref().map(|e| {
            let mut r = e.report(&self.ranges.tables);
            // Pages are seen used by the range unit (its hits and range walks): without
            // one, nothing tells.
            if unit.is_none() {
                r.pages_untouched = None;
            }
            r
        });
        c.eager_pages = eager.as_ref().map_or(0, |e| e.pages_allocated);
        let c = &c;
        let levels = self.tlb.levels();
        let hit_cycles: f64 = levels
            .iter()
            .map(|l| l.hits() as f64 * l.hit_cycles)
            .sum::<f64>()
            + unit.map_or(0.0, |(u, _)| u.hits as f64 * u.hit_cycles);
        let mut cycles = self.cost.cycles(c, hit_cycles);
        let cache = self.walker.cache.as_ref().map(|k| k.report());
        cycles.promotions += self
            .walker
            .promoter
            .mechanism
            .cycles(&self.walker.promoter.gathered, cache.is_some());
        if let Some(k) = &cache {
            // The cache model's latencies replace the fixed cost of a walk reference;
            // the data references' memory time adds to the base, the copies' to the
            // promotions (the walks retried after faults count as walks here).
            let walk_ref_cycles = self.config.cost.walk_ref_cycles();
            cycles.walks += k.cycles.walk - c.walk_refs as f64 * walk_ref_cycles;
            cycles.page_faults -= c.fault_walk_refs as f64 * walk_ref_cycles;
            cycles.base += k.cycles.data;
            cycles.promotions += k.cycles.copy + self.walker.promoter.controller_cycles;
        }
        if let Some(p) = &self.walker.promoter.policy {
            cycles.policy = c.policy_misses as f64 * p.miss_cycles();
        }
        let virtualization = self.walker.nested.as_ref().map(|n| n.report());
        if let (Some(v), Some(cost)) = (&virtualization, self.config.cost.as_simple()) {
            // A host fault is a fault in the host's kernel, priced as the guest's (a
            // VM exit's own cost is not modelled), and its retried host walk.
            cycles.page_faults += v.host_faults as f64 * cost.page_fault_cycles
                + v.host_fault_refs as f64 * cost.walk_ref_cycles;
        }
        let per_k = |n: u64| {
            if c.references > 0 {
                1000.0 * n as f64 / c.references as f64
            } else {
                0.0
            }
        };
        let ratio = |n: u64, d: u64| if d > 0 { n as f64 / d as f64 } else { 0.0 };
        let fragmentation = self
            .fragmentation
            .samples(self.walker.frames.as_ref(), self.progress());
        let policy = self.walker.promoter.policy.as_ref();
        let paging = self.pager.as_ref().map(|p| PagingReport {
            resident_limit_pages: p.limit,
            resident_pages: p.resident(),
            max_resident_after_daemon: p.stats.max_after_daemon,
            daemon_wakes: p.stats.wakes,
            swapped_pages: self
                .walker
                .swap
                .as_ref()
                .map_or(0, |s| s.frames() / self.config.base_page.base_frames()),
            promotions_refused_swapped: p.stats.promotions_refused_swapped,
            blocks_restored: p
                .sizes
                .iter()
                .zip(&p.stats.blocks_restored)
                .map(|(s, &n)| (s.to_string(), n))
                .collect(),
        });
        let ranges = (unit.is_some() || eager.is_some()).then(|| RangesReport {
            unit: unit.map(|(u, beside)| u.report(beside)),
            eager,
        });
        let mut level_reports: Vec<LevelReport> = levels
            .iter()
            .map(|l| {
                let (hits, misses) = (l.hits(), l.misses());
                LevelReport {
                    name: l.name.clone(),
                    entries: l.entries() as u64,
                    hits,
                    misses,
                    evictions: l.evictions(),
                    miss_ratio: ratio(misses, hits + misses),
                    mpki: per_k(misses),
                    hit_cycles: hits as f64 * l.hit_cycles,
                    by_size: l.by_size(),
                }
            })
            .collect();
        if let Some((u, beside)) = unit {
            // Beside the page TLBs, after the level it is looked up with.
            let at = level_reports
                .iter()
                .position(|l| l.name == beside)
                .map_or(level_reports.len(), |i| i + 1);
            level_reports.insert(
                at,
                LevelReport {
                    name: u.name.clone(),
                    entries: u.capacity() as u64,
                    hits: u.hits,
                    misses: u.misses,
                    evictions: u.evictions,
                    miss_ratio: ratio(u.misses, u.hits + u.misses),
                    mpki: per_k(u.misses),
                    hit_cycles: u.hits as f64 * u.hit_cycles,
                    by_size: vec![SizeCounts {
                        size: "range".into(),
                        hits: u.hits,
                        misses: u.misses,
                    }],
                },
            );
        }
        Report {
            ranges,
            frames_peak: self.peak_frames.max(self.walker.frames.used_frames()),
            file_cache: self.walker.frames.file_cache(),
            paging,
            cache,
            fragmentation_sizes: self
                .fragmentation
                .sizes
                .iter()
                .map(|s| s.to_string())
                .collect(),
            fragmentation,
            policy_stats: policy
                .map(|p| p.stats())
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            reserved_idle_frames: policy.map_or(0, |p| p.idle_frames()),
            machine: self.config.name.clone(),
            settings: self.config.settings.clone(),
            counts: c.clone(),
            levels: level_reports,
            walk_caches: self.walker.walk_caches.report(),
            virtualization,
            walk_refs_per_walk: ratio(c.walk_refs, c.walks),
            walk_lines_per_walk: ratio(c.walk_lines, c.walks),
            page_table_bytes: self.walker.page_table.footprint_bytes(),
            frames_used: self.walker.frames.used_frames(),
            translation_overhead_percent: cycles.overhead_percent(),
            tlb_overhead_percent: cycles.tlb_percent(),
            cycles,
            warmup: None,
        }
    }
}

/// One TLB level's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LevelReport {
    pub name: String,
    pub entries: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    /// Misses per lookup of this level.
    pub miss_ratio: f64,
    /// Misses per thousand references.
    pub mpki: f64,
    /// Cycles its hits cost (hits × the level's hit_cycles).
    pub hit_cycles: f64,
    /// Hits by the size of the entry hit, misses by the size of the translation that
    /// served them.
    pub by_size: Vec<SizeCounts>,
}

/// The results of a run, for a table or JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub machine: String,
    /// The dotted-key settings the machine was made with from `machine` (`--set`,
    /// `Machine.with_overrides`, a sweep's keys).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub settings: std::collections::BTreeMap<String, toml::Value>,
    pub counts: Counts,
    pub levels: Vec<LevelReport>,
    pub walk_caches: Vec<WalkCacheReport>,
    pub walk_refs_per_walk: f64,
    pub walk_lines_per_walk: f64,
    pub page_table_bytes: u64,
    pub frames_used: u64,
    pub cycles: Cycles,
    /// TLB hits, walks and page faults as a share of all cycles.
    pub translation_overhead_percent: f64,
    /// TLB hits and walks as a share of the cycles of the run without page faults.
    pub tlb_overhead_percent: f64,
    /// The superpage sizes `fragmentation` gives usable shares for.
    pub fragmentation_sizes: Vec<String>,
    /// Free memory over time (buddy allocator only), the last sample at the end.
    pub fragmentation: Vec<FragmentationSample>,
    /// The promotion policy's own counts.
    pub policy_stats: std::collections::BTreeMap<String, u64>,
    /// Frames a policy set aside and has not mapped (reservations) at the end.
    pub reserved_idle_frames: u64,
    /// The data caches' counts, if modelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::cache::CacheReport>,
    /// The resident set and its daemon, under `[paging]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paging: Option<PagingReport>,
    /// The most frames in use at any point (after a batch or an event).
    pub frames_peak: u64,
    /// Another program's file cache in memory (`frames.cached`), and what the page
    /// daemon took from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_cache: Option<crate::frames::FileCacheReport>,
    /// Range translations: the range unit and eager paging, if configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranges: Option<RangesReport>,
    /// Under `[virtualization]`: the two-dimensional walks by dimension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtualization: Option<crate::virt::VirtualizationReport>,
    /// With a warm-up (`--warmup`): what its references counted and cost, left out
    /// of everything above (see `steady.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<WarmupReport>,
}

/// What the warm-up counted and cost: the references left out of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WarmupReport {
    pub references: u64,
    pub walks: u64,
    pub page_faults: u64,
    /// Pages eager paging allocated ahead of use during the warm-up.
    pub eager_pages: u64,
    pub cycles: Cycles,
    /// As the report's: translation (hits, walks, faults, eager paging) over all
    /// cycles, and the TLB's share without page faults.
    pub translation_overhead_percent: f64,
    pub tlb_overhead_percent: f64,
}

/// What range translations did: the range TLB (or direct segment) and eager paging.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RangesReport {
    pub unit: Option<crate::range::RangeUnitReport>,
    pub eager: Option<crate::range::EagerReport>,
}

/// The resident set and the page daemon's work (`crate::pressure`; the counts of
/// reclaims, major faults and demotions are in `Counts`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PagingReport {
    /// The limit in base pages (0: none), the resident set at the end, and the largest
    /// the daemon ever left (never above the limit).
    pub resident_limit_pages: u64,
    pub resident_pages: u64,
    pub max_resident_after_daemon: u64,
    pub daemon_wakes: u64,
    /// Base pages in the swap store at the end.
    pub swapped_pages: u64,
    /// Promotions refused because a page of the candidate was in the swap store.
    pub promotions_refused_swapped: u64,
    /// Free blocks of each superpage size the daemon's frees completed, smallest size
    /// first (a JSON object by size).
    #[serde(serialize_with = "as_map")]
    pub blocks_restored: Vec<(String, u64)>,
}

/// Pairs as a map, in their order.
fn as_map<S: serde::Serializer>(pairs: &[(String, u64)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(pairs.len()))?;
    for (k, v) in pairs {
        m.serialize_entry(k, v)?;
    }
    m.end()
}
