//! A run's report as the table `pagelab simulate` prints (`Display`).

use super::report::{RangesReport, Report};
use crate::virt::VirtualizationReport;
use std::fmt;

impl VirtualizationReport {
    /// The rows of the report's table, below the walks'.
    fn rows(
        &self,
        f: &mut fmt::Formatter<'_>,
        row: &mut impl FnMut(&mut fmt::Formatter<'_>, &str, String) -> fmt::Result,
    ) -> fmt::Result {
        row(
            f,
            "  guest / host references",
            format!(
                "{} / {} ({:.2} / {:.2} a walk)",
                self.guest_refs, self.host_refs, self.guest_refs_per_walk, self.host_refs_per_walk
            ),
        )?;
        for w in &self.host_walk_caches {
            row(
                f,
                &format!(
                    "  host walk cache L{} ({} entries) hits",
                    w.level, w.entries
                ),
                format!("{} ({:.1}%)", w.hits, 100.0 * w.hit_ratio),
            )?;
        }
        if self.nested_tlb_hits + self.nested_tlb_misses > 0 {
            row(
                f,
                "  nested TLB hits / misses",
                format!("{} / {}", self.nested_tlb_hits, self.nested_tlb_misses),
            )?;
        }
        row(
            f,
            "  host walks (references saved)",
            format!("{} ({})", self.host_walks, self.host_refs_skipped),
        )?;
        row(
            f,
            "  host faults (large)",
            format!("{} ({})", self.host_faults, self.host_large_faults),
        )?;
        row(f, "  splintered entries", self.splintered.to_string())?;
        row(
            f,
            "  host table bytes / frames used",
            format!("{} / {}", self.host_table_bytes, self.host_frames_used),
        )
    }
}

impl RangesReport {
    /// The rows of the report's table (`warmed`: after a warm-up, whose report keeps
    /// the pages never used over the whole run).
    fn rows(
        &self,
        f: &mut fmt::Formatter<'_>,
        warmed: bool,
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
                if warmed {
                    "eager pages: allocated / never (whole run)"
                } else {
                    "eager pages: allocated / never used"
                },
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
        if let Some(v) = &self.virtualization {
            v.rows(f, &mut row)?;
        }
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
            r.rows(f, self.warmup.is_some(), &mut row)?;
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
