//! The inverted page table with a hash anchor table, as Szmajda and Heiser, "Variable
//! Radix Page Table", ACSAC 2003, §2.2 describe it: one table for all address
//! spaces with one entry per physical frame, indexed by frame number and tagged
//! with the (address space, page) mapped to the frame; a hash anchor table (HAT)
//! leads from a hashed (address space, page) to the first entry of a chain linked
//! through the entries. A lookup reads the HAT entry, then each entry on the chain.
//!
//! Layout: 16-byte entries (8-byte tag, 4-byte chain index, 4 bytes of size and
//! rights) for every frame of `memory_frames`, and 4-byte HAT entries; both arrays
//! are allocated in one block each at the first map, so the table's size follows
//! physical memory, not what is mapped. Clearing them is a boot-time cost, not the
//! first map's: no update is charged for it (it would make the mean cost of a map
//! meaningless on any short trace).
//!
//! Mixed page sizes: a page takes the entry of its first frame, tagged with its size;
//! a lookup probes the HAT once per size, smallest first. Sharing: a frame has one
//! entry, so a second mapping of a frame (a shared segment in a second address space,
//! an alias) takes an alias entry, which holds its frame number, from an overflow
//! area of 256-entry blocks allocated as needed and freed when empty — the paper's
//! "sharing a frame between multiple address spaces is hard".
//! Simplification: overlaps between pages of different sizes are found in the OS's
//! region list ([`Extents`]).

use super::hashing::{probe_sizes, Extents, Key};
use super::mem::{shift_for, NodeMem};
use super::options::*;
use super::{page_last, sorted_sizes, MapError, PageTable, Perms, UpdateCost, Walk};
use crate::addr::{format_bytes, ByteSize};
use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::frames::FrameAllocator;
use std::collections::HashMap;

const ENTRY_BYTES: u64 = 16;
const HAT_ENTRY_BYTES: u64 = 4;
const ALIAS_BLOCK: u64 = 256;
const NIL: u64 = u64::MAX;

#[derive(Clone, Copy)]
struct Entry {
    key: Key,
    /// The frame (an alias entry's own; a frame's entry holds its index).
    pfn: u64,
    perms: Perms,
    next: u64,
}

pub struct InvertedPageTable {
    frames_covered: u64,
    hat_bits: u32,
    /// Occupied HAT entries: bucket → first entry (the rest hold no chain).
    hat: HashMap<usize, u64>,
    /// Occupied entries by index: below `frames_covered` a frame's own, above it an
    /// alias entry.
    entries: HashMap<u64, Entry>,
    free_aliases: Vec<u64>,
    /// Blocks of alias entries and their entries in use.
    alias_blocks: Vec<Option<(PhysAddr, u32)>>,
    /// The IPT and the HAT, once allocated.
    arrays: Option<(PhysAddr, PhysAddr)>,
    mem: NodeMem,
    extents: Extents,
    sizes: Vec<PageSize>,
}

impl InvertedPageTable {
    /// A table for `frames_covered` frames of physical memory with a HAT of
    /// `1 << hat_bits` entries (1..=32), mapping pages of `sizes`.
    pub fn new(frames_covered: u64, hat_bits: u32, sizes: &[PageSize]) -> InvertedPageTable {
        InvertedPageTable {
            frames_covered,
            hat_bits,
            hat: HashMap::new(),
            entries: HashMap::new(),
            free_aliases: Vec::new(),
            alias_blocks: Vec::new(),
            arrays: None,
            mem: NodeMem::default(),
            extents: Extents::default(),
            sizes: sorted_sizes(sizes),
        }
    }

    fn entry_addr(&self, i: u64) -> PhysAddr {
        let (ipt, _) = self.arrays.expect("entries exist only once the arrays do");
        match i.checked_sub(self.frames_covered) {
            None => PhysAddr(ipt.0 + i * ENTRY_BYTES),
            Some(a) => PhysAddr(
                self.alias_blocks[(a / ALIAS_BLOCK) as usize]
                    .expect("a live alias block")
                    .0
                     .0
                    + a % ALIAS_BLOCK * ENTRY_BYTES,
            ),
        }
    }

    /// The entry tagged `key` and the one before it on its chain, calling `read` with
    /// the address of every HAT entry and entry read.
    fn find(&self, key: Key, mut read: impl FnMut(PhysAddr)) -> Option<(u64, Option<u64>)> {
        let (_, hat) = self.arrays?;
        let b = key.bucket(self.hat_bits);
        read(PhysAddr(hat.0 + b as u64 * HAT_ENTRY_BYTES));
        let (mut i, mut before) = (*self.hat.get(&b)?, None);
        loop {
            read(self.entry_addr(i));
            let e = &self.entries[&i];
            if e.key == key {
                return Some((i, before));
            }
            if e.next == NIL {
                return None;
            }
            (before, i) = (Some(i), e.next);
        }
    }

