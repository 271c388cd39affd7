//! Every page-table structure as one type, generated from the list in
//! [`for_each_page_table!`](crate::for_each_page_table): the configuration enum
//! (`kind = "..."`), the enum of built tables whose calls dispatch statically, the
//! factory, and the names.

use super::*;
use crate::addr::{Asid, VirtAddr};

macro_rules! define_page_tables {
    (; $($(#[$doc:meta])* $name:literal => $variant:ident($options:ident),)*) => {
        /// The page table, by kind (Szmajda and Heiser, "Variable Radix Page Table",
        /// ACSAC 2003 compares them).
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind")]
        pub enum PageTableConfig {
            $(
                $(#[$doc])*
                #[serde(rename = $name)]
                $variant($options),
            )*
        }

        /// Every page-table structure, as one type.
        pub enum AnyPageTable {
            $($variant(<$options as TableOptions>::Table),)*
        }

        /// The structures' names (`kind` in `[page_table]`), in the list's order.
        pub const NAMES: &[&str] = &[$($name),*];

        /// Every structure with its default options, in the list's order.
        pub fn default_structures() -> Vec<PageTableConfig> {
            vec![$(PageTableConfig::$variant($options::default())),*]
        }

        impl PageTableConfig {
            /// What building the (empty) table allocates: the field that sets it,
            /// and bytes.
            pub fn preallocated(&self) -> (&'static str, u64) {
                match self {
                    $(PageTableConfig::$variant(o) => o.preallocated(),)*
                }
            }
        }

        /// Check a configuration and build its (empty) table; errors name the field.
        pub fn build_page_table(c: &PageTableConfig) -> Result<AnyPageTable, String> {
            match c {
                $(PageTableConfig::$variant(o) => o.build().map(AnyPageTable::$variant),)*
            }
        }
    };
}

crate::for_each_page_table!(define_page_tables);

impl Default for PageTableConfig {
    fn default() -> Self {
        PageTableConfig::Radix(RadixConfig::default())
    }
}

/// `$e` with `$t` bound to the structure inside, whichever it is (compiled for each).
macro_rules! each_table {
    ($table:expr, $t:ident => $e:expr) => {
        $crate::for_each_page_table!(each_table_match, ($table), $t, ($e))
    };
}
pub(crate) use each_table;

macro_rules! each_table_match {
    (($table:expr), $t:ident, ($e:expr); $($(#[$doc:meta])* $name:literal => $variant:ident($options:ident),)*) => {
        match $table {
            $($crate::pagetable::AnyPageTable::$variant($t) => $e,)*
        }
    };
}
pub(crate) use each_table_match;

impl AnyPageTable {
    #[inline(always)]
    pub(crate) fn walk_into(&self, asid: Asid, va: VirtAddr, walk: &mut Walk) {
        each_table!(self, t => t.walk_into(asid, va, walk))
    }
    #[inline(always)]
    pub(crate) fn prefetch(&self, asid: Asid, va: VirtAddr) -> WalkHint {
        each_table!(self, t => t.prefetch(asid, va))
    }
    #[inline(always)]
    pub(crate) fn prefetch_early(&self, asid: Asid, va: VirtAddr) {
        each_table!(self, t => t.prefetch_early(asid, va))
    }
    #[inline(always)]
    pub(crate) fn walk_brief(
        &self,
        asid: Asid,
        va: VirtAddr,
        hint: WalkHint,
    ) -> Option<(usize, Option<Translation>)> {
        each_table!(self, t => t.walk_brief(asid, va, hint))
    }
    pub(crate) fn as_dyn(&mut self) -> &mut dyn PageTable {
        each_table!(self, t => t)
    }
    pub(crate) fn as_ref(&self) -> &dyn PageTable {
        each_table!(self, t => t)
    }
    pub(crate) fn footprint_bytes(&self) -> u64 {
        each_table!(self, t => t.footprint_bytes())
    }
}
