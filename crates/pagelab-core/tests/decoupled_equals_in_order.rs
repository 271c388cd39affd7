//! A batch runs four ways: in order (each walk as its miss happens), decoupled through
//! the general loop (TLBs first, then the queued walks), decoupled through the
//! specialized loop, and from a native file, where chunks of plain references reach
//! the specialized loop as columns ([`Machine::run_trace`]). All must give the same
//! report, on random streams (address spaces, instruction fetches, references spanning
//! pages, untagged TLBs that flush on switches, walk caches, data caches, with the
//! caches on a thread of their own and not) and on the bundled traces of real programs.

use pagelab_core::cache::{CacheConfig, CacheLevelConfig};
use pagelab_core::config::{
    HierarchyConfig, RangeUnitKind, Serves, SetAssocConfig, TlbConfig, WalkCacheConfig,
};
use pagelab_core::event::{AccessKind, Batch, MemRef, PlainBatch};
use pagelab_core::trace::native::{NativeReader, NativeWriter, WriterOptions};
use pagelab_core::trace::{Metadata, Part, TraceReader};
use pagelab_core::{Asid, Machine, MachineConfig, PageSize, RepeatMode};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::path::Path;

mod common;
use common::{array, level};

/// Machines of different shapes: one small TLB; a fully associative one; split L1s
/// with per-size arrays under a mixed-size L2, with walk caches; a unified L1 under an
/// L2, untagged (flushed on every switch of address space); four of them with data
/// caches.
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
    // Two levels of one policy and the associativities the kernel compiles for
    // (4 or 8 ways under 4 or 12): the loop looks the second level up itself.
    let plru = |sets, ways, sizes: &[PageSize]| SetAssocConfig {
        replacement: "plru".into(),
        ..array(sets, ways, sizes)
    };
    let fused = MachineConfig {
        tlb: TlbConfig::Hierarchy(HierarchyConfig {
            flush_on_switch: false,
            levels: vec![
                level("l1", Serves::All, Some("l2"), vec![plru(2, 4, &[k4])]),
                level("l2", Serves::All, None, vec![plru(2, 12, &[k4, m2])]),
            ],
        }),
        walk_caches: vec![WalkCacheConfig::default()],
        ..MachineConfig::default()
    };
    let fused_split = MachineConfig {
        tlb: TlbConfig::Hierarchy(HierarchyConfig {
            flush_on_switch: true,
            levels: vec![
                level("l1d", Serves::Data, Some("l2"), vec![array(2, 8, &[k4])]),
                level(
                    "l1i",
                    Serves::Instruction,
                    Some("l2"),
                    vec![array(1, 2, &[k4])],
                ),
                level("l2", Serves::All, None, vec![array(4, 4, &[k4])]),
            ],
        }),
        ..MachineConfig::default()
    };
    // The instruction side's first level misses into the data side's first level (as
    // the MIPS micro-ITLB into the JTLB): instruction misses touch and fill the data
    // side's first level, between two data references to one page too.
    let itlb_under = |replacement: &str| MachineConfig {
        tlb: TlbConfig::Hierarchy(HierarchyConfig {
            flush_on_switch: false,
            levels: vec![
                level(
                    "itlb",
                    Serves::Instruction,
                    Some("jtlb"),
                    vec![array(1, 2, &[k4])],
                ),
                level(
                    "jtlb",
                    Serves::All,
                    None,
                    vec![SetAssocConfig {
                        replacement: replacement.into(),
                        ..array(1, 4, &[k4, m2])
                    }],
                ),
            ],
        }),
        ..MachineConfig::default()
    };
    // The mirror: the data side's first level misses into the instruction side's.
    let dtlb_under = MachineConfig {
        tlb: TlbConfig::Hierarchy(HierarchyConfig {
            flush_on_switch: false,
            levels: vec![
                level("dtlb", Serves::Data, Some("utlb"), vec![array(1, 2, &[k4])]),
                level("utlb", Serves::All, None, vec![array(1, 4, &[k4])]),
            ],
        }),
        ..MachineConfig::default()
    };
    // Data caches small enough to evict: the caches' pass reads walks and data in the
    // in-order loop's order (LRU kept in recency order, a tree PLRU, two line sizes).
    let cached = |config: &MachineConfig| MachineConfig {
        cache: CacheConfig {
            levels: vec![
                CacheLevelConfig {
                    name: "l1d".into(),
                    sets: 4,
                    ways: 2,
                    ..CacheLevelConfig::default()
                },
                CacheLevelConfig {
                    name: "l2".into(),
                    sets: 8,
                    ways: 4,
                    replacement: "plru".into(),
                    line_bytes: Some(128),
                    ..CacheLevelConfig::default()
                },
                CacheLevelConfig {
                    name: "l3".into(),
                    sets: 3,
                    ways: 16,
                    ..CacheLevelConfig::default()
                },
            ],
            ..CacheConfig::default()
        },
        ..config.clone()
    };
    // A hashed table (whose walks the caches' pass reads whole), and the Alpha's 8K
    // base pages on its linear table.
    let hashed = MachineConfig {
        page_table: MachineConfig::from_toml("[page_table]\nkind = \"hashed\"\n", "test")
            .unwrap()
            .page_table,
        ..single(16, 4)
    };
    let with_caches = [
        cached(&hashed),
        cached(&pagelab_core::presets::load("alpha-21264").unwrap()),
        cached(&single(16, 4)),
        cached(&split),
        cached(&untagged),
        cached(&fused),
    ];
    let mut all = vec![
        single(16, 4),
        single(1, 8),
        split,
        untagged,
        fused,
        fused_split,
        itlb_under("random"),
        itlb_under("lru"),
        dtlb_under,
    ];
    all.extend(with_caches);
    all
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

