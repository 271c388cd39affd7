//! Building a machine: a configuration resolved into its components (the TLB, the page
//! table, physical memory, the cost model, the promotion policy), every value the types
//! cannot check checked here, with the field named.

use super::*;
use crate::config::PageTableConfig;
use crate::pagetable::{build_page_table, Walk};
use crate::tlb::WalkCaches;

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

/// What a virtualized machine cannot have yet: remapped superpages (a guest cannot
/// ask the host's memory controller for shadow frames), a pager, range translations,
/// coalesced entries.
fn check_virtualized(config: &MachineConfig) -> Result<(), String> {
    use crate::config::{MechanismConfig, PromotionConfig};
    let promotes = !matches!(config.promotion, PromotionConfig::None {});
    if promotes && matches!(config.mechanism, MechanismConfig::Remap(_)) {
        return Err("mechanism.kind: a virtualized guest promotes by copying (\"copy\"); \"remap\" needs shadow frames of the memory controller, which are the host's".into());
    }
    let refused = if config.paging.is_on() {
        "memory pressure ([paging])"
    } else if !config.ranges.is_default() {
        "range translations ([ranges])"
    } else if config.coalescing.is_some() {
        "coalesced TLB entries ([coalescing])"
    } else {
        return Ok(());
    };
    Err(format!(
        "virtualization: a virtualized machine does not model {refused} yet"
    ))
}

/// What the host side and the TLB must agree on: a host page smaller than the base
/// page makes entries of that size, which some array must hold.
fn check_host_pages(
    host_base: PageSize,
    config: &MachineConfig,
    tlb: &Hierarchy,
) -> Result<(), String> {
    if host_base < config.base_page && !tlb.path_sizes(DATA).iter().any(|s| *s <= host_base) {
        return Err(format!(
            "virtualization.host_page_table: the host maps {host_base} pages, smaller than base_page ({}), and no TLB array holds pages that small",
            config.base_page
        ));
    }
    Ok(())
}

/// What coalescing and multi-size THP cannot be combined with yet: a policy that
/// follows the TLB's entries (coalescing widens them), and folios under a pager
/// (which learns of the faulting page only).
fn check_contiguity(
    config: &MachineConfig,
    promoter: &crate::superpage::Promoter,
) -> Result<(), String> {
    let policy = promoter.policy.as_ref();
    if config.coalescing.is_some() && policy.is_some_and(|p| p.tracks_tlb() || p.reads_tlb()) {
        return Err("coalescing: the promotion policy follows the TLB's entries, which coalescing widens; not modelled yet".into());
    }
    if config.paging.is_on() && policy.is_some_and(|p| !p.fault_folios().is_empty()) {
        return Err(
            "promotion.folio_sizes: folios under memory pressure ([paging]) are not modelled yet"
                .into(),
        );
    }
    Ok(())
}

impl Machine {
    /// Resolve a configuration into components; errors name the field.
    pub fn build(config: &MachineConfig) -> Result<Machine, crate::config::ConfigError> {
        let err = crate::config::ConfigError;
        super::estimate::check(config).map_err(err)?;
        if config.virtualization.is_some() {
            check_virtualized(config).map_err(err)?;
        }
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
        let buddy = config.frames.buddy();
        let promoter = crate::superpage::Promoter::build(
            &config.promotion,
            &config.mechanism,
            &crate::superpage::Surroundings {
                base: config.base_page,
                table_sizes: page_table.as_ref().page_sizes(),
                inverted_table: matches!(config.page_table, PageTableConfig::Inverted(_)),
                held: tlb.path_sizes(DATA),
                one_walking_level: tlb.path_names(DATA).last()
                    == tlb.path_names(INSTRUCTION).last(),
                walking_entries: tlb.walking_entries(DATA),
                max_block: buddy.map(|b| b.max_block),
            },
        )
        .map_err(err)?;
        // The sizes whose free blocks fragmentation counts, and the daemon weighs.
        let frag_sizes: Vec<PageSize> = if promoter.sizes.is_empty() {
            let held = tlb.last_level_sizes(DATA);
            held.into_iter().filter(|s| *s > config.base_page).collect()
        } else {
            promoter.sizes.clone()
        };
        let daemon = config.paging.daemon.build(buddy.is_some()).map_err(err)?;
        let frees_blocks = daemon.frees_blocks();
        let pager = if config.paging.is_on() {
            let p = crate::pressure::Pager::build(
                &config.paging,
                daemon,
                config.base_page,
                frag_sizes.clone(),
                promoter.largest,
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
        let contents = (promoter.policy.is_some() || pager.is_some()).then(Default::default);
        let cache = crate::cache::build(&config.cache).map_err(err)?;
        let nested = match &config.virtualization {
            Some(v) => {
                let n = crate::virt::Nested::build(v, config.seed).map_err(err)?;
                check_host_pages(n.host_base(), config, &tlb).map_err(err)?;
                Some(Box::new(n))
            }
            None => None,
        };
        check_contiguity(config, &promoter).map_err(err)?;
        let ranges = build_ranges(config, &tlb).map_err(err)?;
        let mut machine = Machine {
            config: config.clone(),
            ranges,
            peak_frames: 0,
            warmup_at: None,
            warm: None,
            repeat_shift: tlb.min_first_page_bytes().trailing_zeros(),
            walker: Walker {
                walk_caches: WalkCaches::build(&config.walk_caches, table_levels, config.seed)
                    .map_err(err)?,
                page_table,
                frames: crate::frames::build(
                    &config.frames,
                    config.base_page,
                    frag_sizes.first().copied().unwrap_or(config.base_page),
                    frees_blocks,
                    config.seed,
                )
                .map_err(err)?,
                base_page: config.base_page,
                walk: Walk::new(),
                promoter,
                contents,
                swap,
                cache,
                walk_log: None,
                nested,
                entry: None,
                coalesce: match &config.coalescing {
                    Some(c) => Some(
                        crate::tlb::Coalescing::build(c, config.base_page, &tlb.path_sizes(DATA))
                            .map_err(err)?,
                    ),
                    None => None,
                },
                tap: None,
            },
            tlb,
            cost: crate::cost::build(&config.cost).map_err(err)?,
            decoupled: true,
            misses: Vec::new(),
            cached: None,
            cache_thread: super::cached::second_core_default(),
            max_reference: check_max_reference(config.max_reference).map_err(err)?,
            kernel: false,
            counts: Counts::default(),
            current_asid: Asid(0),
            filter_of: [0, if tlb_split { 1 } else { 0 }],
            miss_crosses,
            repeat_filter: true,
            repeat_choice: Default::default(),
            last_page: [u64::MAX; 2],
            last_asid: [Asid(0); 2],
            last_shift: [0; 2],
            repeats: [[0; 64]; 2],
            fragmentation: crate::frames::sampling::Fragmentation::new(
                config.frames.buddy().map_or(0, |b| b.sample_every),
                frag_sizes,
            ),
            pager,
        };
        machine.kernel = machine.tlb.base_parts(DATA, config.base_page).is_some();
        if machine
            .walker
            .promoter
            .policy
            .as_ref()
            .is_some_and(|p| p.tracks_tlb())
        {
            machine.tlb.track_walking_victims();
        }
        // Superpages make walks return larger pages, the pager needs every walk and
        // write, and eager paging's unmaps would change what a caches' pass reads:
        // such runs go in order (see `in_order_only`).
        machine.set_decoupled(true);
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
