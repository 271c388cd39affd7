//! The buddy allocator under random allocations and frees of every order: blocks are
//! aligned, inside memory, never overlap each other or the free blocks; the free and
//! allocated blocks together tile memory exactly; and freeing everything coalesces
//! back to the initial state.

use pagelab_core::frames::{BuddyAllocator, FrameAllocator};
use pagelab_core::{PageSize, Pfn};
use proptest::prelude::*;

/// Every frame of `[1, total)` is covered exactly once by the free blocks and the
/// allocated ones.
fn check_tiling(
    a: &BuddyAllocator,
    allocated: &[(Pfn, u32)],
    total: u64,
) -> Result<(), TestCaseError> {
    let mut blocks: Vec<(u64, u64, bool)> = a
        .free_blocks()
        .map(|(p, k)| (p.0, 1 << k, true))
        .chain(allocated.iter().map(|&(p, k)| (p.0, 1 << k, false)))
        .collect();
    blocks.sort();
    let mut next = 1;
    for &(start, len, free) in &blocks {
        prop_assert_eq!(
            start % len,
            0,
            "block at {} of {} frames is misaligned",
            start,
            len
        );
        prop_assert_eq!(
            start,
            next,
            "{} block at {} overlaps or leaves a gap (expected {})",
            if free { "a free" } else { "an allocated" },
            start,
            next
        );
        next = start + len;
    }
    prop_assert_eq!(
        next,
        total,
        "the blocks end at {} of {} frames",
        next,
        total
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn blocks_tile_memory_and_everything_freed_coalesces_back(
        total in 16u64..3000,
        max_order in 0u32..8,
        ops in prop::collection::vec((any::<bool>(), 0u32..9, any::<prop::sample::Index>()), 1..300),
    ) {
        let mut a = BuddyAllocator::new(total, max_order);
        let initial: Vec<_> = a.free_blocks().collect();
        let mut allocated: Vec<(Pfn, u32)> = Vec::new();
        for (alloc, order, pick) in ops {
            if alloc || allocated.is_empty() {
                let size = PageSize::from_shift(12 + order).unwrap();
                match a.alloc(size) {
                    Some(p) => allocated.push((p, order)),
                    // Refused only when no free block of that order or larger exists.
                    None => prop_assert!(
                        order > max_order || a.free_blocks().all(|(_, k)| k < order),
                        "order {} refused with a large enough block free", order
                    ),
                }
            } else {
                let (p, k) = allocated.swap_remove(pick.index(allocated.len()));
                a.free(p, PageSize::from_shift(12 + k).unwrap());
            }
            check_tiling(&a, &allocated, total)?;
            let used: u64 = allocated.iter().map(|&(_, k)| 1u64 << k).sum();
            prop_assert_eq!(a.used_frames(), used);
        }
        for (p, k) in allocated.drain(..) {
            a.free(p, PageSize::from_shift(12 + k).unwrap());
        }
        prop_assert_eq!(a.free_blocks().collect::<Vec<_>>(), initial);
        prop_assert_eq!(a.used_frames(), 0);
    }
}
