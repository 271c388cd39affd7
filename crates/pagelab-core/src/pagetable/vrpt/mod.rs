//! The variable radix page table of Szmajda and Heiser, "Variable Radix Page Table: A
//! Page Table for Modern Architectures" (ACSAC 2003), §3–4: a radix tree with path compression
//! (a level may skip any number of address bits) and level compression (a level may
//! index any number of bits: nodes of any power-of-two size), without guards — the
//! leaf holds its virtual address and is checked at the end of the walk.
//!
//! **Lookup** is Fig. 6, literally: an internal entry is a node pointer and two
//! shift amounts; `p = p.ptr + (v << p.skip >> p.size)` until `p` is a leaf, then
//! `p.virt` must equal `v` (at the page's size). `skip` counts the address bits above
//! the node's field, `size` is 64 minus the field's width (the paper's bias that
//! pre-scales the index to the entry size is left to the address arithmetic). The
//! root entry is kept per address space, like a root register, and is not read.
//!
//! **Radix policy** (§3.2, [`policy`]): by default each new level is as wide as the
//! buddy allocator of table memory can give, up to `max_node_bits`, and levels
//! emptied by unmapping are freed lazily; the `grow` policy starts levels narrow and
//! merges them as they fill.
//!
//! **Superpages** (§4.1): a page is a leaf in an entry that covers at least the page
//! (factorized). A page that spans several entries of the node it falls in is
//! expanded into a replica per entry instead: that costs no memory, where factorizing
//! would need a new level. **Shared segments** (§4.2): a segment of a power-of-two
//! size aligned on it (any power of two) gets one node of its pages, and each address
//! space a cross-link entry to it; unmapping or protecting one page in one address
//! space first copies the segment into a private node there. Segments of another
//! shape, or whose link would land across several entries, are mapped page by page.
//! **Frame links** (§4.3): each PTE links to the next PTE mapping the same frame (the
//! page's first frame), from a head per frame; [`VariableRadixPageTable::ptes_of_frame`]
//! follows them.
//!
//! Entries are 32 bytes (a leaf: virtual address, PTE, frame link; an internal entry:
//! pointer and shifts). Simplification: each node's key prefix, which updates need
//! and a real implementation would read from any leaf below it, is kept beside the
//! node and counted as one read.

mod config;
mod grow;
mod policy;
mod protect;

pub use config::VariableRadixConfig;
pub use policy::RadixPolicy;

#[cfg(test)]
mod tests;
mod update;

use super::mem::{NodeMem, Pool};
use super::{
    map_pages, page_last, range_of, sorted_sizes, unmap_pages, MapError, PageTable, Perms,
};
use super::{Segment, Translation, UpdateCost, Walk};
use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::frames::FrameAllocator;
use std::collections::HashMap;
use std::ops::Range;

const ENTRY_SHIFT: u32 = 5;

/// A PTE's place: node and entry.
type SlotRef = (u32, u32);

