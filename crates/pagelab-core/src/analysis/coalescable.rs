//! How much of a trace's footprint the frame allocator left coalescable: at each run
//! length of 2 to 512 base pages, the footprint pages that lie in a naturally aligned
//! group of that many pages, every one mapped, to contiguous frames aligned like the
//! group and with the same rights. That is the test arm64's contiguous bit and AMD's
//! PTE coalescing make (`crate::tlb::coalesce`): such a group takes one TLB entry.
//! Read from the page table at the end of a run of the trace, so it counts the frames
//! the allocator handed out as the machine modelled it (and what its promotions,
//! pager or eager paging made of them): a footprint page unmapped by then (freed by
//! an `munmap` under eager paging, reclaimed by a pager) counts as not coalescable,
//! and a group within a huge page as coalescable (it takes the huge page's entry).
//! Groups are of 4K pages whatever the machine's base page; under
//! `[virtualization]` the frames are the host's (what a TLB entry holds).

use crate::addr::{Asid, VirtAddr, BASE_SHIFT};
use crate::pagetable::{Perms, Translation};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// The run lengths, in base pages: 2, 4, … 512.
pub const RUN_LENGTHS: [u64; 9] = [2, 4, 8, 16, 32, 64, 128, 256, 512];

/// The footprint one run length leaves coalescable.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Coalescable {
    /// Base pages (4K) in a group.
    pub pages: u64,
    /// Groups holding footprint pages that coalesce.
    pub groups: u64,
    /// Footprint pages in those groups, and their share of the footprint in percent.
    pub footprint_pages: u64,
    pub percent: f64,
}

/// What a group of pages maps to, when it coalesces: its first page's frame, rights
/// and page size in base pages.
#[derive(Clone, Copy)]
struct Run {
    frame: u64,
    perms: Perms,
    page_pages: u64,
}

/// Groups by (log2 of their pages, address space, group number), each looked at once.
struct Groups<F> {
    lookup: F,
    known: FxHashMap<(u32, u16, u64), Option<Run>>,
}

impl<F: FnMut(Asid, VirtAddr) -> Option<Translation>> Groups<F> {
    /// The run group `g` of `2^shift` pages of `asid` maps to, if it coalesces.
    fn run(&mut self, shift: u32, asid: u16, g: u64) -> Option<Run> {
        if let Some(&known) = self.known.get(&(shift, asid, g)) {
            return known;
        }
        let run = if shift == 0 {
            let va = VirtAddr(g << BASE_SHIFT);
            (self.lookup)(Asid(asid), va).map(|t| {
                let within = (va.0 & (t.size.bytes() - 1)) >> BASE_SHIFT;
                Run {
                    frame: t.pfn.0 + within,
                    perms: t.perms,
                    page_pages: t.size.bytes() >> BASE_SHIFT,
                }
            })
        } else {
            self.halves(shift, asid, g)
        };
        self.known.insert((shift, asid, g), run);
        run
    }

    /// A group of `2^shift` pages coalesces when its first half does, within one
    /// page (a superpage of the group's size or more), or aligned like the group and
    /// continued by its second half.
    fn halves(&mut self, shift: u32, asid: u16, g: u64) -> Option<Run> {
        let first = self.run(shift - 1, asid, 2 * g)?;
        let pages = 1u64 << shift;
        if first.page_pages >= pages {
            return Some(first);
        }
        if first.frame % pages != 0 {
            return None;
        }
        let second = self.run(shift - 1, asid, 2 * g + 1)?;
        (second.frame == first.frame + pages / 2 && second.perms == first.perms).then_some(first)
    }
}

