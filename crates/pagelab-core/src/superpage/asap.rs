//! `asap` (Fang, Zhang, Carter, McKee and Hsieh, "Online Superpage Promotion
//! Revisited", SIGMETRICS 2000, §3.1, after Romer et al.):
//! "a greedy policy that promotes a superpage as soon as all of its component pages
//! have been referenced". A base page is referenced for the first time when it
//! faults (demand paging); each candidate counts its referenced base pages, and a
//! first reference promotes every candidate containing the page that it completes,
//! smallest first, each as soon as it is complete: the reference that completes an
//! 8K and a 16K candidate promotes the 8K one, then the 16K one (with copying, the
//! 8K pair is copied twice). So a run of first touches in address order builds each
//! superpage size in turn, as the paper's 88,000 cycles a miss under copying (about
//! ten copies of 8,000 cycles a page, §5.1) imply. `each_size = false` promotes only
//! the largest candidate a reference completes.

use super::{check_miss_cycles, BuildPolicy, Candidate, Context, Miss, PromotionPolicy};
use crate::addr::{Asid, PageSize, VirtAddr};
use crate::pagetable::Translation;
use std::collections::HashMap;

pub struct Asap {
    sizes: Vec<PageSize>,
    base: PageSize,
    /// Referenced base pages per candidate: (address space, size's log2, index).
    population: HashMap<(Asid, u8, u64), u64>,
    miss_cycles: f64,
    each_size: bool,
    /// The candidates a reference completed that are still to promote, the next last.
    pending: Vec<Candidate>,
}

impl Asap {
    /// `sizes` ascending.
    pub fn new(sizes: Vec<PageSize>, base: PageSize, miss_cycles: f64) -> Asap {
        Asap {
            sizes,
            base,
            population: HashMap::new(),
            miss_cycles,
            each_size: true,
            pending: Vec::new(),
        }
    }

    /// Promote only the largest candidate a reference completes.
    pub fn largest_only(mut self) -> Asap {
        self.each_size = false;
        self
    }

    /// Referenced base pages (of `base`) of the candidate `c`.
    pub fn population(&self, c: &Candidate) -> u64 {
        let key = (c.asid, c.size.shift() as u8, c.va.0 >> c.size.shift());
        self.population.get(&key).copied().unwrap_or(0)
    }
}

impl PromotionPolicy for Asap {
    fn on_miss(&mut self, m: &Miss<'_>) -> Option<Candidate> {
        if !m.first_touch {
            return None;
        }
        // The faulting page's own size: a base page (asap never maps larger at a fault).
        let pages_of = |s: PageSize| s.bytes() >> m.size.shift();
        self.pending.clear();
        // Sizes ascending: each completed one is pushed; the largest ends on top.
        for &s in &self.sizes {
            let key = (m.asid, s.shift() as u8, m.va.0 >> s.shift());
            let n = self.population.entry(key).or_insert(0);
            *n += 1;
            if *n == pages_of(s) && s > m.size {
                self.pending.push(Candidate::containing(m.asid, m.va, s));
            }
        }
        if !self.each_size {
            let largest = self.pending.pop();
            self.pending.clear();
            return largest;
        }
        // Smallest first: the rest are handed out by then_promote, next last.
        self.pending.reverse();
        self.pending.pop()
    }

    fn then_promote(&mut self) -> Option<Candidate> {
        self.pending.pop()
    }

