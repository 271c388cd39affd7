//! The range table (Gandhi et al., "Range Translations for Fast Virtual Memory", IEEE
//! Micro 2016, "Range Table", Fig. 5): a per-process B-tree keyed by (BASE, LIMIT),
//! each node holding up to four range translations sorted by BASE and five children,
//! "allowing up to 124 range translations in three levels". A node fits in two cache
//! lines; a walk reads every node on its path, so it costs two memory references (two
//! distinct lines) a node.
//!
//! The operating system changes ranges only at allocation events (eager paging makes
//! them, unmapping shrinks or splits them), so the table keeps its ranges as a sorted
//! list and rebuilds the tree from it after each change, as the shallowest B-tree that
//! holds them (every leaf at one depth, nodes filled evenly). A lookup descends that
//! tree as the hardware walker would; the tests check it against the list.
//!
//! Each table also keeps which of its ranges' pages were touched, one bit a page, for
//! the bloat eager paging costs (memory allocated but never used). The bits are cells,
//! set through a shared reference by whatever translated the page (a range-TLB hit, a
//! range walk) without a mutable borrow of the table in the TLB's hot path.

use super::Range;
use crate::addr::Asid;
use rustc_hash::FxHashMap;
use std::cell::Cell;

/// Ranges a node holds at most (Fig. 5).
pub const NODE_RANGES: usize = 4;
/// Memory references (and distinct cache lines) a walk spends on one node.
pub const NODE_LINES: u64 = 2;
const NONE: u32 = u32::MAX;

/// One B-tree node: `n` ranges (indices into the table's list, ascending) and, unless
/// a leaf, `n + 1` children.
#[derive(Clone, Copy, Debug)]
struct Node {
    n: u8,
    ranges: [u32; NODE_RANGES],
    children: [u32; NODE_RANGES + 1],
}

/// What a lookup found and what it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub range: Option<Range>,
    /// Nodes on the path, root first (each [`NODE_LINES`] references).
    pub nodes: u32,
}

/// An overlap refused by [`RangeTable::insert`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the range [{base:#x}, {limit:#x}) overlaps one the table holds")]
pub struct Overlap {
    pub base: u64,
    pub limit: u64,
}

pub struct RangeTable {
    /// Disjoint, by base.
    ranges: Vec<Range>,
    nodes: Vec<Node>,
    root: u32,
    depth: u32,
    /// Touched pages, by [`Range::mark`]; grows as ranges are made, never shrinks.
    touched: Vec<Cell<u64>>,
    marks: u64,
    /// The process's direct segment, if the OS gave it one (one of its ranges).
    segment: Option<Range>,
}

impl Default for RangeTable {
    fn default() -> Self {
        RangeTable {
            ranges: Vec::new(),
            nodes: Vec::new(),
            root: NONE,
            depth: 0,
            touched: Vec::new(),
            marks: 0,
            segment: None,
        }
    }
}

impl RangeTable {
    /// The ranges, by base.
    pub fn ranges(&self) -> &[Range] {
        &self.ranges
    }

    /// The direct segment (see [`crate::range::tlb`]).
    #[inline]
    pub fn segment(&self) -> Option<Range> {
        self.segment
    }
    pub fn set_segment(&mut self, segment: Option<Range>) {
        self.segment = segment;
    }

    /// Levels of the tree (0 when empty).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Nodes of the tree.
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Add a range of `pages` pages from `base`, reaching frames from `pfn`: the
    /// range as stored (with its touched-pages bits assigned), or the overlap.
    pub fn insert(
        &mut self,
        base: u64,
        pages: u64,
        pfn: u64,
        perms: crate::pagetable::Perms,
    ) -> Result<Range, Overlap> {
        let limit = base + pages;
        let at = self.ranges.partition_point(|r| r.base < base);
        let clash_before = at > 0 && self.ranges[at - 1].limit > base;
        let clash_after = self.ranges.get(at).is_some_and(|r| r.base < limit);
        if pages == 0 || clash_before || clash_after {
            return Err(Overlap { base, limit });
        }
        let range = Range {
            base,
            limit,
            pfn,
            perms,
            mark: self.marks,
        };
        self.marks += pages;
        self.touched
            .resize_with(self.marks.div_ceil(64) as usize, Default::default);
        self.ranges.insert(at, range);
        self.rebuild();
        Ok(range)
    }

