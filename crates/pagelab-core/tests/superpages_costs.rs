//! What superpage promotion costs and saves, measured on the machine:
//! - reservations (Navarro) on the Alpha preset remove nearly every TLB miss of a
//!   column walk, and less and less of them as wired pages fragment memory;
//! - on the 4096-page microbenchmark of Fang et al., "Online Superpage Promotion
//!   Revisited", SIGMETRICS 2000, §4.1 with the PA-RISC 128-entry preset, remap+asap
//!   breaks even after tens of references per page and copy+asap only after hundreds
//!   to thousands (§5.1);
//! - with a cache model, a copy's reads and writes go through the caches, and
//!   remapping flushes the remapped pages and pays the controller's lookups;
//! - transparent huge pages are mapped at faults, or collapsed later by the background
//!   pass;
//! - approx-online charges the same with Romer's `tlbcount` shortcut as by reading the
//!   TLB at each miss.
//! That promotion never changes what an address reaches is in superpages_integrity.rs
//! and superpages_pressure.rs.

use pagelab_core::config::{
    FramesConfig, MechanismConfig, OnlineConfig, PromotionConfig, RemapConfig, ThpConfig,
};
use pagelab_core::trace::synthetic;
use pagelab_core::{presets, AccessKind, Asid, Batch, Machine, MachineConfig, MemRef, PageSize};
use proptest::prelude::*;

/// Total cycles of a run of the microbenchmark.
fn cycles(config: &MachineConfig, iterations: u64) -> f64 {
    let mut m = Machine::build(config).unwrap();
    let mut r = synthetic::parse(&format!("column-walk:iterations={iterations}")).unwrap();
    m.run_trace(r.as_mut(), std::path::Path::new("column-walk"), |_, _| {})
        .unwrap();
    m.report().cycles.total()
}

/// The first number of iterations (references per page), among powers of two from
/// `from` to `to`, at which `policy` takes fewer cycles than base pages do.
fn break_even(base: &MachineConfig, policy: &MachineConfig, from: u64, to: u64) -> Option<u64> {
    let mut n = from;
    while n <= to {
        if cycles(policy, n) < cycles(base, n) {
            return Some(n);
        }
        n *= 2;
    }
    None
}

#[test]
fn remap_breaks_even_after_tens_of_references_copy_after_hundreds_to_thousands() {
    let base = presets::load("pa-risc-128").unwrap();
    let with = |mechanism: MechanismConfig| MachineConfig {
        promotion: PromotionConfig::Asap(Default::default()),
        mechanism,
        ..base.clone()
    };
    let remap = with(MechanismConfig::Remap(Default::default()));
    let copy = with(MechanismConfig::Copy(Default::default()));
    let remap_even = break_even(&base, &remap, 1, 4096).expect("remap+asap breaks even");
    assert!(
        (8..=64).contains(&remap_even),
        "remap+asap breaks even after {remap_even} references per page"
    );
    // Copying loses at every count remapping wins at, and breaks even only later.
    let copy_even = break_even(&base, &copy, 128, 4096).expect("copy+asap breaks even");
    assert!(cycles(&copy, remap_even) > cycles(&base, remap_even));
    assert!(
        (256..=4096).contains(&copy_even),
        "copy+asap breaks even after {copy_even} references per page"
    );
    // The paper's "tens" and "hundreds to thousands" above; the first powers of two
    // at which this deterministic run breaks even, pinned so that any change shows
    // (remap's sits at the top of the paper's band).
    assert_eq!((remap_even, copy_even), (64, 1024));
}

/// Walks of a column walk (64 references to each of 4096 pages of 8 KiB) on the Alpha
/// preset with reservations, with `wired` of memory wired at random first.
fn reservation_walks(wired: f64) -> (u64, u64) {
    let mut c = presets::load("alpha-21264").unwrap();
    c.promotion = PromotionConfig::Reservation(Default::default());
    if let FramesConfig::Buddy(b) = &mut c.frames {
        b.wired = wired;
    }
    let mut m = Machine::build(&c).unwrap();
    let mut r = synthetic::parse("column-walk:iterations=64,row_bytes=8192").unwrap();
    m.run_trace(r.as_mut(), std::path::Path::new("column-walk"), |_, _| {})
        .unwrap();
    m.check_policy().unwrap();
    let counts = &m.report().counts;
    (counts.walks, counts.page_faults)
}

#[test]
fn reservations_remove_misses_less_as_memory_fragments() {
    // Base pages: every reference misses (4096 pages, 128 entries).
    let base = 4096 * 64;
    let (plentiful, faults) = reservation_walks(0.0);
    // Every miss but the compulsory ones (one fault per page) is gone, and more.
    assert!(
        plentiful <= base / 10,
        "{plentiful} walks of {base} with plentiful memory"
    );
    assert_eq!(faults, 4096);
    let mut last = plentiful;
    for wired in [0.01, 0.05, 0.2] {
        let (walks, _) = reservation_walks(wired);
        assert!(
            walks > last,
            "{wired} of memory wired: {walks} walks, not more than {last}"
        );
        last = walks;
    }
}

