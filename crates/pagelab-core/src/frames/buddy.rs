//! The binary buddy allocator: memory is split into naturally aligned blocks of 2^k
//! base frames, k ≤ `max_order`. A request of order k takes the lowest-addressed free
//! block of the smallest order ≥ k and splits it in halves down to k (each split
//! frees the upper half one order lower). A freed block merges with its buddy (the
//! other half of their parent, `pfn ^ 2^k`) while the buddy is free as a whole, order
//! after order. So the free memory is always the coarsest aligned decomposition the
//! allocations allow, and freeing everything restores the initial state.
//! Navarro et al.'s superpages (OSDI 2002) rely on it (reservations are buddy blocks),
//! and its fragmentation is what makes superpages fail.
//!
//! Frame 0 is never handed out (a zero frame number is never a valid translation):
//! memory is the frames `[1, total)`, carved at start into the largest aligned blocks
//! that fit. Free blocks are kept per order in ordered sets, so choices are
//! deterministic (lowest address first) and a buddy is found in O(log n).

use super::FrameAllocator;
use crate::addr::{PageSize, Pfn};
use std::collections::BTreeSet;

pub struct BuddyAllocator {
    total: u64,
    used: u64,
    max_order: u32,
    /// The first frame of every free block, by order.
    free: Vec<BTreeSet<u64>>,
}

impl BuddyAllocator {
    /// Memory of `total_frames` base frames, in blocks of at most 2^`max_order` frames.
    pub fn new(total_frames: u64, max_order: u32) -> BuddyAllocator {
        let mut a = BuddyAllocator {
            total: total_frames,
            used: 0,
            max_order,
            free: vec![BTreeSet::new(); max_order as usize + 1],
        };
        let mut p = 1u64;
        while p < total_frames {
            // The largest block aligned at p that ends within memory.
            let order = (0..=max_order)
                .rev()
                .find(|&k| p % (1 << k) == 0 && p + (1 << k) <= total_frames)
                .expect("order 0 always fits");
            a.free[order as usize].insert(p);
            p += 1 << order;
        }
        a
    }

    pub fn max_order(&self) -> u32 {
        self.max_order
    }

    /// Free blocks as (first frame, order), by order then address.
    pub fn free_blocks(&self) -> impl Iterator<Item = (Pfn, u32)> + '_ {
        self.free
            .iter()
            .enumerate()
            .flat_map(|(k, set)| set.iter().map(move |&p| (Pfn(p), k as u32)))
    }

    /// Take the one base frame `pfn` (wire it), splitting the free block that holds
    /// it; false if it is not free.
    pub fn take(&mut self, pfn: u64) -> bool {
        let Some(k) = (0..=self.max_order)
            .find(|&k| self.free[k as usize].contains(&(pfn & !((1u64 << k) - 1))))
        else {
            return false;
        };
        let start = pfn & !((1u64 << k) - 1);
        self.free[k as usize].remove(&start);
        // Free the halves that do not hold the frame, order after order.
        for j in (0..k).rev() {
            let half = 1u64 << j;
            let block = pfn & !(half - 1);
            self.free[j as usize].insert(block ^ half);
        }
        self.used += 1;
        true
    }

    /// Free base frames in blocks of each order (index = order).
    pub fn free_frames_by_order(&self) -> Vec<u64> {
        self.free
            .iter()
            .enumerate()
            .map(|(k, set)| (set.len() as u64) << k)
            .collect()
    }

    /// Of the free memory, the share that lies in blocks of at least `order`: what a
    /// request for a page of that order could still get without reclaiming anything.
    pub fn usable_share(&self, order: u32) -> f64 {
        let by_order = self.free_frames_by_order();
        let free: u64 = by_order.iter().sum();
        if free == 0 {
            return 0.0;
        }
        let usable: u64 = by_order.iter().skip(order as usize).sum();
        usable as f64 / free as f64
    }

    fn order_of(size: PageSize) -> u32 {
        size.base_frames().trailing_zeros()
    }
}

impl FrameAllocator for BuddyAllocator {
    fn alloc(&mut self, size: PageSize) -> Option<Pfn> {
        let order = Self::order_of(size);
        if order > self.max_order {
            return None;
        }
        let k = (order..=self.max_order).find(|&k| !self.free[k as usize].is_empty())?;
        let pfn = self.free[k as usize].pop_first()?;
        // Split down to the order asked for, freeing each upper half.
        for j in (order..k).rev() {
            self.free[j as usize].insert(pfn + (1 << j));
        }
        self.used += 1 << order;
        Some(Pfn(pfn))
    }

    fn free(&mut self, pfn: Pfn, size: PageSize) {
        let mut order = Self::order_of(size);
        debug_assert!(order <= self.max_order && pfn.0 % (1 << order) == 0);
        self.used -= 1 << order;
        let mut p = pfn.0;
        while order < self.max_order && self.free[order as usize].remove(&(p ^ (1 << order))) {
            p &= !(1 << order);
            order += 1;
        }
        self.free[order as usize].insert(p);
    }

