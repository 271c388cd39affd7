//! Properties of TLB hierarchies, on random shapes and random streams:
//!
//! - a hierarchy whose first levels can hold every page a stream touches never walks
//!   but for the first touch of each page, whatever the replacement policies and the
//!   levels above (through the whole machine, in order and decoupled);
//! - invalidation leaves no stale translation at any level: the page table changes
//!   under the hierarchy (pages and superpages remapped to other frames, each change
//!   followed by the invalidation of the mapping's range, as an operating system
//!   does), and every translation the hierarchy gives, at either side, is the one the
//!   page table holds at that moment.

use pagelab_core::config::{HierarchyConfig, Serves, SetAssocConfig, TlbConfig};
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::pagetable::{Perms, Translation};
use pagelab_core::tlb::hierarchy::{DATA, INSTRUCTION};
use pagelab_core::tlb::{Hierarchy, REPLACEMENT_POLICIES};
use pagelab_core::{Asid, Machine, MachineConfig, PageSize, Pfn, VirtAddr};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::collections::{HashMap, HashSet};

const K4: PageSize = PageSize::K4;
const M2: PageSize = PageSize::M2;

mod common;
use common::level;

fn array(sets: usize, ways: usize, sizes: &[PageSize], policy: &str) -> SetAssocConfig {
    SetAssocConfig {
        replacement: policy.into(),
        ..common::array(sets, ways, sizes)
    }
}

fn policy() -> impl Strategy<Value = &'static str> {
    prop::sample::select(REPLACEMENT_POLICIES)
}

/// An array shape: (sets, ways) of a small array, so that streams evict.
fn small() -> impl Strategy<Value = (usize, usize)> {
    (prop::sample::select(vec![1usize, 2, 3, 4]), 1usize..=4)
}

// ---------------------------------------------------------------------------
// An infinite first level never walks twice for a page.

/// Pages a stream may touch: `PAGES` per address space, in `ASIDS` address spaces.
const PAGES: u64 = 48;
const ASIDS: u16 = 3;
/// Entries of an "infinite" first level: more than every page a stream can touch.
const INFINITE: usize = (PAGES as usize + 1) * ASIDS as usize;

fn reference() -> impl Strategy<Value = MemRef> {
    (
        0..PAGES,
        0u64..4096,
        prop::sample::select(vec![1u32, 4, 8, 64]),
        prop::sample::select(AccessKind::ALL.to_vec()),
        0..ASIDS,
    )
        .prop_map(|(page, offset, size, kind, asid)| MemRef {
            addr: VirtAddr(0x7f00_0000_0000 + (page << 12) + offset),
            ip: 0,
            size,
            kind,
            asid: Asid(asid),
        })
}

/// A hierarchy whose first levels hold `INFINITE` base pages in one fully associative
/// array (plus, maybe, a small 2M array), under an optional small L2; the first
/// levels split or unified.
fn infinite_machine() -> impl Strategy<Value = MachineConfig> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        policy(),
        policy(),
        policy(),
        small(),
    )
        .prop_map(|(split, with_l2, with_m2, p1, p2, p3, (sets, ways))| {
            let parent = with_l2.then_some("l2");
            let first = |name: &str, serves, p: &str| {
                let mut arrays = vec![array(1, INFINITE, &[K4], p)];
                if with_m2 {
                    arrays.push(array(1, 2, &[M2], p));
                }
                level(name, serves, parent, arrays)
            };
            let mut levels = if split {
                vec![
                    first("l1d", Serves::Data, p1),
                    first("l1i", Serves::Instruction, p2),
                ]
            } else {
                vec![first("l1", Serves::All, p1)]
            };
            if with_l2 {
                levels.push(level(
                    "l2",
                    Serves::All,
                    None,
                    vec![array(sets, ways, &[K4, M2], p3)],
                ));
            }
            MachineConfig {
                tlb: TlbConfig::Hierarchy(HierarchyConfig {
                    flush_on_switch: false,
                    levels,
                }),
                ..MachineConfig::default()
            }
        })
}

