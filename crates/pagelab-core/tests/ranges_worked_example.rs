//! Range translations replayed on a trace small enough to follow by hand: two regions
//! mapped eagerly, a page of neither, part of a region unmapped, the range TLB hitting,
//! missing, the range walker filling it, invalidation. Every count below is worked out
//! in the comments, not taken from a run. The same trace runs in order, decoupled and
//! through the kernel loop, with one answer.

use pagelab_core::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef};
use pagelab_core::{Machine, MachineConfig};

/// Two fully associative LRU levels of two 4K entries, a two-entry LRU range TLB
/// beside the second; 64 MiB of memory in blocks of up to 2 MiB; eager paging.
const MACHINE: &str = r#"
name = "worked"
[tlb]
kind = "hierarchy"
[[tlb.levels]]
name = "l1"
parent = "l2"
[[tlb.levels.arrays]]
sets = 1
ways = 2
replacement = "lru"
[[tlb.levels]]
name = "l2"
[[tlb.levels.arrays]]
sets = 1
ways = 2
replacement = "lru"
[tlb.levels.range]
entries = 2
replacement = "lru"
[frames]
kind = "buddy"
memory = "64M"
max_block = "2M"
[ranges]
allocation = "eager"
"#;

const A: u64 = 0x1000_0000; // 16 pages, mapped eagerly
const B: u64 = 0x2000_0000; // 8 pages, mapped eagerly
const C: u64 = 0x3000_0000; // no region: demand-paged

fn load(addr: u64) -> MemRef {
    MemRef::new(addr, 8, AccessKind::Load)
}

fn page(region: u64, n: u64) -> MemRef {
    load(region + n * 4096 + 0x10)
}

fn mmap(addr: u64, pages: u64) -> Event {
    Event::Alloc(Alloc {
        op: AllocOp::Mmap,
        addr,
        size: pages * 4096,
        old_addr: 0,
        flags: 3, // PROT_READ | PROT_WRITE
        callsite: 0,
    })
}

fn munmap(addr: u64, pages: u64) -> Event {
    Event::Alloc(Alloc {
        op: AllocOp::Munmap,
        addr: 0,
        size: pages * 4096,
        old_addr: addr,
        flags: 0,
        callsite: 0,
    })
}

/// The trace; the state after each reference is in the comments: L1 and L2 in LRU
/// order (least recent first), R the range TLB.
fn trace() -> Batch {
    let mut b = Batch::default();
    // A's 16 pages are one aligned 64 KiB block of the buddy allocator, so one range;
    // B's 8 pages another (not adjacent to A: a range of its own).
    b.push_event(mmap(A, 16));
    b.push_event(mmap(B, 8));
    // 1. A0: L1, L2, R miss; page walk 1 (mapped at the mmap: no fault); A0 lies in a
    //    range, so range walk 1 installs A. L1 [A0], L2 [A0], R [A].
    b.refs.push(page(A, 0));
    // 2. A1: L1, L2 miss; R hit 1 refills L1 only. L1 [A0 A1], L2 [A0].
    b.refs.push(page(A, 1));
    // 3. A0: L1 hit. L1 [A1 A0].
    b.refs.push(page(A, 0));
    // 4. B0: L1, L2, R miss; page walk 2, range walk 2 installs B.
    //    L1 [A0 B0], L2 [A0 B0], R [A B].
    b.refs.push(page(B, 0));
    // 5. A2: L1, L2 miss; R hit 2. L1 [B0 A2], R [B A].
    b.refs.push(page(A, 2));
    // 6. C: L1, L2, R miss; page walk 3 faults (page fault 1); no range, no range walk.
    //    L1 [A2 C], L2 [B0 C].
    b.refs.push(load(C));
    // 7. B1: L1, L2 miss; R hit 3. L1 [C B1], R [A B].
    b.refs.push(page(B, 1));
    // The upper half of A goes: A shrinks to A0..A7, R's entry for A is dropped.
    b.push_event(munmap(A + 8 * 4096, 8));
    // 8. A3: L1, L2, R miss; page walk 4, range walk 3 installs the shrunk A.
    //    L1 [B1 A3], L2 [C A3], R [B A'].
    b.refs.push(page(A, 3));
    // 9. A9: unmapped: L1, L2, R miss (A' ends at A8); page walk 5 faults (page
    //    fault 2); no range. L1 [A3 A9], L2 [A3 A9].
    b.refs.push(page(A, 9));
    // 10. A4: L1, L2 miss; R hit 4. L1 [A9 A4].
    b.refs.push(page(A, 4));
    b
}

