//! Coalesced TLB entries: after a walk finds a base page, the entry made for it may
//! cover a run of neighbouring base pages whose frames are contiguous and aligned like
//! their addresses, so that one entry serves the run. The run is a naturally aligned
//! block of base pages, and the entry is a page of the block's size, held by the TLB
//! arrays whose `page_sizes` have it (the others keep the base page, as they keep a
//! base page of any page they do not hold).
//!
//! - `contiguous-bit`: arm64's contiguous bit (Arm Architecture Reference Manual for
//!   A-profile, "The Contiguous bit"): the OS sets it on each entry of an aligned group
//!   of 16 base pages (4 KiB granule) mapping 16 contiguous, aligned frames with the
//!   same attributes, and the TLB may hold the group as one entry;
//! - `amd`: AMD's PTE coalescing, the hardware combining an aligned group of
//!   consecutive 4 KiB pages whose frames are contiguous into one entry;
//! - `colt`: Pham, Vaidyanathan, Jaleel and Bhattacharjee, "CoLT: Coalesced Large-Reach
//!   TLBs", MICRO 2012, doi:10.1109/MICRO.2012.32: the walk's cache line of entries
//!   coalesced around the missing page within its group. CoLT keeps a run of any start
//!   and length; here the run is the largest aligned block of contiguous pages around
//!   the missing one, no larger than the group, of a size some array holds.
//!
//! The first two take the whole group or nothing; they differ in who decides (the OS's
//! bit, the hardware's check), which leaves the same entries in a model that maps
//! what it maps at once. Reading the neighbours' entries is not charged: in a radix or
//! linear table they lie beside the missing page's (16 of them span two cache lines,
//! whose second is not counted); in the other structures they lie elsewhere, and the
//! model leaves that cost out.

use crate::addr::{Asid, PageSize, Pfn, VirtAddr};
use crate::config::{CoalesceKind, CoalescingConfig};
use crate::pagetable::{PageTable, Translation};

/// `[coalescing]`, checked against the machine.
#[derive(Clone, Debug)]
pub struct Coalescing {
    base: PageSize,
    /// The sizes an entry may take, largest first: the group's, or for CoLT every
    /// size from the group's down to two base pages that an array holds.
    sizes: Vec<PageSize>,
}

impl Coalescing {
    /// `held`: the page sizes the TLB arrays hold. Errors name `coalescing.<field>`.
    pub fn build(
        c: &CoalescingConfig,
        base: PageSize,
        held: &[PageSize],
    ) -> Result<Coalescing, String> {
        if !(2..=512).contains(&c.pages) || !c.pages.is_power_of_two() {
            return Err(format!(
                "coalescing.pages: {} is not a power of two from 2 to 512",
                c.pages
            ));
        }
        let group = PageSize::from_shift(base.shift() + c.pages.trailing_zeros())
            .ok_or_else(|| format!("coalescing.pages: {} base pages make no page size", c.pages))?;
        let sizes: Vec<PageSize> = match c.kind {
            CoalesceKind::Colt => (base.shift() + 1..=group.shift())
                .rev()
                .filter_map(PageSize::from_shift)
                .filter(|s| held.contains(s))
                .collect(),
            _ => held.contains(&group).then_some(group).into_iter().collect(),
        };
        if sizes.is_empty() {
            return Err(format!(
                "coalescing: no TLB array holds {group} pages (the group of {} {base} pages); add \"{group}\" to an array's page_sizes",
                c.pages
            ));
        }
        Ok(Coalescing { base, sizes })
    }

    /// The entry for `va` in `asid` after a walk of `table` found `t`: the largest
    /// block the kind allows whose base pages are all mapped to contiguous frames
    /// aligned like the block, with `t`'s rights; `t` itself if none is.
    pub fn widen(
        &self,
        table: &dyn PageTable,
        asid: Asid,
        va: VirtAddr,
        t: Translation,
    ) -> Translation {
        if t.size != self.base {
            return t;
        }
        for &size in &self.sizes {
            if let Some(first) = self.contiguous(table, asid, va, t, size) {
                return Translation {
                    pfn: first,
                    size,
                    perms: t.perms,
                };
            }
        }
        t
    }

    /// The first frame of the block of `size` around `va` if each of its base pages is
    /// mapped with `t`'s rights to the frame that keeps them contiguous and aligned.
    fn contiguous(
        &self,
        table: &dyn PageTable,
        asid: Asid,
        va: VirtAddr,
        t: Translation,
        size: PageSize,
    ) -> Option<Pfn> {
        let step = self.base.base_frames();
        let start = va.0 & !(size.bytes() - 1);
        let at = (va.0 - start) / self.base.bytes();
        let first = t.pfn.0.checked_sub(at * step)?;
        if first % size.base_frames() != 0 {
            return None;
        }
        let pages = size.bytes() / self.base.bytes();
        (0..pages)
            .filter(|&i| i != at)
            .all(|i| {
                let page = VirtAddr(start + i * self.base.bytes());
                table.walk(asid, page).translation
                    == Some(Translation {
                        pfn: Pfn(first + i * step),
                        size: self.base,
                        perms: t.perms,
                    })
            })
            .then_some(Pfn(first))
    }
}

#[cfg(test)]
mod tests;
