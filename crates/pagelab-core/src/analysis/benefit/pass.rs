//! The one pass over a trace behind every mapping: each reference attributed to its
//! category, and each page stream a mapping needs (§3.2 "page resolution") run through
//! a stack-distance engine for H_TLB, whose misses go through a second one for H_PF
//! ("page locality analysis"). Streams that two mappings share are kept once.
//!
//! A stream takes the data references (loads, stores, modifies; instruction fetches
//! go to the instruction TLBs) of the categories in its `small` set as 4K pages and
//! those in its `large` set as pages of its large size; each page a reference spans
//! is one translation. Keys tag pages with their address space (above bit 52) and
//! large pages with bit 51.
//!
//! A stream that differs from the all-small stream of its TLB only in categories the
//! trace has not referenced yet is that stream so far: it *follows* it, and runs no
//! engine of its own until a batch references one of those categories, when it takes
//! a copy of the all-small stream's state. Categories a trace never references cost
//! nothing.

use crate::addr::{PageSize, BASE_SHIFT};
use crate::analysis::reuse::stack::StackDistance;
use crate::analysis::reuse::{Histogram, Tags};
use crate::categories::{Attribution, CategoryId, UserCategory};
use crate::event::{AccessKind, Batch};
use crate::page_set::PageSet;
use rustc_hash::FxHashMap;

const TAG_SHIFT: u32 = 52;
const LARGE_BIT: u64 = 1 << 51;

/// Which references a stream takes, at which page sizes, into a TLB of how many
/// entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamSpec {
    /// Categories (bit per [`CategoryId`]) taken as 4K pages, and as large pages.
    pub small: u16,
    pub large: u16,
    /// The large size (unused when `large` is empty).
    pub size: PageSize,
    pub entries: u64,
}

/// What one stream counted.
#[derive(Clone, Debug, Default)]
pub struct StreamCounts {
    pub translations: u64,
    /// Misses of the TLB of the spec's entries (Equation 1 on H_TLB).
    pub tlb_misses: u64,
    /// Misses of the page table (Equation 1 on H_PF); with no limit on its entries,
    /// the first touches.
    pub page_faults: u64,
    /// Distinct large pages.
    pub large_pages: u64,
    /// The first address of each large page, in the order first touched.
    pub large_page_starts: Vec<u64>,
}

// Aligned so that two threads' streams share no cache line.
#[repr(align(128))]
struct Stream {
    spec: StreamSpec,
    /// (the stream it is so far, the categories it treats differently).
    follows: Option<(usize, u16)>,
    engine: StackDistance,
    tlb: Histogram,
    pf_engine: StackDistance,
    pf: Histogram,
    translations: u64,
    large_pages: u64,
    large_page_starts: Vec<u64>,
    keys: Vec<u64>,
    misses: Vec<u64>,
}

/// A data reference the pass keeps: its tag, first and last byte, category.
#[derive(Clone, Copy)]
struct Kept {
    tag: u64,
    first: u64,
    last: u64,
    category: CategoryId,
}

pub struct Pass {
    streams: Vec<Stream>,
    attribution: Attribution,
    ids: Vec<CategoryId>,
    kept: Vec<Kept>,
    /// The categories of the batch's kept references (a bit each).
    batch_categories: u16,
    asids: Tags,
    /// Data references seen, and of them kept (one in `sample`).
    pub references: u64,
    pub kept_references: u64,
    /// References to each category, of those kept.
    pub category_references: Vec<u64>,
    /// The 4K pages of each category, of every data reference (sampled or not): what
    /// the program touches, against which a mapping's large pages are bloat.
    category_pages: Vec<PageSet>,
    /// The last (address space, first and last 4K page, category) put in
    /// `category_pages`.
    last_page: (u16, u64, u64, CategoryId),
    sample: u64,
    /// Data references until the next one kept.
    until_sample: u64,
    /// When sampling: each 4K page's references, all and kept (§5.1's comparison).
    accesses: Option<FxHashMap<u64, (u64, u64)>>,
    page_table_entries: Option<u64>,
}

impl Pass {
    /// A pass over the streams `specs`, with the categories of `rules` beside the
    /// built-in ones, keeping one data reference in `sample`, with a page table of
    /// `page_table_entries` (None: every page stays mapped).
    pub fn new(
        specs: &[StreamSpec],
        rules: Vec<UserCategory>,
        sample: u64,
        page_table_entries: Option<u64>,
    ) -> Pass {
        let categories = crate::categories::names(&rules).len();
        Pass {
            streams: specs
                .iter()
                .map(|&spec| Stream {
                    spec,
                    follows: follows(specs, spec),
                    engine: StackDistance::new(),
                    tlb: Histogram::default(),
                    pf_engine: StackDistance::new(),
                    pf: Histogram::default(),
                    translations: 0,
                    large_pages: 0,
                    large_page_starts: Vec::new(),
                    keys: Vec::new(),
                    misses: Vec::new(),
                })
                .collect(),
            attribution: Attribution::new(rules),
            ids: Vec::new(),
            kept: Vec::new(),
            batch_categories: 0,
            asids: Tags::default(),
            references: 0,
            kept_references: 0,
            category_references: vec![0; categories],
            category_pages: (0..categories).map(|_| PageSet::new()).collect(),
            last_page: (0, u64::MAX, 0, 0),
            sample: sample.max(1),
            until_sample: 0,
            accesses: (sample > 1).then(FxHashMap::default),
            page_table_entries,
        }
    }