/// pa-risc-128 with the typical caches and `policy` + `mechanism`, over one pass of
/// the column walk: the report.
fn cached_column_walk(mechanism: MechanismConfig) -> pagelab_core::Report {
    let mut c = presets::load("pa-risc-128").unwrap();
    c.promotion = PromotionConfig::Asap(Default::default());
    c.mechanism = mechanism;
    c.cache = pagelab_core::cache::CacheConfig::typical();
    let mut m = Machine::build(&c).unwrap();
    let mut r = synthetic::parse("column-walk:iterations=2").unwrap();
    m.run_trace(r.as_mut(), std::path::Path::new("column-walk"), |_, _| {})
        .unwrap();
    m.report()
}

/// With a cache model a copy's reads and writes go through the caches (every line of
/// the old page read, every line of the new one written), and cost what the caches
/// say; remapping copies nothing, flushes the remapped pages' lines, and pays the
/// controller's lookup on shadow references that reach memory.
#[test]
fn promotion_traffic_goes_through_the_cache_model() {
    let copy = cached_column_walk(MechanismConfig::Copy(Default::default()));
    let k = copy.cache.as_ref().expect("a cache report");
    let lines_per_page = 4096 / 64;
    let c = &copy.counts;
    assert!(c.pages_copied > 0);
    // The first level sees every copy reference.
    let l1 = &k.levels[0];
    assert_eq!(
        l1.hits.copy + l1.misses.copy,
        2 * lines_per_page * c.pages_copied + lines_per_page * c.pages_zeroed
    );
    assert_eq!(copy.cycles.promotions, k.cycles.copy);
    // Data and walk references are there too, one data reference per reference.
    assert_eq!(l1.hits.data + l1.misses.data, c.references);
    assert_eq!(
        l1.hits.walk + l1.misses.walk,
        c.walk_refs + c.fault_walk_refs
    );

    // A controller lookup of its own (none by default, as Fang et al.'s machine).
    let remap = cached_column_walk(MechanismConfig::Remap(RemapConfig {
        lookup_cycles: 10.0,
        ..Default::default()
    }));
    let k = remap.cache.as_ref().expect("a cache report");
    let c = &remap.counts;
    assert!(c.pages_remapped > 0 && c.pages_copied == 0);
    assert_eq!(k.levels[0].hits.copy + k.levels[0].misses.copy, 0);
    assert!(k.levels.iter().map(|l| l.flushed).sum::<u64>() > 0);
    // The second pass reads remapped pages, from memory: through the controller.
    assert!(c.controller_lookups > 0);
}

/// Transparent huge pages: with faults, a 16 MiB column walk faults 8 huge pages;
/// without, the background pass collapses every range once its pages are mapped.
#[test]
fn thp_maps_huge_pages_at_faults_or_collapses_them_later() {
    let run = |fault: bool| {
        let mut c = presets::load("skylake").unwrap();
        c.promotion = PromotionConfig::Thp(ThpConfig {
            fault,
            max_ptes_none: 0,
            scan_every: 4096,
            ..ThpConfig::default()
        });
        let mut m = Machine::build(&c).unwrap();
        let mut r = synthetic::parse("column-walk:iterations=4").unwrap();
        m.run_trace(r.as_mut(), std::path::Path::new("column-walk"), |_, _| {})
            .unwrap();
        m.report().counts
    };
    let at_faults = run(true);
    assert_eq!((at_faults.page_faults, at_faults.large_faults), (8, 8));
    assert_eq!(at_faults.promotions, 0);
    let later = run(false);
    assert_eq!((later.page_faults, later.large_faults), (4096, 0));
    assert_eq!(later.promotions, 8);
    assert_eq!(later.pages_copied, 4096);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// approx-online charges the same with Romer's `tlbcount` shortcut (counts kept
    /// as the walking level's entries come and go) as by reading the TLB at each
    /// miss: the whole reports agree, on streams of two address spaces, with a
    /// one-level TLB and with an L1 under an STLB (the level whose misses walk).
    #[test]
    fn tlbcount_charges_exactly_as_reading_the_tlb(
        refs in prop::collection::vec((0u16..2, 0u64..3, 0u64..1024), 1..600),
        threshold in 1u64..4,
    ) {
        let regions = [0x4000_0000u64, 0x4040_0000, 0x9000_0000];
        let batch = Batch {
            refs: refs
                .iter()
                .map(|&(asid, r, page)| MemRef {
                    asid: Asid(asid),
                    ..MemRef::new(regions[r as usize] + (page << 12), 8, AccessKind::Load)
                })
                .collect(),
            events: vec![],
        };
        for (preset, sizes) in [("pa-risc-32", vec![]), ("skylake", vec![PageSize::M2])] {
            let run = |tlbcount: bool| {
                let mut c = presets::load(preset).unwrap();
                c.promotion = PromotionConfig::ApproxOnline(OnlineConfig {
                    sizes: sizes.clone(),
                    threshold,
                    tlbcount,
                    ..OnlineConfig::default()
                });
                let mut m = Machine::build(&c).unwrap();
                for chunk in batch.refs.chunks(50) {
                    m.run_batch(&Batch { refs: chunk.to_vec(), events: vec![] }).unwrap();
                    m.check_policy().unwrap();
                }
                m.report()
            };
            let (shortcut, scan) = (run(true), run(false));
            prop_assert_eq!(&shortcut, &scan, "{}", preset);
        }
    }
}
