//! `static`: chosen regions mapped with one fixed large page size, as hugetlbfs or an
//! explicit request (`madvise`, a linker flag) would. A fault in a region maps the
//! whole aligned page of the region's size around the address; nothing is promoted
//! later. Regions are given by address, so they suit traces whose layout is known.

use super::{BuildPolicy, Candidate, Context, Miss, PromotionPolicy};
use crate::addr::{Asid, ByteSize, PageSize, VirtAddr};

pub struct StaticRegions {
    /// (start, end exclusive, size)
    regions: Vec<(u64, u64, PageSize)>,
}

impl StaticRegions {
    /// Regions are checked by [`check`] first.
    pub fn new(regions: &[StaticRegion]) -> StaticRegions {
        StaticRegions {
            regions: regions
                .iter()
                .map(|r| (r.start, r.start.saturating_add(r.bytes.0), r.page_size))
                .collect(),
        }
    }
}

/// Each region aligned, a whole number of pages, and of a size in `sizes`.
pub fn check(regions: &[StaticRegion], sizes: &[PageSize]) -> Result<(), String> {
    for (i, r) in regions.iter().enumerate() {
        let field = format!("promotion.regions[{i}]");
        if !sizes.contains(&r.page_size) {
            return Err(format!(
                "{field}.page_size: the page table cannot map {} pages",
                r.page_size
            ));
        }
        if r.start % r.page_size.bytes() != 0 {
            return Err(format!(
                "{field}.start: {:#x} is not aligned to {}",
                r.start, r.page_size
            ));
        }
        if r.bytes.0 == 0 || r.bytes.0 % r.page_size.bytes() != 0 {
            return Err(format!(
                "{field}.bytes: {} is not a positive multiple of {}",
                r.bytes.0, r.page_size
            ));
        }
        if r.start.checked_add(r.bytes.0).is_none() {
            return Err(format!("{field}: runs past the end of the address space"));
        }
    }
    Ok(())
}

impl PromotionPolicy for StaticRegions {
    fn fault_size(&mut self, _asid: Asid, va: VirtAddr) -> Option<PageSize> {
        self.regions
            .iter()
            .find(|&&(start, end, _)| va.0 >= start && va.0 < end)
            .map(|&(_, _, size)| size)
    }

    fn on_miss(&mut self, _m: &Miss<'_>) -> Option<Candidate> {
        None
    }
}

/// One region of a static policy.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticRegion {
    /// First virtual address (aligned to `page_size`).
    pub start: u64,
    /// Length in bytes (a multiple of `page_size`).
    pub bytes: ByteSize,
    pub page_size: PageSize,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StaticPromotionConfig {
    pub regions: Vec<StaticRegion>,
}

impl BuildPolicy for StaticRegions {
    type Options = StaticPromotionConfig;
    fn build(o: &StaticPromotionConfig, cx: &Context<'_>) -> Result<StaticRegions, String> {
        check(&o.regions, cx.table_sizes)?;
        Ok(StaticRegions::new(&o.regions))
    }
    fn configured_sizes(_: &StaticPromotionConfig) -> Option<&[PageSize]> {
        None
    }
    fn largest_page(o: &StaticPromotionConfig, _sizes: &[PageSize]) -> Option<PageSize> {
        o.regions.iter().map(|r| r.page_size).max()
    }
}
