//! A data-cache model, so that translation overhead and cache pollution come out of
//! the same run: the machine sends it the physical address of every data reference
//! after translation, every page-table entry a walk reads and the lines a promotion
//! copies, and it says which level served each and at what latency.
//!
//! The model is a hierarchy of set-associative levels with exact LRU per set
//! ([`CacheLevel`]), physically indexed and tagged, one line size throughout, and
//! deliberately simple: a reference probes the levels in order and costs the
//! load-to-use latency of the first that holds its line, or the memory's; the line is
//! then filled into every level that missed. Levels are
//! non-inclusive: an eviction from one level leaves the others alone. Writes
//! allocate like reads, and nothing is written back (no dirty state), so a store
//! costs what a load does. No prefetching, no overlap between misses, no instruction
//! side: `l1d` is the data cache, and instruction fetches stay out of it.
//!
//! Configured by [`CacheConfig`] (`[cache]` of a machine; no levels, the default, is
//! no model); built by [`build`] (or [`CacheHierarchy::new`]); reported by [`CacheHierarchy::report`].

mod config;
mod hierarchy;
mod level;
#[cfg(test)]
mod properties;
mod recency;
mod report;
mod worker;

pub use config::{CacheConfig, CacheLevelConfig, MAX_LINES, MAX_WAYS};
pub use hierarchy::CacheHierarchy;
pub use level::CacheLevel;
pub use report::{CacheLevelReport, CacheReport, PerKind};
pub use worker::CacheWorker;

/// The data caches a machine's `[cache]` asks for: none when it names no level.
/// Errors name the field.
pub fn build(config: &CacheConfig) -> Result<Option<CacheHierarchy>, String> {
    if config.is_off() {
        return Ok(None);
    }
    CacheHierarchy::new(config).map(Some)
}

/// Why a line is referenced; counted apart, so that the misses page walks and
/// promotions cause, and those they cause to the program's data, can be told apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CacheAccess {
    /// The program's own load or store, at the physical address it translated to.
    Data = 0,
    /// A page-table entry read by a walk.
    Walk = 1,
    /// A line read or written by the operating system to promote a superpage by
    /// copying (or any other copy of pages it makes).
    Copy = 2,
}

impl CacheAccess {
    pub const ALL: [CacheAccess; 3] = [CacheAccess::Data, CacheAccess::Walk, CacheAccess::Copy];

    /// The kind in the two low bits of a [`CacheHierarchy::tagged`] word.
    #[inline(always)]
    pub fn from_tag(word: u64) -> CacheAccess {
        match word & 3 {
            0 => CacheAccess::Data,
            1 => CacheAccess::Walk,
            _ => CacheAccess::Copy,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CacheAccess::Data => "data",
            CacheAccess::Walk => "walk",
            CacheAccess::Copy => "copy",
        }
    }
}

/// What served one reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Served {
    /// The level that held the line (0: the first), or `None`: memory.
    pub level: Option<usize>,
    /// Its load-to-use latency: the serving level's `hit_cycles`, or `memory_cycles`.
    pub cycles: f64,
}

impl Served {
    /// Whether the reference missed every level and went to memory (where, for
    /// instance, a remapping memory controller would translate a shadow address).
    pub fn reached_memory(self) -> bool {
        self.level.is_none()
    }
}

/// What referencing a range of lines cost ([`CacheHierarchy::touch_lines`],
/// [`CacheHierarchy::copy_range`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Touched {
    /// Lines referenced.
    pub lines: u64,
    /// Of which served by memory.
    pub memory: u64,
    /// The sum of their latencies: references made one after the other, without
    /// overlap (an upper bound for a copy loop, which overlaps its misses).
    pub cycles: f64,
}

impl Touched {
    #[inline]
    fn add(&mut self, s: Served) {
        self.lines += 1;
        self.memory += s.reached_memory() as u64;
        self.cycles += s.cycles;
    }
}