#[derive(Clone, Copy, PartialEq, Debug)]
struct Pte {
    virt: u64,
    shift: u8,
    pfn: u64,
    perms: Perms,
    /// The next PTE mapping the same frame.
    next: Option<SlotRef>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Slot {
    Empty,
    /// An internal entry: Fig. 6's pointer and shift amounts, and the rights it
    /// gives every page under it, if it overrides theirs (§4.3).
    Node {
        node: u32,
        skip: u8,
        size: u8,
        prot: Option<Perms>,
    },
    /// An internal entry to a shared segment's node (a cross-link).
    Link {
        node: u32,
        skip: u8,
        size: u8,
        prot: Option<Perms>,
    },
    Leaf(Pte),
}

/// Where an entry lives: an address space's root register, or a node's entry.
#[derive(Clone, Copy, PartialEq, Debug)]
enum At {
    Root(Asid),
    In(u32, u32),
}

struct Node {
    /// The field: address bits `[lo, lo + bits)`.
    lo: u32,
    bits: u32,
    /// Every key below shares its bits from `lo + bits` up (lower bits zero).
    prefix: u64,
    addr: PhysAddr,
    slots: Vec<Slot>,
    /// Children, links and pages (a replicated page once).
    things: u32,
    /// Links to a shared segment's node, plus one while it is built.
    shared: u32,
    /// Width for the node's next new child.
    hint: u32,
}

/// Why an insert did not happen.
enum Refused {
    Map(MapError),
    /// A link would have to be replicated over several entries.
    WouldReplicate,
}

impl From<MapError> for Refused {
    fn from(e: MapError) -> Refused {
        Refused::Map(e)
    }
}

/// What `locate` found: a page (its node and entries) or the link over it.
enum Hit {
    Page(u32, Range<usize>),
    Link(At),
}

pub struct VariableRadixPageTable {
    nodes: Pool<Node>,
    roots: Vec<Slot>,
    /// The first PTE mapping each frame.
    heads: HashMap<u64, SlotRef>,
    mem: NodeMem,
    policy: RadixPolicy,
    /// Whether a greedy level may be narrower than `max_node_bits` allows when
    /// memory is short (else the insert fails, and `map` first takes back).
    narrow: bool,
    node_bits: u32,
    max_node_bits: u32,
    sizes: Vec<PageSize>,
}

/// The node an internal entry or a cross-link leads to.
fn child(s: &Slot) -> Option<u32> {
    match *s {
        Slot::Node { node, .. } | Slot::Link { node, .. } => Some(node),
        _ => None,
    }
}

/// Fig. 6's index: a left shift by `skip`, a right shift by `size`.
#[inline(always)]
fn index(v: u64, skip: u8, size: u8) -> u64 {
    v << skip >> size
}

/// Bits `[from, from + len)` of `x`.
fn field(x: u64, from: u32, len: u32) -> u64 {
    ((x as u128 >> from) & ((1u128 << len) - 1)) as u64
}

impl VariableRadixPageTable {
    /// The greedy radix policy (§3.2): levels of up to `1 << max_node_bits` entries,
    /// freed lazily; pages of `sizes` (≥ 4K).
    pub fn greedy(max_node_bits: u32, sizes: &[PageSize]) -> VariableRadixPageTable {
        let mut t = VariableRadixPageTable::growing(max_node_bits, max_node_bits, sizes);
        t.policy = RadixPolicy::Greedy;
        t
    }

    /// The grow policy: new nodes of `1 << node_bits` entries, merged up to
    /// `1 << max_node_bits`; pages of `sizes` (≥ 4K).
    pub fn growing(
        node_bits: u32,
        max_node_bits: u32,
        sizes: &[PageSize],
    ) -> VariableRadixPageTable {
        VariableRadixPageTable {
            nodes: Pool::default(),
            roots: Vec::new(),
            heads: HashMap::new(),
            mem: NodeMem::default(),
            policy: RadixPolicy::Grow,
            narrow: true,
            node_bits,
            max_node_bits,
            sizes: sorted_sizes(sizes),
        }
    }

    /// The PTEs mapping `pfn` (as a page's first frame), by their addresses and the
    /// virtual addresses they hold, following the per-PTE frame links.
    pub fn ptes_of_frame(&self, pfn: Pfn) -> Vec<(PhysAddr, VirtAddr)> {
        let mut out = Vec::new();
        let mut cur = self.heads.get(&pfn.0).copied();
        while let Some((n, i)) = cur {
            let Slot::Leaf(pte) = self.nodes[n].slots[i as usize] else {
                unreachable!("frame links lead to leaves")
            };
            out.push((self.slot_addr(n, i as u64), VirtAddr(pte.virt)));
            cur = pte.next;
        }
        out
    }

