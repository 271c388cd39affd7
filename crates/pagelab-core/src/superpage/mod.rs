//! Superpages: promotion policies decide which aligned groups of base pages become one
//! superpage, and when; promotion mechanisms make their frames contiguous (by copying)
//! or appear so (by remapping at the memory controller). The machine asks the policy
//! after every TLB miss that walked, and the page-fault handler asks it which page
//! size to map; it carries a promotion out (`machine/promote.rs`) with the mechanism.
//!
//! Policies, one file each, chosen by `promotion.policy`: `static` (chosen regions in
//! one large size from the first fault on), `asap` and `approx-online` and `online`
//! (Fang et al., "Online Superpage Promotion Revisited", SIGMETRICS 2000, §3.1), `thp`
//! (Linux), `reservation`
//! (Navarro et al., OSDI 2002, as Gopalan's slides present it). Mechanisms, chosen by
//! `mechanism.kind`: `copy` and `remap` (§3.2) in [`mechanism`].
//!
//! Adding a policy: a file here implementing [`PromotionPolicy`] and [`BuildPolicy`]
//! (with its options), its `mod` and `pub use` lines below, and its line in
//! [`for_each_promotion_policy!`](crate::for_each_promotion_policy) (docs/EXTENDING.md).

mod any;
mod approx_online;
mod asap;
mod build_policy;
mod lru_stack;
pub mod mechanism;
pub mod objects;
mod online;
pub mod promoter;
mod reservation;
mod static_regions;
mod thp;

pub use any::{build, PromotionConfig, NAMES};
pub use approx_online::{ApproxOnline, OnlineConfig};
pub use asap::{Asap, AsapConfig};
pub use build_policy::{check_miss_cycles, BuildPolicy, Context};
pub use online::Online;
pub use promoter::{Promoter, Surroundings};
pub use reservation::{Reservation, ReservationConfig};
pub use static_regions::{StaticPromotionConfig, StaticRegion, StaticRegions};
pub use thp::{Thp, ThpConfig};

/// The promotion policies, by configuration name (`policy` in `[promotion]`; "none"
/// is implicit): the one list from which [`PromotionConfig`], [`build`] and [`NAMES`]
/// are made. Each entry names the options and the policy they build. The macro hands
/// the list to `$m`, after the tokens given after it and a `;`.
#[macro_export]
macro_rules! for_each_promotion_policy {
    ($m:ident $(, $($arg:tt)*)?) => {
        $m! {
            $($($arg)*)?;
            /// Chosen regions mapped with one fixed large size, as hugetlbfs would: a
            /// fault in a region maps the whole aligned page of that size around it.
            "static" => Static(StaticPromotionConfig, StaticRegions),
            /// Promote an aligned candidate as soon as every base page of it has been
            /// referenced (Fang et al., "Online Superpage Promotion Revisited",
            /// SIGMETRICS 2000, §3.1).
            "asap" => Asap(AsapConfig, Asap),
            /// Romer's competitive approximation: prefetch counters charged on TLB
            /// misses, promotion at a per-size threshold (§3.1).
            "approx-online" => ApproxOnline(OnlineConfig, ApproxOnline),
            /// Romer's full online policy: approx-online, and each miss of an evicted
            /// page also charged to the unrelated candidates whose promotion alone
            /// would have kept it in an LRU TLB of the walking level's size (§3.1).
            "online" => Online(OnlineConfig, Online),
            /// Linux transparent huge pages: huge pages at faults where a free aligned
            /// block exists, and a background pass collapsing ranges with few unmapped
            /// pages.
            "thp" => Thp(ThpConfig, Thp),
            /// Navarro's preemptible reservations with incremental promotion
            /// (Navarro et al., OSDI 2002, as Gopalan's slides present it, "III Design").
            "reservation" => Reservation(ReservationConfig, Reservation),
        }
    };
}

use crate::addr::{Asid, PageSize, Pfn, VirtAddr};
use crate::event::Event;
use crate::frames::FrameAllocator;
use crate::pagetable::Translation;

/// An aligned group of base pages that could become one superpage of `size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Candidate {
    pub asid: Asid,
    /// The first address (aligned to `size`).
    pub va: VirtAddr,
    pub size: PageSize,
}

