//! The clustered page table of Talluri, Hill and Khalidi (SOSP'95), as Szmajda and
//! Heiser's "Variable Radix Page Table" (ACSAC 2003) §2.2 describes it: a hashed page table whose
//! entries each hold the PTEs of `factor` adjacent pages (the subblock factor),
//! hashing on the sparse high bits of the page number and indexing an array with
//! its dense low bits. One tag serves a whole cluster.
//!
//! A cluster entry is an 8-byte tag, an 8-byte chain pointer and `factor` 8-byte
//! PTEs (144 bytes for the paper's factor 16). By default a bucket is a pointer to
//! its chain of clusters (`bucket = "pointer"`, as the hashed table); `bucket =
//! "entry"` holds the first cluster in place (hashing.rs). A lookup reads the
//! pointer, the tag of each cluster on the chain, then the PTE.
//!
//! Mixed page sizes: a cluster holds pages of one size (`factor` adjacent pages of
//! that size), tagged with it; a lookup probes each size, smallest first.
//! Simplifications: the paper's partial-subblock and superpage PTE formats are not
//! modelled; overlaps between sizes are found in the OS's region list ([`Extents`]).

use super::hashed::SIZED_FOR_PAGES;
use super::hashing::{probe_sizes, Bucket, Chained, Extents, Key};
use super::options::*;
use super::{page_last, sorted_sizes, MapError, PageTable, Perms, UpdateCost, Walk};
use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::frames::FrameAllocator;

const VALID: u64 = 1;
const PERM_SHIFT: u32 = 1;
const PFN_SHIFT: u32 = 8;
/// Tag and chain pointer before the PTEs.
const HEADER_BYTES: u64 = 16;

pub struct ClusteredPageTable {
    /// The PTEs of each cluster.
    table: Chained<Vec<u64>>,
    factor_shift: u32,
    extents: Extents,
    sizes: Vec<PageSize>,
}

impl ClusteredPageTable {
    /// `1 << bucket_bits` buckets (1..=30) of clusters of `1 << factor_shift` PTEs,
    /// mapping pages of `sizes`.
    pub fn new(
        bucket_bits: u32,
        factor_shift: u32,
        bucket: Bucket,
        sizes: &[PageSize],
    ) -> ClusteredPageTable {
        ClusteredPageTable {
            table: Chained::new(bucket_bits, HEADER_BYTES + (8 << factor_shift), bucket),
            factor_shift,
            extents: Extents::default(),
            sizes: sorted_sizes(sizes),
        }
    }

    /// The cluster key of a page and its slot in the cluster.
    fn key(&self, asid: Asid, va: VirtAddr, size: PageSize) -> (Key, usize) {
        let vpn = va.vpn(size).0;
        let key = Key {
            asid,
            shift: size.shift() as u8,
            tag: vpn >> self.factor_shift,
        };
        (key, (vpn & ((1 << self.factor_shift) - 1)) as usize)
    }

    fn pte_addr(&self, cluster: u32, slot: usize) -> PhysAddr {
        PhysAddr(self.table.addr(cluster).0 + HEADER_BYTES + 8 * slot as u64)
    }

    /// The cluster and slot of the page of `size` mapped at `va`.
    fn find(
        &self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        cost: &mut UpdateCost,
    ) -> Result<(u32, usize), MapError> {
        page_last(&self.sizes, va, size)?;
        let (key, slot) = self.key(asid, va, size);
        let c = self
            .table
            .find(key, |_| cost.reads += 1)
            .ok_or(MapError::NotMapped)?;
        cost.reads += 1;
        if self.table.get(c)[slot] & VALID == 0 {
            return Err(MapError::NotMapped);
        }
        Ok((c, slot))
    }
}

