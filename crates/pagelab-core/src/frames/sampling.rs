//! Free memory by block size over a run (`frames.sample_every`): every so many
//! references, how much memory is free and the share of it in blocks large enough for
//! each superpage size (what a request of that size could still get), with the
//! promotions and walks so far, to plot beside it.

use super::FrameAllocator;
use crate::addr::PageSize;
use serde::Serialize;

/// Free memory at one point of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FragmentationSample {
    pub references: u64,
    pub free_frames: u64,
    pub promotions: u64,
    pub walks: u64,
    /// By size, as `Report::fragmentation_sizes` lists them.
    pub usable_share: Vec<f64>,
}

/// The samples of a run and when the next is due.
pub struct Fragmentation {
    /// References between samples; 0: never.
    every: u64,
    next: u64,
    /// The sizes whose usable share is sampled (the superpage sizes, ascending).
    pub sizes: Vec<PageSize>,
    samples: Vec<FragmentationSample>,
}

/// What a sample counts besides free memory.
pub struct Progress {
    pub references: u64,
    pub promotions: u64,
    pub walks: u64,
}

impl Fragmentation {
    pub fn new(every: u64, sizes: Vec<PageSize>) -> Fragmentation {
        Fragmentation {
            every,
            next: every,
            sizes,
            samples: Vec::new(),
        }
    }

    /// Whether a sample is due after `references`.
    pub fn due(&self, references: u64) -> bool {
        self.every > 0 && references >= self.next
    }

    /// Take a sample if one is due after `at.references`.
    pub fn after(&mut self, frames: &dyn FrameAllocator, at: Progress) {
        if self.due(at.references) {
            self.next = (at.references / self.every + 1) * self.every;
            if let Some(s) = self.now(frames, at) {
                self.samples.push(s);
            }
        }
    }

    /// The free memory now, if the allocator keeps it in blocks.
    pub fn now(&self, frames: &dyn FrameAllocator, at: Progress) -> Option<FragmentationSample> {
        let by_order = frames.free_frames_by_order()?;
        let free: u64 = by_order.iter().sum();
        let usable_share = self
            .sizes
            .iter()
            .map(|s| {
                let order = s.base_frames().trailing_zeros() as usize;
                let usable: u64 = by_order.iter().skip(order).sum();
                if free > 0 {
                    usable as f64 / free as f64
                } else {
                    0.0
                }
            })
            .collect();
        Some(FragmentationSample {
            references: at.references,
            free_frames: free,
            promotions: at.promotions,
            walks: at.walks,
            usable_share,
        })
    }

    /// Every sample taken, and one of the end of the run (`at`) unless the last is it.
    pub fn samples(&self, frames: &dyn FrameAllocator, at: Progress) -> Vec<FragmentationSample> {
        let mut out = self.samples.clone();
        if self.every > 0 {
            if let Some(now) = self.now(frames, at) {
                if out.last().map(|s| s.references) != Some(now.references) {
                    out.push(now);
                }
            }
        }
        out
    }
}
