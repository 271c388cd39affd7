//! The `[coalescing]` section (the model is `crate::tlb::coalesce`).

use serde::{Deserialize, Serialize};

/// How a TLB miss's translation is widened to a run of base pages whose frames are
/// contiguous, for the TLB arrays that hold the run's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoalesceKind {
    /// The OS marks a naturally aligned group of `pages` base pages mapped to
    /// contiguous, equally aligned frames with the same rights (arm64's contiguous
    /// bit): one entry for the whole group, else a base-page entry.
    ContiguousBit,
    /// The hardware combines a naturally aligned group of `pages` consecutive base
    /// pages whose frames are contiguous and aligned alike (AMD's PTE coalescing):
    /// one entry for the whole group, else a base-page entry.
    Amd,
    /// CoLT (Pham et al., MICRO 2012): the run of contiguous translations around the
    /// missing page within its aligned group of `pages`, here as the largest naturally
    /// aligned block of it (CoLT's runs of any start and length are rounded down so).
    Colt,
}

/// The `[coalescing]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoalescingConfig {
    pub kind: CoalesceKind,
    /// Base pages in a group: a power of two from 2 to 512. Default 16 (arm64's
    /// contiguous bit over 4 KiB pages: 64 KiB).
    #[serde(default = "default_pages")]
    pub pages: u32,
}

fn default_pages() -> u32 {
    16
}
