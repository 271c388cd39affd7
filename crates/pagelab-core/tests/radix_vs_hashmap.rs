//! The radix page table against a plain HashMap reference: random sequences of map,
//! unmap and lookup with mixed page sizes (4K, 2M, 1G) in several address spaces, on
//! 4- and 5-level tables. The reference decides overlaps, alignment and canonical form
//! on its own; after every operation lookups (random addresses, and the first, a middle
//! and the last byte of every mapped page, and the bytes just outside it) must agree.
//! The table's node count (footprint, frames held) must match the number of distinct
//! node prefixes the mapped pages need, and once everything is unmapped only the roots
//! remain.

mod common;

use common::{raw_op, same, RawOp};
use pagelab_core::addr::{Asid, PageSize, Pfn, VirtAddr};
use pagelab_core::frames::{FrameAllocator, SimpleAllocator};
use pagelab_core::pagetable::{MapError, PageTable, Perms, RadixPageTable, Translation};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::collections::{BTreeSet, HashMap, HashSet};

const SIZES: [PageSize; 3] = [PageSize::K4, PageSize::M2, PageSize::G1];
const PERMS: [Perms; 4] = [Perms::RW, Perms::RWX, Perms(Perms::READ), Perms::NONE];
const K4: u64 = 1 << 12;
const M2: u64 = 1 << 21;
const G1: u64 = 1 << 30;

/// Bases of the small windows addresses are drawn from (16 entries, repeated for
/// weight). Every window spans [base, base + 2 GiB). Windows straddle level-3 (512 GiB)
/// boundaries, reach the top of the lower half and of the upper half, and a few are
/// not canonical at all.
fn regions(levels: u32) -> [u64; 16] {
    if levels == 4 {
        [
            0,
            0,
            0,
            0,
            0x0000_007f_c000_0000, // 511 GiB: the window straddles the first PML4 boundary
            0x0000_007f_c000_0000,
            0x0000_007f_c000_0000,
            0x0000_7fff_0000_0000, // top of the lower half
            0x0000_7fff_0000_0000,
            0xffff_8000_0000_0000, // bottom of the upper half
            0xffff_8000_0000_0000,
            0xffff_ffff_0000_0000, // top of the upper half
            0xffff_ffff_0000_0000,
            0x0000_5555_4000_0000,
            0x0000_8000_0000_0000, // not canonical for 48 bits
            0xfff0_0000_0000_0000, // not canonical for 48 bits
        ]
    } else {
        [
            0,
            0,
            0,
            0,
            0x0000_007f_c000_0000,
            0x0000_007f_c000_0000,
            0x0000_ffff_c000_0000, // straddles a level-4 (256 TiB) boundary
            0x0000_8000_0000_0000, // canonical with 57 bits, not with 48
            0x00ff_ffff_0000_0000, // top of the 57-bit lower half
            0x00ff_ffff_0000_0000,
            0xff00_0000_0000_0000, // bottom of the 57-bit upper half
            0xff00_0000_0000_0000,
            0xffff_ffff_0000_0000,
            0xffff_ffff_0000_0000,
            0x0100_0000_0000_0000, // not canonical for 57 bits
            0xfe00_0000_0000_0000, // not canonical for 57 bits
        ]
    }
}

/// An address of the window `region`: GiB `g` (0..2), 2 MiB page `m` (0..4) of it,
/// 4 KiB page `k` (0..8) of that. Small ranges, so pages of all sizes collide often.
fn page_addr(levels: u32, region: u8, g: u8, m: u8, k: u8) -> u64 {
    regions(levels)[region as usize % 16]
        + (g as u64 % 2) * G1
        + (m as u64 % 4) * M2
        + (k as u64 % 8) * K4
}

/// What the reference holds of one address space: page base → (size, frame, perms).
type Space = HashMap<u64, (PageSize, Pfn, Perms)>;

struct Reference {
    levels: u32,
    spaces: HashMap<Asid, Space>,
    /// Address spaces that ever had a mapping (the table keeps their roots).
    roots: HashSet<Asid>,
}

