//! `pagelab trace info`: what a trace holds — references by kind, events by type,
//! footprint in distinct pages per page size, the address range and the address spaces.

use crate::addr::{Asid, PageSize};
use crate::event::{AccessKind, Batch, Event};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// Page sizes whose footprint `trace info` reports.
pub const FOOTPRINT_SIZES: [PageSize; 3] = [PageSize::K4, PageSize::M2, PageSize::G1];

#[derive(Clone, Debug, Default, Serialize)]
pub struct TraceInfo {
    pub references: u64,
    /// References by kind name (load, store, fetch, modify).
    pub by_kind: BTreeMap<String, u64>,
    /// Events by type name (alloc, segment, marker, switch_address_space).
    pub events: BTreeMap<String, u64>,
    /// Distinct pages touched, by page size ("4K" → n); a page is (address space, number).
    pub footprint_pages: BTreeMap<String, u64>,
    /// References that span more than one page of 4 KiB.
    pub page_crossing: u64,
    pub min_address: Option<u64>,
    pub max_address: Option<u64>,
    pub address_spaces: Vec<u16>,
    /// The trace's length in instructions (its fetches), when it records fetches.
    pub instructions: u64,
    /// References and 4K pages by data category (`crate::categories`).
    pub categories: crate::categories::CategoryCounts,
}

/// Accumulates a [`TraceInfo`] batch by batch. Memory grows with the footprint (a set
/// of pages per page size), not with the trace's length.
pub struct InfoBuilder {
    info: TraceInfo,
    kinds: [u64; 4],
    asids: HashSet<u16>,
    last_asid: Option<Asid>,
    categories: crate::categories::CategoryTally,
}

impl InfoBuilder {
    pub fn new() -> InfoBuilder {
        InfoBuilder {
            info: TraceInfo::default(),
            kinds: [0; 4],
            asids: HashSet::new(),
            last_asid: None,
            categories: crate::categories::CategoryTally::new(Vec::new()),
        }
    }

    /// With user-defined categories beside the built-in ones.
    pub fn with_categories(mut self, rules: Vec<crate::categories::UserCategory>) -> InfoBuilder {
        self.categories = crate::categories::CategoryTally::new(rules);
        self
    }

    pub fn add(&mut self, batch: &Batch) {
        self.categories.add(batch);
        let info = &mut self.info;
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for r in &batch.refs {
            self.kinds[r.kind as usize] += 1;
            let a = r.addr.0;
            lo = lo.min(a);
            hi = hi.max(a);
            info.page_crossing += r.spans_pages() as u64;
            if self.last_asid != Some(r.asid) {
                self.last_asid = Some(r.asid);
                self.asids.insert(r.asid.0);
            }
        }
        for (_, e) in &batch.events {
            let name = match e {
                Event::Alloc(_) => "alloc",
                Event::Segment(_) => "segment",
                Event::Marker { .. } => "marker",
                Event::SwitchAddressSpace { .. } => "switch_address_space",
                Event::Thread { .. } => "thread",
            };
            *info.events.entry(name.to_string()).or_default() += 1;
        }
        if !batch.refs.is_empty() {
            info.min_address = Some(info.min_address.map_or(lo, |m| m.min(lo)));
            info.max_address = Some(info.max_address.map_or(hi, |m| m.max(hi)));
        }
        info.references += batch.refs.len() as u64;
    }

    pub fn finish(mut self) -> TraceInfo {
        for kind in AccessKind::ALL {
            self.info
                .by_kind
                .insert(kind.name().to_string(), self.kinds[kind as usize]);
        }
        self.info.instructions = self.kinds[AccessKind::Fetch as usize];
        // The pages of every category are the trace's (a page is one category's, or
        // several user-defined ones').
        let pages = self.categories.footprint();
        for size in FOOTPRINT_SIZES {
            let shift = size.bytes().trailing_zeros() - 12;
            self.info
                .footprint_pages
                .insert(size.to_string(), pages.len_at(shift));
        }
        let mut asids: Vec<u16> = self.asids.into_iter().collect();
        asids.sort_unstable();
        self.info.address_spaces = asids;
        self.info.categories = self.categories.finish();
        self.info
    }
}

impl Default for InfoBuilder {
    fn default() -> Self {
        InfoBuilder::new()
    }
}
