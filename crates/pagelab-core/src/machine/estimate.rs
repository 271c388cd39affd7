//! What a configuration allocates when it is built, estimated from the configuration
//! alone: [`Machine::build`](super::Machine::build) refuses one whose estimate exceeds
//! `max_memory` before it allocates anything, with one line naming the estimate and
//! the field that takes most of it. A test builds machines under a counting allocator
//! and checks every estimate covers what the build allocated.
//!
//! Memory that grows as a trace runs (page-table nodes, the frames it maps) is bounded
//! by the trace's footprint, not here.

use crate::addr::format_bytes;
use crate::config::{FramesConfig, MachineConfig, SetAssocConfig, TlbConfig};

/// One part of the estimate: the configuration field it comes from, and bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub field: String,
    pub bytes: u64,
}

/// Bytes of `sets` × `ways` entries of `entry` bytes each, with the replacement state
/// (at most 16 bytes a way and 8 a set, whichever the policy).
fn set_assoc_bytes(sets: usize, ways: usize, entry: u64) -> u64 {
    let n = (sets as u64).saturating_mul(ways as u64);
    n.saturating_mul(entry + 16)
        .saturating_add((sets as u64).saturating_mul(8))
}

/// Bytes of a TLB array or walk cache: tag, metadata, frame, permissions and a way
/// index or low bits per entry.
pub fn array_bytes(sets: usize, ways: usize) -> u64 {
    set_assoc_bytes(sets, ways, 8 + 4 + 8 + 1 + 8)
}

/// Bytes of a data cache level: a tag per line.
pub fn cache_level_bytes(sets: usize, ways: usize) -> u64 {
    set_assoc_bytes(sets, ways, 8)
}

/// The parts of a configuration's estimate, in the order the build allocates them.
pub fn parts(c: &MachineConfig) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut add = |field: String, bytes: u64| parts.push(Part { field, bytes });
    let arrays = |a: &SetAssocConfig| array_bytes(a.sets, a.ways);
    match &c.tlb {
        TlbConfig::SetAssociative(a) => add("tlb.sets × tlb.ways".into(), arrays(a)),
        TlbConfig::Hierarchy(h) => {
            for (i, level) in h.levels.iter().enumerate() {
                let bytes = level
                    .arrays
                    .iter()
                    .fold(0u64, |sum, a| sum.saturating_add(arrays(a)));
                add(format!("tlb.levels[{i}].arrays ({})", level.name), bytes);
            }
        }
    }
    for (i, w) in c.walk_caches.iter().enumerate() {
        add(
            format!("walk_caches[{i}].sets × ways"),
            array_bytes(w.sets, w.ways),
        );
    }
    for (i, level) in c.cache.levels.iter().enumerate() {
        add(
            format!("cache.levels[{i}].sets × ways ({})", level.name),
            cache_level_bytes(level.sets, level.ways),
        );
    }
    if !c.cache.levels.is_empty() {
        add(
            "cache (the caches' pass: its memo of translations)".into(),
            super::cached::MEMO_BYTES,
        );
    }
    let (field, bytes) = c.page_table.preallocated();
    add(format!("page_table.{field}"), bytes);
    frames_parts(&c.frames, "frames", &mut add);
    if let Some(v) = &c.virtualization {
        let (field, bytes) = v.host_page_table.preallocated();
        add(format!("virtualization.host_page_table.{field}"), bytes);
        frames_parts(&v.host_frames, "virtualization.host_frames", &mut add);
        for (i, w) in v.host_walk_caches.iter().enumerate() {
            add(
                format!("virtualization.host_walk_caches[{i}].sets × ways"),
                array_bytes(w.sets, w.ways),
            );
        }
        if let Some(a) = &v.nested_tlb {
            add("virtualization.nested_tlb.sets × ways".into(), arrays(a));
        }
    }
    parts
}

/// The parts of physical memory configured at `field`.
fn frames_parts(frames: &FramesConfig, field: &str, add: &mut impl FnMut(String, u64)) {
    if let FramesConfig::Buddy(b) = frames {
        // A free list entry per free block: wired frames at random leave up to one
        // block per frame; otherwise one per largest block.
        let frames = b.memory.0 >> crate::addr::BASE_SHIFT;
        let blocks = if b.wired > 0.0 && !b.wired_clustered {
            frames
        } else {
            frames >> b.max_block.base_frames().trailing_zeros()
        };
        add(format!("{field}.memory"), blocks.saturating_mul(16));
        if b.cached > 0.0 {
            // Its pages by age and, while it fills, by file (8 bytes each twice), its
            // counts by block (4 bytes a block of each order: under 8 a frame), and the
            // web server's files (24 bytes each, about one per 8 frames).
            add(format!("{field}.cached"), frames.saturating_mul(28));
        }
    }
}

/// A byte count to one decimal, in the largest binary unit it reaches ("51.0 GiB").
pub fn about(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift {
            return format!("{:.1} {unit}", bytes as f64 / (1u64 << shift) as f64);
        }
    }
    format!("{bytes} bytes")
}

/// The whole estimate, and the part that takes most of it.
pub fn total(c: &MachineConfig) -> (u64, Option<Part>) {
    let parts = parts(c);
    let total = parts
        .iter()
        .fold(0u64, |sum, p| sum.saturating_add(p.bytes));
    (total, parts.into_iter().max_by_key(|p| p.bytes))
}

/// The configuration's estimate, unless it exceeds `max_memory`: then what is wrong.
pub fn check(c: &MachineConfig) -> Result<u64, String> {
    if c.max_memory.0 < 1 << 24 {
        return Err(format!(
            "max_memory: {} is too little to build any machine (at least 16M)",
            format_bytes(c.max_memory.0)
        ));
    }
    let (total, largest) = total(c);
    match largest {
        Some(p) if total > c.max_memory.0 => Err(format!(
            "the machine would take about {} before it runs, more than max_memory ({}); {} takes {} of it",
            about(total),
            format_bytes(c.max_memory.0),
            p.field,
            about(p.bytes)
        )),
        _ => Ok(total),
    }
}