    /// Every stream runs its own engine from the start.
    pub fn follow_none(&mut self) {
        for s in &mut self.streams {
            s.follows = None;
        }
    }

    pub fn add_batch(&mut self, batch: &Batch) -> Result<(), String> {
        let mut ids = std::mem::take(&mut self.ids);
        self.attribution.categorize(batch, &mut ids);
        let done = self.keep(batch, &ids);
        self.ids = ids;
        done?;
        // Streams that part from the one they follow take its state before the batch.
        for i in 0..self.streams.len() {
            if let Some((j, differ)) = self.streams[i].follows {
                if differ & self.batch_categories != 0 {
                    let from = &self.streams[j];
                    let (engine, tlb, pf_engine, pf, translations) = (
                        from.engine.clone(),
                        from.tlb.clone(),
                        from.pf_engine.clone(),
                        from.pf.clone(),
                        from.translations,
                    );
                    let to = &mut self.streams[i];
                    to.engine = engine;
                    to.tlb = tlb;
                    to.pf_engine = pf_engine;
                    to.pf = pf;
                    to.translations = translations;
                    to.follows = None;
                }
            }
        }
        let kept = &self.kept;
        let page_table = self.page_table_entries;
        let mut active: Vec<&mut Stream> = self
            .streams
            .iter_mut()
            .filter(|s| s.follows.is_none())
            .collect();
        if active.len() > 1 && kept.len() >= 4096 {
            // Streams are independent: two halves on two threads.
            let half = active.len().div_ceil(2);
            let (a, b) = active.split_at_mut(half);
            std::thread::scope(|s| {
                s.spawn(|| a.iter_mut().for_each(|st| st.run(kept, page_table)));
                b.iter_mut().for_each(|st| st.run(kept, page_table));
            });
        } else {
            active.iter_mut().for_each(|st| st.run(kept, page_table));
        }
        Ok(())
    }

    /// The data references of `batch` the pass keeps, into `self.kept`.
    fn keep(&mut self, batch: &Batch, ids: &[CategoryId]) -> Result<(), String> {
        self.kept.clear();
        self.batch_categories = 0;
        let mut last_space: Option<(u16, u64)> = None;
        for (r, &category) in batch.refs.iter().zip(ids) {
            if r.kind == AccessKind::Fetch {
                continue;
            }
            self.references += 1;
            let tag = match last_space {
                Some((asid, tag)) if asid == r.asid.0 => tag,
                _ => {
                    let tag = self.tag(r.asid.0)?;
                    last_space = Some((r.asid.0, tag));
                    tag
                }
            };
            let last = r.addr.0.saturating_add(r.size.max(1) as u64 - 1);
            if last >> BASE_SHIFT >= LARGE_BIT {
                return Err(format!(
                    "address {:#x}: above the 2^63 bytes the analysis keys take",
                    r.addr.0
                ));
            }
            let page = (
                r.asid.0,
                r.addr.0 >> BASE_SHIFT,
                last >> BASE_SHIFT,
                category,
            );
            if page != self.last_page {
                self.last_page = page;
                let pages = &mut self.category_pages[category as usize];
                for p in page.1..=page.2 {
                    pages.insert(r.asid, p);
                }
            }
            let keep = self.until_sample == 0;
            if let Some(accesses) = &mut self.accesses {
                let e = accesses
                    .entry(tag << TAG_SHIFT | r.addr.0 >> BASE_SHIFT)
                    .or_default();
                e.0 += 1;
                e.1 += keep as u64;
            }
            if !keep {
                self.until_sample -= 1;
                continue;
            }
            self.until_sample = self.sample - 1;
            self.kept_references += 1;
            self.category_references[category as usize] += 1;
            self.batch_categories |= 1 << category;
            self.kept.push(Kept {
                tag: tag << TAG_SHIFT,
                first: r.addr.0,
                last,
                category,
            });
        }
        Ok(())
    }

    fn tag(&mut self, asid: u16) -> Result<u64, String> {
        self.asids.tag(asid)
    }

    /// The 4K pages the categories of `large` (a bit each) touch, together.
    pub fn touched(&self, large: u16) -> PageSet {
        let mut all = PageSet::new();
        for (c, pages) in self.category_pages.iter().enumerate() {
            if large >> c & 1 != 0 {
                all.extend_from(pages);
            }
        }
        all
    }

    /// Why the attribution is partial, if it is.
    pub fn note(&self) -> Option<String> {
        self.attribution.note()
    }

