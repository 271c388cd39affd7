//! The page-table differential tests' driver (pagetables_trees_vs_hashmap.rs,
//! pagetables_hashed_vs_hashmap.rs): the kinds of structure under test, each with what
//! the reference must know of it and the test that runs it, and the run of random
//! operations on a structure and on the reference side by side.
// Each test file uses some of the macros, the other tests none.
#![allow(unused_macros)]

use super::pagetable_reference::{page_addr, Reference, Tracking, ALL, IPT_FRAMES, K4, PERMS};
use super::{same, RawOp};
use pagelab_core::addr::{Asid, PageSize, Pfn, VirtAddr};
use pagelab_core::pagetable::{
    Bucket, ClusteredPageTable, GuardedPageTable, HashedPageTable, InvertedPageTable,
    LinearPageTable, PageTable, Perms, RadixPageTable, Segment, VariableRadixPageTable, WalkHint,
};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::collections::{HashMap, HashSet};

/// A structure under test and what the reference must know of it.
pub struct Kind {
    pub make: fn() -> Box<dyn PageTable>,
    /// Addresses must be canonical for this many bits.
    pub canonical: Option<u32>,
    /// Frames beyond this cannot be mapped.
    pub frame_limit: Option<u64>,
    /// Small nodes share frames, so the roots left at the end may be spread over
    /// more frames than a fresh table's.
    pub packed: bool,
}

/// The kind `name`: a structure the configuration lists, or a variant of its options.
pub fn kind(name: &str) -> Kind {
    let full = |make| Kind {
        make,
        canonical: None,
        frame_limit: None,
        packed: false,
    };
    match name {
        "radix" => Kind {
            canonical: Some(48),
            ..full(|| Box::new(RadixPageTable::new(4)))
        },
        "radix-5" => Kind {
            canonical: Some(57),
            ..full(|| Box::new(RadixPageTable::new(5)))
        },
        "linear" => Kind {
            canonical: Some(48),
            ..full(|| Box::new(LinearPageTable::new(&ALL[..3], 3)))
        },
        // Small bucket arrays: long chains.
        "hashed" => full(|| Box::new(HashedPageTable::new(5, Bucket::Pointer, &ALL))),
        "hashed-entry" => full(|| Box::new(HashedPageTable::new(5, Bucket::Entry, &ALL))),
        "clustered" => full(|| Box::new(ClusteredPageTable::new(5, 3, Bucket::Pointer, &ALL))),
        "clustered-entry" => full(|| Box::new(ClusteredPageTable::new(5, 3, Bucket::Entry, &ALL))),
        "inverted" => Kind {
            frame_limit: Some(IPT_FRAMES),
            ..full(|| Box::new(InvertedPageTable::new(IPT_FRAMES, 6, &ALL)))
        },
        "guarded" => Kind {
            packed: true,
            ..full(|| Box::new(GuardedPageTable::new(16, &ALL)))
        },
        "guarded-8" => Kind {
            packed: true,
            ..full(|| Box::new(GuardedPageTable::new(8, &ALL)))
        },
        "variable-radix" => full(|| Box::new(VariableRadixPageTable::growing(4, 12, &ALL))),
        "variable-radix-1" => full(|| Box::new(VariableRadixPageTable::growing(1, 6, &ALL))),
        "variable-radix-8" => full(|| Box::new(VariableRadixPageTable::growing(8, 16, &ALL))),
        "variable-radix-greedy" => full(|| Box::new(VariableRadixPageTable::greedy(16, &ALL))),
        "variable-radix-greedy-6" => full(|| Box::new(VariableRadixPageTable::greedy(6, &ALL))),
        _ => unreachable!("no such kind {name}"),
    }
}

pub fn check_lookup(
    table: &dyn PageTable,
    reference: &Reference,
    a: Asid,
    va: u64,
) -> Result<(), String> {
    let w = table.walk(a, VirtAddr(va));
    // A walk may make more references than a walk records (a hashed table's chains
    // grow with what is mapped: shared segments in four address spaces can put over
    // 64 records on the chains one lookup follows); then it records the first
    // MAX_WALK_REFS and counts the rest.
    if w.dropped() > 0 && w.refs().len() != pagelab_core::pagetable::MAX_WALK_REFS {
        return Err(format!(
            "walk of {va:#x} dropped {} references with only {} recorded",
            w.dropped(),
            w.refs().len()
        ));
    }
    if w.translation.is_some() && w.refs().is_empty() {
        return Err(format!(
            "walk of {va:#x} found a page without reading an entry"
        ));
    }
    // The walk in brief, where a structure gives one, is the same walk.
    check_brief(table, a, va, WalkHint::NONE)?;
    same(w.translation, reference.lookup(a, va), va).map_err(|e| format!("{a:?}: {e}"))
}

