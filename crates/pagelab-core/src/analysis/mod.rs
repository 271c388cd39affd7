//! Analyses that run the components outside a machine: the page-table structures side
//! by side over one address stream (papers/variable-radix-page-table.md §5 compares
//! them by references and cache lines per lookup, and by bytes).

pub mod compare;
pub mod contiguity;
pub mod layout;
pub mod translation;
