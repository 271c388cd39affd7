//! The virtual linear array page table, Szmajda and Heiser, "Variable Radix Page
//! Table", ACSAC 2003, §2.1: each address space's PTEs form one array indexed by
//! virtual page number, laid out in virtual memory (8-byte PTEs, 512 to a 4 KiB table
//! page; for a 48-bit space the array spans 2^36 PTEs), and only the table pages that
//! hold a valid PTE exist.
//!
//! The table's own pages are mapped by a root structure: an x86-64 4-level radix
//! table (radix.rs) in which table page `n` of an address space is the page at
//! virtual address `n × 4 KiB`. A lookup whose table page is translated at hand reads
//! one PTE; otherwise it takes the nested miss: it walks the root structure first,
//! and those reads count. "At hand" is a small fully associative LRU nested TLB of
//! `nested_tlb` entries inside the structure (0: every lookup takes the nested miss),
//! standing for the TLB entries a real virtual linear array's pages occupy. Updates
//! are not charged nested misses.
//!
//! Mixed page sizes: expanded. A page of `n` base pages writes `n` PTEs, each
//! holding the page's size and first frame (like Alpha's granularity hint), so a
//! lookup returns the whole page. Addresses are 48-bit canonical, as on x86-64.

use super::options::*;
use super::{page_last, sorted_sizes, MapError, PageTable, Perms, RadixPageTable, Translation};
use super::{UpdateCost, Walk};
use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::frames::FrameAllocator;
use std::cell::RefCell;
use std::collections::HashMap;

const VA_BITS: u32 = 48;
const PTES_PER_PAGE: u64 = 512;
const VALID: u64 = 1;
const PERM_SHIFT: u32 = 1;
const SIZE_SHIFT: u32 = 4;
const PFN_SHIFT: u32 = 12;

struct TablePage {
    frame: Pfn,
    ptes: Box<[u64; PTES_PER_PAGE as usize]>,
    used: u32,
}

pub struct LinearPageTable {
    /// Maps each address space's table pages.
    root: RadixPageTable,
    pages: HashMap<(Asid, u64), TablePage>,
    /// Table pages whose translation is at hand, most recent last.
    nested: RefCell<Vec<(Asid, u64)>>,
    nested_entries: usize,
    sizes: Vec<PageSize>,
}

impl LinearPageTable {
    /// Pages of `sizes` (all at least 4K), a nested TLB of `nested_tlb` entries.
    pub fn new(sizes: &[PageSize], nested_tlb: usize) -> LinearPageTable {
        LinearPageTable {
            root: RadixPageTable::new(4),
            pages: HashMap::new(),
            nested: RefCell::new(Vec::with_capacity(nested_tlb)),
            nested_entries: nested_tlb,
            sizes: sorted_sizes(sizes),
        }
    }

    /// The address without its sign extension, if canonical.
    fn canonical(va: VirtAddr) -> Option<u64> {
        let top = va.0 >> (VA_BITS - 1);
        (top == 0 || top == u64::MAX >> (VA_BITS - 1)).then_some(va.0 & ((1 << VA_BITS) - 1))
    }

    /// The first base page number and the number of PTEs of a page.
    /// Refusals in the radix table's order: size, range, alignment.
    fn check(&self, va: VirtAddr, size: PageSize) -> Result<(u64, u64), MapError> {
        if !self.sizes.contains(&size) {
            return Err(MapError::UnsupportedSize(size));
        }
        let va = Self::canonical(va).ok_or(MapError::OutOfRange(VA_BITS))?;
        page_last(&self.sizes, VirtAddr(va), size)?;
        Ok((va >> 12, size.base_frames()))
    }

    fn pte(&self, asid: Asid, vpn: u64) -> u64 {
        self.pages
            .get(&(asid, vpn / PTES_PER_PAGE))
            .map_or(0, |p| p.ptes[(vpn % PTES_PER_PAGE) as usize])
    }

    /// Whether the PTEs of the page at `vpn` hold a page of `size` (the first PTE
    /// does then: a page's PTEs are written and cleared together).
    fn holds(&self, asid: Asid, vpn: u64, size: PageSize) -> Result<(), MapError> {
        let pte = self.pte(asid, vpn);
        if pte & VALID != 0 && (pte >> SIZE_SHIFT) & 63 == size.shift() as u64 {
            Ok(())
        } else {
            Err(MapError::NotMapped)
        }
    }

    /// Rewrite the PTEs `[vpn, vpn + n)` through `f`.
    fn rewrite(&mut self, asid: Asid, vpn: u64, n: u64, f: impl Fn(u64) -> u64) {
        for v in vpn..vpn + n {
            let page = self
                .pages
                .get_mut(&(asid, v / PTES_PER_PAGE))
                .expect("mapped");
            let pte = &mut page.ptes[(v % PTES_PER_PAGE) as usize];
            let new = f(*pte);
            page.used = page.used + (new & VALID) as u32 - (*pte & VALID) as u32;
            *pte = new;
        }
    }

