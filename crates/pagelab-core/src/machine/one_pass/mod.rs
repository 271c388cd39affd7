//! Every geometry of one TLB level in one run: machines that differ only in the sets
//! and ways of their last-level TLB's first array, run over a trace at once.
//!
//! The levels below the last one are filled with the translation whatever the last
//! level held, so the stream of lookups that reaches it, its input, is the same for
//! every geometry of it: the misses of the levels below. The pass runs a *front*
//! machine, the configuration without that level, whose walks are exactly that
//! stream in order; beside each walk, the stack algorithm ([`AllAssoc`]) finds which
//! geometries would have hit. Without walk caches a walk of a page costs the same in
//! every machine, so each geometry's walks are the front's less the lookups it hit;
//! with them, the front walks without any and each geometry that missed takes the
//! walk (and the retry after a fault) through walk caches of its own. Each report is
//! the front's with the level and its walks put back.
//!
//! What allows it is checked before ([`OnePass::plan`]: LRU, the last level, no
//! data caches or other state that walks, data and promotions share) and after the run (no
//! translation larger than the base page, no TLB flush or invalidation): when the
//! run shows that it was not exact, [`OnePassError::Inexact`] says why and the
//! configurations must run one by one.

use super::*;
use crate::config::PromotionConfig;
use crate::config::{LevelConfig, TlbConfig};
use crate::tlb::all_assoc::AllAssoc;
use crate::tlb::hierarchy::SizeCounts;

mod tap;
pub(super) use tap::{Seen, Tap};

/// Why a pass gave no reports.
#[derive(Debug, thiserror::Error)]
pub enum OnePassError {
    /// The trace could not be read (or the front machine failed on it): as a
    /// machine's run of it would fail.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The run did something one pass cannot follow: run each configuration alone.
    #[error("one pass is not exact here: {0}")]
    Inexact(String),
}

/// Configurations that one pass can run, and the front machine that does.
#[derive(Clone, Debug)]
pub struct OnePass {
    configs: Vec<MachineConfig>,
    front: MachineConfig,
    /// The level that varies (the last), its name, and each configuration's
    /// (sets, ways) of its first array.
    level: usize,
    name: String,
    geometries: Vec<(usize, usize)>,
}

fn levels(c: &MachineConfig) -> Option<&[LevelConfig]> {
    match &c.tlb {
        TlbConfig::Hierarchy(h) => Some(&h.levels),
        TlbConfig::SetAssociative(_) => None,
    }
}

fn levels_mut(c: &mut MachineConfig) -> &mut Vec<LevelConfig> {
    match &mut c.tlb {
        TlbConfig::Hierarchy(h) => &mut h.levels,
        TlbConfig::SetAssociative(_) => unreachable!("checked to be a hierarchy"),
    }
}

/// `c` without its settings, and with 1 × 1 for the geometry one pass varies.
fn blank(c: &MachineConfig) -> Option<MachineConfig> {
    let mut n = c.clone();
    n.settings.clear();
    levels(&n)?;
    let a = levels_mut(&mut n).last_mut()?.arrays.first_mut()?;
    (a.sets, a.ways) = (1, 1);
    Some(n)
}

impl OnePass {
    /// What configurations that [`OnePass::plan`] may run together share: equal for
    /// those that differ only in the geometry it varies (none for a single TLB).
    pub fn family(c: &MachineConfig) -> Option<String> {
        blank(c).map(|n| n.to_toml())
    }