    fn key(asid: Asid, va: VirtAddr, size: PageSize) -> Key {
        Key {
            asid,
            shift: size.shift() as u8,
            tag: va.vpn(size).0,
        }
    }

    /// Allocate the IPT and HAT arrays at the first map (cleared at boot: not charged).
    fn arrays(&mut self, frames: &mut dyn FrameAllocator) -> Result<(), MapError> {
        if self.arrays.is_some() {
            return Ok(());
        }
        let ipt_bytes = self.frames_covered * ENTRY_BYTES;
        let hat_bytes = (1u64 << self.hat_bits) * HAT_ENTRY_BYTES;
        let ipt = self.mem.alloc(shift_for(ipt_bytes), frames)?;
        let hat = match self.mem.alloc(shift_for(hat_bytes), frames) {
            Ok(hat) => hat,
            Err(e) => {
                self.mem.free(ipt, shift_for(ipt_bytes), frames);
                return Err(e);
            }
        };
        self.arrays = Some((ipt, hat));
        Ok(())
    }

    /// A free entry for `pfn`: the frame's own, else an alias entry.
    fn free_entry(&mut self, pfn: u64, frames: &mut dyn FrameAllocator) -> Result<u64, MapError> {
        if !self.entries.contains_key(&pfn) {
            return Ok(pfn);
        }
        if self.free_aliases.is_empty() {
            let addr = self
                .mem
                .alloc(shift_for(ALIAS_BLOCK * ENTRY_BYTES), frames)?;
            let b = match self.alias_blocks.iter().position(Option::is_none) {
                Some(b) => b,
                None => {
                    self.alias_blocks.push(None);
                    self.alias_blocks.len() - 1
                }
            };
            self.alias_blocks[b] = Some((addr, 0));
            let first = self.frames_covered + b as u64 * ALIAS_BLOCK;
            self.free_aliases.extend((first..first + ALIAS_BLOCK).rev());
        }
        let i = self.free_aliases.pop().expect("a block was just added");
        self.alias_block(i).1 += 1;
        Ok(i)
    }

    fn alias_block(&mut self, i: u64) -> &mut (PhysAddr, u32) {
        let b = (i - self.frames_covered) / ALIAS_BLOCK;
        self.alias_blocks[b as usize]
            .as_mut()
            .expect("a live alias block")
    }

    /// Give back alias entry `i`, and its block once the block is unused.
    fn free_alias(&mut self, i: u64, frames: &mut dyn FrameAllocator) {
        self.free_aliases.push(i);
        let block = self.alias_block(i);
        block.1 -= 1;
        if block.1 == 0 {
            let addr = block.0;
            let b = (i - self.frames_covered) / ALIAS_BLOCK;
            self.alias_blocks[b as usize] = None;
            self.mem
                .free(addr, shift_for(ALIAS_BLOCK * ENTRY_BYTES), frames);
            let first = self.frames_covered + b * ALIAS_BLOCK;
            self.free_aliases
                .retain(|&a| !(first..first + ALIAS_BLOCK).contains(&a));
        }
    }

    fn find_page(
        &self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        cost: &mut UpdateCost,
    ) -> Result<(u64, Option<u64>), MapError> {
        page_last(&self.sizes, va, size)?;
        self.find(Self::key(asid, va, size), |_| cost.reads += 1)
            .ok_or(MapError::NotMapped)
    }
}

impl PageTable for InvertedPageTable {
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
        if pfn
            .0
            .checked_add(size.base_frames())
            .map_or(true, |end| end > self.frames_covered)
        {
            return Err(MapError::NoSuchFrame(self.frames_covered));
        }
        if self.extents.overlaps(asid, va.0, last) {
            return Err(MapError::Overlap);
        }
        let mut cost = UpdateCost::NONE;
        self.arrays(frames)?;
        let i = self.free_entry(pfn.0, frames)?;
        let key = Self::key(asid, va, size);
        let b = key.bucket(self.hat_bits);
        let next = self.hat.insert(b, i).unwrap_or(NIL);
        self.entries.insert(
            i,
            Entry {
                key,
                pfn: pfn.0,
                perms,
                next,
            },
        );
        // The HAT entry read and rewritten, the entry written.
        cost.reads += 1;
        cost.writes += 2;
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
        let (i, before) = self.find_page(asid, va, size, &mut cost)?;
        let e = self.entries.remove(&i).expect("found");
        match before {
            Some(p) => self.entries.get_mut(&p).expect("on the chain").next = e.next,
            None if e.next == NIL => drop(self.hat.remove(&e.key.bucket(self.hat_bits))),
            None => drop(self.hat.insert(e.key.bucket(self.hat_bits), e.next)),
        }
        if i >= self.frames_covered {
            self.free_alias(i, frames);
        }
        // The link before it and the entry itself.
        cost.writes += 2;
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
        let (i, _) = self.find_page(asid, va, size, &mut cost)?;
        self.entries.get_mut(&i).expect("found").perms = perms;
        cost.writes += 1;
        Ok(cost)
    }

    fn walk(&self, asid: Asid, va: VirtAddr) -> Walk {
        probe_sizes(&self.sizes, |size, walk| {
            let (i, _) = self.find(Self::key(asid, va, size), |a| walk.push(a))?;
            let e = &self.entries[&i];
            Some((Pfn(e.pfn), e.perms))
        })
    }

    fn footprint_bytes(&self) -> u64 {
        self.mem.bytes()
    }

    fn page_sizes(&self) -> &[PageSize] {
        &self.sizes
    }
}

