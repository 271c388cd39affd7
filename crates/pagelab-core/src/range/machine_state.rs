//! Range translations as a machine carries them: every process's range table, eager
//! paging (the operating system's side, which follows the trace's events) and whether a
//! TLB level has a range unit, built and checked here from the `[ranges]` section and
//! what the rest of the machine is (the machine carries out eager paging's events in
//! order with the references: `machine/ranges.rs`).

use super::config::{Allocation, RangesConfig};
use super::{EagerPaging, RangeTables};
use crate::addr::PageSize;

/// What the rest of the machine is, as ranges need to know it.
pub struct Context {
    /// Where a range unit is configured (`tlb.levels[i].range`), if one is.
    pub unit_at: Option<String>,
    /// The unit is a direct segment (eager paging then chooses each process's).
    pub segments: bool,
    /// The buddy allocator's largest block, if frames come from one.
    pub buddy_max_block: Option<PageSize>,
    pub base_page: PageSize,
    /// A promotion policy is configured (it would move pages under a range).
    pub promotion: bool,
    /// Memory pressure is configured (the page daemon would reclaim them).
    pub paging: bool,
}

/// The machine's range translations.
#[derive(Default)]
pub struct Ranges {
    /// Every process's range table (empty without eager paging).
    pub tables: RangeTables,
    /// Eager paging, if configured.
    pub eager: Option<Box<EagerPaging>>,
    /// A TLB level has a range unit: misses look it up.
    pub unit: bool,
}

impl Ranges {
    /// The range translations `c` asks for on the machine `cx`; errors name the field.
    /// Eager paging needs the buddy allocator, base pages of 4 KiB and nothing that
    /// moves or reclaims the pages under a range; a range unit needs eager paging.
    pub fn build(c: &RangesConfig, cx: &Context) -> Result<Ranges, String> {
        let eager = c.allocation == Allocation::Eager;
        if let Some(at) = &cx.unit_at {
            if cx.buddy_max_block.is_none() {
                return Err(format!(
                    "{at}: ranges need a physical-memory model to be contiguous in: set frames.kind = \"buddy\""
                ));
            }
            if !eager {
                return Err(format!(
                    "{at}: ranges come from eager paging: set ranges.allocation = \"eager\""
                ));
            }
        }
        let unit = cx.unit_at.is_some();
        if !eager {
            if !c.regions.is_empty() {
                return Err("ranges.regions: regions are allocated by eager paging: set ranges.allocation = \"eager\"".into());
            }
            // Checked even when unused, so that a typo does not wait for eager paging.
            c.segment_bounds()?;
            c.threshold()?;
            return Ok(Ranges {
                unit,
                ..Ranges::default()
            });
        }
        let Some(max_block) = cx.buddy_max_block else {
            return Err(
                "ranges.allocation: eager paging takes blocks from the buddy allocator: set frames.kind = \"buddy\"".into(),
            );
        };
        if cx.base_page != PageSize::K4 {
            return Err(format!(
                "ranges.allocation: ranges are made of 4K pages; base_page is {}",
                cx.base_page
            ));
        }
        if cx.promotion {
            return Err("ranges.allocation: eager paging with a promotion policy is not modelled (a promotion would move pages under a range); use promotion.policy = \"none\"".into());
        }
        if cx.paging {
            return Err("ranges.allocation: eager paging under [paging] is not modelled (the page daemon would reclaim pages under a range)".into());
        }
        let max_order = max_block.base_frames().trailing_zeros();
        Ok(Ranges {
            tables: RangeTables::default(),
            eager: Some(Box::new(EagerPaging::build(c, max_order, cx.segments)?)),
            unit,
        })
    }

    /// The range tables a miss looks up: only if a TLB level has a range unit.
    #[inline]
    pub fn for_lookup(&self) -> Option<&RangeTables> {
        self.unit.then_some(&self.tables)
    }
}
