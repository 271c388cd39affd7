//! Steady state: a run's results without its first references (`--warmup`).
//!
//! The machine runs the warm-up like any other part of the trace — it fills the TLBs,
//! the walk caches, the data caches and the page table — then keeps the report it had
//! at that point. The steady-state report is the end report less that one: every
//! count and cost is a difference, every ratio is computed again from the differences,
//! and what is a state at a moment (memory in use, the page table's size, the resident
//! set, live ranges and reservations) is the state at the end. What the warm-up itself
//! cost — its cold page faults and the eager paging of the memory it allocated above
//! all — is reported apart ([`WarmupReport`]).
//!
//! Each part is taken apart field by field (a destructuring `let`), so a count added
//! to a report does not compile until it is said here whether it is subtracted.

use super::report::{LevelReport, PagingReport, RangesReport, Report, WarmupReport};
use crate::cache::{CacheLevelReport, CacheReport, PerKind};
use crate::cost::Cycles;
use crate::counts::Counts;
use crate::frames::FileCacheReport;
use crate::range::{EagerReport, RangeUnitReport};
use crate::tlb::hierarchy::SizeCounts;
use crate::tlb::walk_cache::WalkCacheReport;

impl WarmupReport {
    pub fn of(warm: &Report) -> WarmupReport {
        WarmupReport {
            references: warm.counts.references,
            walks: warm.counts.walks,
            page_faults: warm.counts.page_faults,
            eager_pages: warm.counts.eager_pages,
            cycles: warm.cycles.clone(),
            translation_overhead_percent: warm.translation_overhead_percent,
            tlb_overhead_percent: warm.tlb_overhead_percent,
        }
    }
}

fn ratio(n: u64, d: u64) -> f64 {
    if d > 0 {
        n as f64 / d as f64
    } else {
        0.0
    }
}

/// `end` less `warm` for a count that only grows.
fn less(end: u64, warm: u64) -> u64 {
    debug_assert!(end >= warm, "a count went down: {warm} then {end}");
    end.saturating_sub(warm)
}

impl Report {
    /// The report of what came after `warm`, the report of the same run at the end of
    /// its warm-up; `state` tells which of the policy's stats are a state at a moment
    /// (kept as at the end) rather than counts.
    pub fn since(&self, warm: &Report, state: &dyn Fn(&str) -> bool) -> Report {
        let counts = self.counts.since(&warm.counts);
        let cycles = self.cycles.since(&warm.cycles);
        let per_k = |n: u64| 1000.0 * ratio(n, counts.references);
        let levels = self
            .levels
            .iter()
            .zip(&warm.levels)
            .map(|(l, w)| l.since(w, &per_k))
            .collect();
        let Report {
            machine,
            settings,
            counts: _,
            levels: _,
            walk_caches,
            walk_refs_per_walk: _,
            walk_lines_per_walk: _,
            page_table_bytes,
            frames_used,
            cycles: _,
            translation_overhead_percent: _,
            tlb_overhead_percent: _,
            fragmentation_sizes,
            fragmentation,
            policy_stats,
            reserved_idle_frames,
            cache,
            paging,
            frames_peak,
            file_cache,
            ranges,
            virtualization,
            warmup: _,
        } = self;
        Report {
            machine: machine.clone(),
            settings: settings.clone(),
            levels,
            walk_caches: walk_caches
                .iter()
                .zip(&warm.walk_caches)
                .map(|(c, w)| c.since(w))
                .collect(),
            walk_refs_per_walk: ratio(counts.walk_refs, counts.walks),
            walk_lines_per_walk: ratio(counts.walk_lines, counts.walks),
            page_table_bytes: *page_table_bytes,
            frames_used: *frames_used,
            translation_overhead_percent: cycles.overhead_percent(),
            tlb_overhead_percent: cycles.tlb_percent(),
            cycles,
            counts,
            fragmentation_sizes: fragmentation_sizes.clone(),
            fragmentation: fragmentation.clone(),
            policy_stats: policy_stats
                .iter()
                .map(|(k, &v)| {
                    let at_warm = warm.policy_stats.get(k).copied().unwrap_or(0);
                    (k.clone(), if state(k) { v } else { less(v, at_warm) })
                })
                .collect(),
            reserved_idle_frames: *reserved_idle_frames,
            cache: cache
                .as_ref()
                .zip(warm.cache.as_ref())
                .map(|(c, w)| c.since(w)),
            paging: paging
                .as_ref()
                .zip(warm.paging.as_ref())
                .map(|(p, w)| p.since(w)),
            frames_peak: *frames_peak,
            file_cache: file_cache
                .as_ref()
                .zip(warm.file_cache.as_ref())
                .map(|(f, w)| f.since(w)),
            ranges: ranges
                .as_ref()
                .zip(warm.ranges.as_ref())
                .map(|(r, w)| r.since(w)),
            virtualization: virtualization
                .as_ref()
                .zip(warm.virtualization.as_ref())
                .map(|(v, w)| v.since(w)),
            warmup: Some(WarmupReport::of(warm)),
        }
    }
}

