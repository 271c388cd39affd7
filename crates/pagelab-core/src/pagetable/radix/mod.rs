//! The x86-64 multi-level radix page table (4-level, or 5-level with LA57): 512-entry
//! nodes of 8-byte entries, indexed by 9 bits of the virtual address per level.
//! Superpages are factorized into upper levels as the hardware does: a 2 MiB page is a
//! leaf in a level-2 entry (PDE), a 1 GiB page a leaf in a level-3 entry (PDPTE).
//! Szmajda and Heiser, "Variable Radix Page Table", ACSAC 2003, §2 calls this the
//! "multi-level page table".
//!
//! Each address space has its own root (its CR3). Nodes live in one flat arena; each
//! node has a physical frame from the frame allocator, so a walk reports the physical
//! address of every entry it reads.

use super::options::*;
use super::{MapError, PageTable, Perms, Translation, UpdateCost, Walk, WalkHint};
use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::frames::FrameAllocator;
use std::cell::Cell;

const FANOUT: usize = 512;
const PRESENT: u64 = 1;
const LEAF: u64 = 2;
const PERM_SHIFT: u32 = 2;
/// A leaf entry keeps its frame number from bit 12 up, as x86-64 does.
const TARGET_SHIFT: u32 = 12;
/// An interior entry keeps the child's node index in bits 2..32 and the child's
/// physical frame in bits 32..64, so a walk reads one word per level, like hardware.
const CHILD_SHIFT: u32 = 2;
const CHILD_PFN_SHIFT: u32 = 32;
const NO_ROOT: u32 = u32::MAX;
/// Largest frame number a table node may have (16 TiB of physical memory).
pub const MAX_NODE_PFN: u64 = u32::MAX as u64;

#[inline(always)]
fn interior(node: u32, pfn: Pfn) -> u64 {
    (pfn.0 << CHILD_PFN_SHIFT) | (node as u64) << CHILD_SHIFT | PRESENT
}
#[inline(always)]
fn child_node(e: u64) -> u32 {
    (e >> CHILD_SHIFT) as u32 & 0x3fff_ffff
}
#[inline(always)]
fn child_pfn(e: u64) -> Pfn {
    Pfn(e >> CHILD_PFN_SHIFT)
}

pub struct RadixPageTable {
    levels: u32,
    /// Every node's 512 entries, node `i` at `[i * 512, (i + 1) * 512)`.
    entries: Vec<u64>,
    /// The physical frame of each node.
    node_frames: Vec<Pfn>,
    /// Valid entries per node, to free nodes that empty.
    node_used: Vec<u16>,
    free_nodes: Vec<u32>,
    roots: Vec<u32>,
    sizes: Vec<PageSize>,
    live_nodes: u64,
    /// Counts the changes that may end a path from a root: an entry present cleared
    /// (and with it a node freed for reuse). Mapping into absent entries only adds
    /// paths, so a leaf entry's slot found earlier stays that of the same page while
    /// this is unchanged (see [`WalkHint`]).
    version: u64,
    /// The leaf node (of level-0 entries) of recently prefetched 2 MiB regions, so
    /// that a prefetch in one of them need not read the interior levels again; see
    /// [`LeafMemo`].
    leaf_memo: Vec<Cell<LeafMemo>>,
}

/// Regions [`RadixPageTable::leaf_memo`] keeps (direct-mapped by region).
const LEAF_MEMO: usize = 4096;

/// One entry of [`RadixPageTable::leaf_memo`]: the leaf node of a region, found when
/// the table's version was `version - 1` (0: empty); it holds while the version is
/// unchanged, as no path from a root has ended since.
#[derive(Clone, Copy, Default)]
struct LeafMemo {
    /// The region's address bits above 2 MiB, and the address space in the low 16.
    key: u64,
    version: u64,
    node: u32,
}

/// The size of a leaf at level 0, 1 and 2 (only those levels hold leaves).
const LEAF_SIZES: [PageSize; 3] = [PageSize::K4, PageSize::M2, PageSize::G1];

