//! Physical memory as the configuration describes it, its fields checked here beside
//! the allocators: the base allocator, wired frames, and another program's file cache
//! on top.

use super::{BuddyAllocator, FileCache, FrameAllocator, FramesConfig, SimpleAllocator};
use crate::addr::PageSize;

/// Physical memory; `page` is the base page and `block` the smallest superpage (the
/// file cache's pages, and the block its contiguity daemon frees).
pub fn build(
    c: &FramesConfig,
    page: PageSize,
    block: PageSize,
    contiguity: bool,
    seed: u64,
) -> Result<Box<dyn FrameAllocator>, String> {
    let frames_of = |memory: crate::addr::ByteSize| {
        let frames = memory.0 >> crate::addr::BASE_SHIFT;
        if frames < 16 {
            return Err(format!(
                "frames.memory: {} bytes is too little memory to run anything",
                memory.0
            ));
        }
        Ok(frames)
    };
    match c {
        FramesConfig::Simple(s) => Ok(Box::new(SimpleAllocator::new(frames_of(s.memory)?))),
        FramesConfig::Buddy(b) => {
            let frames = frames_of(b.memory)?;
            let max_order = b.max_block.base_frames().trailing_zeros();
            if b.max_block < PageSize::K4 {
                return Err(format!(
                    "frames.max_block: {} is smaller than a base frame (4K)",
                    b.max_block
                ));
            }
            if !(0.0..=0.95).contains(&b.wired) {
                return Err(format!(
                    "frames.wired: {} must be a share of memory from 0 to 0.95",
                    b.wired
                ));
            }
            if b.max_block < page {
                return Err(format!(
                    "frames.max_block: {} is smaller than the base page ({page}), so memory can never give a page",
                    b.max_block
                ));
            }
            if !(0.0..=0.99).contains(&b.cached) || b.cached + b.wired > 0.99 {
                return Err(format!(
                    "frames.cached: {} must be a share of memory from 0 to 0.99, and with frames.wired ({}) at most 0.99",
                    b.cached, b.wired
                ));
            }
            let mut a = BuddyAllocator::new(frames, max_order);
            wire(&mut a, frames, b.wired, b.wired_clustered, seed);
            if b.cached > 0.0 {
                let cache = FileCache::new(a, b.cached, page, block, contiguity, seed);
                return Ok(Box::new(cache));
            }
            Ok(Box::new(a))
        }
    }
}

/// Wire `share` of the frames: the top of memory if `clustered`, else each frame at
/// random with that probability (seeded).
fn wire(a: &mut BuddyAllocator, frames: u64, share: f64, clustered: bool, seed: u64) {
    if share <= 0.0 {
        return;
    }
    if clustered {
        let n = (frames as f64 * share) as u64;
        for pfn in frames - n..frames {
            a.take(pfn);
        }
        return;
    }
    let mut state = seed ^ 0x5749_5245_445f_5047;
    let threshold = (share * (1u64 << 53) as f64) as u64;
    for pfn in 1..frames {
        if super::splitmix(&mut state) >> 11 < threshold {
            a.take(pfn);
        }
    }
}
