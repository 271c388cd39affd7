//! Reuse distances of a trace's page stream (Cașcaval et al., "Multiple Page Size
//! Modeling and Optimization", PACT 2005 §3.1), for several page sizes in one pass, and
//! from them the misses of a fully associative LRU TLB of every size at once (the
//! miss-ratio curve).
//!
//! The page stream is what a unified TLB translates: every reference, instruction
//! fetches included, one translation per page it touches (two for a reference that
//! spans a page boundary), each page tagged with its address space. A reference's
//! distance is the number of distinct pages touched since the last reference to its
//! page; a first reference is infinitely far (a cold miss). A fully associative LRU
//! TLB of N entries misses exactly the references at distance N or more and the cold
//! ones, which is what [`Histogram::misses`] counts.
//!
//! An approximate mode samples pages, not references (SHARDS, Waldspurger et al.,
//! FAST 2015): a page is analysed if a hash of it falls under the rate, every
//! reference to it then; distances among the sampled pages are scaled up by 1/rate, and
//! so are the counts. It is never the default, and every output says "approximate".

pub mod stack;

use crate::addr::PageSize;
use crate::event::Batch;
use crate::trace::{Location, TraceError, TraceReader};
use serde::Serialize;
use stack::StackDistance;
use std::path::Path;

/// The TLB sizes the summary gives misses for.
pub const USUAL_SIZES: [u64; 10] = [16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 4096];

/// Address spaces a trace may use (their index tags the page numbers, above
/// [`PAGE_BITS`]; 4095 of them, so that no key is the table's empty mark).
const MAX_ADDRESS_SPACES: usize = 4095;

/// Bits of a page number in a key.
const PAGE_BITS: u32 = 52;

/// Address spaces in order of appearance: a page's key carries its index above
/// [`PAGE_BITS`] (here and in the benefit analysis's keys).
#[derive(Default)]
pub(crate) struct Tags {
    asids: Vec<u16>,
}

impl Tags {
    /// The tag of address space `asid`; an error past [`MAX_ADDRESS_SPACES`].
    pub(crate) fn tag(&mut self, asid: u16) -> Result<u64, String> {
        if let Some(i) = self.asids.iter().position(|&a| a == asid) {
            return Ok(i as u64);
        }
        if self.asids.len() >= MAX_ADDRESS_SPACES {
            return Err(format!(
                "more than {MAX_ADDRESS_SPACES} address spaces: reuse distances tell at most that many apart"
            ));
        }
        self.asids.push(asid);
        Ok((self.asids.len() - 1) as u64)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Distinct pages an exact pass keeps (its times and slots are 32-bit).
const MAX_DISTINCT: u64 = 1 << 30;

/// How many references were at each distance, exactly, and how many were first ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    /// `counts[d]`: references at distance `d`.
    pub counts: Vec<u64>,
    pub cold: u64,
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, d: Option<u64>) {
        match d {
            None => self.cold += 1,
            Some(d) => {
                let d = d as usize;
                if d >= self.counts.len() {
                    self.counts.resize(d + 1, 0);
                }
                self.counts[d] += 1;
            }
        }
    }

    pub fn references(&self) -> u64 {
        self.cold + self.counts.iter().sum::<u64>()
    }

    /// The misses of a fully associative LRU TLB of `entries` entries, for every
    /// size in `sizes` (any order): cold misses and references at distance
    /// `entries` or more.
    pub fn misses(&self, sizes: &[u64]) -> Vec<u64> {
        // Suffix sums: references at distance d or more.
        let mut at_least = vec![0u64; self.counts.len() + 1];
        for d in (0..self.counts.len()).rev() {
            at_least[d] = at_least[d + 1] + self.counts[d];
        }
        sizes
            .iter()
            .map(|&n| self.cold + at_least.get(n as usize).copied().unwrap_or(0))
            .collect()
    }

    /// The smallest distance `d` such that at least `q` of the references (first ones
    /// counted as infinitely far) are at `d` or less; `None` if that takes first
    /// references.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total = self.references();
        let rank = ((q * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (d, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(d as u64);
            }
        }
        None
    }

    /// Counts by distance in buckets of powers of two: (lowest distance of the
    /// bucket, references): 0, 1, 2–3, 4–7, …
    pub fn log2_buckets(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (d, &n) in self.counts.iter().enumerate() {
            let low = if d == 0 {
                0
            } else {
                1u64 << (63 - (d as u64).leading_zeros())
            };
            match out.last_mut() {
                Some(last) if last.0 == low => last.1 += n,
                _ => out.push((low, n)),
            }
        }
        out
    }
}

/// The analysis of one page size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PageSizeReuse {
    pub page_size: String,
    /// Translations of the page stream (references, and a second for each reference
    /// across a page boundary).
    pub translations: u64,
    pub distinct_pages: u64,
    /// First references (the misses of a TLB of any size).
    pub cold: u64,
    /// Distances at the 50th, 90th and 99th percentiles (`None`: among the first
    /// references).
    pub median: Option<u64>,
    pub p90: Option<u64>,
    pub p99: Option<u64>,
    /// (entries, misses, miss ratio) of a fully associative LRU TLB, at
    /// [`USUAL_SIZES`] and at every power of two up to the distinct pages.
    pub curve: Vec<(u64, u64, f64)>,
    /// (lowest distance of the bucket, references) in powers of two.
    pub histogram: Vec<(u64, u64)>,
}