impl Reference {
    fn new(levels: u32) -> Reference {
        Reference {
            levels,
            spaces: HashMap::new(),
            roots: HashSet::new(),
        }
    }

    fn bits(&self) -> u32 {
        12 + 9 * self.levels
    }

    fn is_canonical(&self, va: u64) -> bool {
        let top = va >> (self.bits() - 1);
        top == 0 || top == u64::MAX >> (self.bits() - 1)
    }

    fn check(&self, va: u64, size: PageSize) -> Result<(), MapError> {
        if !self.is_canonical(va) {
            return Err(MapError::OutOfRange(self.bits()));
        }
        if va % size.bytes() != 0 {
            return Err(MapError::Misaligned);
        }
        Ok(())
    }

    fn map(
        &mut self,
        asid: Asid,
        va: u64,
        size: PageSize,
        pfn: Pfn,
        perms: Perms,
    ) -> Result<(), MapError> {
        self.check(va, size)?;
        let space = self.spaces.entry(asid).or_default();
        let (start, end) = (va as u128, va as u128 + size.bytes() as u128);
        let overlaps = space.iter().any(|(&base, &(s, _, _))| {
            let (b, e) = (base as u128, base as u128 + s.bytes() as u128);
            b < end && start < e
        });
        if overlaps {
            return Err(MapError::Overlap);
        }
        space.insert(va, (size, pfn, perms));
        self.roots.insert(asid);
        Ok(())
    }

    fn unmap(&mut self, asid: Asid, va: u64, size: PageSize) -> Result<(), MapError> {
        self.check(va, size)?;
        let space = self.spaces.entry(asid).or_default();
        match space.get(&va) {
            Some(&(s, _, _)) if s == size => {
                space.remove(&va);
                Ok(())
            }
            _ => Err(MapError::NotMapped),
        }
    }

    fn lookup(&self, asid: Asid, va: u64) -> Option<Translation> {
        let space = self.spaces.get(&asid)?;
        SIZES.iter().find_map(|&size| {
            let base = va & !(size.bytes() - 1);
            match space.get(&base) {
                Some(&(s, pfn, perms)) if s == size => Some(Translation { pfn, size, perms }),
                _ => None,
            }
        })
    }

    /// Page-table nodes a radix table needs for the current mappings: one root per
    /// address space that ever had a mapping, plus, per level below the root, one node
    /// per distinct prefix of the pages that reach that level.
    fn expected_nodes(&self) -> u64 {
        let bits = self.bits();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut nodes = self.roots.len() as u64;
        for (asid, space) in &self.spaces {
            let mut prefixes = BTreeSet::new();
            for (&va, &(size, _, _)) in space {
                let leaf = match size.shift() {
                    12 => 0,
                    21 => 1,
                    _ => 2,
                };
                for level in leaf..self.levels - 1 {
                    // The node at `level` is identified by the address bits above it.
                    prefixes.insert((level, (va & mask) >> (12 + 9 * (level + 1))));
                }
            }
            let _ = asid;
            nodes += prefixes.len() as u64;
        }
        nodes
    }
}

/// The frame allocator, watched: which frames the table holds, and any misuse. Freed
/// frames go back to the SimpleAllocator after a short quarantine, so that a freed
/// node's frame is not simply handed back to the next node (which would hide a table
/// that keeps using a stale frame).
struct Tracking {
    inner: SimpleAllocator,
    held: HashSet<u64>,
    quarantine: std::collections::VecDeque<Pfn>,
    misuse: Vec<String>,
}

impl Tracking {
    fn new() -> Tracking {
        Tracking {
            inner: SimpleAllocator::new(1 << 24),
            held: HashSet::new(),
            quarantine: Default::default(),
            misuse: Vec::new(),
        }
    }
}

