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

mod coalescing;
pub mod overrides;
mod preset_texts;
#[cfg(test)]
mod tests;

/// The kinds an internally tagged configuration enum accepts (`kind = "…"`), in the
/// variants' order, as serde lists them in its error for an unknown kind: what each
/// registry's `NAMES` is checked against.
#[cfg(test)]
pub(crate) fn serde_kinds<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> Vec<String> {
    let e = toml::from_str::<T>("kind = \"no-such-kind\"")
        .unwrap_err()
        .to_string();
    // "unknown variant `no-such-kind`, expected `a`" / "expected one of `a`, `b`"
    e.split('`')
        .skip(3)
        .step_by(2)
        .map(str::to_string)
        .collect()
}
mod tlb;
mod variant;
mod virtualization;

pub use crate::addr::ByteSize;
pub use crate::cost::{CostConfig, SimpleCostConfig};
pub use crate::frames::{BuddyFramesConfig, FramesConfig, SimpleFramesConfig};
pub use crate::pagetable::PageTableConfig;
pub use crate::pressure::{DaemonKind, PagingConfig};
pub use crate::range::config::*;
pub use crate::superpage::mechanism::{CopyConfig, MechanismConfig, RemapConfig};
pub use crate::superpage::{
    AsapConfig, OnlineConfig, PromotionConfig, ReservationConfig, StaticPromotionConfig,
    StaticRegion, ThpConfig,
};
pub use coalescing::{CoalesceKind, CoalescingConfig};
pub use preset_texts::PRESETS;
pub use tlb::*;
pub use virtualization::VirtualizationConfig;

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
    /// How memory is allocated for range translations (`crate::range`): demand or
    /// eager paging. Default demand (no ranges).
    #[serde(default, skip_serializing_if = "RangesConfig::is_default")]
    pub ranges: RangesConfig,
    /// Virtualized translation: the host's page table, memory and caches under the
    /// guest this machine's other sections describe (`crate::virt`). Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtualization: Option<VirtualizationConfig>,
    /// TLB entries that cover a run of base pages whose frames are contiguous
    /// (`crate::tlb::coalesce`), held by the arrays whose `page_sizes` have the run's
    /// size. Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalescing: Option<CoalescingConfig>,
    /// The dotted-key settings this configuration was made with from its named machine
    /// (`--set`, `Machine.with_overrides`, a sweep's keys), kept for the record: every
    /// report carries them. They change nothing else.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub settings: std::collections::BTreeMap<String, toml::Value>,
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
            ranges: RangesConfig::default(),
            virtualization: None,
            coalescing: None,
            settings: Default::default(),
        }
    }
}

/// A configuration problem, naming the file (if any), the line or field, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

impl MachineConfig {
    /// Parse a TOML document; `origin` names it in errors, with the line of the field
    /// at fault.
    pub fn from_toml(text: &str, origin: &str) -> Result<MachineConfig, ConfigError> {
        if let Some(merged) = variant::resolve(text, origin)? {
            // Positions in the merged document mean nothing to the reader: the error
            // names the field instead.
            return toml::from_str(&merged).map_err(|e| {
                ConfigError(format!(
                    "{origin} (a variant): {}",
                    e.message().trim().replace('\n', " ")
                ))
            });
        }
        toml::from_str(text).map_err(|e| {
            let message = e.message().trim().replace('\n', " ");
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count());
            let at = match line.map(|l| field_at_fault(text, l, e.message())) {
                Some((line, Some(key))) => format!(" line {}: {key}:", line + 1),
                Some((line, None)) => format!(" line {}:", line + 1),
                None => String::new(),
            };
            ConfigError(format!("{origin}:{at} {message}"))
        })
    }

    pub fn load(path: &Path) -> Result<MachineConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("{}: cannot read: {e}", path.display())))?;
        MachineConfig::from_toml(&text, &path.display().to_string())
    }

    /// This configuration with dotted-key overrides (`tlb.levels.stlb.ways = 16`):
    /// see [`overrides`].
    pub fn with_overrides(
        &self,
        overrides: &[(String, toml::Value)],
    ) -> Result<MachineConfig, ConfigError> {
        overrides::apply(self, overrides).map_err(ConfigError)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("configurations serialize")
    }
}

/// The field behind an error reported at line `line` (0-based), with its line.
///
/// A table of a tagged kind (`[page_table] kind = "hashed"`) is read as a whole before
/// its fields are, so an error in one of them (a type error, a value out of range) is
/// reported at the table's header. Then each `key = value` line of that table is left
/// out in turn: the one whose absence changes the error is the field at fault. When
/// none does, the error stays at the header.
fn field_at_fault(text: &str, line: usize, message: &str) -> (usize, Option<String>) {
    let lines: Vec<&str> = text.lines().collect();
    // The table a header line names ("tlb.levels" for `[[tlb.levels]]`).
    let header = |l: &str| {
        let l = l.trim();
        l.starts_with('[')
            .then(|| l.trim_matches(|c| c == '[' || c == ']').trim().to_string())
    };
    let Some(table) = lines.get(line).and_then(|l| header(l)) else {
        // The error is at a field's own line: name its key.
        let key = lines
            .get(line)
            .and_then(|l| l.split_once('='))
            .map(|(k, _)| k.trim().to_string());
        return (line, key);
    };
    // The table's lines, with those of the tables inside it.
    let inside = |l: &str| header(l).is_none_or(|h| h.starts_with(&format!("{table}.")));
    for i in (line + 1..lines.len()).take_while(|&i| inside(lines[i])) {
        let Some((key, _)) = lines[i].split_once('=') else {
            continue;
        };
        let without: String = lines
            .iter()
            .enumerate()
            .map(|(j, l)| {
                if j == i {
                    "\n".to_string()
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        // Leaving out a line of a value written over several lines breaks the syntax:
        // no answer from that line.
        if toml::from_str::<toml::Table>(&without).is_err() {
            continue;
        }
        // (A required field left out, a table's kind say, changes the error too,
        // to its absence: not an answer.)
        let changed = match toml::from_str::<MachineConfig>(&without) {
            Ok(_) => true,
            Err(e) => e.message() != message && !e.message().starts_with("missing field"),
        };
        if changed {
            return (i, Some(key.trim().to_string()));
        }
    }
    (line, None)
}
