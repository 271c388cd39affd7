//! Unit tests of `set_assoc`.

use super::*;
use crate::replacement::Lru;

fn t4k(pfn: u64) -> Translation {
    Translation {
        pfn: Pfn(pfn),
        size: PageSize::K4,
        perms: Perms::RW,
    }
}

#[test]
fn lru_set_evicts_oldest() {
    // 1 set, 2 ways: pages A, B, A, C -> C evicts B; B then misses, A hits.
    let mut tlb = SetAssocTlb::<Lru>::new(1, 2, &[PageSize::K4], 0);
    let (a, b, c) = (VirtAddr(0x1000), VirtAddr(0x2000), VirtAddr(0x3000));
    let asid = Asid(0);
    for (va, pfn) in [(a, 1), (b, 2)] {
        assert!(tlb.lookup(asid, va).is_none());
        tlb.fill(asid, va, t4k(pfn));
    }
    assert_eq!(tlb.lookup(asid, a).unwrap().pfn, Pfn(1));
    assert!(tlb.lookup(asid, c).is_none());
    tlb.fill(asid, c, t4k(3));
    assert!(tlb.lookup(asid, b).is_none());
    assert!(tlb.lookup(asid, a).is_some());
    assert_eq!(
        tlb.stats(),
        TlbStats {
            hits: 2,
            misses: 4,
            evictions: 1
        }
    );
}

#[test]
fn asid_is_part_of_the_key() {
    let mut tlb = SetAssocTlb::<Lru>::new(4, 2, &[PageSize::K4], 0);
    tlb.fill(Asid(1), VirtAddr(0x5000), t4k(7));
    assert!(tlb.lookup(Asid(2), VirtAddr(0x5000)).is_none());
    assert!(tlb.lookup(Asid(1), VirtAddr(0x5fff)).is_some());
    tlb.flush_asid(Asid(1));
    assert!(tlb.lookup(Asid(1), VirtAddr(0x5000)).is_none());
}

#[test]
fn superpage_translations_fill_as_held_sizes() {
    let huge = Translation {
        pfn: Pfn(512),
        size: PageSize::M2,
        perms: Perms::RW,
    };
    // A 4K-only TLB keeps the 4K piece of the 2M page.
    let mut small = SetAssocTlb::<Lru>::new(1, 4, &[PageSize::K4], 0);
    small.fill(Asid(0), VirtAddr(0x20_3456), huge);
    let hit = small.lookup(Asid(0), VirtAddr(0x20_3000)).unwrap();
    assert_eq!((hit.pfn, hit.size), (Pfn(512 + 3), PageSize::K4));
    assert!(small.lookup(Asid(0), VirtAddr(0x20_4000)).is_none());
    // A mixed TLB keeps it whole.
    let mut mixed = SetAssocTlb::<Lru>::new(1, 4, &[PageSize::K4, PageSize::M2], 0);
    mixed.fill(Asid(0), VirtAddr(0x20_3456), huge);
    assert_eq!(
        mixed.lookup(Asid(0), VirtAddr(0x3f_ffff)).unwrap().pfn,
        Pfn(512)
    );
    mixed.invalidate_range(Asid(0), VirtAddr(0x30_0000), 4096);
    assert!(mixed.lookup(Asid(0), VirtAddr(0x20_0000)).is_none());
}

#[test]
fn non_power_of_two_sets() {
    let mut tlb = SetAssocTlb::<Lru>::new(3, 1, &[PageSize::K4], 0);
    for p in 0..3u64 {
        tlb.fill(Asid(0), VirtAddr(p << 12), t4k(p));
    }
    for p in 0..3u64 {
        assert_eq!(tlb.lookup(Asid(0), VirtAddr(p << 12)).unwrap().pfn, Pfn(p));
    }
    tlb.fill(Asid(0), VirtAddr(3 << 12), t4k(3)); // set 0: evicts page 0
    assert!(tlb.lookup(Asid(0), VirtAddr(0)).is_none());
    assert!(tlb.lookup(Asid(0), VirtAddr(1 << 12)).is_some());
}

proptest::proptest! {
    /// A mixed-size array large enough never to evict holds exactly what was
    /// filled and not invalidated since: lookups skip only sizes it holds none of.
    #[test]
    fn mixed_sizes_hit_exactly_what_is_held(
        ops in proptest::collection::vec((0u8..4, 0u16..2, 0u64..64, 0usize..3), 1..300)
    ) {
        let sizes = [PageSize::K4, PageSize::K64, PageSize::M2];
        let mut tlb: SetAssocTlb<Lru> = SetAssocTlb::new(1, 1024, &sizes, 0);
        let mut held = std::collections::HashSet::new();
        for (op, asid, page, s) in ops {
            let (asid, size) = (Asid(asid), sizes[s]);
            let va = VirtAddr(page << 14);
            match op {
                0 | 1 => {
                    let t = Translation { pfn: Pfn(page << 9), size, perms: Perms::RW };
                    tlb.fill(asid, va.vpn(size).base(size), t);
                    held.insert((asid, va.0 >> size.shift(), size));
                }
                2 => {
                    tlb.invalidate_range(asid, va, 1 << 16);
                    held.retain(|&(a, vpn, sz)| {
                        let start = vpn << sz.shift();
                        !(a == asid && start < va.0 + (1 << 16) && start + sz.bytes() > va.0)
                    });
                }
                _ => {
                    let want = sizes.iter().rev().copied().find(|&sz| held.contains(&(asid, va.0 >> sz.shift(), sz)));
                    proptest::prop_assert_eq!(tlb.access(asid, va), want);
                    proptest::prop_assert_eq!(tlb.lookup(asid, va).map(|t| t.size), want);
                }
            }
        }
    }
}