impl FrameAllocator for Tracking {
    fn alloc(&mut self, size: PageSize) -> Option<Pfn> {
        let pfn = self.inner.alloc(size)?;
        if size != PageSize::K4 {
            self.misuse
                .push(format!("a table node of {size:?} was asked for"));
        }
        if !self.held.insert(pfn.0) {
            self.misuse
                .push(format!("frame {:#x} handed out twice", pfn.0));
        }
        Some(pfn)
    }
    fn free(&mut self, pfn: Pfn, size: PageSize) {
        if size != PageSize::K4 || !self.held.remove(&pfn.0) {
            self.misuse.push(format!(
                "free of frame {:#x} ({size:?}) that the table did not hold",
                pfn.0
            ));
        }
        self.quarantine.push_back(pfn);
        if self.quarantine.len() > 3 {
            let oldest = self.quarantine.pop_front().unwrap();
            self.inner.free(oldest, PageSize::K4);
        }
    }
    fn total_frames(&self) -> u64 {
        self.inner.total_frames()
    }
    fn used_frames(&self) -> u64 {
        self.inner.used_frames() - self.quarantine.len() as u64
    }
}

/// Walk, and check the entries the walk read: one per level from the root down, each
/// in a distinct frame the table holds, at the entry the address indexes; a walk that
/// finds a page of a size stops at that size's level.
fn walk(
    table: &RadixPageTable,
    frames: &Tracking,
    levels: u32,
    asid: Asid,
    va: u64,
) -> Result<Option<Translation>, String> {
    let w = table.walk(asid, VirtAddr(va));
    let refs = w.refs();
    let bits = 12 + 9 * levels;
    let masked = va & ((1u64 << bits) - 1);
    let fail = |m: String| {
        Err(format!(
            "walk of {va:#x} in {asid:?}: {m} (entries read {refs:x?})"
        ))
    };
    if refs.len() > levels as usize {
        return fail("more entries read than levels".into());
    }
    for (k, r) in refs.iter().enumerate() {
        let level = levels - 1 - k as u32;
        let index = (masked >> (12 + 9 * level)) & 511;
        if r.0 & 0xfff != index * 8 {
            return fail(format!("entry {k} is not entry {index} of its node"));
        }
        if !frames.held.contains(&(r.0 >> 12)) {
            return fail(format!("entry {k} is in a frame the table does not hold"));
        }
        if refs[..k].iter().any(|p| p.0 >> 12 == r.0 >> 12) {
            return fail(format!(
                "entry {k} is in the same frame as an earlier level's"
            ));
        }
    }
    if let Some(t) = w.translation {
        let leaf = (t.size.shift() - 12) / 9;
        if refs.len() != (levels - leaf) as usize {
            return fail(format!(
                "a {:?} page found after {} entries",
                t.size,
                refs.len()
            ));
        }
    }
    Ok(w.translation)
}

