//! Range translations (Gandhi et al., "Range Translations for Fast Virtual Memory",
//! IEEE Micro 2016, "Redundant Memory Mappings"): a range maps contiguous virtual pages
//! `[BASE, LIMIT)` onto contiguous frames, at any base-page alignment, redundantly with
//! the page table, which stays complete. The pieces:
//! - [`table`]: the per-process range table, the B-tree of Fig. 5;
//! - [`tlb`]: the range TLB, probed beside a TLB level (§ "Range TLB"), or a direct
//!   segment (one BASE/LIMIT/OFFSET register set per process, the paper's comparison
//!   point);
//! - [`change`]: what each allocation event of a trace maps and unmaps;
//! - [`eager`]: eager paging (Fig. 6), which makes ranges by allocating a region's
//!   memory at once from the buddy allocator, in the largest blocks it has;
//! - [`config`]: what configures them; [`machine_state`]: what a machine carries of
//!   them ([`Ranges`]), built and checked from the configuration.
//!
//! The range bit of §4.2 (a PTE says whether its page lies in a range, so that only
//! such walks go on to the range table) is not stored in the page tables: the OS keeps
//! both tables consistent, so a page's range bit is set exactly when the range table
//! holds a range over it, which is what the walker asks the range table.

pub mod change;
pub mod config;
pub mod eager;
pub mod machine_state;
pub mod table;
pub mod tlb;

pub use change::{memory_change, MemoryChange};
pub use eager::{EagerPaging, EagerReport};
pub use machine_state::Ranges;
pub use table::{RangeTable, RangeTables};
pub use tlb::{RangeTlb, RangeUnitReport};

use crate::pagetable::Perms;

/// A range translation: virtual pages `[base, limit)` (base-page numbers) reach the
/// frames from `pfn` on, in order, with one set of rights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub base: u64,
    pub limit: u64,
    pub pfn: u64,
    pub perms: Perms,
    /// The bit of page `base` in its table's touched-pages map (see
    /// [`RangeTable::touch`]).
    pub mark: u64,
}

impl Range {
    /// Pages it maps.
    #[inline]
    pub fn pages(&self) -> u64 {
        self.limit - self.base
    }
    #[inline]
    pub fn contains(&self, vpn: u64) -> bool {
        self.base <= vpn && vpn < self.limit
    }
    /// The frame page `vpn` (inside the range) reaches: `vpn + OFFSET`.
    #[inline]
    pub fn frame(&self, vpn: u64) -> u64 {
        debug_assert!(self.contains(vpn));
        self.pfn + (vpn - self.base)
    }
    /// The part of the range inside `[from, to)`, if any (its frames and mark follow).
    pub fn clip(&self, from: u64, to: u64) -> Option<Range> {
        let (b, l) = (self.base.max(from), self.limit.min(to));
        (b < l).then(|| Range {
            base: b,
            limit: l,
            pfn: self.pfn + (b - self.base),
            perms: self.perms,
            mark: self.mark + (b - self.base),
        })
    }
}
