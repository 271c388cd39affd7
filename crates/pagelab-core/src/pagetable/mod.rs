//! Page tables. A page table is a data structure: it maps, unmaps and looks up, and a
//! lookup ("walk") returns the translation together with the physical addresses of
//! the entries it read — data, not time. The machine turns those into cycles through
//! its caches and cost model, so cost models change without touching a table.
//!
//! Adding a structure: a file here implementing [`PageTable`], with its options
//! implementing [`TableOptions`]; `mod` and `pub use` lines for it below; and its line in
//! [`for_each_page_table!`](crate::for_each_page_table), from which the configuration,
//! the factory, the name lists and the tests that take every structure are made
//! (docs/EXTENDING.md).

mod any;
mod clustered;
mod guarded;
mod hashed;
mod hashing;
mod inverted;
mod linear;
mod mem;
mod options;
mod radix;
mod vrpt;

pub use any::{build_page_table, default_structures, AnyPageTable, PageTableConfig, NAMES};
pub(crate) use any::{each_table, each_table_match};
pub use clustered::{ClusteredConfig, ClusteredPageTable};
pub use guarded::{GuardedConfig, GuardedPageTable};
pub use hashed::{HashedConfig, HashedPageTable, SIZED_FOR_PAGES};
pub use hashing::Bucket;
pub use inverted::{InvertedConfig, InvertedPageTable};
pub use linear::{LinearConfig, LinearPageTable};
pub use options::TableOptions;
pub use radix::{RadixConfig, RadixPageTable};
pub use vrpt::{VariableRadixConfig, VariableRadixPageTable};

/// The page-table structures, by configuration name (`kind` in `[page_table]`): the
/// one list from which [`PageTableConfig`], [`AnyPageTable`], [`build_page_table`],
/// [`NAMES`] and [`default_structures`] are made. The macro hands the list to `$m`,
/// after the tokens given after it and a `;`.
#[macro_export]
macro_rules! for_each_page_table {
    ($m:ident $(, $($arg:tt)*)?) => {
        $m! {
            $($($arg)*)?;
            /// x86-64 multi-level radix table.
            "radix" => Radix(RadixConfig),
            /// Virtual linear array, its pages mapped by a radix table.
            "linear" => Linear(LinearConfig),
            /// Hashed table with collision chaining (Huck and Hays).
            "hashed" => Hashed(HashedConfig),
            /// Clustered table: hashed, several adjacent PTEs per entry (Talluri, Hill, Khalidi).
            "clustered" => Clustered(ClusteredConfig),
            /// Inverted table (an entry per frame) with a hash anchor table.
            "inverted" => Inverted(InvertedConfig),
            /// Guarded page table: path compression, fixed radix (Liedtke, Elphinstone).
            "guarded" => Guarded(GuardedConfig),
            /// Variable radix page table: path and level compression (Szmajda and Heiser).
            "variable-radix" => VariableRadix(VariableRadixConfig),
        }
    };
}

use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::frames::FrameAllocator;
use std::fmt;
use std::mem::MaybeUninit;

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

/// Most memory references one walk can record. Few structures here come near it (a
/// 4-level radix walk makes 4, a guarded table of radix 16 at most 14); a hashed table
/// makes one per record on the chains it probes, which a small bucket array lets grow
/// past it. A walk that makes more keeps the first `MAX_WALK_REFS` and counts the rest
/// in [`Walk::dropped`]; the machine counts them all among the walk's references.
pub const MAX_WALK_REFS: usize = 64;

/// The result of a lookup: the translation (if mapped) and the page-table entries read.
#[derive(Clone, Copy)]
pub struct Walk {
    pub translation: Option<Translation>,
    /// Only the first `n_refs` are initialized: a walk is made per TLB miss, and
    /// clearing 512 bytes each time would cost more than most walks.
    refs: [MaybeUninit<PhysAddr>; MAX_WALK_REFS],
    n_refs: u8,
    dropped: u16,
}

