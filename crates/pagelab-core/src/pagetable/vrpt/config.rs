//! The options of the variable radix table in `[page_table]`.

use super::{RadixPolicy, VariableRadixPageTable};
use crate::addr::PageSize;
use crate::pagetable::options::*;

/// The options of [`VariableRadixPageTable`] in `[page_table]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VariableRadixConfig {
    /// How levels are sized: "greedy" (§3.2, the widest the allocator gives, freed
    /// lazily) or "grow" (start at `node_bits`, merge as they fill). Default "greedy".
    pub radix_policy: RadixPolicy,
    /// log2 of the entries of a new node under "grow" (1 to 16). Default 4.
    pub node_bits: u32,
    /// log2 of the entries of the widest node either policy builds (at least
    /// `node_bits`, at most 20). Default 16 (2 MiB of 32-byte entries).
    pub max_node_bits: u32,
    /// Page sizes mapped (any, from 4K). Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for VariableRadixConfig {
    fn default() -> Self {
        VariableRadixConfig {
            radix_policy: RadixPolicy::Greedy,
            node_bits: 4,
            max_node_bits: 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl VariableRadixConfig {
    pub fn check(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.node_bits) {
            return Err(format!(
                "page_table.node_bits: {} must be from 1 to 16",
                self.node_bits
            ));
        }
        if !(self.node_bits..=20).contains(&self.max_node_bits) {
            return Err(format!(
                "page_table.max_node_bits: {} must be from node_bits ({}) to 20",
                self.max_node_bits, self.node_bits
            ));
        }
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

impl TableOptions for VariableRadixConfig {
    type Table = VariableRadixPageTable;
    fn build(&self) -> Result<VariableRadixPageTable, String> {
        self.check()?;
        Ok(match self.radix_policy {
            RadixPolicy::Greedy => {
                VariableRadixPageTable::greedy(self.max_node_bits, &self.page_sizes)
            }
            RadixPolicy::Grow => VariableRadixPageTable::growing(
                self.node_bits,
                self.max_node_bits,
                &self.page_sizes,
            ),
        })
    }
}
