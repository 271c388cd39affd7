//! Machine configuration: typed, tagged, with documented defaults, and unknown fields
//! rejected by name. People write it as TOML; Python hands over the same document.
//! A configuration is only data: [`crate::machine::Machine::build`] resolves it into
//! components, checking every value it cannot check by type.
//!
//! ```toml
//! name = "one-tlb"
//! [tlb]
//! kind = "set-associative"
//! sets = 16
//! ways = 4
//! replacement = "lru"
//! page_sizes = ["4K"]
//! [page_table]
//! kind = "radix"
//! levels = 4
//! [frames]
//! kind = "simple"
//! memory = "64G"
//! [cost]
//! kind = "simple"
//! walk_ref_cycles = 8.0
//! ```

use crate::addr::{format_bytes, parse_bytes, PageSize};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    /// A short name shown in reports. Default "default".
    #[serde(default = "default_name")]
    pub name: String,
    /// Where the numbers come from.
    #[serde(default)]
    pub description: String,
    /// Seed of every random choice a component makes (deterministic runs).
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub tlb: TlbConfig,
    #[serde(default)]
    pub page_table: PageTableConfig,
    #[serde(default)]
    pub frames: FramesConfig,
    #[serde(default)]
    pub cost: CostConfig,
}

fn default_name() -> String {
    "default".into()
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            name: default_name(),
            description: String::new(),
            seed: 0,
            tlb: TlbConfig::default(),
            page_table: PageTableConfig::default(),
            frames: FramesConfig::default(),
            cost: CostConfig::default(),
        }
    }
}

/// The TLB, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TlbConfig {
    SetAssociative(SetAssocConfig),
}

impl Default for TlbConfig {
    fn default() -> Self {
        TlbConfig::SetAssociative(SetAssocConfig::default())
    }
}

/// A set-associative TLB (`sets = 1` is fully associative).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SetAssocConfig {
    /// Number of sets; need not be a power of two. Default 16.
    pub sets: usize,
    /// Entries per set. Default 4 (with 16 sets: a 64-entry 4-way TLB, the size of
    /// the L1 DTLB of Intel cores from Sandy Bridge to Skylake).
    pub ways: usize,
    /// Replacement policy by name. Default "lru".
    pub replacement: String,
    /// Page sizes the TLB holds, probed in turn. Default ["4K"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for SetAssocConfig {
    fn default() -> Self {
        SetAssocConfig {
            sets: 16,
            ways: 4,
            replacement: "lru".into(),
            page_sizes: vec![PageSize::K4],
        }
    }
}

/// The page table, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PageTableConfig {
    /// x86-64 multi-level radix table.
    Radix(RadixConfig),
}

