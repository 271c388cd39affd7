//! The cache hierarchy: levels probed in order, the line filled into every level that
//! missed, each reference charged the latency of what served it, counts kept per
//! level and per kind of reference. Nothing on the per-reference path allocates.

use super::level::CacheLevel;
use super::report::{ratio, CacheLevelReport, CacheReport, PerKind};
use super::{CacheAccess, CacheConfig, Served, Touched};
use crate::addr::PhysAddr;

const KINDS: usize = CacheAccess::ALL.len();

/// A first-level data cache as small as a host's has (32 KiB): a cache level whose
/// tags fit in it needs no prefetching.
const HOST_L1_BYTES: usize = 32 << 10;

/// How many references of a stream ahead their sets are brought into the host's cache.
const AHEAD: usize = 8;

/// The levels of a [`CacheConfig`] and their counts. The levels start empty; the
/// counts cover every reference since.
#[derive(Clone, Debug)]
pub struct CacheHierarchy {
    levels: Vec<CacheLevel>,
    /// log2 of the smallest line of any level: the unit a reference and a copy step
    /// touch (its "line" below).
    line_shift: u32,
    /// Per level: log2 of its line over the unit (0 when its line is the smallest).
    level_shift: Vec<u32>,
    /// Per level, then memory: the latency of a reference it serves.
    latency: Vec<f64>,
    /// `served[i * KINDS + kind]`: references of `kind` that level `i` served (the
    /// last row: memory). Hits and misses per level follow, as a reference reaches a
    /// level exactly when every level before it missed.
    served: Vec<u64>,
    /// Per level: lines dropped by `flush_range`.
    flushed: Vec<u64>,
    /// The levels whose state outgrows the host's first-level cache, which
    /// [`CacheHierarchy::prefetch`] brings in (a smaller one stays there anyway).
    far: Vec<usize>,
    names: Vec<String>,
}

