//! Growing the tree: inserting a page or a link, and (under the grow policy) merging a
//! node with the level below it.

use super::*;

impl VariableRadixPageTable {
    /// Insert a page (or a link) `x` of `shift` at `va` into `asid`'s tree.
    pub(super) fn insert(
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
        // No entry above gives its rights to what is inserted.
        self.unshadow(asid, va, s, frames, cost)?;
        let mut at = At::Root(asid);
        // Where the entries of the nodes above `at` live.
        let mut path: Vec<At> = Vec::new();
        loop {
            match self.get(at) {
                Slot::Empty => {
                    match at {
                        At::Root(_) => {
                            let n = self.level(s, 64, s, self.node_bits, va, frames, cost)?;
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
                        let m =
                            self.level(top.max(s), limit, d, self.node_bits, va, frames, cost)?;
                        self.nodes[m].hint = bits;
                        let old = self.get(at);
                        self.place(m, prefix, 0, old, cost);
                        self.place(m, va, s, x, cost);
                        self.set(at, self.entry(m, false), cost);
                        if let (At::In(p, _), RadixPolicy::Grow) = (at, self.policy) {
                            self.try_merge(p, &path, frames, cost);
                        }
                        return Ok(());
                    }
                    if s >= top {
                        // Only an emptied level, kept lazily, may be in the way.
                        if self.clear_empty(at, frames, cost) {
                            continue;
                        }
                        return Err(MapError::Overlap.into());
                    }
                    let span = self.span(n, va, s);
                    if span.len() > 1 {
                        if matches!(x, Slot::Link { .. }) {
                            return Err(Refused::WouldReplicate);
                        }
                        cost.reads += span.len() as u64;
                        for i in span.clone() {
                            self.clear_empty(At::In(n, i as u32), frames, cost);
                        }
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
                    let m = self.level(sm, lo, d, hint, va, frames, cost)?;
                    self.set(at, Slot::Empty, cost);
                    self.place(m, vy, sy, thing, cost);
                    self.place(m, va, s, x, cost);
                    self.set(at, self.entry(m, false), cost);
                    if self.policy == RadixPolicy::Grow {
                        self.try_merge(p, &path, frames, cost);
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Level compression: merge node `p` (its entry at `path`'s end) with its
    /// children when they all have one width, lie directly below it, and the merged
    /// node needs no more memory than `p` and them. Then try `p`'s parent.
    pub(super) fn try_merge(
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
                // A child whose entry gives rights stays a level of its own.
                Slot::Node { prot: Some(_), .. } => return,
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
        let mut entry = self.entry(q, false);
        if let (Slot::Node { prot, .. }, Slot::Node { prot: was, .. }) =
            (&mut entry, self.get(at_p))
        {
            *prot = was;
        }
        self.set(at_p, entry, cost);
        if let At::In(pp, _) = at_p {
            self.try_merge(pp, above, frames, cost);
        }
    }
}
