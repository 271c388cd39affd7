//! Page tables. A page table is a data structure: it maps, unmaps and looks up, and a
//! lookup ("walk") returns the translation together with the physical addresses of
//! the entries it read — data, not time. The machine turns those into cycles through
//! its caches and cost model, so cost models change without touching a table.
//!
//! Adding a structure: a file here implementing [`PageTable`], one variant in
//! `config::PageTableConfig`, one arm in `machine::build_page_table` (docs/EXTENDING.md).

mod radix;

pub use radix::RadixPageTable;

use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::frames::FrameAllocator;
use std::fmt;

/// Access permissions of a mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Perms(pub u8);

impl Perms {
    pub const NONE: Perms = Perms(0);
    pub const READ: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const EXEC: u8 = 4;
    pub const RW: Perms = Perms(Perms::READ | Perms::WRITE);
    pub const RWX: Perms = Perms(7);
    pub fn allows_write(self) -> bool {
        self.0 & Perms::WRITE != 0
    }
}

/// Where a virtual page lives: the first base frame of the page, its size, its rights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Translation {
    pub pfn: Pfn,
    pub size: PageSize,
    pub perms: Perms,
}

impl Translation {
    /// The physical address `va` reaches through this translation.
    pub fn phys(&self, va: VirtAddr) -> PhysAddr {
        PhysAddr(self.pfn.addr().0 + va.offset_in(self.size))
    }
}

/// Most memory references a walk of any structure here makes.
pub const MAX_WALK_REFS: usize = 8;

/// The result of a lookup: the translation (if mapped) and the page-table entries read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    pub translation: Option<Translation>,
    refs: [PhysAddr; MAX_WALK_REFS],
    n_refs: u8,
}

impl Walk {
    pub fn new() -> Walk {
        Walk {
            translation: None,
            refs: [PhysAddr(0); MAX_WALK_REFS],
            n_refs: 0,
        }
    }
    #[inline]
    pub fn push(&mut self, entry: PhysAddr) {
        self.refs[self.n_refs as usize] = entry;
        self.n_refs += 1;
    }
    /// Physical addresses of the entries read, in order.
    pub fn refs(&self) -> &[PhysAddr] {
        &self.refs[..self.n_refs as usize]
    }
    /// Distinct 64-byte cache lines among the entries read.
    pub fn distinct_lines(&self) -> usize {
        self.distinct_lines_from(0)
    }
    /// Distinct 64-byte cache lines among the entries read after the first `skip`.
    pub fn distinct_lines_from(&self, skip: usize) -> usize {
        let refs = &self.refs()[skip.min(self.refs().len())..];
        (0..refs.len())
            .filter(|&i| !refs[..i].iter().any(|r| r.line() == refs[i].line()))
            .count()
    }
}

impl Default for Walk {
    fn default() -> Self {
        Walk::new()
    }
}

/// Why a map or unmap was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The structure cannot map a page of this size.
    UnsupportedSize(PageSize),
    /// The virtual address is not aligned to the page size.
    Misaligned,
    /// Part of the range is mapped already.
    Overlap,
    /// Nothing of that size is mapped there.
    NotMapped,
    /// No frame was left for a page-table node.
    OutOfMemory,
    /// The address is not canonical for a virtual address space of this many bits.
    OutOfRange(u32),
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::UnsupportedSize(s) => write!(f, "this page table cannot map {s} pages"),
            MapError::Misaligned => f.write_str("the address is not aligned to the page size"),
            MapError::Overlap => f.write_str("the range overlaps an existing mapping"),
            MapError::NotMapped => f.write_str("no page of that size is mapped there"),
            MapError::OutOfMemory => f.write_str("no physical frame left for a page-table node"),
            MapError::OutOfRange(bits) => write!(
                f,
                "the address is outside the table's {bits}-bit virtual address space"
            ),
        }
    }
}

impl std::error::Error for MapError {}

/// The operations every page-table structure provides.
pub trait PageTable {
    /// Map the page of `size` starting at `va` to the frames starting at `pfn`.
    /// Table nodes come from `frames`.
    fn map(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        pfn: Pfn,
        perms: Perms,
        frames: &mut dyn FrameAllocator,
    ) -> Result<(), MapError>;
    /// Remove the page of `size` starting at `va`; nodes left empty go back to `frames`.
    fn unmap(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        frames: &mut dyn FrameAllocator,
    ) -> Result<(), MapError>;
    /// Look `va` up as the hardware (or the miss handler) would.
    fn walk(&self, asid: Asid, va: VirtAddr) -> Walk;
    /// A hint that `va` will be walked soon: bring what its walk reads into the host's
    /// cache. It changes nothing simulated; by default it does nothing.
    #[inline(always)]
    fn prefetch(&self, _asid: Asid, _va: VirtAddr) {}
    /// Bytes of memory the structure occupies.
    fn footprint_bytes(&self) -> u64;
    /// Page sizes the structure can map.
    fn page_sizes(&self) -> &[PageSize];
}
