//! The data TLBs' reach, measured: loads over one line in each of N pages, with 4 KiB
//! pages and with 2 MiB ones (the same lines, in a few large pages), N stepping through
//! the sizes TLBs have, the two timed in turn (each pair's difference kept, so that
//! what drifts between runs falls on both). While the TLBs hold N 4 KiB pages the two
//! cost the same; past the last level, each 4 KiB load walks. A random cycle over N
//! pages misses an LRU TLB of fewer than N entries at every load, so the step is sharp:
//! its place is the entries that hold 4 KiB pages.
//!
//! In a virtual machine CPUID can describe other TLBs than the processor has (this
//! one's says 128 second-level entries, and 2,560 to 4,096 pages load as on 2 MiB
//! pages, by run), so `calibrate -o` writes the measured entries in place of CPUID's
//! where they differ.

use super::Spread;
use pagelab_core::config::{Serves, TlbConfig};
use pagelab_core::{MachineConfig, PageSize};
use serde::{Deserialize, Serialize};

/// Loads over one line in each of `pages` 4 KiB pages.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Reach {
    pub pages: u64,
    /// The share of the 2 MiB run's region the kernel gave as huge pages.
    pub huge_share: f64,
    pub cycles_4k: Spread,
    pub cycles_2m: Spread,
    /// The two timed in turn, each pair's difference (4 KiB's less 2 MiB's): what
    /// drifts between runs falls on both.
    #[serde(default)]
    pub difference: Option<Spread>,
}

impl Reach {
    /// What 4 KiB pages add over 2 MiB ones: the median of the paired differences,
    /// or (from an older calibrate) the difference of the medians.
    fn added(&self) -> f64 {
        self.difference
            .map_or(self.cycles_4k.median - self.cycles_2m.median, |d| d.median)
    }
}

/// What the scan says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Steps {
    /// The most pages that load as fast as on 2 MiB pages (at least this many
    /// entries hold 4 KiB pages, fewer than `next`).
    pub entries: u64,
    /// The next footprint measured, where 4 KiB pages cost more.
    pub next: u64,
    /// The largest footprint measured, and what 4 KiB pages add over 2 MiB ones there.
    pub largest: u64,
    pub walk_cycles: f64,
}

/// What 4 KiB pages may add over 2 MiB ones and still count as the same: the noise of
/// the paired differences' medians (up to 3 cycles on this VM, around 2,048 to 3,072
/// pages); a second-level TLB hit, 7 cycles on Zen 4, is more.
const SAME_CYCLES: f64 = 3.0;

/// The step of a scan (footprints ascending; points whose 2 MiB run got fewer than 90 %
/// huge pages left out): the last footprint at which 4 KiB pages cost what 2 MiB ones
/// do; else why there is none.
///
/// Where the first level's misses cost more than [`SAME_CYCLES`], the step is the
/// first level's; [`apply`] then leaves the TLBs as they are.
pub fn steps(reach: &[Reach]) -> Result<Steps, String> {
    let points: Vec<(u64, f64)> = reach
        .iter()
        .filter(|r| r.huge_share >= 0.9)
        .map(|r| (r.pages, r.added()))
        .collect();
    let Some(&(largest, walk)) = points.last() else {
        return Err("the 2 MiB runs got no huge pages".into());
    };
    if walk < 2.0 * SAME_CYCLES {
        return Err(format!(
            "at {largest} pages, 4 KiB pages cost {walk:.1} cycles more than 2 MiB ones: no walk told from the noise"
        ));
    }
    let Some(last) = points.iter().rposition(|&(_, d)| d < SAME_CYCLES) else {
        return Err("4 KiB pages cost more than 2 MiB ones at every footprint".into());
    };
    Ok(Steps {
        entries: points[last].0,
        next: points[last + 1].0,
        largest,
        walk_cycles: walk,
    })
}

/// No last-level data TLB of an x86-64 processor holds fewer 4 KiB pages: Nehalem's
/// second-level TLB has 512 entries (Intel 64 and IA-32 Architectures Optimization
/// Reference Manual, Nehalem's TLBs), AMD's since Zen 1,536 and more. A step below it
/// is a first level's.
const FEWEST_LAST_LEVEL: u64 = 512;

/// The entries of a level's array that holds 4 KiB pages.
fn entries_4k(level: &pagelab_core::config::LevelConfig) -> Option<(usize, u64)> {
    level
        .arrays
        .iter()
        .position(|a| a.page_sizes.contains(&PageSize::K4))
        .map(|i| (i, (level.arrays[i].sets * level.arrays[i].ways) as u64))
}

