//! Unit tests of `vrpt`.

use super::*;
use crate::frames::SimpleAllocator;

const SIZES: [PageSize; 3] = [PageSize::K4, PageSize::M2, PageSize::G1];

fn leaf(virt: u64, shift: u8, pfn: u64) -> Slot {
    Slot::Leaf(Pte {
        virt,
        shift,
        pfn,
        perms: Perms::RW,
        next: None,
    })
}

#[test]
fn fig6_indexing_on_a_hand_built_tree() {
    // Root → A: 16 entries on bits [30, 34) (skip 30, size 60) → entry 5 →
    // B: 512 entries on bits [12, 21) (skip 43, size 55): bits [21, 30) are
    // skipped, and only the leaf checks them.
    let mut pt = VariableRadixPageTable::growing(4, 16, &SIZES);
    let node = |lo, bits, addr, slots: Vec<Slot>| Node {
        lo,
        bits,
        prefix: 0,
        addr: PhysAddr(addr),
        slots,
        things: 1,
        shared: 0,
        hint: 4,
    };
    let va: u64 = 5 << 30 | 0x1ab << 21 | 7 << 12;
    let mut b = vec![Slot::Empty; 512];
    b[7] = leaf(va, 12, 0x4242);
    let mut a = vec![Slot::Empty; 16];
    a[5] = Slot::Node {
        node: 1,
        skip: 43,
        size: 55,
        prot: None,
    };
    pt.nodes = vec![node(30, 4, 0x10_0000, a), node(12, 9, 0x20_0000, b)].into();
    pt.roots = vec![Slot::Node {
        node: 0,
        skip: 30,
        size: 60,
        prot: None,
    }];
    assert_eq!(pt.entry(0, false), pt.roots[0]);
    assert_eq!(pt.entry(1, false), pt.nodes[0].slots[5]);
    // The two shifts pick the field out of the address.
    assert_eq!(index(va, 30, 60), 5);
    assert_eq!(index(va, 43, 55), 7);
    let w = pt.walk(Asid(0), VirtAddr(va + 0x123));
    assert_eq!(
        w.refs(),
        &[PhysAddr(0x10_0000 + 5 * 32), PhysAddr(0x20_0000 + 7 * 32)]
    );
    assert_eq!(
        w.translation.unwrap().phys(VirtAddr(va + 0x123)),
        PhysAddr(0x4242_123)
    );
    // A skipped bit differs: the same two entries are read and the leaf refuses.
    let w = pt.walk(Asid(0), VirtAddr(va ^ 1 << 25));
    assert_eq!(w.refs().len(), 2);
    assert!(w.translation.is_none());
    // An empty entry of B.
    assert!(pt
        .walk(Asid(0), VirtAddr(va + 0x1000))
        .translation
        .is_none());
}

fn map(pt: &mut VariableRadixPageTable, f: &mut SimpleAllocator, va: u64, size: PageSize) {
    let pfn = Pfn(va >> 12 & 0xffff_ffff);
    pt.map(Asid(0), VirtAddr(va), size, pfn, Perms::RW, f)
        .unwrap();
}

#[test]
fn a_dense_region_is_level_compressed() {
    let mut f = SimpleAllocator::new(1 << 22);
    let mut pt = VariableRadixPageTable::growing(4, 16, &SIZES);
    let base = 0x7f00_0000_0000u64;
    for p in 0..4096u64 {
        map(&mut pt, &mut f, base + (p << 12), PageSize::K4);
    }
    // 4096 pages under one 4096-entry node: a single reference per lookup.
    for p in [0u64, 1, 255, 256, 4095] {
        let w = pt.walk(Asid(0), VirtAddr(base + (p << 12)));
        assert_eq!(
            w.translation.unwrap().pfn,
            Pfn((base >> 12) + p & 0xffff_ffff)
        );
        assert_eq!(w.refs().len(), 1, "page {p}");
    }
    assert_eq!(pt.footprint_bytes(), 4096 * 32);
    for p in 0..4096u64 {
        let va = VirtAddr(base + (p << 12));
        pt.unmap(Asid(0), va, PageSize::K4, &mut f).unwrap();
    }
    assert_eq!((pt.footprint_bytes(), f.used_frames()), (0, 0));
}

#[test]
fn sparse_pages_are_path_compressed() {
    let mut f = SimpleAllocator::new(1 << 22);
    let mut pt = VariableRadixPageTable::growing(4, 16, &SIZES);
    let vas = [
        0x1000u64,
        0x7fff_ffff_f000,
        0xffff_8000_0000_0000,
        0x5555_5555_5000,
    ];
    for &va in &vas {
        map(&mut pt, &mut f, va, PageSize::K4);
    }
    for &va in &vas {
        let w = pt.walk(Asid(0), VirtAddr(va));
        assert!(w.translation.is_some());
        // Four levels in the x86-64 radix table.
        assert!(w.refs().len() <= 3, "{va:#x}: {} levels", w.refs().len());
    }
}