/// The options of [`InvertedPageTable`] in `[page_table]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InvertedConfig {
    /// Physical memory the table has an entry per frame of; frames beyond it cannot
    /// be mapped, so it should be `frames.memory`. Default 64 GiB.
    pub memory: ByteSize,
    /// Hash anchor table entries (a power of two, 2 to 2^32). Default: the number of
    /// frames, rounded up to a power of two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hat_entries: Option<u64>,
    /// Page sizes mapped, one hash probe each. Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for InvertedConfig {
    fn default() -> Self {
        InvertedConfig {
            memory: ByteSize(64 << 30),
            hat_entries: None,
            page_sizes: default_page_sizes(),
        }
    }
}

impl InvertedConfig {
    /// Frames covered.
    pub fn frames(&self) -> u64 {
        self.memory.0 >> crate::addr::BASE_SHIFT
    }
    /// HAT entries.
    pub fn hat(&self) -> u64 {
        self.hat_entries
            .unwrap_or_else(|| self.frames().max(2).next_power_of_two())
    }
    pub fn check(&self) -> Result<(), String> {
        let frames = self.frames();
        if frames == 0 || frames > 1 << 36 || self.memory.0 % 4096 != 0 {
            return Err(format!(
                "page_table.memory: {} must be a whole number of 4K frames, at most 256T",
                format_bytes(self.memory.0)
            ));
        }
        check_power_of_two("hat_entries", self.hat(), 2, 1 << 32)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

impl TableOptions for InvertedConfig {
    type Table = InvertedPageTable;
    fn build(&self) -> Result<InvertedPageTable, String> {
        self.check()?;
        let hat = self.hat().trailing_zeros();
        Ok(InvertedPageTable::new(self.frames(), hat, &self.page_sizes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::SimpleAllocator;

    #[test]
    fn hat_then_frame_entries_and_aliases() {
        let mut frames = SimpleAllocator::new(1 << 16);
        // 4096 frames covered: a 64 KiB IPT and a 16 KiB HAT of 4096 anchors.
        let mut pt = InvertedPageTable::new(4096, 12, &[PageSize::K4, PageSize::K64]);
        let va = VirtAddr(0x1234_5000);
        pt.map(Asid(1), va, PageSize::K4, Pfn(77), Perms::RW, &mut frames)
            .unwrap();
        assert_eq!(pt.footprint_bytes(), (64 + 16) << 10);
        let w = pt.walk(Asid(1), VirtAddr(va.0 + 5));
        assert_eq!(w.translation.unwrap().pfn, Pfn(77));
        assert_eq!(w.refs().len(), 2, "the HAT entry, then frame 77's entry");
        let (ipt, _) = pt.arrays.unwrap();
        assert_eq!(w.refs()[1], PhysAddr(ipt.0 + 77 * 16));
        // The same frame in another address space: an alias entry.
        pt.map(
            Asid(2),
            va,
            PageSize::K4,
            Pfn(77),
            Perms(Perms::READ),
            &mut frames,
        )
        .unwrap();
        assert_eq!(pt.footprint_bytes(), (64 + 16 + 4) << 10);
        let t = pt.walk(Asid(2), va).translation.unwrap();
        assert_eq!((t.pfn, t.perms), (Pfn(77), Perms(Perms::READ)));
        pt.unmap(Asid(1), va, PageSize::K4, &mut frames).unwrap();
        assert!(pt.walk(Asid(1), va).translation.is_none());
        assert_eq!(pt.walk(Asid(2), va).translation.unwrap().pfn, Pfn(77));
        pt.unmap(Asid(2), va, PageSize::K4, &mut frames).unwrap();
        assert_eq!(
            pt.footprint_bytes(),
            (64 + 16) << 10,
            "the alias block went back"
        );
        assert_eq!(
            pt.map(Asid(1), va, PageSize::K4, Pfn(4096), Perms::RW, &mut frames),
            Err(MapError::NoSuchFrame(4096))
        );
        assert_eq!(
            pt.map(
                Asid(1),
                VirtAddr(0x10000),
                PageSize::K64,
                Pfn(4088),
                Perms::RW,
                &mut frames
            ),
            Err(MapError::NoSuchFrame(4096)),
            "a 64K page's last frames lie beyond memory"
        );
    }
}