impl Walk {
    #[inline]
    pub fn new() -> Walk {
        Walk {
            translation: None,
            refs: [MaybeUninit::uninit(); MAX_WALK_REFS],
            n_refs: 0,
            dropped: 0,
        }
    }
    /// Empty again, for another walk.
    #[inline(always)]
    pub fn clear(&mut self) {
        self.translation = None;
        self.n_refs = 0;
        self.dropped = 0;
    }
    #[inline]
    pub fn push(&mut self, entry: PhysAddr) {
        match self.refs.get_mut(self.n_refs as usize) {
            Some(slot) => {
                slot.write(entry);
                self.n_refs += 1;
            }
            None => self.dropped = self.dropped.saturating_add(1),
        }
    }
    /// Physical addresses of the entries read, in order.
    #[inline]
    pub fn refs(&self) -> &[PhysAddr] {
        let n = self.n_refs as usize;
        // SAFETY: `push` initialized `refs[..n_refs]`, and `n_refs` never exceeds the
        // array's length; `MaybeUninit<T>` has the layout of `T`.
        unsafe { std::slice::from_raw_parts(self.refs.as_ptr().cast::<PhysAddr>(), n) }
    }
    /// References made beyond the `MAX_WALK_REFS` recorded (0 but for a hashed
    /// table whose chains hold more records than that).
    pub fn dropped(&self) -> usize {
        self.dropped as usize
    }
    /// Count `n` more references made beyond those recorded.
    pub fn add_dropped(&mut self, n: usize) {
        self.dropped = self.dropped.saturating_add(n.min(u16::MAX as usize) as u16);
    }
    /// Distinct 64-byte cache lines among the entries read.
    pub fn distinct_lines(&self) -> usize {
        self.distinct_lines_from(0)
    }
    /// Distinct 64-byte cache lines among the entries read after the first `skip`.
    pub fn distinct_lines_from(&self, skip: usize) -> usize {
        distinct_lines(&self.refs()[skip.min(self.refs().len())..])
    }
}

/// Distinct 64-byte cache lines among `refs`.
pub fn distinct_lines(refs: &[PhysAddr]) -> usize {
    (0..refs.len())
        .filter(|&i| !refs[..i].iter().any(|r| r.line() == refs[i].line()))
        .count()
}

impl Default for Walk {
    fn default() -> Self {
        Walk::new()
    }
}

impl PartialEq for Walk {
    fn eq(&self, other: &Walk) -> bool {
        self.translation == other.translation
            && self.refs() == other.refs()
            && self.dropped == other.dropped
    }
}

impl Eq for Walk {}

impl fmt::Debug for Walk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Walk")
            .field("translation", &self.translation)
            .field("refs", &self.refs())
            .field("dropped", &self.dropped)
            .finish()
    }
}

/// The memory references an update (map, unmap, protect, and the shared-segment
/// operations) made to the table: entries read and entries written. A node the
/// update allocates counts one write per 64-byte line it is cleared in; a node it
/// frees costs nothing. The OS's own bookkeeping outside the table (its list of
/// mapped regions, see `hashing::Extents`) is not counted. An update that fails
/// reports no cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateCost {
    pub reads: u64,
    pub writes: u64,
}

impl UpdateCost {
    pub const NONE: UpdateCost = UpdateCost {
        reads: 0,
        writes: 0,
    };
    /// All references, reads and writes.
    pub fn refs(self) -> u64 {
        self.reads + self.writes
    }
    /// A new node of `bytes`: one write per line cleared.
    pub fn clear(&mut self, bytes: u64) {
        self.writes += bytes.div_ceil(64);
    }
}

impl std::ops::AddAssign for UpdateCost {
    fn add_assign(&mut self, o: UpdateCost) {
        self.reads += o.reads;
        self.writes += o.writes;
    }
}

/// A segment shared by several address spaces: `pages` pages of `size` from `va` on,
/// backed by the frames from `pfn` on (page `i` at `pfn + i × size`), with `perms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub va: VirtAddr,
    pub size: PageSize,
    pub pages: u64,
    pub pfn: Pfn,
    pub perms: Perms,
}

