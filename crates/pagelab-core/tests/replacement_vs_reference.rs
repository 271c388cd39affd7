//! Every replacement policy, in a set-associative array, against a brute-force model
//! of the same policy written here from the policy's documented definition: per set, a
//! Vec of the entries its ways hold, and the policy's state kept explicitly — a recency
//! list for LRU, a fill queue for FIFO, reference bits for NRU, a tree of nodes for
//! tree-PLRU, the SplitMix64 sequence for random. On random streams of references,
//! single-page invalidations and flushes, over random shapes, the array must hit and
//! miss on exactly the references the model does, and evict as often.
//!
//! The array is `SetAssocTlb<P>` through the `Tlb` trait, for every `P` registered in
//! `for_each_policy!`; a policy without a model here fails the test.

use pagelab_core::addr::{Asid, PageSize, Pfn, VirtAddr};
use pagelab_core::pagetable::{Perms, Translation};
use pagelab_core::replacement::*;
use pagelab_core::tlb::{SetAssocTlb, Tlb};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::collections::VecDeque;

/// A tree-PLRU node: a leaf is a way; an inner node's flag says where the victim
/// search goes.
enum Node {
    Leaf(usize),
    Inner {
        go_right: bool,
        left: Box<Node>,
        right: Box<Node>,
    },
}

impl Node {
    /// Ways `[lo, hi)`, the left part taking the larger half.
    fn build(lo: usize, hi: usize) -> Node {
        if hi - lo == 1 {
            return Node::Leaf(lo);
        }
        let mid = lo + (hi - lo).div_ceil(2);
        Node::Inner {
            go_right: false,
            left: Box::new(Node::build(lo, mid)),
            right: Box::new(Node::build(mid, hi)),
        }
    }

    /// Point every node above `way` away from it; whether `way` is under this node.
    fn touch(&mut self, way: usize) -> bool {
        match self {
            Node::Leaf(w) => *w == way,
            Node::Inner {
                go_right,
                left,
                right,
            } => {
                if left.touch(way) {
                    *go_right = true;
                    true
                } else if right.touch(way) {
                    *go_right = false;
                    true
                } else {
                    false
                }
            }
        }
    }

    fn victim(&self) -> usize {
        match self {
            Node::Leaf(w) => *w,
            Node::Inner {
                go_right,
                left,
                right,
            } => {
                if *go_right {
                    right.victim()
                } else {
                    left.victim()
                }
            }
        }
    }
}

/// SplitMix64 as random.rs documents it, written again here.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E3779B97F4A7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// The state of one policy over a whole array.
enum Model {
    /// Per set, the ways most recently touched first.
    Lru(Vec<Vec<usize>>),
    /// Per set, the filled ways in fill order, oldest first.
    Fifo(Vec<VecDeque<usize>>),
    /// Per set, the reference bit of every way.
    Nru(Vec<Vec<bool>>),
    /// Per set, the tree.
    Plru(Vec<Node>),
    /// The generator state, shared by the sets.
    Random(u64),
}

impl Model {
    fn new(name: &str, sets: usize, ways: usize, seed: u64) -> Option<Model> {
        Some(match name {
            "lru" => Model::Lru(vec![Vec::new(); sets]),
            "fifo" => Model::Fifo(vec![VecDeque::new(); sets]),
            "nru" => Model::Nru(vec![vec![false; ways]; sets]),
            "plru" => Model::Plru((0..sets).map(|_| Node::build(0, ways)).collect()),
            "random" => Model::Random(seed),
            _ => return None,
        })
    }

    fn hit(&mut self, set: usize, way: usize) {
        match self {
            Model::Lru(order) => {
                order[set].retain(|&w| w != way);
                order[set].insert(0, way);
            }
            Model::Nru(bits) => {
                let bits = &mut bits[set];
                bits[way] = true;
                if bits.iter().all(|&b| b) {
                    for (w, b) in bits.iter_mut().enumerate() {
                        *b = w == way;
                    }
                }
            }
            Model::Plru(trees) => {
                trees[set].touch(way);
            }
            Model::Fifo(_) | Model::Random(_) => {}
        }
    }

    fn fill(&mut self, set: usize, way: usize) {
        match self {
            Model::Fifo(queues) => {
                queues[set].retain(|&w| w != way);
                queues[set].push_back(way);
            }
            _ => self.hit(set, way),
        }
    }

