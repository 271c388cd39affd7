use super::*;
use crate::event::{Alloc, AllocOp, Event};
use crate::frames::BuddyAllocator;
use crate::pagetable::build_page_table;
use crate::pagetable::PageTableConfig;
use crate::range::config::Allocation;
use proptest::prelude::*;

struct World {
    eager: EagerPaging,
    table: AnyPageTable,
    frames: BuddyAllocator,
    tables: RangeTables,
}

fn world(frames: u64, max_order: u32, threshold: f64) -> World {
    let c = RangesConfig {
        allocation: Allocation::Eager,
        fragmentation_threshold: threshold,
        ..Default::default()
    };
    World {
        eager: EagerPaging::build(&c, max_order, true).unwrap(),
        table: build_page_table(&PageTableConfig::default()).unwrap(),
        frames: BuddyAllocator::new(frames, max_order),
        tables: RangeTables::default(),
    }
}

fn alloc(op: AllocOp, addr: u64, size: u64, old_addr: u64) -> Event {
    Event::Alloc(Alloc {
        op,
        addr,
        size,
        old_addr,
        flags: 3, // read-write (mmap, mprotect)
        callsite: 0,
    })
}

impl World {
    fn apply(&mut self, e: &Event) -> Freed {
        self.eager
            .on_event(
                Asid(0),
                e,
                &mut self.table,
                &mut self.frames,
                &mut self.tables,
            )
            .unwrap()
    }

    /// Every page of every range translates through the page table to the range's
    /// frame; no frame is in two ranges or free in the allocator; the allocator's
    /// free blocks are aligned, inside memory, and with the used frames add up to it.
    fn check(&self, total: u64) -> Result<(), TestCaseError> {
        let t = self.tables.get(Asid(0));
        let mut frames: Vec<(u64, u64)> = Vec::new();
        for r in t.map_or(&[][..], |t| t.ranges()) {
            for vpn in r.base..r.limit {
                let walk = self
                    .table
                    .as_ref()
                    .walk(Asid(0), VirtAddr(vpn << BASE_SHIFT));
                let t = walk.translation.expect("a range's page is mapped");
                prop_assert_eq!(t.pfn.0, r.frame(vpn), "page {:#x}", vpn);
            }
            frames.push((r.pfn, r.pfn + r.pages()));
        }
        for (p, k) in self.frames.free_blocks() {
            prop_assert_eq!(p.0 % (1 << k), 0, "free block {:#x} of order {}", p.0, k);
            prop_assert!(
                p.0 + (1 << k) <= total,
                "free block {:#x} beyond memory",
                p.0
            );
        }
        frames.extend(
            self.frames
                .free_blocks()
                .map(|(p, k)| (p.0, p.0 + (1 << k))),
        );
        frames.sort();
        for w in frames.windows(2) {
            prop_assert!(w[0].1 <= w[1].0, "frames {:?} and {:?} overlap", w[0], w[1]);
        }
        let free: u64 = self.frames.free_frames_by_order().iter().sum();
        prop_assert_eq!(free + self.frames.used_frames(), total - 1);
        if let Some(t) = t {
            prop_assert!(t.check().is_ok(), "{:?}", t.check());
            // The segment is the largest range.
            let largest = t.ranges().iter().map(|r| r.pages()).max();
            prop_assert_eq!(t.segment().map(|s| s.pages()), largest);
        }
        Ok(())
    }
}

#[test]
fn an_mmap_on_fresh_memory_is_one_range_in_the_largest_blocks() {
    // 4096 frames, blocks of up to 256: frame 0 is never handed out, so [1, 256) is in
    // small blocks and the large ones start at 256.
    let mut w = world(4096, 8, 0.5);
    w.apply(&alloc(AllocOp::Mmap, 0x40_0000, 600 << 12, 0));
    let t = w.tables.get(Asid(0)).unwrap();
    // 600 = 256 + 256 + 64 + 16 + 8: the first two are the 256-frame blocks at 256
    // and 512, one range; the rest come from the smallest free blocks that fit, as
    // the buddy allocator chooses them, the small ones below 256: three more ranges.
    let r: Vec<_> = t
        .ranges()
        .iter()
        .map(|r| (r.base, r.pages(), r.pfn))
        .collect();
    assert_eq!(
        r,
        [
            (0x400, 512, 256),
            (0x600, 64, 64),
            (0x640, 16, 16),
            (0x650, 8, 8)
        ]
    );
    w.check(4096).unwrap();
    let rep = w.eager.report(&w.tables);
    assert_eq!(
        (rep.ranges_made, rep.ranges_live, rep.pages_allocated),
        (4, 4, 600)
    );
    assert_eq!(rep.pages_untouched, Some(600));
    // An munmap in the middle splits it and gives the frames back.
    let freed = w.apply(&alloc(AllocOp::Munmap, 0, 100 << 12, 0x50_0000));
    assert_eq!(freed, Some((Asid(0), 0x500, 0x564)));
    let t = w.tables.get(Asid(0)).unwrap();
    let r: Vec<_> = t
        .ranges()
        .iter()
        .map(|r| (r.base, r.pages(), r.pfn))
        .collect();
    assert_eq!(
        r,
        [
            (0x400, 256, 256),
            (0x564, 156, 612),
            (0x600, 64, 64),
            (0x640, 16, 16),
            (0x650, 8, 8)
        ]
    );
    w.check(4096).unwrap();
}