/// The level (0 = the leaf level of 4K pages) at which a page of `size` is a leaf.
fn leaf_level(size: PageSize) -> Option<u32> {
    match size.shift() {
        12 => Some(0),
        21 => Some(1),
        30 => Some(2),
        _ => None,
    }
}

/// What a walk that ends at entry `e` of `level` (absent, or a leaf) finds.
#[inline(always)]
fn end_of_walk(e: u64, level: u32) -> Option<Translation> {
    (e & PRESENT != 0).then(|| Translation {
        pfn: Pfn(e >> TARGET_SHIFT),
        size: LEAF_SIZES[(level as usize).min(LEAF_SIZES.len() - 1)],
        perms: Perms((e >> PERM_SHIFT) as u8 & 7),
    })
}

#[inline]
fn index(va: VirtAddr, level: u32) -> usize {
    ((va.0 >> (12 + 9 * level)) & (FANOUT as u64 - 1)) as usize
}

impl RadixPageTable {
    /// The walk of `va`: each entry read handed to `read` in order, the translation
    /// returned. [`PageTable::walk_into`] writes the entries down in a [`Walk`]; a
    /// host walk of a two-dimensional one appends them to its own record instead,
    /// with no copy, and takes the translation as returned.
    #[inline(always)]
    pub(crate) fn walk_with(
        &self,
        asid: Asid,
        va: VirtAddr,
        mut read: impl FnMut(PhysAddr),
    ) -> Option<Translation> {
        let node = self.root(asid);
        let va = self.canonical(va)?;
        if node == NO_ROOT {
            return None;
        }
        let mut node = node as usize;
        let mut table = self.node_frames[node].addr().0;
        for level in (0..self.levels).rev() {
            let idx = index(va, level);
            read(PhysAddr(table + idx as u64 * 8));
            let e = self.entries[node * FANOUT + idx];
            // Absent, or a leaf: the walk ends here.
            if e & (PRESENT | LEAF) != PRESENT {
                return end_of_walk(e, level);
            }
            node = child_node(e) as usize;
            table = child_pfn(e).addr().0;
        }
        None
    }

    /// `levels` is 4 (48-bit addresses) or 5 (57-bit).
    pub fn new(levels: u32) -> RadixPageTable {
        assert!(levels == 4 || levels == 5, "radix levels must be 4 or 5");
        RadixPageTable {
            levels,
            entries: Vec::new(),
            node_frames: Vec::new(),
            node_used: Vec::new(),
            free_nodes: Vec::new(),
            roots: Vec::new(),
            sizes: vec![PageSize::K4, PageSize::M2, PageSize::G1],
            live_nodes: 0,
            version: 0,
            leaf_memo: vec![Cell::new(LeafMemo::default()); LEAF_MEMO],
        }
    }

    fn va_bits(&self) -> u32 {
        12 + 9 * self.levels
    }

    fn new_node(&mut self, frames: &mut dyn FrameAllocator) -> Result<u32, MapError> {
        let pfn = frames.alloc(PageSize::K4).ok_or(MapError::OutOfMemory)?;
        if pfn.0 > MAX_NODE_PFN || self.node_frames.len() >= 1 << 30 {
            frames.free(pfn, PageSize::K4);
            return Err(MapError::OutOfMemory);
        }
        self.live_nodes += 1;
        if let Some(node) = self.free_nodes.pop() {
            self.node_frames[node as usize] = pfn;
            return Ok(node);
        }
        let node = self.node_frames.len() as u32;
        if self.entries.len() + FANOUT > self.entries.capacity() {
            // Grow into memory advised before anything is written to it: pages that a
            // reallocation copies into are in place before the advice and stay small.
            let wanted = (2 * self.entries.capacity()).max(self.entries.len() + FANOUT);
            let mut grown = Vec::with_capacity(wanted);
            crate::hugemem::advise(&grown);
            grown.extend_from_slice(&self.entries);
            self.entries = grown;
        }
        self.entries.resize(self.entries.len() + FANOUT, 0);
        self.node_frames.push(pfn);
        self.node_used.push(0);
        Ok(node)
    }