impl Segment {
    /// The segment's bytes, if it has pages, is aligned and does not run past the
    /// end of the 64-bit address space.
    pub fn bytes(&self) -> Result<u64, MapError> {
        if self.va.offset_in(self.size) != 0 {
            return Err(MapError::Misaligned);
        }
        let bytes = self
            .pages
            .checked_mul(self.size.bytes())
            .filter(|&b| b > 0 && self.va.0.checked_add(b - 1).is_some())
            .ok_or(MapError::BadSegment)?;
        self.pfn
            .0
            .checked_add(self.pages * self.size.base_frames())
            .ok_or(MapError::BadSegment)?;
        Ok(bytes)
    }
    /// Page `i`: its address and first frame.
    pub fn page(&self, i: u64) -> (VirtAddr, Pfn) {
        (
            VirtAddr(self.va.0 + i * self.size.bytes()),
            Pfn(self.pfn.0 + i * self.size.base_frames()),
        )
    }
}

/// Why a map or unmap was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// The structure cannot map a page of this size.
    #[error("this page table cannot map {0} pages")]
    UnsupportedSize(PageSize),
    /// The virtual address is not aligned to the page size.
    #[error("the address is not aligned to the page size")]
    Misaligned,
    /// Part of the range is mapped already.
    #[error("the range overlaps an existing mapping")]
    Overlap,
    /// Nothing of that size is mapped there.
    #[error("no page of that size is mapped there")]
    NotMapped,
    /// No frame was left for a page-table node.
    #[error("no physical frame left for a page-table node")]
    OutOfMemory,
    /// The address is not canonical for a virtual address space of this many bits.
    #[error("the address is outside the table's {0}-bit virtual address space")]
    OutOfRange(u32),
    /// The frame lies beyond the physical memory an inverted table covers (frames).
    #[error("the frame lies beyond the {0} frames the inverted table covers (page_table.memory)")]
    NoSuchFrame(u64),
    /// A shared segment with no pages, or one that runs past the end of the address
    /// space or of the frame numbers.
    #[error("a shared segment needs at least one page and must fit in the address space")]
    BadSegment,
}