    fn slot_addr(&self, n: u32, i: u64) -> PhysAddr {
        PhysAddr(self.nodes[n].addr.0 + (i << ENTRY_SHIFT))
    }

    /// The internal entry for node `n`.
    fn entry(&self, n: u32, link: bool) -> Slot {
        let node = &self.nodes[n];
        let (skip, size) = ((64 - node.lo - node.bits) as u8, (64 - node.bits) as u8);
        if link {
            Slot::Link {
                node: n,
                skip,
                size,
                prot: None,
            }
        } else {
            Slot::Node {
                node: n,
                skip,
                size,
                prot: None,
            }
        }
    }

    fn get(&self, at: At) -> Slot {
        match at {
            At::Root(a) => self.roots.get(a.0 as usize).copied().unwrap_or(Slot::Empty),
            At::In(n, i) => self.nodes[n].slots[i as usize],
        }
    }

    /// Write an entry, keeping the frame links: a leaf leaves its frame's list, a new
    /// leaf joins at the head.
    fn set(&mut self, at: At, mut slot: Slot, cost: &mut UpdateCost) {
        let (n, i) = match at {
            At::Root(a) => {
                self.roots[a.0 as usize] = slot;
                return;
            }
            At::In(n, i) => (n, i),
        };
        cost.writes += 1;
        if let Slot::Leaf(old) = self.nodes[n].slots[i as usize] {
            self.unlink(old.pfn, (n, i), old.next, cost);
        }
        if let Slot::Leaf(pte) = &mut slot {
            pte.next = self.heads.insert(pte.pfn, (n, i));
            cost.writes += 1;
        }
        self.nodes[n].slots[i as usize] = slot;
    }

    fn unlink(&mut self, pfn: u64, r: SlotRef, next: Option<SlotRef>, cost: &mut UpdateCost) {
        cost.writes += 1;
        let mut cur = self.heads[&pfn];
        if cur == r {
            match next {
                Some(h) => self.heads.insert(pfn, h),
                None => self.heads.remove(&pfn),
            };
            return;
        }
        loop {
            cost.reads += 1;
            let Slot::Leaf(pte) = &mut self.nodes[cur.0].slots[cur.1 as usize] else {
                unreachable!("frame links lead to leaves")
            };
            if pte.next == Some(r) {
                pte.next = next;
                return;
            }
            cur = pte.next.expect("the PTE is on its frame's list");
        }
    }

    fn new_node(
        &mut self,
        lo: u32,
        bits: u32,
        key: u64,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<u32, MapError> {
        let addr = self.mem.alloc(bits + ENTRY_SHIFT, frames)?;
        cost.clear(1 << (bits + ENTRY_SHIFT));
        let top = lo + bits;
        let node = Node {
            lo,
            bits,
            prefix: if top >= 64 { 0 } else { key >> top << top },
            addr,
            slots: vec![Slot::Empty; 1 << bits],
            things: 0,
            shared: 0,
            hint: self.node_bits,
        };
        Ok(self.nodes.add(node))
    }

    /// Free a node whose leaves have been cleared or moved.
    fn free_node(&mut self, n: u32, frames: &mut dyn FrameAllocator) {
        let node = &mut self.nodes[n];
        let shift = node.bits + ENTRY_SHIFT;
        node.slots = Vec::new();
        let addr = node.addr;
        self.mem.free(addr, shift, frames);
        self.nodes.remove(n);
    }

    /// The entries of node `n` a thing of `shift` at `key` covers.
    fn span(&self, n: u32, key: u64, shift: u32) -> Range<usize> {
        let node = &self.nodes[n];
        let idx = field(key, node.lo, node.bits) as usize;
        if shift <= node.lo {
            return idx..idx + 1;
        }
        let k = shift - node.lo;
        let first = idx >> k << k;
        first..first + (1 << k)
    }

    /// Put a thing (a page, link or child) of `shift` at `key` into node `n`.
    fn place(&mut self, n: u32, key: u64, shift: u32, thing: Slot, cost: &mut UpdateCost) {
        for i in self.span(n, key, shift) {
            self.set(At::In(n, i as u32), thing, cost);
        }
        self.nodes[n].things += 1;
    }

    /// The key and size of a page or link.
    fn key_of(&self, thing: Slot) -> (u64, u32) {
        match thing {
            Slot::Leaf(p) => (p.virt, p.shift as u32),
            Slot::Link { node, .. } | Slot::Node { node, .. } => {
                let n = &self.nodes[node];
                (n.prefix, n.lo + n.bits)
            }
            Slot::Empty => unreachable!("not a thing"),
        }
    }
}

impl PageTable for VariableRadixPageTable {
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
        let pte = Pte {
            virt: va.0,
            shift: size.shift() as u8,
            pfn: pfn.0,
            perms,
            next: None,
        };
        self.insert_page(asid, va.0, size.shift(), pte, frames)
    }