#[test]
fn superpages_factorized_or_expanded() {
    let mut f = SimpleAllocator::new(1 << 22);
    let sizes = [PageSize::K4, PageSize::K64, PageSize::M2];
    let mut pt = VariableRadixPageTable::growing(8, 16, &sizes);
    // A 4K page makes the root's node, 256 entries on [12, 20). A 64K page beside
    // it spans 16 of them: expanded into replicas, which costs no memory.
    map(&mut pt, &mut f, 0x7000_0000, PageSize::K4);
    let before = pt.footprint_bytes();
    map(&mut pt, &mut f, 0x7001_0000, PageSize::K64);
    assert_eq!(pt.footprint_bytes(), before);
    for va in [0x7001_0000u64, 0x7001_ffff] {
        let t = pt.walk(Asid(0), VirtAddr(va)).translation.unwrap();
        assert_eq!((t.size, t.pfn), (PageSize::K64, Pfn(0x70010)));
    }
    assert_eq!(
        pt.ptes_of_frame(Pfn(0x70010)).len(),
        16,
        "each replica is a PTE"
    );
    // A 2M page elsewhere is factorized: one leaf in an entry of a new top node
    // that starts at 2M, read in one reference.
    map(&mut pt, &mut f, 0x4000_0000, PageSize::M2);
    let w = pt.walk(Asid(0), VirtAddr(0x4012_3456));
    assert_eq!(
        (w.refs().len(), w.translation.unwrap().size),
        (1, PageSize::M2)
    );
    assert_eq!(pt.ptes_of_frame(Pfn(0x40000)).len(), 1);
    pt.protect(
        Asid(0),
        VirtAddr(0x7001_0000),
        PageSize::K64,
        Perms::NONE,
        &mut f,
    )
    .unwrap();
    let t = pt.walk(Asid(0), VirtAddr(0x7001_f000)).translation.unwrap();
    assert_eq!(t.perms, Perms::NONE);
    assert_eq!(
        pt.map(
            Asid(0),
            VirtAddr(0x7001_8000),
            PageSize::K4,
            Pfn(1),
            Perms::RW,
            &mut f
        ),
        Err(MapError::Overlap)
    );
    let pages = [
        (0x7001_0000, PageSize::K64),
        (0x7000_0000, PageSize::K4),
        (0x4000_0000, PageSize::M2),
    ];
    for (va, size) in pages {
        pt.unmap(Asid(0), VirtAddr(va), size, &mut f).unwrap();
    }
    assert!(pt.ptes_of_frame(Pfn(0x70010)).is_empty());
    assert_eq!(f.used_frames(), 0);
}

#[test]
fn shared_segments_are_cross_linked_and_copied_on_change() {
    let mut f = SimpleAllocator::new(1 << 22);
    let mut pt = VariableRadixPageTable::growing(4, 16, &SIZES);
    // 64 pages at a 256 KiB boundary, in three address spaces.
    let seg = Segment {
        va: VirtAddr(0x10_0004_0000),
        size: PageSize::K4,
        pages: 64,
        pfn: Pfn(0x800),
        perms: Perms::RW,
    };
    let asids = [Asid(1), Asid(2), Asid(3)];
    pt.map_shared(&asids, &seg, &mut f).unwrap();
    for &a in &asids {
        let w = pt.walk(a, VirtAddr(0x10_0004_5123));
        assert_eq!(w.translation.unwrap().pfn, Pfn(0x805));
    }
    // One PTE per page for all three.
    assert_eq!(pt.ptes_of_frame(Pfn(0x805)).len(), 1);
    // Protecting one page in address space 2 gives it its own copy.
    pt.protect(
        Asid(2),
        VirtAddr(0x10_0004_5000),
        PageSize::K4,
        Perms::NONE,
        &mut f,
    )
    .unwrap();
    assert_eq!(pt.ptes_of_frame(Pfn(0x805)).len(), 2);
    let perms = |a| {
        pt.walk(a, VirtAddr(0x10_0004_5000))
            .translation
            .unwrap()
            .perms
    };
    assert_eq!((perms(Asid(1)), perms(Asid(2))), (Perms::RW, Perms::NONE));
    // The link comes off 1 and 3; address space 2 unmaps its copy page by page.
    for &a in &asids {
        pt.unmap_shared(a, &seg, &mut f).unwrap();
        assert!(pt.walk(a, VirtAddr(0x10_0004_5000)).translation.is_none());
    }
    assert!(pt.ptes_of_frame(Pfn(0x805)).is_empty());
    assert_eq!(f.used_frames(), 0);
    // A private mapping of the same frame in two spaces: two PTEs on its list.
    map(&mut pt, &mut f, 0x5000, PageSize::K4);
    pt.map(
        Asid(1),
        VirtAddr(0x9000),
        PageSize::K4,
        Pfn(5),
        Perms::RW,
        &mut f,
    )
    .unwrap();
    let ptes = pt.ptes_of_frame(Pfn(5));
    assert_eq!(
        ptes.iter().map(|p| p.1).collect::<Vec<_>>(),
        [VirtAddr(0x9000), VirtAddr(0x5000)]
    );
}

