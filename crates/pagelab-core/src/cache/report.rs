//! What the cache model reports: per level and per kind of reference, hits and
//! misses; per kind, the references memory served and the cycles charged.

use super::CacheAccess;
use serde::Serialize;
use std::fmt;

/// One count per [`CacheAccess`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PerKind<T> {
    pub data: T,
    pub walk: T,
    pub copy: T,
}

impl<T: Copy> PerKind<T> {
    /// From values in the order of [`CacheAccess::ALL`].
    pub fn from_array([data, walk, copy]: [T; 3]) -> PerKind<T> {
        PerKind { data, walk, copy }
    }

    pub fn get(&self, kind: CacheAccess) -> T {
        match kind {
            CacheAccess::Data => self.data,
            CacheAccess::Walk => self.walk,
            CacheAccess::Copy => self.copy,
        }
    }
}

impl<T: Copy + std::iter::Sum<T>> PerKind<T> {
    /// Over every kind.
    pub fn total(&self) -> T {
        [self.data, self.walk, self.copy].into_iter().sum()
    }
}

/// One cache level after a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CacheLevelReport {
    pub name: String,
    pub sets: usize,
    pub ways: usize,
    pub line_bytes: u64,
    /// sets × ways × line_bytes.
    pub size_bytes: u64,
    pub hit_cycles: f64,
    pub hits: PerKind<u64>,
    /// References that reached this level and missed it.
    pub misses: PerKind<u64>,
    /// Cycles of the references it served (hits × hit_cycles).
    pub cycles: PerKind<f64>,
    /// Misses per reference that reached the level, all kinds together (0 when none
    /// did).
    pub miss_ratio: f64,
    /// Lines dropped by flushes of physical ranges.
    pub flushed: u64,
}

impl CacheLevelReport {
    /// Misses per reference of `kind` that reached the level (0 when none did).
    pub fn miss_ratio_of(&self, kind: CacheAccess) -> f64 {
        ratio(self.misses.get(kind), self.hits.get(kind))
    }
}

/// Misses over references, 0 for no reference (a ratio of 0/0 would be NaN, which
/// JSON cannot carry).
pub(super) fn ratio(misses: u64, hits: u64) -> f64 {
    match misses + hits {
        0 => 0.0,
        n => misses as f64 / n as f64,
    }
}

/// The cache hierarchy after a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CacheReport {
    /// Closest to the core first.
    pub levels: Vec<CacheLevelReport>,
    pub memory_cycles: f64,
    /// References that missed every level.
    pub memory_accesses: PerKind<u64>,
    /// Cycles charged, each reference at the latency of what served it.
    pub cycles: PerKind<f64>,
}

/// Rows in the layout of the machine's report, for it to print after its own.
impl fmt::Display for CacheReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let row = |f: &mut fmt::Formatter<'_>, k: &str, v: String| writeln!(f, "  {k:<34} {v:>16}");
        let per_kind = |p: &PerKind<u64>| format!("{} / {} / {}", p.data, p.walk, p.copy);
        for l in &self.levels {
            let size = crate::addr::format_bytes(l.size_bytes);
            row(
                f,
                &format!("{} ({size}) hits data/walk/copy", l.name),
                per_kind(&l.hits),
            )?;
            row(f, &format!("{} misses", l.name), per_kind(&l.misses))?;
            row(
                f,
                &format!("{} miss ratio", l.name),
                format!("{:.6}", l.miss_ratio),
            )?;
        }
        row(f, "memory accesses", per_kind(&self.memory_accesses))?;
        let c = &self.cycles;
        row(
            f,
            "cache cycles data/walk/copy",
            format!("{:.0} / {:.0} / {:.0}", c.data, c.walk, c.copy),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_kind_accessors() {
        let p = PerKind::from_array([1u64, 2, 3]);
        assert_eq!(p.total(), 6);
        let got: Vec<u64> = CacheAccess::ALL.iter().map(|&k| p.get(k)).collect();
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(PerKind::from_array([0.5, 0.25, 0.0]).total(), 0.75);
    }

    #[test]
    fn ratio_of_nothing_is_zero() {
        assert_eq!(ratio(0, 0), 0.0);
        assert_eq!(ratio(1, 3), 0.25);
    }
}
