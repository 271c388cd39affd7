//! The buddy allocator as the configuration describes it: its options, checked, the
//! frames wired before the run, and another program's file cache on top.

use super::{memory_frames, BuddyAllocator, BuildContext, Built, FileCache};
use crate::addr::{ByteSize, PageSize};

/// The `[frames]` options of `kind = "buddy"`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BuddyFramesConfig {
    /// Physical memory size, e.g. "64G". Default 64 GiB.
    pub memory: ByteSize,
    /// The largest block, as a page size (it sets the largest superpage memory can
    /// give). Default "1G".
    pub max_block: PageSize,
    /// The share of memory wired before the run (kernel pages, pinned buffers): base
    /// frames that are never freed or moved. Scattered at random they break
    /// contiguity (Navarro et al., OSDI 2002, as Gopalan's slides, "Issue 4:
    /// fragmentation"), the knob that makes large blocks scarce. Default 0.
    pub wired: f64,
    /// Cluster the wired frames at the top of memory, "a dedicated region of physical
    /// memory for wired pages", instead of scattering them. Default false.
    pub wired_clustered: bool,
    /// The share of memory another program's file cache holds when the run begins:
    /// clean pages a web server's misses left behind, placed by this allocator, that
    /// the page daemon frees when memory is short (and, with `paging.daemon =
    /// "contiguity"`, to give a superpage its block). From 0 to 0.99, with `wired`;
    /// default 0 (`frames::FileCache`).
    pub cached: f64,
    /// Sample the free memory by block size every this many references, for the
    /// report's fragmentation over time (0: never). Default 1,000,000.
    pub sample_every: u64,
}

impl Default for BuddyFramesConfig {
    fn default() -> Self {
        BuddyFramesConfig {
            memory: ByteSize(64 << 30),
            max_block: PageSize::G1,
            wired: 0.0,
            wired_clustered: false,
            cached: 0.0,
            sample_every: 1_000_000,
        }
    }
}

impl BuddyFramesConfig {
    /// The allocator these options describe, its values checked.
    pub fn build(&self, cx: &BuildContext) -> Built {
        let b = self;
        let (page, block, contiguity, seed) = (cx.page, cx.block, cx.contiguity, cx.seed);
        let frames = memory_frames(b.memory)?;
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
        if crate::rng::splitmix64(&mut state) >> 11 < threshold {
            a.take(pfn);
        }
    }
}