    /// Grow the range ending at page `base` by `pages` pages reaching frames from
    /// `pfn`, if that range's frames end at `pfn` too (one range then maps both);
    /// the grown range, else `None` (nothing changes).
    pub fn extend(&mut self, base: u64, pages: u64, pfn: u64) -> Option<Range> {
        let at = self.ranges.partition_point(|r| r.base < base);
        let prev = at.checked_sub(1)?;
        let r = self.ranges[prev];
        let room = self.ranges.get(at).map_or(u64::MAX, |n| n.base);
        // The grown range's bits must follow its own: only the newest range grows.
        if r.limit != base || r.pfn + r.pages() != pfn || base + pages > room {
            return None;
        }
        if r.mark + r.pages() != self.marks {
            return None;
        }
        self.marks += pages;
        self.touched
            .resize_with(self.marks.div_ceil(64) as usize, Default::default);
        self.ranges[prev].limit += pages;
        self.rebuild();
        Some(self.ranges[prev])
    }

    /// Take pages `[from, to)` out of every range: a range inside goes, one across an
    /// end shrinks, one around the hole splits. The pieces removed, in order.
    pub fn remove(&mut self, from: u64, to: u64) -> Vec<Range> {
        let mut removed = Vec::new();
        let mut kept = Vec::with_capacity(self.ranges.len() + 1);
        for r in &self.ranges {
            match r.clip(from, to) {
                None => kept.push(*r),
                Some(gone) => {
                    removed.push(gone);
                    kept.extend(r.clip(r.base, from));
                    kept.extend(r.clip(to, r.limit));
                }
            }
        }
        if !removed.is_empty() {
            self.ranges = kept;
            self.rebuild();
        }
        removed
    }

    /// The range holding page `vpn`, as the walker finds it: descending from the root,
    /// in each node the first range whose LIMIT lies above `vpn` either holds it or
    /// has the child to descend into on its left; past every range, the last child.
    pub fn lookup(&self, vpn: u64) -> Found {
        let mut node = self.root;
        let mut nodes = 0;
        while node != NONE {
            let n = &self.nodes[node as usize];
            nodes += 1;
            let mut next = n.children[n.n as usize];
            for i in 0..n.n as usize {
                let r = &self.ranges[n.ranges[i] as usize];
                if vpn < r.limit {
                    if vpn >= r.base {
                        return Found {
                            range: Some(*r),
                            nodes,
                        };
                    }
                    next = n.children[i];
                    break;
                }
            }
            node = next;
        }
        Found { range: None, nodes }
    }

    /// Note that page `vpn` of `range` (a range of this table) was used.
    #[inline]
    pub fn touch(&self, range: &Range, vpn: u64) {
        let bit = range.mark + (vpn - range.base);
        let word = &self.touched[(bit >> 6) as usize];
        word.set(word.get() | 1 << (bit & 63));
    }

    /// Note that pages `[from, to)` of `range` were used.
    pub fn touch_span(&self, range: &Range, from: u64, to: u64) {
        for vpn in from.max(range.base)..to.min(range.limit) {
            self.touch(range, vpn);
        }
    }

    /// Pages of the table's ranges that were never used.
    pub fn untouched_pages(&self) -> u64 {
        self.ranges.iter().map(|r| self.untouched(r)).sum()
    }

    /// Pages of `range` (one of this table's, or a piece taken out of one) never used.
    pub fn untouched(&self, r: &Range) -> u64 {
        (r.mark..r.mark + r.pages())
            .filter(|&b| self.touched[(b >> 6) as usize].get() & (1 << (b & 63)) == 0)
            .count() as u64
    }

    /// The shallowest B-tree over the ranges: depth d holds up to 5^d − 1 of them.
    fn rebuild(&mut self) {
        self.nodes.clear();
        let n = self.ranges.len();
        self.depth = 0;
        while capacity(self.depth) < n as u64 {
            self.depth += 1;
        }
        self.root = if n == 0 {
            NONE
        } else {
            self.build(0, n as u32, self.depth)
        };
    }

