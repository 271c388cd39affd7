//! The machine's unit tests.

use super::*;
use crate::config::{FramesConfig, PageTableConfig, SetAssocConfig, TlbConfig};
use crate::event::MemRef;

fn run(config: &MachineConfig, refs: &[MemRef]) -> Report {
    let mut m = Machine::build(config).unwrap();
    m.run_batch(&Batch {
        refs: refs.to_vec(),
        events: vec![],
    })
    .unwrap();
    m.report()
}

#[test]
fn demand_paging_faults_once_per_page() {
    let refs: Vec<_> = [0x1000u64, 0x1008, 0x2000, 0x1010, 0x3000]
        .iter()
        .map(|&a| MemRef::new(a, 8, AccessKind::Load))
        .collect();
    let r = run(&MachineConfig::default(), &refs);
    let c = &r.counts;
    assert_eq!(c.page_faults, 3);
    assert_eq!((r.levels[0].hits, r.levels[0].misses), (2, 3));
    // Each miss walks (4 reads; but the very first walk finds no root at all and
    // reads nothing), faults, and walks again (4 reads, charged to the fault).
    assert_eq!((c.walks, c.walk_refs, c.fault_walk_refs), (3, 8, 12));
    assert_eq!(r.levels[0].mpki, 600.0);
    // Three 4K pages near 0 share every upper-level node: 4 nodes of 4 KiB.
    assert_eq!(r.page_table_bytes, 4 * 4096);
}

/// The walk caches serve walks that fault and their retries: the second page of a
/// 2 MiB region finds its page-directory entry cached both times.
#[test]
fn walk_caches_serve_faulting_walks_and_their_retries() {
    let refs: Vec<_> = [0x1000u64, 0x2000]
        .iter()
        .map(|&a| MemRef::new(a, 8, AccessKind::Load))
        .collect();
    let config = MachineConfig {
        walk_caches: vec![crate::config::WalkCacheConfig::default()],
        ..MachineConfig::default()
    };
    for decoupled in [false, true] {
        let mut m = Machine::build(&config).unwrap();
        m.set_decoupled(decoupled);
        m.run_batch(&Batch {
            refs: refs.clone(),
            events: vec![],
        })
        .unwrap();
        let c = m.report().counts;
        // First page: no root yet (no reads), then a retry of 4 reads that fills
        // the cache. Second page: the cached entry skips 3 reads of the walk that
        // faults (1 read left) and 3 of its retry.
        assert_eq!(
            (c.walks, c.walk_refs, c.walk_refs_skipped, c.fault_walk_refs),
            (2, 1, 3, 5),
            "decoupled: {decoupled}"
        );
    }
}

#[test]
fn a_reference_spanning_many_pages_translates_each() {
    let refs = [MemRef::new(0x1000, 65536, AccessKind::Load)];
    let r = run(&MachineConfig::default(), &refs);
    assert_eq!(
        (
            r.counts.translations,
            r.counts.page_crossing,
            r.counts.page_faults
        ),
        (16, 1, 16)
    );
}

#[test]
fn page_crossing_references_translate_both_pages() {
    let refs = [MemRef::new(0x1ffc, 8, AccessKind::Store)];
    let r = run(&MachineConfig::default(), &refs);
    assert_eq!(
        (
            r.counts.translations,
            r.counts.page_crossing,
            r.counts.page_faults
        ),
        (2, 1, 2)
    );
}

#[test]
fn out_of_memory_is_an_error_not_a_panic() {
    let mut config = MachineConfig::default();
    config.frames = FramesConfig::Simple(crate::config::SimpleFramesConfig {
        memory: crate::addr::ByteSize(64 * 4096),
    });
    let refs: Vec<_> = (0..100u64)
        .map(|p| MemRef::new(p << 12, 1, AccessKind::Load))
        .collect();
    let mut m = Machine::build(&config).unwrap();
    let e = m
        .run_batch(&Batch {
            refs,
            events: vec![],
        })
        .unwrap_err();
    assert!(
        e.message.contains("out of physical memory") || e.message.contains("no physical frame"),
        "{e}"
    );
    // 63 frames: the 4 table nodes leave 59 pages, so reference 59 is the one that fails.
    assert_eq!(e.reference, 59, "{e}");
}

#[test]
fn bad_values_name_their_field() {
    let mut config = MachineConfig::default();
    let TlbConfig::SetAssociative(s) = &mut config.tlb else {
        unreachable!("the default is one TLB")
    };
    s.replacement = "clairvoyant".into();
    let e = Machine::build(&config).err().unwrap();
    assert!(
        e.0.contains("tlb.replacement") && e.0.contains("lru"),
        "{e}"
    );
    let mut config = MachineConfig::default();
    config.page_table = PageTableConfig::Radix(crate::pagetable::RadixConfig { levels: 3 });
    assert!(Machine::build(&config)
        .err()
        .unwrap()
        .0
        .contains("page_table.levels"));
    for (sets, ways, sizes, field) in [
        (
            1usize << 62,
            4usize,
            vec![PageSize::K4],
            "tlb.sets × tlb.ways",
        ),
        (1 << 20, 1 << 20, vec![PageSize::K4], "tlb.sets × tlb.ways"),
        (16, 4, vec![PageSize::M2], "tlb.page_sizes"),
    ] {
        let mut config = MachineConfig::default();
        config.tlb = TlbConfig::SetAssociative(SetAssocConfig {
            sets,
            ways,
            page_sizes: sizes,
            ..SetAssocConfig::default()
        });
        let e = Machine::build(&config).err().unwrap();
        assert!(e.0.contains(field), "{e}");
    }
}

