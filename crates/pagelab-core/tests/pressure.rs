//! Memory pressure (`pagelab_core::pressure`), end to end on the machine:
//! - under a resident limit below the footprint the daemon reclaims, pages come back
//!   by major faults with their data, and the resident set is never above the limit
//!   once the daemon has run (a real trace, with and without superpages);
//! - a limit the run never reaches changes nothing but the pager's own report;
//! - the first write to a clean superpage demotes it once, and it is promoted back
//!   (in place) when all its base pages are dirty; a superpage made by a write, or
//!   written without `demote_on_write`, is not demoted;
//! - the contiguity-aware daemon completes more free 64K blocks than the clock on a
//!   stream whose cold pages are interleaved with hot ones in physical memory;
//! - configurations a run cannot work with are errors naming the field.
//! The integrity property under pressure, for every policy and both mechanisms, is in
//! tests/superpages_pressure.rs.

use pagelab_core::config::{
    AsapConfig, ByteSize, DaemonKind, FramesConfig, MechanismConfig, PagingConfig, PromotionConfig,
    ReservationConfig, SimpleFramesConfig,
};
use pagelab_core::trace;
use pagelab_core::{presets, AccessKind, Asid, Batch, Machine, MachineConfig, MemRef, PageSize};
use pagelab_core::{Report, VirtAddr};
use std::path::Path;

const XZ: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/traces/xz.plt");

fn run_xz(config: &MachineConfig) -> (Machine, Report) {
    let mut m = Machine::build(config).unwrap();
    let mut r = trace::open(Path::new(XZ), None).unwrap();
    m.run_trace(r.as_mut(), Path::new(XZ), |_, _| {}).unwrap();
    let report = m.report();
    (m, report)
}

/// Alpha with reservations of 64K and 512K (so that a limit of 2M is allowed).
fn alpha_reservation() -> MachineConfig {
    let mut c = presets::load("alpha-21264").unwrap();
    c.promotion = PromotionConfig::Reservation(ReservationConfig {
        sizes: vec![PageSize::K64, PageSize::K512],
        ..ReservationConfig::default()
    });
    c
}

fn limited(mut c: MachineConfig, bytes: u64) -> MachineConfig {
    c.paging = PagingConfig {
        resident_limit: ByteSize(bytes),
        demote_on_write: true,
        ..PagingConfig::default()
    };
    c
}

#[test]
fn a_limit_below_the_footprint_reclaims_and_brings_pages_back() {
    let mut none = presets::load("alpha-21264").unwrap();
    none.promotion = PromotionConfig::None {};
    for (name, config) in [("reservation", alpha_reservation()), ("none", none)] {
        let (_, free) = run_xz(&config);
        // xz touches 410 pages of 8 KiB; 2 MiB holds 256.
        let (m, r) = run_xz(&limited(config, 2 << 20));
        let c = &r.counts;
        let p = r.paging.as_ref().expect("a paging report");
        assert_eq!(p.resident_limit_pages, 256);
        assert!(c.pages_reclaimed > 0 && c.major_faults > 0, "{name}: {c:?}");
        assert!(c.major_faults <= c.pages_reclaimed, "{name}");
        assert!(p.max_resident_after_daemon <= 256, "{name}: {p:?}");
        assert!(p.resident_pages <= 256, "{name}");
        // Every page is resident or swapped, never both: pages reclaimed and not read
        // back are those in the swap store.
        assert_eq!(
            c.pages_reclaimed - c.major_faults,
            p.swapped_pages,
            "{name}: {c:?} {p:?}"
        );
        assert_eq!(
            c.page_faults,
            free.counts.page_faults + c.major_faults,
            "{name}"
        );
        assert!(r.cycles.major_faults > 0.0);
        m.check_paging(&mut std::iter::empty()).unwrap();
        m.check_policy().unwrap();
        assert!(m.stale_tlb_entries().is_empty());
    }
}

#[test]
fn a_limit_the_run_never_reaches_changes_nothing_but_the_pagers_report() {
    for config in [alpha_reservation(), presets::load("alpha-21264").unwrap()] {
        let (_, free) = run_xz(&config);
        let (_, mut roomy) = run_xz(&limited(config, 64 << 20));
        let p = roomy.paging.take().expect("a paging report");
        assert_eq!((p.daemon_wakes, roomy.counts.pages_reclaimed), (0, 0));
        assert_eq!(roomy, free);
    }
}