    /// Create the table page `tp`, mapping it in the root structure.
    fn add_page(
        &mut self,
        asid: Asid,
        tp: u64,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let frame = frames.alloc(PageSize::K4).ok_or(MapError::OutOfMemory)?;
        let mut cost = match self.root.map(
            asid,
            VirtAddr(tp << 12),
            PageSize::K4,
            frame,
            Perms::RW,
            frames,
        ) {
            Ok(c) => c,
            Err(e) => {
                frames.free(frame, PageSize::K4);
                return Err(e);
            }
        };
        cost.clear(4096);
        let ptes = Box::new([0; PTES_PER_PAGE as usize]);
        self.pages.insert(
            (asid, tp),
            TablePage {
                frame,
                ptes,
                used: 0,
            },
        );
        Ok(cost)
    }

    /// Free the table pages of `[first, last]` that hold no valid PTE.
    fn drop_empty(
        &mut self,
        asid: Asid,
        first: u64,
        last: u64,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) {
        for tp in first..=last {
            if self.pages.get(&(asid, tp)).is_some_and(|p| p.used == 0) {
                let page = self.pages.remove(&(asid, tp)).expect("present");
                *cost += self
                    .root
                    .unmap(asid, VirtAddr(tp << 12), PageSize::K4, frames)
                    .expect("every table page is mapped in the root");
                frames.free(page.frame, PageSize::K4);
                self.nested.borrow_mut().retain(|&e| e != (asid, tp));
            }
        }
    }
}

impl PageTable for LinearPageTable {
    fn map(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        pfn: Pfn,
        perms: Perms,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let (vpn, n) = self.check(va, size)?;
        let mut cost = UpdateCost::NONE;
        cost.reads += n;
        if (vpn..vpn + n).any(|v| self.pte(asid, v) & VALID != 0) {
            return Err(MapError::Overlap);
        }
        let (first, last) = (vpn / PTES_PER_PAGE, (vpn + n - 1) / PTES_PER_PAGE);
        for tp in first..=last {
            if !self.pages.contains_key(&(asid, tp)) {
                match self.add_page(asid, tp, frames) {
                    Ok(c) => cost += c,
                    Err(e) => {
                        self.drop_empty(asid, first, last, frames, &mut cost);
                        return Err(e);
                    }
                }
            }
        }
        let pte = pfn.0 << PFN_SHIFT
            | (size.shift() as u64) << SIZE_SHIFT
            | (perms.0 as u64 & 7) << PERM_SHIFT
            | VALID;
        self.rewrite(asid, vpn, n, |_| pte);
        cost.writes += n;
        Ok(cost)
    }

    fn unmap(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let (vpn, n) = self.check(va, size)?;
        self.holds(asid, vpn, size)?;
        self.rewrite(asid, vpn, n, |_| 0);
        let mut cost = UpdateCost {
            reads: 1,
            writes: n,
        };
        let (first, last) = (vpn / PTES_PER_PAGE, (vpn + n - 1) / PTES_PER_PAGE);
        self.drop_empty(asid, first, last, frames, &mut cost);
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
        let (vpn, n) = self.check(va, size)?;
        self.holds(asid, vpn, size)?;
        let bits = (perms.0 as u64 & 7) << PERM_SHIFT;
        self.rewrite(asid, vpn, n, |pte| pte & !(7 << PERM_SHIFT) | bits);
        Ok(UpdateCost {
            reads: n,
            writes: n,
        })
    }

    fn walk(&self, asid: Asid, va: VirtAddr) -> Walk {
        let mut walk = Walk::new();
        let Some(va) = Self::canonical(va) else {
            return walk;
        };
        let (vpn, tp) = (va >> 12, va >> 12 >> 9);
        let mut nested = self.nested.borrow_mut();
        match nested.iter().position(|&e| e == (asid, tp)) {
            Some(i) => {
                let e = nested.remove(i);
                nested.push(e);
            }
            None => {
                let root = self.root.walk(asid, VirtAddr(tp << 12));
                for &r in root.refs() {
                    walk.push(r);
                }
                if root.translation.is_none() {
                    return walk;
                }
                if self.nested_entries > 0 {
                    if nested.len() == self.nested_entries {
                        nested.remove(0);
                    }
                    nested.push((asid, tp));
                }
            }
        }
        let page = &self.pages[&(asid, tp)];
        let i = vpn % PTES_PER_PAGE;
        walk.push(PhysAddr(page.frame.addr().0 + 8 * i));
        let pte = page.ptes[i as usize];
        if pte & VALID != 0 {
            walk.translation = Some(Translation {
                pfn: Pfn(pte >> PFN_SHIFT),
                size: PageSize::from_shift(((pte >> SIZE_SHIFT) & 63) as u32).expect("stored"),
                perms: Perms((pte >> PERM_SHIFT) as u8 & 7),
            });
        }
        walk
    }

    fn footprint_bytes(&self) -> u64 {
        self.root.footprint_bytes() + 4096 * self.pages.len() as u64
    }

