//! The variable radix page table of Szmajda and Heiser (ACSAC 2003),
//! papers/variable-radix-page-table.md §3–4: a radix tree with path compression
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
//! **Radix policy** (§3.2 leaves it open; ours is deterministic): a new node starts at
//! `node_bits` bits (its parent's last child width, if it has one), placed without a
//! skip when its field can hold the first bit where its two keys differ, else just
//! above that bit. A node whose entries are (nearly) all children of one width
//! directly below it is merged with them into one node as wide as both, when that
//! needs no more memory than the two levels (up to `max_node_bits`). Nodes are not
//! split back; a node left with one thing gives it to its parent.
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

use super::mem::{NodeMem, Pool};
use super::{map_pages, page_last, sorted_sizes, unmap_pages, MapError, PageTable, Perms};
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
    /// An internal entry: Fig. 6's pointer and shift amounts.
    Node {
        node: u32,
        skip: u8,
        size: u8,
    },
    /// An internal entry to a shared segment's node (a cross-link).
    Link {
        node: u32,
        skip: u8,
        size: u8,
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
    node_bits: u32,
    max_node_bits: u32,
    sizes: Vec<PageSize>,
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

/// A field `[lo, lo + bits)` for a new node below `top` that holds bit `d` and lies
/// at or above `lo_min`, `w` bits wide if it can: no skip if possible.
fn choose(lo_min: u32, top: u32, d: u32, w: u32) -> (u32, u32) {
    let flush = top.saturating_sub(w);
    let (lo, hi) = if flush <= d {
        (flush.max(lo_min), top)
    } else {
        let lo = lo_min.max((d + 1).saturating_sub(w));
        (lo, top.min(lo + w))
    };
    (lo, hi - lo)
}

impl VariableRadixPageTable {
    /// New nodes of `1 << node_bits` entries, merged up to `1 << max_node_bits`;
    /// pages of `sizes` (≥ 4K).
    pub fn new(node_bits: u32, max_node_bits: u32, sizes: &[PageSize]) -> VariableRadixPageTable {
        VariableRadixPageTable {
            nodes: Pool::default(),
            roots: Vec::new(),
            heads: HashMap::new(),
            mem: NodeMem::default(),
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
            }
        } else {
            Slot::Node {
                node: n,
                skip,
                size,
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

    /// Insert a page (or a link) `x` of `shift` at `va` into `asid`'s tree.
    fn insert(
        &mut self,
        asid: Asid,
        va: u64,
        s: u32,
        x: Slot,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<(), Refused> {
        let a = asid.0 as usize;
        if self.roots.len() <= a {
            self.roots.resize(a + 1, Slot::Empty);
        }
        let mut at = At::Root(asid);
        // Where the entries of the nodes above `at` live.
        let mut path: Vec<At> = Vec::new();
        loop {
            match self.get(at) {
                Slot::Empty => {
                    match at {
                        At::Root(_) => {
                            let bits = self.node_bits.min(64 - s);
                            let n = self.new_node(s, bits, va, frames, cost)?;
                            self.place(n, va, s, x, cost);
                            self.set(at, self.entry(n, false), cost);
                        }
                        At::In(n, _) => self.place(n, va, s, x, cost),
                    }
                    return Ok(());
                }
                Slot::Node { node: n, .. } => {
                    let (lo, bits, prefix) = {
                        let node = &self.nodes[n];
                        (node.lo, node.bits, node.prefix)
                    };
                    let top = lo + bits;
                    cost.reads += 1;
                    let diff = field(va ^ prefix, s.max(top), 64u32.saturating_sub(s.max(top)));
                    if diff != 0 {
                        // `va` leaves the node's prefix: a new node above it.
                        let d = 63 - diff.leading_zeros() + s.max(top);
                        let limit = match at {
                            At::Root(_) => 64,
                            At::In(p, _) => self.nodes[p].lo,
                        };
                        let (mlo, mbits) = choose(top.max(s), limit, d, self.node_bits);
                        let m = self.new_node(mlo, mbits, va, frames, cost)?;
                        self.nodes[m].hint = bits;
                        let old = self.get(at);
                        self.place(m, prefix, 0, old, cost);
                        self.place(m, va, s, x, cost);
                        self.set(at, self.entry(m, false), cost);
                        if let At::In(p, _) = at {
                            self.try_merge(p, &path, frames, cost);
                        }
                        return Ok(());
                    }
                    if s >= top {
                        return Err(MapError::Overlap.into());
                    }
                    let span = self.span(n, va, s);
                    if span.len() > 1 {
                        if matches!(x, Slot::Link { .. }) {
                            return Err(Refused::WouldReplicate);
                        }
                        cost.reads += span.len() as u64;
                        let slots = &self.nodes[n].slots[span];
                        if slots.iter().any(|e| *e != Slot::Empty) {
                            return Err(MapError::Overlap.into());
                        }
                        self.place(n, va, s, x, cost);
                        return Ok(());
                    }
                    path.push(at);
                    at = At::In(n, span.start as u32);
                }
                thing => {
                    // A page or link in the entry `va` falls in: both go into a new node.
                    let At::In(p, _) = at else {
                        unreachable!("a root holds only nodes")
                    };
                    let (vy, sy) = self.key_of(thing);
                    cost.reads += 1;
                    let sm = s.max(sy);
                    if (va ^ vy) >> sm == 0 {
                        return Err(MapError::Overlap.into());
                    }
                    let d = 63 - (va ^ vy).leading_zeros();
                    let (lo, hint) = (self.nodes[p].lo, self.nodes[p].hint);
                    let (mlo, mbits) = choose(sm, lo, d, hint);
                    let m = self.new_node(mlo, mbits, va, frames, cost)?;
                    self.set(at, Slot::Empty, cost);
                    self.place(m, vy, sy, thing, cost);
                    self.place(m, va, s, x, cost);
                    self.set(at, self.entry(m, false), cost);
                    self.try_merge(p, &path, frames, cost);
                    return Ok(());
                }
            }
        }
    }

    /// Level compression: merge node `p` (its entry at `path`'s end) with its
    /// children when they all have one width, lie directly below it, and the merged
    /// node needs no more memory than `p` and them. Then try `p`'s parent.
    fn try_merge(
        &mut self,
        p: u32,
        path: &[At],
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) {
        let Some((&at_p, above)) = path.split_last() else {
            return;
        };
        let node = &self.nodes[p];
        let (k, lo) = (node.bits, node.lo);
        let (mut kc, mut kids, mut things) = (None, 0u64, 0);
        for (i, slot) in node.slots.iter().enumerate() {
            match *slot {
                Slot::Node { node: c, .. } => {
                    let c = &self.nodes[c];
                    if c.lo + c.bits != lo || *kc.get_or_insert(c.bits) != c.bits {
                        return;
                    }
                    kids += 1;
                    things += c.things;
                }
                Slot::Link { .. } => return,
                Slot::Leaf(l) if self.span(p, l.virt, l.shift as u32).start == i => things += 1,
                _ => {}
            }
        }
        let Some(kc) = kc else { return };
        if k + kc > self.max_node_bits || 1u64 << (k + kc) > (1u64 << k) + (kids << kc) {
            return;
        }
        let Ok(q) = self.new_node(lo - kc, k + kc, self.nodes[p].prefix, frames, cost) else {
            return;
        };
        cost.reads += (1 << k) + (kids << kc);
        for i in 0..1u32 << k {
            match self.nodes[p].slots[i as usize] {
                Slot::Node { node: c, .. } => {
                    self.nodes[q].hint = self.nodes[c].hint;
                    for j in 0..1u32 << kc {
                        let e = self.nodes[c].slots[j as usize];
                        if e != Slot::Empty {
                            self.set(At::In(c, j), Slot::Empty, cost);
                            self.set(At::In(q, i << kc | j), e, cost);
                        }
                    }
                    self.free_node(c, frames);
                }
                Slot::Leaf(l) => {
                    let first = self.span(p, l.virt, l.shift as u32).start == i as usize;
                    self.set(At::In(p, i), Slot::Empty, cost);
                    if first {
                        self.place(q, l.virt, l.shift as u32, Slot::Leaf(l), cost);
                    }
                }
                _ => {}
            }
        }
        self.nodes[q].things = things;
        self.free_node(p, frames);
        self.set(at_p, self.entry(q, false), cost);
        if let At::In(pp, _) = at_p {
            self.try_merge(pp, above, frames, cost);
        }
    }

    /// The page of `shift` at `va` in `asid`, or the link over it, with the
    /// places of the internal entries above.
    fn locate(
        &self,
        asid: Asid,
        va: u64,
        s: u32,
        cost: &mut UpdateCost,
    ) -> Result<(Vec<At>, Hit), MapError> {
        let mut at = At::Root(asid);
        let mut path = Vec::new();
        loop {
            match self.get(at) {
                Slot::Empty => return Err(MapError::NotMapped),
                Slot::Leaf(l) => {
                    let At::In(n, i) = at else { unreachable!() };
                    if l.virt == va && l.shift as u32 == s {
                        return Ok((path, Hit::Page(n, i as usize..i as usize + 1)));
                    }
                    return Err(MapError::NotMapped);
                }
                link @ Slot::Link { .. } => {
                    let (base, b) = self.key_of(link);
                    if s > b || (va ^ base) >> b != 0 {
                        return Err(MapError::NotMapped);
                    }
                    return Ok((path, Hit::Link(at)));
                }
                Slot::Node { node: n, .. } => {
                    path.push(at);
                    let node = &self.nodes[n];
                    if s > node.lo + node.bits {
                        return Err(MapError::NotMapped);
                    }
                    let span = self.span(n, va, s);
                    cost.reads += 1;
                    if span.len() > 1 {
                        return match node.slots[span.start] {
                            Slot::Leaf(l) if l.virt == va && l.shift as u32 == s => {
                                Ok((path, Hit::Page(n, span)))
                            }
                            _ => Err(MapError::NotMapped),
                        };
                    }
                    at = At::In(n, span.start as u32);
                }
            }
        }
    }

    /// The page of `size` at `va`, copying a shared segment over it into a private
    /// node first.
    fn find_private(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<(Vec<At>, u32, Range<usize>), MapError> {
        page_last(&self.sizes, va, size)?;
        loop {
            match self.locate(asid, va.0, size.shift(), cost)? {
                (path, Hit::Page(n, span)) => return Ok((path, n, span)),
                (_, Hit::Link(at)) => {
                    let Slot::Link { node: s, .. } = self.get(at) else {
                        unreachable!()
                    };
                    if self.nodes[s].lo != size.shift() {
                        return Err(MapError::NotMapped);
                    }
                    self.privatize(at, frames, cost)?;
                }
            }
        }
    }

    /// Replace the link at `at` by a private copy of the segment's node.
    fn privatize(
        &mut self,
        at: At,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<(), MapError> {
        let Slot::Link { node: s, .. } = self.get(at) else {
            unreachable!()
        };
        let (lo, bits, prefix, things) = {
            let n = &self.nodes[s];
            (n.lo, n.bits, n.prefix, n.things)
        };
        let c = self.new_node(lo, bits, prefix, frames, cost)?;
        cost.reads += 1 << bits;
        for i in 0..1u32 << bits {
            let e = self.nodes[s].slots[i as usize];
            if e != Slot::Empty {
                self.set(At::In(c, i), e, cost);
            }
        }
        self.nodes[c].things = things;
        self.set(at, self.entry(c, false), cost);
        self.release(s, frames, cost);
        Ok(())
    }

    /// Drop one reference to a shared segment's node; the last frees it.
    fn release(&mut self, s: u32, frames: &mut dyn FrameAllocator, cost: &mut UpdateCost) {
        self.nodes[s].shared -= 1;
        if self.nodes[s].shared == 0 {
            for i in 0..self.nodes[s].slots.len() as u32 {
                if self.nodes[s].slots[i as usize] != Slot::Empty {
                    self.set(At::In(s, i), Slot::Empty, cost);
                }
            }
            self.free_node(s, frames);
        }
    }

    /// After a removal below the entry at `path`'s end: a node left empty goes, a
    /// node left with one thing gives it to its parent's entry (a root only takes a
    /// node).
    fn collapse(&mut self, path: &[At], frames: &mut dyn FrameAllocator, cost: &mut UpdateCost) {
        let Some((&at, above)) = path.split_last() else {
            return;
        };
        let Slot::Node { node: n, .. } = self.get(at) else {
            return;
        };
        match self.nodes[n].things {
            0 => {
                self.set(at, Slot::Empty, cost);
                self.free_node(n, frames);
                if let At::In(p, _) = at {
                    self.nodes[p].things -= 1;
                    self.collapse(above, frames, cost);
                }
            }
            1 => {
                let slots = &self.nodes[n].slots;
                let j = slots
                    .iter()
                    .position(|e| *e != Slot::Empty)
                    .expect("one thing");
                let only = slots[j];
                cost.reads += j as u64 + 1;
                match (at, only) {
                    (At::Root(_), Slot::Leaf(_) | Slot::Link { .. }) => return,
                    (_, Slot::Leaf(l)) => {
                        for i in self.span(n, l.virt, l.shift as u32) {
                            self.set(At::In(n, i as u32), Slot::Empty, cost);
                        }
                    }
                    _ => self.nodes[n].slots[j] = Slot::Empty,
                }
                self.set(at, only, cost);
                self.free_node(n, frames);
            }
            _ => {}
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
        let mut cost = UpdateCost::NONE;
        match self.insert(asid, va.0, size.shift(), Slot::Leaf(pte), frames, &mut cost) {
            Ok(()) => Ok(cost),
            Err(Refused::Map(e)) => Err(e),
            Err(Refused::WouldReplicate) => unreachable!("pages may be replicated"),
        }
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
        for i in span {
            self.set(At::In(n, i as u32), Slot::Empty, &mut cost);
        }
        self.nodes[n].things -= 1;
        self.collapse(&path, frames, &mut cost);
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
        let (_, n, span) = self.find_private(asid, va, size, frames, &mut cost)?;
        cost.writes += span.len() as u64;
        for slot in &mut self.nodes[n].slots[span] {
            if let Slot::Leaf(pte) = slot {
                pte.perms = perms;
            }
        }
        Ok(cost)
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
                    self.collapse(&path, frames, &mut cost);
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
        // Fig. 6: p = p->ptr + (v << p->skip >> p->size) until p points to a leaf.
        loop {
            match p {
                Slot::Node { node, skip, size } | Slot::Link { node, skip, size } => {
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
                            perms: pte.perms,
                        });
                    }
                    return walk;
                }
                Slot::Empty => return walk,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::SimpleAllocator;

    const SIZES: [PageSize; 3] = [PageSize::K4, PageSize::M2, PageSize::G1];

    fn leaf(virt: u64, shift: u8, pfn: u64) -> Slot {
        Slot::Leaf(Pte {
            virt,
            shift,
            pfn,
            perms: Perms::RW,
            next: None,
        })
    }

    #[test]
    fn fig6_indexing_on_a_hand_built_tree() {
        // Root → A: 16 entries on bits [30, 34) (skip 30, size 60) → entry 5 →
        // B: 512 entries on bits [12, 21) (skip 43, size 55): bits [21, 30) are
        // skipped, and only the leaf checks them.
        let mut pt = VariableRadixPageTable::new(4, 16, &SIZES);
        let node = |lo, bits, addr, slots: Vec<Slot>| Node {
            lo,
            bits,
            prefix: 0,
            addr: PhysAddr(addr),
            slots,
            things: 1,
            shared: 0,
            hint: 4,
        };
        let va: u64 = 5 << 30 | 0x1ab << 21 | 7 << 12;
        let mut b = vec![Slot::Empty; 512];
        b[7] = leaf(va, 12, 0x4242);
        let mut a = vec![Slot::Empty; 16];
        a[5] = Slot::Node {
            node: 1,
            skip: 43,
            size: 55,
        };
        pt.nodes = vec![node(30, 4, 0x10_0000, a), node(12, 9, 0x20_0000, b)].into();
        pt.roots = vec![Slot::Node {
            node: 0,
            skip: 30,
            size: 60,
        }];
        assert_eq!(pt.entry(0, false), pt.roots[0]);
        assert_eq!(pt.entry(1, false), pt.nodes[0].slots[5]);
        // The two shifts pick the field out of the address.
        assert_eq!(index(va, 30, 60), 5);
        assert_eq!(index(va, 43, 55), 7);
        let w = pt.walk(Asid(0), VirtAddr(va + 0x123));
        assert_eq!(
            w.refs(),
            &[PhysAddr(0x10_0000 + 5 * 32), PhysAddr(0x20_0000 + 7 * 32)]
        );
        assert_eq!(
            w.translation.unwrap().phys(VirtAddr(va + 0x123)),
            PhysAddr(0x4242_123)
        );
        // A skipped bit differs: the same two entries are read and the leaf refuses.
        let w = pt.walk(Asid(0), VirtAddr(va ^ 1 << 25));
        assert_eq!(w.refs().len(), 2);
        assert!(w.translation.is_none());
        // An empty entry of B.
        assert!(pt
            .walk(Asid(0), VirtAddr(va + 0x1000))
            .translation
            .is_none());
    }

    fn map(pt: &mut VariableRadixPageTable, f: &mut SimpleAllocator, va: u64, size: PageSize) {
        let pfn = Pfn(va >> 12 & 0xffff_ffff);
        pt.map(Asid(0), VirtAddr(va), size, pfn, Perms::RW, f)
            .unwrap();
    }

    #[test]
    fn a_dense_region_is_level_compressed() {
        let mut f = SimpleAllocator::new(1 << 22);
        let mut pt = VariableRadixPageTable::new(4, 16, &SIZES);
        let base = 0x7f00_0000_0000u64;
        for p in 0..4096u64 {
            map(&mut pt, &mut f, base + (p << 12), PageSize::K4);
        }
        // 4096 pages under one 4096-entry node: a single reference per lookup.
        for p in [0u64, 1, 255, 256, 4095] {
            let w = pt.walk(Asid(0), VirtAddr(base + (p << 12)));
            assert_eq!(
                w.translation.unwrap().pfn,
                Pfn((base >> 12) + p & 0xffff_ffff)
            );
            assert_eq!(w.refs().len(), 1, "page {p}");
        }
        assert_eq!(pt.footprint_bytes(), 4096 * 32);
        for p in 0..4096u64 {
            let va = VirtAddr(base + (p << 12));
            pt.unmap(Asid(0), va, PageSize::K4, &mut f).unwrap();
        }
        assert_eq!((pt.footprint_bytes(), f.used_frames()), (0, 0));
    }

    #[test]
    fn sparse_pages_are_path_compressed() {
        let mut f = SimpleAllocator::new(1 << 22);
        let mut pt = VariableRadixPageTable::new(4, 16, &SIZES);
        let vas = [
            0x1000u64,
            0x7fff_ffff_f000,
            0xffff_8000_0000_0000,
            0x5555_5555_5000,
        ];
        for &va in &vas {
            map(&mut pt, &mut f, va, PageSize::K4);
        }
        for &va in &vas {
            let w = pt.walk(Asid(0), VirtAddr(va));
            assert!(w.translation.is_some());
            // Four levels in the x86-64 radix table.
            assert!(w.refs().len() <= 3, "{va:#x}: {} levels", w.refs().len());
        }
    }

    #[test]
    fn superpages_factorized_or_expanded() {
        let mut f = SimpleAllocator::new(1 << 22);
        let sizes = [PageSize::K4, PageSize::K64, PageSize::M2];
        let mut pt = VariableRadixPageTable::new(8, 16, &sizes);
        // A 4K page makes the root's node, 256 entries on [12, 20). A 64K page beside
        // it spans 16 of them: expanded into replicas, which costs no memory.
        map(&mut pt, &mut f, 0x7000_0000, PageSize::K4);
        let before = pt.footprint_bytes();
        map(&mut pt, &mut f, 0x7001_0000, PageSize::K64);
        assert_eq!(pt.footprint_bytes(), before);
        for va in [0x7001_0000u64, 0x7001_ffff] {
            let t = pt.walk(Asid(0), VirtAddr(va)).translation.unwrap();
            assert_eq!((t.size, t.pfn), (PageSize::K64, Pfn(0x70010)));
        }
        assert_eq!(
            pt.ptes_of_frame(Pfn(0x70010)).len(),
            16,
            "each replica is a PTE"
        );
        // A 2M page elsewhere is factorized: one leaf in an entry of a new top node
        // that starts at 2M, read in one reference.
        map(&mut pt, &mut f, 0x4000_0000, PageSize::M2);
        let w = pt.walk(Asid(0), VirtAddr(0x4012_3456));
        assert_eq!(
            (w.refs().len(), w.translation.unwrap().size),
            (1, PageSize::M2)
        );
        assert_eq!(pt.ptes_of_frame(Pfn(0x40000)).len(), 1);
        pt.protect(
            Asid(0),
            VirtAddr(0x7001_0000),
            PageSize::K64,
            Perms::NONE,
            &mut f,
        )
        .unwrap();
        let t = pt.walk(Asid(0), VirtAddr(0x7001_f000)).translation.unwrap();
        assert_eq!(t.perms, Perms::NONE);
        assert_eq!(
            pt.map(
                Asid(0),
                VirtAddr(0x7001_8000),
                PageSize::K4,
                Pfn(1),
                Perms::RW,
                &mut f
            ),
            Err(MapError::Overlap)
        );
        let pages = [
            (0x7001_0000, PageSize::K64),
            (0x7000_0000, PageSize::K4),
            (0x4000_0000, PageSize::M2),
        ];
        for (va, size) in pages {
            pt.unmap(Asid(0), VirtAddr(va), size, &mut f).unwrap();
        }
        assert!(pt.ptes_of_frame(Pfn(0x70010)).is_empty());
        assert_eq!(f.used_frames(), 0);
    }

    #[test]
    fn shared_segments_are_cross_linked_and_copied_on_change() {
        let mut f = SimpleAllocator::new(1 << 22);
        let mut pt = VariableRadixPageTable::new(4, 16, &SIZES);
        // 64 pages at a 256 KiB boundary, in three address spaces.
        let seg = Segment {
            va: VirtAddr(0x10_0004_0000),
            size: PageSize::K4,
            pages: 64,
            pfn: Pfn(0x800),
            perms: Perms::RW,
        };
        let asids = [Asid(1), Asid(2), Asid(3)];
        pt.map_shared(&asids, &seg, &mut f).unwrap();
        for &a in &asids {
            let w = pt.walk(a, VirtAddr(0x10_0004_5123));
            assert_eq!(w.translation.unwrap().pfn, Pfn(0x805));
        }
        // One PTE per page for all three.
        assert_eq!(pt.ptes_of_frame(Pfn(0x805)).len(), 1);
        // Protecting one page in address space 2 gives it its own copy.
        pt.protect(
            Asid(2),
            VirtAddr(0x10_0004_5000),
            PageSize::K4,
            Perms::NONE,
            &mut f,
        )
        .unwrap();
        assert_eq!(pt.ptes_of_frame(Pfn(0x805)).len(), 2);
        let perms = |a| {
            pt.walk(a, VirtAddr(0x10_0004_5000))
                .translation
                .unwrap()
                .perms
        };
        assert_eq!((perms(Asid(1)), perms(Asid(2))), (Perms::RW, Perms::NONE));
        // The link comes off 1 and 3; address space 2 unmaps its copy page by page.
        for &a in &asids {
            pt.unmap_shared(a, &seg, &mut f).unwrap();
            assert!(pt.walk(a, VirtAddr(0x10_0004_5000)).translation.is_none());
        }
        assert!(pt.ptes_of_frame(Pfn(0x805)).is_empty());
        assert_eq!(f.used_frames(), 0);
        // A private mapping of the same frame in two spaces: two PTEs on its list.
        map(&mut pt, &mut f, 0x5000, PageSize::K4);
        pt.map(
            Asid(1),
            VirtAddr(0x9000),
            PageSize::K4,
            Pfn(5),
            Perms::RW,
            &mut f,
        )
        .unwrap();
        let ptes = pt.ptes_of_frame(Pfn(5));
        assert_eq!(
            ptes.iter().map(|p| p.1).collect::<Vec<_>>(),
            [VirtAddr(0x9000), VirtAddr(0x5000)]
        );
    }
}
