//! What range translations are configured by: the `[ranges]` section, how the
//! operating system allocates memory and so what ranges it can make (Gandhi et al.,
//! "Range Translations for Fast Virtual Memory", IEEE Micro 2016, "Eager Paging"), and
//! the range unit a TLB level may carry (`tlb.levels[].range`).

use serde::{Deserialize, Serialize};

/// How the operating system allocates a region's memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Allocation {
    /// A frame at a page's first touch (a page fault), as Linux does.
    #[default]
    Demand,
    /// All of a region's memory when it is allocated, in the largest blocks the buddy
    /// allocator has, each run of contiguous frames one range (Fig. 6).
    Eager,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RangesConfig {
    /// "demand" or "eager". Default "demand" (no ranges).
    pub allocation: Allocation,
    /// Eager paging falls back to demand paging for a region allocated while more
    /// than this share of free memory lies outside blocks of the largest size
    /// (`frames.max_block`), Fig. 6's fragmentation test. From 0 to 1. Default 0.5.
    pub fragmentation_threshold: f64,
    /// The direct segment of each process, for a level with a `range` of kind
    /// "direct-segment": "largest" (the largest range eager paging made) or
    /// "0xSTART-0xEND" (the largest range inside those addresses). Default "largest".
    pub segment: String,
    /// Regions allocated (eagerly) before the trace starts, in address space 0, as if
    /// mapped before it: for traces that carry no allocation events (address lists,
    /// ChampSim, lackey). Each "0xSTART-0xEND" or "0xSTART+SIZE" (SIZE as "4G").
    /// Default none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<String>,
}

impl Default for RangesConfig {
    fn default() -> Self {
        RangesConfig {
            allocation: Allocation::Demand,
            fragmentation_threshold: 0.5,
            segment: "largest".into(),
            regions: Vec::new(),
        }
    }
}

impl RangesConfig {
    pub fn is_default(&self) -> bool {
        *self == RangesConfig::default()
    }

    /// `fragmentation_threshold`, or an error naming it if it is outside [0, 1].
    pub fn threshold(&self) -> Result<f64, String> {
        let t = self.fragmentation_threshold;
        if (0.0..=1.0).contains(&t) {
            Ok(t)
        } else {
            Err(format!(
                "ranges.fragmentation_threshold: {t} is outside [0, 1]"
            ))
        }
    }

    /// The addresses `segment` restricts the direct segment to (`None`: anywhere), or
    /// an error naming the field.
    pub fn segment_bounds(&self) -> Result<Option<(u64, u64)>, String> {
        let s = self.segment.trim();
        if s == "largest" {
            return Ok(None);
        }
        span(s).map(Some).ok_or_else(|| {
            format!("ranges.segment: {s:?} is neither \"largest\" nor addresses \"0xSTART-0xEND\" or \"0xSTART+SIZE\"")
        })
    }

    /// `regions` as (start, end) addresses, or an error naming the entry.
    pub fn region_spans(&self) -> Result<Vec<(u64, u64)>, String> {
        self.regions
            .iter()
            .enumerate()
            .map(|(i, r)| {
                span(r).ok_or_else(|| {
                    format!("ranges.regions[{i}]: {r:?} is not \"0xSTART-0xEND\" or \"0xSTART+SIZE\" with a non-empty extent")
                })
            })
            .collect()
    }
}

/// "0xSTART-0xEND" or "0xSTART+SIZE" as (start, end), END above START.
fn span(text: &str) -> Option<(u64, u64)> {
    let hex = |t: &str| {
        let t = t.trim();
        u64::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
    };
    let (a, b) = if let Some((a, size)) = text.split_once('+') {
        let a = hex(a)?;
        (
            a,
            a.checked_add(crate::addr::parse_bytes(size.trim()).ok()?)?,
        )
    } else {
        let (a, b) = text.split_once('-')?;
        (hex(a)?, hex(b)?)
    };
    (a < b).then_some((a, b))
}

/// What a range unit is (its lookup and fill: `RangeTlb` in `tlb.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RangeUnitKind {
    /// RMM's range TLB: `entries` ranges, filled by the range-table walker.
    #[default]
    RangeTlb,
    /// One direct segment per process, chosen by `ranges.segment`; never walks.
    DirectSegment,
}

impl RangeUnitKind {
    /// Every kind, as the tests that must run each one take them.
    pub const ALL: &'static [RangeUnitKind] =
        &[RangeUnitKind::RangeTlb, RangeUnitKind::DirectSegment];

    /// Its name in a configuration (`tlb.levels[].range.kind`).
    pub fn name(self) -> &'static str {
        match self {
            RangeUnitKind::RangeTlb => "range-tlb",
            RangeUnitKind::DirectSegment => "direct-segment",
        }
    }
}

/// The translation a range hit refills the levels below with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RangeFill {
    /// The base page (4K), as §4.1 describes.
    #[default]
    Base,
    /// The largest page the level below holds that lies whole in the range, aligned
    /// alike virtually and physically.
    Largest,
}

/// A range TLB or a direct segment beside a TLB level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RangeTlbConfig {
    /// "range-tlb" or "direct-segment". Default "range-tlb".
    pub kind: RangeUnitKind,
    /// Shown in reports. Default "range-tlb" (or "direct-segment").
    pub name: String,
    /// Entries, fully associative (a direct segment has one). Default 32, the paper's.
    pub entries: usize,
    /// Replacement policy by name. Default "lru".
    pub replacement: String,
    /// Cycles a hit adds. Default: the level's `hit_cycles` (looked up in parallel).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_cycles: Option<f64>,
    /// What a hit refills the levels below with: "base" or "largest". Default "base".
    pub fill: RangeFill,
}

impl Default for RangeTlbConfig {
    fn default() -> Self {
        RangeTlbConfig {
            kind: RangeUnitKind::RangeTlb,
            name: String::new(),
            entries: 32,
            replacement: "lru".into(),
            hit_cycles: None,
            fill: RangeFill::Base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ALL` is every kind serde knows (its error for an unknown kind lists them),
    /// each read back from its name.
    #[test]
    fn every_unit_kind_is_listed_under_its_name() {
        let e = toml::from_str::<RangeTlbConfig>("kind = \"nope\"")
            .unwrap_err()
            .to_string();
        // "expected `a` or `b`", or "expected one of `a`, `b`, `c`".
        let list = e
            .lines()
            .find_map(|l| l.split_once("unknown variant `nope`, expected "))
            .unwrap_or_else(|| panic!("{e}"))
            .1
            .trim_start_matches("one of ")
            .replace(" or ", ", ");
        let known: Vec<&str> = list
            .split(", ")
            .map(|n| n.trim().trim_matches('`'))
            .collect();
        let names: Vec<&str> = RangeUnitKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(known, names, "{e}");
        for &kind in RangeUnitKind::ALL {
            let c: RangeTlbConfig = toml::from_str(&format!("kind = {:?}", kind.name())).unwrap();
            assert_eq!(c.kind, kind);
        }
    }

    #[test]
    fn spans_read_as_ends_or_sizes() {
        assert_eq!(span("0x1000-0x3000"), Some((0x1000, 0x3000)));
        assert_eq!(
            span("0x7f1200000000+4G"),
            Some((0x7f12_0000_0000, 0x7f13_0000_0000))
        );
        assert_eq!(span("0x3000-0x1000"), None);
        assert_eq!(span("0x1000+0"), None);
        assert_eq!(span("somewhere"), None);
    }
}