    fn page_sizes(&self) -> &[PageSize] {
        &self.sizes
    }
}

/// The options of [`LinearPageTable`] in `[page_table]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinearConfig {
    /// Page sizes mapped, each expanded into 4K PTEs. Default ["4K", "2M"] (up to
    /// "1G", which writes 262144 PTEs).
    pub page_sizes: Vec<PageSize>,
    /// Entries of the nested TLB that holds the translations of the table's own
    /// pages (0: every lookup walks the root table first). Default 16.
    pub nested_tlb: usize,
}

impl Default for LinearConfig {
    fn default() -> Self {
        LinearConfig {
            page_sizes: vec![PageSize::K4, PageSize::M2],
            nested_tlb: 16,
        }
    }
}

impl LinearConfig {
    pub fn check(&self) -> Result<(), String> {
        check_page_sizes(&self.page_sizes, PageSize::G1)?;
        if self.nested_tlb > 4096 {
            return Err(format!(
                "page_table.nested_tlb: {} entries is more than 4096",
                self.nested_tlb
            ));
        }
        Ok(())
    }
}

impl TableOptions for LinearConfig {
    type Table = LinearPageTable;
    fn build(&self) -> Result<LinearPageTable, String> {
        self.check()?;
        Ok(LinearPageTable::new(&self.page_sizes, self.nested_tlb))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::SimpleAllocator;

    #[test]
    fn nested_miss_then_one_reference() {
        let mut frames = SimpleAllocator::new(1 << 20);
        let mut pt = LinearPageTable::new(&[PageSize::K4, PageSize::K64], 2);
        let a = Asid(0);
        let va = VirtAddr(0x7f00_1234_5000);
        pt.map(a, va, PageSize::K4, Pfn(9), Perms::RW, &mut frames)
            .unwrap();
        // A table page and the root's four nodes.
        assert_eq!(pt.footprint_bytes(), 5 * 4096);
        let w = pt.walk(a, va);
        assert_eq!(w.translation.unwrap().pfn, Pfn(9));
        assert_eq!(w.refs().len(), 5, "the root's four levels, then the PTE");
        let w = pt.walk(a, VirtAddr(va.0 + 4096));
        assert_eq!(w.refs().len(), 1, "the table page is at hand");
        assert!(w.translation.is_none());
        // Two other table pages push it out of the 2-entry nested TLB.
        for other in [0x1000, 0x40_0000_0000] {
            pt.map(
                a,
                VirtAddr(other),
                PageSize::K4,
                Pfn(1),
                Perms::RW,
                &mut frames,
            )
            .unwrap();
            assert_eq!(pt.walk(a, VirtAddr(other)).refs().len(), 5);
        }
        assert_eq!(pt.walk(a, va).refs().len(), 5);
        // The PTE is entry (vpn mod 512) of its table page.
        assert_eq!(w.refs()[0].0 % 4096, 8 * (((va.0 + 4096) >> 12) % 512));
    }

    #[test]
    fn superpages_are_expanded() {
        let mut frames = SimpleAllocator::new(1 << 20);
        let mut pt = LinearPageTable::new(&[PageSize::K4, PageSize::K64], 0);
        let a = Asid(3);
        let c = pt
            .map(
                a,
                VirtAddr(0x10_0000),
                PageSize::K64,
                Pfn(64),
                Perms::RW,
                &mut frames,
            )
            .unwrap();
        assert!(c.writes >= 16, "16 PTEs written");
        let t = pt.walk(a, VirtAddr(0x10_f123)).translation.unwrap();
        assert_eq!((t.pfn, t.size), (Pfn(64), PageSize::K64));
        assert_eq!(t.phys(VirtAddr(0x10_f123)).0, (64 << 12) + 0xf123);
        assert_eq!(
            pt.map(
                a,
                VirtAddr(0x10_8000),
                PageSize::K4,
                Pfn(1),
                Perms::RW,
                &mut frames
            ),
            Err(MapError::Overlap)
        );
        assert_eq!(
            pt.unmap(a, VirtAddr(0x10_0000), PageSize::K4, &mut frames),
            Err(MapError::NotMapped)
        );
        pt.protect(
            a,
            VirtAddr(0x10_0000),
            PageSize::K64,
            Perms::NONE,
            &mut frames,
        )
        .unwrap();
        assert_eq!(
            pt.walk(a, VirtAddr(0x10_4000)).translation.unwrap().perms,
            Perms::NONE
        );
        pt.unmap(a, VirtAddr(0x10_0000), PageSize::K64, &mut frames)
            .unwrap();
        assert!(pt.walk(a, VirtAddr(0x10_4000)).translation.is_none());
        assert_eq!(pt.footprint_bytes(), 4096, "only the root's root remains");
        assert_eq!(
            pt.map(
                a,
                VirtAddr(1 << 47),
                PageSize::K4,
                Pfn(1),
                Perms::RW,
                &mut frames
            ),
            Err(MapError::OutOfRange(48))
        );
    }
}