    /// How `configs` run in one pass, or why they cannot: they must differ in nothing
    /// but the sets and ways of the first array of the last TLB level of a hierarchy
    /// (an LRU array that holds the base page, with no range unit, where the misses of
    /// both sides end, below other levels), with no data caches, promotion, memory
    /// pressure, range translations, coalescing or virtualization.
    pub fn plan(configs: &[MachineConfig]) -> Result<OnePass, String> {
        let first = configs.first().ok_or("no configurations")?;
        let Some(ls) = levels(first) else {
            return Err(
                "the TLB is one level (tlb.kind = \"set-associative\"), not a hierarchy".into(),
            );
        };
        let Some(level) = ls.len().checked_sub(1) else {
            return Err("the TLB hierarchy has no levels".into());
        };
        let last = &ls[level];
        let base = blank(first).ok_or("the last TLB level has no array")?;
        let mut geometries = Vec::with_capacity(configs.len());
        for c in configs {
            if blank(c).as_ref() != Some(&base) {
                return Err(format!(
                    "the configurations differ in more than the sets and ways of level {:?}'s first array",
                    last.name
                ));
            }
            let a = &levels(c).expect("blanked")[level].arrays[0];
            geometries.push((a.sets, a.ways));
        }
        let array = &last.arrays[0];
        let refuse = |why: &str| Err(format!("level {:?}: {why}", last.name));
        if array.replacement != "lru" {
            return refuse("its replacement is not lru (the stack algorithm follows LRU only)");
        }
        if !array.page_sizes.contains(&first.base_page) {
            return refuse("its first array does not hold the base page");
        }
        if last.range.is_some() {
            return refuse("it has a range unit");
        }
        // Every walk of the front must be a lookup of the level: both sides end there.
        for (side, what) in [(0, "data references"), (1, "instruction fetches")] {
            let mut at = ls.iter().position(|l| l.serves.covers(side));
            let mut end = None;
            while let Some(i) = at {
                end = Some(i);
                at = ls[i]
                    .parent
                    .as_ref()
                    .and_then(|p| ls.iter().position(|l| &l.name == p));
            }
            if end != Some(level) {
                return refuse(&format!("the misses of {what} do not reach it"));
            }
        }
        if geometries.iter().any(|&(s, w)| s == 0 || w == 0) {
            return refuse("a geometry has no sets or no ways");
        }
        let shared = [
            (
                !first.cache.is_off(),
                "data caches (walks and data share them)",
            ),
            (
                !matches!(first.promotion, PromotionConfig::None {}),
                "a promotion policy",
            ),
            (!first.paging.is_default(), "memory pressure ([paging])"),
            (!first.ranges.is_default(), "range translations ([ranges])"),
            (first.coalescing.is_some(), "coalescing TLB entries"),
            (first.virtualization.is_some(), "virtualization"),
        ];
        if let Some((_, what)) = shared.iter().find(|(on, _)| *on) {
            return Err(format!("the machine has {what}"));
        }
        let mut front = base;
        // The front walks without walk caches: each geometry has its own.
        front.walk_caches.clear();
        let name = last.name.clone();
        let ls = levels_mut(&mut front);
        ls.pop();
        if ls.is_empty() {
            return refuse("it is the only level");
        }
        for l in ls.iter_mut().filter(|l| l.parent.as_deref() == Some(&name)) {
            l.parent = None;
        }
        Machine::build(&front).map_err(|e| format!("without level {name:?}: {e}"))?;
        Ok(OnePass {
            configs: configs.to_vec(),
            front,
            level,
            name,
            geometries,
        })
    }

    /// The level whose geometries vary.
    pub fn level(&self) -> &str {
        &self.name
    }

    /// Run the trace once: each configuration's report, in their order, as its own
    /// run would give it.
    pub fn run(
        &self,
        reader: &mut dyn TraceReader,
        path: &Path,
        after_batch: impl FnMut(u64, u64),
    ) -> Result<Vec<Report>, OnePassError> {
        let inexact = |e: crate::config::ConfigError| OnePassError::Inexact(e.to_string());
        let mut m = Machine::build(&self.front).map_err(inexact)?;
        // Free memory is sampled by the sizes the whole hierarchy's last level holds.
        m.fragmentation = Machine::build(&self.configs[0])
            .map_err(inexact)?
            .fragmentation;
        let base = self.front.base_page;
        let stacks = AllAssoc::new(&self.geometries);
        let (mut geometries, mut caches) = (Vec::new(), Vec::new());
        if !self.configs[0].walk_caches.is_empty() {
            for (c, &(sets, ways)) in self.configs.iter().zip(&self.geometries) {
                geometries.push((stacks.family(sets).expect("asked for"), ways));
                caches.push(Machine::build(c).map_err(inexact)?.walker.walk_caches);
            }
        }
        m.walker.tap = Some(Box::new(Tap {
            walks: vec![Default::default(); caches.len()],
            stacks,
            base,
            other_sizes: 0,
            marks: Vec::new(),
            geometries,
            caches,
        }));
        m.run_trace(reader, path, after_batch)?;
        let tap = m.walker.tap.take().expect("set above");
        let why = if tap.other_sizes > 0 || m.counts.large_faults > 0 {
            Some("a translation larger than the base page")
        } else if m.tlb.invalidations() > 0 {
            Some("TLB entries were flushed or invalidated")
        } else if tap.stacks.references() != m.counts.walks {
            // Every walk after a miss of the levels below is the level's lookup.
            Some("a walk was counted that the level would not have seen")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(OnePassError::Inexact(why.into()));
        }
        // Through its own walk caches, a geometry walks once for each of its misses.
        for (w, &(sets, ways)) in tap.walks.iter().zip(&self.geometries) {
            let hits = tap.stacks.counts(sets, ways).expect("asked for").hits;
            if w.walks + hits != m.counts.walks {
                let why = "a geometry's walks are not its misses";
                return Err(OnePassError::Inexact(why.into()));
            }
        }
        let front = m.report();
        Ok(self
            .configs
            .iter()
            .zip(&self.geometries)
            .enumerate()
            .map(|(g, (c, &(sets, ways)))| {
                let counts = tap.stacks.counts(sets, ways).expect("asked for");
                let own = tap.caches.get(g).map(|w| (tap.walks[g], w));
                let mut r = self.report(&front, c, counts, own);
                // Each sample's walks, less the hits so far (all of them at the end).
                for s in &mut r.fragmentation {
                    s.walks -= match tap.marks.iter().position(|&m| m == s.references) {
                        Some(i) => tap.stacks.hits_at(i, sets, ways).expect("marked"),
                        None => counts.hits,
                    };
                }
                r
            })
            .collect())
    }

