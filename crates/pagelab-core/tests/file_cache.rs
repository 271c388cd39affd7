//! Reservations in memory another program's file cache fills (`frames.cached`), the
//! fragmentation Navarro et al.'s contiguity-restoring page daemon is for ("Practical,
//! Transparent Operating System Support for Superpages", OSDI 2002; slides
//! "Fragmentation control"). Counts pinned exactly: the alpha-21264 preset (512 MB,
//! 8K base pages) with 97 % of memory cached, reservations, a column-wise walk of a
//! 32 MB matrix three times; the same by hand:
//!
//!     pagelab simulate --config alpha-cached.toml \
//!         --synthetic column-walk:iterations=3,rows=4000,row_bytes=8000

use pagelab_core::config::{DaemonKind, FramesConfig, MachineConfig, PromotionConfig};
use pagelab_core::trace::synthetic;
use pagelab_core::{presets, Machine};

const WALK: &str = "column-walk:iterations=3,rows=4000,row_bytes=8000";

fn config(cached: f64, daemon: DaemonKind) -> MachineConfig {
    let mut c = presets::load("alpha-21264").unwrap();
    c.promotion = PromotionConfig::Reservation(Default::default());
    c.paging.daemon = daemon;
    match &mut c.frames {
        FramesConfig::Buddy(b) => b.cached = cached,
        other => panic!("alpha-21264 has a buddy allocator, not {other:?}"),
    }
    c
}

/// Walks, and the cache frames evicted (for memory, for contiguity).
fn run(config: &MachineConfig) -> (u64, Option<(u64, u64)>) {
    let mut m = Machine::build(config).unwrap();
    let mut r = synthetic::parse(WALK).unwrap();
    m.run_trace(r.as_mut(), std::path::Path::new("column-walk"), |_, _| {})
        .unwrap();
    m.check_policy().unwrap();
    let report = m.report();
    let cache = report
        .file_cache
        .map(|c| (c.evicted_for_memory, c.evicted_for_contiguity));
    (report.counts.walks, cache)
}

#[test]
fn the_clock_leaves_the_cache_fragmenting_memory_and_the_contiguity_daemon_restores_it() {
    let (best, none) = run(&config(0.0, DaemonKind::Clock));
    assert_eq!((best, none), (3929, None));
    // The clock frees the oldest cache pages, only when memory is short: the walk's
    // pages mostly fall where no block is free, and it walks more than twice as often.
    assert_eq!(
        run(&config(0.97, DaemonKind::Clock)),
        (8615, Some((3836, 0)))
    );
    // The contiguity daemon frees whole blocks of the cache: every reservation the
    // best case makes, and as many walks.
    assert_eq!(
        run(&config(0.97, DaemonKind::Contiguity)),
        (3929, Some((0, 6474)))
    );
}

#[test]
fn the_cache_is_refused_outside_a_share_of_memory() {
    for bad in [-0.1, 1.0, f64::NAN] {
        let err = Machine::build(&config(bad, DaemonKind::Clock))
            .err()
            .unwrap();
        assert!(err.to_string().contains("frames.cached"), "{err}");
    }
}
