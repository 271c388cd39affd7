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
//! kind = "radix"    # or linear, hashed, clustered, inverted, guarded, variable-radix
//! levels = 4
//! [frames]
//! kind = "simple"
//! memory = "64G"
//! [cost]
//! kind = "simple"
//! walk_ref_cycles = 8.0
//! ```

use crate::addr::PageSize;
use serde::{Deserialize, Serialize};
use std::path::Path;

mod cost;
mod frames;
mod pressure;
#[cfg(test)]
mod tests;
mod tlb;

pub use crate::addr::ByteSize;
pub use crate::pagetable::PageTableConfig;
pub use crate::superpage::mechanism::{CopyConfig, MechanismConfig, RemapConfig};
pub use crate::superpage::{
    AsapConfig, OnlineConfig, PromotionConfig, ReservationConfig, StaticPromotionConfig,
    StaticRegion, ThpConfig,
};
pub use cost::*;
pub use frames::*;
pub use pressure::*;
pub use tlb::*;

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
    /// The largest reference a trace may make: one that spans more is an error naming
    /// it, since it would make as many translations as it spans pages. Default "1M",
    /// from "4K" to "4G".
    #[serde(
        default = "default_max_reference",
        skip_serializing_if = "is_default_max_reference"
    )]
    pub max_reference: ByteSize,
    /// The most memory the machine may take when built (TLBs, caches, tables allocated
    /// up front): a configuration whose estimate exceeds it is refused before anything
    /// is allocated. Default "4G".
    #[serde(
        default = "default_max_memory",
        skip_serializing_if = "is_default_max_memory"
    )]
    pub max_memory: ByteSize,
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
    /// When and which pages become superpages. Default none (base pages only).
    #[serde(default)]
    pub promotion: PromotionConfig,
    /// How a promotion makes a superpage's frames contiguous. Default copy.
    #[serde(default)]
    pub mechanism: MechanismConfig,
    /// Data caches fed with the data references, the walks' references and the
    /// promotions' copies (`crate::cache`). Default none (off, for speed).
    #[serde(default, skip_serializing_if = "crate::cache::CacheConfig::is_off")]
    pub cache: crate::cache::CacheConfig,
    /// Memory pressure: a resident-set limit and the page daemon that keeps to it,
    /// speculative demotion, demotion on writes (`crate::pressure`). Default off.
    #[serde(default, skip_serializing_if = "PagingConfig::is_default")]
    pub paging: PagingConfig,
}

fn default_name() -> String {
    "default".into()
}

fn default_base_page() -> PageSize {
    PageSize::K4
}

fn default_max_reference() -> ByteSize {
    ByteSize(1 << 20)
}

fn is_default_max_reference(b: &ByteSize) -> bool {
    *b == default_max_reference()
}

fn default_max_memory() -> ByteSize {
    ByteSize(4 << 30)
}

fn is_default_max_memory(b: &ByteSize) -> bool {
    *b == default_max_memory()
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            name: default_name(),
            description: String::new(),
            seed: 0,
            base_page: default_base_page(),
            max_reference: default_max_reference(),
            max_memory: default_max_memory(),
            tlb: TlbConfig::default(),
            walk_caches: Vec::new(),
            page_table: PageTableConfig::default(),
            frames: FramesConfig::default(),
            cost: CostConfig::default(),
            promotion: PromotionConfig::default(),
            mechanism: MechanismConfig::default(),
            cache: crate::cache::CacheConfig::default(),
            paging: PagingConfig::default(),
        }
    }
}

/// A configuration problem, naming the file (if any), the line or field, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

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