/// The walk in brief from `hint` (where the structure gives one) equals the full walk.
pub fn check_brief(table: &dyn PageTable, a: Asid, va: u64, hint: WalkHint) -> Result<(), String> {
    let w = table.walk(a, VirtAddr(va));
    if let Some((read, translation)) = table.walk_brief(a, VirtAddr(va), hint) {
        if (read, translation) != (w.refs().len(), w.translation) || w.distinct_lines() != read {
            return Err(format!(
                "walk of {a:?} {va:#x} in brief from {hint:?}: {read} entries, {translation:?}; in full: {w:?}"
            ));
        }
    }
    Ok(())
}

/// A shared segment from an operation: 1 to 8 pages of the op's size (most often
/// 4K), often a power of two in size and aligned on it.
pub fn segment(op: &RawOp, sizes: &[PageSize]) -> Segment {
    let size = if op.size % 4 == 0 {
        ALL[op.size as usize / 4 % 4]
    } else {
        sizes[0]
    };
    let pages = [1u64, 2, 4, 8, 3, 2, 4, 16][op.byte as usize % 8];
    let mut va = page_addr(op.region, op.g, op.m, op.k) & !(size.bytes() - 1);
    if op.byte % 3 != 0 {
        let span = (pages * size.bytes()).next_power_of_two();
        va &= !(span - 1);
    }
    Segment {
        va: VirtAddr(va),
        size,
        pages,
        pfn: Pfn(op.pfn & !(size.base_frames() - 1)),
        perms: PERMS[op.perms as usize % 4],
    }
}

