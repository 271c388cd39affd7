//! Physical memory: frame allocators hand out naturally aligned blocks of base frames.
//!
//! Adding an allocator: a file here implementing [`FrameAllocator`], one variant in
//! `config::FramesConfig`, one arm in [`build`] (docs/EXTENDING.md).

mod buddy;
mod build;
mod config;
mod file_cache;
mod simple;

pub use build::build;
pub use config::{BuddyFramesConfig, FramesConfig, SimpleFramesConfig};

pub use buddy::BuddyAllocator;
pub use file_cache::{FileCache, FileCacheReport};
pub use simple::SimpleAllocator;

use crate::addr::{PageSize, Pfn};

pub trait FrameAllocator {
    /// A block of `size` (aligned to it), or `None` when memory is exhausted.
    fn alloc(&mut self, size: PageSize) -> Option<Pfn>;
    /// Give back a block that `alloc(size)` returned.
    fn free(&mut self, pfn: Pfn, size: PageSize);
    /// Base frames in all of memory.
    fn total_frames(&self) -> u64;
    /// Base frames handed out and not given back.
    fn used_frames(&self) -> u64;
    /// Free base frames in blocks of each order (index = log2 of the block's frames),
    /// if the allocator keeps free memory in such blocks.
    fn free_frames_by_order(&self) -> Option<Vec<u64>> {
        None
    }
    /// Free base frames in the aligned block of 2^`order` frames holding `pfn`, if the
    /// allocator coalesces free memory into such blocks (the page daemon weighs which
    /// victims complete one).
    fn free_frames_in(&self, _pfn: Pfn, _order: u32) -> Option<u64> {
        None
    }
    /// Another program's file cache in memory, if there is one (`frames.cached`).
    fn file_cache(&self) -> Option<FileCacheReport> {
        None
    }
}

/// SplitMix64 (Steele, Lea and Flood): the seeded stream that wires frames and fills
/// the file cache.
pub(crate) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