    fn victim(&mut self, set: usize, ways: usize) -> usize {
        match self {
            Model::Lru(order) => *order[set].last().expect("a full set was touched"),
            Model::Fifo(queues) => *queues[set].front().expect("a full set was filled"),
            Model::Nru(bits) => bits[set].iter().position(|&b| !b).unwrap_or(0),
            Model::Plru(trees) => trees[set].victim(),
            Model::Random(state) => ((next_random(state) as u128 * ways as u128) >> 64) as usize,
        }
    }

    fn invalidate(&mut self, set: usize, way: usize) {
        match self {
            Model::Lru(order) => order[set].retain(|&w| w != way),
            Model::Fifo(queues) => queues[set].retain(|&w| w != way),
            Model::Nru(bits) => bits[set][way] = false,
            Model::Plru(_) | Model::Random(_) => {}
        }
    }
}

/// The brute-force array: per set, what each way holds.
struct Reference {
    sets: usize,
    ways: usize,
    held: Vec<Vec<Option<(u16, u64)>>>,
    model: Model,
    evictions: u64,
}

impl Reference {
    fn new(model: Model, sets: usize, ways: usize) -> Reference {
        Reference {
            sets,
            ways,
            held: vec![vec![None; ways]; sets],
            model,
            evictions: 0,
        }
    }

    /// Reference `page` of `asid`: true on a hit; a miss fills the first free way,
    /// else the policy's victim.
    fn reference(&mut self, asid: u16, page: u64) -> bool {
        let set = (page % self.sets as u64) as usize;
        if let Some(way) = self.held[set].iter().position(|&e| e == Some((asid, page))) {
            self.model.hit(set, way);
            return true;
        }
        let way = match self.held[set].iter().position(|e| e.is_none()) {
            Some(free) => free,
            None => {
                self.evictions += 1;
                self.model.victim(set, self.ways)
            }
        };
        self.held[set][way] = Some((asid, page));
        self.model.fill(set, way);
        false
    }

    fn invalidate(&mut self, asid: u16, page: u64) {
        let set = (page % self.sets as u64) as usize;
        if let Some(way) = self.held[set].iter().position(|&e| e == Some((asid, page))) {
            self.held[set][way] = None;
            self.model.invalidate(set, way);
        }
    }