impl Counts {
    /// The counts made after `warm`.
    pub fn since(&self, warm: &Counts) -> Counts {
        let Counts {
            references,
            by_kind,
            translations,
            page_crossing,
            walks,
            walk_refs,
            walk_refs_skipped,
            walk_lines,
            page_faults,
            fault_walk_refs,
            address_space_switches,
            large_faults,
            policy_misses,
            promotions,
            promotion_failures,
            promotions_in_place,
            pages_copied,
            pages_remapped,
            pages_zeroed,
            promotion_table_refs,
            controller_lookups,
            major_faults,
            pages_reclaimed,
            pages_written_back,
            contiguity_restored,
            demotions_pressure,
            demotions_write,
            repromotions,
            demotion_table_refs,
            range_hits,
            range_walks,
            range_walk_refs,
            eager_pages,
        } = self;
        Counts {
            references: less(*references, warm.references),
            by_kind: std::array::from_fn(|i| less(by_kind[i], warm.by_kind[i])),
            translations: less(*translations, warm.translations),
            page_crossing: less(*page_crossing, warm.page_crossing),
            walks: less(*walks, warm.walks),
            walk_refs: less(*walk_refs, warm.walk_refs),
            walk_refs_skipped: less(*walk_refs_skipped, warm.walk_refs_skipped),
            walk_lines: less(*walk_lines, warm.walk_lines),
            page_faults: less(*page_faults, warm.page_faults),
            fault_walk_refs: less(*fault_walk_refs, warm.fault_walk_refs),
            address_space_switches: less(*address_space_switches, warm.address_space_switches),
            large_faults: less(*large_faults, warm.large_faults),
            policy_misses: less(*policy_misses, warm.policy_misses),
            promotions: less(*promotions, warm.promotions),
            promotion_failures: less(*promotion_failures, warm.promotion_failures),
            promotions_in_place: less(*promotions_in_place, warm.promotions_in_place),
            pages_copied: less(*pages_copied, warm.pages_copied),
            pages_remapped: less(*pages_remapped, warm.pages_remapped),
            pages_zeroed: less(*pages_zeroed, warm.pages_zeroed),
            promotion_table_refs: less(*promotion_table_refs, warm.promotion_table_refs),
            controller_lookups: less(*controller_lookups, warm.controller_lookups),
            major_faults: less(*major_faults, warm.major_faults),
            pages_reclaimed: less(*pages_reclaimed, warm.pages_reclaimed),
            pages_written_back: less(*pages_written_back, warm.pages_written_back),
            contiguity_restored: less(*contiguity_restored, warm.contiguity_restored),
            demotions_pressure: less(*demotions_pressure, warm.demotions_pressure),
            demotions_write: less(*demotions_write, warm.demotions_write),
            repromotions: less(*repromotions, warm.repromotions),
            demotion_table_refs: less(*demotion_table_refs, warm.demotion_table_refs),
            range_hits: less(*range_hits, warm.range_hits),
            range_walks: less(*range_walks, warm.range_walks),
            range_walk_refs: less(*range_walk_refs, warm.range_walk_refs),
            eager_pages: less(*eager_pages, warm.eager_pages),
        }
    }
}

