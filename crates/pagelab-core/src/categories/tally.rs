//! Categories over a trace, batch by batch: each reference's category, the events
//! taken in order with the references ([`Attribution`]), and the references and pages
//! of each category ([`CategoryTally`], what `trace info` shows).

use super::{names, Categorizer, CategoryId, UserCategory};
use crate::event::{Batch, Event};
use serde::Serialize;

/// The category of every reference of a trace, batch after batch.
#[derive(Default)]
pub struct Attribution {
    pub categorizer: Categorizer,
    asid: u16,
}

impl Attribution {
    pub fn new(rules: Vec<UserCategory>) -> Attribution {
        Attribution {
            categorizer: Categorizer::with_rules(rules),
            asid: 0,
        }
    }

    /// The category of each reference of `batch`, into `out` (cleared first), the
    /// batch's events taken in at their places.
    pub fn categorize(&mut self, batch: &Batch, out: &mut Vec<CategoryId>) {
        out.clear();
        out.reserve(batch.refs.len());
        let mut from = 0;
        let ends = batch
            .events
            .iter()
            .map(|(at, _)| (*at).min(batch.refs.len()));
        for (k, at) in ends.chain([batch.refs.len()]).enumerate() {
            let refs = &batch.refs[from..at];
            if self.categorizer.is_blank() {
                // No memory map and no allocation yet: every reference is "other".
                out.resize(
                    out.len() + refs.len(),
                    crate::categories::Category::Other.id(),
                );
            } else {
                // The page and category of the last reference (a repeat needs no
                // look-up).
                let mut last: Option<(u16, u64, CategoryId)> = None;
                for r in refs {
                    let page = r.addr.0 >> crate::addr::BASE_SHIFT;
                    let c = match last {
                        Some((a, p, c)) if a == r.asid.0 && p == page => c,
                        _ => {
                            let c = self.categorizer.category(r.asid.0, r.addr.0);
                            last = Some((r.asid.0, page, c));
                            c
                        }
                    };
                    out.push(c);
                }
            }
            if let Some(r) = refs.last() {
                self.asid = r.asid.0;
            }
            from = at;
            if let Some((_, e)) = batch.events.get(k) {
                if let Event::SwitchAddressSpace { asid } = e {
                    self.asid = asid.0;
                }
                self.categorizer.on_event(self.asid, e);
            }
        }
    }

    /// Why the attribution is partial, if it is.
    pub fn note(&self) -> Option<String> {
        let c = &self.categorizer;
        match (c.allocations, c.segments) {
            (0, 0) => Some("the trace has no memory map and no allocation events: every reference is \"other\"".to_string()),
            (0, _) => Some("the trace has no allocation events: only the memory map's categories are available (the heap segment is small dynamic, no block is large dynamic)".to_string()),
            _ => None,
        }
    }
}

/// References and pages of each category in a trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CategoryCounts {
    /// (category, references, distinct 4K pages): a page used under two categories
    /// counts in both.
    pub categories: Vec<(String, u64, u64)>,
    /// Why the attribution is partial, if it is: a trace without allocation events
    /// has only the memory map's categories (no small or large dynamic blocks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The allocation call sites with the most bytes (the 10 first), for rules of
    /// user-defined categories to name.
    pub callsites: Vec<CallSite>,
}

/// Blocks allocated from one call site.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CallSite {
    /// The recorder's hash of the calling context, as rules write it ("0x…").
    pub callsite: String,
    pub blocks: u64,
    pub bytes: u64,
    /// The category its last block took.
    pub category: String,
    /// Its frames, innermost first, as the recorder named them ("fn (file:line) <
    /// caller (file:line)"); empty when the trace does not name it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// Counts the references and pages of each category, batch by batch.
pub struct CategoryTally {
    attribution: Attribution,
    names: Vec<String>,
    refs: Vec<u64>,
    pages: Vec<crate::page_set::PageSet>,
    ids: Vec<CategoryId>,
}

impl CategoryTally {
    pub fn new(rules: Vec<UserCategory>) -> CategoryTally {
        let names = names(&rules);
        CategoryTally {
            refs: vec![0; names.len()],
            pages: names.iter().map(|_| Default::default()).collect(),
            names,
            attribution: Attribution::new(rules),
            ids: Vec::new(),
        }
    }

    pub fn add(&mut self, batch: &Batch) {
        self.attribution.categorize(batch, &mut self.ids);
        let mut last = None;
        for (r, &c) in batch.refs.iter().zip(&self.ids) {
            let c = c as usize;
            self.refs[c] += 1;
            let page = (r.asid, r.addr.0 >> crate::addr::BASE_SHIFT);
            if last != Some((page, c)) {
                self.pages[c].insert(page.0, page.1);
                last = Some((page, c));
            }
            if r.spans_pages() {
                for p in page.1 + 1..=r.last_byte().0 >> crate::addr::BASE_SHIFT {
                    self.pages[c].insert(page.0, p);
                }
            }
        }
    }

    /// Every page of every category: the trace's footprint in 4 KiB pages.
    pub fn footprint(&self) -> crate::page_set::PageSet {
        let mut all = crate::page_set::PageSet::new();
        for p in &self.pages {
            all.extend_from(p);
        }
        all
    }

    pub fn finish(&self) -> CategoryCounts {
        CategoryCounts {
            categories: self
                .names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    (
                        name.clone(),
                        self.refs.get(i).copied().unwrap_or(0),
                        self.pages.get(i).map_or(0, |p| p.len()),
                    )
                })
                .collect(),
            note: self.attribution.note(),
            callsites: {
                let mut v: Vec<_> = self.attribution.categorizer.callsites.iter().collect();
                v.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(b.0)));
                v.into_iter()
                    .take(10)
                    .map(|(&site, &(blocks, bytes, c))| CallSite {
                        callsite: format!("{site:#018x}"),
                        blocks,
                        bytes,
                        category: self.names.get(c as usize).cloned().unwrap_or_default(),
                        name: (self.attribution.categorizer.names.get(&site))
                            .cloned()
                            .unwrap_or_default(),
                    })
                    .collect()
            },
        }
    }
}