fn run(levels: u32, ops: &[RawOp]) -> Result<(), TestCaseError> {
    let mut frames = Tracking::new();
    // The frame of each address space's root, once seen: it never changes.
    let mut roots: HashMap<Asid, u64> = HashMap::new();
    let mut table = RadixPageTable::new(levels);
    let mut reference = Reference::new(levels);

    for (n, op) in ops.iter().enumerate() {
        let asid = Asid(op.asid as u16);
        let size = SIZES[op.size as usize % 3];
        let aligned = |va: u64| va & !(size.bytes() - 1);
        let mut va = aligned(page_addr(levels, op.region, op.g, op.m, op.k));
        if op.what % 29 == 0 {
            // Now and then, a misaligned request.
            va += if size == PageSize::K4 { 0x800 } else { K4 };
        }
        match op.what % 10 {
            // Map.
            0..=3 => {
                let perms = PERMS[op.perms as usize % PERMS.len()];
                let got = table
                    .map(asid, VirtAddr(va), size, Pfn(op.pfn), perms, &mut frames)
                    .map(|_| ());
                let want = reference.map(asid, va, size, Pfn(op.pfn), perms);
                prop_assert_eq!(got, want, "op {}: map {:?} {:#x} {:?}", n, asid, va, size);
            }
            // Unmap a page that is mapped (of its own size), or anything.
            4..=6 => {
                let (uasid, uva, usize_) = if op.what % 10 != 6 {
                    let mut mapped: Vec<(Asid, u64, PageSize)> = reference
                        .spaces
                        .iter()
                        .flat_map(|(&a, s)| s.iter().map(move |(&v, &(sz, _, _))| (a, v, sz)))
                        .collect();
                    mapped.sort();
                    match mapped.get(op.pick as usize % mapped.len().max(1)) {
                        // Sometimes at the right place with the wrong size.
                        Some(&(a, v, sz)) if op.byte % 5 == 0 => {
                            (a, v, SIZES[op.size as usize % 3].min(sz))
                        }
                        Some(&m) => m,
                        None => (asid, va, size),
                    }
                } else {
                    (asid, va, size)
                };
                let got = table
                    .unmap(uasid, VirtAddr(uva), usize_, &mut frames)
                    .map(|_| ());
                let want = reference.unmap(uasid, uva, usize_);
                prop_assert_eq!(
                    got,
                    want,
                    "op {}: unmap {:?} {:#x} {:?}",
                    n,
                    uasid,
                    uva,
                    usize_
                );
            }
            // Look up a random address of the windows.
            _ => {
                let va = page_addr(levels, op.region, op.g, op.m, op.k) + (op.byte as u64 % K4);
                let got = walk(&table, &frames, levels, asid, va).map_err(TestCaseError::fail)?;
                if let Err(e) = same(got, reference.lookup(asid, va), va) {
                    return Err(TestCaseError::fail(format!("op {n}: {e}")));
                }
            }
        }

        // After every operation: every mapped page, at its edges and inside, and just
        // outside it; plus a few random addresses in every address space.
        for (&a, space) in &reference.spaces {
            for (&base, &(size, _, _)) in space {
                let last = base + (size.bytes() - 1);
                let probes = [
                    base,
                    last,
                    base + size.bytes() / 2 + 8,
                    base.wrapping_sub(1),
                    last.wrapping_add(1),
                ];
                for va in probes {
                    let got = walk(&table, &frames, levels, a, va).map_err(TestCaseError::fail)?;
                    if let Err(e) = same(got, reference.lookup(a, va), va) {
                        return Err(TestCaseError::fail(format!("after op {n} ({:?}): {e}", a)));
                    }
                }
            }
        }
        for a in 0..4u16 {
            let r = op.pick.wrapping_mul(31).wrapping_add(a * 7);
            let va = page_addr(
                levels,
                r as u8,
                (r >> 4) as u8,
                (r >> 5) as u8,
                (r >> 7) as u8,
            ) + (op.byte.wrapping_mul(13) as u64 % K4);
            let got = walk(&table, &frames, levels, Asid(a), va).map_err(TestCaseError::fail)?;
            if let Err(e) = same(got, reference.lookup(Asid(a), va), va) {
                return Err(TestCaseError::fail(format!("after op {n}: {e}")));
            }
        }

        // Roots stay where they are.
        for a in 0..4u16 {
            if let Some(first) = table.walk(Asid(a), VirtAddr(0)).refs().first() {
                let root = *roots.entry(Asid(a)).or_insert(first.0 >> 12);
                prop_assert_eq!(
                    root,
                    first.0 >> 12,
                    "after op {}: the root of {:?} moved",
                    n,
                    Asid(a)
                );
            }
        }
        prop_assert!(
            frames.misuse.is_empty(),
            "after op {}: {:?}",
            n,
            frames.misuse
        );
        prop_assert_eq!(frames.held.len() as u64, frames.used_frames());

        // Nodes: exactly those the mappings need, each holding one frame.
        let nodes = reference.expected_nodes();
        prop_assert_eq!(
            table.footprint_bytes(),
            nodes * 4096,
            "after op {}: footprint",
            n
        );
        prop_assert_eq!(
            frames.used_frames(),
            nodes,
            "after op {}: frames held by the table",
            n
        );
    }

    // Unmap everything, in an order depending on the ops; only the roots remain.
    let mut all: Vec<(Asid, u64, PageSize)> = reference
        .spaces
        .iter()
        .flat_map(|(&a, s)| s.iter().map(move |(&v, &(sz, _, _))| (a, v, sz)))
        .collect();
    all.sort();
    if let Some(op) = ops.first() {
        let len = all.len().max(1);
        all.rotate_left(op.pick as usize % len);
        if op.what % 2 == 0 {
            all.reverse();
        }
    }
    for &(a, va, size) in &all {
        prop_assert!(table.unmap(a, VirtAddr(va), size, &mut frames).is_ok());
        prop_assert_eq!(reference.unmap(a, va, size), Ok(()));
        let after = walk(&table, &frames, levels, a, va).map_err(TestCaseError::fail)?;
        prop_assert!(after.is_none());
    }
    let roots = reference.roots.len() as u64;
    prop_assert_eq!(
        table.footprint_bytes(),
        4096 * roots,
        "only the roots remain"
    );
    prop_assert_eq!(
        frames.used_frames(),
        roots,
        "every other node frame went back"
    );
    prop_assert!(frames.misuse.is_empty(), "{:?}", frames.misuse);
    // Through to the SimpleAllocator itself.
    while let Some(pfn) = frames.quarantine.pop_front() {
        frames.inner.free(pfn, PageSize::K4);
    }
    prop_assert_eq!(
        frames.inner.used_frames(),
        roots,
        "the allocator has every frame back but the roots"
    );
    // And the table is still usable: the freed nodes come back.
    for &(a, va, size) in all.iter().take(8) {
        prop_assert!(table
            .map(a, VirtAddr(va), size, Pfn(1), Perms::RW, &mut frames)
            .is_ok());
        let t = walk(&table, &frames, levels, a, va).map_err(TestCaseError::fail)?;
        prop_assert_eq!(t.map(|t| t.size), Some(size));
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn four_levels_match_hashmap(ops in prop::collection::vec(raw_op(1 << 36), 1..300)) {
        run(4, &ops)?;
    }

    #[test]
    fn five_levels_match_hashmap(ops in prop::collection::vec(raw_op(1 << 36), 1..300)) {
        run(5, &ops)?;
    }
}

/// A hand-written sequence covering each refusal once, as a readable example.
#[test]
fn refusals_are_decided_like_the_reference() {
    let mut frames = SimpleAllocator::new(1 << 20);
    let mut table = RadixPageTable::new(4);
    let mut reference = Reference::new(4);
    let a = Asid(1);
    let steps: [(bool, u64, PageSize); 10] = [
        (true, 0x4000_0000, PageSize::G1),
        (true, 0x4020_0000, PageSize::M2), // inside the 1G page
        (true, 0x4000_1000, PageSize::K4), // inside the 1G page
        (true, 0x20_0000, PageSize::M2),
        (true, 0x21_f000, PageSize::K4),    // last 4K of the 2M page
        (true, 0x0, PageSize::G1),          // covers the 2M page
        (false, 0x20_0000, PageSize::K4),   // wrong size
        (false, 0x4000_0000, PageSize::M2), // wrong size
        (false, 0x20_0000, PageSize::M2),
        (false, 0x4000_0000, PageSize::G1),
    ];
    for (map, va, size) in steps {
        let (got, want) = if map {
            (
                table
                    .map(a, VirtAddr(va), size, Pfn(7), Perms::RW, &mut frames)
                    .map(|_| ()),
                reference.map(a, va, size, Pfn(7), Perms::RW),
            )
        } else {
            (
                table.unmap(a, VirtAddr(va), size, &mut frames).map(|_| ()),
                reference.unmap(a, va, size),
            )
        };
        assert_eq!(
            got,
            want,
            "{} {va:#x} {size:?}",
            if map { "map" } else { "unmap" }
        );
    }
    assert_eq!(table.footprint_bytes(), 4096);
    assert_eq!(frames.used_frames(), 1);
}
