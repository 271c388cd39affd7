//! The guarded page table of Liedtke (SOSP'93) and Elphinstone (PhD thesis, UNSW
//! 1999), as Szmajda and Heiser, "Variable Radix Page Table", ACSAC 2003, §2.3 (Fig. 4)
//! describes it: a multi-level table with path compression. Every entry carries a
//! guard, the key bits a chain of one-entry nodes would have indexed, which must equal
//! the address's bits before the walk descends; a lookup in a sparse 64-bit space skips
//! the levels its guards cover.
//!
//! Nodes have a fixed radix (`1 << bits` entries, 16 by default as Elphinstone found
//! best) of 16-byte entries (a guard word and a pointer or PTE word); they are packed
//! into frames (mem.rs). A node indexes the `bits` address bits from its `lo` up,
//! where `lo - 12` is a multiple of `bits` (so base pages never span entries). The
//! root is itself a guarded entry, kept per address space (Liedtke's guarded root
//! pointer) and not read by a lookup; it always leads to a node. Updates keep the
//! tree compressed: a map that diverges inside a guard splits it with a new node at
//! the divergence, an unmap that leaves a node one thing merges it, guards and all,
//! into the entry above.
//!
//! Mixed page sizes: a page is a leaf wherever its guard ends at its page boundary;
//! a page larger than an entry of the node it falls in is replicated into each entry
//! it covers. Full 64-bit addresses, no canonical form.

use super::mem::{shift_for, NodeMem, Pool};
use super::options::*;
use super::{page_last, sorted_sizes, MapError, PageTable, Perms, Translation, UpdateCost, Walk};
use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::frames::FrameAllocator;

const ENTRY_BYTES: u64 = 16;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Entry {
    Empty,
    /// A child node. With `lo` the bottom of the field of the node holding the entry,
    /// `guard` is bits `[lo - glen, lo)` of every key below; the child's field ends
    /// at `lo - glen`.
    Node {
        node: u32,
        glen: u8,
        guard: u64,
    },
    /// A page; its guard is bits `[shift, lo)` of `va` (none when the page spans
    /// several entries of the node, each a replica).
    Leaf {
        va: u64,
        shift: u8,
        pfn: u64,
        perms: Perms,
    },
}

/// Where an entry lives: an address space's root, or a node's entry.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Place {
    Root(Asid),
    In(u32, usize),
}

struct Node {
    lo: u32,
    addr: PhysAddr,
    entries: Vec<Entry>,
    /// Children and pages (a replicated page once).
    things: u32,
}

pub struct GuardedPageTable {
    bits: u32,
    nodes: Pool<Node>,
    /// Each address space's root entry: empty or a node.
    roots: Vec<Entry>,
    mem: NodeMem,
    sizes: Vec<PageSize>,
}

/// Bits `[from, from + len)` of `x`.
#[inline]
fn field(x: u64, from: u32, len: u32) -> u64 {
    ((x as u128 >> from) & ((1u128 << len) - 1)) as u64
}

/// The highest bit in `[from, to)` where `a` and `b` differ.
fn divergence(a: u64, b: u64, from: u32, to: u32) -> Option<u32> {
    let x = field(a ^ b, from, to.saturating_sub(from));
    (x != 0).then(|| from + 63 - x.leading_zeros())
}

impl GuardedPageTable {
    /// Nodes of `radix` entries (a power of two, 2..=65536), pages of `sizes` (≥ 4K).
    pub fn new(radix: u32, sizes: &[PageSize]) -> GuardedPageTable {
        GuardedPageTable {
            bits: radix.trailing_zeros(),
            nodes: Pool::default(),
            roots: Vec::new(),
            mem: NodeMem::default(),
            sizes: sorted_sizes(sizes),
        }
    }

    fn node_shift(&self) -> u32 {
        shift_for(ENTRY_BYTES << self.bits)
    }

    /// The aligned field bottom at or below bit `d`.
    fn align(&self, d: u32) -> u32 {
        12 + (d - 12) / self.bits * self.bits
    }