    /// The counts of each stream, in the order of the specs. Of a sampled pass,
    /// counts of references (translations, TLB misses) are scaled by the sampling
    /// interval, each kept reference standing for as many; counts of pages (first
    /// touches, which are the page faults while every page stays mapped, and large
    /// pages) are not: they are the pages the sample saw, at most the trace's. The
    /// estimates serve the ranking (§5.1): a first touch stands for as many misses as
    /// any kept reference, so mappings of few pages are charged more than they miss.
    pub fn finish(&self) -> Vec<StreamCounts> {
        let scale = self.sample;
        self.streams
            .iter()
            .map(|s| {
                let (s, own) = match s.follows {
                    Some((j, _)) => (&self.streams[j], false),
                    None => (s, true),
                };
                // First touches as they are; references at a distance scaled.
                let scaled = |h: &Histogram, entries: u64| {
                    h.cold + (h.misses(&[entries])[0] - h.cold) * scale
                };
                let pf = match self.page_table_entries {
                    Some(n) => scaled(&s.pf, n),
                    None => s.pf.cold,
                };
                StreamCounts {
                    translations: s.translations * scale,
                    tlb_misses: s.tlb.misses(&[s.spec.entries])[0] * scale,
                    page_faults: pf,
                    large_pages: if own { s.large_pages } else { 0 },
                    large_page_starts: if own {
                        s.large_page_starts.clone()
                    } else {
                        Vec::new()
                    },
                }
            })
            .collect()
    }

    /// The Hellinger affinity (Bhattacharyya coefficient) of the kept and the whole
    /// page-access distributions: Σ √(p_i q_i) over 4K pages, 1 when they are the same
    /// (§5.1 compares them, and names the measure without giving it). None when every
    /// reference was kept.
    pub fn affinity(&self) -> Option<f64> {
        let accesses = self.accesses.as_ref()?;
        let (all, kept) = accesses
            .values()
            .fold((0u64, 0u64), |(a, k), &(x, y)| (a + x, k + y));
        if all == 0 || kept == 0 {
            return Some(0.0);
        }
        // Summed in key order, so that the figure does not depend on the map's.
        let mut pages: Vec<_> = accesses.iter().collect();
        pages.sort_unstable_by_key(|(k, _)| **k);
        Some(
            pages
                .iter()
                .map(|(_, &(x, y))| ((x as f64 / all as f64) * (y as f64 / kept as f64)).sqrt())
                .sum(),
        )
    }
}

/// The stream `spec` is so far, and the categories it treats differently from it:
/// the all-small stream of its TLB, if `spec` treats some category as it does.
fn follows(specs: &[StreamSpec], spec: StreamSpec) -> Option<(usize, u16)> {
    let (j, base) = specs
        .iter()
        .enumerate()
        .filter(|(_, s)| s.large == 0 && s.entries == spec.entries)
        .max_by_key(|(i, s)| (s.small.count_ones(), std::cmp::Reverse(*i)))?;
    if *base == spec {
        return None;
    }
    let differ = (base.small ^ spec.small) | spec.large;
    // A stream that agrees with the base on no category would follow it only while
    // the trace is empty: it runs its own engine.
    (differ != base.small | spec.small | spec.large).then_some((j, differ))
}

impl Stream {
    fn run(&mut self, kept: &[Kept], page_table: Option<u64>) {
        let spec = self.spec;
        let large_shift = spec.size.shift();
        self.keys.clear();
        for r in kept {
            let bit = 1u16 << r.category;
            let (shift, flag) = if spec.small & bit != 0 {
                (BASE_SHIFT, 0)
            } else if spec.large & bit != 0 {
                (large_shift, LARGE_BIT)
            } else {
                continue;
            };
            for page in r.first >> shift..=r.last >> shift {
                self.keys.push(r.tag | flag | page);
            }
        }
        self.translations += self.keys.len() as u64;
        self.misses.clear();
        let (tlb, misses, large_pages, starts) = (
            &mut self.tlb,
            &mut self.misses,
            &mut self.large_pages,
            &mut self.large_page_starts,
        );
        let page_mask = LARGE_BIT - 1;
        let entries = spec.entries;
        // The TLB-miss stream is kept only for a page table of limited entries.
        let filter = page_table.is_some();
        let mut i = 0;
        let keys = &self.keys;
        self.engine.access_all(keys, |d| {
            let key = keys[i];
            i += 1;
            tlb.record(d);
            match d {
                None => {
                    if key & LARGE_BIT != 0 {
                        *large_pages += 1;
                        starts.push((key & page_mask) << large_shift);
                    }
                    if filter {
                        misses.push(key);
                    }
                }
                Some(d) if filter && d >= entries => misses.push(key),
                Some(_) => {}
            }
        });
        match page_table {
            // Every page stays mapped: the page table misses on first touches only,
            // which are H_TLB's cold misses (the filtered stream's first references
            // are the same ones), so no second engine is needed.
            None => self.pf.cold = self.tlb.cold,
            Some(_) => {
                let pf = &mut self.pf;
                self.pf_engine.access_all(&self.misses, |d| pf.record(d))
            }
        }
    }
}
