//! One simulation's input and its base-page baseline ([`simulation`]), and analyses
//! beyond one machine's report: the page-table structures side by side over
//! one address stream (Szmajda and Heiser, "Variable Radix Page Table", ACSAC 2003, §5:
//! references and cache lines per lookup, bytes); the contiguity of a footprint and
//! translation schemes side by side (Gandhi et al., "Range Translations for Fast
//! Virtual Memory", IEEE Micro 2016, Figures 2 and 7); reuse distances and miss-ratio
//! curves (Cașcaval et al., "Multiple Page Size Modeling and Optimization", PACT 2005,
//! §3.1); the page-size benefit of each data category (the
//! same paper, §3 and §4).

pub mod benefit;
pub mod coalescable;
pub mod contiguity;
pub mod layout;
pub mod pagetable_comparison;
pub mod pagetables;
pub mod reuse;
pub mod simulation;
pub mod translation;
pub mod virtualized;
pub mod warmup;
