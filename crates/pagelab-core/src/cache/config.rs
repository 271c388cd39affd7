//! The cache model's configuration: the `[cache]` table of a machine. No levels (the
//! default) means no cache model: every reference costs what the cost model says and
//! the run is as fast as without one.
//!
//! ```toml
//! [cache]
//! line_bytes = 64
//! memory_cycles = 200.0
//! [[cache.levels]]
//! name = "l1d"
//! sets = 64
//! ways = 8
//! hit_cycles = 4.0
//! [[cache.levels]]
//! name = "llc"
//! sets = 8192
//! ways = 16
//! hit_cycles = 40.0
//! ```

use serde::{Deserialize, Serialize};

/// Most lines a level may hold (sets × ways): 2^26 lines of 64 bytes is 4 GiB of
/// cache, far beyond any real one, and 1 GiB of simulator state (16 bytes a line).
pub const MAX_LINES: u64 = 1 << 26;

/// Most ways a set may have: a lookup scans every way of a set.
pub const MAX_WAYS: usize = 4096;

/// A hierarchy of physically indexed and tagged caches, probed first level first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Levels, closest to the core first. Default none: no cache model.
    pub levels: Vec<CacheLevelConfig>,
    /// Bytes per line of every level that does not give its own (a power of two
    /// from 8 to 4096). Default 64.
    pub line_bytes: u64,
    /// Load-to-use latency of a reference that misses every level, in cycles.
    /// Default 200.
    pub memory_cycles: f64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            levels: Vec::new(),
            line_bytes: 64,
            memory_cycles: 200.0,
        }
    }
}

/// One level: `sets × ways` lines, the victim of a set chosen by `replacement`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheLevelConfig {
    /// Shown in reports; unique within the hierarchy ("l1d", "l2", "llc").
    pub name: String,
    /// Number of sets; need not be a power of two (the set of a line is its line
    /// number modulo `sets`). Default 64.
    pub sets: usize,
    /// Lines per set (1: direct mapped). Default 8.
    pub ways: usize,
    /// Load-to-use latency of a reference this level serves, in cycles, as measured
    /// from the core: it includes the lookups of the levels above, which are not
    /// added again. Default 4.
    pub hit_cycles: f64,
    /// Replacement policy by name, as for TLB arrays (lru, nru, plru, fifo, random).
    /// Default "lru".
    pub replacement: String,
    /// Bytes per line of this level, when not the hierarchy's `line_bytes` (a power
    /// of two from 8 to 4096): a 1995 PA-RISC had 32-byte lines in its L1 and
    /// 128-byte ones in its L2. A reference touches a line of each level it reaches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_bytes: Option<u64>,
}

impl Default for CacheLevelConfig {
    fn default() -> Self {
        CacheLevelConfig {
            name: String::new(),
            sets: 64,
            ways: 8,
            hit_cycles: 4.0,
            replacement: "lru".into(),
            line_bytes: None,
        }
    }
}

impl CacheConfig {
    /// Whether there is no cache model to build (no levels).
    pub fn is_off(&self) -> bool {
        self.levels.is_empty()
    }

    /// A three-level hierarchy of 64-byte lines: a 32 KiB 8-way L1d of 4 cycles, a
    /// 1 MiB 16-way L2 of 14 cycles, an 8 MiB 16-way LLC of 40 cycles, memory at 200.
    /// Sizes and latencies are typical of recent x86 server and desktop cores; they
    /// come from no single part or source, so a preset modelling a given machine
    /// should give its own (the `pa-risc-32` preset has the caches of Fang et al. §4).
    pub fn typical() -> CacheConfig {
        let level = |name: &str, bytes: usize, ways: usize, hit_cycles: f64| CacheLevelConfig {
            name: name.into(),
            sets: bytes / 64 / ways,
            ways,
            hit_cycles,
            replacement: "lru".into(),
            line_bytes: None,
        };
        CacheConfig {
            levels: vec![
                level("l1d", 32 << 10, 8, 4.0),
                level("l2", 1 << 20, 16, 14.0),
                level("llc", 8 << 20, 16, 40.0),
            ],
            line_bytes: 64,
            memory_cycles: 200.0,
        }
    }

    /// The line size of level `i`, in bytes.
    pub fn level_line_bytes(&self, i: usize) -> u64 {
        self.levels[i].line_bytes.unwrap_or(self.line_bytes)
    }