/// The operations every page-table structure provides. Updates report the table
/// references they made ([`UpdateCost`]); a failed update changes nothing.
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
    ) -> Result<UpdateCost, MapError>;
    /// Remove the page of `size` starting at `va`; nodes left empty go back to `frames`.
    fn unmap(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError>;
    /// Change the rights of the page of `size` mapped at `va` (`NotMapped` if no page
    /// of that size starts there). `frames` serves structures that must copy a shared
    /// node before changing one address space's view of it.
    fn protect(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        perms: Perms,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError>;
    /// Give `perms` to every page mapped in `bytes` from `va` (both multiples of the
    /// smallest page size; `Misaligned` if a page lies partly outside, and nothing
    /// changes). By default each page is found by a walk (not counted: the OS knows
    /// its mappings) and protected on its own; the variable radix table writes the
    /// rights into the internal entries above whole nodes instead (§4.3).
    fn protect_range(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        bytes: u64,
        perms: Perms,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        protect_pages(self, asid, va, bytes, perms, frames)
    }
    /// Map `segment` into every address space of `asids`. Afterwards each address
    /// space sees the pages as if mapped one by one: unmapping or protecting a page
    /// in one of them changes only that one. By default the pages are mapped one by
    /// one in each address space; a structure that can share its nodes (the variable
    /// radix table's cross-links) overrides it. Either every page is mapped or none.
    fn map_shared(
        &mut self,
        asids: &[Asid],
        segment: &Segment,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        map_pages(self, asids, segment, frames)
    }
    /// Remove `segment` from `asid`: every page of it must still be mapped there with
    /// the segment's page size (`NotMapped` otherwise, and nothing changes).
    fn unmap_shared(
        &mut self,
        asid: Asid,
        segment: &Segment,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        unmap_pages(self, asid, segment, frames)
    }
    /// Look `va` up as the hardware (or the miss handler) would.
    fn walk(&self, asid: Asid, va: VirtAddr) -> Walk;
    /// [`PageTable::walk`] into `walk`, for a caller that keeps one: a [`Walk`] is
    /// large, and the machine's walk loop should not copy it. By default it assigns;
    /// a structure on the hot path writes in place.
    #[inline(always)]
    fn walk_into(&self, asid: Asid, va: VirtAddr, walk: &mut Walk) {
        *walk = self.walk(asid, va);
    }
    /// A hint that `va` will be walked soon: bring what its walk reads into the host's
    /// cache. It changes nothing simulated; by default it does nothing. What it found
    /// on the way may be handed to that walk ([`PageTable::walk_brief`]).
    #[inline(always)]
    fn prefetch(&self, _asid: Asid, _va: VirtAddr) -> WalkHint {
        WalkHint::NONE
    }
    /// A hint, earlier than [`PageTable::prefetch`]'s, that `va` will be walked: the
    /// structure may bring into the host's cache what that prefetch will read. It
    /// changes nothing simulated; by default it does nothing.
    #[inline(always)]
    fn prefetch_early(&self, _asid: Asid, _va: VirtAddr) {}
    /// The walk of `va` in brief, for a caller that needs its counts but not its
    /// entries: how many entries it reads and what it finds, when every entry it reads
    /// lies on a cache line of its own (so its distinct lines are its references).
    /// `None`: this structure does not know that, and the caller walks in full
    /// ([`PageTable::walk_into`]). It must agree with the full walk, whatever `hint`
    /// is: a hint from [`PageTable::prefetch`] of the same `asid` and `va`, however
    /// the table changed since, or [`WalkHint::NONE`].
    #[inline(always)]
    fn walk_brief(
        &self,
        _asid: Asid,
        _va: VirtAddr,
        _hint: WalkHint,
    ) -> Option<(usize, Option<Translation>)> {
        None
    }
    /// Memory is short: give back to `frames` what the structure holds but does not
    /// use (the variable radix table's lazily freed levels). Whether it gave any.
    fn give_back(&mut self, _frames: &mut dyn FrameAllocator) -> bool {
        false
    }
    /// Bytes of memory the structure occupies: every frame it holds.
    fn footprint_bytes(&self) -> u64;
    /// Of [`PageTable::footprint_bytes`], the frames it holds but could give back
    /// without a lookup changing (the variable radix table's unused parts of levels
    /// the greedy policy sized for growth). None in the other structures.
    fn reclaimable_bytes(&self) -> u64 {
        0
    }
    /// Page sizes the structure can map.
    fn page_sizes(&self) -> &[PageSize];
}

/// What a page table's [`PageTable::prefetch`] found for the walk it prepares, for
/// that walk to start from; meaningful only to the table that gave it, which must
/// check that it still holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkHint {
    /// Where the walk will end, plus one (0: nothing found).
    pub at: u64,
    /// The table's version when it was found.
    pub version: u64,
}

impl WalkHint {
    pub const NONE: WalkHint = WalkHint { at: 0, version: 0 };
}

/// The last byte of the page of `size` at `va`, if `sizes` has `size` and `va` is
/// aligned to it.
pub(crate) fn page_last(sizes: &[PageSize], va: VirtAddr, size: PageSize) -> Result<u64, MapError> {
    if !sizes.contains(&size) {
        return Err(MapError::UnsupportedSize(size));
    }
    if va.offset_in(size) != 0 {
        return Err(MapError::Misaligned);
    }
    Ok(va.0 + (size.bytes() - 1))
}

/// Page sizes from a configuration: sorted, without repeats.
pub(crate) fn sorted_sizes(sizes: &[PageSize]) -> Vec<PageSize> {
    let mut v = sizes.to_vec();
    v.sort();
    v.dedup();
    v
}

