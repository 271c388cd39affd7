//! Coalescing worked by hand on a radix table whose frames the test chooses.

use super::Coalescing;
use crate::addr::{Asid, PageSize, Pfn, VirtAddr};
use crate::config::{CoalesceKind, CoalescingConfig};
use crate::frames::SimpleAllocator;
use crate::pagetable::{PageTable, Perms, RadixPageTable, Translation};

const A: Asid = Asid(0);
const K4: PageSize = PageSize::K4;

/// A table mapping page `i` of `va` to `frames[i]` (read-write unless listed in
/// `read_only`); the frames of its nodes lie far above.
fn table(va: u64, frames: &[u64], read_only: &[usize]) -> RadixPageTable {
    let mut t = RadixPageTable::new(4);
    let mut nodes = SimpleAllocator::new(1 << 24);
    for _ in 0..(1 << 20) {
        nodes.alloc(K4);
    }
    for (i, &f) in frames.iter().enumerate() {
        let perms = if read_only.contains(&i) {
            Perms(Perms::READ)
        } else {
            Perms::RW
        };
        t.map(
            A,
            VirtAddr(va + i as u64 * 4096),
            K4,
            Pfn(f),
            perms,
            &mut nodes,
        )
        .unwrap();
    }
    t
}

fn coalescing(kind: CoalesceKind, pages: u32, held: &[PageSize]) -> Coalescing {
    Coalescing::build(&CoalescingConfig { kind, pages }, K4, held).unwrap()
}

/// The entry `c` makes for page `i` of `va` in `t`.
fn entry(c: &Coalescing, t: &RadixPageTable, va: u64, i: u64) -> Translation {
    let at = VirtAddr(va + i * 4096);
    let walked = t.walk(A, at).translation.unwrap();
    c.widen(t, A, at, walked)
}

fn sized(pfn: u64, size: PageSize) -> Translation {
    Translation {
        pfn: Pfn(pfn),
        size,
        perms: Perms::RW,
    }
}

use crate::frames::FrameAllocator as _;

#[test]
fn sixteen_contiguous_aligned_pages_make_one_64k_entry() {
    let va = 0x4_0000;
    let frames: Vec<u64> = (0..16).map(|i| 0x1000 + i).collect();
    let t = table(va, &frames, &[]);
    let c = coalescing(CoalesceKind::ContiguousBit, 16, &[K4, PageSize::K64]);
    for i in [0, 5, 15] {
        assert_eq!(entry(&c, &t, va, i), sized(0x1000, PageSize::K64));
    }
}

#[test]
fn one_page_out_of_place_leaves_every_page_its_own_entry() {
    let va = 0x4_0000;
    let mut frames: Vec<u64> = (0..16).map(|i| 0x1000 + i).collect();
    frames[7] = 0x9000;
    let t = table(va, &frames, &[]);
    let c = coalescing(CoalesceKind::ContiguousBit, 16, &[K4, PageSize::K64]);
    assert_eq!(entry(&c, &t, va, 5), sized(0x1005, K4));
    assert_eq!(entry(&c, &t, va, 7), sized(0x9000, K4));
}

#[test]
fn frames_aligned_unlike_the_addresses_or_rights_that_differ_do_not_coalesce() {
    let va = 0x4_0000;
    let shifted: Vec<u64> = (0..16).map(|i| 0x1001 + i).collect();
    let c = coalescing(CoalesceKind::ContiguousBit, 16, &[K4, PageSize::K64]);
    assert_eq!(
        entry(&c, &table(va, &shifted, &[]), va, 3),
        sized(0x1004, K4)
    );
    let aligned: Vec<u64> = (0..16).map(|i| 0x1000 + i).collect();
    assert_eq!(
        entry(&c, &table(va, &aligned, &[9]), va, 3),
        sized(0x1003, K4)
    );
    // A group whose last page is unmapped.
    assert_eq!(
        entry(&c, &table(va, &aligned[..15], &[]), va, 3),
        sized(0x1003, K4)
    );
}

#[test]
fn amd_coalesces_four_pages_into_16k() {
    let va = 0x4_0000;
    // Pages 0-3 contiguous from an aligned frame, 4-7 from a misaligned one.
    let frames = [
        0x2000, 0x2001, 0x2002, 0x2003, 0x3001, 0x3002, 0x3003, 0x3004,
    ];
    let t = table(va, &frames, &[]);
    let c = coalescing(
        CoalesceKind::Amd,
        4,
        &[K4, PageSize::from_shift(14).unwrap()],
    );
    assert_eq!(
        entry(&c, &t, va, 2),
        sized(0x2000, PageSize::from_shift(14).unwrap())
    );
    assert_eq!(entry(&c, &t, va, 5), sized(0x3002, K4));
}

#[test]
fn colt_takes_the_largest_aligned_run_around_the_page() {
    let va = 0x4_0000;
    let (k8, k16, k32) = (
        PageSize::from_shift(13).unwrap(),
        PageSize::from_shift(14).unwrap(),
        PageSize::from_shift(15).unwrap(),
    );
    // A group of 8: pages 0-3 contiguous and aligned, 4-5 contiguous, 6 and 7 apart.
    let frames = [
        0x2000, 0x2001, 0x2002, 0x2003, 0x5004, 0x5005, 0x7000, 0x7100,
    ];
    let t = table(va, &frames, &[]);
    let c = coalescing(CoalesceKind::Colt, 8, &[K4, k8, k16, k32]);
    assert_eq!(entry(&c, &t, va, 1), sized(0x2000, k16));
    assert_eq!(entry(&c, &t, va, 5), sized(0x5004, k8));
    assert_eq!(entry(&c, &t, va, 6), sized(0x7000, K4));
    // Only the sizes some array holds: without 16K, page 1 takes the 8K run.
    let c = coalescing(CoalesceKind::Colt, 8, &[K4, k8, k32]);
    assert_eq!(entry(&c, &t, va, 1), sized(0x2000, k8));
    // All eight contiguous: one 32K entry.
    let all: Vec<u64> = (0..8).map(|i| 0x4000 + i).collect();
    let c = coalescing(CoalesceKind::Colt, 8, &[K4, k8, k16, k32]);
    assert_eq!(entry(&c, &table(va, &all, &[]), va, 6), sized(0x4000, k32));
}

#[test]
fn a_bad_group_or_a_size_no_array_holds_is_refused() {
    let build = |pages, held: &[PageSize]| {
        Coalescing::build(
            &CoalescingConfig {
                kind: CoalesceKind::ContiguousBit,
                pages,
            },
            K4,
            held,
        )
        .unwrap_err()
    };
    assert!(build(3, &[K4]).contains("coalescing.pages"));
    assert!(build(1024, &[K4]).contains("coalescing.pages"));
    let e = build(16, &[K4, PageSize::M2]);
    assert!(e.contains("64K") && e.contains("page_sizes"), "{e}");
}
