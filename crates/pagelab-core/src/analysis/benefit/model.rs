//! What the benefit analysis takes from a machine: the fully associative TLBs its
//! data side is modelled as, the large page sizes it has, and the costs of a TLB miss
//! and a page fault.
//!
//! Equation 1 holds for a fully associative LRU TLB, so the paper models a real one as
//! a fully associative TLB of its size (§3.1, footnote 1). pagelab takes, for each page
//! size, the data-side array with the most entries that holds it (the last level, in
//! every preset): pages of sizes that share that array (Zen 4's and Skylake's L2 TLBs
//! hold 4K and 2M pages) form one stream in one TLB of its entries; sizes held by
//! different arrays (Sandy Bridge's 512-entry 4K STLB and 32-entry 2M DTLB array) are
//! separate streams, each in a TLB of its own array's entries.

use crate::config::{SetAssocConfig, TlbConfig};
use crate::{MachineConfig, PageSize};
use serde::Serialize;

/// The model of one machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MachineModel {
    pub machine: String,
    /// For each page size the data side holds: its array's name and entries, and the
    /// array's index (sizes with the same index share it).
    pub tlbs: Vec<ModelTlb>,
    /// Large page sizes the TLBs and the page table both have, smallest first.
    pub large_sizes: Vec<PageSize>,
    /// Cycles of a TLB miss (C_TLBmiss) and of a page fault (C_PF).
    pub tlb_miss_cycles: f64,
    pub page_fault_cycles: f64,
    /// What a large page's fault adds for each base page of it beyond the first
    /// (clearing it): the cost model's `large_fault_cycles_per_page`.
    pub large_fault_cycles_per_page: f64,
    /// Cycles of a reference apart from translation (for the run-time estimate).
    pub base_cycles_per_ref: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelTlb {
    pub page_size: PageSize,
    pub array: String,
    pub entries: u64,
    #[serde(skip)]
    pub index: usize,
}

impl MachineModel {
    /// The TLB that holds pages of `size`.
    pub fn tlb(&self, size: PageSize) -> Option<&ModelTlb> {
        self.tlbs.iter().find(|t| t.page_size == size)
    }
}

/// The model of `config`; `tlb_miss_cycles` and `page_fault_cycles` override the
/// costs taken from it (a miss: the cost model's `miss_cycles` plus `walk_ref_cycles`
/// for each reference of a walk that no paging-structure cache shortens, one per
/// level of a radix table and one for any other structure; a fault:
/// `page_fault_cycles`).
pub fn model(
    config: &MachineConfig,
    tlb_miss_cycles: Option<f64>,
    page_fault_cycles: Option<f64>,
) -> Result<MachineModel, String> {
    // Whatever the machine's own checks refuse (zero-way arrays, costs that are not
    // numbers), refused here too.
    crate::Machine::build(config)
        .map_err(|e| e.to_string())
        .map(drop)?;
    if config.base_page != PageSize::K4 {
        return Err(format!(
            "base_page: the analysis maps small pages of 4K; the machine's are {}",
            config.base_page
        ));
    }
    for (name, v) in [
        ("C_TLBmiss (--tlb-miss-cycles)", tlb_miss_cycles),
        ("C_PF (--page-fault-cycles)", page_fault_cycles),
    ] {
        if let Some(v) = v {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!(
                    "{name}: {v} is not a cost (a number of cycles, 0 or more)"
                ));
            }
        }
    }
    // Data-side arrays: (name, entries, sizes).
    let mut arrays: Vec<(String, u64, &SetAssocConfig)> = Vec::new();
    match &config.tlb {
        TlbConfig::SetAssociative(a) => arrays.push(("tlb".into(), entries(a), a)),
        TlbConfig::Hierarchy(h) => {
            for level in &h.levels {
                if level.serves == crate::config::Serves::Instruction {
                    continue;
                }
                for (i, a) in level.arrays.iter().enumerate() {
                    let name = if level.arrays.len() == 1 {
                        level.name.clone()
                    } else {
                        format!("{}[{i}]", level.name)
                    };
                    arrays.push((name, entries(a), a));
                }
            }
        }
    }
    let mut tlbs: Vec<ModelTlb> = Vec::new();
    for (index, (name, n, a)) in arrays.iter().enumerate() {
        for &size in &a.page_sizes {
            match tlbs.iter_mut().find(|t| t.page_size == size) {
                // The later of two equal arrays: the level further from the core.
                Some(t) if t.entries > *n => {}
                Some(t) => {
                    *t = ModelTlb {
                        page_size: size,
                        array: name.clone(),
                        entries: *n,
                        index,
                    }
                }
                None => tlbs.push(ModelTlb {
                    page_size: size,
                    array: name.clone(),
                    entries: *n,
                    index,
                }),
            }
        }
    }
    tlbs.sort_by_key(|t| t.page_size);
    if !tlbs.iter().any(|t| t.page_size == PageSize::K4) {
        return Err("tlb: no data-side array holds 4K pages".into());
    }
    let table = crate::pagetable::build_page_table(&config.page_table)
        .map_err(|e| format!("page_table: {e}"))?;
    let table_sizes = table.as_ref().page_sizes().to_vec();
    let large_sizes = tlbs
        .iter()
        .map(|t| t.page_size)
        .filter(|&s| s > PageSize::K4 && table_sizes.contains(&s))
        .collect();
    let cost = config.cost.as_simple().ok_or_else(|| {
        format!(
            "{}: the benefit analysis charges a linear cost model's cycles: set cost.kind = \"simple\"",
            config.name
        )
    })?;
    let walk_refs = match &config.page_table {
        crate::pagetable::PageTableConfig::Radix(r) => r.levels as f64,
        _ => 1.0,
    };
    Ok(MachineModel {
        machine: config.name.clone(),
        tlbs,
        large_sizes,
        tlb_miss_cycles: tlb_miss_cycles
            .unwrap_or(cost.miss_cycles + cost.walk_ref_cycles * walk_refs),
        page_fault_cycles: page_fault_cycles.unwrap_or(cost.page_fault_cycles),
        large_fault_cycles_per_page: cost.large_fault_cycles_per_page,
        base_cycles_per_ref: cost.base_cycles_per_ref,
    })
}

fn entries(a: &SetAssocConfig) -> u64 {
    (a.sets * a.ways) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_give_their_largest_arrays() {
        let m = model(&crate::presets::load("sandy-bridge").unwrap(), None, None).unwrap();
        let of = |m: &MachineModel, s| {
            let t = m.tlb(s).unwrap();
            (t.array.clone(), t.entries, t.index)
        };
        assert_eq!(of(&m, PageSize::K4).1, 512);
        assert_eq!(of(&m, PageSize::M2).1, 32);
        assert_eq!(of(&m, PageSize::G1).1, 4);
        assert_ne!(of(&m, PageSize::K4).2, of(&m, PageSize::M2).2);
        assert_eq!(m.large_sizes, [PageSize::M2, PageSize::G1]);
        // 4 levels of 12 cycles.
        assert_eq!((m.tlb_miss_cycles, m.page_fault_cycles), (48.0, 5700.0));
        let z = model(&crate::presets::load("zen4").unwrap(), Some(100.0), None).unwrap();
        assert_eq!(of(&z, PageSize::K4), of(&z, PageSize::M2));
        assert_eq!(of(&z, PageSize::K4).1, 3072);
        assert_eq!(z.tlb_miss_cycles, 100.0);
        let e = model(&crate::presets::load("zen4").unwrap(), Some(-1.0), None).unwrap_err();
        assert!(e.starts_with("C_TLBmiss"), "{e}");
    }
}
