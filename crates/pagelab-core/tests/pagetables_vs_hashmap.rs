//! Every page-table structure against a plain HashMap reference: random sequences of
//! map, unmap, protect, lookup, and shared segments mapped into and out of several
//! address spaces, with mixed page sizes (4K, 64K, 2M, 1G; a structure that cannot
//! map one must refuse it). The reference decides every refusal on its own (size,
//! canonical form, alignment, frames beyond an inverted table's memory, overlap,
//! nothing mapped); after every operation the first, a middle and the last byte of
//! every mapped page, the bytes just outside it and random addresses must translate
//! alike in every address space. A walk must record every reference it makes, the
//! footprint must be the frames the table holds, and once everything is unmapped the
//! table must hold what a fresh table that mapped and unmapped one page per address
//! space holds (no leak), and still work.

mod common;

use common::{raw_op, same, RawOp};
use pagelab_core::addr::{Asid, PageSize, Pfn, VirtAddr};
use pagelab_core::frames::{FrameAllocator, SimpleAllocator};
use pagelab_core::pagetable::{
    Bucket, ClusteredPageTable, GuardedPageTable, HashedPageTable, InvertedPageTable,
    LinearPageTable, MapError, PageTable, Perms, RadixPageTable, Segment, Translation,
    VariableRadixPageTable, WalkHint,
};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::collections::{HashMap, HashSet};

const K4: u64 = 1 << 12;
const M2: u64 = 1 << 21;
const G1: u64 = 1 << 30;
const ALL: [PageSize; 4] = [PageSize::K4, PageSize::K64, PageSize::M2, PageSize::G1];
const PERMS: [Perms; 4] = [Perms::RW, Perms::RWX, Perms(Perms::READ), Perms::NONE];
/// Frames an inverted table covers here; every frame drawn lies below.
const IPT_FRAMES: u64 = 1 << 20;

/// A structure under test and what the reference must know of it.
struct Kind {
    make: fn() -> Box<dyn PageTable>,
    /// Addresses must be canonical for this many bits.
    canonical: Option<u32>,
    /// Frames beyond this cannot be mapped.
    frame_limit: Option<u64>,
    /// Small nodes share frames, so the roots left at the end may be spread over
    /// more frames than a fresh table's.
    packed: bool,
}

