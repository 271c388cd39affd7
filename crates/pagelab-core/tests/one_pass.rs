//! One pass over a trace gives every geometry of the last TLB level the report its
//! own run gives, byte for byte, on bundled traces of real programs and random
//! streams (address spaces, instruction fetches, references spanning pages), for
//! random geometries, L1 policies and page tables, with and without walk caches; and
//! it refuses what it cannot follow, before the run or after it.

use pagelab_core::config::{HierarchyConfig, Serves, TlbConfig, WalkCacheConfig};
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::machine::one_pass::{OnePass, OnePassError};
use pagelab_core::{Asid, Machine, MachineConfig, PageSize, VirtAddr};
use std::path::Path;

mod common;
use common::{array, level, Batches};

/// A split L1 (data: `l1d` with a 2M array; instructions: `l1i`, policy `l1i_policy`)
/// under an `stlb` of `sets` × `ways` LRU holding 4K and 2M, beside a 1G array.
fn machine(table: &str, l1i_policy: &str, sets: usize, ways: usize) -> MachineConfig {
    let (k4, m2, g1) = (PageSize::K4, PageSize::M2, PageSize::G1);
    let mut l1i = array(4, 2, &[k4]);
    l1i.replacement = l1i_policy.into();
    let mut c =
        MachineConfig::from_toml(&format!("[page_table]\nkind = {table:?}\n"), "test").unwrap();
    c.tlb = TlbConfig::Hierarchy(HierarchyConfig {
        flush_on_switch: false,
        levels: vec![
            level(
                "l1d",
                Serves::Data,
                Some("stlb"),
                vec![array(4, 4, &[k4]), array(2, 2, &[m2])],
            ),
            level("l1i", Serves::Instruction, Some("stlb"), vec![l1i]),
            level(
                "stlb",
                Serves::All,
                None,
                vec![array(sets, ways, &[k4, m2]), array(1, 4, &[g1])],
            ),
        ],
    });
    if let TlbConfig::Hierarchy(h) = &mut c.tlb {
        h.levels[2].hit_cycles = 7.0;
    }
    c
}

/// `c` with paging-structure caches of the PML4, PDPT and PD entries, as `skylake`'s.
fn with_walk_caches(mut c: MachineConfig) -> MachineConfig {
    c.walk_caches = [(4, 2), (3, 4), (2, 32)]
        .into_iter()
        .map(|(level, ways)| WalkCacheConfig {
            level,
            sets: 1,
            ways,
            replacement: "lru".into(),
        })
        .collect();
    c
}

/// Geometries drawn from `seed`: any number of sets (not only powers of two), a fully
/// associative one, and a repeat.
fn geometries(seed: u64) -> Vec<(usize, usize)> {
    let mut s = seed;
    let mut below = |n: u64| (pagelab_core::rng::splitmix64(&mut s) % n) as usize;
    let mut g: Vec<(usize, usize)> = (0..6).map(|_| (1 + below(96), 1 + below(16))).collect();
    g.push((1, 1 + below(64)));
    g.push(g[0]);
    g
}

fn json(r: &pagelab_core::machine::Report) -> String {
    serde_json::to_string(r).unwrap()
}

/// The pass's reports against each configuration's own run.
fn check(
    configs: &[MachineConfig],
    open: &dyn Fn() -> Box<dyn pagelab_core::trace::TraceReader>,
    what: &str,
) {
    let pass = OnePass::plan(configs).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(pass.level(), "stlb");
    let reports = pass
        .run(open().as_mut(), Path::new("trace"), |_, _| {})
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(reports.len(), configs.len());
    for (c, got) in configs.iter().zip(&reports) {
        let mut m = Machine::build(c).unwrap();
        m.run_trace(open().as_mut(), Path::new("trace"), |_, _| {})
            .unwrap();
        let want = m.report();
        assert!(want.counts.walks > 0, "{what}: the trace walks");
        if !c.walk_caches.is_empty() {
            assert!(
                want.counts.walk_refs_skipped > 0,
                "{what}: the walk caches serve"
            );
        }
        if json(got) != json(&want) {
            let (g, w) = (
                serde_json::to_value(got).unwrap(),
                serde_json::to_value(&want).unwrap(),
            );
            let diff: Vec<String> = w
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, v)| g.get(k.as_str()) != Some(v))
                .map(|(k, v)| format!("{k}: one pass {} alone {v}", g[k.as_str()]))
                .collect();
            panic!("{what}: {}\n{}", diff.join("\n"), c.to_toml());
        }
    }
}

fn with_geometries(base: &MachineConfig, g: &[(usize, usize)]) -> Vec<MachineConfig> {
    g.iter()
        .map(|&(sets, ways)| {
            let mut c = base.clone();
            if let TlbConfig::Hierarchy(h) = &mut c.tlb {
                let a = &mut h.levels.last_mut().unwrap().arrays[0];
                (a.sets, a.ways) = (sets, ways);
            }
            c.settings
                .insert("tlb.levels.stlb.sets".into(), (sets as i64).into());
            c
        })
        .collect()
}