    /// The front's report with the level put back as `config` has it, and the walks
    /// its hits saved taken out: as [`Machine::report`] computes it.
    fn report(
        &self,
        front: &Report,
        config: &MachineConfig,
        at: crate::tlb::all_assoc::AssocCounts,
        own: Option<(tap::Walks, &crate::tlb::WalkCaches)>,
    ) -> Report {
        let l = &levels(config).expect("planned")[self.level];
        let mut r = front.clone();
        r.machine = config.name.clone();
        r.settings = config.settings.clone();
        r.counts.walks -= at.hits;
        match own {
            // Through the geometry's own walk caches, the retries after faults too.
            Some((w, caches)) => {
                r.counts.walk_refs = w.refs;
                r.counts.walk_refs_skipped = w.skipped;
                r.counts.walk_lines = w.lines;
                r.counts.fault_walk_refs = w.fault_refs;
                r.walk_caches = caches.report();
            }
            // A walk costs the same in every machine: the front's less those hit.
            None => {
                r.counts.walk_refs -= at.hit_refs;
                r.counts.walk_lines -= at.hit_lines;
            }
        }
        let ratio = |n: u64, d: u64| if d > 0 { n as f64 / d as f64 } else { 0.0 };
        let references = r.counts.references;
        let per_k = |n: u64| {
            if references > 0 {
                1000.0 * n as f64 / references as f64
            } else {
                0.0
            }
        };
        let size = self.front.base_page.to_string();
        let lookups = at.hits + at.misses;
        let level = LevelReport {
            name: l.name.clone(),
            entries: l.arrays.iter().map(|a| (a.sets * a.ways) as u64).sum(),
            hits: at.hits,
            misses: at.misses,
            evictions: at.evictions,
            miss_ratio: ratio(at.misses, lookups),
            mpki: per_k(at.misses),
            hit_cycles: at.hits as f64 * l.hit_cycles,
            by_size: (lookups > 0)
                .then_some(SizeCounts {
                    size,
                    hits: at.hits,
                    misses: at.misses,
                })
                .into_iter()
                .collect(),
        };
        r.levels.insert(self.level, level);
        r.walk_refs_per_walk = ratio(r.counts.walk_refs, r.counts.walks);
        r.walk_lines_per_walk = ratio(r.counts.walk_lines, r.counts.walks);
        // As Machine::report_whole sums them (no range unit: its term is 0.0).
        let hit_cycles = r.levels.iter().map(|l| l.hit_cycles).sum::<f64>() + 0.0;
        let cost = crate::cost::build(&config.cost).expect("the configuration built");
        let fresh = cost.cycles(&r.counts, hit_cycles);
        r.cycles.tlb_hits = fresh.tlb_hits;
        r.cycles.walks = fresh.walks;
        r.cycles.page_faults = fresh.page_faults;
        r.translation_overhead_percent = r.cycles.overhead_percent();
        r.tlb_overhead_percent = r.cycles.tlb_percent();
        r
    }
}
