//! The event model every trace reader produces and every consumer reads: memory
//! references, plus the rarer events around them (allocations, memory-map segments,
//! markers, address-space switches), delivered in batches.

use crate::addr::{Asid, VirtAddr};
use serde::{Deserialize, Serialize};

/// What a memory reference does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum AccessKind {
    Load = 0,
    Store = 1,
    /// An instruction fetch.
    Fetch = 2,
    /// A read-modify-write of one location (Valgrind lackey's `M`): one translation, a write.
    Modify = 3,
}

impl AccessKind {
    pub const ALL: [AccessKind; 4] = [
        AccessKind::Load,
        AccessKind::Store,
        AccessKind::Fetch,
        AccessKind::Modify,
    ];
    #[inline]
    pub fn from_code(code: u8) -> AccessKind {
        Self::ALL[(code & 3) as usize]
    }
    pub fn name(self) -> &'static str {
        match self {
            AccessKind::Load => "load",
            AccessKind::Store => "store",
            AccessKind::Fetch => "fetch",
            AccessKind::Modify => "modify",
        }
    }
    #[inline]
    pub fn is_write(self) -> bool {
        matches!(self, AccessKind::Store | AccessKind::Modify)
    }
}

/// One memory reference. `ip` is 0 when the trace does not carry instruction pointers.
/// `asid` is the address space current when the reference was made; in files it is
/// stored as [`Event::SwitchAddressSpace`] events, in memory every reference carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct MemRef {
    pub addr: VirtAddr,
    pub ip: u64,
    pub size: u32,
    pub kind: AccessKind,
    pub asid: Asid,
}

impl Default for AccessKind {
    fn default() -> Self {
        AccessKind::Load
    }
}

/// References of each kind in `refs`, indexed by `AccessKind as usize`.
///
/// A plain `counts[kind] += 1` makes every reference wait for the previous one's store
/// to the same counter (a store-to-load chain of several cycles); here the four counts
/// are 16-bit lanes of one register, emptied every 65,535 references.
pub fn count_kinds(refs: &[MemRef]) -> [u64; 4] {
    let mut counts = [0u64; 4];
    for block in refs.chunks(u16::MAX as usize) {
        let mut lanes = 0u64;
        for r in block {
            lanes += 1u64 << (16 * (r.kind as u64));
        }
        for (k, c) in counts.iter_mut().enumerate() {
            *c += (lanes >> (16 * k)) & 0xffff;
        }
    }
    counts
}

/// [`count_kinds`] over kind codes (the low two bits of each byte, as
/// [`AccessKind::from_code`] reads them).
pub fn count_kind_codes(codes: &[u8]) -> [u64; 4] {
    // Eight codes at a time, as the bytes of a word: each kind's count is kept in the
    // word's eight byte lanes, emptied before a lane can overflow.
    const ONES: u64 = 0x0101_0101_0101_0101;
    let sum_lanes = |lanes: u64| lanes.wrapping_mul(ONES) >> 56;
    let mut counts = [0u64; 4];
    let words = codes.chunks_exact(8);
    let tail = words.remainder();
    let mut words = words.map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")));
    loop {
        // Up to 31 words: a lane then holds at most 31 (the sum of 8 lanes fits a byte).
        let (mut store, mut fetch, mut modify, mut n) = (0u64, 0u64, 0u64, 0);
        for w in words.by_ref().take(31) {
            let (lo, hi) = (w & ONES, (w >> 1) & ONES);
            store += lo & !hi;
            fetch += hi & !lo;
            modify += lo & hi;
            n += 1;
        }
        if n == 0 {
            break;
        }
        counts[1] += sum_lanes(store);
        counts[2] += sum_lanes(fetch);
        counts[3] += sum_lanes(modify);
    }
    for &code in tail {
        counts[(code & 3) as usize] += 1;
    }
    counts[0] = codes.len() as u64 - counts[1..].iter().sum::<u64>();
    counts
}

impl MemRef {
    /// The address of the reference's last byte (its first for size 0), or the top of
    /// the address space for a reference that would run past it.
    #[inline(always)]
    pub fn last_byte(&self) -> VirtAddr {
        VirtAddr(self.addr.0.saturating_add(self.size.max(1) as u64 - 1))
    }
    /// Whether the reference touches more than one base (4 KiB) page, or runs past the
    /// top of the address space (the simulator refuses it).
    #[inline(always)]
    pub fn spans_pages(&self) -> bool {
        let last = self.addr.0.wrapping_add(self.size.max(1) as u64 - 1);
        (last ^ self.addr.0) >> crate::addr::BASE_SHIFT != 0
    }
    pub fn new(addr: u64, size: u32, kind: AccessKind) -> MemRef {
        MemRef {
            addr: VirtAddr(addr),
            ip: 0,
            size,
            kind,
            asid: Asid(0),
        }
    }
}

/// Allocation and address-space operations, with their sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum AllocOp {
    Malloc = 0,
    Calloc = 1,
    Realloc = 2,
    Free = 3,
    Mmap = 4,
    Munmap = 5,
    Brk = 6,
    PosixMemalign = 7,
    Mprotect = 8,
    Mremap = 9,
}

impl AllocOp {
    pub const ALL: [AllocOp; 10] = [
        AllocOp::Malloc,
        AllocOp::Calloc,
        AllocOp::Realloc,
        AllocOp::Free,
        AllocOp::Mmap,
        AllocOp::Munmap,
        AllocOp::Brk,
        AllocOp::PosixMemalign,
        AllocOp::Mprotect,
        AllocOp::Mremap,
    ];
    pub fn from_code(code: u8) -> Option<AllocOp> {
        Self::ALL.get(code as usize).copied()
    }
}

