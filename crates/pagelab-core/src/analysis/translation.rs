//! Translation schemes side by side on one machine and one trace, as
//! Gandhi et al., "Range Translations for Fast Virtual Memory", IEEE Micro 2016, Figure
//! 7 compares them: 4K pages only, transparent huge pages of 2 MiB, 1 GiB pages, a
//! direct segment, and RMM's range TLB. Each scheme is a machine configuration derived
//! from the one given (its TLB levels, page table, walk caches and costs unchanged):
//! - "4K": base pages only, demand paging (no promotion, no range unit, and no
//!   `[coalescing]` even where the machine has it, as on `neoverse-n1`);
//! - "THP 2M": the `thp` policy with 2 MiB huge pages (a huge page at a fault when an
//!   aligned block is free, and khugepaged's background collapse);
//! - "1G": the same with 1 GiB pages (every 1 GiB region a reference first touches
//!   gets a 1 GiB page while memory has blocks of that size);
//! - "DS": eager paging, and one direct segment per process over its largest range,
//!   looked up beside the last TLB level of the data path;
//! - "RMM": eager paging, and a range TLB (32 entries unless the machine has one of
//!   its own) beside that level.
//!
//! With coalescing ([`compare_with`]), after "THP 2M", two schemes whose TLB entries
//! cover runs of contiguous frames (`crate::tlb::coalesce`; every TLB array that holds
//! 4K pages holds the coalesced size too):
//! - "mTHP 64K": multi-size THP of 64 KiB folios alone (the `thp` policy with
//!   `folio_sizes = ["64K"]`, no 2 MiB page at a fault or in the background) and
//!   arm64's contiguous bit over their 16 pages, as Linux maps anonymous memory on
//!   arm64 with `hugepages-64kB/enabled` on and 2 MiB THP off;
//! - "PTE coalescing": base pages on demand, and AMD's coalescing of an aligned group
//!   of 4 pages whose frames happen to be contiguous and aligned alike (16 KiB
//!   entries): what the allocator's own contiguity gives without an OS change.
//!
//! The schemes share one physical-memory model: the machine's buddy allocator, or a
//! 64 GiB one in blocks of up to 1 GiB if it has none (eager paging takes blocks from
//! a buddy allocator). The memory each scheme costs beyond the 4K one ("bloat") is its
//! peak of frames in use less the 4K run's. Demand paging keeps a page mapped after an
//! `munmap` while eager paging frees it, so on traces that unmap much the bloat of DS
//! and RMM is understated; their `untouched_bytes` (memory eager paging allocated that
//! no reference used, the paper's measure) does not depend on it.

use crate::config::{
    Allocation, CoalesceKind, CoalescingConfig, FramesConfig, HierarchyConfig, LevelConfig,
    RangeTlbConfig, RangeUnitKind, Serves, TlbConfig,
};
use crate::machine::Report;
use crate::superpage::{PromotionConfig, ThpConfig};
use crate::trace::{TraceError, TraceReader};
use crate::{Machine, MachineConfig, PageSize};
use serde::Serialize;
use std::path::Path;

/// The schemes, in the order they run and are shown.
pub const SCHEMES: [&str; 5] = ["4K", "THP 2M", "1G", "DS", "RMM"];

/// The schemes coalescing adds, after "THP 2M".
pub const COALESCING_SCHEMES: [&str; 2] = ["mTHP 64K", "PTE coalescing"];

/// The machine the schemes are built on when none is named: the paper's.
pub const DEFAULT_MACHINE: &str = "sandy-bridge";

/// One scheme: its name, what it is, and the machine that runs it.
#[derive(Clone, Debug)]
pub struct Scheme {
    pub name: &'static str,
    pub config: MachineConfig,
}

/// The machines of every scheme, derived from `base`. `regions` are allocated eagerly
/// before the trace for DS and RMM (`ranges.regions`: for traces without allocation
/// events); empty keeps the base's.
pub fn schemes(base: &MachineConfig, regions: &[String]) -> Result<Vec<Scheme>, String> {
    schemes_with(base, regions, false)
}

