//! Everything a run counts: what the machine accumulates and the cost model prices.

use serde::Serialize;

/// Everything a run counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    pub references: u64,
    /// References by kind: load, store, fetch, modify.
    pub by_kind: [u64; 4],
    /// TLB lookups: one per reference, two for a reference that spans two base pages.
    pub translations: u64,
    pub page_crossing: u64,
    /// Page walks after TLB misses.
    pub walks: u64,
    /// Memory references made by those walks (after the walk caches).
    pub walk_refs: u64,
    /// References the walk caches saved.
    pub walk_refs_skipped: u64,
    /// Distinct 64-byte cache lines per walk, summed over walks.
    pub walk_lines: u64,
    pub page_faults: u64,
    /// Memory references of the walks retried after page faults (charged to faults).
    pub fault_walk_refs: u64,
    /// References whose address space differs from the reference before.
    pub address_space_switches: u64,
    /// Page faults that mapped a page larger than the base page (static regions).
    pub large_faults: u64,
    /// TLB misses the promotion policy was told of (and charged bookkeeping for).
    pub policy_misses: u64,
    /// Superpages made by promotion, and promotions that found no memory for them.
    pub promotions: u64,
    pub promotion_failures: u64,
    /// Promotions whose frames were the aligned block already: a page-table update.
    pub promotions_in_place: u64,
    /// Base pages promotions copied, remapped, and gave a cleared frame (they had
    /// none: memory the superpage adds beyond the pages the program touched).
    pub pages_copied: u64,
    pub pages_remapped: u64,
    pub pages_zeroed: u64,
    /// Page-table references of promotions (unmapping the old pages, mapping the new).
    pub promotion_table_refs: u64,
    /// References to remapped (shadow) memory that reached memory, each translated
    /// by the memory controller (with a cache model only).
    pub controller_lookups: u64,
    /// Under a resident limit (`crate::pressure`; absent from reports when zero): page
    /// faults that read a reclaimed page back from the swap store (part of
    /// `page_faults`), pages the daemon reclaimed and those of them that were dirty
    /// (written back), and free blocks of the smallest superpage size its frees
    /// completed.
    #[serde(skip_serializing_if = "is_zero")]
    pub major_faults: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pages_reclaimed: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pages_written_back: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub contiguity_restored: u64,
    /// Superpages demoted by the page daemon (speculatively, or to take a victim from
    /// them) and by the first write to a clean superpage; demoted blocks promoted
    /// back; the page-table references of the demotions.
    #[serde(skip_serializing_if = "is_zero")]
    pub demotions_pressure: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub demotions_write: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub repromotions: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub demotion_table_refs: u64,
    /// Range translations (`crate::range`): hits of the range TLB or direct segment,
    /// range-table walks and their memory references, and the pages eager paging
    /// allocated ahead of use.
    #[serde(skip_serializing_if = "is_zero")]
    pub range_hits: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub range_walks: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub range_walk_refs: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub eager_pages: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
