//! LRU TLBs against the LRU stack-distance characterization (Mattson et al.): a fully
//! associative LRU array of N entries misses exactly on the references whose reuse
//! distance (distinct pages touched since the last reference to the same page; first
//! references are infinitely far) is at least N. A set-associative LRU array of S sets
//! and W ways behaves as S independent fully associative arrays of W entries, the page
//! going to set `vpn mod S`. The oracle is a brute-force LRU stack kept in a Vec.

use pagelab_core::addr::{Asid, PageSize, Pfn, VirtAddr};
use pagelab_core::config::{SetAssocConfig, TlbConfig};
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::pagetable::{Perms, Translation};
use pagelab_core::replacement::Lru;
use pagelab_core::tlb::{SetAssocTlb, Tlb};
use pagelab_core::{Machine, MachineConfig};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

const CAPACITIES: [usize; 5] = [1, 2, 4, 8, 64];

/// An LRU stack, most recent first.
struct Stack<K: PartialEq + Copy> {
    stack: Vec<K>,
}

impl<K: PartialEq + Copy> Stack<K> {
    fn new() -> Self {
        Stack { stack: Vec::new() }
    }
    /// Reference `key`: its reuse distance (`None` for a first reference) and move it to
    /// the top.
    fn touch(&mut self, key: K) -> Option<usize> {
        let distance = self.stack.iter().position(|&k| k == key);
        if let Some(d) = distance {
            self.stack.remove(d);
        }
        self.stack.insert(0, key);
        distance
    }
}

/// Per reference: does an LRU array of `capacity` entries miss? (distance ≥ capacity)
fn oracle_misses<K: PartialEq + Copy>(
    keys: impl IntoIterator<Item = K>,
    capacity: usize,
) -> Vec<bool> {
    let mut stack = Stack::new();
    keys.into_iter()
        .map(|k| stack.touch(k).map_or(true, |d| d >= capacity))
        .collect()
}

/// Per reference: does `S` independent LRU stacks of `ways` entries, keyed by vpn mod S, miss?
fn oracle_set_misses(pages: &[u64], sets: usize, ways: usize) -> Vec<bool> {
    let mut stacks: Vec<Stack<u64>> = (0..sets).map(|_| Stack::new()).collect();
    pages
        .iter()
        .map(|&p| {
            stacks[(p % sets as u64) as usize]
                .touch(p)
                .map_or(true, |d| d >= ways)
        })
        .collect()
}

fn translation(vpn: u64) -> Translation {
    Translation {
        pfn: Pfn(vpn),
        size: PageSize::K4,
        perms: Perms::RW,
    }
}

/// Per reference: does the TLB miss? Fills after every miss; checks what hits return.
fn tlb_misses(
    tlb: &mut SetAssocTlb<Lru>,
    pages: &[u64],
    offsets: &[u16],
) -> Result<Vec<bool>, TestCaseError> {
    let mut out = Vec::with_capacity(pages.len());
    for (i, &p) in pages.iter().enumerate() {
        let va = VirtAddr(p << 12 | (offsets[i % offsets.len()] as u64 & 0xfff));
        match tlb.lookup(Asid(0), va) {
            Some(t) => {
                prop_assert_eq!(
                    t.pfn,
                    Pfn(p),
                    "reference {} (page {:#x}) hit a wrong entry",
                    i,
                    p
                );
                prop_assert_eq!(t.size, PageSize::K4);
                out.push(false);
            }
            None => {
                tlb.fill(Asid(0), va, translation(p));
                out.push(true);
            }
        }
    }
    let stats = tlb.stats();
    let misses = out.iter().filter(|&&m| m).count() as u64;
    prop_assert_eq!(
        (stats.hits, stats.misses),
        (pages.len() as u64 - misses, misses)
    );
    Ok(out)
}