/// [`schemes`], and with `coalescing` the [`COALESCING_SCHEMES`] after "THP 2M".
pub fn schemes_with(
    base: &MachineConfig,
    regions: &[String],
    coalescing: bool,
) -> Result<Vec<Scheme>, String> {
    if !base.paging.is_default() {
        return Err("the machine has a [paging] section (a resident limit): eager paging, which DS and RMM need, does not work with it".into());
    }
    if base.base_page != PageSize::K4 {
        return Err(format!(
            "base_page: the schemes are built on 4K pages; the machine's are {}",
            base.base_page
        ));
    }
    let mut plain = base.clone();
    plain.promotion = PromotionConfig::None {};
    plain.coalescing = None;
    plain.ranges.allocation = Allocation::Demand;
    plain.ranges.regions.clear();
    let mut hierarchy = match &plain.tlb {
        TlbConfig::Hierarchy(h) => h.clone(),
        TlbConfig::SetAssociative(a) => HierarchyConfig {
            flush_on_switch: false,
            levels: vec![LevelConfig {
                name: "tlb".into(),
                arrays: vec![a.clone()],
                ..LevelConfig::default()
            }],
        },
    };
    let own_unit = hierarchy
        .levels
        .iter()
        .find_map(|l| l.range.clone())
        .filter(|r| r.kind == RangeUnitKind::RangeTlb);
    for level in &mut hierarchy.levels {
        level.range = None;
    }
    let last = last_data_level(&hierarchy)?;
    plain.tlb = TlbConfig::Hierarchy(hierarchy.clone());
    if !matches!(plain.frames, FramesConfig::Buddy(_)) {
        plain.frames = FramesConfig::Buddy(Default::default());
    }

    let thp = |size: PageSize| {
        let mut c = plain.clone();
        c.promotion = PromotionConfig::Thp(ThpConfig {
            sizes: vec![size],
            ..ThpConfig::default()
        });
        c
    };
    let ranged = |unit: RangeTlbConfig| {
        let mut c = plain.clone();
        let mut h = hierarchy.clone();
        h.levels[last].range = Some(unit);
        c.tlb = TlbConfig::Hierarchy(h);
        c.ranges.allocation = Allocation::Eager;
        if !regions.is_empty() {
            c.ranges.regions = regions.to_vec();
        } else {
            c.ranges.regions = base.ranges.regions.clone();
        }
        c
    };
    let segment = RangeTlbConfig {
        kind: RangeUnitKind::DirectSegment,
        entries: 1,
        ..RangeTlbConfig::default()
    };
    let range_tlb = own_unit.unwrap_or_default();
    let mut out = vec![
        Scheme {
            name: "4K",
            config: plain.clone(),
        },
        Scheme {
            name: "THP 2M",
            config: thp(PageSize::M2),
        },
        Scheme {
            name: "1G",
            config: thp(PageSize::G1),
        },
        Scheme {
            name: "DS",
            config: ranged(segment),
        },
        Scheme {
            name: "RMM",
            config: ranged(range_tlb),
        },
    ];
    if coalescing {
        let coalesced = |kind: CoalesceKind, pages: u32| {
            let mut c = plain.clone();
            let group = PageSize::from_shift(PageSize::K4.shift() + pages.trailing_zeros())
                .expect("a power of two of 4K pages within 2M");
            let mut h = hierarchy.clone();
            for array in h.levels.iter_mut().flat_map(|l| l.arrays.iter_mut()) {
                if array.page_sizes.contains(&PageSize::K4) && !array.page_sizes.contains(&group) {
                    array.page_sizes.push(group);
                    array.page_sizes.sort();
                }
            }
            c.tlb = TlbConfig::Hierarchy(h);
            c.coalescing = Some(CoalescingConfig { kind, pages });
            c
        };
        let mut mthp = coalesced(CoalesceKind::ContiguousBit, 16);
        mthp.promotion = PromotionConfig::Thp(ThpConfig {
            sizes: vec![PageSize::M2],
            fault: false,
            scan_every: 0,
            folio_sizes: vec![PageSize::K64],
            ..ThpConfig::default()
        });
        let more = [
            Scheme {
                name: COALESCING_SCHEMES[0],
                config: mthp,
            },
            Scheme {
                name: COALESCING_SCHEMES[1],
                config: coalesced(CoalesceKind::Amd, 4),
            },
        ];
        out.splice(2..2, more);
    }
    for s in &mut out {
        s.config.name = format!("{} ({})", base.name, s.name);
    }
    Ok(out)
}

