//! The `[frames]` section of a machine's configuration: physical memory and its
//! allocator (re-exported by `config`).

use crate::addr::{ByteSize, PageSize};
use serde::{Deserialize, Serialize};

/// Physical memory and its allocator, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FramesConfig {
    /// Bump allocation with reuse of freed blocks; no splitting or coalescing.
    Simple(SimpleFramesConfig),
    /// The binary buddy allocator: aligned blocks split on demand and coalesced on free.
    Buddy(BuddyFramesConfig),
}

impl Default for FramesConfig {
    fn default() -> Self {
        FramesConfig::Simple(SimpleFramesConfig::default())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimpleFramesConfig {
    /// Physical memory size, e.g. "64G". Default 64 GiB.
    pub memory: ByteSize,
}

impl Default for SimpleFramesConfig {
    fn default() -> Self {
        SimpleFramesConfig {
            memory: ByteSize(64 << 30),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BuddyFramesConfig {
    /// Physical memory size, e.g. "64G". Default 64 GiB.
    pub memory: ByteSize,
    /// The largest block, as a page size (it sets the largest superpage memory can
    /// give). Default "1G".
    pub max_block: PageSize,
    /// The share of memory wired before the run (kernel pages, pinned buffers): base
    /// frames that are never freed or moved. Scattered at random they break
    /// contiguity (Navarro et al., OSDI 2002, as Gopalan's slides, "Issue 4:
    /// fragmentation"), the knob that makes large blocks scarce. Default 0.
    pub wired: f64,
    /// Cluster the wired frames at the top of memory, "a dedicated region of physical
    /// memory for wired pages", instead of scattering them. Default false.
    pub wired_clustered: bool,
    /// The share of memory another program's file cache holds when the run begins:
    /// clean pages a web server's misses left behind, placed by this allocator, that
    /// the page daemon frees when memory is short (and, with `paging.daemon =
    /// "contiguity"`, to give a superpage its block). From 0 to 0.99, with `wired`;
    /// default 0 (`frames::FileCache`).
    pub cached: f64,
    /// Sample the free memory by block size every this many references, for the
    /// report's fragmentation over time (0: never). Default 1,000,000.
    pub sample_every: u64,
}

impl Default for BuddyFramesConfig {
    fn default() -> Self {
        BuddyFramesConfig {
            memory: ByteSize(64 << 30),
            max_block: PageSize::G1,
            wired: 0.0,
            wired_clustered: false,
            cached: 0.0,
            sample_every: 1_000_000,
        }
    }
}