    /// Every value the types cannot check; an error names the field
    /// (`cache.levels[1].ways: ...`).
    pub fn check(&self) -> Result<(), String> {
        let line_ok = |field: &str, line: u64| {
            if !line.is_power_of_two() || !(8..=4096).contains(&line) {
                return Err(format!(
                    "{field}: {line} must be a power of two from 8 to 4096"
                ));
            }
            Ok(())
        };
        line_ok("cache.line_bytes", self.line_bytes)?;
        check_cycles("cache.memory_cycles", self.memory_cycles)?;
        for (i, level) in self.levels.iter().enumerate() {
            let field = |name: &str| format!("cache.levels[{i}].{name}");
            if level.name.is_empty() {
                return Err(format!("{}: every level needs a name", field("name")));
            }
            if self.levels[..i].iter().any(|l| l.name == level.name) {
                return Err(format!(
                    "{}: \"{}\" names two levels",
                    field("name"),
                    level.name
                ));
            }
            if level.sets == 0 {
                return Err(format!("{}: a level needs at least one set", field("sets")));
            }
            if level.ways == 0 || level.ways > MAX_WAYS {
                return Err(format!(
                    "{}: {} must be from 1 to {MAX_WAYS}",
                    field("ways"),
                    level.ways
                ));
            }
            let lines = (level.sets as u64).checked_mul(level.ways as u64);
            if lines.is_none_or(|n| n > MAX_LINES) {
                return Err(format!(
                    "{}: {} sets × {} ways is more than 2^26 lines",
                    field("sets"),
                    level.sets,
                    level.ways
                ));
            }
            check_cycles(&field("hit_cycles"), level.hit_cycles)?;
            if let Some(line) = level.line_bytes {
                line_ok(&field("line_bytes"), line)?;
            }
            if !crate::replacement::NAMES.contains(&level.replacement.as_str()) {
                return Err(format!(
                    "{}: unknown policy {:?} (known: {})",
                    field("replacement"),
                    level.replacement,
                    crate::replacement::NAMES.join(", ")
                ));
            }
        }
        Ok(())
    }
}

use crate::limits::check_cycles;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_off_and_valid() {
        let c = CacheConfig::default();
        assert!(c.is_off());
        assert_eq!(c.check(), Ok(()));
        assert_eq!(toml::from_str::<CacheConfig>("").unwrap(), c);
    }

    #[test]
    fn typical_has_the_documented_shape() {
        let c = CacheConfig::typical();
        assert!(!c.is_off());
        assert_eq!(c.check(), Ok(()));
        let shape: Vec<_> = c
            .levels
            .iter()
            .map(|l| (l.name.as_str(), l.sets * l.ways * 64, l.ways, l.hit_cycles))
            .collect();
        assert_eq!(
            shape,
            [
                ("l1d", 32 << 10, 8, 4.0),
                ("l2", 1 << 20, 16, 14.0),
                ("llc", 8 << 20, 16, 40.0)
            ]
        );
        assert_eq!(c.memory_cycles, 200.0);
    }

    #[test]
    fn toml_round_trip_and_unknown_fields() {
        let c = CacheConfig::typical();
        let text = toml::to_string(&c).unwrap();
        assert_eq!(toml::from_str::<CacheConfig>(&text).unwrap(), c);
        let one: CacheConfig =
            toml::from_str("[[levels]]\nname = \"l1d\"\nsets = 3\n").expect("defaults fill in");
        assert_eq!((one.levels[0].sets, one.levels[0].ways), (3, 8));
        let e = toml::from_str::<CacheConfig>("[[levels]]\nname = \"l1d\"\nsize = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `size`"), "{e}");
        let e = toml::from_str::<CacheConfig>("line_size = 64\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `line_size`"), "{e}");
    }

    #[test]
    fn errors_name_the_field() {
        let base = CacheConfig::typical();
        type Change = fn(&mut CacheConfig);
        let cases: Vec<(Change, &str)> = vec![
            (|c| c.line_bytes = 48, "cache.line_bytes:"),
            (|c| c.line_bytes = 4, "cache.line_bytes:"),
            (|c| c.line_bytes = 8192, "cache.line_bytes:"),
            (|c| c.memory_cycles = f64::NAN, "cache.memory_cycles:"),
            (|c| c.memory_cycles = -1.0, "cache.memory_cycles:"),
            (|c| c.levels[0].name.clear(), "cache.levels[0].name:"),
            (|c| c.levels[2].name = "l2".into(), "cache.levels[2].name:"),
            (|c| c.levels[1].sets = 0, "cache.levels[1].sets:"),
            (|c| c.levels[1].ways = 0, "cache.levels[1].ways:"),
            (|c| c.levels[0].ways = MAX_WAYS + 1, "cache.levels[0].ways:"),
            (|c| c.levels[2].sets = 1 << 23, "cache.levels[2].sets:"),
            (|c| c.levels[2].sets = usize::MAX, "cache.levels[2].sets:"),
            (
                |c| c.levels[1].line_bytes = Some(96),
                "cache.levels[1].line_bytes:",
            ),
            (
                |c| c.levels[0].line_bytes = Some(8192),
                "cache.levels[0].line_bytes:",
            ),
            (
                |c| c.levels[1].hit_cycles = f64::INFINITY,
                "cache.levels[1].hit_cycles:",
            ),
        ];
        for (change, field) in cases {
            let mut c = base.clone();
            change(&mut c);
            let e = c.check().unwrap_err();
            assert!(e.starts_with(field), "{e} should name {field}");
        }
        // At the limit, and odd set counts, are fine.
        let mut c = base.clone();
        c.levels[2].sets = (MAX_LINES / 16) as usize;
        c.levels[0].sets = 3;
        assert_eq!(c.check(), Ok(()));
    }
}
