//! Unit tests of `radix`.

use super::*;
use crate::frames::SimpleAllocator;

#[test]
fn four_level_walk_reads_one_entry_per_level() {
    let mut frames = SimpleAllocator::new(1 << 20);
    let mut pt = RadixPageTable::new(4);
    let va = VirtAddr(0x7f12_3456_7000);
    pt.map(
        Asid(0),
        va,
        PageSize::K4,
        Pfn(0x999),
        Perms::RW,
        &mut frames,
    )
    .unwrap();
    let w = pt.walk(Asid(0), VirtAddr(0x7f12_3456_7abc));
    let t = w.translation.unwrap();
    assert_eq!((t.pfn, t.size), (Pfn(0x999), PageSize::K4));
    assert_eq!(t.phys(VirtAddr(0x7f12_3456_7abc)), PhysAddr(0x999abc));
    assert_eq!(w.refs().len(), 4);
    assert_eq!(w.distinct_lines(), 4);
    // The last entry read is PTE index (va >> 12) & 511 of the leaf node.
    assert_eq!(
        w.refs()[3].0 & 0xfff,
        ((0x7f12_3456_7000u64 >> 12) & 511) * 8
    );
    assert_eq!(pt.footprint_bytes(), 4 * 4096);
    // Unmapped neighbours fail at the leaf level after 4 reads; other address spaces at once.
    assert_eq!(pt.walk(Asid(0), VirtAddr(0x7f12_3456_8000)).refs().len(), 4);
    assert!(pt
        .walk(Asid(0), VirtAddr(0x7f12_3456_8000))
        .translation
        .is_none());
    assert_eq!(pt.walk(Asid(1), va).refs().len(), 0);
}

#[test]
fn canonical_upper_half_and_out_of_range() {
    let mut frames = SimpleAllocator::new(1 << 20);
    let mut pt = RadixPageTable::new(4);
    let kernel = VirtAddr(0xffff_8000_0000_1000);
    pt.map(
        Asid(0),
        kernel,
        PageSize::K4,
        Pfn(5),
        Perms::RW,
        &mut frames,
    )
    .unwrap();
    assert_eq!(pt.walk(Asid(0), kernel).translation.unwrap().pfn, Pfn(5));
    assert!(pt
        .walk(Asid(0), VirtAddr(0x0000_8000_0000_1000))
        .translation
        .is_none());
    assert_eq!(
        pt.map(
            Asid(0),
            VirtAddr(0x0001_0000_0000_0000),
            PageSize::K4,
            Pfn(6),
            Perms::RW,
            &mut frames
        ),
        Err(MapError::OutOfRange(48))
    );
}

#[test]
fn superpages_are_upper_level_leaves() {
    let mut frames = SimpleAllocator::new(1 << 22);
    let mut pt = RadixPageTable::new(4);
    pt.map(
        Asid(0),
        VirtAddr(0x4000_0000),
        PageSize::G1,
        Pfn(1 << 18),
        Perms::RW,
        &mut frames,
    )
    .unwrap();
    pt.map(
        Asid(0),
        VirtAddr(0x20_0000),
        PageSize::M2,
        Pfn(512),
        Perms::RW,
        &mut frames,
    )
    .unwrap();
    let w = pt.walk(Asid(0), VirtAddr(0x4123_4567));
    assert_eq!(w.refs().len(), 2);
    assert_eq!(w.translation.unwrap().size, PageSize::G1);
    let w = pt.walk(Asid(0), VirtAddr(0x2f_0000));
    assert_eq!(w.refs().len(), 3);
    assert_eq!(w.translation.unwrap().pfn, Pfn(512));
    assert_eq!(
        pt.map(
            Asid(0),
            VirtAddr(0x20_1000),
            PageSize::K4,
            Pfn(9),
            Perms::RW,
            &mut frames
        ),
        Err(MapError::Overlap)
    );
    assert_eq!(
        pt.map(
            Asid(0),
            VirtAddr(0x1000),
            PageSize::M2,
            Pfn(9),
            Perms::RW,
            &mut frames
        ),
        Err(MapError::Misaligned)
    );
}

#[test]
fn running_out_of_frames_midway_leaves_nothing_behind() {
    // Root + 1 node fit, the third node does not.
    let mut frames = SimpleAllocator::new(3);
    let mut pt = RadixPageTable::new(4);
    let r = pt.map(
        Asid(0),
        VirtAddr(0x1000),
        PageSize::K4,
        Pfn(9),
        Perms::RW,
        &mut frames,
    );
    assert_eq!(r, Err(MapError::OutOfMemory));
    assert_eq!(pt.footprint_bytes(), 4096, "only the root remains");
    assert_eq!(frames.used_frames(), 1);
}

#[test]
fn updates_report_their_references_and_protect_changes_rights() {
    let mut frames = SimpleAllocator::new(1 << 20);
    let mut pt = RadixPageTable::new(4);
    let va = VirtAddr(0x7f00_0000_0000);
    // Root and three nodes cleared (64 lines each), three interior entries and
    // the leaf written; the four entries of the path read.
    let c = pt
        .map(Asid(0), va, PageSize::K4, Pfn(3), Perms::RW, &mut frames)
        .unwrap();
    assert_eq!(
        c,
        UpdateCost {
            reads: 4,
            writes: 4 * 64 + 4
        }
    );
    let c = pt
        .map(
            Asid(0),
            VirtAddr(va.0 + 4096),
            PageSize::K4,
            Pfn(4),
            Perms::RW,
            &mut frames,
        )
        .unwrap();
    assert_eq!(
        c,
        UpdateCost {
            reads: 4,
            writes: 1
        }
    );
    let read = Perms(Perms::READ);
    let c = pt
        .protect(Asid(0), va, PageSize::K4, read, &mut frames)
        .unwrap();
    assert_eq!(
        c,
        UpdateCost {
            reads: 4,
            writes: 1
        }
    );
    assert_eq!(pt.walk(Asid(0), va).translation.unwrap().perms, read);
    assert_eq!(
        pt.protect(Asid(0), va, PageSize::M2, read, &mut frames),
        Err(MapError::NotMapped)
    );
    assert_eq!(
        pt.protect(Asid(1), va, PageSize::K4, read, &mut frames),
        Err(MapError::NotMapped)
    );
    // The last page of the leaf node frees three nodes: three more entries cleared.
    pt.unmap(Asid(0), VirtAddr(va.0 + 4096), PageSize::K4, &mut frames)
        .unwrap();
    let c = pt.unmap(Asid(0), va, PageSize::K4, &mut frames).unwrap();
    assert_eq!(
        c,
        UpdateCost {
            reads: 4,
            writes: 4
        }
    );
}

#[test]
fn unmap_frees_empty_nodes() {
    let mut frames = SimpleAllocator::new(1 << 20);
    let mut pt = RadixPageTable::new(5);
    let va = VirtAddr(0x00ab_cdef_0000_0000 & ((1 << 57) - 1));
    pt.map(Asid(3), va, PageSize::K4, Pfn(77), Perms::RW, &mut frames)
        .unwrap();
    assert_eq!(pt.walk(Asid(3), va).refs().len(), 5);
    let used = frames.used_frames();
    pt.unmap(Asid(3), va, PageSize::K4, &mut frames).unwrap();
    assert_eq!(frames.used_frames(), used - 4, "all but the root are freed");
    assert_eq!(pt.footprint_bytes(), 4096);
    assert_eq!(
        pt.unmap(Asid(3), va, PageSize::K4, &mut frames),
        Err(MapError::NotMapped)
    );
    assert!(pt.walk(Asid(3), va).translation.is_none());
}