#[test]
fn greedy_levels_are_as_wide_as_allowed_and_hold_a_region_in_one_node() {
    let mut f = SimpleAllocator::new(1 << 22);
    let mut pt = VariableRadixPageTable::greedy(16, &SIZES);
    let heap = 0x5555_5555_0000u64;
    let stack = 0x7ffc_0000_0000u64;
    for p in 0..300u64 {
        map(&mut pt, &mut f, heap + (p << 12), PageSize::K4);
    }
    // One region: the root's node is a whole leaf level of 2^16 entries.
    assert_eq!(pt.footprint_bytes(), 32 << 16);
    assert_eq!(pt.walk(Asid(0), VirtAddr(heap)).refs().len(), 1);
    map(&mut pt, &mut f, stack, PageSize::K4);
    map(&mut pt, &mut f, stack + 0x1000, PageSize::K4);
    // A second region: a node above both, each region a leaf level below it.
    for va in [heap, heap + (299 << 12), stack, stack + 0x1000] {
        let w = pt.walk(Asid(0), VirtAddr(va));
        assert!(w.translation.is_some(), "{va:#x}");
        assert_eq!(w.refs().len(), 2, "{va:#x}");
    }
    assert_eq!(pt.footprint_bytes(), 3 * (32 << 16));
}

#[test]
fn greedy_levels_narrow_when_no_block_that_large_is_free() {
    // 300 frames: no 512-frame block for a 2^16-entry node; 2^14 entries (128 frames)
    // fit, then fewer as memory runs out.
    let mut f = SimpleAllocator::new(300);
    let mut pt = VariableRadixPageTable::greedy(16, &SIZES);
    map(&mut pt, &mut f, 0x40_0000, PageSize::K4);
    assert_eq!(pt.footprint_bytes(), 32 << 14);
    for r in 1..12u64 {
        let va = r << 40;
        if pt
            .map(
                Asid(0),
                VirtAddr(va),
                PageSize::K4,
                Pfn(1),
                Perms::RW,
                &mut f,
            )
            .is_err()
        {
            break;
        }
        assert!(pt.walk(Asid(0), VirtAddr(va)).translation.is_some());
    }
    assert!(pt.footprint_bytes() <= 300 << 12);
    assert!(pt.walk(Asid(0), VirtAddr(0x40_0000)).translation.is_some());
}

#[test]
fn emptied_levels_are_kept_until_memory_is_short() {
    let mut f = SimpleAllocator::new(1 << 22);
    let mut pt = VariableRadixPageTable::greedy(16, &SIZES);
    map(&mut pt, &mut f, 0x40_0000, PageSize::K4);
    let far = 0x7f00_0000_0000u64;
    map(&mut pt, &mut f, far, PageSize::K4);
    map(&mut pt, &mut f, far + 0x1000, PageSize::K4);
    let full = pt.footprint_bytes();
    for va in [far, far + 0x1000] {
        pt.unmap(Asid(0), VirtAddr(va), PageSize::K4, &mut f)
            .unwrap();
    }
    assert_eq!(pt.footprint_bytes(), full, "freed lazily: kept");
    // Mapping there again reuses the level: no node is made.
    let again = pt
        .map(
            Asid(0),
            VirtAddr(far),
            PageSize::K4,
            Pfn(7),
            Perms::RW,
            &mut f,
        )
        .unwrap();
    assert_eq!(pt.footprint_bytes(), full);
    assert!(again.writes <= 2, "{again:?}");
    pt.unmap(Asid(0), VirtAddr(far), PageSize::K4, &mut f)
        .unwrap();
    // A 1G page over the emptied level: the level goes, the page maps.
    pt.map(
        Asid(0),
        VirtAddr(far),
        PageSize::G1,
        Pfn(1 << 18),
        Perms::RW,
        &mut f,
    )
    .unwrap();
    assert_eq!(
        pt.walk(Asid(0), VirtAddr(far + 0x1234_5000))
            .translation
            .unwrap()
            .size,
        PageSize::G1
    );
    pt.unmap(Asid(0), VirtAddr(far), PageSize::G1, &mut f)
        .unwrap();
    assert!(pt.footprint_bytes() < full, "the 1G page's level went");
    assert!(!pt.give_back(&mut f), "nothing below the root is empty");
    // Memory is short: what is empty goes back, the rest stays.
    pt.unmap(Asid(0), VirtAddr(0x40_0000), PageSize::K4, &mut f)
        .unwrap();
    assert!(pt.footprint_bytes() > 0, "kept");
    assert!(pt.give_back(&mut f));
    assert!(!pt.give_back(&mut f), "nothing more to give");
    assert_eq!((pt.footprint_bytes(), f.used_frames()), (0, 0));
}

