//! Virtualized translation: a guest virtual address goes through the guest's page
//! table to a guest-physical address, and every guest-physical address the hardware
//! touches (each guest table entry, then the data) goes through the host's (nested,
//! or extended) page table to a host-physical one. A TLB miss is then a
//! two-dimensional walk: for a 4-level guest table over a 4-level host table, each of
//! the four guest entries and the data's guest-physical address need a host walk of
//! four references, 5 × 4 + 4 = 24 references with every cache cold.
//!
//! This follows the description of Bhargava, Serebrin, Spadini and Manne,
//! "Accelerating Two-Dimensional Page Walks for Virtualized Systems", ASPLOS 2008,
//! doi:10.1145/1346281.1346286 (§2 the walk, §3 its caches), and Intel's
//! paging-structure caches for EPT (Intel 64 and IA-32 Architectures Software
//! Developer's Manual, vol. 3, chapter "VMX Support for Address Translation",
//! section "Caching Translation Information"):
//!
//! - the guest's paging-structure caches are the machine's `walk_caches`: keyed by
//!   guest virtual address, an entry holds the host-physical address of the next
//!   guest table, so a hit skips those guest entries, their host walks and the host
//!   walk of that table;
//! - `host_walk_caches` are the host's, keyed by guest-physical address: a hit skips
//!   the leading entries of one host walk;
//! - `nested_tlb` caches guest-physical to host-physical translations: a hit skips a
//!   host walk whole.
//!
//! The guest table is the machine's `[page_table]`, guest-physical memory its
//! `[frames]`. The host's table is any of the seven structures, over host-physical
//! memory of its own allocator; the host maps a guest-physical page the first time a
//! walk reaches it (an EPT violation), with a `host_page` page when a block of that
//! size is free and nothing of its range is mapped yet, else with the host table's
//! smallest page, as a host kernel's transparent huge pages fall back. A host fault
//! costs what a guest fault costs (`cost.page_fault_cycles`: a fault in the host's
//! kernel; a VM exit's own cost is not modelled) plus the host walk retried after it,
//! in the run's page-fault cycles.
//!
//! A TLB entry holds the smaller of the guest and the host page: a 2 MiB guest page
//! over 4 KiB host pages is held as 4 KiB entries ("splintered", counted).
//!
//! The guest may run a promotion policy that copies (`traffic.rs`: the host maps the
//! fresh block as the copy writes it, and with a cache model the copy reaches the
//! data caches at host frames); a policy that follows the TLB is told of the entries
//! the walks made.
//!
//! Simplified: the host is one virtual machine's (host tables are tagged with no
//! address space; a guest's address-space switch leaves the host caches alone); host
//! frames are never reclaimed or moved; the guest runs no pager, no range
//! translations, no coalescing and no remapping mechanism (the configuration is
//! refused).

mod nested;
mod traffic;

pub(crate) use nested::translate;
pub use nested::Nested;
pub(crate) use traffic::HostTraffic;

pub use crate::config::VirtualizationConfig;
use serde::Serialize;

/// What the two-dimensional walks did, by dimension.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct VirtualizationReport {
    /// Two-dimensional walks: the machine's walks. The walk retried after a guest
    /// fault is the fault's cost, its references counted in `fault_refs` alone, as
    /// the machine counts them in `fault_walk_refs`.
    pub walks: u64,
    /// Guest table entries read (after the guest's walk caches).
    pub guest_refs: u64,
    /// Host table entries read by the host walks of those walks (after the host's
    /// walk caches).
    pub host_refs: u64,
    /// Host walks made (after the nested TLB), and host entries the host walk caches
    /// made unnecessary: of every walk, retried ones included, as the nested TLB's
    /// and the host walk caches' hits and misses are.
    pub host_walks: u64,
    pub host_refs_skipped: u64,
    /// Guest and host references of the walks retried after guest faults.
    pub fault_refs: u64,
    /// The nested TLB's hits and misses (0 without one).
    pub nested_tlb_hits: u64,
    pub nested_tlb_misses: u64,
    /// Guest-physical pages the host mapped on first touch, those mapped with
    /// `host_page` when larger than the host's smallest, and the host entries the
    /// retried host walks read.
    pub host_faults: u64,
    pub host_large_faults: u64,
    pub host_fault_refs: u64,
    /// Walks whose TLB entry is smaller than the guest page (the host page is).
    pub splintered: u64,
    /// Per walk: guest and host references.
    pub guest_refs_per_walk: f64,
    pub host_refs_per_walk: f64,
    /// Bytes of the host table, and host frames in use (guest memory touched and
    /// the guest's table included).
    pub host_table_bytes: u64,
    pub host_frames_used: u64,
    /// The host walk caches' hits and misses.
    pub host_walk_caches: Vec<crate::tlb::walk_cache::WalkCacheReport>,
}

impl VirtualizationReport {
    /// The counts made after `warm` (sizes as at the end).
    pub fn since(&self, warm: &VirtualizationReport) -> VirtualizationReport {
        let walks = self.walks - warm.walks;
        let guest_refs = self.guest_refs - warm.guest_refs;
        let host_refs = self.host_refs - warm.host_refs;
        let per = |n: u64| {
            if walks > 0 {
                n as f64 / walks as f64
            } else {
                0.0
            }
        };
        VirtualizationReport {
            walks,
            guest_refs,
            host_refs,
            host_walks: self.host_walks - warm.host_walks,
            host_refs_skipped: self.host_refs_skipped - warm.host_refs_skipped,
            fault_refs: self.fault_refs - warm.fault_refs,
            nested_tlb_hits: self.nested_tlb_hits - warm.nested_tlb_hits,
            nested_tlb_misses: self.nested_tlb_misses - warm.nested_tlb_misses,
            host_faults: self.host_faults - warm.host_faults,
            host_large_faults: self.host_large_faults - warm.host_large_faults,
            host_fault_refs: self.host_fault_refs - warm.host_fault_refs,
            splintered: self.splintered - warm.splintered,
            guest_refs_per_walk: per(guest_refs),
            host_refs_per_walk: per(host_refs),
            host_table_bytes: self.host_table_bytes,
            host_frames_used: self.host_frames_used,
            host_walk_caches: self
                .host_walk_caches
                .iter()
                .zip(&warm.host_walk_caches)
                .map(|(c, w)| c.since(w))
                .collect(),
        }
    }
}
