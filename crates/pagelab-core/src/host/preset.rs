//! A [`Host`] as a machine configuration: its TLB levels from what CPUID described,
//! everything else from its base preset.
//!
//! Levels: the first-level data, instruction and unified TLBs (`l1d`, `l1i`, `l1`),
//! each missing into the second level of its side, or the unified one (`l2d`, `l2i`,
//! `l2`); a second level walks. Each structure CPUID describes is an array of its
//! level: a fully associative one is one set. Replacement is tree pseudo-LRU and a
//! second-level hit costs what the base preset says, both assumptions of the presets
//! that CPUID does not tell.
//!
//! Data caches: the data and unified levels Linux lists, with the base preset's
//! latencies and policy level by level (`pagelab calibrate` writes this machine's).

use super::tlbs::{Side, Tlb};
use super::Host;
use crate::addr::PageSize;
use crate::cache::{CacheConfig, CacheLevelConfig};
use crate::config::{
    HierarchyConfig, LevelConfig, MachineConfig, Serves, SetAssocConfig, TlbConfig,
};

fn level_name(level: u8, side: Side) -> String {
    let s = match side {
        Side::Data => "d",
        Side::Instruction => "i",
        Side::Unified | Side::Store => "",
    };
    format!("l{level}{s}")
}

/// The hit cycles the base preset gives a level that is not the first.
fn upper_hit_cycles(base: &MachineConfig) -> f64 {
    match &base.tlb {
        TlbConfig::Hierarchy(h) => h.levels.iter().map(|l| l.hit_cycles).fold(0.0, f64::max),
        TlbConfig::SetAssociative(_) => 0.0,
    }
}

/// Whether a level of the base preset serving `side` at `level` holds `size`.
fn base_holds(base: &MachineConfig, level: u8, side: Side, size: PageSize) -> bool {
    let TlbConfig::Hierarchy(h) = &base.tlb else {
        return false;
    };
    let serves = match side {
        Side::Data => Serves::Data,
        Side::Instruction => Serves::Instruction,
        _ => Serves::All,
    };
    // The base's levels of that side, first level first (those with a parent).
    let mut of_side: Vec<&LevelConfig> = h.levels.iter().filter(|l| l.serves == serves).collect();
    of_side.sort_by_key(|l| l.parent.is_none());
    of_side
        .get(level as usize - 1)
        .is_some_and(|l| l.arrays.iter().any(|a| a.page_sizes.contains(&size)))
}

fn array(t: &Tlb) -> SetAssocConfig {
    let (sets, ways) = match t.ways {
        0 => (1, t.entries as usize),
        w => ((t.entries / w).max(1) as usize, w as usize),
    };
    SetAssocConfig {
        sets,
        ways,
        replacement: "plru".into(),
        page_sizes: t.page_sizes.clone(),
        hit_cycles: 0.0,
    }
}

/// The data caches Linux lists (data and unified levels, closest first), with the
/// base preset's latencies level by level (`pagelab calibrate` measures this
/// machine's); the base preset's caches when Linux lists none.
fn caches(host: &Host, base: &MachineConfig, notes: &mut Vec<String>) -> CacheConfig {
    let mut listed: Vec<&crate::host::sysfs::Cache> = Vec::new();
    for c in &host.caches {
        let usable = c.kind != "Instruction"
            && c.sets > 0
            && c.ways > 0
            && c.line_bytes.is_power_of_two()
            && (8..=4096).contains(&c.line_bytes)
            && c.sets.saturating_mul(c.ways) <= crate::cache::MAX_LINES
            && c.ways <= crate::cache::MAX_WAYS as u64;
        // One cache a level (a second listing of a level is left out).
        if usable && !listed.iter().any(|l| l.level == c.level) {
            listed.push(c);
        }
    }
    if listed.is_empty() || base.cache.levels.is_empty() {
        notes.push(format!(
            "data caches: the {} preset's (Linux lists none that pagelab can model)",
            host.base
        ));
        return base.cache.clone();
    }
    let levels: Vec<CacheLevelConfig> = listed
        .iter()
        .map(|c| {
            // The base preset's level of the same number (its last, past its levels).
            let n = (c.level.max(1) as usize - 1).min(base.cache.levels.len() - 1);
            let from = &base.cache.levels[n];
            CacheLevelConfig {
                name: if c.kind == "Data" {
                    format!("l{}d", c.level)
                } else {
                    format!("l{}", c.level)
                },
                sets: c.sets as usize,
                ways: c.ways as usize,
                hit_cycles: from.hit_cycles,
                replacement: from.replacement.clone(),
                line_bytes: (c.line_bytes != 64).then_some(c.line_bytes),
            }
        })
        .collect();
    notes.push(format!(
        "data caches: sizes from /sys; hit latencies ({}) and memory latency ({} cycles) are the {} preset's: `pagelab calibrate -o FILE` measures this machine's",
        levels
            .iter()
            .map(|l| format!("{} {}", l.name, l.hit_cycles))
            .collect::<Vec<_>>()
            .join(", "),
        base.cache.memory_cycles,
        host.base
    ));
    CacheConfig {
        levels,
        line_bytes: 64,
        memory_cycles: base.cache.memory_cycles,
    }
}