impl Default for PageTableConfig {
    fn default() -> Self {
        PageTableConfig::Radix(RadixConfig::default())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RadixConfig {
    /// 4 (48-bit virtual addresses) or 5 (57-bit, LA57). Default 4.
    pub levels: u32,
}

impl Default for RadixConfig {
    fn default() -> Self {
        RadixConfig { levels: 4 }
    }
}

/// Physical memory and its allocator, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FramesConfig {
    /// Bump allocation with reuse of freed blocks; no splitting or coalescing.
    Simple(SimpleFramesConfig),
}

impl Default for FramesConfig {
    fn default() -> Self {
        FramesConfig::Simple(SimpleFramesConfig::default())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimpleFramesConfig {
    /// Physical memory size, e.g. "64G". Default 64 GiB.
    pub memory: ByteSize,
}

impl Default for SimpleFramesConfig {
    fn default() -> Self {
        SimpleFramesConfig {
            memory: ByteSize(64 << 30),
        }
    }
}

/// How counts become cycles, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CostConfig {
    Simple(SimpleCostConfig),
}

impl Default for CostConfig {
    fn default() -> Self {
        CostConfig::Simple(SimpleCostConfig::default())
    }
}

/// A linear cost model: each event has a fixed cost in cycles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimpleCostConfig {
    /// Cycles of a reference apart from translation (the baseline the overhead is
    /// relative to). Default 1.0.
    pub base_cycles_per_ref: f64,
    /// Cycles added by a TLB hit (0 when the lookup overlaps the cache access, as for
    /// an L1 TLB). Default 0.
    pub tlb_hit_cycles: f64,
    /// Cycles per memory reference of a page walk. Default 8, so that a 4-level walk
    /// costs about 30 cycles, "the typical cost of a TLB miss"
    /// (papers/variable-radix-page-table.md §1.1).
    pub walk_ref_cycles: f64,
    /// Cycles per page fault (trap, allocate and zero a frame, map). Default 5000,
    /// about 1.7 µs at 3 GHz, the order of a Linux minor fault.
    pub page_fault_cycles: f64,
}

impl Default for SimpleCostConfig {
    fn default() -> Self {
        SimpleCostConfig {
            base_cycles_per_ref: 1.0,
            tlb_hit_cycles: 0.0,
            walk_ref_cycles: 8.0,
            page_fault_cycles: 5000.0,
        }
    }
}

/// A byte count written as "64G", "512MiB" or a plain integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_bytes(self.0))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Text(t) => parse_bytes(&t)
                .map(ByteSize)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// A configuration problem, naming the file (if any), the line or field, and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl MachineConfig {
    /// Parse a TOML document; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<MachineConfig, ConfigError> {
        toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|s| {
                    format!(
                        " line {}:",
                        text[..s.start.min(text.len())].matches('\n').count() + 1
                    )
                })
                .unwrap_or_default();
            ConfigError(format!(
                "{origin}:{at} {}",
                e.message().trim().replace('\n', " ")
            ))
        })
    }

    pub fn load(path: &Path) -> Result<MachineConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("{}: cannot read: {e}", path.display())))?;
        MachineConfig::from_toml(&text, &path.display().to_string())
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("configurations serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_document_is_the_default_machine() {
        let c = MachineConfig::from_toml("", "t").unwrap();
        assert_eq!(c.tlb, TlbConfig::default());
        assert_eq!(
            c.page_table,
            PageTableConfig::Radix(RadixConfig { levels: 4 })
        );
    }

    #[test]
    fn fields_parse() {
        let c = MachineConfig::from_toml(
            "name = \"x\"\n[tlb]\nkind = \"set-associative\"\nsets = 1\nways = 64\npage_sizes = [\"4K\", \"2M\"]\n\
             [frames]\nkind = \"simple\"\nmemory = \"1G\"\n",
            "t",
        )
        .unwrap();
        let TlbConfig::SetAssociative(t) = &c.tlb;
        assert_eq!((t.sets, t.ways), (1, 64));
        assert_eq!(t.page_sizes, vec![PageSize::K4, PageSize::M2]);
        let FramesConfig::Simple(f) = &c.frames;
        assert_eq!(f.memory, ByteSize(1 << 30));
        // And back.
        assert_eq!(MachineConfig::from_toml(&c.to_toml(), "t").unwrap(), c);
    }

    #[test]
    fn unknown_fields_are_named_with_their_line() {
        let e = MachineConfig::from_toml("[tlb]\nkind = \"set-associative\"\nsetz = 4\n", "m.toml")
            .unwrap_err();
        assert!(e.0.starts_with("m.toml: line "), "{e}");
        assert!(e.0.contains("setz"), "{e}");
        let e = MachineConfig::from_toml("[tlb]\nkind = \"magic\"\n", "m.toml").unwrap_err();
        assert!(e.0.contains("magic"), "{e}");
        let e = MachineConfig::from_toml("colour = 1\n", "m.toml").unwrap_err();
        assert!(e.0.contains("colour") && e.0.contains("line 1"), "{e}");
        let e = MachineConfig::from_toml(
            "[tlb]\nkind = \"set-associative\"\npage_sizes = [\"3K\"]\n",
            "m.toml",
        )
        .unwrap_err();
        assert!(e.0.contains("3K"), "{e}");
    }
}
