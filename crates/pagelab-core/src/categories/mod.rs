//! Data categories (Cașcaval et al., "Multiple Page Size Modeling and Optimization",
//! PACT 2005, §3.3): every reference is attributed to exactly one, from the memory map
//! and the allocation events the recorder captures. The paper's three, after glibc's
//! split of small and large requests, and three more so that nothing is left out:
//! - `static`: the data and BSS segments of the memory map, and writable file
//!   mappings (shared libraries' data);
//! - `small-dynamic`: blocks of `malloc`, `calloc`, `realloc` and `posix_memalign`
//!   under 128 KiB, the heap segment and what `brk` adds to it, anonymous `mmap`s
//!   under 128 KiB (allocators' arenas);
//! - `large-dynamic`: those blocks at 128 KiB and more (glibc serves them by `mmap`),
//!   anonymous `mmap`s of that size, `mremap`'s new extents;
//! - `stack`: the stack segment, and the 64 MiB below it it grows into;
//! - `code`: text segments, and file mappings that can be executed (shared
//!   libraries' code, which the loader maps after the memory map is taken);
//! - `other`: other file mappings, and every address no event names;
//! - categories a user defines ([`rules`]): blocks by call site or size range.
//!
//! Categories are painted over address ranges as the events come, the latest event
//! winning where ranges overlap; a `free` leaves its block's category as it was (its
//! addresses are named again when reused). A reference takes the category of its first
//! byte's address at the time it is made.

mod rules;
mod tally;

pub use rules::{check as check_rules, load as load_rules, parse as parse_rules, UserCategory};
pub use tally::{Attribution, CallSite, CategoryCounts, CategoryTally};

use crate::event::{AllocOp, Event, SegmentKind};
use serde::Serialize;
use std::collections::BTreeMap;

/// A category's number: the built-in ones in [`Category::ALL`]'s order, then the
/// user's in theirs.
pub type CategoryId = u8;

/// User-defined categories a run may have (ids fit a 16-bit mask with the built-in).
pub const MAX_USER: usize = 10;
const _: () = assert!(Category::ALL.len() + MAX_USER <= 16);

/// The size from which an allocation is large (glibc's default mmap threshold).
pub const LARGE_BYTES: u64 = 128 << 10;

/// How far below its segment the stack is taken to grow.
const STACK_GROWTH: u64 = 64 << 20;

/// `MAP_ANONYMOUS` and `MAP_STACK` in an mmap event's flags (the mmap flags sit in
/// bits 8 to 39).
const MAP_ANONYMOUS: u64 = 0x20 << 8;
const MAP_STACK: u64 = 0x20000 << 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    Static,
    SmallDynamic,
    LargeDynamic,
    Stack,
    Code,
    Other,
}

impl Category {
    pub const ALL: [Category; 6] = [
        Category::Static,
        Category::SmallDynamic,
        Category::LargeDynamic,
        Category::Stack,
        Category::Code,
        Category::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::Static => "static",
            Category::SmallDynamic => "small-dynamic",
            Category::LargeDynamic => "large-dynamic",
            Category::Stack => "stack",
            Category::Code => "code",
            Category::Other => "other",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    pub const fn id(self) -> CategoryId {
        self as CategoryId
    }
}

/// The names of the categories, built-in then `rules`', indexed by [`CategoryId`].
pub fn names(rules: &[UserCategory]) -> Vec<String> {
    Category::ALL
        .iter()
        .map(|c| c.name().to_string())
        .chain(rules.iter().map(|r| r.name.clone()))
        .collect()
}

/// The marker by which the recorder names a call site, before its first allocation:
/// `0xHASH fn (file:line) < caller (file:line) < …`, innermost frame first.
pub const CALLSITE_MARKER: u32 = 4;

/// A call-site marker's hash and name (the frames), if it is one.
pub fn callsite_name(marker: &str) -> Option<(u64, &str)> {
    let (hash, frames) = marker.split_once(' ')?;
    let hex = hash.strip_prefix("0x").filter(|h| h.len() == 16)?;
    Some((u64::from_str_radix(hex, 16).ok()?, frames.trim()))
}

/// The function of a call site's innermost frame: what precedes its ` (file:line)`.
pub fn innermost_function(frames: &str) -> &str {
    let first = frames.split(" < ").next().unwrap_or(frames);
    first.rsplit_once(" (").map_or(first, |(f, _)| f).trim()
}

/// The categories of a process's addresses, as the events have painted them.
/// Slots of [`Categorizer`]'s memo of ranges found.
const RANGE_MEMO: usize = 512;

#[derive(Default)]
pub struct Categorizer {
    /// (address space, start) → (end, category): disjoint ranges.
    ranges: BTreeMap<(u16, u64), (u64, CategoryId)>,
    /// Stack segments: (address space, start).
    stacks: Vec<(u16, u64)>,
    /// Ranges found, by the page of the address they were found for (direct-mapped,
    /// [`RANGE_MEMO`] slots, made at the first look-up): (generation, address space,
    /// start, end, category). Every change to the ranges starts a new generation, which
    /// no slot of an older one matches.
    memo: Vec<(u32, u16, u64, u64, CategoryId)>,
    generation: u32,
    /// User-defined categories, tried before the built-in split by size.
    rules: Vec<UserCategory>,
    /// Blocks by call site: (count, bytes, category of the last).
    pub callsites: std::collections::HashMap<u64, (u64, u64, CategoryId)>,
    /// Call sites' names, as the recorder gave them ([`CALLSITE_MARKER`]).
    pub names: std::collections::HashMap<u64, String>,
    /// Allocation events seen (a trace without them has only the memory map's
    /// categories).
    pub allocations: u64,
    pub segments: u64,
}

impl Categorizer {
    /// A categorizer with user-defined categories (checked by [`check_rules`]).
    pub fn with_rules(rules: Vec<UserCategory>) -> Categorizer {
        Categorizer {
            rules,
            ..Categorizer::default()
        }
    }

