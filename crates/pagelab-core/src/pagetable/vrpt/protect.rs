//! Protection on internal entries (Szmajda and Heiser, "Variable Radix Page Table",
//! ACSAC 2003, §4.3): "the internal nodes [...] contain protection bits which qualify
//! all underneath PTEs", so that "protection operations on whole memory segments may be
//! implemented by modifying the internal node rather than every leaf PTE".
//!
//! An internal entry may hold rights (`prot`) that every page under it has, whatever
//! its own entry says; the walk keeps the topmost such rights it passes (one more
//! select in Fig. 6's loop; the paper accumulates with an AND, which gives the same
//! rights only when the leaves below hold at least them, so pagelab lets the entry
//! decide instead). [`PageTable::protect_range`] writes the rights into the entry of
//! every node wholly inside the range, and into the leaves of the nodes it covers in
//! part. An update to one page under such an entry first pushes its rights down one
//! level at a time ([`VariableRadixPageTable::unshadow`]): into the leaves and the
//! child entries of the node, each a write.

use super::*;

impl VariableRadixPageTable {
    /// The keys node `n` covers: `[start, end)`.
    fn node_span(&self, n: u32) -> (u128, u128) {
        let node = &self.nodes[n];
        let start = node.prefix as u128;
        (start, start + (1u128 << (node.lo + node.bits)))
    }

    /// The rights the internal entry at `at` gives, if it is one.
    fn prot_of(&self, at: At) -> Option<Perms> {
        match self.get(at) {
            Slot::Node { prot, .. } | Slot::Link { prot, .. } => prot,
            _ => None,
        }
    }

    /// Set the rights the internal entry at `at` gives.
    fn set_prot(&mut self, at: At, to: Option<Perms>, cost: &mut UpdateCost) {
        let slot = match at {
            At::Root(a) => &mut self.roots[a.0 as usize],
            At::In(n, i) => {
                cost.writes += 1;
                &mut self.nodes[n].slots[i as usize]
            }
        };
        if let Slot::Node { prot, .. } | Slot::Link { prot, .. } = slot {
            *prot = to;
        }
    }

    /// Move the rights of the internal entry at `at` (a node's, or a link's after
    /// copying the segment) into the leaves and child entries of its node.
    pub(super) fn push_down(
        &mut self,
        at: At,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<(), MapError> {
        let Some(p) = self.prot_of(at) else {
            return Ok(());
        };
        if let Slot::Link { .. } = self.get(at) {
            self.privatize(at, frames, cost)?;
        }
        let Slot::Node { node: n, .. } = self.get(at) else {
            unreachable!("an entry with rights leads to a node")
        };
        cost.reads += self.nodes[n].slots.len() as u64;
        for slot in &mut self.nodes[n].slots {
            match slot {
                Slot::Leaf(pte) => pte.perms = p,
                Slot::Node { prot, .. } | Slot::Link { prot, .. } => *prot = Some(p),
                Slot::Empty => continue,
            }
            cost.writes += 1;
        }
        self.set_prot(at, None, cost);
        Ok(())
    }

    /// Before an update of the page of `s` bits at `va` in `asid`: no entry above it
    /// gives rights any more (they are pushed down along its path).
    pub(super) fn unshadow(
        &mut self,
        asid: Asid,
        va: u64,
        s: u32,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<(), MapError> {
        let mut at = At::Root(asid);
        loop {
            let n = match self.get(at) {
                Slot::Node { node, .. } | Slot::Link { node, .. } => node,
                _ => return Ok(()),
            };
            let (start, end) = self.node_span(n);
            if (va as u128) < start
                || va as u128 >= end
                || s >= self.nodes[n].lo + self.nodes[n].bits
            {
                return Ok(());
            }
            self.push_down(at, frames, cost)?;
            // A link's node holds pages only.
            let Slot::Node { node: n, .. } = self.get(at) else {
                return Ok(());
            };
            let span = self.span(n, va, s);
            if span.len() > 1 {
                return Ok(());
            }
            at = At::In(n, span.start as u32);
        }
    }

    /// Whether every page under the entry at `at` that meets `[lo, hi)` lies in it.
    fn whole_pages(&self, at: At, lo: u128, hi: u128) -> bool {
        match self.get(at) {
            Slot::Leaf(pte) => {
                let start = pte.virt as u128;
                let end = start + (1u128 << pte.shift);
                end <= lo || hi <= start || (lo <= start && end <= hi)
            }
            Slot::Node { node: n, .. } | Slot::Link { node: n, .. } => {
                let (start, end) = self.node_span(n);
                if end <= lo || hi <= start || (lo <= start && end <= hi) {
                    return true;
                }
                self.entries_meeting(n, lo, hi)
                    .all(|i| self.whole_pages(At::In(n, i), lo, hi))
            }
            Slot::Empty => true,
        }
    }

    /// The entries of node `n` whose keys meet `[lo, hi)`.
    fn entries_meeting(&self, n: u32, lo: u128, hi: u128) -> std::ops::Range<u32> {
        let (start, end) = self.node_span(n);
        let node = &self.nodes[n];
        let first = (lo.max(start) - start) >> node.lo;
        let last = (hi.min(end) - 1 - start) >> node.lo;
        first as u32..last as u32 + 1
    }

    /// Give `p` to every page under the entry at `at` in `[lo, hi)`: in the entry if
    /// its node lies wholly inside, else in its entries one by one.
    fn give(
        &mut self,
        at: At,
        lo: u128,
        hi: u128,
        p: Perms,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<(), MapError> {
        match self.get(at) {
            Slot::Leaf(pte) => {
                let At::In(n, i) = at else {
                    unreachable!("a root holds only nodes")
                };
                // A leaf may sit in an entry wider than its page: it may lie outside.
                let start = pte.virt as u128;
                if start + (1u128 << pte.shift) <= lo || hi <= start {
                    return Ok(());
                }
                cost.writes += 1;
                if let Slot::Leaf(pte) = &mut self.nodes[n].slots[i as usize] {
                    pte.perms = p;
                }
            }
            Slot::Node { node: n, .. } | Slot::Link { node: n, .. } => {
                let (start, end) = self.node_span(n);
                if end <= lo || hi <= start {
                    return Ok(());
                }
                if lo <= start && end <= hi {
                    self.set_prot(at, Some(p), cost);
                    return Ok(());
                }
                // Part of a shared segment changes here only: this space's copy.
                if let Slot::Link { .. } = self.get(at) {
                    self.privatize(at, frames, cost)?;
                }
                self.push_down(at, frames, cost)?;
                let Slot::Node { node: n, .. } = self.get(at) else {
                    unreachable!("a link was copied into a node")
                };
                for i in self.entries_meeting(n, lo, hi) {
                    cost.reads += 1;
                    self.give(At::In(n, i), lo, hi, p, frames, cost)?;
                }
            }
            Slot::Empty => {}
        }
        Ok(())
    }

    /// [`PageTable::protect_range`] for this structure.
    pub(super) fn protect_in(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        bytes: u64,
        perms: Perms,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        let (lo, hi) = range_of(&self.sizes, va, bytes)?;
        let root = At::Root(asid);
        if self.roots.len() <= asid.0 as usize {
            return Ok(UpdateCost::NONE);
        }
        if !self.whole_pages(root, lo, hi) {
            return Err(MapError::Misaligned);
        }
        let mut cost = UpdateCost::NONE;
        self.give(root, lo, hi, perms, frames, &mut cost)?;
        Ok(cost)
    }
}