/// `batches` written to a native trace in memory, chunks of `chunk_refs` references.
fn native(batches: &[Batch], chunk_refs: u32) -> Vec<u8> {
    let options = WriterOptions {
        chunk_refs,
        ..WriterOptions::default()
    };
    let mut w =
        NativeWriter::new(Vec::new(), Path::new("mem"), &Metadata::default(), options).unwrap();
    for b in batches {
        w.write_batch(b).unwrap();
    }
    w.finish().unwrap()
}

/// The ways the kernel loop may treat repeats: each must give the same report.
const REPEAT_MODES: [RepeatMode; 3] = [
    RepeatMode::Timed,
    RepeatMode::Fixed(true),
    RepeatMode::Fixed(false),
];

/// The report of `config` over a native trace (the default, decoupled machine), its
/// kernel loop treating repeats as `repeats` says: the same with a second core used
/// (the data caches on a thread of their own, or the trace read ahead on one) and
/// without.
fn report_native(config: &MachineConfig, trace: &[u8], repeats: RepeatMode) -> serde_json::Value {
    let run = |cache_thread: bool| {
        let mut m = Machine::build(config).unwrap();
        m.set_repeat_mode(repeats);
        m.set_cache_thread(cache_thread);
        let mut reader = NativeReader::new(trace, Path::new("mem")).unwrap();
        m.run_trace(&mut reader, Path::new("mem"), |_, _| {})
            .unwrap();
        serde_json::to_value(m.report()).unwrap()
    };
    let threaded = run(true);
    assert_eq!(threaded, run(false), "the second core changed the report");
    threaded
}

/// How many chunks of `trace` decode as plain (fetches allowed or not).
fn plain_chunks(trace: &[u8], fetches: bool) -> usize {
    let mut reader = NativeReader::new(trace, Path::new("mem")).unwrap();
    let (mut plain, mut batch, mut n) = (PlainBatch::default(), Batch::default(), 0);
    loop {
        match reader.next_plain(fetches, &mut plain, &mut batch).unwrap() {
            Part::Plain => n += 1,
            Part::Full => {}
            Part::End => return n,
        }
    }
}

fn assert_same(config: &MachineConfig, batches: &[Batch], what: &str) {
    let in_order = report(config, batches, 0);
    for mode in [1, 2] {
        let other = report(config, batches, mode);
        assert_eq!(other, in_order, "{what}: mode {mode} differs from in order");
    }
    // In chunks of another size: compared with its own batches, as samples of free
    // memory are taken between batches.
    let trace = native(batches, 4096);
    let in_order = report(config, &read_batches(&trace), 0);
    for repeats in REPEAT_MODES {
        let from_file = report_native(config, &trace, repeats);
        assert_eq!(
            from_file, in_order,
            "{what}: the native file's run ({repeats:?}) differs from in order"
        );
    }
}

