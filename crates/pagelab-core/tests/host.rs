//! `--machine host`: the TLBs CPUID describes, decoded from recorded CPUID answers of
//! an Intel processor with leaf 2's descriptors (Xeon Gold 6252), one with leaf 18H
//! (Core i7-12700K) and an AMD one (the development machine's EPYC, a Zen 4 core in a
//! virtual machine), each made a machine that runs; and the preset of whatever
//! processor runs the test.

use pagelab_core::config::{Serves, TlbConfig};
use pagelab_core::host::cpuid::{Cpuid, Recorded};
use pagelab_core::host::tlbs::Side;
use pagelab_core::host::Host;
use pagelab_core::{Machine, PageSize};
use std::path::Path;

const K4: PageSize = PageSize::K4;
const M2: PageSize = PageSize::M2;
const G1: PageSize = PageSize::G1;

fn recorded(name: &str) -> Recorded {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/host")
        .join(name);
    Recorded::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The host of a dump, with no /sys.
fn host(name: &str) -> Host {
    let nothing = tempfile::tempdir().unwrap();
    Host::read(&recorded(name), nothing.path())
}

/// (level, side, page sizes, entries, ways) of each TLB.
fn shapes(h: &Host) -> Vec<(u8, Side, Vec<PageSize>, u32, u32)> {
    h.tlbs
        .iter()
        .map(|t| (t.level, t.side, t.page_sizes.clone(), t.entries, t.ways))
        .collect()
}

/// Each level's name, what it serves, its parent and its arrays as (sets, ways, sizes).
fn levels(
    h: &Host,
) -> Vec<(
    String,
    Serves,
    Option<String>,
    Vec<(usize, usize, Vec<PageSize>)>,
)> {
    let config = h.config().unwrap();
    Machine::build(&config).expect("the host preset is a machine");
    let TlbConfig::Hierarchy(hier) = config.tlb else {
        panic!("a hierarchy")
    };
    hier.levels
        .into_iter()
        .map(|l| {
            let arrays = l
                .arrays
                .iter()
                .map(|a| (a.sets, a.ways, a.page_sizes.clone()))
                .collect();
            (l.name, l.serves, l.parent, arrays)
        })
        .collect()
}

#[test]
fn intel_leaf_2_descriptors() {
    let h = host("xeon-gold-6252.cpuid");
    assert_eq!(h.vendor, "GenuineIntel");
    assert_eq!((h.family, h.model), (6, 0x55));
    assert_eq!(h.base, "skylake");
    assert_eq!(
        shapes(&h),
        [
            (1, Side::Data, vec![M2], 32, 4),
            (1, Side::Data, vec![G1], 4, 4),
            (1, Side::Data, vec![K4], 64, 4),
            (1, Side::Instruction, vec![M2], 8, 0),
            (1, Side::Instruction, vec![K4], 64, 8),
            (2, Side::Unified, vec![K4, M2], 1536, 6),
            (2, Side::Unified, vec![G1], 16, 4),
        ]
    );
    assert!(h.tlbs[5].source.contains("descriptor C3H"));
    let l = levels(&h);
    let names: Vec<(&str, Option<&str>)> = l
        .iter()
        .map(|(n, _, p, _)| (n.as_str(), p.as_deref()))
        .collect();
    assert_eq!(
        names,
        [("l1d", Some("l2")), ("l1i", Some("l2")), ("l2", None)]
    );
    assert_eq!(l[2].3, [(256, 6, vec![K4, M2]), (4, 4, vec![G1])]);
    assert_eq!(l[0].1, Serves::Data);
}

#[test]
fn intel_leaf_18() {
    let h = host("core-i7-12700k.cpuid");
    assert_eq!(
        h.brand.as_deref(),
        Some("12th Gen Intel(R) Core(TM) i7-12700K")
    );
    assert_eq!((h.family, h.model), (6, 0x97));
    assert_eq!(
        shapes(&h),
        [
            (1, Side::Instruction, vec![K4], 256, 8),
            (1, Side::Instruction, vec![M2], 32, 8),
            (1, Side::Store, vec![K4, M2, G1], 16, 0),
            (1, Side::Data, vec![K4], 64, 4),
            (1, Side::Data, vec![M2], 32, 4),
            (1, Side::Data, vec![G1], 8, 0),
            (2, Side::Unified, vec![K4, M2], 1024, 8),
            (2, Side::Unified, vec![K4, G1], 1024, 8),
        ]
    );
    let (config, notes) = h.config_with_notes().unwrap();
    assert!(notes.iter().any(|n| n.contains("store-only")), "{notes:?}");
    assert!(config.description.contains("12700K"));
    let l = levels(&h);
    assert_eq!(l[0].0, "l1d");
    assert_eq!(
        l[0].3,
        [(16, 4, vec![K4]), (8, 4, vec![M2]), (1, 8, vec![G1])]
    );
}

#[test]
fn amd_leaves_with_a_hypervisor_that_hides_some() {
    let h = host("epyc-zen4-vm.cpuid");
    assert_eq!(h.vendor, "AuthenticAMD");
    assert_eq!((h.family, h.model), (0x19, 0x11));
    assert_eq!(h.brand, None);
    assert_eq!(h.base, "zen4");
    assert_eq!(
        shapes(&h),
        [
            (1, Side::Data, vec![K4, M2], 72, 0),
            (1, Side::Instruction, vec![K4, M2], 64, 0),
            (2, Side::Data, vec![K4, M2], 3072, 8),
            (2, Side::Instruction, vec![K4, M2], 512, 4),
        ]
    );
    let (_, notes) = h.config_with_notes().unwrap();
    assert!(notes.iter().any(|n| n.contains("80000019H")), "{notes:?}");
    let l = levels(&h);
    let by_name = |n: &str| l.iter().find(|x| x.0 == n).unwrap();
    assert_eq!(by_name("l1d").3, [(1, 72, vec![K4, M2, G1])]);
    assert_eq!(by_name("l2d").3, [(384, 8, vec![K4, M2])]);
    assert_eq!(by_name("l1d").2.as_deref(), Some("l2d"));
    assert_eq!(by_name("l1i").2.as_deref(), Some("l2i"));
}

#[test]
fn a_dump_round_trips_and_bad_lines_are_named() {
    let r = recorded("core-i7-12700k.cpuid");
    let again = Recorded::parse(&Recorded::dump(&r).to_text()).unwrap();
    for (leaf, sub) in [(0, 0), (2, 0), (0x18, 7), (0x8000_0002, 0)] {
        assert_eq!(again.query(leaf, sub), r.query(leaf, sub));
    }
    let e = Recorded::parse("# ok\n00000000 0: 1 2 3\n").unwrap_err();
    assert!(e.contains("line 2"), "{e}");
}

#[test]
fn this_processor_is_a_machine() {
    let h = Host::this_machine();
    let config = pagelab_core::presets::load("host").expect("the host preset");
    assert_eq!(config.name, "host");
    Machine::build(&config).expect("it builds");
    assert!(!h.base.is_empty());
    // What it says of itself names a source for each TLB.
    assert!(h.tlbs.iter().all(|t| t.source.starts_with("CPUID")));
}

/// A /sys tree listing `caches` as (level, type, size, ways, sets, line).
fn sys_with(caches: &[(u32, &str, &str, u64, u64, u64)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for (i, (level, kind, size, ways, sets, line)) in caches.iter().enumerate() {
        let d = root
            .path()
            .join(format!("devices/system/cpu/cpu0/cache/index{i}"));
        std::fs::create_dir_all(&d).unwrap();
        for (file, text) in [
            ("level", level.to_string()),
            ("type", kind.to_string()),
            ("size", size.to_string()),
            ("ways_of_associativity", ways.to_string()),
            ("number_of_sets", sets.to_string()),
            ("coherency_line_size", line.to_string()),
        ] {
            std::fs::write(d.join(file), text + "\n").unwrap();
        }
    }
    root
}

#[test]
fn the_data_caches_linux_lists_are_modelled_with_the_base_presets_latencies() {
    // An L1 instruction cache (left out), an L1d, an L2 and an L3 listed twice.
    let sys = sys_with(&[
        (1, "Data", "48K", 12, 64, 64),
        (1, "Instruction", "32K", 8, 64, 64),
        (2, "Unified", "2048K", 16, 2048, 64),
        (3, "Unified", "30720K", 12, 40960, 64),
        (3, "Unified", "30720K", 12, 40960, 64),
    ]);
    let h = Host::read(&recorded("xeon-gold-6252.cpuid"), sys.path());
    let (config, notes) = h.config_with_notes().unwrap();
    let skylake = pagelab_core::presets::load("skylake").unwrap();
    let shape: Vec<(String, usize, usize, f64)> = config
        .cache
        .levels
        .iter()
        .map(|l| (l.name.clone(), l.sets, l.ways, l.hit_cycles))
        .collect();
    let latency = |i: usize| skylake.cache.levels[i].hit_cycles;
    assert_eq!(
        shape,
        vec![
            ("l1d".into(), 64, 12, latency(0)),
            ("l2".into(), 2048, 16, latency(1)),
            ("l3".into(), 40960, 12, latency(2)),
        ]
    );
    assert_eq!(config.cache.memory_cycles, skylake.cache.memory_cycles);
    assert!(
        notes.iter().any(|n| n.contains("pagelab calibrate")),
        "{notes:?}"
    );
    Machine::build(&config).expect("it builds");
    // With no caches listed, the base preset's.
    let none = host("xeon-gold-6252.cpuid").config().unwrap();
    assert_eq!(none.cache, skylake.cache);
}