    fn root(&self, asid: Asid) -> u32 {
        self.roots.get(asid.0 as usize).copied().unwrap_or(NO_ROOT)
    }

    #[inline]
    fn slot(node: u32, idx: usize) -> usize {
        node as usize * FANOUT + idx
    }

    /// The address within the table's `va_bits`-bit space: canonical addresses
    /// (bits above the top index bit all equal to it) lose their sign extension.
    #[inline]
    fn canonical(&self, va: VirtAddr) -> Option<VirtAddr> {
        let bits = self.va_bits();
        let top = va.0 >> (bits - 1);
        if top == 0 || top == u64::MAX >> (bits - 1) {
            Some(VirtAddr(va.0 & ((1u64 << bits) - 1)))
        } else {
            None
        }
    }

    /// `va` within a table of `L` levels, as [`RadixPageTable::canonical`].
    #[inline(always)]
    fn canonical_in<const L: u32>(va: VirtAddr) -> Option<u64> {
        let bits = 12 + 9 * L;
        let top = va.0 >> (bits - 1);
        (top == 0 || top == u64::MAX >> (bits - 1)).then_some(va.0 & ((1u64 << bits) - 1))
    }

    /// The walk in brief ([`PageTable::walk_brief`]) in a table of `L` levels: a
    /// loop of known length, with constant shifts.
    #[inline(always)]
    fn brief<const L: u32>(
        &self,
        asid: Asid,
        va: VirtAddr,
        hint: WalkHint,
    ) -> (usize, Option<Translation>) {
        // A walk that reaches level 0 reads one entry per level, the last at the
        // hint's slot, as long as no path has ended since the hint was found.
        if hint.at != 0 && hint.version == self.version {
            return (
                L as usize,
                end_of_walk(self.entries[hint.at as usize - 1], 0),
            );
        }
        let root = self.root(asid);
        let Some(va) = Self::canonical_in::<L>(va) else {
            return (0, None);
        };
        if root == NO_ROOT {
            return (0, None);
        }
        let mut node = root as usize;
        for (read, level) in (0..L).rev().enumerate() {
            let e = self.entries[node * FANOUT + ((va >> (12 + 9 * level)) & 511) as usize];
            if e & (PRESENT | LEAF) != PRESENT {
                return (read + 1, end_of_walk(e, level));
            }
            node = child_node(e) as usize;
        }
        (L as usize, None)
    }

    /// [`PageTable::prefetch`] in a table of `L` levels: the hint is the slot of the
    /// level-0 entry the walk will end at, if it reaches level 0.
    #[inline(always)]
    fn prefetch_in<const L: u32>(&self, asid: Asid, va: VirtAddr) -> WalkHint {
        let mut node = self.root(asid);
        let Some(va) = Self::canonical_in::<L>(va) else {
            return WalkHint::NONE;
        };
        if node == NO_ROOT {
            return WalkHint::NONE;
        }
        let key = (va >> 21) << 16 | asid.0 as u64;
        let memo = &self.leaf_memo[(va >> 21) as usize % LEAF_MEMO];
        let known = memo.get();
        if known.key == key && known.version == self.version + 1 {
            node = known.node;
        } else {
            for level in (1..L).rev() {
                let e = self.entries[Self::slot(node, ((va >> (12 + 9 * level)) & 511) as usize)];
                if e & (PRESENT | LEAF) != PRESENT {
                    return WalkHint::NONE;
                }
                node = child_node(e);
            }
            memo.set(LeafMemo {
                key,
                version: self.version + 1,
                node,
            });
        }
        let slot = Self::slot(node, (va >> 12) as usize & 511);
        crate::hugemem::prefetch(&self.entries[slot]);
        WalkHint {
            at: slot as u64 + 1,
            version: self.version,
        }
    }

