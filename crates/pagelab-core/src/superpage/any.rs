//! Every promotion policy, generated from the list in
//! [`for_each_promotion_policy!`](crate::for_each_promotion_policy): the configuration
//! enum (`policy = "..."`), the factory and the names. Each policy builds itself from
//! its options ([`BuildPolicy`]); the machine names none of them.

use super::build_policy::{BuildPolicy, Context};
use super::*;

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