fn run(mode: u32) -> pagelab_core::Report {
    let config = MachineConfig::from_toml(MACHINE, "worked").unwrap();
    let mut m = Machine::build(&config).unwrap();
    m.set_decoupled(mode > 0);
    m.set_kernel(mode == 2);
    m.run_batch(&trace()).unwrap();
    m.report()
}

#[test]
fn the_worked_example_counts_as_worked_out() {
    let r = run(0);
    let level = |name: &str| r.levels.iter().find(|l| l.name == name).unwrap();
    let (l1, l2) = (level("l1"), level("l2"));
    assert_eq!((l1.hits, l1.misses), (1, 9), "l1");
    assert_eq!((l2.hits, l2.misses), (0, 9), "l2");
    let ranges = r.ranges.as_ref().expect("a ranges report");
    let unit = ranges.unit.as_ref().expect("the range TLB's report");
    assert_eq!((unit.hits, unit.misses), (4, 5), "range TLB hits, misses");
    assert_eq!(unit.range_walks, 3, "range walks");
    assert_eq!(unit.fills, 3, "range TLB fills");
    // Two ranges (then A' and B) fit in one node of the range table: one node a walk,
    // two lines a node.
    assert_eq!(unit.range_walk_refs, 3 * 2, "range-walk references");
    assert_eq!(r.counts.walks, 5, "page walks");
    assert_eq!(r.counts.page_faults, 2, "page faults");
    // The range TLB's row follows its level's.
    let names: Vec<&str> = r.levels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["l1", "l2", "range-tlb"]);

    let eager = ranges.eager.as_ref().expect("the eager-paging report");
    assert_eq!((eager.regions_eager, eager.regions_demand), (2, 0));
    assert_eq!(eager.pages_allocated, 24, "16 + 8 pages");
    assert_eq!(eager.pages_freed, 8, "A8..A15");
    assert_eq!(eager.ranges_made, 2);
    assert_eq!(eager.ranges_live, 2, "A' and B");
    assert_eq!(eager.largest_range_pages, 8);
    // Used: A0..A4 of A' (3 not), B0 and B1 of B (6 not); A8..A15 were freed unused.
    assert_eq!(eager.pages_untouched, Some(3 + 6 + 8));
    assert_eq!(eager.range_sizes, [("32K".to_string(), 2)]);
}

#[test]
fn every_mode_gives_the_worked_answer() {
    let in_order = serde_json::to_value(run(0)).unwrap();
    for mode in [1, 2] {
        assert_eq!(
            serde_json::to_value(run(mode)).unwrap(),
            in_order,
            "mode {mode}"
        );
    }
}

/// A direct segment over the same trace: the segment is the largest range (A, then
/// A' after the unmapping, 8 pages as B: the lower address wins a tie), a hit for
/// every page in it after a miss in L2, and nothing walks a range table.
#[test]
fn a_direct_segment_serves_its_region_without_walks() {
    let text = MACHINE.replace(
        "[tlb.levels.range]\nentries = 2",
        "[tlb.levels.range]\nkind = \"direct-segment\"\nentries = 1",
    );
    let config = MachineConfig::from_toml(&text, "segment").unwrap();
    let mut m = Machine::build(&config).unwrap();
    m.run_batch(&trace()).unwrap();
    let r = m.report();
    let unit = r.ranges.as_ref().unwrap().unit.as_ref().unwrap();
    // L2 misses: A0, A1, B0, A2, C, B1, A3, A9, A4 (as above). In the segment:
    // A0, A1, A2 (A, 16 pages), A3, A4 (A', 8 pages, before B by address): 5 hits.
    assert_eq!((unit.hits, unit.misses), (5, 4));
    assert_eq!((unit.range_walks, unit.range_walk_refs), (0, 0));
    // Walks: B0, C, B1, A9.
    assert_eq!(r.counts.walks, 4);
}
