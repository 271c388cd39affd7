//! Superpage promotion, checked end to end on the machine:
//! - no policy, with either mechanism, ever changes the data an address reaches, and
//!   no TLB level keeps a stale translation after a promotion (random streams, every
//!   policy, copy and remap, three page-table structures);
//! - nor under memory pressure: with a random resident limit below the stream's
//!   footprint and random writes, reclaims, speculative and write demotions,
//!   re-promotions and major faults never change the data an address reaches (each
//!   page is resident with its data or in the swap store with it, never both), leave
//!   no stale translation, and the pager's resident set agrees with the page table
//!   and stays within the limit (every policy, copy and remap, both daemons);
//! - the policies' population counts agree with the page table, and a reservation's
//!   populated pages sit in its own frames;
//! - reservations (Navarro) on the Alpha preset remove nearly every TLB miss of a
//!   column walk, and less and less of them as wired pages fragment memory;
//! - on the 4096-page microbenchmark of Fang et al., "Online Superpage Promotion
//! Revisited", SIGMETRICS 2000
//!   §4.1 with the PA-RISC 128-entry preset, remap+asap breaks even after tens of
//!   references per page and copy+asap only after hundreds to thousands (§5.1).

use pagelab_core::config::{
    AsapConfig, BuddyFramesConfig, ByteSize, DaemonKind, FramesConfig, MechanismConfig,
    OnlineConfig, PageTableConfig, PagingConfig, PromotionConfig, RemapConfig, ReservationConfig,
    StaticPromotionConfig, StaticRegion, ThpConfig,
};
use pagelab_core::trace::synthetic;
use pagelab_core::{
    presets, AccessKind, Asid, Batch, Machine, MachineConfig, MemRef, PageSize, VirtAddr,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn sizes(from: u32, to: u32) -> Vec<PageSize> {
    (from..=to)
        .map(|s| PageSize::from_shift(s).unwrap())
        .collect()
}

fn online(threshold: u64, sizes: Vec<PageSize>) -> OnlineConfig {
    OnlineConfig {
        sizes,
        threshold,
        ..OnlineConfig::default()
    }
}

/// Machines with every policy and mechanism, over hashed, variable-radix and x86
/// radix tables.
fn machines() -> Vec<(String, MachineConfig)> {
    let pa = presets::load("pa-risc-32").unwrap();
    let policies = vec![
        ("asap", PromotionConfig::Asap(Default::default())),
        (
            "approx-online",
            PromotionConfig::ApproxOnline(online(1, vec![])),
        ),
        ("online", PromotionConfig::Online(online(2, vec![]))),
        (
            "static",
            PromotionConfig::Static(StaticPromotionConfig {
                regions: vec![StaticRegion {
                    start: 0x4000_0000,
                    bytes: ByteSize(4 << 20),
                    page_size: PageSize::M2,
                }],
            }),
        ),
    ];
    let mechanisms = [
        ("copy", MechanismConfig::Copy(Default::default())),
        ("remap", MechanismConfig::Remap(Default::default())),
    ];
    let mut out = Vec::new();
    // Reservations on the Alpha preset (8K base pages, buddy allocator) and on a
    // small memory that makes them preempt one another.
    let mut alpha = presets::load("alpha-21264").unwrap();
    alpha.promotion = PromotionConfig::Reservation(Default::default());
    out.push(("alpha-21264 reservation".to_string(), alpha.clone()));
    alpha.frames = FramesConfig::Buddy(BuddyFramesConfig {
        memory: ByteSize(6 << 20),
        max_block: PageSize::M4,
        ..BuddyFramesConfig::default()
    });
    out.push(("alpha-21264 reservation 6M".to_string(), alpha));
    // With the cache model: copies go through it, remapped pages are flushed.
    for (m, mechanism) in [
        ("copy", MechanismConfig::Copy(Default::default())),
        ("remap", MechanismConfig::Remap(Default::default())),
    ] {
        let mut c = pa.clone();
        c.promotion = PromotionConfig::Asap(Default::default());
        c.mechanism = mechanism;
        c.cache = pagelab_core::cache::CacheConfig::typical();
        out.push((format!("pa-risc-32 asap {m} cached"), c));
    }
    // Transparent huge pages on skylake: at faults, and by the background pass only.
    for fault in [true, false] {
        let mut c = presets::load("skylake").unwrap();
        c.promotion = PromotionConfig::Thp(ThpConfig {
            fault,
            max_ptes_none: 508,
            scan_every: 20,
            ranges_per_scan: 2,
            ..ThpConfig::default()
        });
        out.push((format!("skylake thp fault={fault} copy"), c.clone()));
        c.mechanism = MechanismConfig::Remap(Default::default());
        out.push((format!("skylake thp fault={fault} remap"), c));
    }
    for (p, promotion) in &policies {
        for (m, mechanism) in &mechanisms {
            let mut c = pa.clone();
            c.promotion = promotion.clone();
            c.mechanism = mechanism.clone();
            out.push((format!("pa-risc-32 {p} {m}"), c.clone()));
            if *p == "online" {
                c.page_table = PageTableConfig::VariableRadix(Default::default());
                if let PageTableConfig::VariableRadix(v) = &mut c.page_table {
                    v.page_sizes = sizes(12, 22);
                }
                out.push((format!("vrpt {p} {m}"), c));
            }
        }
        // The x86 radix table: 2M superpages replace a leaf table.
        let mut c = presets::load("skylake").unwrap();
        c.promotion = match promotion {
            PromotionConfig::ApproxOnline(_) => {
                PromotionConfig::ApproxOnline(online(1, vec![PageSize::M2]))
            }
            other => other.clone(),
        };
        if matches!(
            c.promotion,
            PromotionConfig::Asap(_) | PromotionConfig::Online(_)
        ) {
            continue;
        }
        c.mechanism = MechanismConfig::Remap(Default::default());
        out.push((format!("skylake {p} remap"), c));
    }
    out
}

/// References in three regions: 4 MiB-aligned ones, so that candidates fill up.
fn stream() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((0u64..3, 0u64..1024), 1..400)
}

