//! The hashed page table of Huck and Hays (ISCA'93), as Szmajda and Heiser, "Variable
//! Radix Page Table: A Page Table for Modern Architectures" (ACSAC 2003), §2.2 and
//! Fig. 3 describe it: one hash table for every address space, each entry tagged with
//! the page it maps, collisions chained.
//!
//! An entry is a 16-byte tag and PTE with an 8-byte chain pointer, padded to 32
//! bytes. By default a bucket is a pointer to its chain (`bucket = "pointer"`): a
//! lookup reads the pointer, then one entry per record on the chain, two cache lines
//! at least, as §5.2 of that paper counts for its HPT. `bucket = "entry"` holds the
//! chain's first entry in the bucket itself (Huck and Hays' layout): one line when
//! nothing collides (hashing.rs).
//!
//! Mixed page sizes: an entry maps a page of any size the table is configured for,
//! tagged with the size; a lookup probes each size, smallest first. Shared segments:
//! one entry per address space and page, as the paper says hashing must.
//! Simplification: overlaps between pages of different sizes are found in the OS's
//! region list ([`Extents`]), not by probing the table.

use super::hashing::{probe_sizes, Bucket, Chained, Extents, Key};
use super::options::*;
use super::{page_last, sorted_sizes, MapError, PageTable, Perms, UpdateCost, Walk};
use crate::addr::{Asid, PageSize, Pfn, VirtAddr};
use crate::frames::FrameAllocator;

/// Bytes of one entry: tag and PTE (16), chain pointer (8), padding.
const ENTRY_BYTES: u64 = 32;

#[derive(Clone, Copy, Default)]
struct Pte {
    pfn: u64,
    perms: Perms,
}

pub struct HashedPageTable {
    table: Chained<Pte>,
    extents: Extents,
    sizes: Vec<PageSize>,
}

fn key(asid: Asid, va: VirtAddr, size: PageSize) -> Key {
    Key {
        asid,
        shift: size.shift() as u8,
        tag: va.vpn(size).0,
    }
}

impl HashedPageTable {
    /// `1 << bucket_bits` buckets (1..=30) holding `bucket`, mapping pages of `sizes`.
    pub fn new(bucket_bits: u32, bucket: Bucket, sizes: &[PageSize]) -> HashedPageTable {
        HashedPageTable {
            table: Chained::new(bucket_bits, ENTRY_BYTES, bucket),
            extents: Extents::default(),
            sizes: sorted_sizes(sizes),
        }
    }

    fn find(
        &self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        cost: &mut UpdateCost,
    ) -> Result<u32, MapError> {
        page_last(&self.sizes, va, size)?;
        self.table
            .find(key(asid, va, size), |_| cost.reads += 1)
            .ok_or(MapError::NotMapped)
    }
}

impl PageTable for HashedPageTable {
    fn map(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        pfn: Pfn,
        perms: Perms,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let last = page_last(&self.sizes, va, size)?;
        if self.extents.overlaps(asid, va.0, last) {
            return Err(MapError::Overlap);
        }
        let mut cost = UpdateCost::NONE;
        let pte = Pte { pfn: pfn.0, perms };
        self.table
            .insert(key(asid, va, size), pte, frames, &mut cost)?;
        self.extents.insert(asid, va.0, last);
        Ok(cost)
    }

    fn unmap(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let mut cost = UpdateCost::NONE;
        let i = self.find(asid, va, size, &mut cost)?;
        self.table.remove(i, frames, &mut cost);
        self.extents.remove(asid, va.0);
        Ok(cost)
    }

    fn protect(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        perms: Perms,
        _frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let mut cost = UpdateCost::NONE;
        let i = self.find(asid, va, size, &mut cost)?;
        self.table.get_mut(i).perms = perms;
        cost.writes += 1;
        Ok(cost)
    }

    fn walk(&self, asid: Asid, va: VirtAddr) -> Walk {
        probe_sizes(&self.sizes, |size, walk| {
            let i = self.table.find(key(asid, va, size), |a| walk.push(a))?;
            let pte = self.table.get(i);
            Some((Pfn(pte.pfn), pte.perms))
        })
    }

    fn footprint_bytes(&self) -> u64 {
        self.table.bytes()
    }

    fn page_sizes(&self) -> &[PageSize] {
        &self.sizes
    }
}

/// The options of [`HashedPageTable`] in `[page_table]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HashedConfig {
    /// Buckets of the hash table (a power of two, 2 to 2^30). Default 65536: one a
    /// page of [`SIZED_FOR_PAGES`], the rule the clustered table is sized by too.
    pub buckets: u64,
    /// What a bucket holds: "pointer" (8 bytes, to the chain's first entry; the
    /// default) or "entry" (the first 32-byte entry in place).
    pub bucket: Bucket,
    /// Page sizes mapped, one hash probe each. Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

