//! Physical memory for page-table nodes and records, from the frame allocator.
//!
//! A table whose nodes are smaller than a frame (a guarded table's 16-entry nodes,
//! a variable radix table's small levels, overflow records of a hashed table) packs
//! them into frames, as a kernel's slab allocator would: blocks of one power-of-two
//! size share frames, and a frame goes back to the allocator when its last block is
//! freed. Blocks of a frame or more are naturally aligned blocks of frames. The
//! memory a table occupies is every frame it holds, used or not.

use super::MapError;
use crate::addr::{PageSize, Pfn, PhysAddr, BASE_SHIFT};
use crate::frames::FrameAllocator;
use std::collections::HashMap;

/// Smallest block: 16 bytes.
const MIN_SHIFT: u32 = 4;

#[derive(Default)]
struct Class {
    free: Vec<PhysAddr>,
    /// Blocks in use per frame of this class.
    live: HashMap<u64, u32>,
}

#[derive(Default)]
pub(super) struct NodeMem {
    /// Classes of blocks of 2^(MIN_SHIFT + i) bytes below a frame.
    classes: [Class; (BASE_SHIFT - MIN_SHIFT) as usize],
    /// Base frames held, in all classes and large blocks.
    frames_held: u64,
}

impl NodeMem {
    /// A block of `1 << shift` bytes (at least 16), aligned to its size.
    pub fn alloc(
        &mut self,
        shift: u32,
        frames: &mut dyn FrameAllocator,
    ) -> Result<PhysAddr, MapError> {
        let shift = shift.max(MIN_SHIFT);
        if shift >= BASE_SHIFT {
            let size = PageSize::from_shift(shift).ok_or(MapError::OutOfMemory)?;
            let pfn = frames.alloc(size).ok_or(MapError::OutOfMemory)?;
            self.frames_held += size.base_frames();
            return Ok(pfn.addr());
        }
        let class = &mut self.classes[(shift - MIN_SHIFT) as usize];
        if class.free.is_empty() {
            let pfn = frames.alloc(PageSize::K4).ok_or(MapError::OutOfMemory)?;
            self.frames_held += 1;
            class.live.insert(pfn.0, 0);
            let n = 1u64 << (BASE_SHIFT - shift);
            // Lowest address handed out first.
            class
                .free
                .extend((0..n).rev().map(|i| PhysAddr(pfn.addr().0 + (i << shift))));
        }
        let addr = class.free.pop().expect("a frame was just carved");
        *class
            .live
            .get_mut(&(addr.0 >> BASE_SHIFT))
            .expect("frame of the class") += 1;
        Ok(addr)
    }

    /// Give back a block `alloc(shift)` returned.
    pub fn free(&mut self, addr: PhysAddr, shift: u32, frames: &mut dyn FrameAllocator) {
        let shift = shift.max(MIN_SHIFT);
        if shift >= BASE_SHIFT {
            let size = PageSize::from_shift(shift).expect("allocated with this size");
            frames.free(Pfn(addr.0 >> BASE_SHIFT), size);
            self.frames_held -= size.base_frames();
            return;
        }
        let class = &mut self.classes[(shift - MIN_SHIFT) as usize];
        let pfn = addr.0 >> BASE_SHIFT;
        let live = class.live.get_mut(&pfn).expect("frame of the class");
        *live -= 1;
        class.free.push(addr);
        if *live == 0 {
            class.live.remove(&pfn);
            class.free.retain(|a| a.0 >> BASE_SHIFT != pfn);
            frames.free(Pfn(pfn), PageSize::K4);
            self.frames_held -= 1;
        }
    }

    /// Bytes of every frame held.
    pub fn bytes(&self) -> u64 {
        self.frames_held << BASE_SHIFT
    }
}

/// Items with stable indexes (table nodes); a removed item's index is reused.
pub(super) struct Pool<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T> Pool<T> {
    pub fn add(&mut self, item: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = item;
                i
            }
            None => {
                self.items.push(item);
                self.items.len() as u32 - 1
            }
        }
    }
    /// Let index `i` be reused (the item stays until it is).
    pub fn remove(&mut self, i: u32) {
        self.free.push(i);
    }
    /// Items not removed.
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.items.len() - self.free.len()
    }
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Pool {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> From<Vec<T>> for Pool<T> {
    fn from(items: Vec<T>) -> Self {
        Pool {
            items,
            free: Vec::new(),
        }
    }
}

impl<T> std::ops::Index<u32> for Pool<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: u32) -> &T {
        &self.items[i as usize]
    }
}

impl<T> std::ops::IndexMut<u32> for Pool<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: u32) -> &mut T {
        &mut self.items[i as usize]
    }
}

/// log2 of the smallest power of two ≥ `bytes`.
pub(super) fn shift_for(bytes: u64) -> u32 {
    bytes.max(1).next_power_of_two().trailing_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::SimpleAllocator;

    #[test]
    fn small_blocks_share_frames_and_frames_go_back() {
        let mut frames = SimpleAllocator::new(1 << 16);
        let mut mem = NodeMem::default();
        let a = mem.alloc(8, &mut frames).unwrap(); // 256 bytes
        let b = mem.alloc(8, &mut frames).unwrap();
        assert_eq!(a.0 >> 12, b.0 >> 12, "two 256-byte nodes in one frame");
        assert_eq!(b.0 - a.0, 256);
        let big = mem.alloc(14, &mut frames).unwrap(); // 16 KiB
        assert_eq!(big.0 % (16 << 10), 0);
        assert_eq!(mem.bytes(), 4096 + (16 << 10));
        assert_eq!(frames.used_frames(), 5);
        mem.free(a, 8, &mut frames);
        assert_eq!(frames.used_frames(), 5, "b still lives in the frame");
        mem.free(b, 8, &mut frames);
        mem.free(big, 14, &mut frames);
        assert_eq!((mem.bytes(), frames.used_frames()), (0, 0));
        // Tiny blocks round up to 16 bytes.
        let t = mem.alloc(0, &mut frames).unwrap();
        let u = mem.alloc(3, &mut frames).unwrap();
        assert_eq!(u.0 - t.0, 16);
        assert_eq!(shift_for(144), 8);
    }

    #[test]
    fn pool_reuses_indexes() {
        let mut pool: Pool<&str> = Pool::default();
        let (a, b) = (pool.add("a"), pool.add("b"));
        pool.remove(a);
        assert_eq!((pool.live(), pool[b]), (1, "b"));
        assert_eq!(pool.add("c"), a);
        assert_eq!(pool[a], "c");
    }

    #[test]
    fn exhaustion_is_an_error() {
        let mut frames = SimpleAllocator::new(2);
        let mut mem = NodeMem::default();
        mem.alloc(12, &mut frames).unwrap();
        assert_eq!(mem.alloc(12, &mut frames), Err(MapError::OutOfMemory));
        assert_eq!(mem.alloc(13, &mut frames), Err(MapError::OutOfMemory));
    }
}
