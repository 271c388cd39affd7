//! The simplest allocator that can back demand paging: blocks come from a bump pointer
//! (aligned up to their size) and freed blocks are reused, per size, last-freed first.
//! It never splits or coalesces; the buddy allocator does that.

use super::{memory_frames, Built, FrameAllocator};
use crate::addr::{ByteSize, PageSize, Pfn};
use std::collections::BTreeMap;

pub struct SimpleAllocator {
    total: u64,
    next: u64,
    used: u64,
    free: BTreeMap<PageSize, Vec<Pfn>>,
}

impl SimpleAllocator {
    /// Memory of `total_frames` base frames; frame 0 is never handed out, so that a
    /// zero frame number is never a valid translation.
    pub fn new(total_frames: u64) -> SimpleAllocator {
        SimpleAllocator {
            total: total_frames,
            next: 1,
            used: 0,
            free: BTreeMap::new(),
        }
    }
}

/// The `[frames]` options of `kind = "simple"`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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

impl SimpleFramesConfig {
    /// The allocator these options describe, its values checked.
    pub fn build(&self, _cx: &super::BuildContext) -> Built {
        Ok(Box::new(SimpleAllocator::new(memory_frames(self.memory)?)))
    }
}

impl FrameAllocator for SimpleAllocator {
    fn alloc(&mut self, size: PageSize) -> Option<Pfn> {
        let n = size.base_frames();
        let pfn = match self.free.get_mut(&size).and_then(|v| v.pop()) {
            Some(pfn) => pfn,
            None => {
                let start = self.next.checked_add(n - 1)? & !(n - 1);
                let end = start.checked_add(n)?;
                if end > self.total {
                    return None;
                }
                self.next = end;
                Pfn(start)
            }
        };
        self.used += n;
        Some(pfn)
    }

    fn free(&mut self, pfn: Pfn, size: PageSize) {
        self.used -= size.base_frames();
        self.free.entry(size).or_default().push(pfn);
    }

    fn total_frames(&self) -> u64 {
        self.total
    }
    fn used_frames(&self) -> u64 {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_blocks_reuse_and_exhaustion() {
        let mut a = SimpleAllocator::new(1000);
        let f = a.alloc(PageSize::K4).unwrap();
        assert_eq!(f, Pfn(1));
        let big = a.alloc(PageSize::M2);
        assert!(
            big.is_none(),
            "512 aligned frames do not fit in 1000 frames"
        );
        let k64 = a.alloc(PageSize::K64).unwrap();
        assert_eq!(k64.0 % 16, 0);
        a.free(f, PageSize::K4);
        assert_eq!(a.alloc(PageSize::K4), Some(f));
        assert_eq!(a.used_frames(), 17);
    }
}