/// pa-risc-32 (4K base pages) with asap promoting 16K superpages by copying, every
/// write tracked; `stream` of (page, write) in one 16K block and beyond.
fn written(demote_on_write: bool, stream: &[(u64, bool)]) -> Machine {
    let mut c = presets::load("pa-risc-32").unwrap();
    c.promotion = PromotionConfig::Asap(AsapConfig {
        sizes: vec![PageSize::from_shift(14).unwrap()],
        ..AsapConfig::default()
    });
    c.mechanism = MechanismConfig::Copy(Default::default());
    c.paging.demote_on_write = demote_on_write;
    let mut m = Machine::build(&c).unwrap();
    for &(page, write) in stream {
        let kind = if write {
            AccessKind::Store
        } else {
            AccessKind::Load
        };
        m.run_batch(&Batch {
            refs: vec![MemRef::new(0x4000_0000 + (page << 12) + 8, 8, kind)],
            events: vec![],
        })
        .unwrap();
        m.check_policy().unwrap();
        m.check_paging(&mut std::iter::empty()).unwrap();
        assert!(m.stale_tlb_entries().is_empty());
    }
    m
}

#[test]
fn the_first_write_to_a_clean_superpage_demotes_it_and_all_pages_dirty_promote_it_back() {
    let reads: Vec<(u64, bool)> = (0..4).map(|p| (p, false)).collect();
    let mut stream = reads.clone();
    // One write: demoted once; more writes to that page, and reads, change nothing.
    stream.extend([(1, true), (1, true), (0, false), (2, false), (1, true)]);
    let m = written(true, &stream);
    let c = m.counts();
    assert_eq!((c.promotions, c.demotions_write, c.repromotions), (1, 1, 0));
    // Every page written: promoted back, in place (its frames never moved).
    stream.extend([(0, true), (2, true), (3, true)]);
    let m = written(true, &stream);
    let c = m.counts();
    assert_eq!((c.promotions, c.demotions_write, c.repromotions), (2, 1, 1));
    assert_eq!((c.promotions_in_place, c.pages_copied), (1, 4));
    // Now dirty: further writes demote nothing.
    stream.extend([(1, true), (3, true)]);
    assert_eq!(written(true, &stream).counts().demotions_write, 1);
    // Without demote_on_write, the superpage just becomes dirty.
    let c = written(false, &stream).counts().clone();
    assert_eq!((c.promotions, c.demotions_write, c.repromotions), (1, 0, 0));
    // A superpage whose last page a write faulted in is dirty from the start.
    let stores: Vec<(u64, bool)> = (0..4).map(|p| (p, p == 3)).chain([(0, true)]).collect();
    let c = written(true, &stores).counts().clone();
    assert_eq!((c.promotions, c.demotions_write), (1, 0));
}

#[test]
fn reservations_demote_on_write_and_promote_back_in_place() {
    let mut c = alpha_reservation();
    c.paging.demote_on_write = true;
    let mut m = Machine::build(&c).unwrap();
    let page = |p: u64, kind| MemRef::new(0x4000_0000 + (p << 13), 8, kind);
    // Read the 8 pages of a 64K block (promoted in place), write one, then all.
    let mut refs: Vec<MemRef> = (0..8).map(|p| page(p, AccessKind::Load)).collect();
    refs.push(page(5, AccessKind::Modify));
    refs.extend((0..8).map(|p| page(p, AccessKind::Store)));
    for r in refs {
        m.run_batch(&Batch {
            refs: vec![r],
            events: vec![],
        })
        .unwrap();
        m.check_policy().unwrap();
        m.check_paging(&mut std::iter::empty()).unwrap();
    }
    let c = m.counts();
    assert_eq!((c.promotions, c.promotions_in_place), (2, 2));
    assert_eq!((c.demotions_write, c.repromotions), (1, 1));
}

/// Free 64K blocks the daemon's frees completed, and the share of free memory in
/// blocks of 64K at the end, on a stream whose cold pages (B) sit between hot ones (A)
/// in physical memory, then cold pages (C) alone, then the hot pages in a loop while
/// new pages (D) press on the limit.
fn restored(daemon: DaemonKind) -> (u64, u64, f64) {
    let mut c = presets::load("alpha-21264").unwrap();
    c.promotion = PromotionConfig::None {};
    c.paging = PagingConfig {
        resident_limit: ByteSize(400 << 13),
        daemon,
        contiguity_window: 256,
        ..PagingConfig::default()
    };
    let mut m = Machine::build(&c).unwrap();
    let at =
        |region: u64, page: u64| MemRef::new((region << 30) + (page << 13), 8, AccessKind::Load);
    let mut refs = Vec::new();
    for i in 0..128 {
        refs.push(at(1, i));
        refs.push(at(2, i));
    }
    refs.extend((0..128).map(|i| at(3, i)));
    for d in 0..96 {
        refs.extend((0..128).map(|i| at(1, i)));
        refs.push(at(4, d));
    }
    m.run_batch(&Batch {
        refs,
        events: vec![],
    })
    .unwrap();
    m.check_paging(&mut std::iter::empty()).unwrap();
    let r = m.report();
    let p = r.paging.unwrap();
    let share = r.fragmentation.last().unwrap().usable_share[0];
    (r.counts.contiguity_restored, p.blocks_restored[0].1, share)
}