fn first_difference(a: &[bool], b: &[bool]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// Page streams with locality: uniform over a small range, loops (the LRU worst case
/// when a loop is one page longer than the TLB), and mixtures of phases with their own
/// base and range, some far apart.
fn page_stream() -> impl Strategy<Value = Vec<u64>> {
    let uniform = (1u64..=80, any::<u32>()).prop_flat_map(|(range, base)| {
        prop::collection::vec(0..range, 0..500).prop_map(move |v| {
            let base = base as u64;
            v.into_iter().map(|p| base + p).collect::<Vec<_>>()
        })
    });
    let looping = (
        1u64..=70,
        1usize..6,
        prop::collection::vec(0u64..200, 0..40),
    )
        .prop_map(|(len, reps, noise)| {
            let mut v: Vec<u64> = (0..reps).flat_map(|_| 0..len).collect();
            // A few stray pages spliced in.
            for (i, n) in noise.into_iter().enumerate() {
                let at = (n as usize * 7 + i * 13) % (v.len() + 1);
                v.insert(at, n + 1000);
            }
            v
        });
    let phase = (
        0u64..(1 << 35),
        1u64..=70,
        prop::collection::vec(any::<u64>(), 1..120),
    )
        .prop_map(|(base, range, xs)| {
            xs.into_iter()
                .map(|x| (base + x % range) % (1 << 35))
                .collect::<Vec<_>>()
        });
    let mixture = prop::collection::vec(phase, 1..6).prop_map(|phases| phases.concat());
    let interleaved = (
        prop::collection::vec(0u64..6, 0..300),
        prop::collection::vec(0u64..300, 0..300),
    )
        .prop_map(|(hot, cold)| {
            // A hot set of 6 pages interleaved with a colder set of 300.
            let mut v = Vec::new();
            let n = hot.len().max(cold.len());
            for i in 0..n {
                if let Some(&h) = hot.get(i) {
                    v.push(h);
                }
                if let Some(&c) = cold.get(i) {
                    if i % 3 == 0 {
                        v.push(10_000 + c);
                    }
                }
            }
            v
        });
    prop_oneof![uniform, looping, mixture, interleaved]
}

fn machine(sets: usize, ways: usize) -> Machine {
    let mut config = MachineConfig::default();
    config.tlb = TlbConfig::SetAssociative(SetAssocConfig {
        sets,
        ways,
        replacement: "lru".into(),
        page_sizes: vec![PageSize::K4],
        hit_cycles: 0.0,
    });
    Machine::build(&config).expect("the configuration is valid")
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(2048))]

    /// Fully associative: per reference, hit/miss is decided by the stack distance.
    #[test]
    fn fully_associative_lru_misses_at_distance_n(
        pages in page_stream(),
        offsets in prop::collection::vec(any::<u16>(), 1..16),
    ) {
        for n in CAPACITIES {
            let mut tlb = SetAssocTlb::<Lru>::new(1, n, &[PageSize::K4], 0);
            let got = tlb_misses(&mut tlb, &pages, &offsets)?;
            let want = oracle_misses(pages.iter().copied(), n);
            prop_assert!(
                got == want,
                "N = {}: first difference at reference {:?} (TLB miss {:?}, oracle miss {:?})",
                n,
                first_difference(&got, &want),
                first_difference(&got, &want).map(|i| got[i]),
                first_difference(&got, &want).map(|i| want[i]),
            );
        }
    }

    /// Set-associative: S independent LRU stacks of W entries keyed by vpn mod S.
    #[test]
    fn set_associative_lru_is_independent_stacks(
        pages in page_stream(),
        sets in prop::sample::select(vec![1usize, 2, 3, 4, 5, 7, 8, 16]),
        ways in prop::sample::select(vec![1usize, 2, 3, 4, 8]),
        offsets in prop::collection::vec(any::<u16>(), 1..16),
    ) {
        let mut tlb = SetAssocTlb::<Lru>::new(sets, ways, &[PageSize::K4], 0);
        let got = tlb_misses(&mut tlb, &pages, &offsets)?;
        let want = oracle_set_misses(&pages, sets, ways);
        prop_assert!(
            got == want,
            "{} sets × {} ways: first difference at reference {:?}",
            sets,
            ways,
            first_difference(&got, &want),
        );
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// Through the whole machine (page walks, demand paging, fills): the TLB miss count
    /// is the number of references at distance ≥ N. References of size 1 never cross a
    /// page, so each is one translation. Address spaces are part of the key.
    #[test]
    fn machine_misses_match_stack_distance(
        pages in page_stream(),
        asids in prop::collection::vec(0u16..3, 1..8),
        offsets in prop::collection::vec(any::<u16>(), 1..16),
        multi_asid in any::<bool>(),
    ) {
        let refs: Vec<MemRef> = pages
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let va = p << 12 | (offsets[i % offsets.len()] as u64 & 0xfff);
                let mut r = MemRef::new(va, 1, AccessKind::ALL[i % 4]);
                if multi_asid {
                    r.asid = Asid(asids[(p as usize + i / 50) % asids.len()]);
                }
                r
            })
            .collect();
        let keys: Vec<(Asid, u64)> = refs.iter().map(|r| (r.asid, r.addr.0 >> 12)).collect();
        for n in CAPACITIES {
            let mut m = machine(1, n);
            // In two batches, to cross a batch boundary.
            let half = refs.len() / 2;
            m.run_batch(&Batch { refs: refs[..half].to_vec(), events: vec![] }).unwrap();
            m.run_batch(&Batch { refs: refs[half..].to_vec(), events: vec![] }).unwrap();
            let want = oracle_misses(keys.iter().copied(), n).iter().filter(|&&m| m).count() as u64;
            let c = m.counts();
            prop_assert_eq!(c.translations, refs.len() as u64);
            let tlb = &m.report().levels[0];
            prop_assert_eq!(tlb.misses, want, "N = {}", n);
            prop_assert_eq!(tlb.hits, refs.len() as u64 - want, "N = {}", n);
            let mut distinct = keys.clone();
            distinct.sort();
            distinct.dedup();
            prop_assert_eq!(c.page_faults, distinct.len() as u64, "one fault per page");
        }
    }

    /// The machine with S sets × W ways against S independent stacks.
    #[test]
    fn machine_set_associative_misses(
        pages in page_stream(),
        sets in prop::sample::select(vec![1usize, 2, 3, 4, 6, 16]),
        ways in prop::sample::select(vec![1usize, 2, 4]),
    ) {
        let refs: Vec<MemRef> =
            pages.iter().map(|&p| MemRef::new(p << 12, 1, AccessKind::Load)).collect();
        let mut m = machine(sets, ways);
        m.run_batch(&Batch { refs, events: vec![] }).unwrap();
        let want = oracle_set_misses(&pages, sets, ways).iter().filter(|&&m| m).count() as u64;
        prop_assert_eq!(m.report().levels[0].misses, want, "{} sets × {} ways", sets, ways);
    }
}

/// The classic case by hand: a loop one page longer than the TLB misses every time;
/// a loop that fits misses only on its first pass.
#[test]
fn loops_longer_than_the_tlb_always_miss() {
    for n in CAPACITIES {
        for len in [n, n + 1] {
            let pages: Vec<u64> = (0..4).flat_map(|_| 0..len as u64).collect();
            let mut tlb = SetAssocTlb::<Lru>::new(1, n, &[PageSize::K4], 0);
            let misses = pages
                .iter()
                .filter(|&&p| {
                    let va = VirtAddr(p << 12);
                    let miss = tlb.lookup(Asid(0), va).is_none();
                    if miss {
                        tlb.fill(Asid(0), va, translation(p));
                    }
                    miss
                })
                .count();
            let expected = if len == n { len } else { pages.len() };
            assert_eq!(misses, expected, "N = {n}, loop of {len}");
            assert_eq!(
                oracle_misses(pages.iter().copied(), n)
                    .iter()
                    .filter(|&&m| m)
                    .count(),
                expected
            );
        }
    }
}