    fn flush(&mut self) {
        for set in 0..self.sets {
            for way in 0..self.ways {
                if self.held[set][way].take().is_some() {
                    self.model.invalidate(set, way);
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Ref(u16, u64),
    Invalidate(u16, u64),
    Flush,
}

fn translation(page: u64) -> Translation {
    Translation {
        pfn: Pfn(page + 7),
        size: PageSize::K4,
        perms: Perms::RW,
    }
}

/// Per reference, whether the array hit; and its eviction count. Odd references go
/// through `lookup` (checking the frame), even ones through `access`.
fn run_array<P: Replacement>(
    sets: usize,
    ways: usize,
    seed: u64,
    ops: &[Op],
) -> Result<(Vec<bool>, u64), TestCaseError> {
    let mut tlb = SetAssocTlb::<P>::new(sets, ways, &[PageSize::K4], seed);
    let mut hits = Vec::new();
    for &op in ops {
        match op {
            Op::Ref(asid, page) => {
                let va = VirtAddr(page << 12 | 0x123);
                let hit = if hits.len() % 2 == 1 {
                    let found = tlb.lookup(Asid(asid), va);
                    if let Some(t) = found {
                        prop_assert_eq!(t.pfn, translation(page).pfn);
                    }
                    found.is_some()
                } else {
                    tlb.access(Asid(asid), va).is_some()
                };
                if !hit {
                    tlb.fill(Asid(asid), va, translation(page));
                }
                hits.push(hit);
            }
            Op::Invalidate(asid, page) => {
                tlb.invalidate_range(Asid(asid), VirtAddr(page << 12), 4096)
            }
            Op::Flush => tlb.flush_all(),
        }
    }
    let stats = tlb.stats();
    let n_hits = hits.iter().filter(|&&h| h).count() as u64;
    prop_assert_eq!(
        (stats.hits, stats.misses),
        (n_hits, hits.len() as u64 - n_hits)
    );
    Ok((hits, stats.evictions))
}

fn run_reference(name: &str, sets: usize, ways: usize, seed: u64, ops: &[Op]) -> (Vec<bool>, u64) {
    let model = Model::new(name, sets, ways, seed)
        .unwrap_or_else(|| panic!("policy {name:?} has no reference model in this test"));
    let mut r = Reference::new(model, sets, ways);
    let mut hits = Vec::new();
    for &op in ops {
        match op {
            Op::Ref(asid, page) => hits.push(r.reference(asid, page)),
            Op::Invalidate(asid, page) => r.invalidate(asid, page),
            Op::Flush => r.flush(),
        }
    }
    (hits, r.evictions)
}

/// Runs the array of every registered policy: (name, hits per reference, evictions).
macro_rules! every_policy {
    ($($name:literal => $policy:ident,)*) => {
        fn run_every_policy(
            sets: usize,
            ways: usize,
            seed: u64,
            ops: &[Op],
        ) -> Result<Vec<(&'static str, Vec<bool>, u64)>, TestCaseError> {
            Ok(vec![$(
                {
                    let (hits, evictions) = run_array::<$policy>(sets, ways, seed, ops)?;
                    ($name, hits, evictions)
                },
            )*])
        }
    };
}
pagelab_core::for_each_policy!(every_policy);

/// Pages with reuse: a working set a little larger or smaller than the array, drawn
/// uniformly, in loops, or in phases; two address spaces; now and then an
/// invalidation or, rarely, a flush.
fn op_stream() -> impl Strategy<Value = Vec<Op>> {
    (1u64..=48, any::<u64>()).prop_flat_map(|(range, base)| {
        let base = base % (1 << 30);
        prop::collection::vec((0u32..100, 0u16..2, 0..range, any::<bool>()), 0..400).prop_map(
            move |raw| {
                raw.into_iter()
                    .enumerate()
                    .map(|(i, (kind, asid, p, looping))| {
                        // Loops sweep the range in order; others draw from it.
                        let page = base + if looping { i as u64 % range } else { p };
                        match kind {
                            0..=3 => Op::Invalidate(asid, page),
                            4 => Op::Flush,
                            _ => Op::Ref(asid, page),
                        }
                    })
                    .collect()
            },
        )
    })
}

fn first_difference(a: &[bool], b: &[bool]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn every_policy_matches_its_reference_model(
        ops in op_stream(),
        sets in prop::sample::select(vec![1usize, 2, 3, 4, 5, 7, 8, 16]),
        ways in prop::sample::select(vec![1usize, 2, 3, 4, 5, 6, 7, 8, 12, 16, 33, 64, 66, 130]),
        seed in any::<u64>(),
    ) {
        for (name, hits, evictions) in run_every_policy(sets, ways, seed, &ops)? {
            let (want, want_evictions) = run_reference(name, sets, ways, seed, &ops);
            prop_assert!(
                hits == want,
                "{}: {} sets × {} ways: first difference at reference {:?} (array hit {:?})",
                name, sets, ways,
                first_difference(&hits, &want),
                first_difference(&hits, &want).map(|i| hits[i]),
            );
            prop_assert_eq!(evictions, want_evictions, "{}: evictions", name);
        }
    }

    /// The machine credits a reference to the page just hit or filled without a
    /// lookup, so a repeated lookup must change nothing: with every reference made
    /// twice in a row, the first of each pair behaves as in the plain stream and the
    /// second always hits.
    #[test]
    fn a_repeated_reference_changes_nothing(
        ops in op_stream(),
        sets in prop::sample::select(vec![1usize, 2, 3, 8]),
        ways in prop::sample::select(vec![1usize, 2, 3, 4, 6, 8, 12]),
        seed in any::<u64>(),
    ) {
        let doubled: Vec<Op> = ops
            .iter()
            .flat_map(|&op| match op {
                Op::Ref(..) => vec![op, op],
                _ => vec![op],
            })
            .collect();
        let plain = run_every_policy(sets, ways, seed, &ops)?;
        let twice = run_every_policy(sets, ways, seed, &doubled)?;
        for ((name, hits, evictions), (_, hits2, evictions2)) in plain.iter().zip(&twice) {
            let firsts: Vec<bool> = hits2.iter().step_by(2).copied().collect();
            prop_assert!(&firsts == hits, "{}: {} sets × {} ways", name, sets, ways);
            prop_assert!(hits2.iter().skip(1).step_by(2).all(|&h| h), "{}: a repeat missed", name);
            prop_assert_eq!(evictions, evictions2, "{}", name);
        }
    }
}
