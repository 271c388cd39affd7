//! A run's results: the report of every level, walk cache and count, as a table
//! (`Display`) or JSON (`Serialize`).

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
    /// With a warm-up (`--warmup`): what its references counted and cost, left out
    /// of everything above (see [`super::steady`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<super::steady::WarmupReport>,
}

/// What range translations did: the range TLB (or direct segment) and eager paging.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RangesReport {
    pub unit: Option<crate::range::RangeUnitReport>,
    pub eager: Option<crate::range::EagerReport>,
}

impl RangesReport {
    /// The rows of the report's table.
    fn rows(
        &self,
        f: &mut fmt::Formatter<'_>,
        row: &mut impl FnMut(&mut fmt::Formatter<'_>, &str, String) -> fmt::Result,
    ) -> fmt::Result {
        if let Some(u) = &self.unit {
            row(
                f,
                &format!("{} range walks (refs)", u.name),
                format!("{} ({})", u.range_walks, u.range_walk_refs),
            )?;
        }
        if let Some(e) = &self.eager {
            row(
                f,
                "eager regions (demand-paged)",
                format!("{} ({})", e.regions_eager, e.regions_demand),
            )?;
            row(
                f,
                "eager pages: allocated / never used",
                match e.pages_untouched {
                    Some(n) => format!("{} / {n}", e.pages_allocated),
                    None => format!("{} / (no range unit to tell)", e.pages_allocated),
                },
            )?;
            row(
                f,
                "ranges made / at end (largest, pages)",
                format!(
                    "{} / {} ({})",
                    e.ranges_made, e.ranges_live, e.largest_range_pages
                ),
            )?;
            let sizes: Vec<String> = e
                .range_sizes
                .iter()
                .map(|(s, n)| format!("{s}+: {n}"))
                .collect();
            if !sizes.is_empty() {
                row(f, "ranges by size", sizes.join(", "))?;
            }
        }
        Ok(())
    }
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

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        let mut row =
            |f: &mut fmt::Formatter<'_>, k: &str, v: String| writeln!(f, "  {k:<34} {v:>16}");
        writeln!(f, "machine {}", self.machine)?;
        if !self.settings.is_empty() {
            let set: Vec<String> = self
                .settings
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            writeln!(f, "  set {}", set.join(" "))?;
        }
        if let Some(w) = &self.warmup {
            writeln!(
                f,
                "  steady state: after a warm-up of {} references, left out of every count and cost",
                w.references
            )?;
        }
        row(f, "references", c.references.to_string())?;
        for (i, kind) in crate::event::AccessKind::ALL.iter().enumerate() {
            if c.by_kind[i] > 0 {
                row(f, &format!("  {}", kind.name()), c.by_kind[i].to_string())?;
            }
        }
        row(
            f,
            "translations (page-crossing)",
            format!("{} ({})", c.translations, c.page_crossing),
        )?;
        for l in &self.levels {
            row(
                f,
                &format!("{} ({} entries) hits", l.name, l.entries),
                l.hits.to_string(),
            )?;
            row(f, &format!("{} misses", l.name), l.misses.to_string())?;
            row(
                f,
                &format!("{} miss ratio", l.name),
                format!("{:.6}", l.miss_ratio),
            )?;
            row(
                f,
                &format!("{} misses / 1000 refs", l.name),
                format!("{:.3}", l.mpki),
            )?;
            row(f, &format!("{} evictions", l.name), l.evictions.to_string())?;
            if l.by_size.len() > 1 || l.by_size.first().is_some_and(|s| s.size != "4K") {
                for s in &l.by_size {
                    row(
                        f,
                        &format!("{} {} hits / misses", l.name, s.size),
                        format!("{} / {}", s.hits, s.misses),
                    )?;
                }
            }
        }
        for w in &self.walk_caches {
            row(
                f,
                &format!("walk cache L{} ({} entries) hits", w.level, w.entries),
                format!("{} ({:.1}%)", w.hits, 100.0 * w.hit_ratio),
            )?;
        }
        row(f, "walks", c.walks.to_string())?;
        row(
            f,
            "walk memory references",
            format!("{} ({:.2}/walk)", c.walk_refs, self.walk_refs_per_walk),
        )?;
        if !self.walk_caches.is_empty() {
            row(
                f,
                "walk references saved by caches",
                c.walk_refs_skipped.to_string(),
            )?;
        }
        row(
            f,
            "walk cache lines",
            format!("{} ({:.2}/walk)", c.walk_lines, self.walk_lines_per_walk),
        )?;
        row(f, "page faults", c.page_faults.to_string())?;
        if c.large_faults > 0 {
            row(f, "  mapping a large page", c.large_faults.to_string())?;
        }
        if c.policy_misses > 0 || c.promotions + c.promotion_failures > 0 {
            row(f, "misses seen by the policy", c.policy_misses.to_string())?;
            row(
                f,
                "promotions (failed)",
                format!("{} ({})", c.promotions, c.promotion_failures),
            )?;
            row(
                f,
                "pages copied / remapped / zeroed",
                format!(
                    "{} / {} / {}",
                    c.pages_copied, c.pages_remapped, c.pages_zeroed
                ),
            )?;
            row(
                f,
                "promotion page-table refs",
                c.promotion_table_refs.to_string(),
            )?;
        }
        for (k, v) in &self.policy_stats {
            row(f, k, v.to_string())?;
        }
        if let Some(p) = &self.paging {
            if p.resident_limit_pages > 0 {
                row(
                    f,
                    "resident limit (base pages)",
                    p.resident_limit_pages.to_string(),
                )?;
                row(
                    f,
                    "resident at end (most after daemon)",
                    format!("{} ({})", p.resident_pages, p.max_resident_after_daemon),
                )?;
                row(f, "page daemon wakes", p.daemon_wakes.to_string())?;
                row(f, "pages reclaimed", c.pages_reclaimed.to_string())?;
                row(
                    f,
                    "  dirty (written back)",
                    c.pages_written_back.to_string(),
                )?;
                row(f, "major faults (swap-ins)", c.major_faults.to_string())?;
                row(f, "pages in swap at end", p.swapped_pages.to_string())?;
            }
            row(
                f,
                "demotions: pressure / write",
                format!("{} / {}", c.demotions_pressure, c.demotions_write),
            )?;
            row(f, "re-promotions", c.repromotions.to_string())?;
            if p.promotions_refused_swapped > 0 {
                row(
                    f,
                    "promotions refused (swapped pages)",
                    p.promotions_refused_swapped.to_string(),
                )?;
            }
            for (size, n) in &p.blocks_restored {
                row(f, &format!("free {size} blocks restored"), n.to_string())?;
            }
        }
        if self.reserved_idle_frames > 0 {
            row(
                f,
                "frames reserved, not populated",
                self.reserved_idle_frames.to_string(),
            )?;
        }
        row(f, "page-table bytes", self.page_table_bytes.to_string())?;
        row(
            f,
            "frames used (most at once)",
            format!("{} ({})", self.frames_used, self.frames_peak),
        )?;
        if let Some(r) = &self.ranges {
            r.rows(f, &mut row)?;
        }
        row(f, "cycles: references", format!("{:.0}", self.cycles.base))?;
        row(
            f,
            "cycles: TLB hits",
            format!("{:.0}", self.cycles.tlb_hits),
        )?;
        for l in self.levels.iter().filter(|l| l.hit_cycles > 0.0) {
            row(
                f,
                &format!("  {} hits", l.name),
                format!("{:.0}", l.hit_cycles),
            )?;
        }
        row(f, "cycles: walks", format!("{:.0}", self.cycles.walks))?;
        if self.cycles.promotions + self.cycles.policy > 0.0 {
            row(
                f,
                "cycles: promotions",
                format!("{:.0}", self.cycles.promotions),
            )?;
            row(
                f,
                "cycles: policy bookkeeping",
                format!("{:.0}", self.cycles.policy),
            )?;
        }
        row(
            f,
            "cycles: page faults",
            format!("{:.0}", self.cycles.page_faults),
        )?;
        if self.cycles.range_walks > 0.0 {
            row(
                f,
                "cycles: range walks",
                format!("{:.0}", self.cycles.range_walks),
            )?;
        }
        if self.cycles.eager_paging > 0.0 {
            row(
                f,
                "cycles: eager paging",
                format!("{:.0}", self.cycles.eager_paging),
            )?;
        }
        if self.cycles.major_faults > 0.0 {
            row(
                f,
                "cycles: major faults",
                format!("{:.0}", self.cycles.major_faults),
            )?;
        }
        row(
            f,
            "TLB overhead (hits, walks, promotion)",
            format!("{:.2}%", self.tlb_overhead_percent),
        )?;
        row(
            f,
            "translation overhead (+ faults)",
            format!("{:.2}%", self.translation_overhead_percent),
        )?;
        if let Some(w) = &self.warmup {
            row(
                f,
                "warm-up: page faults, eager pages",
                format!("{}, {}", w.page_faults, w.eager_pages),
            )?;
            row(
                f,
                "warm-up: translation overhead",
                format!("{:.2}%", w.translation_overhead_percent),
            )?;
        }
        if let Some(k) = &self.cache {
            write!(f, "{k}")?;
        }
        if let Some(c) = &self.file_cache {
            row(
                f,
                "file cache: frames at start, at end",
                format!("{}, {}", c.frames_at_start, c.frames_at_end),
            )?;
            row(
                f,
                "file cache: evicted for memory, for contiguity",
                format!("{}, {}", c.evicted_for_memory, c.evicted_for_contiguity),
            )?;
        }
        if !self.fragmentation.is_empty() {
            writeln!(
                f,
                "free memory over time (share usable for a page of each size):"
            )?;
            write!(f, "  {:>14} {:>12}", "references", "free frames")?;
            for s in &self.fragmentation_sizes {
                write!(f, " {s:>7}")?;
            }
            writeln!(f)?;
            for s in &self.fragmentation {
                write!(f, "  {:>14} {:>12}", s.references, s.free_frames)?;
                for u in &s.usable_share {
                    write!(f, " {u:>7.3}")?;
                }
                writeln!(f)?;
            }
        }
        Ok(())
    }
}
