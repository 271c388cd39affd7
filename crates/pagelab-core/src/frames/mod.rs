//! Physical memory: frame allocators hand out naturally aligned blocks of base frames.
//!
//! Adding an allocator: a file here implementing [`FrameAllocator`], with its options
//! and their `build`; one variant of [`FramesConfig`], its name in `NAMES` and its arm
//! in [`build`] (docs/EXTENDING.md).

mod buddy;
mod buddy_build;
mod file_cache;
pub mod sampling;
mod simple;

pub use buddy_build::BuddyFramesConfig;
pub use simple::SimpleFramesConfig;

pub use buddy::BuddyAllocator;
pub use file_cache::{FileCache, FileCacheReport};
pub use simple::SimpleAllocator;

use crate::addr::{ByteSize, PageSize, Pfn};

/// Physical memory and its allocator, by kind: the `[frames]` section of a machine's
/// configuration (re-exported by `config`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FramesConfig {
    /// Bump allocation with reuse of freed blocks; no splitting or coalescing.
    Simple(SimpleFramesConfig),
    /// The binary buddy allocator: aligned blocks split on demand and coalesced on free.
    Buddy(BuddyFramesConfig),
}

impl FramesConfig {
    /// The allocators' names (`kind` in `[frames]`), in the variants' order (a unit
    /// test checks them against serde's).
    pub const NAMES: &'static [&'static str] = &["simple", "buddy"];

    /// The buddy allocator's options, if memory is a buddy allocator (ranges, the
    /// fragmentation samples and the file cache need one).
    pub fn buddy(&self) -> Option<&BuddyFramesConfig> {
        match self {
            FramesConfig::Buddy(b) => Some(b),
            _ => None,
        }
    }
}

impl Default for FramesConfig {
    fn default() -> Self {
        FramesConfig::Simple(SimpleFramesConfig::default())
    }
}

/// What an allocator is built with besides its options: the base page, the smallest
/// superpage (the file cache's pages, and the block its contiguity daemon frees),
/// whether the page daemon frees for contiguity, and the run's seed.
pub struct BuildContext {
    pub page: PageSize,
    pub block: PageSize,
    pub contiguity: bool,
    pub seed: u64,
}

/// An allocator built, or why its options are refused (naming `frames.<field>`).
pub type Built = Result<Box<dyn FrameAllocator>, String>;

/// Physical memory as the configuration describes it.
pub fn build(
    c: &FramesConfig,
    page: PageSize,
    block: PageSize,
    contiguity: bool,
    seed: u64,
) -> Built {
    let cx = BuildContext {
        page,
        block,
        contiguity,
        seed,
    };
    match c {
        FramesConfig::Simple(o) => o.build(&cx),
        FramesConfig::Buddy(o) => o.build(&cx),
    }
}

/// The base frames of `memory`; too little to run anything is refused.
pub(crate) fn memory_frames(memory: ByteSize) -> Result<u64, String> {
    let frames = memory.0 >> crate::addr::BASE_SHIFT;
    if frames < 16 {
        return Err(format!(
            "frames.memory: {} bytes is too little memory to run anything",
            memory.0
        ));
    }
    Ok(frames)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// `NAMES` is every variant, in order: serde's error for an unknown kind lists
    /// them.
    #[test]
    fn the_names_are_the_kinds() {
        assert_eq!(
            crate::config::serde_kinds::<FramesConfig>(),
            FramesConfig::NAMES
        );
    }
}
