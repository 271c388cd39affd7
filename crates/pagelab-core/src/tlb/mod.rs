//! Translation lookaside buffers. A TLB array owns its entries; a replacement policy
//! object (see [`replacement`]) chooses victims. Every key carries the address-space
//! id and the page size, so tagged TLBs, flushes and mixed page sizes need no special
//! cases later.

pub mod all_assoc;
pub mod coalesce;
mod fa_lru;
mod fingerprint;
pub mod hierarchy;
pub use crate::replacement;
pub mod set_assoc;
pub mod walk_cache;
mod way_index;

pub use coalesce::Coalescing;
pub use hierarchy::{AnyArray, Hierarchy, REPLACEMENT_POLICIES};
pub use set_assoc::SetAssocTlb;
pub use walk_cache::WalkCaches;

use crate::addr::{Asid, PageSize, Pfn, VirtAddr, Vpn};
use crate::pagetable::Translation;
use serde::Serialize;

/// What a TLB entry is found by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TlbKey {
    pub vpn: Vpn,
    pub asid: Asid,
    pub size: PageSize,
}

impl TlbKey {
    #[inline]
    pub fn of(asid: Asid, va: VirtAddr, size: PageSize) -> TlbKey {
        TlbKey {
            vpn: va.vpn(size),
            asid,
            size,
        }
    }
}

/// Counters every TLB keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TlbStats {
    pub hits: u64,
    pub misses: u64,
    /// Valid entries displaced by a fill.
    pub evictions: u64,
}

impl TlbStats {
    /// Add hits and misses a loop counted for itself.
    pub fn add(&mut self, hits: u64, misses: u64) {
        self.hits += hits;
        self.misses += misses;
    }
}

/// The operations the machine needs of a TLB.
pub trait Tlb {
    /// Find the translation of `va`, counting a hit or a miss.
    fn lookup(&mut self, asid: Asid, va: VirtAddr) -> Option<Translation>;
    /// The size of the entry `va` hits, with the same effect on state and counts as
    /// [`Tlb::lookup`] but without assembling the translation (the simulator's hot path).
    #[inline]
    fn access(&mut self, asid: Asid, va: VirtAddr) -> Option<PageSize> {
        self.lookup(asid, va).map(|t| t.size)
    }
    /// Cache the translation `t` that `va` walked to (the TLB may keep a smaller
    /// page of it when it does not hold `t.size`). Returns the size of the entry
    /// made, or `None` when the TLB holds no page size small enough.
    fn fill(&mut self, asid: Asid, va: VirtAddr, t: Translation) -> Option<PageSize>;
    /// The largest page size held that is no larger than `size`.
    fn fits(&self, size: PageSize) -> Option<PageSize>;
    /// Drop every entry of `asid` that overlaps `[start, start + len)`.
    fn invalidate_range(&mut self, asid: Asid, start: VirtAddr, len: u64);
    /// Drop every entry of `asid`.
    fn flush_asid(&mut self, asid: Asid);
    fn flush_all(&mut self);
    /// Count `n` hits the machine established without a lookup: repeated references
    /// to the page the previous lookup hit or filled, which every policy here treats
    /// as a hit that changes nothing (that entry is already its set's most recent).
    fn credit_hits(&mut self, n: u64);
    /// The smallest page size held, in bytes.
    fn min_page_bytes(&self) -> u64;
    fn stats(&self) -> TlbStats;
    fn capacity(&self) -> usize;
    /// The translation of `va` if an entry holds it, changing nothing (no count, no
    /// replacement state): for a model that needs the frame of a reference.
    fn peek(&self, asid: Asid, va: VirtAddr) -> Option<Translation>;
    /// Call `f` with the key and first frame of every valid entry (for policies that
    /// look at what the TLB holds, and for checks; not on the hot path). After a
    /// decoupled run the frames are placeholders, some of them a previous entry's
    /// (see `machine::decoupled`).
    fn for_each_entry(&self, f: &mut dyn FnMut(TlbKey, Pfn));
}

/// The seed of the array at configuration field `field` (such as
/// `tlb.levels[1].arrays[0]`), from the machine's `seed`: every array draws its own
/// sequence, the same from run to run. (FNV-1a of the field, mixed with the seed by
/// SplitMix64's finalizer.)
pub fn array_seed(seed: u64, field: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in field.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = seed ^ h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The frame holding `va` within a page of `size` that starts at frame `t.pfn`, when
/// the page is cached as pages of the smaller `size`.
#[inline]
pub fn sub_page(t: Translation, va: VirtAddr, size: PageSize) -> Translation {
    debug_assert!(size <= t.size);
    let offset = va.offset_in(t.size) & !(size.bytes() - 1);
    Translation {
        pfn: Pfn(t.pfn.0 + (offset >> crate::addr::BASE_SHIFT)),
        size,
        perms: t.perms,
    }
}

#[cfg(test)]
mod tests {
    use super::array_seed;

    #[test]
    fn arrays_draw_their_own_seeds_the_same_every_run() {
        let a = array_seed(7, "tlb.levels[0].arrays[0]");
        assert_eq!(a, array_seed(7, "tlb.levels[0].arrays[0]"));
        assert_ne!(a, array_seed(7, "tlb.levels[1].arrays[0]"));
        assert_ne!(a, array_seed(8, "tlb.levels[0].arrays[0]"));
    }
}
