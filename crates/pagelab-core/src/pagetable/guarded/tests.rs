//! Unit tests of `guarded`.

use super::*;
use crate::frames::SimpleAllocator;

fn map(pt: &mut GuardedPageTable, frames: &mut SimpleAllocator, va: u64, size: PageSize, pfn: u64) {
    pt.map(Asid(0), VirtAddr(va), size, Pfn(pfn), Perms::RW, frames)
        .unwrap();
}

#[test]
fn guards_skip_levels_and_splits_keep_them_short() {
    let mut frames = SimpleAllocator::new(1 << 20);
    let mut pt = GuardedPageTable::new(16, &[PageSize::K4, PageSize::M2]);
    let a = 0x7fff_1234_5000u64;
    map(&mut pt, &mut frames, a, PageSize::K4, 1);
    // The root's guard covers bits 16 to 64, the node's entry is the page: one
    // reference.
    let w = pt.walk(Asid(0), VirtAddr(a + 0x10));
    assert_eq!(w.translation.unwrap().pfn, Pfn(1));
    assert_eq!(w.refs().len(), 1);
    // An address that differs inside the root's guard reads nothing.
    assert_eq!(pt.walk(Asid(0), VirtAddr(a ^ 1 << 30)).refs().len(), 0);
    // A neighbour 16 pages away diverges at bit 16: a node at [16, 20) splits the
    // root's guard, and takes both pages (the first node goes).
    let b = a + (16 << 12);
    map(&mut pt, &mut frames, b, PageSize::K4, 2);
    assert_eq!(pt.walk(Asid(0), VirtAddr(b)).refs().len(), 1);
    let w = pt.walk(Asid(0), VirtAddr(a));
    assert_eq!((w.translation.unwrap().pfn, w.refs().len()), (Pfn(1), 1));
    // A third page 1 MiB away: its node goes above, at [20, 24).
    let c = a + (1 << 20);
    map(&mut pt, &mut frames, c, PageSize::K4, 3);
    assert_eq!(pt.walk(Asid(0), VirtAddr(c)).refs().len(), 1);
    assert_eq!(pt.walk(Asid(0), VirtAddr(a)).refs().len(), 2);
    pt.unmap(Asid(0), VirtAddr(c), PageSize::K4, &mut frames)
        .unwrap();
    let Entry::Node {
        node: top, glen, ..
    } = pt.roots[0]
    else {
        panic!("a root node")
    };
    assert_eq!(
        (pt.nodes[top].lo, glen),
        (16, 44),
        "the root guards bits 20 to 64"
    );
    // 256-byte nodes in one frame.
    assert_eq!(pt.footprint_bytes(), 4096);
    // Unmapping b leaves a alone in the node under the root.
    pt.unmap(Asid(0), VirtAddr(b), PageSize::K4, &mut frames)
        .unwrap();
    assert_eq!(pt.walk(Asid(0), VirtAddr(a)).refs().len(), 1);
    assert_eq!(pt.nodes.live(), 1, "only the page's node is left");
}

#[test]
fn superpages_spanning_entries_are_replicated() {
    let mut frames = SimpleAllocator::new(1 << 20);
    let mut pt = GuardedPageTable::new(16, &[PageSize::K4, PageSize::M2]);
    // A 4K page and a 2M page diverging at bit 22: the node at [20, 24) holds the
    // 2M page in two entries (bits 20 and 21 of it).
    map(&mut pt, &mut frames, 0x40_0000, PageSize::K4, 1);
    map(&mut pt, &mut frames, 0x0, PageSize::M2, 512);
    for va in [0x0u64, 0x10_0000, 0x1f_ffff] {
        let w = pt.walk(Asid(0), VirtAddr(va));
        assert_eq!(w.translation.unwrap().size, PageSize::M2, "{va:#x}");
    }
    let e0 = pt.walk(Asid(0), VirtAddr(0)).refs()[0];
    let e1 = pt.walk(Asid(0), VirtAddr(0x10_0000)).refs()[0];
    assert_eq!(e1.0 - e0.0, 16, "adjacent entries");
    assert_eq!(
        pt.map(
            Asid(0),
            VirtAddr(0x1000),
            PageSize::K4,
            Pfn(3),
            Perms::RW,
            &mut frames
        ),
        Err(MapError::Overlap)
    );
    pt.protect(Asid(0), VirtAddr(0), PageSize::M2, Perms::NONE, &mut frames)
        .unwrap();
    assert_eq!(
        pt.walk(Asid(0), VirtAddr(0x10_0000))
            .translation
            .unwrap()
            .perms,
        Perms::NONE
    );
    pt.unmap(Asid(0), VirtAddr(0), PageSize::M2, &mut frames)
        .unwrap();
    assert!(pt.walk(Asid(0), VirtAddr(0x10_0000)).translation.is_none());
    assert_eq!(pt.walk(Asid(0), VirtAddr(0x40_0000)).refs().len(), 1);
}
