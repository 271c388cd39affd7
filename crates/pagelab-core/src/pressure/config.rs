//! The `[paging]` section: memory pressure and the page daemon.

use super::victims::DaemonKind;
use crate::addr::ByteSize;
use serde::{Deserialize, Serialize};

/// Memory pressure and the page daemon (`crate::pressure`; Navarro et al., OSDI 2002,
/// as Gopalan's slides, "Speculative demotions", "Demotions: dirty superpages",
/// "Fragmentation control").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PagingConfig {
    /// The most memory the program's pages may hold (its resident set: every base page
    /// mapped, those of superpages included), e.g. "64M"; rounded down to base pages.
    /// When a fault or a promotion takes the resident set past it, the page daemon
    /// reclaims pages until it is `free_target` below. 0: no limit. Default 0.
    pub resident_limit: ByteSize,
    /// The share of `resident_limit` the daemon frees below it each time it wakes
    /// (its hysteresis, as FreeBSD's free target above its minimum), from 0 to 0.5.
    /// Default 0.03.
    pub free_target: f64,
    /// How the daemon chooses victims among the inactive pages its clock finds: a
    /// name of `DaemonKind::NAMES` ("clock", "contiguity": see `pressure::victims`).
    /// Default "clock".
    pub daemon: DaemonKind,
    /// Inactive pages the contiguity daemon weighs at once. Default 64.
    pub contiguity_window: usize,
    /// A referenced superpage the daemon meets is demoted as its reference bit is
    /// cleared, so that the bits of its base pages tell which are still used; it is
    /// promoted again when they all are. Default true.
    pub speculative_demotion: bool,
    /// The first write to a clean superpage demotes it, so that dirty bits are kept per
    /// base page; it is promoted again when all its base pages are dirty. Default false
    /// (with a policy and without it, a run's report is what it was before this option).
    pub demote_on_write: bool,
}

impl Default for PagingConfig {
    fn default() -> Self {
        PagingConfig {
            resident_limit: ByteSize(0),
            free_target: 0.03,
            daemon: DaemonKind::Clock,
            contiguity_window: 64,
            speculative_demotion: true,
            demote_on_write: false,
        }
    }
}

impl PagingConfig {
    pub fn is_default(&self) -> bool {
        *self == PagingConfig::default()
    }
    /// Whether the machine keeps a pager at all (a limit, or dirty bits per page).
    pub fn is_on(&self) -> bool {
        self.resident_limit.0 > 0 || self.demote_on_write
    }
}
