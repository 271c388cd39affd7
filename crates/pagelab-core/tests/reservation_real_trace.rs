//! Reservations (Navarro) on a real program: on the bundled trace of bzip2
//! decompressing 300 KB (`data/traces/bunzip2-rec.plt`, whose inverse Burrows-Wheeler
//! transform walks a 1.2 MB array at random), the `alpha-21264` preset (8K base pages,
//! 128-entry TLBs, 8K/64K/512K/4M pages, 512 MB of buddy memory: plentiful) with the
//! `reservation` policy removes at least 90 % of the TLB misses that base pages make.
//!
//! "TLB misses" are walks, as `pagelab simulate --baseline` counts them (its "TLB
//! misses removed" is 1 - walks with the policy / walks with base pages); the same by
//! hand:
//!
//!     pagelab simulate --machine alpha-21264 --policy reservation \
//!         --trace data/traces/bunzip2-rec.plt --baseline

use pagelab_core::config::{FramesConfig, PromotionConfig};
use pagelab_core::{presets, trace, Machine};
use std::path::Path;

/// Walks and page faults of the Alpha preset with `promotion` over the bunzip2 trace,
/// with a share `wired` of memory wired at random first.
fn run_wired(promotion: PromotionConfig, wired: f64) -> (u64, u64) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces/bunzip2-rec.plt");
    let mut config = presets::load("alpha-21264").unwrap();
    config.promotion = promotion;
    match &mut config.frames {
        FramesConfig::Buddy(b) => b.wired = wired,
        other => panic!("alpha-21264 has a buddy allocator, not {other:?}"),
    }
    let mut machine = Machine::build(&config).unwrap();
    let mut reader = trace::open(&path, None).unwrap_or_else(|e| panic!("{e}"));
    machine
        .run_trace(reader.as_mut(), &path, |_, _| {})
        .unwrap();
    machine.check_policy().unwrap();
    let counts = &machine.report().counts;
    (counts.walks, counts.page_faults)
}

fn run(promotion: PromotionConfig) -> (u64, u64) {
    run_wired(promotion, 0.0)
}

#[test]
fn reservations_remove_nine_tenths_of_the_tlb_misses_of_bunzip2() {
    let (base, base_faults) = run(PromotionConfig::None {});
    let (resv, _) = run(PromotionConfig::Reservation(Default::default()));
    // Base pages miss many times per page touched (the working set is beyond the
    // TLB's reach of 1 MiB): most misses are not the compulsory ones (first touches)
    // that no policy can remove.
    assert!(
        base >= 20 * base_faults,
        "base pages: {base} TLB misses for {base_faults} pages touched"
    );
    let removed = 1.0 - resv as f64 / base as f64;
    assert!(
        removed >= 0.90,
        "reservations remove {:.1}% of the TLB misses: {resv} with reservations, {base} with base pages only",
        100.0 * removed
    );
    // The run is deterministic: its exact walks (99.2 % removed), pinned so that any
    // change to them shows.
    assert_eq!((base, resv), (35_676, 289));
}

/// The benefit falls as wired pages fragment memory. The array the trace walks needs
/// about twenty 64K blocks: reservations keep finding them until a third of memory
/// is wired at random (a 64K block of sixteen 4 KiB frames is then free with
/// probability (2/3)^16), and then lose nearly all their benefit. On the way the walks
/// need not grow strictly: fewer promotions also drop fewer TLB entries (each
/// promotion invalidates its range), so the order is checked to within 1 % of the
/// base-page walks.
#[test]
fn reservations_on_bunzip2_lose_their_benefit_as_memory_fragments() {
    let (base, _) = run(PromotionConfig::None {});
    let mut last = 0;
    let mut removed = Vec::new();
    for wired in [0.0, 0.2, 0.3, 0.35, 0.4] {
        let (walks, _) = run_wired(PromotionConfig::Reservation(Default::default()), wired);
        removed.push((wired, 1.0 - walks as f64 / base as f64));
        assert!(
            walks + base / 100 >= last,
            "{wired} of memory wired: {walks} walks, fewer than {last} with less wired ({removed:?})"
        );
        last = walks;
    }
    let (_, at_most) = removed[removed.len() - 1];
    assert!(
        at_most < 0.1,
        "with 40 % of memory wired reservations still remove {:.1}% of the misses ({removed:?})",
        100.0 * at_most
    );
}