impl Cycles {
    /// The cycles spent after `warm`.
    pub fn since(&self, warm: &Cycles) -> Cycles {
        let Cycles {
            base,
            tlb_hits,
            walks,
            page_faults,
            major_faults,
            promotions,
            policy,
            range_walks,
            eager_paging,
        } = self;
        Cycles {
            base: base - warm.base,
            tlb_hits: tlb_hits - warm.tlb_hits,
            walks: walks - warm.walks,
            page_faults: page_faults - warm.page_faults,
            major_faults: major_faults - warm.major_faults,
            promotions: promotions - warm.promotions,
            policy: policy - warm.policy,
            range_walks: range_walks - warm.range_walks,
            eager_paging: eager_paging - warm.eager_paging,
        }
    }
}

impl LevelReport {
    fn since(&self, warm: &LevelReport, per_k: &dyn Fn(u64) -> f64) -> LevelReport {
        let LevelReport {
            name,
            entries,
            hits,
            misses,
            evictions,
            miss_ratio: _,
            mpki: _,
            hit_cycles,
            by_size,
        } = self;
        let (hits, misses) = (less(*hits, warm.hits), less(*misses, warm.misses));
        LevelReport {
            name: name.clone(),
            entries: *entries,
            hits,
            misses,
            evictions: less(*evictions, warm.evictions),
            miss_ratio: ratio(misses, hits + misses),
            mpki: per_k(misses),
            hit_cycles: hit_cycles - warm.hit_cycles,
            // Sizes appear as they are first used: one absent at the warm-up is 0.
            by_size: by_size
                .iter()
                .map(|s| {
                    let w = warm.by_size.iter().find(|w| w.size == s.size);
                    SizeCounts {
                        size: s.size.clone(),
                        hits: less(s.hits, w.map_or(0, |w| w.hits)),
                        misses: less(s.misses, w.map_or(0, |w| w.misses)),
                    }
                })
                .collect(),
        }
    }
}

impl WalkCacheReport {
    pub(crate) fn since(&self, warm: &WalkCacheReport) -> WalkCacheReport {
        let WalkCacheReport {
            level,
            entries,
            hits,
            misses,
            hit_ratio: _,
        } = self;
        let (hits, misses) = (less(*hits, warm.hits), less(*misses, warm.misses));
        WalkCacheReport {
            level: *level,
            entries: *entries,
            hits,
            misses,
            hit_ratio: ratio(hits, hits + misses),
        }
    }
}

fn counts_since(end: &PerKind<u64>, warm: &PerKind<u64>) -> PerKind<u64> {
    PerKind {
        data: less(end.data, warm.data),
        walk: less(end.walk, warm.walk),
        copy: less(end.copy, warm.copy),
    }
}

fn cycles_since(end: &PerKind<f64>, warm: &PerKind<f64>) -> PerKind<f64> {
    PerKind {
        data: end.data - warm.data,
        walk: end.walk - warm.walk,
        copy: end.copy - warm.copy,
    }
}

impl CacheReport {
    fn since(&self, warm: &CacheReport) -> CacheReport {
        let CacheReport {
            levels,
            memory_cycles,
            memory_accesses,
            cycles,
        } = self;
        CacheReport {
            levels: levels
                .iter()
                .zip(&warm.levels)
                .map(|(l, w)| {
                    let CacheLevelReport {
                        name,
                        sets,
                        ways,
                        line_bytes,
                        size_bytes,
                        hit_cycles,
                        hits,
                        misses,
                        cycles,
                        miss_ratio: _,
                        flushed,
                    } = l;
                    let (hits, misses) =
                        (counts_since(hits, &w.hits), counts_since(misses, &w.misses));
                    CacheLevelReport {
                        name: name.clone(),
                        sets: *sets,
                        ways: *ways,
                        line_bytes: *line_bytes,
                        size_bytes: *size_bytes,
                        hit_cycles: *hit_cycles,
                        miss_ratio: ratio(misses.total(), misses.total() + hits.total()),
                        hits,
                        misses,
                        cycles: cycles_since(cycles, &w.cycles),
                        flushed: less(*flushed, w.flushed),
                    }
                })
                .collect(),
            memory_cycles: *memory_cycles,
            memory_accesses: counts_since(memory_accesses, &warm.memory_accesses),
            cycles: cycles_since(cycles, &warm.cycles),
        }
    }
}