    fn total_frames(&self) -> u64 {
        self.total
    }
    fn used_frames(&self) -> u64 {
        self.used
    }
    fn free_frames_by_order(&self) -> Option<Vec<u64>> {
        Some(BuddyAllocator::free_frames_by_order(self))
    }
    fn free_frames_in(&self, pfn: Pfn, order: u32) -> Option<u64> {
        let start = pfn.0 & !((1u64 << order) - 1);
        let end = start + (1 << order);
        // A free block at least as large holding it: all free.
        for k in order..=self.max_order {
            if self.free[k as usize].contains(&(start & !((1u64 << k) - 1))) {
                return Some(1 << order);
            }
        }
        // Else the smaller free blocks inside it (free blocks never straddle it).
        let inside = (0..order.min(self.max_order + 1))
            .map(|k| (self.free[k as usize].range(start..end).count() as u64) << k)
            .sum();
        Some(inside)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_carved_into_the_largest_aligned_blocks() {
        // Frames 1..20: 1 (order 0), 2..4 (1), 4..8 (2), 8..16 (3), 16..20 (2).
        let a = BuddyAllocator::new(20, 3);
        let blocks: Vec<_> = a.free_blocks().map(|(p, k)| (p.0, k)).collect();
        assert_eq!(blocks, [(1, 0), (2, 1), (4, 2), (16, 2), (8, 3)]);
        assert_eq!(a.free_frames_by_order(), [1, 2, 8, 8]);
    }

    #[test]
    fn taking_a_frame_splits_around_it_and_freeing_it_coalesces_back() {
        let mut a = BuddyAllocator::new(32, 4);
        let before: Vec<_> = a.free_blocks().collect();
        assert!(a.take(21));
        assert!(!a.take(21), "taken already");
        // 16..32 split around 21: 16..20 (2), 20 (0), 22..24 (1), 24..32 (3).
        let blocks: Vec<_> = a.free_blocks().map(|(p, k)| (p.0, k)).collect();
        assert_eq!(
            blocks,
            [
                (1, 0),
                (20, 0),
                (2, 1),
                (22, 1),
                (4, 2),
                (16, 2),
                (8, 3),
                (24, 3)
            ]
        );
        assert_eq!(a.used_frames(), 1);
        a.free(Pfn(21), PageSize::K4);
        assert_eq!(a.free_blocks().collect::<Vec<_>>(), before);
    }

    #[test]
    fn splits_then_coalesces_back() {
        let mut a = BuddyAllocator::new(1 << 10, 4);
        let before: Vec<_> = a.free_blocks().collect();
        // The lowest 4K block is frame 1; the next comes from splitting 2..4.
        let f1 = a.alloc(PageSize::K4).unwrap();
        let f2 = a.alloc(PageSize::K4).unwrap();
        let f3 = a.alloc(PageSize::K4).unwrap();
        assert_eq!((f1, f2, f3), (Pfn(1), Pfn(2), Pfn(3)));
        let big = a.alloc(PageSize::K64).unwrap();
        assert_eq!(big.0 % 16, 0);
        assert_eq!(a.used_frames(), 3 + 16);
        for (p, s) in [
            (f2, PageSize::K4),
            (big, PageSize::K64),
            (f1, PageSize::K4),
            (f3, PageSize::K4),
        ] {
            a.free(p, s);
        }
        assert_eq!(a.free_blocks().collect::<Vec<_>>(), before);
        assert_eq!(a.used_frames(), 0);
    }

    #[test]
    fn free_frames_in_a_block_count_the_free_blocks_inside_or_around_it() {
        let mut a = BuddyAllocator::new(64, 4);
        // 16..32 is one free block of order 4.
        assert_eq!(a.free_frames_in(Pfn(21), 2), Some(4));
        assert_eq!(a.free_frames_in(Pfn(21), 4), Some(16));
        assert!(a.take(21));
        assert_eq!(a.free_frames_in(Pfn(21), 2), Some(3));
        assert_eq!(a.free_frames_in(Pfn(16), 4), Some(15));
        assert_eq!(a.free_frames_in(Pfn(24), 3), Some(8));
        a.free(Pfn(21), PageSize::K4);
        assert_eq!(a.free_frames_in(Pfn(21), 4), Some(16));
    }

    #[test]
    fn too_large_or_exhausted_is_none() {
        let mut a = BuddyAllocator::new(64, 4);
        assert_eq!(a.alloc(PageSize::M2), None, "order 9 > max order 4");
        let mut n = 0;
        while a.alloc(PageSize::K64).is_some() {
            n += 1;
        }
        // Frames 16..64 hold three aligned 16-frame blocks; 1..16 holds none.
        assert_eq!(n, 3);
        assert!((a.usable_share(0) - 1.0).abs() < 1e-12);
        assert_eq!(a.usable_share(4), 0.0);
    }
}