/// The base pages the hashing structures are sized for by default, one rule for
/// both so that their bytes compare: 65,536 pages (256 MiB), a bucket each in the
/// hashed table and a bucket per cluster of them in the clustered one. A table
/// holding more still works, on longer chains.
pub const SIZED_FOR_PAGES: u64 = 1 << 16;

impl Default for HashedConfig {
    fn default() -> Self {
        HashedConfig {
            buckets: SIZED_FOR_PAGES,
            bucket: Bucket::default(),
            page_sizes: default_page_sizes(),
        }
    }
}

impl HashedConfig {
    pub fn check(&self) -> Result<(), String> {
        check_power_of_two("buckets", self.buckets, 2, 1 << 30)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

impl TableOptions for HashedConfig {
    type Table = HashedPageTable;
    fn build(&self) -> Result<HashedPageTable, String> {
        self.check()?;
        Ok(HashedPageTable::new(
            self.buckets.trailing_zeros(),
            self.bucket,
            &self.page_sizes,
        ))
    }
    fn preallocated(&self) -> (&'static str, u64) {
        (
            "buckets",
            Chained::<Pte>::bucket_bytes(self.buckets, self.bucket),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::SimpleAllocator;

    #[test]
    fn one_entry_per_page_and_a_probe_per_size() {
        let mut frames = SimpleAllocator::new(1 << 20);
        let mut pt = HashedPageTable::new(10, Bucket::Entry, &[PageSize::M2, PageSize::K4]);
        let (a, va) = (Asid(1), VirtAddr(0x7f00_0020_0000));
        pt.map(a, va, PageSize::M2, Pfn(512), Perms::RW, &mut frames)
            .unwrap();
        assert_eq!(pt.footprint_bytes(), 32 << 10, "1024 buckets of 32 bytes");
        let w = pt.walk(a, VirtAddr(va.0 + 0x1234));
        let t = w.translation.unwrap();
        assert_eq!((t.pfn, t.size), (Pfn(512), PageSize::M2));
        // The 4K probe reads its (empty) bucket first, then the 2M probe finds it.
        assert_eq!(w.refs().len(), 2);
        assert_eq!(
            pt.map(
                a,
                VirtAddr(va.0 + 0x1000),
                PageSize::K4,
                Pfn(9),
                Perms::RW,
                &mut frames
            ),
            Err(MapError::Overlap)
        );
        assert!(pt.walk(Asid(2), va).translation.is_none());
        pt.protect(a, va, PageSize::M2, Perms::NONE, &mut frames)
            .unwrap();
        assert_eq!(pt.walk(a, va).translation.unwrap().perms, Perms::NONE);
        assert_eq!(
            pt.unmap(a, va, PageSize::K4, &mut frames),
            Err(MapError::NotMapped)
        );
        pt.unmap(a, va, PageSize::M2, &mut frames).unwrap();
        assert!(pt.walk(a, va).translation.is_none());
        assert_eq!(
            pt.map(a, va, PageSize::G1, Pfn(0), Perms::RW, &mut frames),
            Err(MapError::UnsupportedSize(PageSize::G1))
        );
    }

    #[test]
    fn collisions_chain() {
        let mut frames = SimpleAllocator::new(1 << 20);
        // Two buckets for 64 pages: long chains, every page still found.
        let mut pt = HashedPageTable::new(1, Bucket::Entry, &[PageSize::K4]);
        for p in 0..64u64 {
            pt.map(
                Asid(0),
                VirtAddr(p << 12),
                PageSize::K4,
                Pfn(p + 100),
                Perms::RW,
                &mut frames,
            )
            .unwrap();
        }
        let longest = (0..64u64)
            .map(|p| {
                let w = pt.walk(Asid(0), VirtAddr(p << 12));
                assert_eq!(w.translation.unwrap().pfn, Pfn(p + 100));
                w.refs().len()
            })
            .max()
            .unwrap();
        assert!(longest >= 32, "64 records in 2 chains: one has ≥ 32");
        for p in 0..64u64 {
            pt.unmap(Asid(0), VirtAddr(p << 12), PageSize::K4, &mut frames)
                .unwrap();
        }
        assert_eq!(pt.footprint_bytes(), 4096, "the overflow records went back");
    }

    #[test]
    fn a_chain_longer_than_a_walk_records_is_counted() {
        let mut frames = SimpleAllocator::new(1 << 20);
        // Two buckets for 300 records: a lookup of an absent page reads a whole chain.
        let mut pt = HashedPageTable::new(1, Bucket::Entry, &[PageSize::K4]);
        for p in 0..300u64 {
            let va = VirtAddr(p << 12);
            pt.map(Asid(0), va, PageSize::K4, Pfn(p), Perms::RW, &mut frames)
                .unwrap();
        }
        let w = pt.walk(Asid(0), VirtAddr(1000 << 12));
        assert!(w.translation.is_none());
        assert_eq!(w.refs().len(), crate::pagetable::MAX_WALK_REFS);
        assert!(w.refs().len() + w.dropped() > 64, "{} dropped", w.dropped());
    }
}