#[test]
fn pages_mapped_before_break_the_range_and_keep_their_frames() {
    let mut w = world(4096, 8, 0.5);
    let frame = w.frames.alloc(PageSize::K4).unwrap();
    w.table
        .as_dyn()
        .map(
            Asid(0),
            VirtAddr(0x404 << 12),
            PageSize::K4,
            frame,
            Perms::RW,
            &mut w.frames,
        )
        .unwrap();
    w.apply(&alloc(AllocOp::Mmap, 0x40_0000, 16 << 12, 0));
    let t = w.tables.get(Asid(0)).unwrap();
    let pages: Vec<_> = t.ranges().iter().map(|r| (r.base, r.pages())).collect();
    assert_eq!(pages, [(0x400, 4), (0x405, 11)]);
    let walk = w.table.as_ref().walk(Asid(0), VirtAddr(0x404 << 12));
    assert_eq!(walk.translation.unwrap().pfn, frame);
}

#[test]
fn fragmented_memory_falls_back_to_demand_paging() {
    let mut w = world(4096, 8, 0.0);
    // Take one frame from every large block: nothing is left in blocks of 256.
    for p in (256..4096).step_by(256) {
        w.frames.take(p);
    }
    w.apply(&alloc(AllocOp::Mmap, 0x40_0000, 64 << 12, 0));
    assert!(w
        .tables
        .get(Asid(0))
        .map_or(true, |t| t.ranges().is_empty()));
    assert_eq!(w.eager.report(&w.tables).regions_demand, 1);
}

#[test]
fn thresholds_outside_zero_to_one_are_refused() {
    for bad in [-0.1, 1.5, f64::NAN] {
        let c = RangesConfig {
            fragmentation_threshold: bad,
            ..Default::default()
        };
        let e = EagerPaging::build(&c, 8, false).err().unwrap();
        assert!(e.starts_with("ranges.fragmentation_threshold:"), "{e}");
    }
}

#[derive(Clone, Debug)]
enum Op {
    Mmap(u64, u64),
    Munmap(u64, u64),
    Brk(u64),
    /// From page, old pages, to page, new pages.
    Mremap(u64, u64, u64, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u64..512, 1u64..300).prop_map(|(p, n)| Op::Mmap(p, n)),
        2 => (0u64..600, 1u64..200).prop_map(|(p, n)| Op::Munmap(p, n)),
        1 => (0u64..400).prop_map(Op::Brk),
        1 => (0u64..512, 1u64..100, prop_oneof![Just(None), (0u64..512).prop_map(Some)], 1u64..150)
            .prop_map(|(p, n, to, m)| Op::Mremap(p, n, to.unwrap_or(p), m)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// Under any sequence of mmaps, munmaps, mremaps and heap moves: every address a range
    /// translates agrees with the page table, no frame is in two ranges (or free),
    /// the allocator's frames add up, the tree keeps its shape.
    #[test]
    fn ranges_agree_with_the_page_table_and_never_share_a_frame(
        max_order in 2u32..9,
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let total = 3000;
        let mut w = world(total, max_order, 1.0);
        let mut heap = 0x1000u64;
        for op in ops {
            let e = match op {
                Op::Mmap(p, n) => alloc(AllocOp::Mmap, (0x2000 + p) << 12, (n << 12) - 5, 0),
                Op::Munmap(p, n) => alloc(AllocOp::Munmap, 0, n << 12, (0x2000 + p) << 12),
                Op::Mremap(p, n, to, m) => Event::Alloc(Alloc {
                    op: AllocOp::Mremap,
                    addr: (0x2000 + to) << 12,
                    size: m << 12,
                    old_addr: (0x2000 + p) << 12,
                    flags: n << 12, // the old size
                    callsite: 0,
                }),
                Op::Brk(n) => {
                    let (old, new) = (heap << 12, (0x1000 + n) << 12);
                    heap = 0x1000 + n;
                    alloc(AllocOp::Brk, new, 0, old)
                }
            };
            w.apply(&e);
            w.check(total)?;
        }
    }
}