/// The last level a data reference reaches: the parent of a parent… of the first
/// level that serves data.
fn last_data_level(h: &HierarchyConfig) -> Result<usize, String> {
    let mut at = h
        .levels
        .iter()
        .position(|l| l.serves != Serves::Instruction)
        .ok_or("tlb.levels: no level serves data")?;
    for _ in 0..h.levels.len() {
        let Some(parent) = &h.levels[at].parent else {
            return Ok(at);
        };
        at = h
            .levels
            .iter()
            .position(|l| &l.name == parent)
            .ok_or_else(|| format!("tlb.levels[{at}].parent: no level is named {parent:?}"))?;
    }
    Err("tlb.levels: the parents make a cycle".into())
}

/// What [`compare`] found: a row per scheme that ran, and why the others did not.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub machine: String,
    pub schemes: Vec<Row>,
    /// Schemes the machine cannot run ("1G: promotion.sizes: the page table cannot
    /// map 1G pages …").
    pub skipped: Vec<String>,
}

/// Run every scheme over the trace `open` reads from its start (once per scheme);
/// `progress` is told the scheme, each batch's references and the reader's position.
/// The 4K scheme must build; another that does not is skipped, and said so.
pub fn compare(
    base: &MachineConfig,
    regions: &[String],
    open: impl FnMut() -> Result<Box<dyn TraceReader + Send>, TraceError>,
    path: &Path,
    progress: impl FnMut(&'static str, u64, u64),
) -> Result<Comparison, TraceError> {
    compare_with(base, regions, false, open, path, progress)
}

/// [`compare`], with the [`COALESCING_SCHEMES`] too when `coalescing`.
pub fn compare_with(
    base: &MachineConfig,
    regions: &[String],
    coalescing: bool,
    mut open: impl FnMut() -> Result<Box<dyn TraceReader + Send>, TraceError>,
    path: &Path,
    mut progress: impl FnMut(&'static str, u64, u64),
) -> Result<Comparison, TraceError> {
    let config_error = |e: String| TraceError::new(path, crate::trace::Location::File, e);
    let schemes = schemes_with(base, regions, coalescing)
        .map_err(|e| config_error(format!("{}: {e}", base.name)))?;
    let (mut reports, mut skipped) = (Vec::new(), Vec::new());
    for scheme in &schemes {
        let mut machine = match Machine::build(&scheme.config) {
            Ok(m) => m,
            Err(e) if scheme.name != "4K" => {
                skipped.push(format!("{}: {e}", scheme.name));
                continue;
            }
            Err(e) => return Err(config_error(format!("{}: {e}", scheme.config.name))),
        };
        let mut reader = open()?;
        machine.run_trace(reader.as_mut(), path, |refs, position| {
            progress(scheme.name, refs, position)
        })?;
        reports.push((scheme.name, machine.report()));
    }
    if reports[0].1.counts.references == 0 {
        return Err(config_error(
            "holds no references: nothing to compare".into(),
        ));
    }
    Ok(Comparison {
        machine: base.name.clone(),
        schemes: rows(&reports),
        skipped,
    })
}

/// One scheme's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub scheme: String,
    pub references: u64,
    /// Translations no TLB, range TLB or segment held: page walks.
    pub tlb_misses: u64,
    /// Page walks per thousand references.
    pub mpki: f64,
    pub walk_refs: u64,
    pub walk_cycles: f64,
    /// Range-table walks (RMM), done after page walks, and their cycles.
    pub range_walks: u64,
    pub range_walk_cycles: f64,
    /// Page walks and range walks as a share of the cycles of the run without page
    /// faults (Figure 7's "execution time overhead" of page walks), in percent.
    pub walk_overhead_percent: f64,
    /// Everything translation costs (TLB hits, walks, faults, promotions, eager
    /// paging) as a share of all cycles, in percent.
    pub translation_overhead_percent: f64,
    /// The page-walk and range-walk cycles this scheme removes from the 4K scheme's,
    /// in percent.
    pub walk_cycles_removed_percent: f64,
    pub page_faults: u64,
    /// Range-TLB or segment hits.
    pub range_hits: u64,
    pub promotions: u64,
    /// Memory in use at its peak, and beyond the 4K scheme's peak.
    pub peak_bytes: u64,
    pub bloat_bytes: i64,
    /// Memory eager paging allocated that no reference used (DS, RMM; 0 otherwise).
    pub untouched_bytes: u64,
}

/// The rows of the reports of [`SCHEMES`] (the first the 4K scheme), in their order.
pub fn rows(reports: &[(&str, Report)]) -> Vec<Row> {
    let base = reports.first().map(|(_, r)| r);
    let walks = |r: &Report| r.cycles.walks + r.cycles.range_walks;
    let base_walks = base.map_or(0.0, walks);
    let base_peak = base.map_or(0, |r| r.frames_peak);
    reports
        .iter()
        .map(|(name, r)| {
            let c = &r.counts;
            let run = r.cycles.base + r.cycles.tlb();
            let unit = r.ranges.as_ref().and_then(|x| x.unit.as_ref());
            Row {
                scheme: name.to_string(),
                references: c.references,
                tlb_misses: c.walks,
                mpki: per_kilo(c.walks, c.references),
                walk_refs: c.walk_refs,
                walk_cycles: r.cycles.walks,
                range_walks: unit.map_or(0, |u| u.range_walks),
                range_walk_cycles: r.cycles.range_walks,
                walk_overhead_percent: percent(walks(r), run),
                translation_overhead_percent: r.translation_overhead_percent,
                walk_cycles_removed_percent: if base_walks > 0.0 {
                    100.0 * (1.0 - walks(r) / base_walks)
                } else {
                    0.0
                },
                page_faults: c.page_faults,
                range_hits: unit.map_or(0, |u| u.hits),
                promotions: c.promotions,
                peak_bytes: r.frames_peak << crate::addr::BASE_SHIFT,
                bloat_bytes: (r.frames_peak as i64 - base_peak as i64) << crate::addr::BASE_SHIFT,
                untouched_bytes: r
                    .ranges
                    .as_ref()
                    .and_then(|x| x.eager.as_ref())
                    .and_then(|e| e.pages_untouched)
                    .unwrap_or(0)
                    << crate::addr::BASE_SHIFT,
            }
        })
        .collect()
}

fn per_kilo(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        1000.0 * n as f64 / of as f64
    }
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheme_of_every_preset_builds() {
        for name in crate::presets::names() {
            let base = crate::presets::load(name).unwrap();
            let schemes = match schemes(&base, &[]) {
                Ok(s) => s,
                // A resident limit, pages other than 4K: refused, and said why.
                Err(e) if !base.paging.is_default() => {
                    assert!(e.contains("[paging]"), "{e}");
                    continue;
                }
                Err(e) if base.base_page != PageSize::K4 => {
                    assert!(e.starts_with("base_page:"), "{e}");
                    continue;
                }
                Err(e) => panic!("{name}: {e}"),
            };
            let names: Vec<&str> = schemes.iter().map(|s| s.name).collect();
            assert_eq!(names, SCHEMES);
            for s in &schemes {
                if let Err(e) = crate::Machine::build(&s.config) {
                    // A page table or TLB without 1G pages refuses the 1G scheme.
                    assert!(
                        s.name == "1G" || s.name == "THP 2M",
                        "{name} {}: {e}",
                        s.name
                    );
                }
            }
        }
    }

    #[test]
    fn coalescing_schemes_follow_thp_and_build_on_every_preset_that_runs_them() {
        for name in crate::presets::names() {
            let base = crate::presets::load(name).unwrap();
            let Ok(schemes) = schemes_with(&base, &[], true) else {
                continue;
            };
            let names: Vec<&str> = schemes.iter().map(|s| s.name).collect();
            assert_eq!(names[..4], ["4K", "THP 2M", "mTHP 64K", "PTE coalescing"]);
            assert_eq!(names[4..], SCHEMES[2..]);
            assert!(
                schemes[0].config.coalescing.is_none(),
                "{name}: 4K is base pages only"
            );
            // mTHP's folios need a huge page the table maps, as THP 2M does.
            let thp = crate::Machine::build(&schemes[1].config).is_ok();
            for s in &schemes[2..4] {
                match crate::Machine::build(&s.config) {
                    Err(e) if thp || s.name != "mTHP 64K" => panic!("{name} {}: {e}", s.name),
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn contiguous_folios_take_fewer_tlb_misses_than_base_pages() {
        // Two passes over 8 MiB, a reference per 4K page: 2,048 pages, more than the
        // STLB's 512 entries, whose 64K entries hold the whole of it.
        let refs: Vec<crate::event::MemRef> = (0..2)
            .flat_map(|_| {
                (0..2048u64).map(|p| {
                    crate::event::MemRef::new(
                        0x4000_0000 + (p << 12),
                        8,
                        crate::event::AccessKind::Load,
                    )
                })
            })
            .collect();
        let base = crate::presets::load("sandy-bridge").unwrap();
        let mut misses = Vec::new();
        for s in schemes_with(&base, &[], true).unwrap().iter().take(4) {
            let mut m = crate::Machine::build(&s.config).unwrap();
            m.run_batch(&crate::event::Batch {
                refs: refs.clone(),
                ..Default::default()
            })
            .unwrap();
            misses.push((s.name, m.counts().walks));
        }
        let get = |n: &str| misses.iter().find(|(s, _)| *s == n).unwrap().1;
        // 4K misses every page on both passes; 64K folios of contiguous frames miss
        // once per folio on the first pass and not at all on the second.
        assert_eq!(get("4K"), 4096, "{misses:?}");
        assert_eq!(get("mTHP 64K"), 128, "{misses:?}");
        // Base pages from an empty buddy allocator come in order, but the page
        // table's nodes come from it too: the first fault takes frame 1 and the nodes
        // the next ones, so page p gets frame p + 5 until the next leaf node shifts
        // it again, and an aligned group of 4 pages is coalesced only where the
        // shift is a multiple of 4. Some are, not all.
        let coalesced = get("PTE coalescing");
        assert!(
            get("mTHP 64K") < coalesced && coalesced < get("4K"),
            "{misses:?}"
        );
    }

    #[test]
    fn the_range_unit_goes_beside_the_last_data_level() {
        let base = crate::presets::load("sandy-bridge").unwrap();
        let s = schemes(&base, &[]).unwrap();
        let TlbConfig::Hierarchy(h) = &s[4].config.tlb else {
            panic!("a hierarchy")
        };
        let beside: Vec<&str> = h
            .levels
            .iter()
            .filter(|l| l.range.is_some())
            .map(|l| l.name.as_str())
            .collect();
        assert_eq!(beside, ["stlb"]);
        assert_eq!(h.levels[2].range.as_ref().unwrap().entries, 32);
        // The 4K scheme has none, and allocates on demand.
        let TlbConfig::Hierarchy(h) = &s[0].config.tlb else {
            panic!("a hierarchy")
        };
        assert!(h.levels.iter().all(|l| l.range.is_none()));
        assert_eq!(s[0].config.ranges.allocation, Allocation::Demand);
    }
}
