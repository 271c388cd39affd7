//! Analyses beyond one machine's report: the page-table structures side by side over
//! one address stream (papers/variable-radix-page-table.md §5: references and cache
//! lines per lookup, bytes); the contiguity of a footprint and translation schemes
//! side by side (papers/range-translations-rmm.md Figures 2 and 7); reuse distances
//! and miss-ratio curves (papers/multiple-page-size-modeling-cpo.md §3.1); the
//! page-size benefit of each data category (the same paper, §3 and §4).

pub mod benefit;
pub mod compare;
pub mod contiguity;
pub mod layout;
pub mod reuse;
pub mod translation;