/// The (address space, base page) pairs a stream touches, with the pages that
/// references spanning pages reach too, of the references `keep` selects.
fn distinct_pages(refs: &[MemRef], keep: impl Fn(&MemRef) -> bool) -> u64 {
    let mut seen = HashSet::new();
    for r in refs.iter().filter(|r| keep(r)) {
        for page in r.addr.0 >> 12..=r.last_byte().0 >> 12 {
            seen.insert((r.asid, page));
        }
    }
    seen.len() as u64
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn an_infinite_first_level_never_walks(
        config in infinite_machine(),
        refs in prop::collection::vec(reference(), 1..600),
        decoupled in any::<bool>(),
    ) {
        let mut machine = Machine::build(&config).unwrap();
        machine.set_decoupled(decoupled);
        machine.run_batch(&Batch { refs: refs.clone(), events: Vec::new() }).unwrap();
        let report = machine.report();
        let pages = distinct_pages(&refs, |_| true);
        let fetch = |r: &MemRef| r.kind == AccessKind::Fetch;
        // Each first level misses once per page it translates, on the first touch,
        // and never evicts.
        let firsts: Vec<(&str, u64)> = if report.levels[0].name == "l1d" {
            vec![
                ("l1d", distinct_pages(&refs, |r| !fetch(r))),
                ("l1i", distinct_pages(&refs, fetch)),
            ]
        } else {
            vec![("l1", pages)]
        };
        for (l, (name, touched)) in report.levels.iter().zip(&firsts) {
            prop_assert_eq!(&l.name, name);
            prop_assert_eq!(l.misses, *touched, "{} misses", name);
            prop_assert_eq!(l.evictions, 0, "{} evictions", name);
        }
        // Every page faults once. A unified first level walks once per page; split
        // ones at most once per page each (less when the L2 still holds the page).
        prop_assert_eq!(report.counts.page_faults, pages);
        let first_misses: u64 = firsts.iter().map(|(_, n)| n).sum();
        prop_assert!(
            (pages..=first_misses).contains(&report.counts.walks),
            "{} walks for {} pages, {} first-level misses", report.counts.walks, pages, first_misses
        );
        if firsts.len() == 1 {
            prop_assert_eq!(report.counts.walks, pages);
        }
    }
}

// ---------------------------------------------------------------------------
// Invalidation leaves no stale translation.

/// Where the reference page table maps pages: 2 MiB regions whose number is a multiple
/// of 3 are one 2M page, the others are 4K pages. Every mapping has a generation,
/// raised when the mapping changes; its frame depends on the generation.
struct Mappings {
    generation: HashMap<(Asid, u64, PageSize), u64>,
}

impl Mappings {
    fn page_of(va: VirtAddr) -> (u64, PageSize) {
        if (va.0 >> 21) % 3 == 0 {
            (va.0 >> 21, M2)
        } else {
            (va.0 >> 12, K4)
        }
    }

    fn translation(&self, asid: Asid, va: VirtAddr) -> Translation {
        let (page, size) = Self::page_of(va);
        let generation = self
            .generation
            .get(&(asid, page, size))
            .copied()
            .unwrap_or(0);
        // Distinct frames for every (address space, page, generation), aligned to the size.
        let frames_per_page = size.bytes() >> 12;
        let n = (generation * 8 + asid.0 as u64) * 1_000_003 + page;
        Translation {
            pfn: Pfn(n * frames_per_page),
            size,
            perms: Perms::RW,
        }
    }

    /// Remap the mapping holding `va`; the range an operating system then invalidates.
    fn remap(&mut self, asid: Asid, va: VirtAddr) -> (VirtAddr, u64) {
        let (page, size) = Self::page_of(va);
        *self.generation.entry((asid, page, size)).or_insert(0) += 1;
        (VirtAddr(page << size.shift()), size.bytes())
    }
}