impl PagingReport {
    fn since(&self, warm: &PagingReport) -> PagingReport {
        let PagingReport {
            resident_limit_pages,
            resident_pages,
            max_resident_after_daemon,
            daemon_wakes,
            swapped_pages,
            promotions_refused_swapped,
            blocks_restored,
        } = self;
        PagingReport {
            resident_limit_pages: *resident_limit_pages,
            resident_pages: *resident_pages,
            max_resident_after_daemon: *max_resident_after_daemon,
            daemon_wakes: less(*daemon_wakes, warm.daemon_wakes),
            swapped_pages: *swapped_pages,
            promotions_refused_swapped: less(
                *promotions_refused_swapped,
                warm.promotions_refused_swapped,
            ),
            blocks_restored: blocks_restored
                .iter()
                .zip(&warm.blocks_restored)
                .map(|((s, n), (_, w))| (s.clone(), less(*n, *w)))
                .collect(),
        }
    }
}

impl FileCacheReport {
    fn since(&self, warm: &FileCacheReport) -> FileCacheReport {
        let FileCacheReport {
            frames_at_start: _,
            evicted_for_memory,
            evicted_for_contiguity,
            frames_at_end,
        } = self;
        FileCacheReport {
            // The steady state begins where the warm-up ended.
            frames_at_start: warm.frames_at_end,
            evicted_for_memory: less(*evicted_for_memory, warm.evicted_for_memory),
            evicted_for_contiguity: less(*evicted_for_contiguity, warm.evicted_for_contiguity),
            frames_at_end: *frames_at_end,
        }
    }
}

impl RangesReport {
    fn since(&self, warm: &RangesReport) -> RangesReport {
        let RangesReport { unit, eager } = self;
        RangesReport {
            unit: unit.as_ref().zip(warm.unit.as_ref()).map(|(u, w)| {
                let RangeUnitReport {
                    name,
                    kind,
                    beside,
                    entries,
                    hits,
                    misses,
                    range_walks,
                    range_walk_refs,
                    range_walk_lines,
                    fills,
                } = u;
                RangeUnitReport {
                    name: name.clone(),
                    kind: kind.clone(),
                    beside: beside.clone(),
                    entries: *entries,
                    hits: less(*hits, w.hits),
                    misses: less(*misses, w.misses),
                    range_walks: less(*range_walks, w.range_walks),
                    range_walk_refs: less(*range_walk_refs, w.range_walk_refs),
                    range_walk_lines: less(*range_walk_lines, w.range_walk_lines),
                    fills: less(*fills, w.fills),
                }
            }),
            eager: eager.as_ref().zip(warm.eager.as_ref()).map(|(e, w)| {
                let EagerReport {
                    regions_eager,
                    regions_demand,
                    pages_allocated,
                    pages_freed,
                    pages_untouched,
                    ranges_made,
                    ranges_live,
                    range_sizes,
                    largest_range_pages,
                    table_nodes,
                    out_of_memory,
                    unmappable,
                } = e;
                EagerReport {
                    regions_eager: less(*regions_eager, w.regions_eager),
                    regions_demand: less(*regions_demand, w.regions_demand),
                    pages_allocated: less(*pages_allocated, w.pages_allocated),
                    pages_freed: less(*pages_freed, w.pages_freed),
                    // Of every page allocated (in the warm-up too), those never used
                    // by the end: a state, as memory in use is.
                    pages_untouched: *pages_untouched,
                    ranges_made: less(*ranges_made, w.ranges_made),
                    ranges_live: *ranges_live,
                    range_sizes: range_sizes.clone(),
                    largest_range_pages: *largest_range_pages,
                    table_nodes: *table_nodes,
                    out_of_memory: less(*out_of_memory, w.out_of_memory),
                    unmappable: less(*unmappable, w.unmappable),
                }
            }),
        }
    }
}