/// What [`analyze_trace`] found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reuse {
    pub references: u64,
    /// References read before those counted (`--warmup`): their pages are known, so
    /// a later reference to one is at a finite distance, but they are not counted.
    #[serde(skip_serializing_if = "is_zero")]
    pub warmup_references: u64,
    /// False when pages were sampled (`sample_rate`).
    pub exact: bool,
    /// The share of pages sampled (1 when exact).
    pub sample_rate: f64,
    pub page_sizes: Vec<PageSizeReuse>,
}

/// The engines of one pass: one per page size, with their histograms.
pub struct ReusePass {
    sizes: Vec<PageSize>,
    engines: Vec<StackDistance>,
    histograms: Vec<Histogram>,
    /// Address spaces in order of appearance (their index tags pages).
    asids: Tags,
    keys: Vec<u64>,
    references: u64,
    /// References of the warm-up, read but not counted.
    warmup: u64,
    /// Translations of each page size, sampled or not.
    translations: Vec<u64>,
    /// Pages whose hash is below this (out of 2^24) are analysed; 2^24: all.
    threshold: u64,
    rate: f64,
}

/// Hash bits a page's sampling decision reads.
const SAMPLE_BITS: u32 = 24;

#[inline]
fn sampled(key: u64, threshold: u64) -> bool {
    (key.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> (64 - SAMPLE_BITS)) < threshold
}

impl ReusePass {
    pub fn new(sizes: &[PageSize]) -> ReusePass {
        Self::sampled(sizes, 1.0).expect("a rate of 1")
    }

    /// Analyse a share `rate` (in (0, 1]) of the pages, chosen by a hash of their
    /// numbers; the results are approximate unless `rate` is 1.
    pub fn sampled(sizes: &[PageSize], rate: f64) -> Result<ReusePass, String> {
        let least = 1.0 / (1u64 << SAMPLE_BITS) as f64;
        if !(rate >= least && rate <= 1.0) {
            return Err(format!(
                "sample rate {rate:e} is not in [2^-{SAMPLE_BITS}, 1]"
            ));
        }
        let threshold = (rate * (1u64 << SAMPLE_BITS) as f64).round() as u64;
        Ok(ReusePass {
            translations: vec![0; sizes.len()],
            threshold,
            // The share the hash really takes.
            rate: threshold as f64 / (1u64 << SAMPLE_BITS) as f64,
            sizes: sizes.to_vec(),
            engines: sizes.iter().map(|_| StackDistance::new()).collect(),
            histograms: vec![Histogram::default(); sizes.len()],
            asids: Tags::default(),
            keys: Vec::new(),
            references: 0,
            warmup: 0,
        })
    }

    /// The histograms so far, one per page size.
    pub fn histograms(&self) -> &[Histogram] {
        &self.histograms
    }

    /// Add a batch's references. Fails only on a trace of more than 4096 address
    /// spaces.
    pub fn add_batch(&mut self, batch: &Batch) -> Result<(), String> {
        self.references += batch.refs.len() as u64;
        let all = self.threshold >= 1 << SAMPLE_BITS;
        for k in 0..self.sizes.len() {
            let size = self.sizes[k];
            let shift = size.shift();
            self.keys.clear();
            // The address space of the last reference, and its tag.
            let mut last_space = None;
            for r in &batch.refs {
                let tag = match last_space {
                    Some((asid, tag)) if asid == r.asid.0 => tag,
                    _ => {
                        let tag = self.tag(r.asid.0)?;
                        last_space = Some((r.asid.0, tag));
                        tag
                    }
                };
                let first = r.addr.0 >> shift;
                let last = r.addr.0.saturating_add(r.size.max(1) as u64 - 1) >> shift;
                if last >> PAGE_BITS != 0 {
                    return Err(format!(
                        "address {:#x}: its page number at {size} pages takes more than {PAGE_BITS} bits, the most reuse distances keep (use larger pages)",
                        r.addr.0
                    ));
                }
                self.translations[k] += last - first + 1;
                for page in first..=last {
                    let key = tag << PAGE_BITS | page;
                    if all || sampled(key, self.threshold) {
                        self.keys.push(key);
                    }
                }
            }
            if self.engines[k].distinct() > MAX_DISTINCT {
                return Err(format!(
                    "more than {MAX_DISTINCT} distinct pages at {size}: too many to keep exactly (use --sample-rate)"
                ));
            }
            let h = &mut self.histograms[k];
            if all {
                self.engines[k].access_all(&self.keys, |d| h.record(d));
            } else {
                // Distances among the sampled pages stand for 1/rate as many pages.
                let scale = 1.0 / self.rate;
                self.engines[k].access_all(&self.keys, |d| {
                    h.record(d.map(|d| (d as f64 * scale) as u64))
                });
            }
        }
        Ok(())
    }

