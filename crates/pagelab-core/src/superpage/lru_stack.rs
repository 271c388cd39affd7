//! The recency of TLB entries as a fully associative LRU TLB would keep them: a
//! stack of entries, the most recently referenced on top, bounded in depth. The
//! `online` policy asks it, at a miss, which entries were referenced since the page
//! that missed was last referenced (those that pushed it out of an LRU TLB).
//!
//! A doubly linked list threaded through a vector, and a hash map from entry to its
//! node: moving an entry to the top is O(1); an entry pushed below the bound is
//! forgotten. Finding the entries above one walks the list from the top.

use crate::addr::{Asid, PageSize, VirtAddr};
use rustc_hash::FxHashMap;

/// An entry: its address space, the log2 size of the page it maps, and the page's
/// number at that size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub asid: Asid,
    pub shift: u8,
    pub page: u64,
}

impl Key {
    pub fn of(asid: Asid, va: VirtAddr, size: PageSize) -> Key {
        Key {
            asid,
            shift: size.shift() as u8,
            page: va.0 >> size.shift(),
        }
    }
    /// The first address of the page.
    pub fn va(&self) -> u64 {
        self.page << self.shift
    }
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Node {
    key: Key,
    up: u32,
    down: u32,
}

pub struct RecencyStack {
    nodes: Vec<Node>,
    free: Vec<u32>,
    at: FxHashMap<Key, u32>,
    top: u32,
    bottom: u32,
    depth: usize,
}

impl RecencyStack {
    /// A stack that remembers the `depth` most recent entries.
    pub fn new(depth: usize) -> RecencyStack {
        RecencyStack {
            nodes: Vec::new(),
            free: Vec::new(),
            at: FxHashMap::default(),
            top: NIL,
            bottom: NIL,
            depth: depth.max(1),
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// Whether `key` is on top (referenced last).
    #[inline]
    pub fn on_top(&self, key: &Key) -> bool {
        self.top != NIL && self.nodes[self.top as usize].key == *key
    }

    /// `key` was referenced: it goes on top.
    pub fn touch(&mut self, key: Key) {
        if self.on_top(&key) {
            return;
        }
        let n = match self.at.get(&key) {
            Some(&n) => {
                self.unlink(n);
                n
            }
            None => {
                if self.at.len() >= self.depth {
                    let last = self.bottom;
                    self.remove_node(last);
                }
                let n = match self.free.pop() {
                    Some(n) => n,
                    None => {
                        self.nodes.push(Node {
                            key,
                            up: NIL,
                            down: NIL,
                        });
                        (self.nodes.len() - 1) as u32
                    }
                };
                self.nodes[n as usize].key = key;
                self.at.insert(key, n);
                n
            }
        };
        let node = &mut self.nodes[n as usize];
        node.up = NIL;
        node.down = self.top;
        if self.top != NIL {
            self.nodes[self.top as usize].up = n;
        } else {
            self.bottom = n;
        }
        self.top = n;
    }

    /// The entries referenced since `key` was, most recent first, pushed to `out`:
    /// false (and `out` untouched) if `key` is not in the stack.
    pub fn above(&self, key: &Key, out: &mut Vec<Key>) -> bool {
        let Some(&target) = self.at.get(key) else {
            return false;
        };
        let mut n = self.top;
        while n != target {
            let node = &self.nodes[n as usize];
            out.push(node.key);
            n = node.down;
        }
        true
    }

    /// Forget every entry for which `gone` says so.
    pub fn forget(&mut self, mut gone: impl FnMut(&Key) -> bool) {
        let mut n = self.top;
        while n != NIL {
            let next = self.nodes[n as usize].down;
            if gone(&self.nodes[n as usize].key) {
                self.remove_node(n);
            }
            n = next;
        }
    }

    fn remove_node(&mut self, n: u32) {
        self.unlink(n);
        self.at.remove(&self.nodes[n as usize].key);
        self.free.push(n);
    }

    fn unlink(&mut self, n: u32) {
        let Node { up, down, .. } = self.nodes[n as usize];
        if up != NIL {
            self.nodes[up as usize].down = down;
        } else {
            self.top = down;
        }
        if down != NIL {
            self.nodes[down as usize].up = up;
        } else {
            self.bottom = up;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn k(page: u64) -> Key {
        Key {
            asid: Asid(0),
            shift: 12,
            page,
        }
    }

    proptest! {
        /// Against a plain vector kept most recent first and cut at the bound.
        #[test]
        fn agrees_with_a_vector(ops in proptest::collection::vec((0u64..24, 0u8..8), 1..400), depth in 1usize..16) {
            let mut s = RecencyStack::new(depth);
            let mut v: Vec<Key> = Vec::new();
            for (page, op) in ops {
                if op == 0 {
                    s.forget(|x| x.page % 3 == page % 3);
                    v.retain(|x| x.page % 3 != page % 3);
                } else {
                    let mut got = Vec::new();
                    let found = s.above(&k(page), &mut got);
                    let pos = v.iter().position(|x| *x == k(page));
                    prop_assert_eq!(found, pos.is_some());
                    if let Some(p) = pos {
                        prop_assert_eq!(&got[..], &v[..p]);
                    }
                    s.touch(k(page));
                    if let Some(p) = pos {
                        v.remove(p);
                    }
                    v.insert(0, k(page));
                    v.truncate(depth);
                }
                prop_assert_eq!(s.len(), v.len());
            }
        }
    }
}