#[derive(Clone, Debug)]
enum Op {
    Translate {
        side: usize,
        asid: u16,
        va: u64,
    },
    /// Remap the mappings of `pages` base pages from `va` on, invalidating each.
    Remap {
        asid: u16,
        va: u64,
        pages: u64,
    },
    FlushAsid {
        asid: u16,
    },
}

/// Addresses over twelve 2 MiB regions (four of them one 2M page each), so that
/// pages recur and both sizes meet in the arrays.
fn address() -> impl Strategy<Value = u64> {
    (0u64..12, 0u64..16, 0u64..4096)
        .prop_map(|(region, page, offset)| 0x40_0000_0000 + (region << 21) + (page << 12) + offset)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0usize..2, 0u16..2, address()).prop_map(|(side, asid, va)| Op::Translate { side, asid, va }),
        2 => (0u16..2, address(), 1u64..40).prop_map(|(asid, va, pages)| Op::Remap { asid, va, pages }),
        1 => (0u16..2).prop_map(|asid| Op::FlushAsid { asid }),
    ]
}

/// Split L1s and a unified L2 of small arrays, each level holding 4K pages and maybe
/// 2M pages (in a mixed array or an array of their own), random policies.
fn small_hierarchy() -> impl Strategy<Value = TlbConfig> {
    let arrays = || (small(), small(), 0u8..3, policy(), policy());
    (arrays(), arrays(), arrays(), any::<bool>()).prop_map(|(d, i, l2, with_l2)| {
        let arrays =
            |((s1, w1), (s2, w2), m2, p, q): ((usize, usize), (usize, usize), u8, &str, &str)| {
                match m2 {
                    0 => vec![array(s1, w1, &[K4], p)],
                    1 => vec![array(s1, w1, &[K4, M2], p)],
                    _ => vec![array(s1, w1, &[K4], p), array(s2, w2, &[M2], q)],
                }
            };
        let parent = with_l2.then_some("l2");
        let mut levels = vec![
            level("l1d", Serves::Data, parent, arrays(d)),
            level("l1i", Serves::Instruction, parent, arrays(i)),
        ];
        if with_l2 {
            levels.push(level("l2", Serves::All, None, arrays(l2)));
        }
        TlbConfig::Hierarchy(HierarchyConfig {
            flush_on_switch: false,
            levels,
        })
    })
}

fn check_translation(
    h: &mut Hierarchy,
    map: &Mappings,
    side: usize,
    asid: Asid,
    va: VirtAddr,
) -> Result<(), TestCaseError> {
    let expected = map.translation(asid, va);
    let got = h
        .translate(side, asid, va, || Ok::<_, ()>(map.translation(asid, va)))
        .unwrap();
    prop_assert_eq!(
        got.phys(va),
        expected.phys(va),
        "side {} asid {} va {:#x}: the hierarchy gave {:?}, the page table holds {:?}",
        side,
        asid.0,
        va.0,
        got,
        expected
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn invalidation_leaves_no_stale_translation(
        config in small_hierarchy(),
        ops in prop::collection::vec(op(), 1..400),
        seed in any::<u64>(),
    ) {
        let mut h = Hierarchy::build(&config, K4, seed).unwrap();
        let mut map = Mappings { generation: HashMap::new() };
        for op in ops {
            match op {
                Op::Translate { side, asid, va } => {
                    check_translation(&mut h, &map, side, Asid(asid), VirtAddr(va))?;
                }
                Op::Remap { asid, va, pages } => {
                    let asid = Asid(asid);
                    let mut changed = Vec::new();
                    for p in 0..pages {
                        let va = VirtAddr(va + (p << 12));
                        let (start, len) = map.remap(asid, va);
                        h.invalidate_range(asid, start, len);
                        changed.push(va);
                    }
                    // Right after the change, both sides see the new mappings.
                    for va in changed {
                        for side in [DATA, INSTRUCTION] {
                            check_translation(&mut h, &map, side, asid, va)?;
                        }
                    }
                }
                Op::FlushAsid { asid } => h.flush_asid(Asid(asid)),
            }
        }
    }
}
