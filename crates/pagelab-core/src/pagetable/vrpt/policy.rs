//! The radix policy: how wide a new level is, and when emptied levels go back.
//!
//! **greedy** (the default; Szmajda and Heiser, "Variable Radix Page Table", ACSAC
//! 2003, §3.2): "a smart allocator, based on the buddy system, which 'greedily'
//! allocates the largest levels possible with the available contiguous physical
//! memory". A new node indexes every address bit it may, from the largest page it holds
//! up to its parent's field, at most `max_node_bits` of them; when the frame allocator
//! has no free block that large, the levels kept empty (below) go back first, and then
//! the node is one bit narrower, until a block is found. Its field sits directly above
//! the pages it holds (no bits skipped below it) unless it must reach up to the bit
//! where its two keys differ. Growth then rarely needs a new level, and no level is
//! restructured. Nodes left empty by unmapping stay in place ("frees such page tables
//! lazily, only when required"): they go back to the allocator when a map finds no
//! memory for a node, and when the machine's fault handler finds none for a frame
//! ([`PageTable::give_back`]). Taking back part of a node still in use (the paper's
//! "some or all of the memory") is not modelled: only wholly empty nodes go back.
//!
//! **grow** (pagelab's earlier rule): a new node starts at `node_bits` bits (its
//! parent's last child width, if it has one) and is merged with its children into one
//! wider node when that costs no more memory (level compression after the fact); an
//! emptied node goes back at once, and a node left with one thing gives it to its
//! parent.

use super::*;

/// How new levels are sized and when emptied ones are freed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RadixPolicy {
    /// §3.2: the widest levels the allocator can give, freed lazily.
    #[default]
    Greedy,
    /// Narrow levels merged as they fill, freed at once.
    Grow,
}

/// A field `[lo, lo + bits)` for a new node below `top` that holds bit `d` and lies
/// at or above `lo_min`, `w` bits wide if it can: no skip above it if possible (the
/// grow rule).
pub(super) fn choose(lo_min: u32, top: u32, d: u32, w: u32) -> (u32, u32) {
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
    /// A new node below a field starting at bit `limit` (64 at a root), holding things
    /// of at most `lo_min` bits whose keys first differ at bit `d` (`lo_min` for one
    /// thing); `width` is the grow rule's choice.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn level(
        &mut self,
        lo_min: u32,
        limit: u32,
        d: u32,
        width: u32,
        key: u64,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<u32, MapError> {
        if self.policy == RadixPolicy::Grow {
            let (lo, bits) = choose(lo_min, limit, d, width);
            return self.new_node(lo, bits, key, frames, cost);
        }
        let mut w = (limit - lo_min).min(self.max_node_bits);
        loop {
            let lo = if d < lo_min + w { lo_min } else { d + 1 - w };
            match self.new_node(lo, w, key, frames, cost) {
                Err(MapError::OutOfMemory) if w > 1 && self.narrow => w -= 1,
                made => return made,
            }
        }
    }

    /// Insert page `pte` of `s` bits at `va`, as `map` does.
    pub(super) fn insert_page(
        &mut self,
        asid: Asid,
        va: u64,
        s: u32,
        pte: Pte,
        frames: &mut dyn FrameAllocator,
    ) -> Result<UpdateCost, MapError> {
        // A full-width level if one can be had, taking back the levels kept empty
        // (§3.2) if that is what it takes; else a narrower one.
        let attempt = |t: &mut Self, narrow, frames: &mut dyn FrameAllocator| {
            t.narrow = narrow;
            let mut cost = UpdateCost::NONE;
            let r = t.insert(asid, va, s, Slot::Leaf(pte), frames, &mut cost);
            t.narrow = true;
            match r {
                Ok(()) => Ok(cost),
                Err(Refused::Map(e)) => Err(e),
                Err(Refused::WouldReplicate) => unreachable!("pages may be replicated"),
            }
        };
        match attempt(self, false, frames) {
            Err(MapError::OutOfMemory) => {
                if self.reclaim(frames) {
                    if let Ok(cost) = attempt(self, false, frames) {
                        return Ok(cost);
                    }
                }
                attempt(self, true, frames)
            }
            done => done,
        }
    }

    /// Lazy freeing: every node left empty goes back to `frames`. Whether any did.
    pub(super) fn reclaim(&mut self, frames: &mut dyn FrameAllocator) -> bool {
        let mut freed = false;
        for a in 0..self.roots.len() {
            if let Slot::Node { node, .. } = self.roots[a] {
                if self.prune(node, frames, &mut freed) {
                    self.roots[a] = Slot::Empty;
                }
            }
        }
        freed
    }

    /// If the entry at `at` holds a level with nothing below it (kept lazily), free
    /// it and empty the entry: whether it did.
    pub(super) fn clear_empty(
        &mut self,
        at: At,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> bool {
        let Slot::Node { node, .. } = self.get(at) else {
            return false;
        };
        if !self.prune(node, frames, &mut false) {
            return false;
        }
        self.set(at, Slot::Empty, cost);
        if let At::In(p, _) = at {
            self.nodes[p].things -= 1;
        }
        true
    }

    /// Free the empty nodes below node `n`, and `n` if it is empty then: whether it was.
    fn prune(&mut self, n: u32, frames: &mut dyn FrameAllocator, freed: &mut bool) -> bool {
        for i in 0..self.nodes[n].slots.len() {
            if let Slot::Node { node: c, .. } = self.nodes[n].slots[i] {
                if self.prune(c, frames, freed) {
                    self.nodes[n].slots[i] = Slot::Empty;
                    self.nodes[n].things -= 1;
                }
            }
        }
        if self.nodes[n].things > 0 {
            return false;
        }
        self.free_node(n, frames);
        *freed = true;
        true
    }
}
