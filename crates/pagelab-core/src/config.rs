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
    /// The page size demand paging maps. Default "4K" ("8K" for Alpha).
    #[serde(default = "default_base_page")]
    pub base_page: PageSize,
    #[serde(default)]
    pub tlb: TlbConfig,
    /// Paging-structure (page-walk) caches of a radix table. Default none.
    #[serde(default)]
    pub walk_caches: Vec<WalkCacheConfig>,
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

fn default_base_page() -> PageSize {
    PageSize::K4
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            name: default_name(),
            description: String::new(),
            seed: 0,
            base_page: default_base_page(),
            tlb: TlbConfig::default(),
            walk_caches: Vec::new(),
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
    /// One TLB for every reference: a hierarchy of one level named "tlb".
    SetAssociative(SetAssocConfig),
    /// Named levels, each of one or more arrays, linked child to parent.
    Hierarchy(HierarchyConfig),
}

impl Default for TlbConfig {
    fn default() -> Self {
        TlbConfig::SetAssociative(SetAssocConfig::default())
    }
}

/// A TLB hierarchy: levels listed child first; a level's `parent` is named later.
/// Data references start at the first level that serves data, instruction fetches at
/// the first that serves instructions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HierarchyConfig {
    /// Entries carry no address-space tag: a switch of address space flushes every
    /// level (and the walk caches). Default false (tagged, like ASIDs or PCIDs).
    pub flush_on_switch: bool,
    pub levels: Vec<LevelConfig>,
}

/// One level of a TLB hierarchy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LevelConfig {
    /// Shown in reports; unique within the hierarchy.
    pub name: String,
    /// Which references the level translates. Default "all".
    pub serves: Serves,
    /// The level a miss goes to next; none: a miss walks the page table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Cycles a hit at this level adds to the access. Default 0 (overlapped with the
    /// cache lookup, as for an L1 TLB).
    pub hit_cycles: f64,
    /// Arrays probed in parallel (x86 parts have one per page size).
    pub arrays: Vec<SetAssocConfig>,
}

impl Default for LevelConfig {
    fn default() -> Self {
        LevelConfig {
            name: String::new(),
            serves: Serves::All,
            parent: None,
            hit_cycles: 0.0,
            arrays: Vec::new(),
        }
    }
}

/// Which references a TLB level translates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Serves {
    /// Loads, stores and modifies.
    Data,
    /// Instruction fetches.
    Instruction,
    /// Both (a unified TLB).
    All,
}

impl Serves {
    /// The name the configuration gives it.
    pub fn name(self) -> &'static str {
        match self {
            Serves::Data => "data",
            Serves::Instruction => "instruction",
            Serves::All => "all",
        }
    }
    /// Whether the level translates side `side` (0 data, 1 instruction).
    pub fn covers(self, side: usize) -> bool {
        match self {
            Serves::All => true,
            Serves::Data => side == 0,
            Serves::Instruction => side == 1,
        }
    }
}

/// A paging-structure cache: it holds entries of one level of a radix table, so a
/// walk that hits it skips the references to that level and the levels above.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WalkCacheConfig {
    /// Which table level's entries it holds: 4 = PML4 entries, 3 = PDPT entries,
    /// 2 = page-directory entries (5 = PML5 entries with a 5-level table). Default 2.
    pub level: u32,
    /// Default 1 (fully associative).
    pub sets: usize,
    /// Default 32.
    pub ways: usize,
    /// Default "lru".
    pub replacement: String,
}

impl Default for WalkCacheConfig {
    fn default() -> Self {
        WalkCacheConfig {
            level: 2,
            sets: 1,
            ways: 32,
            replacement: "lru".into(),
        }
    }
}

/// A set-associative TLB array (`sets = 1` is fully associative).
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
    /// Cycles a hit adds (only for a single TLB; a hierarchy gives each level its
    /// own `hit_cycles`). Default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub hit_cycles: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl Default for SetAssocConfig {
    fn default() -> Self {
        SetAssocConfig {
            sets: 16,
            ways: 4,
            replacement: "lru".into(),
            page_sizes: vec![PageSize::K4],
            hit_cycles: 0.0,
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
        let TlbConfig::SetAssociative(t) = &c.tlb else {
            panic!("a set-associative TLB")
        };
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
