//! Every page-table structure as one type, chosen by name from the configuration; calls
//! dispatch statically to the structure inside.

use super::*;
use crate::addr::{Asid, VirtAddr};
use crate::config::PageTableConfig;

/// Every page-table structure, as one type.
pub enum AnyPageTable {
    Radix(RadixPageTable),
    Linear(LinearPageTable),
    Hashed(HashedPageTable),
    Clustered(ClusteredPageTable),
    Inverted(InvertedPageTable),
    Guarded(GuardedPageTable),
    VariableRadix(VariableRadixPageTable),
}

/// `$e` with `$t` bound to the structure inside, whichever it is.
macro_rules! each_table {
    ($table:expr, $t:ident => $e:expr) => {
        match $table {
            AnyPageTable::Radix($t) => $e,
            AnyPageTable::Linear($t) => $e,
            AnyPageTable::Hashed($t) => $e,
            AnyPageTable::Clustered($t) => $e,
            AnyPageTable::Inverted($t) => $e,
            AnyPageTable::Guarded($t) => $e,
            AnyPageTable::VariableRadix($t) => $e,
        }
    };
}
pub(crate) use each_table;

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

pub fn build_page_table(c: &PageTableConfig) -> Result<AnyPageTable, String> {
    let bits = |n: u64| n.trailing_zeros();
    match c {
        PageTableConfig::Radix(r) => match r.levels {
            4 | 5 => Ok(AnyPageTable::Radix(RadixPageTable::new(r.levels))),
            n => Err(format!(
                "page_table.levels: {n} is not supported (x86-64 radix tables have 4 or 5 levels)"
            )),
        },
        PageTableConfig::Linear(l) => l
            .check()
            .map(|()| AnyPageTable::Linear(LinearPageTable::new(&l.page_sizes, l.nested_tlb))),
        PageTableConfig::Hashed(h) => h
            .check()
            .map(|()| AnyPageTable::Hashed(HashedPageTable::new(bits(h.buckets), &h.page_sizes))),
        PageTableConfig::Clustered(c) => c.check().map(|()| {
            let (b, f) = (bits(c.buckets), bits(c.subblock_factor));
            AnyPageTable::Clustered(ClusteredPageTable::new(b, f, &c.page_sizes))
        }),
        PageTableConfig::Inverted(i) => i.check().map(|()| {
            let hat = bits(i.hat());
            AnyPageTable::Inverted(InvertedPageTable::new(i.frames(), hat, &i.page_sizes))
        }),
        PageTableConfig::Guarded(g) => g
            .check()
            .map(|()| AnyPageTable::Guarded(GuardedPageTable::new(g.radix as u32, &g.page_sizes))),
        PageTableConfig::VariableRadix(v) => v.check().map(|()| {
            let t = VariableRadixPageTable::new(v.node_bits, v.max_node_bits, &v.page_sizes);
            AnyPageTable::VariableRadix(t)
        }),
    }
}