    fn new_node(
        &mut self,
        lo: u32,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<u32, MapError> {
        let addr = self.mem.alloc(self.node_shift(), frames)?;
        cost.clear(ENTRY_BYTES << self.bits);
        let node = Node {
            lo,
            addr,
            entries: vec![Entry::Empty; 1 << self.bits],
            things: 0,
        };
        Ok(self.nodes.add(node))
    }

    fn free_node(&mut self, n: u32, frames: &mut dyn FrameAllocator) {
        let shift = self.node_shift();
        self.mem.free(self.nodes[n].addr, shift, frames);
        self.nodes[n].entries = Vec::new();
        self.nodes.remove(n);
    }

    /// The entries of node `n` a page of `shift` at `va` covers.
    fn span(&self, n: u32, va: u64, shift: u32) -> std::ops::Range<usize> {
        let lo = self.nodes[n].lo;
        let idx = field(va, lo, self.bits) as usize;
        if shift <= lo {
            return idx..idx + 1;
        }
        let k = shift - lo;
        let first = idx >> k << k;
        first..first + (1 << k)
    }

    fn get(&self, at: Place) -> Entry {
        match at {
            Place::Root(a) => self
                .roots
                .get(a.0 as usize)
                .copied()
                .unwrap_or(Entry::Empty),
            Place::In(n, i) => self.nodes[n].entries[i],
        }
    }

    fn set(&mut self, at: Place, e: Entry, cost: &mut UpdateCost) {
        match at {
            Place::Root(a) => self.roots[a.0 as usize] = e,
            Place::In(n, i) => {
                self.nodes[n].entries[i] = e;
                cost.writes += 1;
            }
        }
    }

    /// Where the field of the entry at `at` ends: the bottom of its node's field, or
    /// the top of the address for a root.
    fn lo_at(&self, at: Place) -> u32 {
        match at {
            Place::Root(_) => 64,
            Place::In(n, _) => self.nodes[n].lo,
        }
    }

    /// The entry for child `c` in a field ending at `lo`, guarded by `key`'s bits.
    fn child(&self, c: u32, key: u64, lo: u32) -> Entry {
        let top = self.nodes[c].lo + self.bits;
        let glen = lo.saturating_sub(top);
        Entry::Node {
            node: c,
            glen: glen as u8,
            guard: field(key, top, glen),
        }
    }

    /// Put a page (or a child, guarded by `key`'s bits) into node `n`.
    fn place(&mut self, n: u32, key: u64, e: Entry, cost: &mut UpdateCost) {
        let (e, shift) = match e {
            Entry::Node { node, .. } => (self.child(node, key, self.nodes[n].lo), 0),
            leaf @ Entry::Leaf { shift, .. } => (leaf, shift as u32),
            Entry::Empty => unreachable!("only things are placed"),
        };
        let span = self.span(n, key, shift);
        cost.writes += span.len() as u64;
        let node = &mut self.nodes[n];
        node.entries[span].fill(e);
        node.things += 1;
    }

    /// The node, entries and path of internal entries above the page of `shift`
    /// at `va`.
    fn find(
        &self,
        asid: Asid,
        va: u64,
        shift: u32,
        cost: &mut UpdateCost,
    ) -> Result<(Vec<Place>, u32, std::ops::Range<usize>), MapError> {
        let mut at = Place::Root(asid);
        let mut path = Vec::new();
        loop {
            let lo = self.lo_at(at);
            let Entry::Node {
                node: c,
                glen,
                guard,
            } = self.get(at)
            else {
                return Err(MapError::NotMapped);
            };
            let top = lo - glen as u32;
            if shift >= top || field(va, top, glen as u32) != guard {
                return Err(MapError::NotMapped);
            }
            path.push(at);
            let span = self.span(c, va, shift);
            cost.reads += 1;
            match self.nodes[c].entries[span.start] {
                Entry::Leaf {
                    va: v, shift: s, ..
                } if v == va && s as u32 == shift => return Ok((path, c, span)),
                Entry::Node { .. } if span.len() == 1 => at = Place::In(c, span.start),
                _ => return Err(MapError::NotMapped),
            }
        }
    }

    /// A root's node that holds a single page (a root takes no page) gives it up
    /// when it is about to go below a new node: the page goes there instead.
    fn lone_page(&mut self, e: Entry, frames: &mut dyn FrameAllocator) -> Option<(u64, Entry)> {
        let Entry::Node { node: c, .. } = e else {
            return None;
        };
        let node = &self.nodes[c];
        let page = node.entries.iter().find(|e| **e != Entry::Empty).copied();
        match page {
            Some(leaf @ Entry::Leaf { va, .. }) if node.things == 1 => {
                self.free_node(c, frames);
                Some((va, leaf))
            }
            _ => None,
        }
    }

    /// After an unmap in the node below the entry at `path`'s end: a node left with
    /// one thing gives it to that entry, merging the guards (a root takes only a
    /// node); a node left empty goes.
    fn compress(&mut self, path: &[Place], frames: &mut dyn FrameAllocator, cost: &mut UpdateCost) {
        let Some(&at) = path.last() else { return };
        let lo = self.lo_at(at);
        let Entry::Node {
            node: n,
            glen: gp,
            guard: g,
        } = self.get(at)
        else {
            unreachable!("the path holds internal entries")
        };
        let node = &self.nodes[n];
        if node.things == 0 {
            self.set(at, Entry::Empty, cost);
            self.free_node(n, frames);
            if let Place::In(p, _) = at {
                self.nodes[p].things -= 1;
                self.compress(&path[..path.len() - 1], frames, cost);
            }
            return;
        }
        if node.things != 1 {
            return;
        }
        let (j, &only) = node
            .entries
            .iter()
            .enumerate()
            .find(|(_, e)| **e != Entry::Empty)
            .expect("one thing left");
        cost.reads += node.entries.len() as u64;
        let merged = match (at, only) {
            (Place::Root(_), Entry::Leaf { .. }) => return,
            (
                _,
                Entry::Node {
                    node: c, guard: h, ..
                },
            ) => {
                // The key bits above the child, from the two guards and the index.
                let top = self.nodes[c].lo + self.bits;
                let key =
                    (g as u128) << (lo - gp as u32) | (j as u128) << node.lo | (h as u128) << top;
                self.child(c, key as u64, lo)
            }
            (_, leaf) => leaf,
        };
        self.set(at, merged, cost);
        self.free_node(n, frames);
    }
}

impl PageTable for GuardedPageTable {
    fn map(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        pfn: Pfn,
        perms: Perms,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        page_last(&self.sizes, va, size)?;
        let (va, s) = (va.0, size.shift());
        let leaf = Entry::Leaf {
            va,
            shift: s as u8,
            pfn: pfn.0,
            perms,
        };
        let mut cost = UpdateCost::NONE;
        let a = asid.0 as usize;
        if self.roots.len() <= a {
            self.roots.resize(a + 1, Entry::Empty);
        }
        let mut at = Place::Root(asid);
        loop {
            let lo = self.lo_at(at);
            let e = self.get(at);
            // The old entry's key bits below `lo` and where its guard ends.
            let (okey, end) = match e {
                Entry::Empty => {
                    let n = match at {
                        Place::In(n, _) => n,
                        Place::Root(_) => {
                            // A first node whose field starts at or above the page.
                            let lo = 12 + (s - 12).div_ceil(self.bits) * self.bits;
                            let n = self.new_node(lo, frames, &mut cost)?;
                            self.set(at, self.child(n, va, 64), &mut cost);
                            n
                        }
                    };
                    self.place(n, va, leaf, &mut cost);
                    return Ok(cost);
                }
                Entry::Node { glen: 0, .. } => (0, lo),
                Entry::Node { glen, guard, .. } => (guard << (lo - glen as u32), lo - glen as u32),
                Entry::Leaf { va: v, shift, .. } => (v, shift as u32),
            };
            let Some(d) = divergence(va, okey, s.max(end), lo) else {
                let Entry::Node { node: c, .. } = e else {
                    return Err(MapError::Overlap);
                };
                if s >= end {
                    return Err(MapError::Overlap);
                }
                let span = self.span(c, va, s);
                cost.reads += span.len() as u64;
                if span.len() > 1 {
                    if self.nodes[c].entries[span]
                        .iter()
                        .any(|e| *e != Entry::Empty)
                    {
                        return Err(MapError::Overlap);
                    }
                    self.place(c, va, leaf, &mut cost);
                    return Ok(cost);
                }
                at = Place::In(c, span.start);
                continue;
            };
            // Split at the divergence: a new node whose field holds bit `d`.
            let m = self.new_node(self.align(d), frames, &mut cost)?;
            let (okey, e) = self.lone_page(e, frames).unwrap_or((okey, e));
            self.place(m, okey, e, &mut cost);
            self.place(m, va, leaf, &mut cost);
            self.set(at, self.child(m, va, lo), &mut cost);
            return Ok(cost);
        }
    }