    fn unmap(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let mut cost = UpdateCost::NONE;
        let (path, n, span) = self.find_private(asid, va, size, frames, &mut cost)?;
        // Last replica first: each is then the head of its frame's list.
        for i in span.rev() {
            self.set(At::In(n, i as u32), Slot::Empty, &mut cost);
        }
        self.nodes[n].things -= 1;
        if self.policy == RadixPolicy::Grow {
            self.collapse(&path, frames, &mut cost);
        }
        Ok(cost)
    }

    fn protect(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        perms: Perms,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let mut cost = UpdateCost::NONE;
        page_last(&self.sizes, va, size)?;
        self.unshadow(asid, va.0, size.shift(), frames, &mut cost)?;
        let (_, n, span) = self.find_private(asid, va, size, frames, &mut cost)?;
        cost.writes += span.len() as u64;
        for slot in &mut self.nodes[n].slots[span] {
            if let Slot::Leaf(pte) = slot {
                pte.perms = perms;
            }
        }
        Ok(cost)
    }

    fn protect_range(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        bytes: u64,
        perms: Perms,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        self.protect_in(asid, va, bytes, perms, frames)
    }

    /// Cross-linked when the segment is a power of two in size, aligned on it, of
    /// at least two pages, and no wider than `max_node_bits` pages.
    fn map_shared(
        &mut self,
        asids: &[Asid],
        seg: &Segment,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let bytes = seg.bytes()?;
        page_last(&self.sizes, seg.va, seg.size)?;
        let (b, s) = (bytes.trailing_zeros(), seg.size.shift());
        if !bytes.is_power_of_two()
            || seg.va.0 % bytes != 0
            || seg.pages < 2
            || b - s > self.max_node_bits
        {
            return map_pages(self, asids, seg, frames);
        }
        let mut cost = UpdateCost::NONE;
        let node = self.new_node(s, b - s, seg.va.0, frames, &mut cost)?;
        self.nodes[node].shared = 1;
        for i in 0..seg.pages {
            let (va, pfn) = seg.page(i);
            let pte = Pte {
                virt: va.0,
                shift: s as u8,
                pfn: pfn.0,
                perms: seg.perms,
                next: None,
            };
            self.place(node, va.0, s, Slot::Leaf(pte), &mut cost);
        }
        let link = self.entry(node, true);
        for (k, &asid) in asids.iter().enumerate() {
            match self.insert(asid, seg.va.0, b, link, frames, &mut cost) {
                Ok(()) => self.nodes[node].shared += 1,
                Err(refused) => {
                    for &a in &asids[..k] {
                        self.unmap_shared(a, seg, frames)
                            .expect("a link just made comes off");
                    }
                    self.release(node, frames, &mut cost);
                    return match refused {
                        Refused::Map(e) => Err(e),
                        Refused::WouldReplicate => map_pages(self, asids, seg, frames),
                    };
                }
            }
        }
        self.release(node, frames, &mut cost);
        Ok(cost)
    }

