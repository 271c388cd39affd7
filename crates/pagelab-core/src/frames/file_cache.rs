//! Another program's file cache in physical memory, and the page daemon that takes it
//! back: the fragmentation Navarro et al. restore contiguity against ("Practical,
//! Transparent Operating System Support for Superpages", OSDI 2002; Gopalan's slides,
//! "Fragmentation control": "move clean, inactive pages to the free list ... prefer
//! victim pages that contribute the most to contiguity").
//!
//! Before the run, a web server's requests fill memory with clean file pages through
//! the buddy allocator itself: a file missed is read one base page at a time, and
//! when memory is full the page daemon gives files back (second chance: those
//! requested since it last passed are kept) until the cache is down to its share (`frames.cached`), until the misses have read memory
//! twice over; the free memory the run begins with is what the last of these
//! evictions left. Where
//! the pages lie, and how much contiguity their eviction gives back, is the
//! allocator's and the requests' doing, not a chosen pattern. The file set follows
//! SPECweb99's: directories of 36 files, four classes of nine files each (0.1-0.9,
//! 1-9, 10-90 and 100-900 KB) requested 35 / 50 / 14 / 1 % of the time, directories
//! and files within a class by Zipf laws (exponent 1); here with enough directories
//! that the file set is twice the cache.
//!
//! During the run the cache pages are neither free nor the program's. When an
//! allocation fails:
//! - of a base page or less (memory is short), either daemon frees cache pages: the
//!   clock the oldest first, until the allocation succeeds; the contiguity daemon the
//!   pages of the aligned block of the smallest superpage size that holds the fewest,
//!   and nothing of the program (the oldest first, as the clock, when no block is
//!   free of the program's pages);
//! - of a superpage (contiguity is low), the contiguity daemon frees the cache pages
//!   of the aligned block of that size that holds the fewest, and nothing of the
//!   program, if there is one; the clock frees nothing (a traditional daemon wakes on
//!   a shortage of memory, not of contiguity), and the caller falls back.
//! What the daemon evicts is the other program's loss: counted, not charged to this
//! program's cycles.

use super::{BuddyAllocator, FrameAllocator};
use crate::addr::{PageSize, Pfn};
use crate::rng::splitmix64 as splitmix;
use std::collections::VecDeque;

/// What the file cache held and lost, for the report.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FileCacheReport {
    /// Base frames of cache pages when the run began.
    pub frames_at_start: u64,
    /// Base frames of cache pages evicted because memory was short.
    pub evicted_for_memory: u64,
    /// Base frames of cache pages evicted to give a superpage its block.
    pub evicted_for_contiguity: u64,
    /// Base frames of cache pages at the end.
    pub frames_at_end: u64,
}

pub struct FileCache {
    inner: BuddyAllocator,
    contiguity: bool,
    /// The order of a cache page (the machine's base page).
    page_order: u32,
    /// The order of the block the contiguity daemon frees on a shortage.
    block_order: u32,
    /// One bit per cache page (by its first frame >> page_order).
    held: Vec<u64>,
    /// Cache pages, oldest first (entries of pages already evicted are skipped).
    age: VecDeque<u64>,
    /// Cache frames in each aligned block, by order from `block_order` (index
    /// `order - block_order`): the blocks the daemon weighs.
    per_block: Vec<Vec<u32>>,
    /// Base frames of cache pages now.
    frames: u64,
    report: FileCacheReport,
}

/// The web server's files while the cache fills: each file's pages (none: not
/// cached), whether it was requested since the daemon's hand last passed it, and the
/// cached files in the hand's order.
struct Files {
    pages: Vec<Vec<u64>>,
    referenced: Vec<bool>,
    queue: VecDeque<usize>,
}

/// SPECweb99's file classes: the share of requests (in percent) and the size unit of
/// the class's nine files (file i of 1..=9 is i units).
const CLASSES: [(u64, u64); 4] = [(35, 102), (50, 1024), (14, 10_240), (1, 102_400)];

