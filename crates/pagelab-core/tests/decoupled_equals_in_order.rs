//! A batch runs three ways: in order (each walk as its miss happens), decoupled through
//! the general loop (TLBs first, then the queued walks), and decoupled through the
//! specialized loop. All three must give the same report, on random streams (address
//! spaces, instruction fetches, references spanning pages, untagged TLBs that flush on
//! switches, walk caches) and on the bundled traces of real programs.

use pagelab_core::config::{HierarchyConfig, Serves, TlbConfig, WalkCacheConfig};
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::{Asid, Machine, MachineConfig, PageSize};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::path::Path;

mod common;
use common::{array, level};

/// Machines of different shapes: one small TLB; a fully associative one; split L1s
/// with per-size arrays under a mixed-size L2, with walk caches; a unified L1 under an
/// L2, untagged (flushed on every switch of address space).
fn machines() -> Vec<MachineConfig> {
    let single = |sets, ways| MachineConfig {
        tlb: TlbConfig::SetAssociative(array(sets, ways, &[PageSize::K4])),
        ..MachineConfig::default()
    };
    let k4 = PageSize::K4;
    let m2 = PageSize::M2;
    let split = MachineConfig {
        tlb: TlbConfig::Hierarchy(HierarchyConfig {
            flush_on_switch: false,
            levels: vec![
                level(
                    "l1d",
                    Serves::Data,
                    Some("l2"),
                    vec![array(4, 2, &[k4]), array(1, 2, &[m2])],
                ),
                level(
                    "l1i",
                    Serves::Instruction,
                    Some("l2"),
                    vec![array(2, 2, &[k4])],
                ),
                level("l2", Serves::All, None, vec![array(8, 3, &[k4, m2])]),
            ],
        }),
        walk_caches: vec![
            WalkCacheConfig {
                level: 2,
                sets: 1,
                ways: 4,
                replacement: "lru".into(),
            },
            WalkCacheConfig {
                level: 3,
                sets: 1,
                ways: 2,
                replacement: "lru".into(),
            },
        ],
        ..MachineConfig::default()
    };
    let untagged = MachineConfig {
        tlb: TlbConfig::Hierarchy(HierarchyConfig {
            flush_on_switch: true,
            levels: vec![
                level("l1", Serves::All, Some("l2"), vec![array(2, 2, &[k4])]),
                level("l2", Serves::All, None, vec![array(1, 16, &[k4])]),
            ],
        }),
        walk_caches: vec![WalkCacheConfig::default()],
        ..MachineConfig::default()
    };
    vec![single(16, 4), single(1, 8), split, untagged]
}

/// The report of `config` over `batches`, run in mode 0 (in order), 1 (decoupled,
/// general loop) or 2 (decoupled, specialized loop), as JSON.
fn report(config: &MachineConfig, batches: &[Batch], mode: u32) -> serde_json::Value {
    let mut m = Machine::build(config).unwrap();
    m.set_decoupled(mode > 0);
    m.set_kernel(mode == 2);
    for b in batches {
        m.run_batch(b).unwrap();
    }
    serde_json::to_value(m.report()).unwrap()
}

fn assert_same(config: &MachineConfig, batches: &[Batch], what: &str) {
    let in_order = report(config, batches, 0);
    for mode in [1, 2] {
        let other = report(config, batches, mode);
        assert_eq!(other, in_order, "{what}: mode {mode} differs from in order");
    }
}

fn reference() -> impl Strategy<Value = MemRef> {
    (
        0u64..48,
        0u64..4096,
        prop_oneof![8 => Just(4u32), 1 => 1u32..10_000],
        prop_oneof![3 => Just(AccessKind::Load), 1 => Just(AccessKind::Store), 2 => Just(AccessKind::Fetch)],
        prop_oneof![6 => Just(0u16), 1 => 1u16..3],
    )
        .prop_map(|(page, offset, size, kind, asid)| {
            // Pages spread over several 2 MiB regions and page-table nodes.
            let addr = 0x7f00_0000_0000 + (page % 12) * 4096 + (page / 12) * (3 << 20) + offset;
            MemRef {
                asid: Asid(asid),
                ..MemRef::new(addr, size, kind)
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_mode_gives_the_same_report(
        refs in proptest::collection::vec(reference(), 1..600),
        cut in 1usize..200,
    ) {
        // Several batches, so that state crosses their boundaries.
        let batches: Vec<Batch> = refs
            .chunks(cut)
            .map(|c| Batch { refs: c.to_vec(), ..Batch::default() })
            .collect();
        for (i, config) in machines().iter().enumerate() {
            assert_same(config, &batches, &format!("machine {i}"));
        }
    }
}

#[test]
fn bundled_traces_give_the_same_report_every_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces");
    for name in ["xz.plt", "sqlite-rec.plt"] {
        let mut reader = pagelab_core::trace::open(&root.join(name), None).unwrap();
        let mut batches = Vec::new();
        let mut batch = Batch::default();
        while reader.next_batch(&mut batch).unwrap() {
            batches.push(std::mem::take(&mut batch));
        }
        for (i, config) in machines().iter().enumerate() {
            assert_same(config, &batches, &format!("{name}, machine {i}"));
        }
        // The presets: real hierarchies, walk caches, policies other than LRU.
        for preset in pagelab_core::presets::names() {
            let config = pagelab_core::presets::load(preset).unwrap();
            assert_same(&config, &batches, &format!("{name}, preset {preset}"));
        }
    }
}