/// One allocation event. Fields an operation does not use are 0:
/// `addr` is the result (the block, the mapping, the new break), `size` the bytes
/// asked for (for `Calloc`, nmemb × size), `old_addr` the block given back or moved
/// (`Free`, `Realloc`, `Munmap`, `Mremap`, the old break for `Brk`), `flags` the
/// protection / flags of mmap-like calls, `callsite` a hash of the calling context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Alloc {
    pub op: AllocOp,
    pub addr: u64,
    pub size: u64,
    pub old_addr: u64,
    pub flags: u64,
    pub callsite: u64,
}

/// What a memory-map segment holds, for attributing references to data categories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum SegmentKind {
    Text = 0,
    Data = 1,
    Bss = 2,
    Heap = 3,
    Stack = 4,
    Mmap = 5,
    Other = 6,
}

impl SegmentKind {
    pub const ALL: [SegmentKind; 7] = [
        SegmentKind::Text,
        SegmentKind::Data,
        SegmentKind::Bss,
        SegmentKind::Heap,
        SegmentKind::Stack,
        SegmentKind::Mmap,
        SegmentKind::Other,
    ];
    pub fn from_code(code: u8) -> Option<SegmentKind> {
        Self::ALL.get(code as usize).copied()
    }
}

/// A memory-map segment `[start, end)` as `/proc/PID/maps` would show it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Segment {
    pub start: u64,
    pub end: u64,
    /// Permission bits: 1 read, 2 write, 4 execute.
    pub perms: u8,
    pub kind: SegmentKind,
    pub name: String,
}

/// Everything in a trace that is not a memory reference.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Alloc(Alloc),
    Segment(Segment),
    /// A named point in the trace (region of interest start/stop, phase change).
    Marker {
        id: u32,
        name: String,
    },
    /// From here on references belong to this address space.
    SwitchAddressSpace {
        asid: Asid,
    },
    /// From here on references are made by this thread (of the same address space).
    Thread {
        tid: u32,
    },
}

/// A batch of a trace: references in order, and events each placed before the
/// reference whose index in `refs` it carries (`refs.len()` places it after the last).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    pub refs: Vec<MemRef>,
    pub events: Vec<(usize, Event)>,
}

impl Batch {
    pub fn clear(&mut self) {
        self.refs.clear();
        self.events.clear();
    }
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty() && self.events.is_empty()
    }
    /// Append an event that comes after every reference already in the batch.
    pub fn push_event(&mut self, event: Event) {
        self.events.push((self.refs.len(), event));
    }

    /// The batch as two: its first `k` references with the events up to them
    /// (those placed right after the `k`th too), and the rest.
    pub fn split_at(&self, k: usize) -> (Batch, Batch) {
        let k = k.min(self.refs.len());
        let head = Batch {
            refs: self.refs[..k].to_vec(),
            events: self.events.iter().filter(|e| e.0 <= k).cloned().collect(),
        };
        let tail = Batch {
            refs: self.refs[k..].to_vec(),
            events: (self.events.iter())
                .filter(|e| e.0 > k)
                .map(|(p, e)| (p - k, e.clone()))
                .collect(),
        };
        (head, tail)
    }
}

/// A part of a trace whose references are all *plain*: in one address space, each
/// within one base page, none with an instruction pointer; events other than a switch
/// of address space are dropped. Kept as a column of addresses, it is what a reader
/// that stores columns (the native format) gives without building [`MemRef`]s, for a
/// loop that needs nothing else (see [`crate::trace::TraceReader::next_plain`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlainBatch {
    pub addrs: Vec<u64>,
    /// The address space of every reference.
    pub asid: Asid,
    /// References by kind, indexed by `AccessKind as usize`.
    pub by_kind: [u64; 4],
}

impl PlainBatch {
    pub fn clear(&mut self) {
        self.addrs.clear();
        self.by_kind = [0; 4];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed count equals a plain one, across the point where the lanes are
    /// emptied (65,535 references) and with one kind filling a whole block.
    #[test]
    fn count_kinds_matches_a_plain_count() {
        let mut refs: Vec<MemRef> = (0..200_003u64)
            .map(|i| {
                MemRef::new(
                    i * 8,
                    8,
                    AccessKind::ALL[((i * i + 3 * i) % 7 % 4) as usize],
                )
            })
            .collect();
        refs.extend((0..70_000).map(|i| MemRef::new(i, 1, AccessKind::Modify)));
        let mut plain = [0u64; 4];
        for r in &refs {
            plain[r.kind as usize] += 1;
        }
        assert_eq!(count_kinds(&refs), plain);
        assert_eq!(count_kinds(&[]), [0; 4]);
        // Codes carry other bits above the kind's two.
        let codes: Vec<u8> = refs.iter().map(|r| r.kind as u8 | 0x5c).collect();
        assert_eq!(count_kind_codes(&codes), plain);
        // Lengths that leave a tail, and runs of one kind longer than a lane holds.
        for n in [0, 1, 7, 8, 9, 247, 248, 249, 1000, 4093] {
            let part = &codes[codes.len() - n..];
            let mut expected = [0u64; 4];
            for &c in part {
                expected[(c & 3) as usize] += 1;
            }
            assert_eq!(count_kind_codes(part), expected, "{n} codes");
        }
    }
}