#[test]
fn references_at_the_top_of_the_address_space_never_wrap() {
    let top = u64::MAX - 15;
    // Within the last page: one translation.
    let mut m = Machine::build(&MachineConfig::default()).unwrap();
    let one = Batch {
        refs: vec![MemRef::new(top, 16, AccessKind::Load)],
        events: vec![],
    };
    // (The radix table refuses the address itself: the point is that nothing wraps.)
    let _ = m.run_batch(&one);
    assert!(m.counts().translations <= 1);
    // Past the top: an error naming it, before any count runs away.
    let mut m = Machine::build(&MachineConfig::default()).unwrap();
    let past = Batch {
        refs: vec![MemRef::new(top, 256, AccessKind::Load)],
        events: vec![],
    };
    let e = m.run_batch(&past).unwrap_err();
    assert!(
        e.message.contains("past the top of the address space"),
        "{e}"
    );
    assert!(m.counts().translations <= 1, "{}", m.counts().translations);
}

#[test]
fn a_reference_larger_than_max_reference_is_an_error() {
    let refs = [MemRef::new(0x1000_0000, u32::MAX, AccessKind::Load)];
    let mut m = Machine::build(&MachineConfig::default()).unwrap();
    let e = m
        .run_batch(&Batch {
            refs: refs.to_vec(),
            events: vec![],
        })
        .unwrap_err();
    assert!(e.message.contains("larger than max_reference (1M)"), "{e}");
    let mut config = MachineConfig::default();
    config.max_reference = crate::addr::ByteSize(1024);
    let e = Machine::build(&config).err().unwrap().to_string();
    assert!(e.contains("max_reference: 1K is out of range"), "{e}");
}

/// References that span many pages each make the decoupled run walk its queue as
/// it fills, with the counts of the run in order.
#[test]
fn many_page_references_keep_the_miss_queue_bounded() {
    let mut config = MachineConfig::default();
    config.max_reference = crate::addr::ByteSize(1 << 30);
    let refs: Vec<_> = (0..4u64)
        .map(|i| MemRef::new(i << 32, 1 << 30, AccessKind::Load))
        .collect();
    let batch = Batch {
        refs,
        events: vec![],
    };
    let mut decoupled = Machine::build(&config).unwrap();
    decoupled.run_refs::<true>(&batch.refs, &[]).unwrap();
    assert!(decoupled.misses.len() <= decoupled::MAX_QUEUED);
    decoupled.walk_deferred().unwrap();
    let mut in_order = Machine::build(&config).unwrap();
    in_order.set_decoupled(false);
    in_order.run_batch(&batch).unwrap();
    assert_eq!(decoupled.counts(), in_order.counts());
    assert_eq!(decoupled.counts().translations, 4 << 18);
}

/// With data caches too: what the queue walked is read through the caches as it
/// fills (the log never holds more than a queue's walks), with the report in order.
#[test]
fn many_page_references_keep_the_caches_log_bounded() {
    // The preset's text (the presets module builds machines: no cycle through it).
    let text = crate::config::PRESETS
        .iter()
        .find(|(n, _)| *n == "skylake")
        .unwrap()
        .1;
    let mut config = MachineConfig::from_toml(text, "skylake").unwrap();
    config.max_reference = crate::addr::ByteSize(1 << 30);
    // Data references spanning many pages, and smaller ones around them.
    let mut refs = Vec::new();
    for i in 0..3u64 {
        refs.push(MemRef::new((i << 32) + 8, 8, AccessKind::Load));
        refs.push(MemRef::new(
            (i << 32) + 4000,
            (1 << 29) + 200,
            AccessKind::Store,
        ));
        refs.push(MemRef::new((i << 32) + 64, 8, AccessKind::Load));
    }
    let batch = Batch {
        refs,
        events: vec![],
    };
    let mut decoupled = Machine::build(&config).unwrap();
    assert!(decoupled.cached.is_some());
    decoupled.run_refs::<true>(&batch.refs, &[]).unwrap();
    let log = decoupled.walker.walk_log.as_ref().map_or(0, |l| l.len());
    assert!(log <= 4 * decoupled::MAX_QUEUED, "{log} entries logged");
    decoupled.walk_deferred().unwrap();
    decoupled.cache_deferred(&batch.refs[..], 0);
    let mut in_order = Machine::build(&config).unwrap();
    in_order.set_decoupled(false);
    in_order.run_batch(&batch).unwrap();
    assert_eq!(decoupled.counts(), in_order.counts());
    assert_eq!(
        serde_json::to_value(decoupled.report()).unwrap(),
        serde_json::to_value(in_order.report()).unwrap()
    );
}