impl FileCache {
    /// `inner` with `share` of its frames filled by the cache (seeded); `page` is the
    /// machine's base page, `block` the smallest superpage size.
    pub fn new(
        inner: BuddyAllocator,
        share: f64,
        page: PageSize,
        block: PageSize,
        contiguity: bool,
        seed: u64,
    ) -> FileCache {
        let total = inner.total_frames();
        let page_order = order_of(page);
        let top = inner.max_order().max(page_order);
        let block_order = order_of(block).clamp(page_order, top);
        let per_block = (block_order..=top)
            .map(|k| vec![0u32; (total >> k) as usize + 1])
            .collect();
        let mut c = FileCache {
            inner,
            contiguity,
            page_order,
            block_order,
            held: vec![0; ((total >> page_order) as usize).div_ceil(64) + 1],
            age: VecDeque::new(),
            per_block,
            frames: 0,
            report: FileCacheReport::default(),
        };
        c.fill(share, seed);
        c.report.frames_at_start = c.frames;
        c
    }

    /// A web server's requests until its misses have read memory twice over:
    /// files missed are read page by page; when memory is full the daemon gives files
    /// back down to the cache's share (between a free minimum and a free target, as
    /// FreeBSD's page daemon), as once more at the end; the cache pages are then
    /// queued in the daemon's order.
    fn fill(&mut self, share: f64, seed: u64) {
        let target = (self.inner.total_frames() as f64 * share) as u64 >> self.page_order;
        if target == 0 {
            return;
        }
        let page = page_of(self.page_order);
        let page_bytes = 4096u64 << self.page_order;
        let pages_of = |file: usize| {
            let (class, i) = (file / 9 % 4, (file % 9) as u64 + 1);
            (CLASSES[class].1 * i).div_ceil(page_bytes)
        };
        // Enough directories that the file set is twice the cache.
        let dir_pages: u64 = (0..36).map(pages_of).sum();
        let dirs = (2 * target).div_ceil(dir_pages).max(1) as usize;
        let dir_cdf = zipf_cdf(dirs);
        let file_cdf = zipf_cdf(9);
        let mut state = seed ^ 0x4649_4c45_4341_4348;
        let mut files = Files {
            pages: vec![Vec::new(); dirs * 36],
            referenced: vec![false; dirs * 36],
            queue: VecDeque::new(),
        };
        let total = self.inner.total_frames() >> self.page_order;
        let file_set = dir_pages * dirs as u64;
        let (mut read, mut requests) = (0u64, 0u64);
        // Until the misses have read memory twice over, or every file is cached (a
        // file set memory holds whole: nothing more to miss).
        'fill: while read < 2 * total && self.pages() < file_set && requests < 64 * total {
            requests += 1;
            let dir = pick(&dir_cdf, &mut state);
            let mut p = splitmix(&mut state) % 100;
            let class = CLASSES
                .iter()
                .position(|&(share, _)| {
                    let hit = p < share;
                    p = p.saturating_sub(share);
                    hit
                })
                .expect("the shares sum to 100");
            let file = dir * 36 + class * 9 + pick(&file_cdf, &mut state);
            if !files.pages[file].is_empty() {
                files.referenced[file] = true;
                continue;
            }
            for _ in 0..pages_of(file) {
                let pfn = match self.inner.alloc(page) {
                    Some(pfn) => pfn,
                    None => {
                        // Memory is full: the daemon runs.
                        self.shrink_to(target, &mut files);
                        match self.inner.alloc(page) {
                            Some(pfn) => pfn,
                            // Nothing the cache gave back makes a page (wired frames
                            // around each): it can grow no more.
                            None => {
                                if !files.pages[file].is_empty() {
                                    files.queue.push_back(file);
                                }
                                break 'fill;
                            }
                        }
                    }
                };
                self.mark(pfn.0, true);
                files.pages[file].push(pfn.0);
                read += 1;
            }
            files.queue.push_back(file);
        }
        // The run begins just after the daemon has run.
        self.shrink_to(target, &mut files);
        for file in files.queue {
            self.age.extend(files.pages[file].iter().copied());
        }
    }

    /// Give back files until the cache holds at most `target` pages: the daemon's hand
    /// goes round the resident files in the order they were read, passing over (and
    /// clearing) those requested since it last passed (second chance).
    fn shrink_to(&mut self, target: u64, files: &mut Files) {
        while self.pages() > target {
            let Some(file) = files.queue.pop_front() else {
                return;
            };
            if std::mem::take(&mut files.referenced[file]) {
                files.queue.push_back(file);
                continue;
            }
            for pfn in std::mem::take(&mut files.pages[file]) {
                self.evict(pfn);
            }
        }
    }

    fn pages(&self) -> u64 {
        self.frames >> self.page_order
    }

    fn is_held(&self, pfn: u64) -> bool {
        let i = pfn >> self.page_order;
        self.held[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    fn mark(&mut self, pfn: u64, on: bool) {
        let i = pfn >> self.page_order;
        let bit = 1u64 << (i % 64);
        let frames = 1u32 << self.page_order;
        if on {
            self.held[(i / 64) as usize] |= bit;
            self.frames += frames as u64;
        } else {
            self.held[(i / 64) as usize] &= !bit;
            self.frames -= frames as u64;
        }
        for (j, counts) in self.per_block.iter_mut().enumerate() {
            let b = (pfn >> (self.block_order + j as u32)) as usize;
            if on {
                counts[b] += frames;
            } else {
                counts[b] -= frames;
            }
        }
    }

    fn evict(&mut self, pfn: u64) {
        self.mark(pfn, false);
        self.inner.free(Pfn(pfn), page_of(self.page_order));
    }

    /// Evict the oldest cache page; false if there is none.
    fn evict_oldest(&mut self) -> bool {
        while let Some(pfn) = self.age.pop_front() {
            if self.is_held(pfn) {
                self.evict(pfn);
                return true;
            }
        }
        false
    }

    /// Evict every cache page of the aligned block of `order` that holds the fewest and
    /// no frame of the program (lowest address first among equals): the frames evicted,
    /// or `None` if no block qualifies.
    fn free_block(&mut self, order: u32) -> Option<u64> {
        let counts = self
            .per_block
            .get(order.checked_sub(self.block_order)? as usize)?;
        let size = 1u64 << order;
        let mut best: Option<(u32, u64)> = None;
        for (b, &cached) in counts.iter().enumerate() {
            if cached == 0 || best.is_some_and(|(n, _)| cached >= n) {
                continue;
            }
            let start = (b as u64) << order;
            let free = self.inner.free_frames_in(Pfn(start), order).unwrap_or(0);
            if start + size <= self.inner.total_frames() && cached as u64 + free == size {
                best = Some((cached, start));
            }
        }
        let (n, start) = best?;
        let step = 1u64 << self.page_order;
        let mut pfn = start;
        while pfn < start + size {
            if self.is_held(pfn) {
                self.evict(pfn);
            }
            pfn += step;
        }
        Some(n as u64)
    }

    pub fn report(&self) -> FileCacheReport {
        FileCacheReport {
            frames_at_end: self.frames,
            ..self.report.clone()
        }
    }
}

impl FrameAllocator for FileCache {
    fn alloc(&mut self, size: PageSize) -> Option<Pfn> {
        if let Some(p) = self.inner.alloc(size) {
            return Some(p);
        }
        let order = order_of(size);
        if order <= self.page_order {
            if self.contiguity {
                if let Some(n) = self.free_block(self.block_order) {
                    self.report.evicted_for_memory += n;
                    return self.inner.alloc(size);
                }
            }
            while self.evict_oldest() {
                self.report.evicted_for_memory += 1 << self.page_order;
                if let Some(p) = self.inner.alloc(size) {
                    return Some(p);
                }
            }
            return None;
        }
        if !self.contiguity {
            return None;
        }
        let n = self.free_block(order)?;
        self.report.evicted_for_contiguity += n;
        self.inner.alloc(size)
    }

    fn free(&mut self, pfn: Pfn, size: PageSize) {
        self.inner.free(pfn, size)
    }
    fn total_frames(&self) -> u64 {
        self.inner.total_frames()
    }
    fn used_frames(&self) -> u64 {
        self.inner.used_frames() - self.frames
    }
    fn free_frames_by_order(&self) -> Option<Vec<u64>> {
        Some(self.inner.free_frames_by_order())
    }
    fn free_frames_in(&self, pfn: Pfn, order: u32) -> Option<u64> {
        self.inner.free_frames_in(pfn, order)
    }
    fn file_cache(&self) -> Option<FileCacheReport> {
        Some(self.report())
    }
}

fn order_of(size: PageSize) -> u32 {
    size.base_frames().trailing_zeros()
}

fn page_of(order: u32) -> PageSize {
    PageSize::from_shift(crate::addr::BASE_SHIFT + order).expect("a page size the machine has")
}

/// The cumulative distribution of a Zipf law (exponent 1) over `n` ranks.
fn zipf_cdf(n: usize) -> Vec<f64> {
    let mut sum = 0.0;
    let mut cdf: Vec<f64> = (1..=n)
        .map(|k| {
            sum += 1.0 / k as f64;
            sum
        })
        .collect();
    for c in &mut cdf {
        *c /= sum;
    }
    cdf
}

/// A rank drawn from `cdf`.
fn pick(cdf: &[f64], state: &mut u64) -> usize {
    let u = (splitmix(state) >> 11) as f64 / (1u64 << 53) as f64;
    cdf.partition_point(|&c| c <= u).min(cdf.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 64 MiB of 4K frames in blocks of up to 4 MiB, 8K cache pages, 64K blocks.
    fn cache(share: f64, contiguity: bool) -> FileCache {
        let inner = BuddyAllocator::new(1 << 14, 10);
        FileCache::new(inner, share, PageSize::K8, PageSize::K64, contiguity, 7)
    }

    fn free(c: &FileCache) -> u64 {
        c.free_frames_by_order().unwrap().iter().sum()
    }

    #[test]
    fn the_cache_fills_to_its_share_and_its_frames_are_neither_free_nor_the_programs() {
        let c = cache(0.9, false);
        let target = ((1u64 << 14) as f64 * 0.9) as u64 >> 1 << 1;
        // Files go whole: the cache ends below its share by less than the largest file
        // (900 KB: 113 pages of 8K).
        assert!(
            c.frames <= target && c.frames + 226 > target,
            "{}",
            c.frames
        );
        assert_eq!(c.used_frames(), 0);
        // Frame 0 is never handed out.
        assert_eq!(c.frames + free(&c), (1 << 14) - 1);
        assert_eq!(c.report().frames_at_start, c.frames);
        // The counts by block agree with the bits.
        let bits: u64 = c.held.iter().map(|w| w.count_ones() as u64).sum();
        assert_eq!(bits << 1, c.frames);
        for (j, counts) in c.per_block.iter().enumerate() {
            assert_eq!(
                counts.iter().map(|&n| n as u64).sum::<u64>(),
                c.frames,
                "order {}",
                j + 4
            );
        }
    }

    #[test]
    fn the_same_seed_fills_the_same_frames() {
        assert_eq!(cache(0.9, false).held, cache(0.9, false).held);
        assert_eq!(cache(0.9, false).held, cache(0.9, true).held);
    }

    #[test]
    fn a_shortage_of_memory_frees_the_oldest_pages_first_with_the_clock() {
        let mut c = cache(0.9, false);
        let oldest = *c.age.front().unwrap();
        let mut got = 0;
        while free(&c) >= 2 {
            c.alloc(PageSize::K8).unwrap();
            got += 1;
        }
        assert_eq!(c.report().evicted_for_memory, 0);
        c.alloc(PageSize::K8).expect("a cache page freed for it");
        assert!(!c.is_held(oldest));
        assert_eq!(c.report().evicted_for_memory, 2);
        assert_eq!(c.used_frames(), (got + 1) * 2);
    }

    #[test]
    fn low_contiguity_frees_a_block_only_with_the_contiguity_daemon() {
        for contiguity in [false, true] {
            let mut c = cache(0.97, contiguity);
            // Take every free 4 MiB block first, so that one must come from the cache.
            while c.inner.alloc(PageSize::M4).is_some() {}
            let before = c.frames;
            let got = c.alloc(PageSize::M4);
            assert_eq!(got.is_some(), contiguity);
            if let Some(pfn) = got {
                let evicted = before - c.frames;
                assert_eq!(c.report().evicted_for_contiguity, evicted);
                assert!(evicted > 0 && evicted <= 1024);
                // No cache page is left in the block it handed out.
                assert!((pfn.0..pfn.0 + 1024).step_by(2).all(|p| !c.is_held(p)));
            } else {
                assert_eq!(c.frames, before);
            }
        }
    }

    #[test]
    fn a_block_holding_the_programs_frames_is_never_freed() {
        let mut c = cache(0.5, true);
        // The program takes every frame the cache does not hold, in base pages.
        let mut mine = std::collections::HashSet::new();
        while let Some(p) = c.inner.alloc(PageSize::K8) {
            mine.insert(p.0 >> 4);
        }
        let cached = c.frames;
        // Blocks mixing the program's pages and the cache's are not candidates; one
        // wholly cached is (all its cache pages evicted).
        let pfn = c.alloc(PageSize::K64).expect("a 64K block wholly cached");
        assert!(!mine.contains(&(pfn.0 >> 4)));
        assert_eq!(cached - c.frames, 16);
        assert!((pfn.0..pfn.0 + 16).step_by(2).all(|p| !c.is_held(p)));
        assert_eq!(c.frames + c.used_frames(), (1 << 14) - 1 - free(&c));
    }
}
