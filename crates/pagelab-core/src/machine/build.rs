//! Building a machine: a configuration resolved into its components (the TLB, the page
//! table, physical memory, the cost model, the promotion policy), every value the types
//! cannot check checked here, with the field named.

use super::*;
use crate::config::{FramesConfig, PageTableConfig};
use crate::pagetable::{build_page_table, Walk};
use crate::tlb::WalkCaches;

/// The candidate superpage sizes of the promotion policy, ascending: those configured
/// (each must be larger than the base page and mapped by the page table) or, by
/// default, every size above the base page that the page table maps and some level on
/// the TLB's data path holds (a superpage only a first level holds still saves its
/// misses there, as on Sandy Bridge, whose second level holds only 4K pages).
fn candidate_sizes(
    config: &MachineConfig,
    table: &[PageSize],
    tlb: &Hierarchy,
) -> Result<Vec<PageSize>, String> {
    let Some(named) = config.promotion.configured_sizes() else {
        return Ok(Vec::new());
    };
    let list = |v: &[PageSize]| {
        v.iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut sizes = named.to_vec();
    sizes.sort();
    sizes.dedup();
    for s in &sizes {
        if *s <= config.base_page {
            return Err(format!(
                "promotion.sizes: {s} is not larger than the base page ({})",
                config.base_page
            ));
        }
        if !table.contains(s) {
            return Err(format!(
                "promotion.sizes: the page table cannot map {s} pages (it maps {}; set page_table.page_sizes)",
                list(table)
            ));
        }
    }
    if sizes.is_empty() {
        let held = tlb.path_sizes(DATA);
        sizes = table
            .iter()
            .copied()
            .filter(|s| *s > config.base_page && held.contains(s))
            .collect();
        if sizes.is_empty() {
            return Err(format!(
                "promotion.sizes: no page size above the base page is both mapped by the page table ({}) and held by the TLB ({}); name the sizes",
                list(table),
                list(&held)
            ));
        }
    }
    Ok(sizes)
}

/// The machine's range translations, with what they need of the rest checked.
fn build_ranges(config: &MachineConfig, tlb: &Hierarchy) -> Result<crate::range::Ranges, String> {
    use crate::config::{RangeUnitKind, TlbConfig};
    let unit_at = match &config.tlb {
        TlbConfig::Hierarchy(h) => h
            .levels
            .iter()
            .position(|l| l.range.is_some())
            .map(|i| format!("tlb.levels[{i}].range")),
        TlbConfig::SetAssociative(_) => None,
    };
    let cx = crate::range::machine_state::Context {
        unit_at,
        segments: tlb
            .range_unit()
            .is_some_and(|(u, _)| u.kind == RangeUnitKind::DirectSegment),
        buddy_max_block: config.frames.buddy().map(|b| b.max_block),
        base_page: config.base_page,
        promotion: !matches!(config.promotion, crate::config::PromotionConfig::None {}),
        paging: config.paging.is_on(),
    };
    crate::range::Ranges::build(&config.ranges, &cx)
}

fn check_max_reference(b: crate::addr::ByteSize) -> Result<u64, String> {
    if !(4096..=1 << 32).contains(&b.0) {
        return Err(format!(
            "max_reference: {} is out of range (from 4K to 4G)",
            crate::addr::format_bytes(b.0)
        ));
    }
    Ok(b.0)
}

impl Machine {
    /// Resolve a configuration into components; errors name the field.
    pub fn build(config: &MachineConfig) -> Result<Machine, crate::config::ConfigError> {
        let err = crate::config::ConfigError;
        super::estimate::check(config).map_err(err)?;
        let tlb = Hierarchy::build(&config.tlb, config.base_page, config.seed).map_err(err)?;
        let page_table = build_page_table(&config.page_table).map_err(err)?;
        if !page_table.as_ref().page_sizes().contains(&config.base_page) {
            return Err(err(format!(
                "base_page: the page table cannot map {} pages (it maps {})",
                config.base_page,
                page_table
                    .as_ref()
                    .page_sizes()
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let table_levels = match &config.page_table {
            PageTableConfig::Radix(r) => Some(r.levels),
            _ => None,
        };
        let tlb_split = tlb.path_names(DATA)[0] != tlb.path_names(INSTRUCTION)[0];
        let miss_crosses = [DATA, INSTRUCTION].map(|side| tlb.miss_reaches_other_first(side));
        let sizes = candidate_sizes(config, page_table.as_ref().page_sizes(), &tlb).map_err(err)?;
        if let FramesConfig::Buddy(b) = &config.frames {
            if let Some(s) = sizes.iter().find(|&&s| s > b.max_block) {
                return Err(err(format!(
                    "promotion.sizes: {s} is larger than frames.max_block ({}), so memory can never give a block for it",
                    b.max_block
                )));
            }
        }
        let remap = matches!(config.mechanism, crate::config::MechanismConfig::Remap(_));
        if remap
            && matches!(config.page_table, PageTableConfig::Inverted(_))
            && !matches!(config.promotion, crate::config::PromotionConfig::None {})
        {
            return Err(err(
                "mechanism.kind: remap maps superpages to shadow frames, which an inverted page table (one entry per real frame) cannot hold".into(),
            ));
        }
        let cx = crate::superpage::Context {
            sizes: &sizes,
            base: config.base_page,
            table_sizes: page_table.as_ref().page_sizes(),
            one_walking_level: tlb.path_names(DATA).last() == tlb.path_names(INSTRUCTION).last(),
            walking_entries: tlb.walking_entries(DATA),
        };
        let policy = crate::superpage::build(&config.promotion, &cx).map_err(err)?;
        let policy_hits = policy.as_ref().is_some_and(|p| p.follows_hits());
        let frag_sizes = if sizes.is_empty() {
            let held = tlb.last_level_sizes(DATA);
            held.into_iter().filter(|s| *s > config.base_page).collect()
        } else {
            sizes.clone()
        };
        let mechanism = crate::superpage::mechanism::build(&config.mechanism).map_err(err)?;
        let pager = if config.paging.is_on() {
            // The largest page a fault or a promotion maps (THP: its huge page).
            let largest = config
                .promotion
                .largest_page(&sizes)
                .map_or(config.base_page, |l| l.max(config.base_page));
            let buddy = matches!(config.frames, FramesConfig::Buddy(_));
            let p = crate::pressure::Pager::build(
                &config.paging,
                config.base_page,
                frag_sizes.clone(),
                largest,
                buddy,
            )
            .map_err(err)?;
            Some(Box::new(p))
        } else {
            None
        };
        let swap = pager
            .as_ref()
            .filter(|p| p.limit > 0)
            .map(|_| Default::default());
        let contents = (policy.is_some() || pager.is_some()).then(Default::default);
        let cache = if config.cache.is_off() {
            None
        } else {
            Some(crate::cache::CacheHierarchy::new(&config.cache).map_err(err)?)
        };
        let ranges = build_ranges(config, &tlb).map_err(err)?;
        let mut machine = Machine {
            config: config.clone(),
            ranges,
            peak_frames: 0,
            repeat_shift: tlb.min_first_page_bytes().trailing_zeros(),
            walker: Walker {
                walk_caches: WalkCaches::build(&config.walk_caches, table_levels, config.seed)
                    .map_err(err)?,
                page_table,
                frames: crate::frames::build(
                    &config.frames,
                    config.base_page,
                    frag_sizes.first().copied().unwrap_or(config.base_page),
                    config
                        .paging
                        .daemon
                        .build(true)
                        .map_err(err)?
                        .frees_blocks(),
                    config.seed,
                )
                .map_err(err)?,
                base_page: config.base_page,
                walk: Walk::new(),
                policy,
                mechanism,
                contents,
                swap,
                cache,
            },
            tlb,
            cost: crate::cost::build(&config.cost).map_err(err)?,
            decoupled: true,
            misses: Vec::new(),
            max_reference: check_max_reference(config.max_reference).map_err(err)?,
            kernel: false,
            counts: Counts::default(),
            current_asid: Asid(0),
            filter_of: [0, if tlb_split { 1 } else { 0 }],
            miss_crosses,
            repeat_filter: true,
            policy_hits,
            repeat_choice: Default::default(),
            last_page: [u64::MAX; 2],
            last_asid: [Asid(0); 2],
            last_shift: [0; 2],
            repeats: [[0; 64]; 2],
            entries: Vec::new(),
            gathered: Default::default(),
            fragmentation: crate::frames::sampling::Fragmentation::new(
                config.frames.buddy().map_or(0, |b| b.sample_every),
                frag_sizes,
            ),
            controller_cycles: 0.0,
            track_writes: pager.is_some(),
            pager,
        };
        machine.kernel = machine.tlb.base_parts(DATA, config.base_page).is_some();
        if machine
            .walker
            .policy
            .as_ref()
            .is_some_and(|p| p.tracks_tlb())
        {
            machine.tlb.track_walking_victims();
        }
        // Superpages make walks return larger pages, the cache model needs every
        // reference's frame, and the pager every walk and write: runs go in order.
        machine.decoupled = machine.in_order_only();
        // Regions mapped before the trace: eager paging allocates them now.
        for (start, end) in config.ranges.region_spans().map_err(err)? {
            let mmap = crate::event::Event::Alloc(crate::event::Alloc {
                op: crate::event::AllocOp::Mmap,
                addr: start,
                size: end - start,
                old_addr: 0,
                flags: 3, // read-write
                callsite: 0,
            });
            machine
                .eager_event(Asid(0), &mmap)
                .map_err(|e| err(format!("ranges.regions: {}", e.message)))?;
        }
        Ok(machine)
    }
}