    /// A subtree of `depth` levels over ranges `[lo, hi)`: the node's index.
    fn build(&mut self, lo: u32, hi: u32, depth: u32) -> u32 {
        let n = hi - lo;
        let mut node = Node {
            n: 0,
            ranges: [NONE; NODE_RANGES],
            children: [NONE; NODE_RANGES + 1],
        };
        if depth == 1 {
            debug_assert!(n as usize <= NODE_RANGES);
            node.n = n as u8;
            for i in 0..n {
                node.ranges[i as usize] = lo + i;
            }
        } else {
            // As few children as can hold them, each taking an even share of the
            // ranges that are not separators.
            let below = capacity(depth - 1) + 1;
            let children = (n as u64 + 1).div_ceil(below).max(2) as u32;
            let share = n - (children - 1);
            let mut start = lo;
            for c in 0..children {
                let size = share / children + u32::from(c < share % children);
                node.children[c as usize] = self.build(start, start + size, depth - 1);
                start += size;
                if c + 1 < children {
                    node.ranges[c as usize] = start;
                    start += 1;
                }
            }
            node.n = (children - 1) as u8;
        }
        self.nodes.push(node);
        (self.nodes.len() - 1) as u32
    }

    /// Check the tree's shape: every node within Fig. 5's bounds, every leaf at one
    /// depth, the ranges in order in an in-order traversal. For tests.
    pub fn check(&self) -> Result<(), String> {
        let mut order = Vec::new();
        if self.root != NONE {
            self.visit(self.root, 1, &mut order)?;
        }
        let all: Vec<u32> = (0..self.ranges.len() as u32).collect();
        if order != all {
            return Err(format!("in-order ranges {order:?}, not {all:?}"));
        }
        for w in self.ranges.windows(2) {
            if w[0].limit > w[1].base {
                return Err(format!("{:?} overlaps {:?}", w[0], w[1]));
            }
        }
        Ok(())
    }

    fn visit(&self, node: u32, level: u32, order: &mut Vec<u32>) -> Result<(), String> {
        let n = &self.nodes[node as usize];
        let leaf = n.children[0] == NONE;
        if n.n == 0 || n.n as usize > NODE_RANGES {
            return Err(format!("node {node} holds {} ranges", n.n));
        }
        if leaf != (level == self.depth) {
            return Err(format!("node {node} at level {level} of {}", self.depth));
        }
        for i in 0..=n.n as usize {
            if !leaf {
                self.visit(n.children[i], level + 1, order)?;
            }
            if i < n.n as usize {
                order.push(n.ranges[i]);
            }
        }
        Ok(())
    }
}

/// Ranges a tree of `depth` levels holds at most: 5^depth − 1.
fn capacity(depth: u32) -> u64 {
    (NODE_RANGES as u64 + 1).pow(depth) - 1
}

/// The range tables of every address space.
#[derive(Default)]
pub struct RangeTables {
    tables: FxHashMap<Asid, RangeTable>,
}

impl RangeTables {
    /// The table of `asid`, if it has one.
    #[inline]
    pub fn get(&self, asid: Asid) -> Option<&RangeTable> {
        self.tables.get(&asid)
    }
    pub fn table_mut(&mut self, asid: Asid) -> &mut RangeTable {
        self.tables.entry(asid).or_default()
    }
    /// Every table, by address space.
    pub fn iter(&self) -> impl Iterator<Item = (Asid, &RangeTable)> {
        let mut all: Vec<_> = self.tables.iter().map(|(a, t)| (*a, t)).collect();
        all.sort_by_key(|(a, _)| *a);
        all.into_iter()
    }
    /// Look page `vpn` of `asid` up, as the range walker does.
    #[inline]
    pub fn lookup(&self, asid: Asid, vpn: u64) -> Found {
        match self.tables.get(&asid) {
            Some(t) => t.lookup(vpn),
            None => Found {
                range: None,
                nodes: 0,
            },
        }
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
