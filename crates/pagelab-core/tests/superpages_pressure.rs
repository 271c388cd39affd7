//! Superpage promotion under memory pressure, checked end to end on the machine: with
//! a random resident limit below the stream's footprint and random writes, reclaims,
//! speculative and write demotions, re-promotions and major faults never change the
//! data an address reaches (each page is resident with its data or in the swap store
//! with it, never both), leave no stale translation, and the pager's resident set
//! agrees with the page table and stays within the limit (every policy, copy and
//! remap, both daemons); every machine of it does reclaim, fault pages back in and
//! demote. Without pressure this is in superpages_integrity.rs.

mod common;

use common::superpages::{online, sizes};
use pagelab_core::config::{
    AsapConfig, BuddyFramesConfig, ByteSize, DaemonKind, FramesConfig, MechanismConfig,
    PagingConfig, PromotionConfig, ReservationConfig, StaticPromotionConfig, StaticRegion,
    ThpConfig,
};
use pagelab_core::{
    presets, AccessKind, Asid, Batch, Machine, MachineConfig, MemRef, PageSize, VirtAddr,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

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
    // Reservations (8K base pages, 64K blocks), with every daemon, and on a memory
    // small enough that they preempt one another.
    let mut alpha = presets::load("alpha-21264").unwrap();
    alpha.promotion = PromotionConfig::Reservation(ReservationConfig {
        sizes: vec![PageSize::K64],
        ..ReservationConfig::default()
    });
    for &daemon in DaemonKind::ALL {
        let mut c = alpha.clone();
        c.paging = paging(small, 13, daemon);
        out.push((
            format!("alpha-21264 reservation limited {}", daemon.name()),
            c,
        ));
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
