//! Finding a page and updating around it: locating the entries above a page, giving an
//! address space a private copy of a shared segment, releasing and collapsing nodes.

use super::*;

impl VariableRadixPageTable {
    /// The page of `shift` at `va` in `asid`, or the link over it, with the
    /// places of the internal entries above.
    pub(super) fn locate(
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
    pub(super) fn find_private(
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
    pub(super) fn privatize(
        &mut self,
        at: At,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<(), MapError> {
        let Slot::Link { node: s, prot, .. } = self.get(at) else {
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
        let mut entry = self.entry(c, false);
        if let Slot::Node { prot: p, .. } = &mut entry {
            *p = prot;
        }
        self.set(at, entry, cost);
        self.release(s, frames, cost);
        Ok(())
    }

    /// Drop one reference to a shared segment's node; the last frees it.
    pub(super) fn release(
        &mut self,
        s: u32,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) {
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
    pub(super) fn collapse(
        &mut self,
        path: &[At],
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) {
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
                let mut only = slots[j];
                cost.reads += j as u64 + 1;
                // The rights the node's entry gave go with its only thing.
                if let Slot::Node { prot: Some(p), .. } = self.get(at) {
                    match &mut only {
                        Slot::Leaf(pte) => pte.perms = p,
                        Slot::Node { prot, .. } | Slot::Link { prot, .. } => *prot = Some(p),
                        Slot::Empty => {}
                    }
                }
                match (at, only) {
                    (At::Root(_), Slot::Leaf(_) | Slot::Link { .. }) => return,
                    (_, Slot::Leaf(l)) => {
                        for i in self.span(n, l.virt, l.shift as u32).rev() {
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
