//! Synthetic address-space layouts on which the page-table structures differ (Szmajda
//! and Heiser, "Variable Radix Page Table", ACSAC 2003): a dense program, the same
//! pages laid out compactly as a MIPS process, objects scattered over a sparse 64-bit
//! space, and many small segments shared by several address spaces.
//! Every layout is a fixed function of its seed.

use crate::addr::{Asid, VirtAddr};
use crate::event::{AccessKind, MemRef};

use crate::rng::splitmix64 as splitmix;

/// The 4K pages of a program's dense regions: 8 MiB of code and data, a 64 MiB heap
/// and a 1 MiB stack, each page once, in address order.
pub fn dense_pages() -> Vec<u64> {
    let regions = [
        (0x5555_5540_0000u64, 2048u64),
        (0x5555_6000_0000, 16384),
        (0x7ffd_ff00_0000, 256),
    ];
    regions
        .iter()
        .flat_map(|&(base, n)| (0..n).map(move |p| base + (p << 12)))
        .collect()
}

/// The pages of [`dense_pages`] laid out as a MIPS process is (the System V ABI's
/// MIPS RISC Processor Supplement, ch. 5, "Program Loading": text from 0x0040_0000,
/// data from 0x1000_0000, the stack below 0x8000_0000): a program that is, in the
/// words of Szmajda and Heiser (ACSAC 2003, §5.2), "compact in [its] use of the
/// address space", all of it in the low 2 GiB.
pub fn compact_pages() -> Vec<u64> {
    let regions = [
        (0x0040_0000u64, 2048u64),
        (0x1000_0000, 16384),
        (0x7fef_f000, 256),
    ];
    regions
        .iter()
        .flat_map(|&(base, n)| (0..n).map(move |p| base + (p << 12)))
        .collect()
}

/// `objects` objects of `pages` 4K pages each, at 64K-aligned places scattered over
/// the 47-bit user half of the address space.
pub fn sparse_pages(objects: usize, pages: u64, seed: u64) -> Vec<u64> {
    let mut state = seed;
    (0..objects)
        .flat_map(|_| {
            let base = splitmix(&mut state) & 0x0000_7fff_ffff_0000;
            (0..pages).map(move |p| base + (p << 12))
        })
        .collect()
}

/// A layout to compare the structures on, in place of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// [`dense_pages`].
    Dense,
    /// [`compact_pages`].
    Compact,
    /// [`sparse_pages`]: 256 objects of 4 pages.
    Sparse,
    /// 128 segments of 16 pages, each mapped with `map_shared` into 4 address spaces.
    Shared,
}

/// Address spaces sharing the segments of [`Layout::Shared`].
const SHARING: u16 = 4;

/// What a layout asks of a page table: segments to map shared before the stream,
/// then the references, each one a lookup (a page not yet mapped is mapped first).
pub struct Workload {
    /// Address spaces every segment is shared by.
    pub asids: Vec<Asid>,
    /// Shared segments: first address and number of 4K pages (aligned to their size).
    pub segments: Vec<(VirtAddr, u64)>,
    pub refs: Vec<MemRef>,
}

impl Layout {
    pub const NAMES: [&'static str; 4] = ["dense", "compact", "sparse", "shared"];

    pub fn parse(name: &str) -> Option<Layout> {
        match name {
            "dense" => Some(Layout::Dense),
            "compact" => Some(Layout::Compact),
            "sparse" => Some(Layout::Sparse),
            "shared" => Some(Layout::Shared),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Layout::NAMES[self as usize]
    }

    pub fn workload(self) -> Workload {
        let touch = |va: u64, asid: Asid| MemRef {
            asid,
            ..MemRef::new(va + 0x10, 8, AccessKind::Load)
        };
        let private = |pages: Vec<u64>| Workload {
            asids: Vec::new(),
            segments: Vec::new(),
            refs: pages.into_iter().map(|va| touch(va, Asid(0))).collect(),
        };
        match self {
            Layout::Dense => private(dense_pages()),
            Layout::Compact => private(compact_pages()),
            Layout::Sparse => private(sparse_pages(256, 4, 42)),
            Layout::Shared => {
                let pages = 16u64;
                let mut bases: Vec<u64> = sparse_pages(128, 1, 7);
                bases.sort_unstable();
                bases.dedup();
                let asids: Vec<Asid> = (1..=SHARING).map(Asid).collect();
                let refs = asids
                    .iter()
                    .flat_map(|&a| {
                        bases
                            .iter()
                            .flat_map(move |&b| (0..pages).map(move |p| touch(b + (p << 12), a)))
                    })
                    .collect();
                Workload {
                    segments: bases.iter().map(|&b| (VirtAddr(b), pages)).collect(),
                    asids,
                    refs,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_fixed_and_segments_do_not_overlap() {
        assert_eq!(sparse_pages(8, 4, 42), sparse_pages(8, 4, 42));
        let w = Layout::Shared.workload();
        for pair in w.segments.windows(2) {
            assert!(pair[0].0 .0 + (pair[0].1 << 12) <= pair[1].0 .0);
        }
        assert_eq!(w.refs.len(), w.segments.len() * 16 * w.asids.len());
        for name in Layout::NAMES {
            assert_eq!(Layout::parse(name).map(Layout::name), Some(name));
        }
    }
}