    /// The leaf entry of the page at `va` whose leaf is at level `leaf`: its node, the
    /// number of interior levels read above it (their nodes and indexes in `path`)
    /// and its slot.
    fn find_leaf(
        &self,
        asid: Asid,
        va: VirtAddr,
        leaf: u32,
        path: &mut [(u32, usize); 5],
    ) -> Result<(u32, usize, usize), MapError> {
        let mut node = self.root(asid);
        if node == NO_ROOT {
            return Err(MapError::NotMapped);
        }
        let mut depth = 0;
        for level in (leaf + 1..self.levels).rev() {
            let idx = index(va, level);
            let e = self.entries[Self::slot(node, idx)];
            if e & PRESENT == 0 || e & LEAF != 0 {
                return Err(MapError::NotMapped);
            }
            path[depth] = (node, idx);
            depth += 1;
            node = child_node(e);
        }
        let slot = Self::slot(node, index(va, leaf));
        if self.entries[slot] & (PRESENT | LEAF) != PRESENT | LEAF {
            return Err(MapError::NotMapped);
        }
        Ok((node, depth, slot))
    }

    fn check(&self, va: VirtAddr, size: PageSize) -> Result<(VirtAddr, u32), MapError> {
        let level = leaf_level(size).ok_or(MapError::UnsupportedSize(size))?;
        let va = self
            .canonical(va)
            .ok_or(MapError::OutOfRange(self.va_bits()))?;
        if va.offset_in(size) != 0 {
            return Err(MapError::Misaligned);
        }
        Ok((va, level))
    }
}

impl PageTable for RadixPageTable {
    fn map(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        pfn: Pfn,
        perms: Perms,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let (va, leaf) = self.check(va, size)?;
        let mut cost = UpdateCost::NONE;
        if self.root(asid) == NO_ROOT {
            cost.clear(FANOUT as u64 * 8);
            let node = self.new_node(frames)?;
            if self.roots.len() <= asid.0 as usize {
                self.roots.resize(asid.0 as usize + 1, NO_ROOT);
            }
            self.roots[asid.0 as usize] = node;
        }
        let mut node = self.root(asid);
        // Nodes made by this call, to take back if a later one cannot be made.
        let mut made = [(0usize, 0u32); 5];
        let mut n_made = 0;
        for level in (leaf + 1..self.levels).rev() {
            let slot = Self::slot(node, index(va, level));
            let e = self.entries[slot];
            cost.reads += 1;
            if e & PRESENT == 0 {
                let child = match self.new_node(frames) {
                    Ok(child) => child,
                    Err(e) => {
                        self.version += 1;
                        for &(slot, child) in made[..n_made].iter().rev() {
                            self.entries[slot] = 0;
                            self.node_used[slot / FANOUT] -= 1;
                            frames.free(self.node_frames[child as usize], PageSize::K4);
                            self.free_nodes.push(child);
                            self.live_nodes -= 1;
                        }
                        return Err(e);
                    }
                };
                made[n_made] = (slot, child);
                n_made += 1;
                cost.clear(FANOUT as u64 * 8);
                cost.writes += 1;
                self.entries[slot] = interior(child, self.node_frames[child as usize]);
                self.node_used[node as usize] += 1;
                node = child;
            } else if e & LEAF != 0 {
                return Err(MapError::Overlap);
            } else {
                node = child_node(e);
            }
        }
        let slot = Self::slot(node, index(va, leaf));
        if self.entries[slot] & PRESENT != 0 {
            return Err(MapError::Overlap);
        }
        self.entries[slot] =
            pfn.0 << TARGET_SHIFT | (perms.0 as u64) << PERM_SHIFT | LEAF | PRESENT;
        self.node_used[node as usize] += 1;
        cost.reads += 1;
        cost.writes += 1;
        Ok(cost)
    }