#[test]
fn the_contiguity_aware_daemon_restores_more_free_blocks_than_the_clock() {
    let (clock, clock_64k, clock_share) = restored(DaemonKind::Clock);
    let (aware, aware_64k, aware_share) = restored(DaemonKind::Contiguity);
    assert_eq!((clock, aware), (clock_64k, aware_64k));
    assert!(
        aware > clock,
        "contiguity-aware {aware} blocks restored, clock {clock}"
    );
    assert!(
        aware_share >= clock_share,
        "free memory usable for 64K: {aware_share} against the clock's {clock_share}"
    );
}

#[test]
fn configurations_a_run_cannot_work_with_name_the_field() {
    let small = limited(alpha_reservation(), 256 << 10);
    let mut contiguity_simple = MachineConfig::default();
    contiguity_simple.frames = FramesConfig::Simple(SimpleFramesConfig::default());
    contiguity_simple.paging = PagingConfig {
        resident_limit: ByteSize(1 << 20),
        daemon: DaemonKind::Contiguity,
        ..PagingConfig::default()
    };
    let mut target = MachineConfig::default();
    target.paging = PagingConfig {
        resident_limit: ByteSize(1 << 20),
        free_target: 0.9,
        ..PagingConfig::default()
    };
    let mut window = MachineConfig::default();
    window.paging = PagingConfig {
        resident_limit: ByteSize(1 << 20),
        contiguity_window: 0,
        ..PagingConfig::default()
    };
    let mut cost = MachineConfig::default();
    let s = cost.cost.as_simple_mut().unwrap();
    s.major_fault_cycles = -1.0;
    for (c, field) in [
        (small, "paging.resident_limit"),
        (contiguity_simple, "paging.daemon"),
        (target, "paging.free_target"),
        (window, "paging.contiguity_window"),
        (cost, "cost.major_fault_cycles"),
    ] {
        let e = Machine::build(&c).err().expect("refused");
        assert!(e.0.contains(field), "{field}: {e}");
    }
    let e = MachineConfig::from_toml("[paging]\nresident_limt = \"1M\"\n", "m.toml").unwrap_err();
    assert!(e.0.contains("resident_limt"), "{e}");
    let e = MachineConfig::from_toml("[paging]\ndaemon = \"lru\"\n", "m.toml").unwrap_err();
    assert!(e.0.contains("lru"), "{e}");
    let c = MachineConfig::from_toml("[paging]\nresident_limit = \"64M\"\n", "m.toml").unwrap();
    assert_eq!(c.paging.resident_limit, ByteSize(64 << 20));
    assert_eq!(MachineConfig::from_toml(&c.to_toml(), "t").unwrap(), c);
}

/// A page the daemon took comes back with its own data, by a major fault.
#[test]
fn a_reclaimed_page_comes_back_with_its_data() {
    let mut c = MachineConfig::default();
    c.paging.resident_limit = ByteSize(16 << 12);
    let mut m = Machine::build(&c).unwrap();
    let refs: Vec<MemRef> = (0..40u64)
        .map(|p| MemRef::new(p << 12, 8, AccessKind::Store))
        .collect();
    m.run_batch(&Batch {
        refs,
        events: vec![],
    })
    .unwrap();
    let va = VirtAddr(0);
    assert_eq!(m.data_at(Asid(0), va), None);
    assert_eq!(m.swapped_data(Asid(0), va), Some((Asid(0), 0)));
    let before = m.counts().major_faults;
    m.run_batch(&Batch {
        refs: vec![MemRef::new(8, 8, AccessKind::Load)],
        events: vec![],
    })
    .unwrap();
    assert_eq!(m.counts().major_faults, before + 1);
    assert_eq!(m.data_at(Asid(0), va), Some((Asid(0), 0)));
    assert_eq!(m.swapped_data(Asid(0), va), None);
    let c = m.counts();
    assert_eq!(
        c.pages_written_back, c.pages_reclaimed,
        "every page was written"
    );
    m.check_paging(&mut (0..41u64).map(|p| (Asid(0), VirtAddr(p << 12))))
        .unwrap();
}
