//! The cache model against plain references. A fully associative LRU level of N lines
//! misses exactly on the references whose reuse distance (distinct lines referenced
//! since the last reference to the same line; a first reference is infinitely far)
//! is at least N (Mattson et al.), the distance counted here by brute force. A
//! hierarchy behaves as one LRU list per set of every level, most recent first,
//! probed in order and filled on a miss; a flush removes the range from every list.

use super::{CacheAccess, CacheConfig, CacheHierarchy, CacheLevelConfig};
use crate::addr::PhysAddr;
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::collections::HashSet;

/// Per reference, the number of distinct lines referenced since the last reference
/// to its line; `None` for a first reference. Quadratic, and meant to be.
fn reuse_distances(lines: &[u64]) -> Vec<Option<usize>> {
    (0..lines.len())
        .map(|i| {
            let last = lines[..i].iter().rposition(|&l| l == lines[i])?;
            Some(lines[last + 1..i].iter().collect::<HashSet<_>>().len())
        })
        .collect()
}

/// The reference model: per level, per set, the lines held, most recent first.
struct Model {
    /// (sets, ways, lists of the level's sets).
    levels: Vec<(usize, usize, Vec<Vec<u64>>)>,
}

impl Model {
    fn new(config: &CacheConfig) -> Model {
        let levels = config.levels.iter();
        Model {
            levels: levels
                .map(|l| (l.sets, l.ways, vec![Vec::new(); l.sets]))
                .collect(),
        }
    }

    /// The level that holds `line` (None: memory); fills every level before it.
    fn access(&mut self, line: u64) -> Option<usize> {
        for (i, (sets, ways, lists)) in self.levels.iter_mut().enumerate() {
            let list = &mut lists[(line % *sets as u64) as usize];
            let held = list.iter().position(|&l| l == line);
            if let Some(at) = held {
                list.remove(at);
            }
            list.insert(0, line);
            list.truncate(*ways);
            if held.is_some() {
                return Some(i);
            }
        }
        None
    }

    fn flush(&mut self, first: u64, last: u64) {
        for (_, _, lists) in &mut self.levels {
            for list in lists {
                list.retain(|l| !(first..=last).contains(l));
            }
        }
    }

    fn holds(&self, level: usize, line: u64) -> bool {
        let (sets, _, lists) = &self.levels[level];
        lists[(line % *sets as u64) as usize].contains(&line)
    }
}

/// Line streams with locality: uniform over a small range, loops (the LRU worst case
/// when a loop is one line longer than the cache), and phases far apart.
fn line_stream() -> impl Strategy<Value = Vec<u64>> {
    let uniform = (1u64..=100, 0u64..1 << 40).prop_flat_map(|(range, base)| {
        prop::collection::vec(0..range, 0..400)
            .prop_map(move |v| v.into_iter().map(|x| base + x).collect::<Vec<_>>())
    });
    let looping = (1u64..=70, 1usize..5, 0u64..1 << 40)
        .prop_map(|(len, reps, base)| (0..reps).flat_map(|_| base..base + len).collect());
    let phase = (
        0u64..1 << 40,
        1u64..=70,
        prop::collection::vec(any::<u64>(), 1..100),
    )
        .prop_map(|(base, range, xs)| xs.into_iter().map(|x| base + x % range).collect());
    let phases = prop::collection::vec(phase, 1..5).prop_map(|p: Vec<Vec<u64>>| p.concat());
    prop_oneof![uniform, looping, phases]
}

fn line_bytes() -> impl Strategy<Value = u64> {
    prop::sample::select(vec![8u64, 64, 128, 4096])
}

/// The byte address of `line` at `offset` bytes into it.
fn address(line: u64, line_bytes: u64, offset: u64) -> PhysAddr {
    PhysAddr(line * line_bytes + offset % line_bytes)
}