fn kind(name: &str) -> Kind {
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

/// Bases of the 2 GiB windows addresses are drawn from: dense low memory, the top of
/// each canonical half, non-canonical and sparse 64-bit addresses.
const REGIONS: [u64; 12] = [
    0,
    0,
    0,
    0x0000_007f_c000_0000,
    0x0000_7fff_0000_0000,
    0xffff_8000_0000_0000,
    0xffff_ffff_0000_0000,
    0x0000_5555_4000_0000,
    0x0000_8000_0000_0000,
    0xfff0_0000_0000_0000,
    0x1234_5678_0000_0000,
    0x8000_0000_0000_0000,
];

fn page_addr(region: u8, g: u8, m: u8, k: u8) -> u64 {
    REGIONS[region as usize % REGIONS.len()]
        + (g as u64 % 2) * G1
        + (m as u64 % 4) * M2
        + (k as u64 % 32) * K4
}

type Space = HashMap<u64, (PageSize, Pfn, Perms)>;

struct Reference {
    canonical: Option<u32>,
    frame_limit: Option<u64>,
    sizes: Vec<PageSize>,
    spaces: HashMap<Asid, Space>,
    /// Address spaces a map got past the checks in (where a table may keep a root).
    touched: HashSet<Asid>,
}

impl Reference {
    fn check(&self, va: u64, size: PageSize) -> Result<(), MapError> {
        if !self.sizes.contains(&size) {
            return Err(MapError::UnsupportedSize(size));
        }
        if let Some(bits) = self.canonical {
            let top = va >> (bits - 1);
            if top != 0 && top != u64::MAX >> (bits - 1) {
                return Err(MapError::OutOfRange(bits));
            }
        }
        if va % size.bytes() != 0 {
            return Err(MapError::Misaligned);
        }
        Ok(())
    }

    fn map(
        &mut self,
        a: Asid,
        va: u64,
        size: PageSize,
        pfn: Pfn,
        p: Perms,
    ) -> Result<(), MapError> {
        self.check(va, size)?;
        if let Some(limit) = self.frame_limit {
            if pfn.0 + size.base_frames() > limit {
                return Err(MapError::NoSuchFrame(limit));
            }
        }
        self.touched.insert(a);
        let space = self.spaces.entry(a).or_default();
        let (start, end) = (va as u128, va as u128 + size.bytes() as u128);
        if space
            .iter()
            .any(|(&b, &(s, _, _))| (b as u128) < end && start < b as u128 + s.bytes() as u128)
        {
            return Err(MapError::Overlap);
        }
        space.insert(va, (size, pfn, p));
        Ok(())
    }

    fn page(
        &mut self,
        a: Asid,
        va: u64,
        size: PageSize,
    ) -> Result<&mut (PageSize, Pfn, Perms), MapError> {
        self.check(va, size)?;
        match self.spaces.entry(a).or_default().get_mut(&va) {
            Some(e) if e.0 == size => Ok(e),
            _ => Err(MapError::NotMapped),
        }
    }

    fn unmap(&mut self, a: Asid, va: u64, size: PageSize) -> Result<(), MapError> {
        self.page(a, va, size)?;
        self.spaces.get_mut(&a).unwrap().remove(&va);
        Ok(())
    }

    fn protect(&mut self, a: Asid, va: u64, size: PageSize, p: Perms) -> Result<(), MapError> {
        self.page(a, va, size)?.2 = p;
        Ok(())
    }

    /// Every page in `[va, va + bytes)`; none if one lies partly outside.
    fn protect_range(&mut self, a: Asid, va: u64, bytes: u64, p: Perms) -> Result<(), MapError> {
        let step = self.sizes.iter().min().unwrap().bytes();
        if va % step != 0 || bytes % step != 0 {
            return Err(MapError::Misaligned);
        }
        let (lo, hi) = (va as u128, va as u128 + bytes as u128);
        if bytes == 0 || hi > 1u128 << 64 {
            return Err(MapError::BadSegment);
        }
        let space = self.spaces.entry(a).or_default();
        let meets = |b: u64, s: PageSize| (b as u128) < hi && lo < b as u128 + s.bytes() as u128;
        let inside = |b: u64, s: PageSize| lo <= b as u128 && b as u128 + s.bytes() as u128 <= hi;
        if space.iter().any(|(&b, e)| meets(b, e.0) && !inside(b, e.0)) {
            return Err(MapError::Misaligned);
        }
        for (&b, e) in space.iter_mut() {
            if inside(b, e.0) {
                e.2 = p;
            }
        }
        Ok(())
    }

    /// Every page of the segment in every address space in turn; all or nothing.
    fn map_shared(&mut self, asids: &[Asid], seg: &Segment) -> Result<(), MapError> {
        seg.bytes()?;
        let before = self.spaces.clone();
        for &a in asids {
            for i in 0..seg.pages {
                let (va, pfn) = seg.page(i);
                if let Err(e) = self.map(a, va.0, seg.size, pfn, seg.perms) {
                    self.spaces = before;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn unmap_shared(&mut self, a: Asid, seg: &Segment) -> Result<(), MapError> {
        seg.bytes()?;
        let space = self.spaces.entry(a).or_default();
        let pages: Vec<u64> = (0..seg.pages).map(|i| seg.page(i).0 .0).collect();
        if !pages
            .iter()
            .all(|va| space.get(va).is_some_and(|e| e.0 == seg.size))
        {
            return Err(MapError::NotMapped);
        }
        for va in pages {
            space.remove(&va);
        }
        Ok(())
    }

    fn lookup(&self, a: Asid, va: u64) -> Option<Translation> {
        let space = self.spaces.get(&a)?;
        ALL.iter().find_map(|&size| {
            let base = va & !(size.bytes() - 1);
            match space.get(&base) {
                Some(&(s, pfn, perms)) if s == size => Some(Translation { pfn, size, perms }),
                _ => None,
            }
        })
    }

    fn pages(&self) -> Vec<(Asid, u64, PageSize)> {
        let mut all: Vec<_> = self
            .spaces
            .iter()
            .flat_map(|(&a, s)| s.iter().map(move |(&v, &(sz, _, _))| (a, v, sz)))
            .collect();
        all.sort();
        all
    }
}

/// The frame allocator, watched: what the table holds, and any misuse. Freed blocks
/// wait in a short quarantine, so that a table using a freed frame is not hidden by
/// getting the same frame back at once.
struct Tracking {
    inner: SimpleAllocator,
    held: HashMap<u64, PageSize>,
    quarantine: std::collections::VecDeque<(Pfn, PageSize)>,
    misuse: Vec<String>,
}

impl Tracking {
    fn new() -> Tracking {
        Tracking {
            inner: SimpleAllocator::new(1 << 26),
            held: HashMap::new(),
            quarantine: Default::default(),
            misuse: Vec::new(),
        }
    }
    fn held_bytes(&self) -> u64 {
        self.held.values().map(|s| s.bytes()).sum()
    }
}

impl FrameAllocator for Tracking {
    fn alloc(&mut self, size: PageSize) -> Option<Pfn> {
        let pfn = self.inner.alloc(size)?;
        if self.held.insert(pfn.0, size).is_some() {
            self.misuse
                .push(format!("frame {:#x} handed out twice", pfn.0));
        }
        Some(pfn)
    }
    fn free(&mut self, pfn: Pfn, size: PageSize) {
        if self.held.remove(&pfn.0) != Some(size) {
            self.misuse.push(format!(
                "free of {:#x} ({size:?}) that the table did not hold so",
                pfn.0
            ));
        }
        self.quarantine.push_back((pfn, size));
        if self.quarantine.len() > 3 {
            let (p, s) = self.quarantine.pop_front().unwrap();
            self.inner.free(p, s);
        }
    }
    fn total_frames(&self) -> u64 {
        self.inner.total_frames()
    }
    fn used_frames(&self) -> u64 {
        self.held.values().map(|s| s.base_frames()).sum()
    }
}

fn check_lookup(
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
fn check_brief(table: &dyn PageTable, a: Asid, va: u64, hint: WalkHint) -> Result<(), String> {
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
fn segment(op: &RawOp, sizes: &[PageSize]) -> Segment {
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

fn run(name: &str, ops: &[RawOp]) -> Result<(), TestCaseError> {
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

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

macro_rules! against_hashmap {
    ($($test:ident: $kind:literal,)*) => {
        /// The kinds under test: each structure the configuration lists (by its name)
        /// and variants of their options.
        const KINDS: &[&str] = &[$($kind),*];

        proptest! {
            #![proptest_config(config())]
            $(
                #[test]
                fn $test(ops in prop::collection::vec(raw_op(IPT_FRAMES / 2), 1..200)) {
                    run($kind, &ops)?;
                }
            )*
        }
    };
}

against_hashmap! {
    radix_matches_hashmap: "radix",
    radix_5_level_matches_hashmap: "radix-5",
    linear_matches_hashmap: "linear",
    hashed_matches_hashmap: "hashed",
    hashed_entry_buckets_match_hashmap: "hashed-entry",
    clustered_matches_hashmap: "clustered",
    clustered_entry_buckets_match_hashmap: "clustered-entry",
    inverted_matches_hashmap: "inverted",
    guarded_matches_hashmap: "guarded",
    guarded_radix_8_matches_hashmap: "guarded-8",
    vrpt_matches_hashmap: "variable-radix",
    vrpt_binary_matches_hashmap: "variable-radix-1",
    vrpt_wide_matches_hashmap: "variable-radix-8",
    vrpt_greedy_matches_hashmap: "variable-radix-greedy",
    vrpt_greedy_narrow_matches_hashmap: "variable-radix-greedy-6",
}

#[test]
fn every_listed_structure_is_tested() {
    for name in pagelab_core::pagetable::NAMES {
        assert!(
            KINDS.contains(name),
            "page table {name:?} has no kind in kind() and no line in against_hashmap!"
        );
    }
}