fn read_batches(trace: &[u8]) -> Vec<Batch> {
    let mut reader = NativeReader::new(trace, Path::new("mem")).unwrap();
    let (mut batches, mut batch) = (Vec::new(), Batch::default());
    while reader.next_batch(&mut batch).unwrap() {
        batches.push(std::mem::take(&mut batch));
    }
    batches
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

/// `refs` in batches of `cut`: several batches, so that state crosses their boundaries.
fn cut_into_batches(refs: &[MemRef], cut: usize) -> Vec<Batch> {
    refs.chunks(cut)
        .map(|c| Batch {
            refs: c.to_vec(),
            ..Batch::default()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_mode_gives_the_same_report(
        refs in proptest::collection::vec(reference(), 1..600),
        cut in 1usize..200,
    ) {
        let batches = cut_into_batches(&refs, cut);
        for (i, config) in machines().iter().enumerate() {
            assert_same(config, &batches, &format!("machine {i}"));
        }
    }
}

/// The in-order report of `config` over `batches` with the repeat filter off: every
/// reference looks its page up.
fn report_unfiltered(config: &MachineConfig, batches: &[Batch]) -> serde_json::Value {
    let mut m = Machine::build(config).unwrap();
    m.set_decoupled(false);
    m.set_repeat_filter(false);
    for b in batches {
        m.run_batch(b).unwrap();
    }
    serde_json::to_value(m.report()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Crediting a repeat without a lookup is exact: as looking every page up, on the
    /// test machines and on every preset (shared parents, walk caches, policies).
    #[test]
    fn the_repeat_filter_changes_nothing(
        refs in proptest::collection::vec(reference(), 1..600),
        cut in 1usize..200,
    ) {
        let batches = cut_into_batches(&refs, cut);
        let names = pagelab_core::presets::names();
        let presets = names.iter().map(|p| pagelab_core::presets::load(p).unwrap());
        for (i, config) in machines().into_iter().chain(presets).enumerate() {
            prop_assert_eq!(
                report(&config, &batches, 0),
                report_unfiltered(&config, &batches),
                "machine {}", i
            );
        }
    }
}

/// A reference that is plain (one address space, one base page, no fetch) unless
/// `mixed`, which brings in fetches, other address spaces and large sizes.
fn plainish(mixed: bool) -> impl Strategy<Value = MemRef> {
    (reference(), 0u64..1024, 0u32..3).prop_map(move |(r, word, kind)| {
        if mixed {
            r
        } else {
            let page = r.addr.0 & !4095;
            MemRef::new(
                page + 4 * word,
                4,
                AccessKind::ALL[[0, 1, 3][kind as usize]],
            )
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Chunks plain and not, in turn: the plain ones run as columns, the others the
    /// general way, with state (the repeat filter, the address space) crossing.
    #[test]
    fn plain_chunks_give_the_same_report(
        (cut, parts) in (1usize..80).prop_flat_map(|cut| {
            let part = any::<bool>().prop_flat_map(move |mixed| {
                proptest::collection::vec(plainish(mixed), cut)
            });
            (Just(cut), proptest::collection::vec(part, 1..6))
        }),
    ) {
        let batches: Vec<Batch> = parts
            .into_iter()
            .map(|refs| Batch { refs, ..Batch::default() })
            .collect();
        let trace = native(&batches, cut as u32);
        let plain = plain_chunks(&trace, false);
        for (i, config) in machines().iter().enumerate() {
            let in_order = report(config, &batches, 0);
            for repeats in REPEAT_MODES {
                let from_file = report_native(config, &trace, repeats);
                prop_assert_eq!(&from_file, &in_order, "machine {}, {:?}", i, repeats);
            }
        }
        prop_assert!(plain <= batches.len());
    }
}

/// The test above runs plain chunks (not every chunk falls back to the general way).
#[test]
fn plain_chunks_are_found() {
    let plain: Vec<MemRef> = (0..100u64)
        .map(|i| MemRef::new(0x10_0000 + 64 * i, 8, AccessKind::ALL[(i % 2) as usize]))
        .collect();
    let mut fetch = plain.clone();
    fetch[7].kind = AccessKind::Fetch;
    let mut across = plain.clone();
    across[9].addr.0 = 0x10_0ffc;
    let mut switch = plain.clone();
    switch[50].asid = Asid(3);
    let batches: Vec<Batch> = [&plain, &fetch, &across, &switch, &plain]
        .iter()
        .map(|refs| Batch {
            refs: refs.to_vec(),
            ..Batch::default()
        })
        .collect();
    let trace = native(&batches, 100);
    // The fetch is plain only where fetches are allowed; crossing and switching never.
    assert_eq!(plain_chunks(&trace, false), 2);
    assert_eq!(plain_chunks(&trace, true), 3);
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

/// Machines with range translations: the worked example's small one (two-entry range
/// unit beside the L2) with every kind of unit and fill, and the paper's preset.
fn ranged_machines() -> Vec<MachineConfig> {
    let small = r#"
[tlb]
kind = "hierarchy"
[[tlb.levels]]
name = "l1"
parent = "l2"
[[tlb.levels.arrays]]
sets = 1
ways = 2
[[tlb.levels]]
name = "l2"
[[tlb.levels.arrays]]
sets = 2
ways = 2
page_sizes = ["4K", "2M"]
[tlb.levels.range]
entries = 2
fill = "FILL"
[[walk_caches]]
level = 3
[frames]
kind = "buddy"
memory = "64M"
max_block = "2M"
[ranges]
allocation = "eager"
"#;
    let with = |text: String| MachineConfig::from_toml(&text, "ranged").unwrap();
    // Every kind of range unit, with either fill.
    let mut out = Vec::new();
    for kind in RangeUnitKind::ALL {
        for fill in ["base", "largest"] {
            out.push(with(small.replace("FILL", fill).replace(
                "entries = 2",
                &format!("entries = 2\nkind = {:?}", kind.name()),
            )));
        }
    }
    out.push(pagelab_core::presets::load("sandy-bridge-rmm").unwrap());
    out
}

/// An allocation event over the pages `reference()` touches: a mapping or an
/// unmapping of 1 to 24 pages, or the heap (from the second group) grown or shrunk.
fn region_event() -> impl Strategy<Value = pagelab_core::event::Event> {
    use pagelab_core::event::{Alloc, AllocOp, Event};
    (0u64..4, 0u64..12, 1u64..24, 0u32..3).prop_map(|(group, page, pages, op)| {
        let at = 0x7f00_0000_0000 + group * (3 << 20) + page * 4096;
        let (op, addr, old_addr) = match op {
            0 => (AllocOp::Mmap, at, 0),
            1 => (AllocOp::Munmap, 0, at),
            _ => {
                let brk = 0x7f00_0000_0000 + (3 << 20);
                (AllocOp::Brk, brk + pages * 4096, brk + page * 4096)
            }
        };
        Event::Alloc(Alloc {
            op,
            addr,
            size: pages * 4096,
            old_addr,
            flags: 3, // read-write (mmap)
            callsite: 0,
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Eager paging acts between references (mapping, unmapping, splitting ranges):
    /// every way of running gives the same report.
    #[test]
    fn ranges_give_the_same_report_every_way(
        refs in proptest::collection::vec(reference(), 1..400),
        mapped in proptest::collection::vec(any::<bool>(), 4),
        events in proptest::collection::vec((0usize..400, region_event()), 0..12),
        cut in 1usize..150,
    ) {
        use pagelab_core::event::{Alloc, AllocOp, Event};
        let mut batches = cut_into_batches(&refs, cut);
        // Groups mapped at the start (as segments of the memory map), so that most
        // references fall in ranges; then the random events.
        let mut events: Vec<(usize, Event)> = (0..4u64)
            .filter(|&g| mapped[g as usize])
            .map(|g| {
                let segment = Alloc {
                    op: AllocOp::Mmap,
                    addr: 0x7f00_0000_0000 + g * (3 << 20),
                    size: 12 * 4096,
                    old_addr: 0,
                    flags: 3,
                    callsite: 0,
                };
                (0, Event::Alloc(segment))
            })
            .chain(events)
            .collect();
        events.sort_by_key(|(at, _)| *at);
        for (at, event) in events {
            let at = at.min(refs.len());
            let (b, pos) = if at == refs.len() {
                (batches.len() - 1, batches.last().unwrap().refs.len())
            } else {
                (at / cut, at % cut)
            };
            batches[b].events.push((pos, event));
        }
        for (i, config) in ranged_machines().iter().enumerate() {
            assert_same(config, &batches, &format!("ranged machine {i}"));
        }
    }
}