pub(super) fn config(host: &Host) -> Result<(MachineConfig, Vec<String>), String> {
    // The base preset's text (not through `presets`, which builds this one).
    let text = crate::config::PRESETS
        .iter()
        .find(|(n, _)| *n == host.base)
        .map(|(_, t)| *t)
        .ok_or_else(|| format!("no preset {:?}", host.base))?;
    let base = MachineConfig::from_toml(text, &format!("machines/{}.toml", host.base))
        .map_err(|e| e.to_string())?;
    let mut notes = host.notes.clone();
    let mut config = base.clone();
    config.name = "host".into();
    config.cache = caches(host, &base, &mut notes);
    let processor = host.brand.clone().unwrap_or_else(|| host.vendor.clone());
    let tlbs: Vec<&Tlb> = host.tlbs.iter().filter(|t| t.side != Side::Store).collect();
    for t in host.tlbs.iter().filter(|t| t.side == Side::Store) {
        notes.push(format!(
            "the store-only TLB ({} entries, {}) is not modelled: stores use the data TLB",
            t.entries, t.source
        ));
    }
    if tlbs.is_empty() {
        notes.push(format!(
            "CPUID describes no TLB here (a hypervisor may hide them): the TLBs are the {} preset's",
            host.base
        ));
        config.description = format!(
            "{processor}: the TLBs, costs and walk caches of the {} preset",
            host.base
        );
        return Ok((config, notes));
    }
    let mut levels: Vec<LevelConfig> = Vec::new();
    let mut keys: Vec<(u8, Side)> = tlbs.iter().map(|t| (t.level.max(1), t.side)).collect();
    keys.sort_by_key(|&(level, side)| (level, side as u8));
    keys.dedup();
    let top = keys.iter().map(|k| k.0).max().unwrap_or(1);
    for &(level, side) in &keys {
        let mut arrays: Vec<SetAssocConfig> = tlbs
            .iter()
            .filter(|t| (t.level.max(1), t.side) == (level, side))
            .map(|t| array(t))
            .collect();
        // AMD's 1G TLBs are in leaf 80000019H, which a hypervisor may leave empty.
        let has_1g = arrays.iter().any(|a| a.page_sizes.contains(&PageSize::G1));
        if host.base == "zen4" && !has_1g && base_holds(&base, level, side, PageSize::G1) {
            if let Some(a) = arrays
                .iter_mut()
                .find(|a| a.page_sizes.contains(&PageSize::M2))
            {
                a.page_sizes.push(PageSize::G1);
                notes.push(format!(
                    "{}: holds 1G pages as the {} preset's does (CPUID 80000019H describes no 1G TLB)",
                    level_name(level, side),
                    host.base
                ));
            }
        }
        for (i, a) in arrays.iter().enumerate() {
            for size in &a.page_sizes {
                if arrays[..i].iter().any(|b| b.page_sizes.contains(size)) {
                    notes.push(format!(
                        "{}: two structures hold {size} pages; a {size} translation fills only the first, so the level holds fewer of them than the processor does",
                        level_name(level, side)
                    ));
                }
            }
        }
        let parent = (level < top)
            .then(|| {
                [(level + 1, side), (level + 1, Side::Unified)]
                    .into_iter()
                    .find(|k| keys.contains(k))
            })
            .flatten()
            .map(|(l, s)| level_name(l, s));
        levels.push(LevelConfig {
            name: level_name(level, side),
            serves: match side {
                Side::Data => Serves::Data,
                Side::Instruction => Serves::Instruction,
                _ => Serves::All,
            },
            parent,
            hit_cycles: if level > 1 {
                upper_hit_cycles(&base)
            } else {
                0.0
            },
            arrays,
            range: None,
        });
    }
    let flush_on_switch = match &base.tlb {
        TlbConfig::Hierarchy(h) => h.flush_on_switch,
        TlbConfig::SetAssociative(_) => false,
    };
    config.tlb = TlbConfig::Hierarchy(HierarchyConfig {
        flush_on_switch,
        levels,
    });
    let shapes: Vec<String> = host
        .tlbs
        .iter()
        .filter(|t| t.side != Side::Store)
        .map(|t| {
            let sizes: Vec<String> = t.page_sizes.iter().map(|s| s.to_string()).collect();
            let side = format!("{:?}", t.side).to_lowercase();
            format!("L{} {side} {}×{}", t.level, t.entries, sizes.join("|"))
        })
        .collect();
    config.description = format!(
        "{processor}: TLBs from CPUID ({}); replacement, second-level hit cycles, walk caches and costs of the {} preset",
        shapes.join(", "),
        host.base
    );
    crate::Machine::build(&config)
        .map_err(|e| format!("the host preset built from CPUID is not a machine: {e}"))?;
    Ok((config, notes))
}