/// Put the measured step into `config`'s last data TLB where its entries lie outside
/// what was measured (at least the step's footprint, fewer than the next one's): the
/// array keeps its ways and takes the fewest sets that hold the measured entries.
/// Nothing changes where the step is within the first level's entries, or below
/// [`FEWEST_LAST_LEVEL`] (it is a first level's). Returns what was changed.
pub fn apply(config: &mut MachineConfig, s: &Steps) -> Vec<String> {
    let TlbConfig::Hierarchy(h) = &mut config.tlb else {
        return Vec::new();
    };
    // The data side's levels, first level first.
    let data: Vec<usize> = h
        .levels
        .iter()
        .enumerate()
        .filter(|(_, l)| l.serves != Serves::Instruction && l.range.is_none())
        .map(|(i, _)| i)
        .collect();
    let (Some(&first), Some(&last)) = (data.first(), data.last()) else {
        return Vec::new();
    };
    let first_entries = entries_4k(&h.levels[first]).map_or(0, |e| e.1);
    if first == last || s.entries <= first_entries || s.entries < FEWEST_LAST_LEVEL {
        return Vec::new();
    }
    let next = s.next;
    let level = &mut h.levels[last];
    let Some((a, had)) = entries_4k(level) else {
        return Vec::new();
    };
    if (s.entries..next).contains(&had) {
        return Vec::new();
    }
    let array = &mut level.arrays[a];
    array.sets = s.entries.div_ceil(array.ways as u64).max(1) as usize;
    vec![format!(
        "tlb {}: {} entries ({} sets × {} ways), as {} pages load without a walk and {next} do not; not {had}",
        level.name,
        array.sets * array.ways,
        array.sets,
        array.ways,
        s.entries
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(points: &[(u64, f64)]) -> Vec<Reach> {
        let s = |median| Spread {
            median,
            min: median,
            max: median,
            runs: 3,
        };
        points
            .iter()
            .map(|&(pages, d)| Reach {
                pages,
                huge_share: 1.0,
                cycles_4k: s(4.0 + d),
                cycles_2m: s(4.0),
                difference: None,
            })
            .collect()
    }

    #[test]
    fn the_step_is_where_4k_pages_cost_more() {
        // Equal to 3,072 pages (the noise under 3 cycles), walks from 4,096; a point
        // without huge pages is left out.
        let mut r = scan(&[
            (64, 0.1),
            (768, 1.9),
            (1024, 0.5),
            (3072, 0.8),
            (4096, 4.5),
            (8192, 24.0),
            (16384, 32.0),
        ]);
        r[1].huge_share = 0.6;
        let s = steps(&r).unwrap();
        assert_eq!((s.entries, s.next, s.walk_cycles), (3072, 4096, 32.0));
        // The paired differences, where calibrate gives them, rule over the medians'.
        r[4].difference = Some(Spread {
            median: 0.5,
            min: 0.0,
            max: 1.0,
            runs: 3,
        });
        assert_eq!(steps(&r).unwrap().entries, 4096);
        assert!(steps(&scan(&[(16, 0.0), (32, 3.0)]))
            .unwrap_err()
            .contains("no walk"));
        assert!(steps(&scan(&[(16, 3.0), (32, 30.0)]))
            .unwrap_err()
            .contains("every footprint"));
        assert!(steps(&[]).unwrap_err().contains("no huge pages"));
        // The step's next footprint is the next one measured with huge pages.
        let mut r = scan(&[(1024, 0.0), (2048, 9.0), (4096, 30.0)]);
        r[1].huge_share = 0.5;
        assert_eq!(steps(&r).unwrap().next, 4096);
    }

    #[test]
    fn applied_where_the_preset_is_outside_the_step() {
        let mut config = pagelab_core::presets::load("zen4").unwrap();
        // zen4: l1d 72 entries, l2d 128 × 24 = 3072 entries, within [3072, 4096).
        let r = scan(&[(64, 0.0), (3072, 0.5), (4096, 30.0)]);
        let s = steps(&r).unwrap();
        assert!(apply(&mut config, &s).is_empty());
        // Walks from 6,144: 4,096 entries or more, 171 sets of 24 ways.
        let r = scan(&[(64, 0.0), (4096, 0.5), (6144, 30.0)]);
        let changed = apply(&mut config, &steps(&r).unwrap());
        let TlbConfig::Hierarchy(h) = &config.tlb else {
            panic!()
        };
        let l2d = h.levels.iter().find(|l| l.name == "l2d").unwrap();
        assert_eq!(entries_4k(l2d).unwrap().1, 171 * 24, "{changed:?}"); // 4,104: 4,096 at least
        assert_eq!(changed.len(), 1);
        pagelab_core::Machine::build(&config).unwrap();
        // A step within the first level's entries, or below 512 pages, is a first
        // level's: nothing changes.
        let r = scan(&[(64, 0.0), (96, 7.0), (6144, 30.0)]);
        assert!(apply(&mut config, &steps(&r).unwrap()).is_empty());
        let r = scan(&[(256, 0.0), (384, 7.0), (6144, 30.0)]);
        assert!(apply(&mut config, &steps(&r).unwrap()).is_empty());
    }
}