/// [`PageTable::map_shared`] by mapping each page in each address space, undoing
/// what was mapped if one fails.
pub fn map_pages<T: PageTable + ?Sized>(
    table: &mut T,
    asids: &[Asid],
    segment: &Segment,
    frames: &mut dyn FrameAllocator,
) -> Result<UpdateCost, MapError> {
    segment.bytes()?;
    let mut cost = UpdateCost::NONE;
    for (n, &asid) in asids.iter().enumerate() {
        for i in 0..segment.pages {
            let (va, pfn) = segment.page(i);
            match table.map(asid, va, segment.size, pfn, segment.perms, frames) {
                Ok(c) => cost += c,
                Err(e) => {
                    let done = asids[..n]
                        .iter()
                        .flat_map(|&a| (0..segment.pages).map(move |j| (a, j)));
                    for (a, j) in done.chain((0..i).map(|j| (asid, j))) {
                        let _ = table.unmap(a, segment.page(j).0, segment.size, frames);
                    }
                    return Err(e);
                }
            }
        }
    }
    Ok(cost)
}

/// The keys `[lo, hi)` of a range to protect: `bytes` from `va`, both multiples of
/// the smallest of `sizes`, not empty and within the address space.
pub(crate) fn range_of(
    sizes: &[PageSize],
    va: VirtAddr,
    bytes: u64,
) -> Result<(u128, u128), MapError> {
    let step = sizes.iter().min().map_or(4096, |s| s.bytes());
    if va.0 % step != 0 || bytes % step != 0 {
        return Err(MapError::Misaligned);
    }
    let hi = va.0 as u128 + bytes as u128;
    if bytes == 0 || hi > 1u128 << 64 {
        return Err(MapError::BadSegment);
    }
    Ok((va.0 as u128, hi))
}

/// [`PageTable::protect_range`] page by page: each page found by a walk, then
/// protected; first every page is checked to lie wholly inside.
pub fn protect_pages<T: PageTable + ?Sized>(
    table: &mut T,
    asid: Asid,
    va: VirtAddr,
    bytes: u64,
    perms: Perms,
    frames: &mut dyn FrameAllocator,
) -> Result<UpdateCost, MapError> {
    let (lo, hi) = range_of(table.page_sizes(), va, bytes)?;
    let step = table.page_sizes().iter().min().map_or(4096, |s| s.bytes()) as u128;
    let mut pages = Vec::new();
    let mut at = lo;
    while at < hi {
        match table.walk(asid, VirtAddr(at as u64)).translation {
            Some(t) => {
                let start = at as u64 & !(t.size.bytes() - 1);
                let end = start as u128 + t.size.bytes() as u128;
                if (start as u128) < lo || end > hi {
                    return Err(MapError::Misaligned);
                }
                pages.push((VirtAddr(start), t.size));
                at = end;
            }
            None => at += step,
        }
    }
    let mut cost = UpdateCost::NONE;
    for (page, size) in pages {
        cost += table.protect(asid, page, size, perms, frames)?;
    }
    Ok(cost)
}

/// [`PageTable::unmap_shared`] page by page, after a walk of each page has found it
/// (those walks count as reads).
pub fn unmap_pages<T: PageTable + ?Sized>(
    table: &mut T,
    asid: Asid,
    segment: &Segment,
    frames: &mut dyn FrameAllocator,
) -> Result<UpdateCost, MapError> {
    segment.bytes()?;
    let mut cost = UpdateCost::NONE;
    for i in 0..segment.pages {
        let w = table.walk(asid, segment.page(i).0);
        cost.reads += (w.refs().len() + w.dropped()) as u64;
        if w.translation.map(|t| t.size) != Some(segment.size) {
            return Err(MapError::NotMapped);
        }
    }
    for i in 0..segment.pages {
        cost += table.unmap(asid, segment.page(i).0, segment.size, frames)?;
    }
    Ok(cost)
}