    fn unmapped(&mut self, asid: Asid, va: VirtAddr) -> bool {
        // The page is no longer referenced: a reference after it is a first one again.
        for &s in &self.sizes {
            let key = (asid, s.shift() as u8, va.0 >> s.shift());
            if let Some(n) = self.population.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.population.remove(&key);
                }
            }
        }
        false
    }

    fn miss_cycles(&self) -> f64 {
        self.miss_cycles
    }

    fn check(
        &self,
        lookup: &dyn Fn(Asid, VirtAddr) -> Option<Translation>,
        _tlb: &[(Asid, super::Entry)],
    ) -> Result<(), String> {
        // Every referenced base page is mapped, and no candidate counts more pages than
        // it has (a promotion maps the pages it did not count, so fewer is allowed).
        for (&(asid, shift, index), &n) in &self.population {
            let start = index << shift;
            let step = self.base.shift();
            let pages = 1u64 << (shift as u32 - step);
            let mapped = (0..pages)
                .filter(|i| lookup(asid, VirtAddr(start + (i << step))).is_some())
                .count() as u64;
            if n > mapped {
                return Err(format!(
                    "the candidate at {start:#x} of 2^{shift} bytes counts {n} pages referenced, the page table maps {mapped}"
                ));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AsapConfig {
    /// Candidate superpage sizes. Default: every size above the base page, up to the
    /// largest, that both the page table and the last TLB level hold.
    pub sizes: Vec<PageSize>,
    /// Cycles the miss handler spends on the policy per TLB miss. Default 0: asap
    /// counts a page once, at its first reference, which is a page fault (demand
    /// paging), so its population counts are updated in the fault handler, inside
    /// the machine's `page_fault_cycles`; a TLB miss to a mapped page does nothing
    /// for it ("the algorithm does not consider reference frequency [...], which
    /// minimizes bookkeeping overhead", Fang et al. §3.1).
    pub miss_cycles: f64,
    /// Promote every size a reference completes, smallest first, as §3.1 defines
    /// asap (default true); false: only the largest.
    pub each_size: bool,
}

impl Default for AsapConfig {
    fn default() -> Self {
        AsapConfig {
            sizes: Vec::new(),
            miss_cycles: 0.0,
            each_size: true,
        }
    }
}

impl BuildPolicy for Asap {
    type Options = AsapConfig;
    fn build(o: &AsapConfig, cx: &Context<'_>) -> Result<Asap, String> {
        check_miss_cycles(o.miss_cycles)?;
        let asap = Asap::new(cx.sizes.to_vec(), cx.base, o.miss_cycles);
        Ok(if o.each_size {
            asap
        } else {
            asap.largest_only()
        })
    }
    fn configured_sizes(o: &AsapConfig) -> Option<&[PageSize]> {
        Some(&o.sizes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &mut Asap, page: u64) -> Option<Candidate> {
        p.on_miss(&Miss {
            asid: Asid(0),
            va: VirtAddr(page << 12),
            size: PageSize::K4,
            first_touch: true,
            tlb: &[],
        })
    }

    fn sizes() -> Vec<PageSize> {
        (13..=15)
            .map(|s| PageSize::from_shift(s).unwrap())
            .collect()
    }

    #[test]
    fn promotes_every_size_a_reference_completes_smallest_first() {
        let mut p = Asap::new(sizes(), PageSize::K4, 0.0);
        assert_eq!(touch(&mut p, 0), None);
        assert_eq!(p.then_promote(), None);
        let c = touch(&mut p, 1).unwrap();
        assert_eq!((c.va.0, c.size), (0, PageSize::K8));
        assert_eq!(p.then_promote(), None);
        assert_eq!(touch(&mut p, 2), None);
        // Page 3 completes (2,1) and (0,2): the 8K one, then the 16K one.
        let c = touch(&mut p, 3).unwrap();
        assert_eq!((c.va.0, c.size), (2 << 12, PageSize::K8));
        let c = p.then_promote().unwrap();
        assert_eq!((c.va.0, c.size), (0, PageSize::from_shift(14).unwrap()));
        assert_eq!(p.then_promote(), None);
        for page in 4..7 {
            touch(&mut p, page);
            while p.then_promote().is_some() {}
        }
        // Page 7 completes 8K, 16K and 32K candidates, in that order.
        let first = touch(&mut p, 7).unwrap();
        let rest: Vec<_> = std::iter::from_fn(|| p.then_promote()).collect();
        let got: Vec<(u64, u32)> = std::iter::once(first)
            .chain(rest)
            .map(|c| (c.va.0 >> 12, c.size.shift()))
            .collect();
        assert_eq!(got, [(6, 13), (4, 14), (0, 15)]);
    }

    #[test]
    fn largest_only_promotes_the_largest_candidate_its_reference_completes() {
        let mut p = Asap::new(sizes(), PageSize::K4, 0.0).largest_only();
        assert_eq!(touch(&mut p, 0), None);
        let c = touch(&mut p, 1).unwrap();
        assert_eq!((c.va.0, c.size), (0, PageSize::K8));
        assert_eq!(touch(&mut p, 2), None);
        // Page 3 completes (2,1) and (0,2): the larger one.
        let c = touch(&mut p, 3).unwrap();
        assert_eq!((c.va.0, c.size), (0, PageSize::from_shift(14).unwrap()));
        for page in 4..7 {
            touch(&mut p, page);
        }
        let c = touch(&mut p, 7).unwrap();
        assert_eq!((c.va.0, c.size), (0, PageSize::from_shift(15).unwrap()));
        assert_eq!(p.then_promote(), None);
        // A miss that is not a first reference promotes nothing.
        let again = p.on_miss(&Miss {
            asid: Asid(0),
            va: VirtAddr(1 << 12),
            size: PageSize::K4,
            first_touch: false,
            tlb: &[],
        });
        assert_eq!(again, None);
        assert_eq!(p.population(&c), 8);
    }
}