/// At each of [`RUN_LENGTHS`], the footprint `pages` (sorted by address space, then
/// page, as `Footprint::sorted` gives them) that lie in groups that coalesce, the
/// translations read with `lookup` (a page's translation, or none if unmapped).
pub fn coalescable(
    pages: &[(u16, u64)],
    lookup: impl FnMut(Asid, VirtAddr) -> Option<Translation>,
) -> Vec<Coalescable> {
    let mut groups = Groups {
        lookup,
        known: FxHashMap::default(),
    };
    RUN_LENGTHS
        .iter()
        .map(|&n| {
            let shift = n.trailing_zeros();
            let (mut count, mut covered) = (0u64, 0u64);
            let mut i = 0;
            while i < pages.len() {
                let (asid, vpn) = pages[i];
                let g = vpn >> shift;
                let inside = pages[i..]
                    .iter()
                    .take_while(|p| p.0 == asid && p.1 >> shift == g)
                    .count();
                if groups.run(shift, asid, g).is_some() {
                    count += 1;
                    covered += inside as u64;
                }
                i += inside;
            }
            Coalescable {
                pages: n,
                groups: count,
                footprint_pages: covered,
                percent: if pages.is_empty() {
                    0.0
                } else {
                    100.0 * covered as f64 / pages.len() as f64
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{PageSize, Pfn};

    fn shares(pages: &[(u16, u64)], map: &FxHashMap<u64, Translation>) -> Vec<(u64, u64)> {
        coalescable(pages, |_, va| map.get(&(va.0 >> BASE_SHIFT)).copied())
            .iter()
            .map(|c| (c.groups, c.footprint_pages))
            .collect()
    }

    fn page(pfn: u64) -> Translation {
        Translation {
            pfn: Pfn(pfn),
            size: PageSize::K4,
            perms: Perms::RW,
        }
    }

    #[test]
    fn groups_coalesce_when_contiguous_aligned_and_alike() {
        // Pages 0..8 at frames 16..24: every group up to 8 coalesces. Pages 8..12 at
        // frames 41..45: contiguous, not aligned: none. Pages 16..20 at frames 32..36,
        // page 18 read-only: 16-17 coalesce, 18-19 do not (and neither does 16..20).
        let mut map = FxHashMap::default();
        for p in 0..8 {
            map.insert(p, page(16 + p));
        }
        for p in 8..12 {
            map.insert(p, page(33 + p));
        }
        for p in 16..20 {
            map.insert(p, page(16 + p));
        }
        map.get_mut(&18).unwrap().perms = Perms(Perms::READ);
        let fp: Vec<(u16, u64)> = [0, 1, 5, 7, 9, 16, 19].iter().map(|&p| (0, p)).collect();
        let s = shares(&fp, &map);
        // 2: groups {0,1}, {4,5}, {6,7}, {16,17} coalesce; {8,9} and {18,19} do not.
        assert_eq!(s[0], (4, 5));
        // 4: {0..4}, {4..8} coalesce; {8..12} not aligned; {16..20} mixed rights.
        assert_eq!(s[1], (2, 4));
        // 8: {0..8}; 16: {0..16} lacks pages 12..16.
        assert_eq!(s[2], (1, 4));
        assert_eq!(s[3], (0, 0));
    }

    #[test]
    fn address_spaces_are_apart() {
        // The same pages, contiguous in address space 0 and scattered in 1.
        let fp: Vec<(u16, u64)> = (0..2).flat_map(|a| (0..4).map(move |p| (a, p))).collect();
        let found = coalescable(&fp, |asid, va| {
            let p = va.0 >> BASE_SHIFT;
            Some(page(if asid.0 == 0 { 8 + p } else { 8 + 2 * p }))
        });
        assert_eq!((found[0].groups, found[0].footprint_pages), (2, 4));
        assert_eq!((found[1].groups, found[1].footprint_pages), (1, 4));
        assert_eq!(found[1].percent, 50.0);
    }

    #[test]
    fn a_superpage_coalesces_every_group_within_it() {
        let mut map = FxHashMap::default();
        for p in 0..512 {
            map.insert(
                512 + p,
                Translation {
                    pfn: Pfn(1024),
                    size: PageSize::M2,
                    perms: Perms::RW,
                },
            );
        }
        let fp = [(0u16, 512u64), (0, 1000)];
        let s = shares(&fp, &map);
        assert!(s.iter().all(|&(_, covered)| covered == 2), "{s:?}");
        assert_eq!(s[8].0, 1);
        // An unmapped neighbour keeps a group from coalescing.
        map.insert(0, page(4096));
        assert_eq!(shares(&[(0, 0)], &map)[0], (0, 0));
    }
}