    /// End the warm-up: what was read so far stays in the engines (its pages are
    /// known) but leaves the counts.
    pub fn end_warmup(&mut self) {
        self.warmup += self.references;
        self.references = 0;
        self.translations.iter_mut().for_each(|t| *t = 0);
        self.histograms
            .iter_mut()
            .for_each(|h| *h = Histogram::default());
    }

    fn tag(&mut self, asid: u16) -> Result<u64, String> {
        self.asids.tag(asid)
    }

    pub fn finish(&self) -> Reuse {
        let page_sizes = self
            .sizes
            .iter()
            .zip(&self.histograms)
            .zip(&self.engines)
            .zip(&self.translations)
            .map(|(((size, h), e), &t)| summarize(*size, h, e.distinct(), t, self.rate))
            .collect();
        Reuse {
            warmup_references: self.warmup,
            references: self.references,
            exact: self.rate == 1.0,
            sample_rate: self.rate,
            page_sizes,
        }
    }
}

/// The summary of one page size; counts of a sampled pass scaled by 1/`rate`.
fn summarize(
    size: PageSize,
    h: &Histogram,
    distinct: u64,
    translations: u64,
    rate: f64,
) -> PageSizeReuse {
    // Each page is sampled with probability `rate`: a sampled pass's counts stand for
    // 1/rate as many (an unbiased estimate; normalizing by the sampled references
    // instead lets a few hot pages in or out of the sample swing the whole curve).
    let scale = |n: u64| {
        if rate == 1.0 {
            n
        } else {
            (n as f64 / rate).round() as u64
        }
    };
    let distinct = scale(distinct);
    let mut sizes: Vec<u64> = USUAL_SIZES.to_vec();
    let mut p = 1u64;
    while p <= distinct.max(1) {
        sizes.push(p);
        match p.checked_mul(2) {
            Some(next) => p = next,
            None => break,
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    let misses: Vec<u64> = h
        .misses(&sizes)
        .into_iter()
        .map(|m| scale(m).min(translations))
        .collect();
    PageSizeReuse {
        page_size: size.to_string(),
        translations,
        distinct_pages: distinct,
        cold: scale(h.cold),
        median: h.quantile(0.5),
        p90: h.quantile(0.9),
        p99: h.quantile(0.99),
        curve: sizes
            .iter()
            .zip(misses)
            .map(|(&n, m)| (n, m, m as f64 / translations.max(1) as f64))
            .collect(),
        histogram: h
            .log2_buckets()
            .into_iter()
            .map(|(d, n)| (d, scale(n)))
            .collect(),
    }
}

/// Read a whole trace and find the reuse distances of its page stream at each page
/// size: exact, or approximate from a share `sample_rate` of the pages; the first
/// `warmup` references are read but not counted. `after_batch` is told each batch's
/// references and the reader's position.
pub fn analyze_trace(
    reader: &mut dyn TraceReader,
    path: &Path,
    sizes: &[PageSize],
    sample_rate: Option<f64>,
    warmup: u64,
    mut after_batch: impl FnMut(u64, u64),
) -> Result<Reuse, TraceError> {
    let fail = |e| TraceError::new(path, Location::File, e);
    let mut pass = ReusePass::sampled(sizes, sample_rate.unwrap_or(1.0)).map_err(fail)?;
    let mut batch = Batch::default();
    let mut left = warmup;
    while reader.next_batch(&mut batch)? {
        let n = batch.refs.len() as u64;
        if left > 0 && n >= left {
            let (head, tail) = batch.split_at(left as usize);
            pass.add_batch(&head).map_err(fail)?;
            pass.end_warmup();
            pass.add_batch(&tail).map_err(fail)?;
            left = 0;
        } else {
            pass.add_batch(&batch).map_err(fail)?;
            left = left.saturating_sub(n);
        }
        after_batch(n, reader.position());
    }
    if warmup > 0 && (left > 0 || pass.references == 0) {
        // Before the warm-up's end, what was read is all in `references`.
        let read = pass.warmup + pass.references;
        return Err(fail(format!(
            "a warm-up of {warmup} references leaves none to measure: the input holds {read}"
        )));
    }
    Ok(pass.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misses_and_quantiles_from_a_histogram() {
        // a b c c a: ∞ ∞ ∞ 0 2.
        let mut h = Histogram::default();
        for d in [None, None, None, Some(0), Some(2)] {
            h.record(d);
        }
        assert_eq!(h.counts, [1, 0, 1]);
        // 1 entry: 3 cold + the a at 2; 2 entries: the same; 3: cold only.
        assert_eq!(h.misses(&[1, 2, 3, 100]), [4, 4, 3, 3]);
        assert_eq!(h.quantile(0.2), Some(0));
        assert_eq!(h.quantile(0.4), Some(2));
        assert_eq!(h.quantile(0.5), None);
        assert_eq!(h.log2_buckets(), [(0, 1), (1, 0), (2, 1)]);
    }
}