impl PageTable for ClusteredPageTable {
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
        let (key, slot) = self.key(asid, va, size);
        let pte = pfn.0 << PFN_SHIFT | (perms.0 as u64) << PERM_SHIFT | VALID;
        match self.table.find(key, |_| cost.reads += 1) {
            Some(c) => self.table.get_mut(c)[slot] = pte,
            None => {
                let mut ptes = vec![0; 1 << self.factor_shift];
                ptes[slot] = pte;
                self.table.insert(key, ptes, frames, &mut cost)?;
            }
        }
        cost.writes += 1;
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
        let (c, slot) = self.find(asid, va, size, &mut cost)?;
        let ptes = self.table.get_mut(c);
        ptes[slot] = 0;
        cost.writes += 1;
        if ptes.iter().all(|&p| p & VALID == 0) {
            cost.reads += ptes.len() as u64;
            self.table.remove(c, frames, &mut cost);
        }
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
        let (c, slot) = self.find(asid, va, size, &mut cost)?;
        let pte = &mut self.table.get_mut(c)[slot];
        *pte = *pte & !(7 << PERM_SHIFT) | (perms.0 as u64 & 7) << PERM_SHIFT;
        cost.writes += 1;
        Ok(cost)
    }

    fn walk(&self, asid: Asid, va: VirtAddr) -> Walk {
        probe_sizes(&self.sizes, |size, walk| {
            let (key, slot) = self.key(asid, va, size);
            let c = self.table.find(key, |a| walk.push(a))?;
            walk.push(self.pte_addr(c, slot));
            let pte = self.table.get(c)[slot];
            (pte & VALID != 0)
                .then(|| (Pfn(pte >> PFN_SHIFT), Perms((pte >> PERM_SHIFT) as u8 & 7)))
        })
    }

    fn footprint_bytes(&self) -> u64 {
        self.table.bytes()
    }

    fn page_sizes(&self) -> &[PageSize] {
        &self.sizes
    }
}

/// The options of [`ClusteredPageTable`] in `[page_table]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusteredConfig {
    /// Buckets of the hash table (a power of two, 2 to 2^30). Default 4096: one a
    /// cluster of the [`SIZED_FOR_PAGES`] the hashed table is sized for too.
    pub buckets: u64,
    /// What a bucket holds: "pointer" (8 bytes, to the chain's first cluster; the
    /// default) or "entry" (the first cluster in place).
    pub bucket: Bucket,
    /// PTEs per cluster (a power of two, 1 to 512). Default 16, as in the paper.
    pub subblock_factor: u64,
    /// Page sizes mapped, one hash probe each. Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for ClusteredConfig {
    fn default() -> Self {
        ClusteredConfig {
            buckets: SIZED_FOR_PAGES / 16,
            bucket: Bucket::default(),
            subblock_factor: 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl ClusteredConfig {
    pub fn check(&self) -> Result<(), String> {
        check_power_of_two("buckets", self.buckets, 2, 1 << 30)?;
        check_power_of_two("subblock_factor", self.subblock_factor, 1, 512)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

impl TableOptions for ClusteredConfig {
    type Table = ClusteredPageTable;
    fn build(&self) -> Result<ClusteredPageTable, String> {
        self.check()?;
        let (b, f) = (
            self.buckets.trailing_zeros(),
            self.subblock_factor.trailing_zeros(),
        );
        Ok(ClusteredPageTable::new(b, f, self.bucket, &self.page_sizes))
    }
    fn preallocated(&self) -> (&'static str, u64) {
        (
            "buckets",
            Chained::<Vec<u64>>::bucket_bytes(self.buckets, self.bucket),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::SimpleAllocator;

    #[test]
    fn adjacent_pages_share_a_cluster() {
        let mut frames = SimpleAllocator::new(1 << 20);
        let mut pt = ClusteredPageTable::new(4, 4, Bucket::Entry, &[PageSize::K4, PageSize::M2]);
        let a = Asid(0);
        for p in 0..16u64 {
            let va = VirtAddr(0x40_0000 + (p << 12));
            pt.map(a, va, PageSize::K4, Pfn(p + 1), Perms::RW, &mut frames)
                .unwrap();
        }
        // 16 buckets of 16 + 128 bytes: one frame, and no overflow cluster.
        assert_eq!(pt.footprint_bytes(), 4096);
        let w = pt.walk(a, VirtAddr(0x40_5678));
        assert_eq!(w.translation.unwrap().pfn, Pfn(6));
        assert_eq!(w.refs().len(), 2, "the tag, then the PTE");
        assert_eq!(w.refs()[1].0 - w.refs()[0].0, 16 + 8 * 5);
        // A 2M page lives in a cluster of its own size; the 4K probe comes first.
        pt.map(
            a,
            VirtAddr(0x80_0000),
            PageSize::M2,
            Pfn(1024),
            Perms::RW,
            &mut frames,
        )
        .unwrap();
        let w = pt.walk(a, VirtAddr(0x81_0000));
        assert_eq!(w.translation.unwrap().size, PageSize::M2);
        assert!(w.refs().len() >= 3);
        for p in 0..16u64 {
            pt.unmap(
                a,
                VirtAddr(0x40_0000 + (p << 12)),
                PageSize::K4,
                &mut frames,
            )
            .unwrap();
        }
        assert!(pt.walk(a, VirtAddr(0x40_5678)).translation.is_none());
        assert_eq!(
            pt.protect(a, VirtAddr(0x40_0000), PageSize::K4, Perms::RW, &mut frames),
            Err(MapError::NotMapped)
        );
    }
}