    fn unmap_shared(
        &mut self,
        asid: Asid,
        seg: &Segment,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let bytes = seg.bytes()?;
        let mut cost = UpdateCost::NONE;
        let b = bytes.trailing_zeros();
        if bytes.is_power_of_two() && seg.va.0 % bytes == 0 {
            if let Ok((path, Hit::Link(at))) = self.locate(asid, seg.va.0, b, &mut cost) {
                let Slot::Link { node: s, .. } = self.get(at) else {
                    unreachable!()
                };
                let n = &self.nodes[s];
                if n.prefix == seg.va.0 && n.lo + n.bits == b && n.lo == seg.size.shift() {
                    let At::In(p, _) = at else { unreachable!() };
                    self.set(at, Slot::Empty, &mut cost);
                    self.nodes[p].things -= 1;
                    if self.policy == RadixPolicy::Grow {
                        self.collapse(&path, frames, &mut cost);
                    }
                    self.release(s, frames, &mut cost);
                    return Ok(cost);
                }
            }
        }
        unmap_pages(self, asid, seg, frames)
    }

    fn walk(&self, asid: Asid, va: VirtAddr) -> Walk {
        let mut walk = Walk::new();
        let v = va.0;
        let mut p = self
            .roots
            .get(asid.0 as usize)
            .copied()
            .unwrap_or(Slot::Empty);
        // The rights of the topmost entry that gives them, if any (§4.3).
        let mut given: Option<Perms> = None;
        // Fig. 6: p = p->ptr + (v << p->skip >> p->size) until p points to a leaf.
        loop {
            match p {
                Slot::Node {
                    node,
                    skip,
                    size,
                    prot,
                }
                | Slot::Link {
                    node,
                    skip,
                    size,
                    prot,
                } => {
                    given = given.or(prot);
                    let n = &self.nodes[node];
                    let i = index(v, skip, size);
                    walk.push(PhysAddr(n.addr.0 + (i << ENTRY_SHIFT)));
                    p = n.slots[i as usize];
                }
                Slot::Leaf(pte) => {
                    // The only check: p->virt = v, at the page's size.
                    if (v ^ pte.virt) >> pte.shift == 0 {
                        walk.translation = Some(Translation {
                            pfn: Pfn(pte.pfn),
                            size: PageSize::from_shift(pte.shift as u32).expect("mapped"),
                            perms: given.unwrap_or(pte.perms),
                        });
                    }
                    return walk;
                }
                Slot::Empty => return walk,
            }
        }
    }

    fn give_back(&mut self, frames: &mut dyn FrameAllocator) -> bool {
        self.reclaim(frames)
    }

    fn footprint_bytes(&self) -> u64 {
        self.mem.bytes()
    }

    /// Whole frames of levels that hold nothing: §3.2's greedy allocator "reserves
    /// the right to take back some or all of the memory if it is unused". A frame
    /// of a level whose 128 entries are all empty can go back (the entries that
    /// index into it then fail their lookups, as empty ones do); levels smaller
    /// than a frame share frames with others and are not counted.
    fn reclaimable_bytes(&self) -> u64 {
        const PER_FRAME: usize = 1 << (crate::addr::BASE_SHIFT - ENTRY_SHIFT);
        let mut seen = std::collections::HashSet::new();
        let mut stack: Vec<u32> = self.roots.iter().filter_map(child).collect();
        let mut frames = 0u64;
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            let slots = &self.nodes[n].slots;
            stack.extend(slots.iter().filter_map(child));
            if slots.len() >= PER_FRAME {
                frames += slots
                    .chunks(PER_FRAME)
                    .filter(|c| c.iter().all(|s| *s == Slot::Empty))
                    .count() as u64;
            }
        }
        frames << crate::addr::BASE_SHIFT
    }

    fn page_sizes(&self) -> &[PageSize] {
        &self.sizes
    }
}