fn one_level(sets: usize, ways: usize, line_bytes: u64) -> CacheConfig {
    CacheConfig {
        levels: vec![CacheLevelConfig {
            name: "l1d".into(),
            sets,
            ways,
            hit_cycles: 1.0,
            ..CacheLevelConfig::default()
        }],
        line_bytes,
        memory_cycles: 10.0,
    }
}

fn first_difference<T: PartialEq>(a: &[T], b: &[T]) -> Option<usize> {
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

    /// One set of N ways: per reference, a miss exactly at reuse distance ≥ N.
    #[test]
    fn fully_associative_misses_at_reuse_distance_n(
        lines in line_stream(),
        line_bytes in line_bytes(),
        offsets in prop::collection::vec(any::<u64>(), 1..16),
    ) {
        let distances = reuse_distances(&lines);
        for n in [1usize, 2, 3, 4, 8, 16, 64] {
            let mut cache = CacheHierarchy::new(&one_level(1, n, line_bytes)).unwrap();
            let got: Vec<bool> = lines
                .iter()
                .enumerate()
                .map(|(i, &l)| {
                    let a = address(l, line_bytes, offsets[i % offsets.len()]);
                    cache.access(a, CacheAccess::Data).reached_memory()
                })
                .collect();
            let want: Vec<bool> = distances.iter().map(|d| d.is_none_or(|d| d >= n)).collect();
            prop_assert!(
                got == want,
                "N = {}: first difference at reference {:?}",
                n,
                first_difference(&got, &want)
            );
            let misses = want.iter().filter(|&&m| m).count() as u64;
            let r = cache.report();
            prop_assert_eq!(r.levels[0].misses.data, misses);
            prop_assert_eq!(r.levels[0].hits.data, lines.len() as u64 - misses);
        }
    }

    /// One level of S sets × W ways: one LRU list per set, line mod S.
    #[test]
    fn set_associative_level_is_an_lru_list_per_set(
        lines in line_stream(),
        sets in prop::sample::select(vec![1usize, 2, 3, 4, 5, 7, 8, 16, 64]),
        ways in prop::sample::select(vec![1usize, 2, 3, 4, 8, 12, 16, 17, 24]),
        line_bytes in line_bytes(),
        offset in any::<u64>(),
    ) {
        let config = one_level(sets, ways, line_bytes);
        let mut cache = CacheHierarchy::new(&config).unwrap();
        let mut model = Model::new(&config);
        let mut got = Vec::new();
        let mut want = Vec::new();
        for (i, &l) in lines.iter().enumerate() {
            let a = address(l, line_bytes, offset.rotate_left(i as u32));
            got.push(cache.access(a, CacheAccess::Data).level);
            want.push(model.access(l));
        }
        prop_assert!(
            got == want,
            "{} sets × {} ways: first difference at reference {:?}",
            sets,
            ways,
            first_difference(&got, &want)
        );
        for &l in &lines {
            prop_assert_eq!(cache.holds(0, address(l, line_bytes, 0)), model.holds(0, l));
        }
    }

    /// Up to three levels of any shape, references of every kind and flushes of
    /// ranges mixed in: what serves each reference, what every level holds after each
    /// flush (no line of the range anywhere), and the report's counts.
    #[test]
    fn hierarchy_with_flushes_matches_the_model(
        lines in line_stream(),
        shapes in prop::collection::vec(
            (
                prop::sample::select(vec![1usize, 2, 3, 4, 8, 16]),
                prop::sample::select(vec![1usize, 2, 3, 4, 8, 12, 16, 20]),
            ),
            0..4,
        ),
        line_bytes in line_bytes(),
        ops in prop::collection::vec((any::<u8>(), any::<u64>()), 1..64),
    ) {
        let config = CacheConfig {
            levels: shapes
                .iter()
                .enumerate()
                .map(|(i, &(sets, ways))| CacheLevelConfig {
                    name: format!("l{i}"),
                    sets,
                    ways,
                    hit_cycles: (i + 1) as f64,
                    ..CacheLevelConfig::default()
                })
                .collect(),
            line_bytes,
            memory_cycles: 100.0,
        };
        let n = config.levels.len();
        let latency = |level: Option<usize>| level.map_or(100.0, |i| (i + 1) as f64);
        let mut cache = CacheHierarchy::new(&config).unwrap();
        let mut model = Model::new(&config);
        let mut seen: Vec<u64> = Vec::new();
        // served[level or n][kind]
        let mut served = vec![[0u64; 3]; n + 1];
        for (i, &l) in lines.iter().enumerate() {
            let (op, x) = ops[i % ops.len()];
            if op >= 240 {
                // A flush from this line: up to 80 lines (more than the largest
                // level's sets, so both ways of flushing are used) or, rarely, all
                // memory from it on.
                let start = address(l, line_bytes, x);
                let bytes = if op == 255 { u64::MAX } else { x % (80 * line_bytes) };
                cache.flush_range(start, bytes);
                if bytes > 0 {
                    let last = start.0.saturating_add(bytes - 1) / line_bytes;
                    model.flush(l, last);
                    for &s in seen.iter().filter(|&&s| (l..=last).contains(&s)) {
                        for level in 0..n {
                            prop_assert!(
                                !cache.holds(level, address(s, line_bytes, 0)),
                                "line {:#x} still in level {} after a flush of {:#x}..={:#x}",
                                s, level, l, last
                            );
                        }
                    }
                }
                continue;
            }
            let kind = CacheAccess::ALL[op as usize % 3];
            let s = cache.access(address(l, line_bytes, x), kind);
            let want = model.access(l);
            prop_assert_eq!(s.level, want, "reference {} (line {:#x})", i, l);
            prop_assert_eq!(s.cycles, latency(want));
            served[want.unwrap_or(n)][kind as usize] += 1;
            seen.push(l);
        }
        for &l in &seen {
            for level in 0..n {
                prop_assert_eq!(
                    cache.holds(level, address(l, line_bytes, 0)),
                    model.holds(level, l)
                );
            }
        }
        let r = cache.report();
        let mut below = [0u64; 3];
        for i in (0..n).rev() {
            for k in CacheAccess::ALL {
                below[k as usize] += served[i + 1][k as usize];
                prop_assert_eq!(r.levels[i].hits.get(k), served[i][k as usize]);
                prop_assert_eq!(r.levels[i].misses.get(k), below[k as usize]);
            }
        }
        for k in CacheAccess::ALL {
            prop_assert_eq!(r.memory_accesses.get(k), served[n][k as usize]);
            let cycles: f64 = (0..=n)
                .map(|i| served[i][k as usize] as f64 * latency((i < n).then_some(i)))
                .sum();
            prop_assert_eq!(r.cycles.get(k), cycles);
        }
    }
}

#[test]
fn reuse_distances_by_hand() {
    // a b a c b a: -, -, 1 (b), -, 2 (a c), 2 (c b)
    let d = reuse_distances(&[1, 2, 1, 3, 2, 1]);
    assert_eq!(d, [None, None, Some(1), None, Some(2), Some(2)]);
    assert_eq!(reuse_distances(&[7, 7]), [None, Some(0)]);
}

/// The classic case: a loop one line longer than a fully associative cache misses
/// every time; a loop that fits misses only on its first pass.
#[test]
fn loops_one_line_too_long_always_miss() {
    for n in [1usize, 4, 8, 16, 33] {
        for len in [n, n + 1] {
            let mut cache = CacheHierarchy::new(&one_level(1, n, 64)).unwrap();
            let misses = (0..4)
                .flat_map(|_| 0..len as u64)
                .filter(|&l| {
                    cache
                        .access(PhysAddr(l * 64), CacheAccess::Data)
                        .reached_memory()
                })
                .count();
            assert_eq!(misses, if len == n { len } else { 4 * len }, "N = {n}");
        }
    }
}
