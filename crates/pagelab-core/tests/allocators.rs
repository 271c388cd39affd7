//! Every frame allocator the registry lists (`FramesConfig::NAMES`), built from its
//! default options: the blocks it hands out are aligned to their size, never frame 0,
//! never two overlapping; it counts the frames in use; it takes every block back and
//! can hand the memory out again. A new allocator is covered by joining the list.

use pagelab_core::frames::{self, FramesConfig};
use pagelab_core::rng::splitmix64 as next;
use pagelab_core::{PageSize, Pfn};
use std::collections::BTreeMap;

/// Whether the block of `frames` at `pfn` overlaps one of `held` (start → end).
fn overlaps(held: &BTreeMap<u64, u64>, pfn: u64, frames: u64) -> bool {
    let before = held.range(..pfn + frames).next_back();
    before.is_some_and(|(_, &end)| end > pfn)
}

#[test]
fn every_allocator_hands_out_aligned_disjoint_blocks_and_takes_them_back() {
    assert!(FramesConfig::NAMES.len() >= 2);
    let sizes = [PageSize::K4, PageSize::K64, PageSize::M2];
    for name in FramesConfig::NAMES {
        let config: FramesConfig =
            toml::from_str(&format!("kind = {name:?}\nmemory = \"64M\"")).unwrap();
        let mut a = frames::build(&config, PageSize::K4, PageSize::M2, false, 7)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(a.total_frames(), 16384, "{name}");
        let mut held: BTreeMap<u64, u64> = BTreeMap::new();
        let mut sized: Vec<(Pfn, PageSize)> = Vec::new();
        let mut state = 1;
        for step in 0..20_000 {
            let r = next(&mut state);
            if r % 3 == 0 && !sized.is_empty() {
                let (pfn, size) = sized.swap_remove((r >> 8) as usize % sized.len());
                held.remove(&pfn.0);
                a.free(pfn, size);
            } else {
                let size = sizes[(r >> 4) as usize % sizes.len()];
                let Some(pfn) = a.alloc(size) else { continue };
                let frames = size.base_frames();
                assert!(pfn.0 != 0, "{name}: step {step}: frame 0 handed out");
                assert_eq!(pfn.0 % frames, 0, "{name}: step {step}: {size} at {pfn:?}");
                assert!(
                    !overlaps(&held, pfn.0, frames),
                    "{name}: step {step}: {size} at {pfn:?} overlaps a block in use"
                );
                held.insert(pfn.0, pfn.0 + frames);
                sized.push((pfn, size));
            }
            let in_use: u64 = held.iter().map(|(s, e)| e - s).sum();
            assert_eq!(a.used_frames(), in_use, "{name}: step {step}");
        }
        for (pfn, size) in sized.drain(..) {
            a.free(pfn, size);
        }
        assert_eq!(a.used_frames(), 0, "{name}");
        // What was given back can be handed out again.
        let mut again = 0;
        while a.alloc(PageSize::K4).is_some() {
            again += 1;
        }
        assert!(
            again > 0 && a.used_frames() == again,
            "{name}: {again} frames after freeing everything"
        );
    }
}