impl CacheHierarchy {
    /// Check `config` and build its levels, empty. With no levels (a configuration
    /// that [`CacheConfig::is_off`]) every reference goes to memory; a machine rather
    /// builds no hierarchy at all then.
    pub fn new(config: &CacheConfig) -> Result<CacheHierarchy, String> {
        config.check()?;
        let n = config.levels.len();
        let mut latency: Vec<f64> = config.levels.iter().map(|l| l.hit_cycles).collect();
        latency.push(config.memory_cycles);
        let shifts: Vec<u32> = (0..n)
            .map(|i| config.level_line_bytes(i).trailing_zeros())
            .collect();
        let line_shift = shifts
            .iter()
            .copied()
            .min()
            .unwrap_or(config.line_bytes.trailing_zeros());
        Ok(CacheHierarchy {
            levels: config
                .levels
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    CacheLevel::with_policy(l.sets, l.ways, &l.replacement, i as u64)
                        .expect("checked")
                })
                .collect(),
            line_shift,
            level_shift: shifts.iter().map(|s| s - line_shift).collect(),
            latency,
            served: vec![0; (n + 1) * KINDS],
            flushed: vec![0; n],
            far: (0..n)
                .filter(|&i| config.levels[i].sets * config.levels[i].ways * 8 > HOST_L1_BYTES)
                .collect(),
            names: config.levels.iter().map(|l| l.name.clone()).collect(),
        })
    }

    /// The smallest line of any level: what a reference touches at least.
    pub fn line_bytes(&self) -> u64 {
        1 << self.line_shift
    }

    /// The line size of level `i`.
    pub fn level_line_bytes(&self, i: usize) -> u64 {
        1 << (self.line_shift + self.level_shift[i])
    }

    /// Reference the line of `paddr`: the first level holding it serves it (and it
    /// becomes the most recently used line of its set there); every level before it
    /// missed and is filled. Counted as `kind`.
    #[inline]
    pub fn access(&mut self, paddr: PhysAddr, kind: CacheAccess) -> Served {
        self.access_line(paddr.0 >> self.line_shift, kind)
    }

    /// Bring the sets `paddr` would be looked up in into the host's cache, ahead of
    /// its access. Changes nothing simulated.
    #[inline]
    pub fn prefetch(&self, paddr: PhysAddr) {
        let line = paddr.0 >> self.line_shift;
        for &i in &self.far {
            self.levels[i].prefetch(line >> self.level_shift[i]);
        }
    }

    #[inline]
    fn access_line(&mut self, line: u64, kind: CacheAccess) -> Served {
        let by = self.serve(line, kind as usize);
        Served {
            level: (by < self.levels.len()).then_some(by),
            cycles: self.latency[by],
        }
    }

    /// Reference `line` as a reference of kind number `kind`: the level that served
    /// it (the number of levels: memory).
    #[inline(always)]
    fn serve(&mut self, line: u64, kind: usize) -> usize {
        let mut by = self.levels.len();
        for (i, (level, &shift)) in self.levels.iter_mut().zip(&self.level_shift).enumerate() {
            if level.access(line >> shift) {
                by = i;
                break;
            }
        }
        self.served[by * KINDS + kind] += 1;
        by
    }

    /// `paddr` and `kind` in one word, for [`CacheHierarchy::access_stream`]: the kind
    /// in the two low bits, which lie within a line (lines are 8 bytes or more).
    #[inline(always)]
    pub fn tagged(paddr: PhysAddr, kind: CacheAccess) -> u64 {
        paddr.0 & !3 | kind as u64
    }

    /// Reference each word of `stream` ([`CacheHierarchy::tagged`]) in order, as
    /// [`CacheHierarchy::access`] does; the sets of the reference [`AHEAD`] places on
    /// are brought into the host's cache first, so that the host's memory latency
    /// overlaps. A reference to the line the one before it reached hits the first
    /// level, where that line is the most recently used: under LRU the hit changes
    /// nothing but the count, which is all it makes then.
    pub fn access_stream(&mut self, stream: &[u64]) {
        let repeats_hit = self.levels.first().is_some_and(CacheLevel::is_lru);
        let mut last = u64::MAX;
        for (i, &word) in stream.iter().enumerate() {
            if let Some(&ahead) = stream.get(i + AHEAD) {
                self.prefetch(PhysAddr(ahead));
            }
            let (line, kind) = (
                word >> self.line_shift,
                CacheAccess::from_tag(word) as usize,
            );
            if repeats_hit && line == last {
                self.served[kind] += 1;
                continue;
            }
            last = line;
            self.serve(line, kind);
        }
    }

    /// The line numbers `first..=last` of the bytes `start..start + bytes`; `None`
    /// for no byte.
    fn lines(&self, start: PhysAddr, bytes: u64) -> Option<(u64, u64)> {
        let last_byte = start.0.saturating_add(bytes.checked_sub(1)?);
        Some((start.0 >> self.line_shift, last_byte >> self.line_shift))
    }

    /// Reference every line that holds a byte of `start..start + bytes`, in address
    /// order, each as [`CacheHierarchy::access`] does.
    pub fn touch_lines(&mut self, start: PhysAddr, bytes: u64, kind: CacheAccess) -> Touched {
        let mut t = Touched::default();
        if let Some((first, last)) = self.lines(start, bytes) {
            for line in first..=last {
                t.add(self.access_line(line, kind));
            }
        }
        t
    }

    /// Copy `bytes` from `src` to `dst` as a copy loop does: the first line of the
    /// source read, the first of the destination written, and so on (a write
    /// allocates, as a read does), every reference counted as
    /// [`CacheAccess::Copy`]. A 4 KiB page of 64-byte lines is 64 reads and 64
    /// writes.
    pub fn copy_range(&mut self, src: PhysAddr, dst: PhysAddr, bytes: u64) -> Touched {
        let mut t = Touched::default();
        let (Some((s0, s1)), Some((d0, d1))) = (self.lines(src, bytes), self.lines(dst, bytes))
        else {
            return t;
        };
        // Unaligned ranges may span one line more at one end than at the other.
        for k in 0..=(s1 - s0).max(d1 - d0) {
            if k <= s1 - s0 {
                t.add(self.access_line(s0 + k, CacheAccess::Copy));
            }
            if k <= d1 - d0 {
                t.add(self.access_line(d0 + k, CacheAccess::Copy));
            }
        }
        t
    }

    /// Drop every line holding a byte of `start..start + bytes` from every level (a
    /// remapping makes their copies stale): how many lines were dropped, counted at
    /// each level that held them.
    pub fn flush_range(&mut self, start: PhysAddr, bytes: u64) -> u64 {
        let Some((first, last)) = self.lines(start, bytes) else {
            return 0;
        };
        let mut dropped = 0;
        for (i, level) in self.levels.iter_mut().enumerate() {
            let shift = self.level_shift[i];
            let n = level.invalidate_range(first >> shift, (last >> shift).saturating_add(1));
            self.flushed[i] += n;
            dropped += n;
        }
        dropped
    }

    /// Whether level `level` holds the line of `paddr`, without touching it.
    pub fn holds(&self, level: usize, paddr: PhysAddr) -> bool {
        self.levels[level].holds(paddr.0 >> (self.line_shift + self.level_shift[level]))
    }

    /// References of each kind that level `i` served (`i` = the number of levels:
    /// memory).
    fn served_by(&self, i: usize) -> PerKind<u64> {
        let row = &self.served[i * KINDS..(i + 1) * KINDS];
        PerKind::from_array([row[0], row[1], row[2]])
    }

    pub fn report(&self) -> CacheReport {
        let n = self.levels.len();
        let mut levels = Vec::with_capacity(n);
        // References that missed every level so far: those served further down.
        let mut below = [0u64; KINDS];
        for i in (0..=n).rev() {
            let hits = self.served_by(i);
            if i < n {
                let misses = PerKind::from_array(below);
                let (sets, ways) = self.levels[i].shape();
                levels.push(CacheLevelReport {
                    name: self.names[i].clone(),
                    sets,
                    ways,
                    line_bytes: self.level_line_bytes(i),
                    size_bytes: (sets * ways) as u64 * self.level_line_bytes(i),
                    hit_cycles: self.latency[i],
                    hits,
                    misses,
                    cycles: PerKind::from_array(
                        CacheAccess::ALL.map(|k| hits.get(k) as f64 * self.latency[i]),
                    ),
                    miss_ratio: ratio(misses.total(), hits.total()),
                    flushed: self.flushed[i],
                });
            }
            for (b, kind) in below.iter_mut().zip(CacheAccess::ALL) {
                *b += hits.get(kind);
            }
        }
        levels.reverse();
        let cycles = CacheAccess::ALL.map(|kind| {
            (0..=n)
                .map(|i| self.served_by(i).get(kind) as f64 * self.latency[i])
                .sum()
        });
        CacheReport {
            levels,
            memory_cycles: self.latency[n],
            memory_accesses: self.served_by(n),
            cycles: PerKind::from_array(cycles),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::CacheLevelConfig;

    fn level(name: &str, sets: usize, ways: usize, hit_cycles: f64) -> CacheLevelConfig {
        CacheLevelConfig {
            name: name.into(),
            sets,
            ways,
            hit_cycles,
            ..CacheLevelConfig::default()
        }
    }

    fn hierarchy(levels: Vec<CacheLevelConfig>) -> CacheHierarchy {
        CacheHierarchy::new(&CacheConfig {
            levels,
            line_bytes: 64,
            memory_cycles: 100.0,
        })
        .expect("valid")
    }

    /// A worked example on one level of 2 sets × 2 ways, 64-byte lines. Lines A = 0,
    /// B = 2 and C = 4 share set 0; D = 1 is alone in set 1.
    ///
    /// | # | reference | set 0 after (LRU first) | set 1 | outcome            |
    /// |---|-----------|-------------------------|-------|--------------------|
    /// | 1 | A         | A                       |       | miss (empty way)   |
    /// | 2 | B         | A B                     |       | miss (empty way)   |
    /// | 3 | A + 8     | B A                     |       | hit                |
    /// | 4 | C         | A C                     |       | miss, evicts B     |
    /// | 5 | D         | A C                     | D     | miss (empty way)   |
    /// | 6 | B         | C B                     | D     | miss, evicts A     |
    /// | 7 | C + 63    | B C                     | D     | hit                |
    /// | 8 | A         | C A                     | D     | miss, evicts B     |
    /// | 9 | D + 32    | C A                     | D     | hit                |
    ///
    /// FIFO would evict A at 4 (the first filled), and B would hit at 6: the example
    /// tells LRU from it.
    #[test]
    fn worked_example_two_sets_two_ways() {
        let mut c = hierarchy(vec![level("l1d", 2, 2, 3.0)]);
        let (a, b, cc, d) = (0u64, 2 * 64, 4 * 64, 64);
        let steps: [(u64, bool, &[u64], &[u64]); 9] = [
            // (address, hit, lines held afterwards, lines not held)
            (a, false, &[a], &[b, cc, d]),
            (b, false, &[a, b], &[cc, d]),
            (a + 8, true, &[a, b], &[cc, d]),
            (cc, false, &[a, cc], &[b, d]),
            (d, false, &[a, cc, d], &[b]),
            (b, false, &[cc, b, d], &[a]),
            (cc + 63, true, &[cc, b, d], &[a]),
            (a, false, &[cc, a, d], &[b]),
            (d + 32, true, &[cc, a, d], &[b]),
        ];
        for (i, &(addr, hit, held, gone)) in steps.iter().enumerate() {
            let s = c.access(PhysAddr(addr), CacheAccess::Data);
            let want = if hit {
                Served {
                    level: Some(0),
                    cycles: 3.0,
                }
            } else {
                Served {
                    level: None,
                    cycles: 100.0,
                }
            };
            assert_eq!(s, want, "reference {}", i + 1);
            for &x in held {
                assert!(c.holds(0, PhysAddr(x)), "reference {}: {x:#x}", i + 1);
            }
            for &x in gone {
                assert!(!c.holds(0, PhysAddr(x)), "reference {}: {x:#x}", i + 1);
            }
        }
        let r = c.report();
        assert_eq!(r.levels[0].hits, PerKind::from_array([3, 0, 0]));
        assert_eq!(r.levels[0].misses, PerKind::from_array([6, 0, 0]));
        assert_eq!(r.levels[0].miss_ratio, 6.0 / 9.0);
        assert_eq!(r.memory_accesses.data, 6);
        assert_eq!(r.cycles.data, 3.0 * 3.0 + 6.0 * 100.0);
    }

    #[test]
    fn fills_every_level_that_missed_and_charges_the_server() {
        // L1: 1 line; L2: 4 lines; memory 100.
        let mut c = hierarchy(vec![level("l1d", 1, 1, 4.0), level("l2", 1, 4, 14.0)]);
        let x = PhysAddr(0x1000);
        let y = PhysAddr(0x2000);
        let served = |c: &mut CacheHierarchy, a| c.access(a, CacheAccess::Walk).level;
        assert_eq!(served(&mut c, x), None);
        assert!(c.holds(0, x) && c.holds(1, x));
        assert_eq!(served(&mut c, x), Some(0));
        assert_eq!(served(&mut c, y), None); // y evicts x from L1 only
        assert!(!c.holds(0, x) && c.holds(1, x));
        let s = c.access(x, CacheAccess::Walk);
        assert_eq!((s.level, s.cycles), (Some(1), 14.0)); // not 4 + 14
        assert!(c.holds(0, x), "a hit in L2 fills L1");
        let r = c.report();
        assert_eq!(r.levels[0].hits.walk, 1);
        assert_eq!(r.levels[0].misses.walk, 3);
        assert_eq!(r.levels[1].hits.walk, 1);
        assert_eq!(r.levels[1].cycles.walk, 14.0);
        assert_eq!(r.levels[1].misses.walk, 2);
        assert_eq!(r.memory_accesses.walk, 2);
        assert_eq!(r.cycles.walk, 4.0 + 14.0 + 2.0 * 100.0);
        assert_eq!(r.cycles.data, 0.0);
    }

    #[test]
    fn levels_are_not_inclusive() {
        // L2 has room for one line: evicting x from it leaves x in L1, which still hits.
        let mut c = hierarchy(vec![level("l1d", 1, 2, 4.0), level("l2", 1, 1, 14.0)]);
        let (x, y) = (PhysAddr(0), PhysAddr(64));
        c.access(x, CacheAccess::Data);
        c.access(y, CacheAccess::Data);
        assert!(c.holds(0, x) && !c.holds(1, x));
        assert_eq!(c.access(x, CacheAccess::Data).level, Some(0));
    }

    #[test]
    fn kinds_are_counted_apart() {
        let mut c = hierarchy(vec![level("l1d", 1, 8, 4.0)]);
        c.access(PhysAddr(0), CacheAccess::Walk);
        c.access(PhysAddr(8), CacheAccess::Data); // the walk brought the line
        c.access(PhysAddr(128), CacheAccess::Copy);
        let r = c.report();
        assert_eq!(r.levels[0].hits, PerKind::from_array([1, 0, 0]));
        assert_eq!(r.levels[0].misses, PerKind::from_array([0, 1, 1]));
        assert_eq!(r.levels[0].miss_ratio_of(CacheAccess::Data), 0.0);
        assert_eq!(r.levels[0].miss_ratio_of(CacheAccess::Walk), 1.0);
        assert_eq!(r.cycles, PerKind::from_array([4.0, 100.0, 100.0]));
    }

    #[test]
    fn touch_lines_references_every_line_of_the_range() {
        let mut c = hierarchy(vec![level("l1d", 64, 8, 4.0)]);
        let t = c.touch_lines(PhysAddr(0x1000), 4096, CacheAccess::Copy);
        assert_eq!((t.lines, t.memory, t.cycles), (64, 64, 6400.0));
        // Unaligned: bytes 0x1030..0x1050 span two lines, both held now.
        let t = c.touch_lines(PhysAddr(0x1030), 0x20, CacheAccess::Data);
        assert_eq!((t.lines, t.memory, t.cycles), (2, 0, 8.0));
        assert_eq!(
            c.touch_lines(PhysAddr(5), 0, CacheAccess::Data),
            Touched::default()
        );
        // The last line of the address space, without overflow.
        let t = c.touch_lines(PhysAddr(u64::MAX - 10), 100, CacheAccess::Data);
        assert_eq!(t.lines, 1);
    }

    #[test]
    fn copying_a_page_reads_and_writes_its_lines() {
        let mut c = hierarchy(vec![level("l1d", 64, 8, 4.0)]);
        let t = c.copy_range(PhysAddr(0x10_0000), PhysAddr(0x20_0000), 4096);
        assert_eq!((t.lines, t.memory), (128, 128));
        assert_eq!(c.report().memory_accesses.copy, 128);
        for line in 0..64 {
            assert!(c.holds(0, PhysAddr(0x10_0000 + line * 64)));
            assert!(c.holds(0, PhysAddr(0x20_0000 + line * 64)));
        }
        // Misaligned by half a line: 65 source lines, 64 destination lines.
        let t = c.copy_range(PhysAddr(0x30_0020), PhysAddr(0x40_0000), 4096);
        assert_eq!(t.lines, 129);
    }

    #[test]
    fn flush_range_drops_the_range_everywhere_and_counts() {
        let mut c = hierarchy(vec![level("l1d", 4, 2, 4.0), level("l2", 16, 4, 14.0)]);
        c.touch_lines(PhysAddr(0), 8 * 64, CacheAccess::Data);
        // Bytes 0x50..0xc1: lines 1, 2 and 3, held at both levels.
        assert_eq!(c.flush_range(PhysAddr(0x50), 0x71), 6);
        for line in 0..8u64 {
            let a = PhysAddr(line * 64);
            let kept = !(1..=3).contains(&line);
            assert_eq!(c.holds(1, a), kept, "line {line} in L2");
            assert_eq!(c.holds(0, a), kept, "line {line} in L1");
        }
        let r = c.report();
        assert_eq!((r.levels[0].flushed, r.levels[1].flushed), (3, 3));
        assert_eq!(c.flush_range(PhysAddr(0x50), 0), 0);
        // A flushed line misses again.
        assert_eq!(c.access(PhysAddr(64), CacheAccess::Data).level, None);
    }

    #[test]
    fn a_stream_counts_as_its_references_one_by_one() {
        // Repeats of a line, of another kind too, between misses that evict it, on an
        // LRU first level and on ones whose hits may change their state (NRU, PLRU).
        let mut x = 7u64;
        let stream: Vec<u64> = (0..20_000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let line = if i % 3 == 0 { x % 64 } else { x % 4096 };
                let kind = [CacheAccess::Data, CacheAccess::Walk, CacheAccess::Copy]
                    [(x >> 40) as usize % 3];
                let repeat = (x >> 20) % 4;
                CacheHierarchy::tagged(PhysAddr(line * 64 + repeat * 8), kind)
            })
            .flat_map(|w| [w, w ^ 8, w])
            .collect();
        for replacement in ["lru", "nru", "plru"] {
            let levels = vec![
                CacheLevelConfig {
                    replacement: replacement.into(),
                    ..level("l1d", 8, 4, 4.0)
                },
                level("l2", 64, 8, 12.0),
            ];
            let (mut one, mut all) = (hierarchy(levels.clone()), hierarchy(levels));
            for &w in &stream {
                one.access(PhysAddr(w & !3), CacheAccess::from_tag(w));
            }
            all.access_stream(&stream);
            assert_eq!(one.report(), all.report(), "{replacement}");
        }
    }

    #[test]
    fn without_levels_memory_serves_everything() {
        let mut c = hierarchy(vec![]);
        let s = c.access(PhysAddr(0), CacheAccess::Data);
        assert_eq!((s.level, s.cycles), (None, 100.0));
        assert!(s.reached_memory());
        assert_eq!(c.flush_range(PhysAddr(0), 1 << 20), 0);
        let r = c.report();
        assert!(r.levels.is_empty());
        assert_eq!(r.memory_accesses.data, 1);
    }

    #[test]
    fn new_checks_the_configuration() {
        let mut config = CacheConfig::typical();
        config.levels[1].ways = 0;
        let e = CacheHierarchy::new(&config).unwrap_err();
        assert!(e.starts_with("cache.levels[1].ways:"), "{e}");
    }

    #[test]
    fn report_of_the_typical_hierarchy() {
        let mut c = CacheHierarchy::new(&CacheConfig::typical()).unwrap();
        assert_eq!(c.line_bytes(), 64);
        for _ in 0..2 {
            c.touch_lines(PhysAddr(0), 64 << 10, CacheAccess::Data);
        }
        // 1024 lines: 32 KiB of L1 thrashed on the second pass, L2 holds them all.
        let r = c.report();
        let sizes: Vec<u64> = r.levels.iter().map(|l| l.size_bytes).collect();
        assert_eq!(sizes, [32 << 10, 1 << 20, 8 << 20]);
        assert_eq!(r.levels[0].misses.data, 2048);
        assert_eq!(r.levels[1].hits.data, 1024);
        assert_eq!(r.levels[2].hits.data, 0);
        assert_eq!(r.memory_accesses.data, 1024);
        assert_eq!(r.cycles.data, 1024.0 * 14.0 + 1024.0 * 200.0);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["levels"][2]["name"], "llc");
        assert_eq!(json["levels"][1]["hits"]["data"], 1024);
        let text = r.to_string();
        assert!(text.contains("l2 (1M) hits data/walk/copy"), "{text}");
    }

    /// Fang et al.'s §4 caches, in small: an L1 of 32-byte lines over an L2 of
    /// 128-byte ones. Reading 256 bytes from memory touches 8 L1 lines; the L2 misses
    /// on the first of each 4 (2 from memory) and serves the other 6. A copy of them
    /// reads those lines again (now L1 hits) and writes 8 destination lines the same
    /// way; flushing the destination drops 8 L1 lines and 2 L2 lines.
    #[test]
    fn levels_with_lines_of_their_own() {
        let mut l1 = level("l1d", 64, 1, 1.0);
        l1.line_bytes = Some(32);
        let mut l2 = level("l2", 64, 2, 10.0);
        l2.line_bytes = Some(128);
        let mut c = hierarchy(vec![l1, l2]);
        assert_eq!((c.line_bytes(), c.level_line_bytes(1)), (32, 128));
        let t = c.touch_lines(PhysAddr(0x1000), 256, CacheAccess::Data);
        assert_eq!((t.lines, t.memory), (8, 2));
        assert_eq!(t.cycles, 2.0 * 100.0 + 6.0 * 10.0);
        let t = c.copy_range(PhysAddr(0x1000), PhysAddr(0x8000), 256);
        assert_eq!((t.lines, t.memory), (16, 2));
        assert_eq!(t.cycles, 8.0 * 1.0 + 2.0 * 100.0 + 6.0 * 10.0);
        assert!(c.holds(1, PhysAddr(0x8000 + 255)));
        assert_eq!(c.flush_range(PhysAddr(0x8000), 256), 8 + 2);
        assert!(!c.holds(0, PhysAddr(0x8000)) && !c.holds(1, PhysAddr(0x8000 + 255)));
        let r = c.report();
        assert_eq!((r.levels[0].line_bytes, r.levels[1].line_bytes), (32, 128));
        assert_eq!(r.levels[1].size_bytes, 64 * 2 * 128);
    }
}