    fn unmap(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let (va, leaf) = self.check(va, size)?;
        // The path from the root, to free nodes that become empty.
        let mut path = [(0u32, 0usize); 5];
        let (mut node, mut depth, slot) = self.find_leaf(asid, va, leaf, &mut path)?;
        let mut cost = UpdateCost {
            reads: depth as u64 + 1,
            writes: 1,
        };
        self.version += 1;
        self.entries[slot] = 0;
        self.node_used[node as usize] -= 1;
        // Free emptied nodes bottom-up; the root stays.
        while depth > 0 && self.node_used[node as usize] == 0 {
            depth -= 1;
            let (parent, idx) = path[depth];
            frames.free(self.node_frames[node as usize], PageSize::K4);
            self.free_nodes.push(node);
            self.live_nodes -= 1;
            self.entries[Self::slot(parent, idx)] = 0;
            self.node_used[parent as usize] -= 1;
            cost.writes += 1;
            node = parent;
        }
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
        let (va, leaf) = self.check(va, size)?;
        let (_, depth, slot) = self.find_leaf(asid, va, leaf, &mut [(0, 0); 5])?;
        let e = &mut self.entries[slot];
        *e = *e & !(7 << PERM_SHIFT) | (perms.0 as u64 & 7) << PERM_SHIFT;
        Ok(UpdateCost {
            reads: depth as u64 + 1,
            writes: 1,
        })
    }

    fn walk(&self, asid: Asid, va: VirtAddr) -> Walk {
        let mut walk = Walk::new();
        self.walk_into(asid, va, &mut walk);
        walk
    }

    #[inline(always)]
    fn walk_into(&self, asid: Asid, va: VirtAddr, walk: &mut Walk) {
        walk.clear();
        walk.translation = self.walk_with(asid, va, |e| walk.push(e));
    }

    /// As `walk_into`, without writing the entries down: every node is a frame of its
    /// own, so no two entries of a walk share a cache line.
    #[inline(always)]
    fn walk_brief(
        &self,
        asid: Asid,
        va: VirtAddr,
        hint: WalkHint,
    ) -> Option<(usize, Option<Translation>)> {
        Some(match self.levels {
            4 => self.brief::<4>(asid, va, hint),
            _ => self.brief::<5>(asid, va, hint),
        })
    }

    /// Brings in the region's entry of the leaf memo, which the prefetch reads (the
    /// memo is larger than the host's first-level cache).
    #[inline(always)]
    fn prefetch_early(&self, _asid: Asid, va: VirtAddr) {
        crate::hugemem::prefetch(&self.leaf_memo[(va.0 >> 21) as usize % LEAF_MEMO]);
    }

    /// Follows the interior entries down to the last node present and prefetches the
    /// entry the walk will read there: the interior levels are few and stay in the
    /// host's cache, the leaf entries of a large address space do not.
    #[inline(always)]
    fn prefetch(&self, asid: Asid, va: VirtAddr) -> WalkHint {
        match self.levels {
            4 => self.prefetch_in::<4>(asid, va),
            _ => self.prefetch_in::<5>(asid, va),
        }
    }
    fn footprint_bytes(&self) -> u64 {
        self.live_nodes * (FANOUT as u64 * 8)
    }

    fn page_sizes(&self) -> &[PageSize] {
        &self.sizes
    }
}

/// The options of [`RadixPageTable`] in `[page_table]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RadixConfig {
    /// 4 (48-bit virtual addresses) or 5 (57-bit, LA57). Default 4.
    pub levels: u32,
}

impl Default for RadixConfig {
    fn default() -> Self {
        RadixConfig { levels: 4 }
    }
}

impl TableOptions for RadixConfig {
    type Table = RadixPageTable;
    fn build(&self) -> Result<RadixPageTable, String> {
        match self.levels {
            4 | 5 => Ok(RadixPageTable::new(self.levels)),
            n => Err(format!(
                "page_table.levels: {n} is not supported (x86-64 radix tables have 4 or 5 levels)"
            )),
        }
    }
}

#[cfg(test)]
mod tests;