impl Candidate {
    /// The candidate of `size` containing `va`.
    pub fn containing(asid: Asid, va: VirtAddr, size: PageSize) -> Candidate {
        Candidate {
            asid,
            va: va.vpn(size).base(size),
            size,
        }
    }
    pub fn contains(&self, va: VirtAddr) -> bool {
        va.0 >> self.size.shift() == self.va.0 >> self.size.shift()
    }
}

/// A TLB entry as a policy sees it: the first address of the page it maps, and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub va: VirtAddr,
    pub size: PageSize,
}

/// A TLB miss that walked, as the policy is told of it.
pub struct Miss<'a> {
    pub asid: Asid,
    pub va: VirtAddr,
    /// The size of the page that maps `va` now (after the walk, and the fault if any).
    pub size: PageSize,
    /// The walk faulted: this is the first reference to the page.
    pub first_touch: bool,
    /// The entries of `asid` in the TLB level whose misses walk, as they were before
    /// this miss filled it (only if [`PromotionPolicy::reads_tlb`]).
    pub tlb: &'a [Entry],
}

/// When and which pages become superpages. Only `on_miss` is required: every other
/// method has a default that does nothing, and the groups below say which policies
/// need them.
pub trait PromotionPolicy {
    // Required.
    /// Told of every TLB miss that walked: the candidate to promote now, if any.
    fn on_miss(&mut self, miss: &Miss<'_>) -> Option<Candidate>;
    /// After the machine promoted (or failed to promote) what `on_miss` asked for:
    /// the next candidate to promote at the same miss, if any (asap promotes every
    /// size a reference completes, smallest first).
    fn then_promote(&mut self) -> Option<Candidate> {
        None
    }

    // The fault handler and the trace.
    /// The page size the fault handler maps at `va` (`None`: the base page). If the
    /// page cannot be mapped at that size (no free aligned block, or part of it is
    /// mapped), the handler maps the base page.
    fn fault_size(&mut self, _asid: Asid, _va: VirtAddr) -> Option<PageSize> {
        None
    }
    /// An event of the trace (an allocation, a segment of the memory map; not a
    /// switch of address space), made in `asid`, before the references that follow it.
    /// Folio sizes a fault tries, largest first, when no page of `fault_size` was
    /// mapped (Linux's multi-size THP): a folio is a naturally aligned block of
    /// frames mapped page by page with base-page entries. Default none.
    fn fault_folios(&self) -> &[PageSize] {
        &[]
    }
    /// A fault at `va` mapped a folio of `size` (`Some`), or fell back past one
    /// (`None`: no free block of the size, or a page of its range already mapped).
    /// The faulting page's miss follows, as for any fault.
    fn folio_fault(&mut self, _asid: Asid, _va: VirtAddr, _mapped: Option<PageSize>) {}
    fn on_event(&mut self, _asid: Asid, _event: &Event) {}
    /// Called after every batch with the references run so far: candidates a
    /// background pass (khugepaged) asks to promote, pushed to `out`.
    fn background(&mut self, _references: u64, _out: &mut Vec<Candidate>) {}

    // Told of what the machine did.
    /// The machine made `c` a superpage.
    fn promoted(&mut self, _c: Candidate) {}
    /// The machine could not make `c` a superpage (no free block for it).
    fn promotion_failed(&mut self, _c: Candidate) {}
    /// The machine demoted the superpage `c` into base pages on the same frames.
    fn demoted(&mut self, _c: Candidate) {}
    /// The page daemon reclaimed the base page holding `va` (it was mapped as a base
    /// page; see `crate::pressure`). True if the policy keeps the page's frame set aside
    /// for it (a live reservation), false if the machine frees it.
    fn unmapped(&mut self, _asid: Asid, _va: VirtAddr) -> bool {
        false
    }

    // Policies that follow the TLB (approx-online, online): the entries of the level whose
    // misses walk, read at each miss or followed entry by entry.
    /// Whether [`PromotionPolicy::on_miss`] reads [`Miss::tlb`].
    fn reads_tlb(&self) -> bool {
        false
    }
    /// Whether the policy follows the contents of the TLB level whose misses walk
    /// through the `tlb_*` calls instead (the machine makes them after `on_miss`).
    fn tracks_tlb(&self) -> bool {
        false
    }
    /// That level made an entry.
    fn tlb_filled(&mut self, _asid: Asid, _e: Entry) {}
    /// A fill evicted an entry from it.
    fn tlb_evicted(&mut self, _asid: Asid, _e: Entry) {}
    /// Its entries of `asid` (every address space: `None`) overlapping
    /// `[start, start + len)` were dropped.
    fn tlb_invalidated(&mut self, _asid: Option<Asid>, _start: u64, _len: u64) {}
    /// Whether the policy is told of every TLB hit ([`PromotionPolicy::on_hit`]):
    /// `online` keeps the recency of entries as an LRU TLB would.
    fn follows_hits(&self) -> bool {
        false
    }
    /// A reference to `va` hit the TLB in an entry for a page of `size`. (Repeated
    /// references to the page just translated are not told: they change no recency.)
    fn on_hit(&mut self, _asid: Asid, _va: VirtAddr, _size: PageSize) {}

    // Policies that hold frames (reservations).
    /// The frame the fault handler maps the base page of `va` at, taken from what the
    /// policy set aside or allocated from `frames` (`None`: a fresh frame from the
    /// allocator).
    fn fault_frame(
        &mut self,
        _asid: Asid,
        _va: VirtAddr,
        _frames: &mut dyn FrameAllocator,
    ) -> Option<Pfn> {
        None
    }
    /// Memory ran out (the fault handler found no frame, or no frame for a page-table
    /// node): give back to `frames` frames the policy holds idle, the least useful
    /// first (a reservation's unpopulated frames). False when it holds none.
    fn give_back(&mut self, _frames: &mut dyn FrameAllocator) -> bool {
        false
    }
    /// Whether the policy holds the frame of the base page at `va` set aside, so that
    /// reclaiming the page would not free it (the daemon weighs victims with it).
    fn holds_frame(&self, _asid: Asid, _va: VirtAddr) -> bool {
        false
    }
    /// Whether the policy places pages so that a candidate's frames already form its
    /// aligned block (reservations): then a promotion whose frames do is a page-table
    /// update in place, without the mechanism. Policies that rely on the mechanism
    /// (Romer's) say no, so a copy costs what the papers charge even where the frames
    /// happen to be contiguous.
    fn in_place(&self) -> bool {
        false
    }
    /// Frames set aside and not yet mapped (reservations), for the memory they cost.
    fn idle_frames(&self) -> u64 {
        0
    }

    // Costs, reports and tests.
    /// Cycles the miss handler spends on the policy per miss it is told of.
    fn miss_cycles(&self) -> f64 {
        0.0
    }
    /// Counts of the policy's own (name, value), for the report.
    fn stats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Whether the stat `name` of [`stats`](Self::stats) is a state at a moment (live
    /// reservations, say) rather than a count: a steady-state report keeps it as at
    /// the end instead of subtracting the warm-up's.
    fn stat_is_state(&self, name: &str) -> bool {
        let _ = name;
        false
    }
    /// Check the policy's bookkeeping against the page table (`lookup` translates a
    /// base page as the table does) and the walking TLB level (`tlb`: its entries):
    /// population counts equal the pages mapped, a followed TLB is the real one. For
    /// tests; a description of the first disagreement.
    fn check(
        &self,
        _lookup: &dyn Fn(Asid, VirtAddr) -> Option<Translation>,
        _tlb: &[(Asid, Entry)],
    ) -> Result<(), String> {
        Ok(())
    }
}

/// Candidate sizes, ascending, each with its promotion threshold.
#[derive(Clone, Debug)]
pub struct Ladder {
    pub sizes: Vec<PageSize>,
    pub thresholds: Vec<u64>,
}

impl Ladder {
    /// The ladder of `sizes`: `thresholds` one per size, or by default `threshold`
    /// doubling with each size step. Errors name the field.
    pub fn new(sizes: &[PageSize], threshold: u64, thresholds: &[u64]) -> Result<Ladder, String> {
        let t: Vec<u64> = if thresholds.is_empty() {
            (0..sizes.len())
                .map(|i| threshold.saturating_mul(1u64 << i.min(63)))
                .collect()
        } else if thresholds.len() == sizes.len() {
            thresholds.to_vec()
        } else {
            return Err(format!(
                "promotion.thresholds: {} thresholds for {} candidate sizes ({})",
                thresholds.len(),
                sizes.len(),
                sizes
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        if t.contains(&0) {
            return Err("promotion.threshold: must be at least 1".into());
        }
        Ok(Ladder {
            sizes: sizes.to_vec(),
            thresholds: t,
        })
    }
    /// The index of `size` on the ladder.
    pub fn index(&self, size: PageSize) -> Option<usize> {
        self.sizes.iter().position(|&s| s == size)
    }
}