/// `ops` on the kind `name` and on the reference side by side, everything checked
/// after each; then every page unmapped: nothing leaks, and the table still works.
pub fn run(name: &str, ops: &[RawOp]) -> Result<(), TestCaseError> {
    let k = kind(name);
    let mut frames = Tracking::new();
    let mut table = (k.make)();
    let mut reference = Reference {
        canonical: k.canonical,
        frame_limit: k.frame_limit,
        sizes: table.page_sizes().to_vec(),
        spaces: HashMap::new(),
        touched: HashSet::new(),
    };
    let mut segments: Vec<Segment> = Vec::new();
    let fail = |n: usize, e: String| TestCaseError::fail(format!("{name}, op {n}: {e}"));

    // Prefetch hints of the last few operations' pages, to be walked from after
    // the table has changed under them.
    let mut hints: std::collections::VecDeque<(Asid, u64, WalkHint)> = Default::default();
    for (n, op) in ops.iter().enumerate() {
        let asid = Asid(op.asid as u16);
        let size = ALL[op.size as usize % 4];
        let mut va = page_addr(op.region, op.g, op.m, op.k) & !(size.bytes() - 1);
        if op.what % 29 == 0 {
            va += if size == PageSize::K4 { 0x800 } else { K4 };
        }
        let mapped = reference.pages();
        let sample = mapped.iter().skip(op.pick as usize % mapped.len().max(1));
        for (a, v) in [(asid, va)]
            .into_iter()
            .chain(sample.take(3).map(|&(a, v, _)| (a, v)))
        {
            hints.push_back((a, v, table.prefetch(a, VirtAddr(v))));
        }
        while hints.len() > 12 {
            hints.pop_front();
        }
        let perms = PERMS[op.perms as usize % 4];
        // A mapped page (sometimes with the wrong size), or the op's own.
        let pick = || {
            let mapped = reference.pages();
            match mapped.get(op.pick as usize % mapped.len().max(1)) {
                Some(&(a, v, sz)) if op.byte % 5 == 0 => (a, v, size.min(sz)),
                Some(&m) => m,
                None => (asid, va, size),
            }
        };
        let (what, got, want) = match op.what % 11 {
            0..=3 => {
                let pfn = Pfn(op.pfn & !(size.base_frames() - 1));
                let got = table.map(asid, VirtAddr(va), size, pfn, perms, &mut frames);
                let want = reference.map(asid, va, size, pfn, perms);
                (
                    format!("map {asid:?} {va:#x} {size:?}"),
                    got.map(|_| ()),
                    want,
                )
            }
            4 | 5 => {
                let (a, v, s) = if op.what % 2 == 0 {
                    pick()
                } else {
                    (asid, va, size)
                };
                let got = table.unmap(a, VirtAddr(v), s, &mut frames);
                (
                    format!("unmap {a:?} {v:#x} {s:?}"),
                    got.map(|_| ()),
                    reference.unmap(a, v, s),
                )
            }
            6 => {
                let (a, v, s) = pick();
                let got = table.protect(a, VirtAddr(v), s, perms, &mut frames);
                let want = reference.protect(a, v, s, perms);
                (format!("protect {a:?} {v:#x} {s:?}"), got.map(|_| ()), want)
            }
            7 => {
                let seg = segment(op, &reference.sizes);
                let mut asids: Vec<Asid> = (0..4u16)
                    .filter(|a| op.pick >> a & 1 != 0)
                    .map(Asid)
                    .collect();
                if asids.is_empty() || op.pick & 0x30 == 0x30 {
                    asids.push(asid);
                }
                let got = table.map_shared(&asids, &seg, &mut frames);
                let want = reference.map_shared(&asids, &seg);
                if want.is_ok() {
                    segments.push(seg);
                }
                (
                    format!("map_shared {asids:?} {seg:?}"),
                    got.map(|_| ()),
                    want,
                )
            }
            8 => {
                let seg = match segments.get(op.pick as usize % segments.len().max(1)) {
                    Some(s) if op.byte % 7 != 0 => *s,
                    _ => segment(op, &reference.sizes),
                };
                let got = table.unmap_shared(asid, &seg, &mut frames);
                let want = reference.unmap_shared(asid, &seg);
                (
                    format!("unmap_shared {asid:?} {seg:?}"),
                    got.map(|_| ()),
                    want,
                )
            }
            9 if op.byte % 3 == 0 => {
                // A range from one page to 64 MiB, from a page's start or not.
                let bytes = K4 << (op.pick % 15);
                let from = if op.pick & 0x80 != 0 { pick().1 } else { va };
                let got = table.protect_range(asid, VirtAddr(from), bytes, perms, &mut frames);
                let want = reference.protect_range(asid, from, bytes, perms);
                (
                    format!("protect_range {asid:?} {from:#x} {bytes:#x}"),
                    got.map(|_| ()),
                    want,
                )
            }
            _ => {
                if op.byte % 13 == 0 {
                    // Memory is short: lazily kept nodes go back.
                    table.give_back(&mut frames);
                }
                let va = page_addr(op.region, op.g, op.m, op.k) + op.byte as u64 % K4;
                check_lookup(table.as_ref(), &reference, asid, va).map_err(|e| fail(n, e))?;
                continue;
            }
        };
        prop_assert_eq!(got, want, "{}, op {}: {}", name, n, what);
        for &(a, v, hint) in &hints {
            check_brief(table.as_ref(), a, v, hint).map_err(|e| fail(n, e))?;
        }

        for (a, base, size) in reference.pages() {
            let last = base + (size.bytes() - 1);
            for va in [
                base,
                last,
                base + size.bytes() / 2 + 8,
                base.wrapping_sub(1),
                last.wrapping_add(1),
            ] {
                check_lookup(table.as_ref(), &reference, a, va).map_err(|e| fail(n, e))?;
            }
        }
        for a in 0..4u16 {
            let r = op.pick.wrapping_mul(31).wrapping_add(a * 7);
            let va = page_addr(r as u8, (r >> 4) as u8, (r >> 5) as u8, (r >> 7) as u8)
                + op.byte.wrapping_mul(13) as u64 % K4;
            check_lookup(table.as_ref(), &reference, Asid(a), va).map_err(|e| fail(n, e))?;
        }
        prop_assert!(
            frames.misuse.is_empty(),
            "{}, op {}: {:?}",
            name,
            n,
            frames.misuse
        );
        prop_assert_eq!(
            table.footprint_bytes(),
            frames.held_bytes(),
            "{}, op {}: footprint against the frames held",
            name,
            n
        );
    }

    // Unmap everything; what is left is what one page per address space leaves.
    for (a, va, size) in reference.pages() {
        prop_assert!(
            table.unmap(a, VirtAddr(va), size, &mut frames).is_ok(),
            "{} unmap {:#x}",
            name,
            va
        );
        reference.unmap(a, va, size).unwrap();
        check_lookup(table.as_ref(), &reference, a, va).map_err(|e| fail(ops.len(), e))?;
    }
    let mut fresh_frames = Tracking::new();
    let mut fresh = (k.make)();
    for &a in &reference.touched {
        fresh
            .map(
                a,
                VirtAddr(0x1000),
                PageSize::K4,
                Pfn(1),
                Perms::RW,
                &mut fresh_frames,
            )
            .unwrap();
        fresh
            .unmap(a, VirtAddr(0x1000), PageSize::K4, &mut fresh_frames)
            .unwrap();
    }
    // Lazily kept nodes (the greedy variable radix table's) go back.
    table.give_back(&mut frames);
    fresh.give_back(&mut fresh_frames);
    let (left, roots) = (table.footprint_bytes(), fresh.footprint_bytes());
    if k.packed && roots > 0 {
        let most = 4096 * reference.touched.len() as u64;
        prop_assert!(
            left <= most,
            "{}: {} bytes left, roots fit in {}",
            name,
            left,
            most
        );
    } else {
        prop_assert_eq!(left, roots, "{}: left after unmapping all", name);
    }
    prop_assert_eq!(frames.held_bytes(), left);
    prop_assert!(frames.misuse.is_empty(), "{}: {:?}", name, frames.misuse);
    // Still usable.
    for (i, &a) in reference.touched.iter().enumerate() {
        let va = VirtAddr(0x20_0000 + i as u64 * 0x1000);
        prop_assert!(table
            .map(a, va, PageSize::K4, Pfn(2), Perms::RW, &mut frames)
            .is_ok());
        prop_assert_eq!(table.walk(a, va).translation.map(|t| t.pfn), Some(Pfn(2)));
    }
    Ok(())
}