#[test]
fn a_map_short_of_memory_takes_back_emptied_levels() {
    // Room for two 2^16-entry nodes (512 frames each) and a little more.
    let mut f = SimpleAllocator::new(1100);
    let mut pt = VariableRadixPageTable::greedy(16, &SIZES);
    map(&mut pt, &mut f, 0x40_0000, PageSize::K4);
    let far = 0x7f00_0000_0000u64;
    map(&mut pt, &mut f, far, PageSize::K4);
    map(&mut pt, &mut f, far + 0x1000, PageSize::K4);
    let held = f.used_frames();
    for va in [far, far + 0x1000] {
        pt.unmap(Asid(0), VirtAddr(va), PageSize::K4, &mut f)
            .unwrap();
    }
    // Elsewhere: the kept level is freed for the new one, full width again.
    let other = 0x3000_0000_0000u64;
    map(&mut pt, &mut f, other, PageSize::K4);
    map(&mut pt, &mut f, other + 0x1000, PageSize::K4);
    assert!(f.used_frames() <= held, "{} > {held}", f.used_frames());
    assert!(pt
        .walk(Asid(0), VirtAddr(other + 0x1000))
        .translation
        .is_some());
    assert!(pt.walk(Asid(0), VirtAddr(0x40_0000)).translation.is_some());
}

#[test]
fn protecting_whole_nodes_writes_their_entries_only() {
    let mut f = SimpleAllocator::new(1 << 22);
    // Levels of 512 entries: 2 MiB of 4K pages each.
    let mut pt = VariableRadixPageTable::greedy(9, &SIZES);
    let base = 0x7f00_0000_0000u64;
    for p in 0..1024u64 {
        map(&mut pt, &mut f, base + (p << 12), PageSize::K4);
    }
    let read = Perms(Perms::READ);
    let perms = |pt: &VariableRadixPageTable, p: u64| {
        pt.walk(Asid(0), VirtAddr(base + (p << 12)))
            .translation
            .unwrap()
            .perms
    };
    let cost = pt
        .protect_range(Asid(0), VirtAddr(base), 4 << 20, read, &mut f)
        .unwrap();
    // Two 2 MiB levels, each covered whole: their two entries are written.
    assert_eq!(
        cost,
        UpdateCost {
            reads: 2,
            writes: 2
        }
    );
    assert!((0..1024).all(|p| perms(&pt, p) == read));
    // Half a level: its leaves, one by one.
    let cost = pt
        .protect_range(Asid(0), VirtAddr(base), 1 << 20, Perms::RW, &mut f)
        .unwrap();
    assert_eq!(cost.writes, 512 + 1 + 256, "pushed down, then 256 leaves");
    assert!((0..256).all(|p| perms(&pt, p) == Perms::RW));
    assert!((256..1024).all(|p| perms(&pt, p) == read));
    // One page under the other level's rights: they move down first.
    let p = 700;
    pt.protect(
        Asid(0),
        VirtAddr(base + (p << 12)),
        PageSize::K4,
        Perms::RWX,
        &mut f,
    )
    .unwrap();
    assert_eq!(perms(&pt, p), Perms::RWX);
    assert!((512..1024)
        .filter(|&q| q != p)
        .all(|q| perms(&pt, q) == read));
    // A page mapped under an entry with rights keeps its own.
    pt.protect_range(Asid(0), VirtAddr(base), 4 << 20, read, &mut f)
        .unwrap();
    pt.unmap(Asid(0), VirtAddr(base), PageSize::K4, &mut f)
        .unwrap();
    pt.map(
        Asid(0),
        VirtAddr(base),
        PageSize::K4,
        Pfn(9),
        Perms::RW,
        &mut f,
    )
    .unwrap();
    assert_eq!(perms(&pt, 0), Perms::RW);
    assert_eq!(perms(&pt, 1), read);
    // A page partly outside the range: refused, nothing changes.
    map(&mut pt, &mut f, base + (8 << 20), PageSize::M2);
    assert_eq!(
        pt.protect_range(
            Asid(0),
            VirtAddr(base + (8 << 20)),
            1 << 20,
            Perms::NONE,
            &mut f
        ),
        Err(MapError::Misaligned)
    );
    assert_eq!(perms(&pt, 2048), Perms::RW);
}
