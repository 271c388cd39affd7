//! Every promotion policy, generated from the list in
//! [`for_each_promotion_policy!`](crate::for_each_promotion_policy): the configuration
//! enum (`policy = "..."`), the factory and the names. Each policy builds itself from
//! its options ([`BuildPolicy`]); the machine names none of them.

use super::*;

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

macro_rules! define_promotion_policies {
    (; $($(#[$doc:meta])* $name:literal => $variant:ident($options:ident, $policy:ident),)*) => {
        /// A superpage promotion policy, by name (`policy = "..."`); see `crate::superpage`.
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "policy", deny_unknown_fields)]
        pub enum PromotionConfig {
            /// Base pages only (a variant with no fields, so that a field given with it
            /// is an error rather than ignored).
            #[serde(rename = "none")]
            None {},
            $(
                $(#[$doc])*
                #[serde(rename = $name)]
                $variant($options),
            )*
        }

        /// The policies' names (`policy` in `[promotion]`), "none" first.
        pub const NAMES: &[&str] = &["none", $($name),*];

        /// Build the policy a configuration names; `None` for policy "none".
        pub fn build(
            c: &PromotionConfig,
            cx: &Context<'_>,
        ) -> Result<Option<Box<dyn PromotionPolicy>>, String> {
            Ok(match c {
                PromotionConfig::None {} => None,
                $(PromotionConfig::$variant(o) => Some(Box::new($policy::build(o, cx)?)),)*
            })
        }

        impl PromotionConfig {
            /// The configured candidate sizes, if the policy takes any (`None`: it does
            /// not take `sizes`).
            pub fn configured_sizes(&self) -> Option<&[PageSize]> {
                match self {
                    PromotionConfig::None {} => None,
                    $(PromotionConfig::$variant(o) => $policy::configured_sizes(o),)*
                }
            }
            /// The largest page the policy maps, given the resolved candidate sizes.
            pub fn largest_page(&self, sizes: &[PageSize]) -> Option<PageSize> {
                match self {
                    PromotionConfig::None {} => None,
                    $(PromotionConfig::$variant(o) => $policy::largest_page(o, sizes),)*
                }
            }
        }
    };
}

crate::for_each_promotion_policy!(define_promotion_policies);

impl Default for PromotionConfig {
    fn default() -> Self {
        PromotionConfig::None {}
    }
}
