//! Reservations sized to the memory object (Navarro et al., OSDI 2002, as Gopalan's
//! slides present it, "go for biggest size that is no larger than the memory object"):
//! the trace's events tell the machine the objects, and a reservation never reaches
//! beyond the one its page lies in.

use pagelab_core::addr::{Asid, VirtAddr};
use pagelab_core::config::PromotionConfig;
use pagelab_core::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef};
use pagelab_core::{presets, Machine, Report};

const OBJECT: u64 = 0x1000_0000;
/// Three 64K blocks: room for no 512K or 4M block.
const OBJECT_BYTES: u64 = 3 << 16;
const PAGE: u64 = 8 << 10;

fn mmap() -> Event {
    Event::Alloc(Alloc {
        op: AllocOp::Mmap,
        addr: OBJECT,
        size: OBJECT_BYTES,
        old_addr: 0,
        flags: 0,
        callsite: 0,
    })
}

/// The Alpha preset with reservations over two passes of the object's 8K pages, the
/// mapping announced (or not) by an mmap event before the first reference.
fn run(announce: bool, split: usize) -> Report {
    let mut config = presets::load("alpha-21264").unwrap();
    config.promotion = PromotionConfig::Reservation(Default::default());
    let mut machine = Machine::build(&config).unwrap();
    let refs: Vec<MemRef> = (0..2)
        .flat_map(|_| (0..OBJECT_BYTES / PAGE).map(|p| OBJECT + p * PAGE + 8))
        .map(|a| MemRef {
            addr: VirtAddr(a),
            ip: 0,
            size: 8,
            kind: AccessKind::Load,
            asid: Asid(0),
        })
        .collect();
    // Two batches, cut at `split`, the event in the first (placed before its first
    // reference) or, with `split` 0, in an empty first batch of its own.
    let mut first = Batch {
        refs: refs[..split].to_vec(),
        events: vec![],
    };
    if announce {
        first.events.push((0, mmap()));
    }
    let second = Batch {
        refs: refs[split..].to_vec(),
        events: vec![],
    };
    machine.run_batch(&first).unwrap();
    machine.run_batch(&second).unwrap();
    machine.check_policy().unwrap();
    machine.report()
}

#[test]
fn reservations_stay_within_the_memory_object() {
    for split in [0, 5, 24] {
        let known = run(true, split);
        let unknown = run(false, split);
        // Each 64K block fills and is promoted either way.
        assert_eq!(
            known.counts.promotions, 3,
            "split {split}: {:?}",
            known.counts
        );
        assert_eq!(
            unknown.counts.promotions, 3,
            "split {split}: {:?}",
            unknown.counts
        );
        // Without the object the first touch reserves a 4M block, of which 192K fill;
        // with it, three 64K blocks that fill exactly.
        assert_eq!(known.reserved_idle_frames, 0, "split {split}");
        assert_eq!(
            unknown.reserved_idle_frames,
            ((4 << 20) - OBJECT_BYTES) >> 12,
            "split {split}: 4 KiB frames reserved beyond the object"
        );
    }
}

/// Memory runs out while a reservation holds idle frames: the fault handler has the
/// policy give them back (preempting the reservation) instead of stopping the run.
/// A 4M object gets a reservation at its first touch (512K: the page table's nodes
/// leave no free 4M block in a 6M machine) with 63 of its 64 pages idle; then pages of
/// small objects, which no reservation fits, need all but some of those idle frames.
#[test]
fn idle_reserved_frames_are_given_back_when_memory_runs_out() {
    let mut config = presets::load("alpha-21264").unwrap();
    config.promotion = PromotionConfig::Reservation(Default::default());
    match &mut config.frames {
        pagelab_core::config::FramesConfig::Buddy(b) => {
            b.memory = pagelab_core::config::ByteSize(6 << 20);
            b.sample_every = 0;
        }
        other => panic!("alpha-21264 has a buddy allocator, not {other:?}"),
    }
    let mut machine = Machine::build(&config).unwrap();
    let big = 0x4000_0000u64;
    let small = 0x8000_0000u64;
    let small_pages = 730u64;
    let load = |a: u64| MemRef {
        addr: VirtAddr(a),
        ip: 0,
        size: 8,
        kind: AccessKind::Load,
        asid: Asid(0),
    };
    let mmap = |addr: u64, size: u64| {
        Event::Alloc(Alloc {
            op: AllocOp::Mmap,
            addr,
            size,
            old_addr: 0,
            flags: 0,
            callsite: 0,
        })
    };
    let mut batch = Batch {
        refs: vec![load(big)],
        events: vec![(0, mmap(big, 4 << 20))],
    };
    for i in 0..small_pages {
        // One 8K object every 64K: too small for any reservation.
        let addr = small + (i << 16);
        batch.events.push((batch.refs.len(), mmap(addr, PAGE)));
        batch.refs.push(load(addr));
    }
    machine
        .run_batch(&batch)
        .unwrap_or_else(|e| panic!("{e:?}"));
    machine.check_policy().unwrap();
    let report = machine.report();
    assert_eq!(report.counts.page_faults, 1 + small_pages);
    assert_eq!(
        report.policy_stats.get("reservations preempted"),
        Some(&1),
        "{:?}",
        report.policy_stats
    );
    assert_eq!(report.reserved_idle_frames, 0);
}