fn check(name: &str, m: &Machine, touched: &BTreeSet<u64>) -> Result<(), TestCaseError> {
    for &va in touched {
        let want = (Asid(0), va >> 12);
        prop_assert_eq!(
            m.data_at(Asid(0), VirtAddr(va)),
            Some(want),
            "{}: {:#x} no longer reaches its data",
            name,
            va
        );
    }
    let stale = m.stale_tlb_entries();
    prop_assert!(stale.is_empty(), "{}: {:?}", name, stale);
    if let Err(e) = m.check_policy() {
        return Err(TestCaseError::fail(format!("{name}: {e}")));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn promotions_never_change_what_an_address_reaches(refs in stream()) {
        let regions = [0x4000_0000u64, 0x4040_0000, 0x9000_0000];
        for (name, config) in machines() {
            let mut m = Machine::build(&config).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut touched = BTreeSet::new();
            for chunk in refs.chunks(37) {
                let batch = Batch {
                    refs: chunk
                        .iter()
                        .map(|&(r, page)| MemRef::new(regions[r as usize] + (page << 12) + 8, 8, AccessKind::Load))
                        .collect(),
                    events: vec![],
                };
                m.run_batch(&batch).unwrap();
                touched.extend(batch.refs.iter().map(|r| r.addr.0));
                check(&name, &m, &touched)?;
            }
        }
    }
}

/// Machines with every policy and mechanism under a resident limit of `small` base
/// pages (candidate sizes up to 64K, so that so small a limit is allowed) or, for the
/// policies that map 2M pages (static regions, THP), 600 pages.
fn pressured_machines(small: u64, demote_on_write: bool) -> Vec<(String, MachineConfig)> {
    let paging = |pages: u64, base: u32, daemon: DaemonKind| PagingConfig {
        resident_limit: ByteSize(pages << base),
        daemon,
        demote_on_write,
        ..PagingConfig::default()
    };
    let small_sizes = sizes(13, 16);
    let pa = presets::load("pa-risc-32").unwrap();
    let mut out = Vec::new();
    let policies = [
        (
            "asap",
            PromotionConfig::Asap(AsapConfig {
                sizes: small_sizes.clone(),
                ..AsapConfig::default()
            }),
        ),
        (
            "approx-online",
            PromotionConfig::ApproxOnline(online(1, small_sizes.clone())),
        ),
        ("online", PromotionConfig::Online(online(2, small_sizes))),
    ];
    for (p, promotion) in &policies {
        for (m, mechanism) in [
            ("copy", MechanismConfig::Copy(Default::default())),
            ("remap", MechanismConfig::Remap(Default::default())),
        ] {
            let mut c = pa.clone();
            c.promotion = promotion.clone();
            c.mechanism = mechanism;
            c.paging = paging(small, 12, DaemonKind::Clock);
            out.push((format!("pa-risc-32 {p} {m} limited"), c));
        }
    }
    let mut c = pa.clone();
    c.promotion = policies[0].1.clone();
    c.cache = pagelab_core::cache::CacheConfig::typical();
    c.paging = paging(small, 12, DaemonKind::Clock);
    out.push(("pa-risc-32 asap copy cached limited".into(), c));
    let mut c = pa.clone();
    c.paging = paging(small, 12, DaemonKind::Clock);
    out.push(("pa-risc-32 none limited".into(), c));
    // Reservations (8K base pages, 64K blocks), with either daemon, and on a memory
    // small enough that they preempt one another.
    let mut alpha = presets::load("alpha-21264").unwrap();
    alpha.promotion = PromotionConfig::Reservation(ReservationConfig {
        sizes: vec![PageSize::K64],
        ..ReservationConfig::default()
    });
    for daemon in [DaemonKind::Clock, DaemonKind::Contiguity] {
        let mut c = alpha.clone();
        c.paging = paging(small, 13, daemon);
        out.push((format!("alpha-21264 reservation limited {daemon:?}"), c));
    }
    alpha.frames = FramesConfig::Buddy(BuddyFramesConfig {
        memory: ByteSize(2 << 20),
        max_block: PageSize::M4,
        ..BuddyFramesConfig::default()
    });
    alpha.paging = paging(small, 13, DaemonKind::Contiguity);
    out.push(("alpha-21264 reservation 2M limited".into(), alpha));
    // 2M pages: THP at faults and by the background pass, static regions.
    for (m, mechanism) in [
        ("copy", MechanismConfig::Copy(Default::default())),
        ("remap", MechanismConfig::Remap(Default::default())),
    ] {
        let mut c = presets::load("skylake").unwrap();
        c.promotion = PromotionConfig::Thp(ThpConfig {
            max_ptes_none: 508,
            scan_every: 20,
            ranges_per_scan: 2,
            ..ThpConfig::default()
        });
        c.mechanism = mechanism;
        c.paging = paging(600, 12, DaemonKind::Clock);
        out.push((format!("skylake thp {m} limited"), c));
    }
    let mut c = pa;
    c.promotion = PromotionConfig::Static(StaticPromotionConfig {
        regions: vec![StaticRegion {
            start: 0x4000_0000,
            bytes: ByteSize(4 << 20),
            page_size: PageSize::M2,
        }],
    });
    c.paging = paging(600, 12, DaemonKind::Clock);
    out.push(("pa-risc-32 static limited".into(), c));
    out
}

/// Under pressure: every touched address reaches its data, or its page is in the swap
/// store with it (never both); no stale translation; the policy's and the pager's
/// bookkeeping agree with the page table.
fn check_pressured(name: &str, m: &Machine, touched: &BTreeSet<u64>) -> Result<(), TestCaseError> {
    for &va in touched {
        let want = Some((Asid(0), va >> 12));
        let (here, away) = (
            m.data_at(Asid(0), VirtAddr(va)),
            m.swapped_data(Asid(0), VirtAddr(va)),
        );
        prop_assert!(
            (here == want && away.is_none()) || (here.is_none() && away == want),
            "{}: {:#x} reaches {:?}, the swap store holds {:?}",
            name,
            va,
            here,
            away
        );
    }
    let stale = m.stale_tlb_entries();
    prop_assert!(stale.is_empty(), "{}: {:?}", name, stale);
    if let Err(e) = m.check_policy() {
        return Err(TestCaseError::fail(format!("{name}: {e}")));
    }
    let mut all = touched.iter().map(|&va| (Asid(0), VirtAddr(va)));
    if let Err(e) = m.check_paging(&mut all) {
        return Err(TestCaseError::fail(format!("{name}: {e}")));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn pressure_never_changes_what_an_address_reaches(
        refs in prop::collection::vec((0u64..3, 0u64..1024, any::<bool>()), 1..400),
        small in 24u64..96,
        demote_on_write: bool,
    ) {
        let regions = [0x4000_0000u64, 0x4040_0000, 0x9000_0000];
        for (name, config) in pressured_machines(small, demote_on_write) {
            let mut m = Machine::build(&config).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut touched = BTreeSet::new();
            for chunk in refs.chunks(37) {
                let batch = Batch {
                    refs: chunk
                        .iter()
                        .map(|&(r, page, write)| {
                            let kind = if write { AccessKind::Store } else { AccessKind::Load };
                            MemRef::new(regions[r as usize] + (page << 12) + 8, 8, kind)
                        })
                        .collect(),
                    events: vec![],
                };
                m.run_batch(&batch).unwrap_or_else(|e| panic!("{name}: {e}"));
                touched.extend(batch.refs.iter().map(|r| r.addr.0));
                check_pressured(&name, &m, &touched)?;
            }
        }
    }
}

/// The property above is not vacuous: on a stream that revisits a footprint larger
/// than the limit, with writes, every machine of it reclaims, faults pages back in,
/// and (those with superpages) demotes; with demotion on writes some re-promote.
#[test]
fn every_pressured_machine_reclaims_and_demotes() {
    let mut refs = Vec::new();
    for round in 0..3u64 {
        for p in 0..1024u64 {
            let kind = if (p + round) % 3 == 0 {
                AccessKind::Store
            } else {
                AccessKind::Load
            };
            refs.push(MemRef::new(0x4000_0000 + (p << 12) + 8, 8, kind));
        }
        refs.extend((0..64u64).map(|p| MemRef::new(0x9000_0000 + (p << 12), 8, AccessKind::Store)));
    }
    let touched: BTreeSet<u64> = refs.iter().map(|r| r.addr.0).collect();
    let mut repromoted = 0;
    for (name, config) in pressured_machines(48, true) {
        let mut m = Machine::build(&config).unwrap();
        for chunk in refs.chunks(500) {
            m.run_batch(&Batch {
                refs: chunk.to_vec(),
                events: vec![],
            })
            .unwrap();
        }
        let r = m.report();
        let c = &r.counts;
        assert!(c.pages_reclaimed > 0 && c.major_faults > 0, "{name}: {c:?}");
        if !name.contains("none") {
            assert!(
                c.promotions + c.large_faults > 0,
                "{name}: no superpage made"
            );
            assert!(
                c.demotions_pressure > 0,
                "{name}: no demotion under pressure"
            );
        }
        repromoted += c.repromotions;
        check_pressured(&name, &m, &touched).unwrap();
    }
    assert!(repromoted > 0, "no demoted block was promoted back");
}

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
}

/// The property above is not vacuous: on a dense stream every machine of it makes
/// superpages (promotes, or maps large pages at faults), and still checks out.
#[test]
fn every_checked_machine_makes_superpages() {
    let refs: Vec<MemRef> = (0..3u64)
        .flat_map(|round| (0..1024u64).map(move |p| (round, p)))
        .map(|(_, p)| MemRef::new(0x4000_0000 + (p << 12), 8, AccessKind::Load))
        .collect();
    let touched: BTreeSet<u64> = refs.iter().map(|r| r.addr.0).collect();
    for (name, config) in machines() {
        let mut m = Machine::build(&config).unwrap();
        m.run_batch(&Batch {
            refs: refs.clone(),
            events: vec![],
        })
        .unwrap();
        let c = &m.report().counts;
        assert!(
            c.promotions + c.large_faults > 0,
            "{name}: no superpage made"
        );
        check(&name, &m, &touched).unwrap();
    }
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

/// With 6 MiB of memory, reservations of 4 MiB in three regions must preempt one
/// another; the preempted ones keep their populated pages and everything checks out.
#[test]
fn reservations_are_preempted_when_memory_runs_short() {
    let (name, config) = machines()
        .into_iter()
        .find(|(n, _)| n == "alpha-21264 reservation 6M")
        .unwrap();
    let regions = [0x4000_0000u64, 0x4040_0000, 0x9000_0000];
    let refs: Vec<MemRef> = (0..60u64)
        .map(|i| {
            MemRef::new(
                regions[(i % 3) as usize] + (i / 3) * 0x2_0000,
                8,
                AccessKind::Store,
            )
        })
        .collect();
    let touched: BTreeSet<u64> = refs.iter().map(|r| r.addr.0).collect();
    let mut m = Machine::build(&config).unwrap();
    m.run_batch(&Batch {
        refs,
        events: vec![],
    })
    .unwrap();
    let report = m.report();
    assert!(
        report.policy_stats["reservations preempted"] > 0,
        "{:?}",
        report.policy_stats
    );
    check(&name, &m, &touched).unwrap();
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

/// Superpage configurations that cannot work are refused, naming the field.
#[test]
fn bad_superpage_configurations_name_the_field() {
    let mut remap_inverted = presets::load("pa-risc-32").unwrap();
    remap_inverted.promotion = PromotionConfig::Asap(Default::default());
    remap_inverted.mechanism = MechanismConfig::Remap(Default::default());
    remap_inverted.page_table = PageTableConfig::Inverted(Default::default());
    let mut too_large = presets::load("alpha-21264").unwrap();
    too_large.promotion = PromotionConfig::Asap(pagelab_core::config::AsapConfig {
        sizes: vec![PageSize::M4, PageSize::from_shift(23).unwrap()],
        ..Default::default()
    });
    if let PageTableConfig::Linear(l) = &mut too_large.page_table {
        l.page_sizes.push(PageSize::from_shift(23).unwrap());
    }
    let mut nan = presets::load("pa-risc-32").unwrap();
    nan.promotion = PromotionConfig::Asap(pagelab_core::config::AsapConfig {
        miss_cycles: f64::NAN,
        ..Default::default()
    });
    for (c, field) in [
        (remap_inverted, "mechanism.kind"),
        (too_large, "frames.max_block"),
        (nan, "promotion.miss_cycles"),
    ] {
        let e = Machine::build(&c).err().expect("refused");
        assert!(e.0.contains(field), "{e}");
    }
}

#[test]
fn every_listed_policy_is_tested() {
    let tested: Vec<String> = machines()
        .iter()
        .map(|(_, c)| serde_json::to_value(&c.promotion).unwrap()["policy"].to_string())
        .collect();
    for name in pagelab_core::superpage::NAMES
        .iter()
        .filter(|&&n| n != "none")
    {
        assert!(
            tested.contains(&format!("{name:?}")),
            "promotion policy {name:?} is in no machine of machines(): add it there"
        );
    }
}
