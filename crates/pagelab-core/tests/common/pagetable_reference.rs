//! The reference the page-table differential tests (pagetables_trees_vs_hashmap.rs,
//! pagetables_hashed_vs_hashmap.rs) hold every structure to: address spaces as plain
//! HashMaps that decide every refusal on their own, the windows addresses are drawn
//! from, and a frame allocator that watches what a table holds and any misuse.

use pagelab_core::addr::{Asid, PageSize, Pfn};
use pagelab_core::frames::{FrameAllocator, SimpleAllocator};
use pagelab_core::pagetable::{MapError, Perms, Segment, Translation};
use std::collections::{HashMap, HashSet};

pub const K4: u64 = 1 << 12;
pub const M2: u64 = 1 << 21;
pub const G1: u64 = 1 << 30;
pub const ALL: [PageSize; 4] = [PageSize::K4, PageSize::K64, PageSize::M2, PageSize::G1];
pub const PERMS: [Perms; 4] = [Perms::RW, Perms::RWX, Perms(Perms::READ), Perms::NONE];
/// Frames an inverted table covers here; every frame drawn lies below.
pub const IPT_FRAMES: u64 = 1 << 20;

/// Bases of the 2 GiB windows addresses are drawn from: dense low memory, the top of
/// each canonical half, non-canonical and sparse 64-bit addresses.
pub const REGIONS: [u64; 12] = [
    0,
    0,
    0,
    0x0000_007f_c000_0000,
    0x0000_7fff_0000_0000,
    0xffff_8000_0000_0000,
    0xffff_ffff_0000_0000,
    0x0000_5555_4000_0000,
    0x0000_8000_0000_0000,
    0xfff0_0000_0000_0000,
    0x1234_5678_0000_0000,
    0x8000_0000_0000_0000,
];

pub fn page_addr(region: u8, g: u8, m: u8, k: u8) -> u64 {
    REGIONS[region as usize % REGIONS.len()]
        + (g as u64 % 2) * G1
        + (m as u64 % 4) * M2
        + (k as u64 % 32) * K4
}

pub type Space = HashMap<u64, (PageSize, Pfn, Perms)>;

/// What every address space maps, and what the structure under test must refuse.
pub struct Reference {
    pub canonical: Option<u32>,
    pub frame_limit: Option<u64>,
    pub sizes: Vec<PageSize>,
    pub spaces: HashMap<Asid, Space>,
    /// Address spaces a map got past the checks in (where a table may keep a root).
    pub touched: HashSet<Asid>,
}

impl Reference {
    pub fn check(&self, va: u64, size: PageSize) -> Result<(), MapError> {
        if !self.sizes.contains(&size) {
            return Err(MapError::UnsupportedSize(size));
        }
        if let Some(bits) = self.canonical {
            let top = va >> (bits - 1);
            if top != 0 && top != u64::MAX >> (bits - 1) {
                return Err(MapError::OutOfRange(bits));
            }
        }
        if va % size.bytes() != 0 {
            return Err(MapError::Misaligned);
        }
        Ok(())
    }

    pub fn map(
        &mut self,
        a: Asid,
        va: u64,
        size: PageSize,
        pfn: Pfn,
        p: Perms,
    ) -> Result<(), MapError> {
        self.check(va, size)?;
        if let Some(limit) = self.frame_limit {
            if pfn.0 + size.base_frames() > limit {
                return Err(MapError::NoSuchFrame(limit));
            }
        }
        self.touched.insert(a);
        let space = self.spaces.entry(a).or_default();
        let (start, end) = (va as u128, va as u128 + size.bytes() as u128);
        if space
            .iter()
            .any(|(&b, &(s, _, _))| (b as u128) < end && start < b as u128 + s.bytes() as u128)
        {
            return Err(MapError::Overlap);
        }
        space.insert(va, (size, pfn, p));
        Ok(())
    }

    pub fn page(
        &mut self,
        a: Asid,
        va: u64,
        size: PageSize,
    ) -> Result<&mut (PageSize, Pfn, Perms), MapError> {
        self.check(va, size)?;
        match self.spaces.entry(a).or_default().get_mut(&va) {
            Some(e) if e.0 == size => Ok(e),
            _ => Err(MapError::NotMapped),
        }
    }

    pub fn unmap(&mut self, a: Asid, va: u64, size: PageSize) -> Result<(), MapError> {
        self.page(a, va, size)?;
        self.spaces.get_mut(&a).unwrap().remove(&va);
        Ok(())
    }

    pub fn protect(&mut self, a: Asid, va: u64, size: PageSize, p: Perms) -> Result<(), MapError> {
        self.page(a, va, size)?.2 = p;
        Ok(())
    }

