//! The `[virtualization]` section (the model is `crate::virt`).

use super::{SetAssocConfig, WalkCacheConfig};
use crate::addr::PageSize;
use crate::frames::FramesConfig;
use crate::pagetable::PageTableConfig;
use serde::{Deserialize, Serialize};

/// The `[virtualization]` section: the host side of a two-dimensional translation
/// (the guest side is the machine's page table and frames).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VirtualizationConfig {
    /// The host's (nested) page table, mapping guest-physical to host-physical
    /// addresses: any of the seven structures with its options, as `[page_table]`.
    /// Default a 4-level radix table.
    pub host_page_table: PageTableConfig,
    /// Host-physical memory, as `[frames]`. Default 64 GiB, simple allocator.
    pub host_frames: FramesConfig,
    /// The page a host fault maps when it can (a free block of the size, nothing of
    /// its range mapped yet); else the host table's smallest page. Default "4K".
    pub host_page: PageSize,
    /// The host's paging-structure caches (a radix host table only), keyed by
    /// guest-physical address, as `walk_caches`. Default none.
    pub host_walk_caches: Vec<WalkCacheConfig>,
    /// A nested TLB of guest-physical to host-physical translations; its
    /// `page_sizes` are the host pages it holds. Default none.
    pub nested_tlb: Option<SetAssocConfig>,
}

impl Default for VirtualizationConfig {
    fn default() -> Self {
        VirtualizationConfig {
            host_page_table: PageTableConfig::default(),
            host_frames: FramesConfig::default(),
            host_page: PageSize::K4,
            host_walk_caches: Vec::new(),
            nested_tlb: None,
        }
    }
}
