//! How a promotion policy is built: from its options in `[promotion]` and the
//! machine's [`Context`] ([`BuildPolicy`]), its values checked. Every policy file
//! implements this contract; `any.rs` builds the one a configuration names.

use super::PromotionPolicy;
use crate::addr::PageSize;

/// What a policy is built against: the machine's resolved candidate sizes and what
/// else of the machine its checks need.
pub struct Context<'a> {
    /// The candidate sizes, resolved and checked (ascending): those the options name,
    /// or every size above the base page the page table maps and the TLB holds.
    pub sizes: &'a [PageSize],
    pub base: PageSize,
    /// The page sizes the page table maps.
    pub table_sizes: &'a [PageSize],
    /// Whether data and instruction fetches miss into the same last TLB level (one
    /// level whose contents a policy can follow).
    pub one_walking_level: bool,
    /// The entries of the TLB level whose data misses walk (the TLB size of Romer's
    /// model).
    pub walking_entries: usize,
}

/// A policy built from its options in `[promotion]`.
pub trait BuildPolicy: PromotionPolicy + Sized + 'static {
    type Options: Default;
    /// Check the options (errors name `promotion.<field>`) and build the policy.
    fn build(options: &Self::Options, cx: &Context<'_>) -> Result<Self, String>;
    /// The candidate sizes the options name (empty: the default), or `None` if the
    /// policy takes no candidate sizes.
    fn configured_sizes(options: &Self::Options) -> Option<&[PageSize]>;
    /// The largest page the policy maps (memory pressure sizes its bookkeeping by it).
    /// By default the largest candidate.
    fn largest_page(_options: &Self::Options, sizes: &[PageSize]) -> Option<PageSize> {
        sizes.last().copied()
    }
}

/// `promotion.miss_cycles` must be a number of cycles from 0 to 1e12.
pub fn check_miss_cycles(cycles: f64) -> Result<(), String> {
    crate::limits::check_cycles("promotion.miss_cycles", cycles)
}