    /// Every page in `[va, va + bytes)`; none if one lies partly outside.
    pub fn protect_range(
        &mut self,
        a: Asid,
        va: u64,
        bytes: u64,
        p: Perms,
    ) -> Result<(), MapError> {
        let step = self.sizes.iter().min().unwrap().bytes();
        if va % step != 0 || bytes % step != 0 {
            return Err(MapError::Misaligned);
        }
        let (lo, hi) = (va as u128, va as u128 + bytes as u128);
        if bytes == 0 || hi > 1u128 << 64 {
            return Err(MapError::BadSegment);
        }
        let space = self.spaces.entry(a).or_default();
        let meets = |b: u64, s: PageSize| (b as u128) < hi && lo < b as u128 + s.bytes() as u128;
        let inside = |b: u64, s: PageSize| lo <= b as u128 && b as u128 + s.bytes() as u128 <= hi;
        if space.iter().any(|(&b, e)| meets(b, e.0) && !inside(b, e.0)) {
            return Err(MapError::Misaligned);
        }
        for (&b, e) in space.iter_mut() {
            if inside(b, e.0) {
                e.2 = p;
            }
        }
        Ok(())
    }

    /// Every page of the segment in every address space in turn; all or nothing.
    pub fn map_shared(&mut self, asids: &[Asid], seg: &Segment) -> Result<(), MapError> {
        seg.bytes()?;
        let before = self.spaces.clone();
        for &a in asids {
            for i in 0..seg.pages {
                let (va, pfn) = seg.page(i);
                if let Err(e) = self.map(a, va.0, seg.size, pfn, seg.perms) {
                    self.spaces = before;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    pub fn unmap_shared(&mut self, a: Asid, seg: &Segment) -> Result<(), MapError> {
        seg.bytes()?;
        let space = self.spaces.entry(a).or_default();
        let pages: Vec<u64> = (0..seg.pages).map(|i| seg.page(i).0 .0).collect();
        if !pages
            .iter()
            .all(|va| space.get(va).is_some_and(|e| e.0 == seg.size))
        {
            return Err(MapError::NotMapped);
        }
        for va in pages {
            space.remove(&va);
        }
        Ok(())
    }

    pub fn lookup(&self, a: Asid, va: u64) -> Option<Translation> {
        let space = self.spaces.get(&a)?;
        ALL.iter().find_map(|&size| {
            let base = va & !(size.bytes() - 1);
            match space.get(&base) {
                Some(&(s, pfn, perms)) if s == size => Some(Translation { pfn, size, perms }),
                _ => None,
            }
        })
    }

    pub fn pages(&self) -> Vec<(Asid, u64, PageSize)> {
        let mut all: Vec<_> = self
            .spaces
            .iter()
            .flat_map(|(&a, s)| s.iter().map(move |(&v, &(sz, _, _))| (a, v, sz)))
            .collect();
        all.sort();
        all
    }
}

/// The frame allocator, watched: what the table holds, and any misuse. Freed blocks
/// wait in a short quarantine, so that a table using a freed frame is not hidden by
/// getting the same frame back at once.
pub struct Tracking {
    pub inner: SimpleAllocator,
    pub held: HashMap<u64, PageSize>,
    pub quarantine: std::collections::VecDeque<(Pfn, PageSize)>,
    pub misuse: Vec<String>,
}

impl Tracking {
    pub fn new() -> Tracking {
        Tracking {
            inner: SimpleAllocator::new(1 << 26),
            held: HashMap::new(),
            quarantine: Default::default(),
            misuse: Vec::new(),
        }
    }
    pub fn held_bytes(&self) -> u64 {
        self.held.values().map(|s| s.bytes()).sum()
    }
}

impl FrameAllocator for Tracking {
    fn alloc(&mut self, size: PageSize) -> Option<Pfn> {
        let pfn = self.inner.alloc(size)?;
        if self.held.insert(pfn.0, size).is_some() {
            self.misuse
                .push(format!("frame {:#x} handed out twice", pfn.0));
        }
        Some(pfn)
    }
    fn free(&mut self, pfn: Pfn, size: PageSize) {
        if self.held.remove(&pfn.0) != Some(size) {
            self.misuse.push(format!(
                "free of {:#x} ({size:?}) that the table did not hold so",
                pfn.0
            ));
        }
        self.quarantine.push_back((pfn, size));
        if self.quarantine.len() > 3 {
            let (p, s) = self.quarantine.pop_front().unwrap();
            self.inner.free(p, s);
        }
    }
    fn total_frames(&self) -> u64 {
        self.inner.total_frames()
    }
    fn used_frames(&self) -> u64 {
        self.held.values().map(|s| s.base_frames()).sum()
    }
}
