//! Superpage promotion never changes what an address reaches, checked end to end on
//! the machine:
//! - no policy, with either mechanism, ever changes the data an address reaches, and
//!   no TLB level keeps a stale translation after a promotion (random streams, every
//!   policy, copy and remap, three page-table structures); every machine of it does
//!   make superpages;
//! - the policies' population counts agree with the page table, and a reservation's
//!   populated pages sit in its own frames, also when reservations preempt one another;
//! - configurations that cannot work are refused, naming the field, and every listed
//!   policy is among the machines checked;
//! - all of it again for the machines that copy, as guests of a virtual machine: the
//!   TLB's entries hold the host frames the two tables compose to.
//! The same under memory pressure is in superpages_pressure.rs, and what promotion
//! costs and saves in superpages_costs.rs.

mod common;

use common::superpages::{online, sizes};
use pagelab_core::config::{
    BuddyFramesConfig, ByteSize, FramesConfig, MechanismConfig, PageTableConfig, PromotionConfig,
    StaticPromotionConfig, StaticRegion, ThpConfig,
};
use pagelab_core::{
    presets, AccessKind, Asid, Batch, Machine, MachineConfig, MemRef, PageSize, VirtAddr,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

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
    out.extend(virtualized(&out));
    out
}

/// The machines that copy, as guests of a host of 4 KiB pages (which splinters their
/// superpages in the TLB) and of 2 MiB pages: a copy reaches the caches at host frames.
fn virtualized(machines: &[(String, MachineConfig)]) -> Vec<(String, MachineConfig)> {
    let mut out = Vec::new();
    for (name, c) in machines {
        if !matches!(c.mechanism, MechanismConfig::Copy(_)) || name.starts_with("alpha") {
            continue;
        }
        for host in [PageSize::K4, PageSize::M2] {
            let mut c = c.clone();
            c.virtualization = Some(pagelab_core::config::VirtualizationConfig {
                host_page: host,
                ..Default::default()
            });
            out.push((format!("{name} over host {host}"), c));
        }
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