    fn unmap(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        page_last(&self.sizes, va, size)?;
        let mut cost = UpdateCost::NONE;
        let (path, n, span) = self.find(asid, va.0, size.shift(), &mut cost)?;
        cost.writes += span.len() as u64;
        let node = &mut self.nodes[n];
        node.entries[span].fill(Entry::Empty);
        node.things -= 1;
        self.compress(&path, frames, &mut cost);
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
        page_last(&self.sizes, va, size)?;
        let mut cost = UpdateCost::NONE;
        let (_, n, span) = self.find(asid, va.0, size.shift(), &mut cost)?;
        cost.writes += span.len() as u64;
        for e in &mut self.nodes[n].entries[span] {
            if let Entry::Leaf { perms: p, .. } = e {
                *p = perms;
            }
        }
        Ok(cost)
    }

    fn walk(&self, asid: Asid, va: VirtAddr) -> Walk {
        let mut walk = Walk::new();
        let mut e = self.get(Place::Root(asid));
        let mut lo = 64;
        loop {
            match e {
                Entry::Empty => return walk,
                Entry::Node {
                    node: c,
                    glen,
                    guard,
                } => {
                    if field(va.0, lo - glen as u32, glen as u32) != guard {
                        return walk;
                    }
                    let node = &self.nodes[c];
                    let idx = field(va.0, node.lo, self.bits);
                    walk.push(PhysAddr(node.addr.0 + idx * ENTRY_BYTES));
                    e = node.entries[idx as usize];
                    lo = node.lo;
                }
                Entry::Leaf {
                    va: v,
                    shift,
                    pfn,
                    perms,
                } => {
                    let s = shift as u32;
                    if s < lo && field(va.0 ^ v, s, lo - s) != 0 {
                        return walk;
                    }
                    let size = PageSize::from_shift(s).expect("a mapped size");
                    walk.translation = Some(Translation {
                        pfn: Pfn(pfn),
                        size,
                        perms,
                    });
                    return walk;
                }
            }
        }
    }

    fn footprint_bytes(&self) -> u64 {
        self.mem.bytes()
    }

    fn page_sizes(&self) -> &[PageSize] {
        &self.sizes
    }
}

/// The options of [`GuardedPageTable`] in `[page_table]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuardedConfig {
    /// Entries per node (a power of two, 2 to 65536). Default 16, the radix
    /// Elphinstone found best.
    pub radix: u64,
    /// Page sizes mapped (any, from 4K). Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for GuardedConfig {
    fn default() -> Self {
        GuardedConfig {
            radix: 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl GuardedConfig {
    pub fn check(&self) -> Result<(), String> {
        check_power_of_two("radix", self.radix, 2, 1 << 16)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

impl TableOptions for GuardedConfig {
    type Table = GuardedPageTable;
    fn build(&self) -> Result<GuardedPageTable, String> {
        self.check()?;
        Ok(GuardedPageTable::new(self.radix as u32, &self.page_sizes))
    }
}

#[cfg(test)]
mod tests;
