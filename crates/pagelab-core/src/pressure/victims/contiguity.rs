//! The contiguity-aware daemon (Navarro et al., "Practical, transparent operating
//! system support for superpages", OSDI 2002, as Gopalan's slides present it,
//! "Fragmentation control": "modified page daemon for victim selection: restore
//! contiguity ... prefer victim pages that contribute the most to contiguity"): it
//! gathers up to `paging.contiguity_window` inactive pages and reclaims first those
//! whose frames complete a free aligned block of the smallest superpage size.

use super::{Frames, Victim, VictimChoice};
use crate::addr::Pfn;
use std::collections::BTreeMap;

pub struct Contiguity;

impl Contiguity {
    pub fn build(buddy: bool) -> Result<Contiguity, String> {
        if buddy {
            Ok(Contiguity)
        } else {
            Err("paging.daemon: \"contiguity\" weighs free buddy blocks; it needs frames.kind = \"buddy\"".into())
        }
    }
}

impl VictimChoice for Contiguity {
    fn weighs(&self) -> bool {
        true
    }
    fn choose(&self, victims: &[Victim], need: usize, frames: &Frames) -> Vec<usize> {
        choose_for_contiguity(victims, need, frames.order, frames.per_page, frames.free_in)
    }
    fn frees_blocks(&self) -> bool {
        true
    }
}

/// The contiguity daemon's choice among inactive pages: the victims to reclaim (at
/// least `need` of them when there are), in order. Victims are grouped by their
/// aligned block of 2^`order` base frames; the groups whose pages are all the frames
/// still allocated in their block (freeing them completes it) come first, fewest pages
/// first, then clean before dirty; the other victims follow in the clock's order, so
/// that the daemon departs from it only where that restores contiguity ("minimize
/// impact"). `free_in(frame, order)` counts the free frames of a block; `frames` is
/// the base frames of one page.
pub fn choose_for_contiguity(
    victims: &[Victim],
    need: usize,
    order: u32,
    frames: u64,
    free_in: &dyn Fn(Pfn, u32) -> u64,
) -> Vec<usize> {
    let mut groups: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, v) in victims.iter().enumerate() {
        groups.entry(v.frame.0 >> order).or_default().push(i);
    }
    let mut completing: Vec<(usize, usize, u64, Vec<usize>)> = groups
        .into_iter()
        .filter_map(|(block, members)| {
            let allocated = (1u64 << order) - free_in(Pfn(block << order), order);
            let freed = members.iter().filter(|&&i| victims[i].frees).count() as u64 * frames;
            let dirty = members.iter().filter(|&&i| victims[i].dirty).count();
            (freed >= allocated).then_some((members.len(), dirty, block, members))
        })
        .collect();
    completing.sort_by_key(|&(len, dirty, block, _)| (len, dirty, block));
    let mut out = Vec::new();
    let mut taken = vec![false; victims.len()];
    for (_, _, _, members) in completing {
        if out.len() >= need {
            return out;
        }
        for i in members {
            taken[i] = true;
            out.push(i);
        }
    }
    out.extend(
        (0..victims.len())
            .filter(|&i| !taken[i])
            .take(need.saturating_sub(out.len())),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Asid;

    #[test]
    fn contiguity_prefers_victims_that_complete_a_block() {
        // Blocks of 4 frames: block 0 has 3 frames allocated, 2 of them victims;
        // block 1 has 2 allocated, both victims (completes); block 2, 1 allocated and
        // a victim (completes, cheaper). Block 0's victims come last, in their order.
        let allocated = [3u64, 2, 1];
        let free_in = |pfn: Pfn, order: u32| (1 << order) - allocated[(pfn.0 >> order) as usize];
        let v = |frame: u64| Victim {
            key: (Asid(0), frame << 12),
            frame: Pfn(frame),
            frees: true,
            dirty: false,
        };
        let victims = [v(1), v(0), v(4), v(5), v(8)];
        assert_eq!(choose_for_contiguity(&victims, 1, 2, 1, &free_in), vec![4]);
        assert_eq!(
            choose_for_contiguity(&victims, 2, 2, 1, &free_in),
            vec![4, 2, 3]
        );
        assert_eq!(
            choose_for_contiguity(&victims, 5, 2, 1, &free_in),
            vec![4, 2, 3, 0, 1]
        );
    }
}