#[test]
fn bundled_traces_give_each_geometry_its_own_report() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces");
    let cases = [
        ("xz.plt", "radix", "lru", false),
        ("sqlite-rec.plt", "hashed", "plru", false),
        ("gups-rec.plt", "radix", "random", false),
        ("bfs-rec.plt", "radix", "lru", true),
        ("sqlite-rec.plt", "radix", "plru", true),
    ];
    for (i, (name, table, policy, walk_caches)) in cases.into_iter().enumerate() {
        let path = root.join(name);
        let open = || -> Box<dyn pagelab_core::trace::TraceReader> {
            pagelab_core::trace::open(&path, None).unwrap()
        };
        let mut base = machine(table, policy, 1, 1);
        if walk_caches {
            base = with_walk_caches(base);
        }
        let configs = with_geometries(&base, &geometries(i as u64));
        check(&configs, &open, name);
    }
}

/// Random references: two address spaces, instruction fetches, some spanning pages.
fn random_batches(seed: u64) -> Vec<Batch> {
    let mut s = seed;
    let mut below = |n: u64| pagelab_core::rng::splitmix64(&mut s) % n;
    (0..4)
        .map(|_| Batch {
            refs: (0..3000)
                .map(|_| MemRef {
                    addr: VirtAddr(below(600) << 12 | below(4096)),
                    ip: 0,
                    size: 8,
                    kind: if below(5) == 0 {
                        AccessKind::Fetch
                    } else {
                        AccessKind::Load
                    },
                    asid: Asid(below(2) as u16),
                })
                .collect(),
            ..Batch::default()
        })
        .collect()
}

#[test]
fn random_streams_give_each_geometry_its_own_report() {
    for seed in 0..7 {
        let batches = random_batches(seed);
        let open = || -> Box<dyn pagelab_core::trace::TraceReader> {
            Box::new(Batches::new(batches.clone()))
        };
        let table = ["radix", "hashed", "clustered"][seed as usize % 3];
        let mut base = machine(table, "lru", 1, 1);
        if seed % 2 == 1 {
            // Free memory sampled by the sizes the last level holds.
            base.frames = MachineConfig::from_toml(
                "[frames]\nkind = \"buddy\"\nmemory = \"1G\"\nsample_every = 2000\n",
                "t",
            )
            .unwrap()
            .frames;
        }
        if seed >= 3 && table == "radix" {
            base = with_walk_caches(base);
        }
        let configs = with_geometries(&base, &geometries(100 + seed));
        check(&configs, &open, &format!("seed {seed}"));
    }
}

#[test]
fn what_one_pass_cannot_follow_is_refused_before_the_run() {
    let base = machine("radix", "lru", 8, 4);
    let two = |f: &dyn Fn(&mut MachineConfig)| {
        let mut configs = with_geometries(&base, &[(8, 4), (16, 2)]);
        configs.iter_mut().for_each(f);
        OnePass::plan(&configs).unwrap_err()
    };
    let e = two(&|c| {
        if let TlbConfig::Hierarchy(h) = &mut c.tlb {
            h.levels.last_mut().unwrap().arrays[0].replacement = "plru".into();
        }
    });
    assert!(e.contains("lru"), "{e}");
    let e = two(&|c| {
        c.cache = MachineConfig::from_toml(
            "[[cache.levels]]\nname = \"l1d\"\nsets = 64\nways = 8\nhit_cycles = 4.0\n",
            "t",
        )
        .unwrap()
        .cache
    });
    assert!(e.contains("data caches"), "{e}");
    let mut configs = with_geometries(&base, &[(8, 4), (16, 2)]);
    configs[1].cost =
        MachineConfig::from_toml("[cost]\nkind = \"simple\"\nwalk_ref_cycles = 3.0\n", "t")
            .unwrap()
            .cost;
    let e = OnePass::plan(&configs).unwrap_err();
    assert!(e.contains("differ in more than"), "{e}");
    // zen4's shape: instruction misses end at an L2 of their own, not the last level.
    let mut split = with_geometries(&base, &[(8, 4), (16, 2)]);
    for c in &mut split {
        if let TlbConfig::Hierarchy(h) = &mut c.tlb {
            h.levels[1].parent = Some("l2i".into());
            h.levels.insert(
                2,
                level(
                    "l2i",
                    Serves::Instruction,
                    None,
                    vec![array(8, 2, &[PageSize::K4])],
                ),
            );
        }
    }
    let e = OnePass::plan(&split).unwrap_err();
    assert!(e.contains("instruction fetches do not reach it"), "{e}");
    let single = MachineConfig::default();
    assert!(OnePass::plan(&[single])
        .unwrap_err()
        .contains("not a hierarchy"));
}

#[test]
fn a_flush_during_the_run_is_found_after_it() {
    let mut configs = with_geometries(&machine("radix", "lru", 1, 1), &[(8, 4), (16, 2)]);
    for c in &mut configs {
        if let TlbConfig::Hierarchy(h) = &mut c.tlb {
            h.flush_on_switch = true;
        }
    }
    let pass = OnePass::plan(&configs).unwrap();
    let mut reader = Batches::new(random_batches(1));
    match pass.run(&mut reader, Path::new("trace"), |_, _| {}) {
        Err(OnePassError::Inexact(why)) => assert!(why.contains("flushed"), "{why}"),
        other => panic!("not refused: {:?}", other.map(|r| r.len())),
    }
}