    /// How many categories there are, built-in and user-defined.
    pub fn count(&self) -> usize {
        Category::ALL.len() + self.rules.len()
    }

    /// The category of a block (of `malloc` and the like, or an anonymous mapping):
    /// the first user rule that matches, else by size.
    fn of_block(&self, size: u64, callsite: u64) -> CategoryId {
        let function = self.names.get(&callsite).map(|n| innermost_function(n));
        if let Some(i) = (self.rules.iter()).position(|r| r.matches(callsite, size, function)) {
            return (Category::ALL.len() + i) as CategoryId;
        }
        if size >= LARGE_BYTES {
            Category::LargeDynamic.id()
        } else {
            Category::SmallDynamic.id()
        }
    }

    fn note_callsite(&mut self, callsite: u64, size: u64, category: CategoryId) {
        if callsite != 0 {
            let e = self.callsites.entry(callsite).or_insert((0, 0, category));
            *e = (e.0 + 1, e.1.saturating_add(size), category);
        }
    }

    /// Take in an event of address space `asid`.
    pub fn on_event(&mut self, asid: u16, event: &Event) {
        match event {
            Event::Segment(s) => {
                self.segments += 1;
                let category = match s.kind {
                    SegmentKind::Text => Category::Code,
                    SegmentKind::Data | SegmentKind::Bss => Category::Static,
                    SegmentKind::Heap => Category::SmallDynamic,
                    SegmentKind::Stack => {
                        if !self.stacks.contains(&(asid, s.start)) {
                            self.stacks.push((asid, s.start));
                        }
                        Category::Stack
                    }
                    SegmentKind::Mmap | SegmentKind::Other => Category::Other,
                };
                self.paint(asid, s.start, s.end, category.id());
            }
            Event::Marker {
                id: CALLSITE_MARKER,
                name,
            } => {
                if let Some((site, text)) = callsite_name(name) {
                    self.names.insert(site, text.to_string());
                }
            }
            Event::Alloc(a) => {
                self.allocations += 1;
                let end = |addr: u64, size: u64| addr.saturating_add(size.max(1));
                match a.op {
                    AllocOp::Malloc
                    | AllocOp::Calloc
                    | AllocOp::Realloc
                    | AllocOp::PosixMemalign
                        if a.addr != 0 =>
                    {
                        let c = self.of_block(a.size, a.callsite);
                        self.note_callsite(a.callsite, a.size, c);
                        self.paint(asid, a.addr, end(a.addr, a.size), c)
                    }
                    AllocOp::Mmap => {
                        let category = if a.flags & MAP_STACK != 0 {
                            // A thread's stack (glibc maps them so).
                            Category::Stack.id()
                        } else if a.flags & MAP_ANONYMOUS != 0 {
                            let c = self.of_block(a.size, a.callsite);
                            self.note_callsite(a.callsite, a.size, c);
                            c
                        } else if a.flags & 4 != 0 {
                            Category::Code.id()
                        } else if a.flags & 2 != 0 {
                            Category::Static.id()
                        } else {
                            Category::Other.id()
                        };
                        self.paint(asid, a.addr, end(a.addr, a.size), category);
                    }
                    AllocOp::Mremap => self.paint(
                        asid,
                        a.addr,
                        end(a.addr, a.size),
                        Category::LargeDynamic.id(),
                    ),
                    AllocOp::Brk if a.addr > a.old_addr => {
                        self.paint(asid, a.old_addr, a.addr, Category::SmallDynamic.id())
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// Whether every address is "other": no memory map, no allocation yet.
    pub fn is_blank(&self) -> bool {
        self.ranges.is_empty() && self.stacks.is_empty()
    }

    /// The category of address `addr` of address space `asid`.
    #[inline]
    pub fn category(&mut self, asid: u16, addr: u64) -> CategoryId {
        if self.is_blank() {
            return Category::Other.id();
        }
        if self.memo.is_empty() {
            self.memo = vec![(u32::MAX, 0, 0, 0, 0); RANGE_MEMO];
        }
        let slot = (addr >> crate::addr::BASE_SHIFT) as usize % RANGE_MEMO;
        let (g, a, start, end, c) = self.memo[slot];
        if g == self.generation && a == asid && start <= addr && addr < end {
            return c;
        }
        match self.range_of(asid, addr) {
            Some((start, end, c)) => {
                self.memo[slot] = (self.generation, asid, start, end, c);
                c
            }
            None => self.outside_ranges(asid, addr),
        }
    }

    /// [`Categorizer::category`] looked up in the ranges, without the memo: for
    /// checks.
    pub fn category_looked_up(&self, asid: u16, addr: u64) -> CategoryId {
        if self.is_blank() {
            return Category::Other.id();
        }
        match self.range_of(asid, addr) {
            Some((_, _, c)) => c,
            None => self.outside_ranges(asid, addr),
        }
    }

    /// The range holding `addr` of `asid`: (start, end, category).
    fn range_of(&self, asid: u16, addr: u64) -> Option<(u64, u64, CategoryId)> {
        self.ranges
            .range(..=(asid, addr))
            .next_back()
            .filter(|(&(a, _), &(end, _))| a == asid && addr < end)
            .map(|(&(_, start), &(end, c))| (start, end, c))
    }

    /// The category of an address in no range: the stack's just below a stack
    /// segment (where it grows), else other.
    fn outside_ranges(&self, asid: u16, addr: u64) -> CategoryId {
        let below_stack = self
            .stacks
            .iter()
            .any(|&(a, start)| a == asid && addr < start && start - addr <= STACK_GROWTH);
        if below_stack {
            Category::Stack.id()
        } else {
            Category::Other.id()
        }
    }

    /// Name `[start, end)` of `asid` as `category`, over whatever it was.
    fn paint(&mut self, asid: u16, start: u64, end: u64, category: CategoryId) {
        if start >= end {
            return;
        }
        // Already so (a small block inside the heap): nothing to split.
        if let Some((&(a, _), &(e, c))) = self.ranges.range(..=(asid, start)).next_back() {
            if a == asid && end <= e && c == category {
                return;
            }
        }
        // Every range found before may change: a new generation (the slots are
        // emptied once in 2^32 - 1, so that none of a generation number reused matches).
        self.generation += 1;
        if self.generation == u32::MAX {
            self.generation = 0;
            self.memo.iter_mut().for_each(|m| m.0 = u32::MAX);
        }
        // Ranges overlapping [start, end): the one starting before it, and those inside.
        let mut cut: Vec<(u64, u64, CategoryId)> = Vec::new();
        if let Some((&(a, s), &(e, c))) = self.ranges.range(..(asid, start)).next_back() {
            if a == asid && e > start {
                cut.push((s, e, c));
            }
        }
        cut.extend(
            self.ranges
                .range((asid, start)..(asid, end))
                .map(|(&(_, s), &(e, c))| (s, e, c)),
        );
        for &(s, e, c) in &cut {
            self.ranges.remove(&(asid, s));
            if s < start {
                self.ranges.insert((asid, s), (start, c));
            }
            if e > end {
                self.ranges.insert((asid, end), (e, c));
            }
        }
        self.ranges.insert((asid, start), (end, category));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Alloc, Segment};

    /// The memo of ranges found gives what a look-up in the ranges gives, whatever
    /// the events between: random allocations, frees, mappings and unmappings over a
    /// few pages, each followed by look-ups of random addresses there.
    #[test]
    fn the_memo_of_ranges_answers_as_the_ranges_do() {
        let mut c = Categorizer::default();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let base = 0x7f00_0000_0000u64;
        c.on_event(0, &seg(base, base + (1 << 24), SegmentKind::Heap));
        for step in 0..3000 {
            let at = base + next() % (1 << 24);
            let size = [24, 4000, 200_000, 3 << 20][(next() % 4) as usize];
            let op = [
                AllocOp::Malloc,
                AllocOp::Free,
                AllocOp::Mmap,
                AllocOp::Munmap,
            ][(next() % 4) as usize];
            c.on_event(0, &alloc(op, at, size, 0));
            for _ in 0..20 {
                let a = base + next() % (1 << 24);
                let asid = (next() % 2) as u16;
                assert_eq!(
                    c.category(asid, a),
                    c.category_looked_up(asid, a),
                    "step {step}: {a:#x} of {asid}"
                );
            }
        }
    }

    fn seg(start: u64, end: u64, kind: SegmentKind) -> Event {
        Event::Segment(Segment {
            start,
            end,
            perms: 3,
            kind,
            name: String::new(),
        })
    }

    fn alloc(op: AllocOp, addr: u64, size: u64, flags: u64) -> Event {
        Event::Alloc(Alloc {
            op,
            addr,
            size,
            old_addr: 0,
            flags,
            callsite: 0,
        })
    }

    #[test]
    fn each_address_takes_the_latest_category_painted_over_it() {
        let mut c = Categorizer::default();
        c.on_event(0, &seg(0x400000, 0x401000, SegmentKind::Text));
        c.on_event(0, &seg(0x600000, 0x602000, SegmentKind::Data));
        c.on_event(0, &seg(0x1000000, 0x1100000, SegmentKind::Heap));
        c.on_event(0, &seg(0x7ff000000, 0x7ff100000, SegmentKind::Stack));
        // A small block in the heap, a large one mapped, a file mapping.
        c.on_event(0, &alloc(AllocOp::Malloc, 0x1000100, 64, 0));
        c.on_event(0, &alloc(AllocOp::Malloc, 0x7f0000000010, 1 << 20, 0));
        c.on_event(0, &alloc(AllocOp::Mmap, 0x7e0000000000, 1 << 20, 1));
        // A library's code and data, mapped from its file.
        c.on_event(0, &alloc(AllocOp::Mmap, 0x7c0000000000, 1 << 16, 5));
        c.on_event(0, &alloc(AllocOp::Mmap, 0x7c0000010000, 1 << 12, 3));
        assert_eq!(c.category(0, 0x7c0000000100), Category::Code.id());
        assert_eq!(c.category(0, 0x7c0000010100), Category::Static.id());
        assert_eq!(c.category(0, 0x400010), Category::Code.id());
        assert_eq!(c.category(0, 0x601000), Category::Static.id());
        assert_eq!(c.category(0, 0x1000140), Category::SmallDynamic.id());
        assert_eq!(c.category(0, 0x1080000), Category::SmallDynamic.id());
        assert_eq!(c.category(0, 0x7f0000080000), Category::LargeDynamic.id());
        assert_eq!(c.category(0, 0x7e0000000100), Category::Other.id());
        assert_eq!(c.category(0, 0x7ff0000f0), Category::Stack.id());
        // Below the stack segment, within its growth: stack; far below: other.
        assert_eq!(c.category(0, 0x7fe000000), Category::Stack.id());
        assert_eq!(c.category(0, 0x100), Category::Other.id());
        // Another address space names nothing of these.
        assert_eq!(c.category(1, 0x400010), Category::Other.id());
        // A large block painted over part of the heap splits it.
        c.on_event(0, &alloc(AllocOp::PosixMemalign, 0x1040000, 256 << 10, 0));
        assert_eq!(c.category(0, 0x1040000), Category::LargeDynamic.id());
        assert_eq!(c.category(0, 0x103ffff), Category::SmallDynamic.id());
        assert_eq!(c.category(0, 0x1080000), Category::SmallDynamic.id());
        assert_eq!(c.category(0, 0x1000140), Category::SmallDynamic.id());
        // An anonymous mmap (MAP_ANONYMOUS in the flags) of 1 MiB is large dynamic.
        c.on_event(
            0,
            &alloc(AllocOp::Mmap, 0x7d0000000000, 1 << 20, 3 | MAP_ANONYMOUS),
        );
        assert_eq!(c.category(0, 0x7d0000000000), Category::LargeDynamic.id());
        assert_eq!((c.allocations, c.segments), (7, 4));
    }

    #[test]
    fn user_rules_name_blocks_before_the_split_by_size() {
        let rules = vec![
            UserCategory {
                name: "table".into(),
                callsites: vec![42],
                ..UserCategory::default()
            },
            UserCategory {
                name: "huge".into(),
                min_size: Some(crate::addr::ByteSize(1 << 30)),
                ..UserCategory::default()
            },
        ];
        let mut c = Categorizer::with_rules(rules.clone());
        assert_eq!(names(&rules)[6..], ["table", "huge"]);
        let mut block = |addr: u64, size: u64, callsite: u64| {
            let mut e = alloc(AllocOp::Malloc, addr, size, 0);
            if let Event::Alloc(a) = &mut e {
                a.callsite = callsite;
            }
            c.on_event(0, &e);
            c.category(0, addr)
        };
        assert_eq!(block(0x10000, 64, 42), 6);
        assert_eq!(block(0x7f0000000000, 1 << 30, 42), 6);
        assert_eq!(block(0x7e0000000000, 1 << 30, 1), 7);
        assert_eq!(
            block(0x7d0000000000, 1 << 20, 1),
            Category::LargeDynamic.id()
        );
        assert_eq!(block(0x20000, 64, 1), Category::SmallDynamic.id());
    }

    #[test]
    fn named_call_sites_are_kept_and_matched_by_function() {
        let name = "0x000000000000002a make_table (table.c:41) < main (main.c:12)";
        assert_eq!(
            callsite_name(name),
            Some((42, "make_table (table.c:41) < main (main.c:12)"))
        );
        assert_eq!(callsite_name("start"), None);
        assert_eq!(callsite_name("0x2a short hash"), None);
        assert_eq!(
            innermost_function("make_table (table.c:41) < main (main.c:12)"),
            "make_table"
        );
        assert_eq!(
            innermost_function("operator new(unsigned long) (libstdc++.so.6)"),
            "operator new(unsigned long)"
        );
        assert_eq!(innermost_function("0x4005a1"), "0x4005a1");
        let rules = vec![UserCategory {
            name: "tables".into(),
            functions: vec!["make_table".into()],
            ..UserCategory::default()
        }];
        let mut c = Categorizer::with_rules(rules);
        c.on_event(
            0,
            &Event::Marker {
                id: CALLSITE_MARKER,
                name: name.into(),
            },
        );
        // A program's own marker 4 that is not a name is left alone.
        c.on_event(
            0,
            &Event::Marker {
                id: CALLSITE_MARKER,
                name: "phase two".into(),
            },
        );
        let mut block = |addr: u64, callsite: u64| {
            let mut e = alloc(AllocOp::Malloc, addr, 64, 0);
            if let Event::Alloc(a) = &mut e {
                a.callsite = callsite;
            }
            c.on_event(0, &e);
            c.category(0, addr)
        };
        assert_eq!(block(0x10000, 42), 6, "named make_table: the rule's");
        assert_eq!(block(0x20000, 7), Category::SmallDynamic.id(), "unnamed");
        assert_eq!(c.names.len(), 1);
    }

    #[test]
    fn a_tally_takes_events_in_order_with_the_references() {
        use crate::event::{AccessKind, Batch, MemRef};
        let load = |a: u64| MemRef::new(a, 8, AccessKind::Load);
        let mut b = Batch::default();
        // Before the mapping the address is other; after it, large dynamic.
        b.refs.push(load(0x7f0000000000));
        b.push_event(alloc(AllocOp::Malloc, 0x7f0000000000, 1 << 20, 0));
        b.refs.push(load(0x7f0000000000));
        b.refs.push(load(0x7f0000001000));
        let mut t = CategoryTally::new(Vec::new());
        t.add(&b);
        let counts = t.finish();
        let of = |name: &str| {
            counts
                .categories
                .iter()
                .find(|c| c.0 == name)
                .unwrap()
                .clone()
        };
        assert_eq!(of("other"), ("other".into(), 1, 1));
        assert_eq!(of("large-dynamic"), ("large-dynamic".into(), 2, 2));
        assert_eq!(counts.note, None);
        // Without allocation events, the note says what is missing.
        let mut t = CategoryTally::new(Vec::new());
        t.add(&Batch {
            refs: vec![load(0x1000)],
            ..Batch::default()
        });
        assert!(t.finish().note.unwrap().contains("no memory map"));
    }
}