/// 192 cases, no failures saved to a file.
pub fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The kinds under test walked down a tree by the address's bits, each with the name
/// of its test (run by pagetables_trees_vs_hashmap.rs): each structure the
/// configuration lists (by its name) and variants of their options. `$then!` gets
/// them as `test: "kind",` lines.
macro_rules! tree_kinds {
    ($then:ident) => {
        $then! {
            radix_matches_hashmap: "radix",
            radix_5_level_matches_hashmap: "radix-5",
            linear_matches_hashmap: "linear",
            guarded_matches_hashmap: "guarded",
            guarded_radix_8_matches_hashmap: "guarded-8",
            vrpt_matches_hashmap: "variable-radix",
            vrpt_binary_matches_hashmap: "variable-radix-1",
            vrpt_wide_matches_hashmap: "variable-radix-8",
            vrpt_greedy_matches_hashmap: "variable-radix-greedy",
            vrpt_greedy_narrow_matches_hashmap: "variable-radix-greedy-6",
        }
    };
}

/// The hashed kinds under test (run by pagetables_hashed_vs_hashmap.rs), given to
/// `$then!` as `tree_kinds!` gives its own.
macro_rules! hashed_kinds {
    ($then:ident) => {
        $then! {
            hashed_matches_hashmap: "hashed",
            hashed_entry_buckets_match_hashmap: "hashed-entry",
            clustered_matches_hashmap: "clustered",
            clustered_entry_buckets_match_hashmap: "clustered-entry",
            inverted_matches_hashmap: "inverted",
        }
    };
}

/// A property test for each `test: "kind",` line: the kind runs random operations
/// side by side with the reference.
macro_rules! against_hashmap {
    ($($test:ident: $kind:literal,)*) => {
        proptest::proptest! {
            #![proptest_config($crate::common::pagetables::config())]
            $(
                #[test]
                fn $test(
                    ops in proptest::collection::vec(
                        $crate::common::raw_op($crate::common::pagetable_reference::IPT_FRAMES / 2),
                        1..200,
                    )
                ) {
                    $crate::common::pagetables::run($kind, &ops)?;
                }
            )*
        }
    };
}

/// The kinds of `test: "kind",` lines, as a slice.
macro_rules! kind_names {
    ($($test:ident: $kind:literal,)*) => {
        &[$($kind),*][..]
    };
}

#[allow(unused_imports)]
pub(crate) use {against_hashmap, hashed_kinds, kind_names, tree_kinds};
