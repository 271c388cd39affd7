//! A TLB hierarchy: named levels, each one or more set-associative arrays probed in
//! parallel, each linked to the level a miss goes to next. References start at the
//! first level of their side (data or instruction fetch); a miss climbs the path of
//! parents, and the translation found (or walked) fills every level that missed.
//!
//! The hierarchy counts per level, and per page size of the entries involved: a hit is
//! counted under the size of the entry hit, a miss under the size of the translation
//! that served it (from a parent level or the walk).

use super::{Tlb, TlbStats};
use crate::addr::{Asid, PageSize, Pfn, VirtAddr};
use crate::config::{HierarchyConfig, LevelConfig, Serves, SetAssocConfig, TlbConfig};
use crate::pagetable::{Perms, Translation};
use crate::tlb::replacement::*;
use crate::tlb::set_assoc::tag_meta;
use crate::tlb::SetAssocTlb;
use serde::Serialize;

/// Data references and instruction fetches start at different levels.
pub const DATA: usize = 0;
pub const INSTRUCTION: usize = 1;

/// The most entries a TLB array may have (a guard against typos that would exhaust memory).
pub const MAX_TLB_ENTRIES: usize = 1 << 24;

macro_rules! define_any_array {
    ($($name:literal => $policy:ident,)*) => {
        /// The set-associative array with each replacement policy, as one type, so that
        /// calls dispatch with a `match` the compiler can inline, not a vtable.
        pub enum AnyArray {
            $($policy(SetAssocTlb<$policy>),)*
        }

        /// Replacement policy names the configuration accepts.
        pub const REPLACEMENT_POLICIES: &[&str] = &[$($name),*];

        impl AnyArray {
            /// `field` names the array's place in the configuration, for errors.
            pub fn build(c: &SetAssocConfig, seed: u64, field: &str) -> Result<AnyArray, String> {
                if c.sets == 0 {
                    return Err(format!("{field}.sets: must be at least 1"));
                }
                if c.ways == 0 {
                    return Err(format!("{field}.ways: must be at least 1"));
                }
                if c.page_sizes.is_empty() {
                    return Err(format!("{field}.page_sizes: name at least one page size"));
                }
                match c.sets.checked_mul(c.ways) {
                    Some(n) if n <= MAX_TLB_ENTRIES => {}
                    _ => return Err(format!(
                        "{field}.sets × {field}.ways: {} × {} entries is more than the {MAX_TLB_ENTRIES} a TLB may have",
                        c.sets, c.ways
                    )),
                }
                match c.replacement.as_str() {
                    $($name => Ok(AnyArray::$policy(SetAssocTlb::new(c.sets, c.ways, &c.page_sizes, seed))),)*
                    other => Err(format!(
                        "{field}.replacement: unknown policy {other:?} (known: {})",
                        REPLACEMENT_POLICIES.join(", ")
                    )),
                }
            }
        }

        impl AnyArray {
            /// Hand the array, as its concrete type, to `v`.
            #[inline]
            pub fn visit<V: VisitArray>(&mut self, v: V) -> V::Out {
                match self { $(AnyArray::$policy(t) => v.visit(t),)* }
            }

            /// The concrete array, if its policy is `R`.
            #[inline(always)]
            pub fn as_policy<R: Replacement>(&mut self) -> Option<&mut SetAssocTlb<R>> {
                match self { $(AnyArray::$policy(t) => (t as &mut dyn std::any::Any).downcast_mut(),)* }
            }

            /// [`SetAssocTlb::scans_as`] of the concrete array.
            pub fn scans_as(&self, ways: usize) -> bool {
                match self { $(AnyArray::$policy(t) => t.scans_as(ways),)* }
            }

            /// Whether the concrete array's policy is `R`.
            pub fn is_policy<R: Replacement>(&self) -> bool {
                match self { $(AnyArray::$policy(t) => (t as &dyn std::any::Any).is::<SetAssocTlb<R>>(),)* }
            }

            /// [`SetAssocTlb::touch`] of the concrete array.
            #[inline(always)]
            pub fn touch(&mut self, vpn: u64, meta: u32) -> bool {
                match self { $(AnyArray::$policy(t) => t.touch(vpn, meta),)* }
            }

            /// [`SetAssocTlb::fill_absent`] of the concrete array.
            #[inline(always)]
            pub fn fill_absent(&mut self, vpn: u64, meta: u32, pfn: Pfn, perms: Perms) {
                match self { $(AnyArray::$policy(t) => t.fill_absent(vpn, meta, pfn, perms),)* }
            }

            /// [`SetAssocTlb::track_victims`] of the concrete array.
            pub fn track_victims(&mut self) {
                match self { $(AnyArray::$policy(t) => t.track_victims(),)* }
            }

            /// [`SetAssocTlb::take_victim`] of the concrete array.
            pub fn take_victim(&mut self) -> Option<super::TlbKey> {
                match self { $(AnyArray::$policy(t) => t.take_victim(),)* }
            }

            /// (sets, ways, page sizes, policy name).
            pub fn shape(&self) -> (usize, usize, &[PageSize], &'static str) {
                match self { $(AnyArray::$policy(t) => {
                    let (sets, ways, sizes) = t.shape();
                    (sets, ways, sizes, $name)
                })* }
            }
        }

        impl Tlb for AnyArray {
            #[inline(always)]
            fn lookup(&mut self, asid: Asid, va: VirtAddr) -> Option<Translation> {
                match self { $(AnyArray::$policy(t) => t.lookup(asid, va),)* }
            }
            #[inline(always)]
            fn access(&mut self, asid: Asid, va: VirtAddr) -> Option<PageSize> {
                match self { $(AnyArray::$policy(t) => t.access(asid, va),)* }
            }
            fn fill(&mut self, asid: Asid, va: VirtAddr, tr: Translation) -> Option<PageSize> {
                match self { $(AnyArray::$policy(t) => t.fill(asid, va, tr),)* }
            }
            fn fits(&self, size: PageSize) -> Option<PageSize> {
                match self { $(AnyArray::$policy(t) => t.fits(size),)* }
            }
            fn invalidate_range(&mut self, asid: Asid, start: VirtAddr, len: u64) {
                match self { $(AnyArray::$policy(t) => t.invalidate_range(asid, start, len),)* }
            }
            fn flush_asid(&mut self, asid: Asid) {
                match self { $(AnyArray::$policy(t) => t.flush_asid(asid),)* }
            }
            fn flush_all(&mut self) {
                match self { $(AnyArray::$policy(t) => t.flush_all(),)* }
            }
            fn credit_hits(&mut self, n: u64) {
                match self { $(AnyArray::$policy(t) => t.credit_hits(n),)* }
            }
            fn min_page_bytes(&self) -> u64 {
                match self { $(AnyArray::$policy(t) => t.min_page_bytes(),)* }
            }
            fn stats(&self) -> TlbStats {
                match self { $(AnyArray::$policy(t) => t.stats(),)* }
            }
            fn capacity(&self) -> usize {
                match self { $(AnyArray::$policy(t) => t.capacity(),)* }
            }
            fn peek(&self, asid: Asid, va: VirtAddr) -> Option<Translation> {
                match self { $(AnyArray::$policy(t) => t.peek(asid, va),)* }
            }
            fn for_each_entry(&self, f: &mut dyn FnMut(super::TlbKey, Pfn)) {
                match self { $(AnyArray::$policy(t) => t.for_each_entry(f),)* }
            }
        }
    };
}

crate::for_each_policy!(define_any_array);

/// Code that runs on an array of any replacement policy, compiled for each.
pub trait VisitArray {
    type Out;
    fn visit<R: Replacement>(self, array: &mut SetAssocTlb<R>) -> Self::Out;
}

/// What a specialized loop over one side's references needs besides the array of
/// the first level that base pages fill: that level's counts, and the levels above
/// it. See [`Hierarchy::base_parts`].
pub struct Above<'h> {
    /// The first level's hits and misses by entry size (log2).
    pub hits: &'h mut [u64; 64],
    pub misses: &'h mut [u64; 64],
    /// The parent levels, with the path above the first level as indices into them.
    parents: &'h mut [Level],
    path: &'h [usize],
    first: usize,
    /// The page size of every translation in the run.
    base: PageSize,
}

impl Above<'_> {
    /// Whether the first level has no levels above it.
    pub fn is_empty(&self) -> bool {
        self.path.is_empty()
    }

    /// When exactly one level lies above the first: the array that base pages fill
    /// there.
    pub fn single(&self) -> Option<&AnyArray> {
        let &[i] = self.path else {
            return None;
        };
        let level = &self.parents[i - (self.first + 1)];
        Some(&level.arrays[level.base_array?])
    }
}

impl<'h> Above<'h> {
    /// [`Above::single`] taken out, with that level's hits and misses by entry size
    /// (log2), for a loop to look it up itself; this is then left with no levels.
    #[allow(clippy::type_complexity)]
    pub fn take_single(
        &mut self,
    ) -> Option<(&'h mut AnyArray, &'h mut [u64; 64], &'h mut [u64; 64])> {
        self.single()?;
        let i = self.path[0] - (self.first + 1);
        self.path = &[];
        let Level {
            arrays,
            hits,
            misses,
            base_array,
            ..
        } = &mut std::mem::take(&mut self.parents)[i];
        Some((&mut arrays[(*base_array)?], hits, misses))
    }
}

impl Above<'_> {
    /// After a first-level miss in a run where every translation is a base page: look
    /// the parents up in turn, each in the one array that can hold the page (the
    /// others hold nothing in such a run); fill those that missed, calling `on_walk`
    /// first if none held it. Counts as [`Hierarchy::miss`] does.
    #[inline]
    pub fn miss(&mut self, asid: Asid, va: VirtAddr, on_walk: impl FnOnce()) {
        if self.path.is_empty() {
            return on_walk();
        }
        let offset = self.first + 1;
        let shift = self.base.shift() as usize;
        let vpn = va.0 >> shift;
        let meta = tag_meta(asid, self.base);
        let mut missed = self.path.len();
        for (pos, &i) in self.path.iter().enumerate() {
            let level = &mut self.parents[i - offset];
            let k = level.base_array.expect("base_parts checked every level");
            if level.arrays[k].touch(vpn, meta) {
                level.hits[shift] += 1;
                missed = pos;
                break;
            }
        }
        if missed == self.path.len() {
            on_walk();
        }
        for &i in self.path[..missed].iter().rev() {
            let level = &mut self.parents[i - offset];
            let k = level.base_array.expect("base_parts checked every level");
            level.misses[shift] += 1;
            level.arrays[k].fill_absent(vpn, meta, Pfn(0), Perms::RW);
        }
    }
}

/// One level: its arrays and its counts. Counts by page size are indexed by the
/// size's log2.
pub struct Level {
    pub name: String,
    pub serves: Serves,
    pub hit_cycles: f64,
    arrays: Vec<AnyArray>,
    parent: Option<usize>,
    /// The array that keeps a translation of the base page size at that size, if one
    /// does (see [`Hierarchy::base_parts`]).
    base_array: Option<usize>,
    hits: [u64; 64],
    misses: [u64; 64],
}

impl Level {
    /// Probe the arrays; the size of the entry hit. Counts hits, not misses (the miss
    /// path counts those, once it knows the size of the translation that served them).
    #[inline(always)]
    fn access(&mut self, asid: Asid, va: VirtAddr) -> Option<PageSize> {
        let hit = match &mut self.arrays[..] {
            [one] => one.access(asid, va),
            arrays => arrays.iter_mut().find_map(|a| a.access(asid, va)),
        };
        if let Some(size) = hit {
            self.hits[size.shift() as usize & 63] += 1;
        }
        hit
    }

    fn lookup(&mut self, asid: Asid, va: VirtAddr) -> Option<Translation> {
        for a in self.arrays.iter_mut() {
            if let Some(t) = a.lookup(asid, va) {
                self.hits[t.size.shift() as usize] += 1;
                return Some(t);
            }
        }
        None
    }

    /// Put `t` in the array that holds the largest page size no larger than `t.size`
    /// (the first such array on a tie). The size of the entry made.
    fn fill(&mut self, asid: Asid, va: VirtAddr, t: Translation) -> Option<PageSize> {
        if let [one] = &mut self.arrays[..] {
            return one.fill(asid, va, t);
        }
        let (i, _) = self.fill_array(t.size)?;
        self.arrays[i].fill(asid, va, t)
    }

    /// The array a translation of `size` fills, and the size it keeps it as.
    fn fill_array(&self, size: PageSize) -> Option<(usize, PageSize)> {
        let mut best: Option<(usize, PageSize)> = None;
        for (i, a) in self.arrays.iter().enumerate() {
            if let Some(s) = a.fits(size) {
                if best.map_or(true, |(_, b)| s > b) {
                    best = Some((i, s));
                }
            }
        }
        best
    }

    pub fn entries(&self) -> usize {
        self.arrays.iter().map(|a| a.capacity()).sum()
    }
    pub fn hits(&self) -> u64 {
        self.hits.iter().sum()
    }
    pub fn misses(&self) -> u64 {
        self.misses.iter().sum()
    }
    pub fn evictions(&self) -> u64 {
        self.arrays.iter().map(|a| a.stats().evictions).sum()
    }
    /// (page size, hits, misses) for every size with any.
    pub fn by_size(&self) -> Vec<SizeCounts> {
        (0..64)
            .filter(|&s| self.hits[s] + self.misses[s] > 0)
            .map(|s| SizeCounts {
                size: PageSize::from_shift(s as u32)
                    .expect("counted sizes are page sizes")
                    .to_string(),
                hits: self.hits[s],
                misses: self.misses[s],
            })
            .collect()
    }
    /// The name of the level a miss goes to next.
    pub fn parent_name<'h>(&self, h: &'h Hierarchy) -> Option<&'h str> {
        self.parent.map(|p| h.levels[p].name.as_str())
    }

    /// The arrays as "16×4 4K lru + 8×4 2M lru" (sets × ways).
    pub fn shape(&self) -> String {
        self.arrays
            .iter()
            .map(|a| {
                let (sets, ways, sizes, policy) = a.shape();
                let sizes: Vec<_> = sizes.iter().map(|s| s.to_string()).collect();
                format!("{sets}×{ways} {} {policy}", sizes.join("/"))
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// The smallest page size any array holds, in bytes.
    fn min_page_bytes(&self) -> u64 {
        self.arrays
            .iter()
            .map(|a| a.min_page_bytes())
            .min()
            .unwrap_or(4096)
    }
}

/// Hits and misses of one page size at one level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeCounts {
    pub size: String,
    pub hits: u64,
    pub misses: u64,
}

pub struct Hierarchy {
    levels: Vec<Level>,
    /// The first level of each side (`paths[side][0]`).
    first: [usize; 2],
    /// Level indices from the first level of each side to the last parent.
    paths: [Vec<usize>; 2],
    pub flush_on_switch: bool,
    /// The page size the hierarchy was built for (`Level::base_array` keeps it).
    base_page: PageSize,
}

impl Hierarchy {
    /// Resolve a TLB configuration; every level on each side's path must hold a page
    /// of `base_page` or smaller (or every reference would miss there).
    pub fn build(c: &TlbConfig, base_page: PageSize, seed: u64) -> Result<Hierarchy, String> {
        let (levels, flush_on_switch, prefix) = match c {
            TlbConfig::SetAssociative(s) => {
                let level = LevelConfig {
                    name: "tlb".into(),
                    serves: Serves::All,
                    parent: None,
                    hit_cycles: s.hit_cycles,
                    arrays: vec![SetAssocConfig {
                        hit_cycles: 0.0,
                        ..s.clone()
                    }],
                };
                (vec![level], false, "tlb")
            }
            TlbConfig::Hierarchy(HierarchyConfig {
                flush_on_switch,
                levels,
            }) => (levels.clone(), *flush_on_switch, "tlb.levels"),
        };
        if levels.is_empty() {
            return Err("tlb.levels: name at least one level".into());
        }
        let single = matches!(c, TlbConfig::SetAssociative(_));
        let mut built: Vec<Level> = Vec::with_capacity(levels.len());
        for (i, l) in levels.iter().enumerate() {
            let here = if single {
                prefix.to_string()
            } else {
                format!("{prefix}[{i}]")
            };
            if l.name.is_empty() {
                return Err(format!("{here}.name: give the level a name"));
            }
            if levels[..i].iter().any(|o| o.name == l.name) {
                return Err(format!("{here}.name: {:?} names two levels", l.name));
            }
            if !(l.hit_cycles.is_finite() && l.hit_cycles >= 0.0) {
                return Err(format!(
                    "{here}.hit_cycles: {} must be a finite number ≥ 0",
                    l.hit_cycles
                ));
            }
            if l.arrays.is_empty() {
                return Err(format!("{here}.arrays: give the level at least one array"));
            }
            let parent = match &l.parent {
                None => None,
                Some(p) => match levels.iter().position(|o| &o.name == p) {
                    Some(j) if j > i => Some(j),
                    Some(_) => {
                        return Err(format!(
                        "{here}.parent: {p:?} must be listed after {:?} (levels go child first)",
                        l.name
                    ))
                    }
                    None => {
                        return Err(format!(
                            "{here}.parent: no level is named {p:?} (levels: {})",
                            levels
                                .iter()
                                .map(|o| o.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    }
                },
            };
            let mut arrays = Vec::with_capacity(l.arrays.len());
            for (j, a) in l.arrays.iter().enumerate() {
                let field = if single {
                    prefix.to_string()
                } else {
                    format!("{here}.arrays[{j}]")
                };
                if !single && a.hit_cycles != 0.0 {
                    return Err(format!(
                        "{field}.hit_cycles: give hit cycles to the level ({here}.hit_cycles), not to an array"
                    ));
                }
                arrays.push(AnyArray::build(a, super::array_seed(seed, &field), &field)?);
            }
            let mut level = Level {
                name: l.name.clone(),
                serves: l.serves,
                hit_cycles: l.hit_cycles,
                arrays,
                parent,
                base_array: None,
                hits: [0; 64],
                misses: [0; 64],
            };
            level.base_array = level
                .fill_array(base_page)
                .and_then(|(k, size)| (size == base_page).then_some(k));
            built.push(level);
        }
        let mut paths: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
        for (side, what) in [
            (DATA, "data references"),
            (INSTRUCTION, "instruction fetches"),
        ] {
            let Some(first) = built.iter().position(|l| l.serves.covers(side)) else {
                return Err(format!(
                    "tlb.levels: no level serves {what} (set serves = \"all\" on one)"
                ));
            };
            let mut at = Some(first);
            while let Some(i) = at {
                let l = &built[i];
                if !l.serves.covers(side) {
                    return Err(format!(
                        "{prefix}[{i}].serves: {:?} is on the path of {what} but serves {:?}",
                        l.name, l.serves
                    ));
                }
                if l.min_page_bytes() > base_page.bytes() {
                    return Err(format!(
                        "{}.page_sizes: level {:?} holds no page of {base_page} (base_page) or less, \
                         so every reference would miss there",
                        if single { prefix.to_string() } else { format!("{prefix}[{i}].arrays") },
                        l.name
                    ));
                }
                paths[side].push(i);
                at = l.parent;
            }
        }
        if let Some(l) = built
            .iter()
            .enumerate()
            .find(|(i, _)| !paths[DATA].contains(i) && !paths[INSTRUCTION].contains(i))
        {
            return Err(format!(
                "{prefix}[{}]: level {:?} is on no path: no reference reaches it (make it a parent, or list it first for its side)",
                l.0, l.1.name
            ));
        }
        Ok(Hierarchy {
            levels: built,
            first: [paths[DATA][0], paths[INSTRUCTION][0]],
            paths,
            flush_on_switch,
            base_page,
        })
    }

    /// For a run where every translation is a page of size `base`: the parts of the
    /// hierarchy that a loop over the references of `side` touches, when every level on
    /// the path keeps such a translation at size `base` (the first level in the one
    /// array that would take it; other arrays stay empty). `None` when some level
    /// would keep it otherwise (as smaller pages, say): use the general path.
    pub fn base_parts(
        &mut self,
        side: usize,
        base: PageSize,
    ) -> Option<(&mut AnyArray, Above<'_>)> {
        let path = &self.paths[side & 1];
        let first = path[0];
        let k = self.levels[first].base_array?;
        if base != self.base_page || path.iter().any(|&i| self.levels[i].base_array.is_none()) {
            return None;
        }
        let (lower, parents) = self.levels.split_at_mut(first + 1);
        let Level {
            arrays,
            hits,
            misses,
            ..
        } = &mut lower[first];
        Some((
            &mut arrays[k],
            Above {
                hits,
                misses,
                parents,
                path: &path[1..],
                first,
                base,
            },
        ))
    }

    /// Whether data references and instruction fetches start at different levels.
    pub fn split(&self) -> bool {
        self.first[DATA] != self.first[INSTRUCTION]
    }

    /// Whether a miss of `side`'s first level goes on to the other side's first level
    /// (as an ITLB miss reaches a unified TLB that is the data side's first level):
    /// then such a miss changes the other side's first level.
    pub fn miss_reaches_other_first(&self, side: usize) -> bool {
        let other = self.first[(side & 1) ^ 1];
        self.split() && self.paths[side & 1][1..].contains(&other)
    }

    /// Probe the first level of `side`: the size of the entry hit.
    #[inline(always)]
    pub fn access(&mut self, side: usize, asid: Asid, va: VirtAddr) -> Option<PageSize> {
        let first = self.first[side & 1];
        self.levels[first].access(asid, va)
    }

    /// Translate `va` for `side` through the whole hierarchy, asking `walk` when no
    /// level holds it (the slow, complete path: tests and tools).
    pub fn translate<E>(
        &mut self,
        side: usize,
        asid: Asid,
        va: VirtAddr,
        walk: impl FnOnce() -> Result<Translation, E>,
    ) -> Result<Translation, E> {
        let first = self.first[side & 1];
        if let Some(t) = self.levels[first].lookup(asid, va) {
            return Ok(t);
        }
        self.miss_translation(side, asid, va, walk).map(|(t, _)| t)
    }

    /// After the first level of `side` missed: climb the parents; if none hits, ask
    /// `walk` for the translation. Fill every level that missed and count its miss.
    /// Returns the size of the entry made in the first level (`None` if it holds no
    /// size small enough).
    #[inline]
    pub fn miss<E>(
        &mut self,
        side: usize,
        asid: Asid,
        va: VirtAddr,
        walk: impl FnOnce() -> Result<Translation, E>,
    ) -> Result<Option<PageSize>, E> {
        self.miss_translation(side, asid, va, walk).map(|(_, s)| s)
    }

    /// [`Hierarchy::miss`], with the translation found: the one `va` reaches, as the
    /// first level's entry holds it (a piece of a larger page if that is all it holds).
    fn miss_translation<E>(
        &mut self,
        side: usize,
        asid: Asid,
        va: VirtAddr,
        walk: impl FnOnce() -> Result<Translation, E>,
    ) -> Result<(Translation, Option<PageSize>), E> {
        let path = &self.paths[side];
        let mut found = None;
        for (pos, &i) in path.iter().enumerate().skip(1) {
            if let Some(t) = self.levels[i].lookup(asid, va) {
                found = Some((pos, t));
                break;
            }
        }
        let (missed, t) = match found {
            Some(f) => f,
            None => (path.len(), walk()?),
        };
        let mut filled = None;
        for &i in path[..missed].iter().rev() {
            let level = &mut self.levels[i];
            level.misses[t.size.shift() as usize] += 1;
            filled = level.fill(asid, va, t);
        }
        Ok((t, filled))
    }

    /// Count `n` hits on entries of `size` in the first level of `side` that the
    /// machine established without a lookup.
    pub fn credit(&mut self, side: usize, size_shift: usize, n: u64) {
        let first = self.paths[side][0];
        self.levels[first].hits[size_shift] += n;
    }

    /// Have the last levels (those whose misses walk) record what their fills evict,
    /// for [`Hierarchy::walking_level_fill`].
    pub fn track_walking_victims(&mut self) {
        for side in [DATA, INSTRUCTION] {
            let last = *self.paths[side].last().expect("every path has a level");
            for a in &mut self.levels[last].arrays {
                a.track_victims();
            }
        }
    }

    /// After a miss of `side` walked to `t`: the entry the last level (the one whose
    /// misses walk) made for it, as (first address, size), and the entry that fill
    /// evicted, if any.
    pub fn walking_level_fill(
        &mut self,
        side: usize,
        va: VirtAddr,
        t: Translation,
    ) -> (Option<(VirtAddr, PageSize)>, Option<super::TlbKey>) {
        let last = *self.paths[side & 1].last().expect("every path has a level");
        let level = &mut self.levels[last];
        let Some((k, size)) = level.fill_array(t.size) else {
            return (None, None);
        };
        let victim = level.arrays[k].take_victim();
        (Some((va.vpn(size).base(size), size)), victim)
    }

    /// The translation the first level of `side` holds for `va`, changing nothing.
    pub fn peek(&self, side: usize, asid: Asid, va: VirtAddr) -> Option<Translation> {
        let first = self.first[side & 1];
        self.levels[first]
            .arrays
            .iter()
            .find_map(|a| a.peek(asid, va))
    }

    /// Call `f` with every entry of the last level on the path of `side` (the level
    /// whose misses walk the page table).
    pub fn for_each_last_entry(&self, side: usize, f: &mut dyn FnMut(super::TlbKey, Pfn)) {
        let last = *self.paths[side & 1].last().expect("every path has a level");
        for a in &self.levels[last].arrays {
            a.for_each_entry(f);
        }
    }

    /// Call `f` with the level's name and every entry of every level.
    pub fn for_each_entry(&self, f: &mut dyn FnMut(&str, super::TlbKey, Pfn)) {
        for l in &self.levels {
            for a in &l.arrays {
                a.for_each_entry(&mut |k, pfn| f(&l.name, k, pfn));
            }
        }
    }

    /// The page sizes the last level on the path of `side` holds, ascending.
    pub fn last_level_sizes(&self, side: usize) -> Vec<PageSize> {
        let last = *self.paths[side & 1].last().expect("every path has a level");
        let mut sizes: Vec<PageSize> = self.levels[last]
            .arrays
            .iter()
            .flat_map(|a| a.shape().2.to_vec())
            .collect();
        sizes.sort();
        sizes.dedup();
        sizes
    }

    /// Drop every entry of `asid` overlapping `[start, start + len)`, at every level.
    pub fn invalidate_range(&mut self, asid: Asid, start: VirtAddr, len: u64) {
        for a in self.levels.iter_mut().flat_map(|l| l.arrays.iter_mut()) {
            a.invalidate_range(asid, start, len);
        }
    }
    pub fn flush_asid(&mut self, asid: Asid) {
        for a in self.levels.iter_mut().flat_map(|l| l.arrays.iter_mut()) {
            a.flush_asid(asid);
        }
    }
    pub fn flush_all(&mut self) {
        for a in self.levels.iter_mut().flat_map(|l| l.arrays.iter_mut()) {
            a.flush_all();
        }
    }

    /// The smallest page any first level holds, in bytes: references within one such
    /// page reach the same entry.
    pub fn min_first_page_bytes(&self) -> u64 {
        self.paths
            .iter()
            .map(|p| self.levels[p[0]].min_page_bytes())
            .min()
            .unwrap_or(4096)
    }

    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Names of the levels a reference of `side` passes through.
    pub fn path_names(&self, side: usize) -> Vec<&str> {
        self.paths[side]
            .iter()
            .map(|&i| self.levels[i].name.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Pfn;
    use crate::pagetable::Perms;

    fn level(
        name: &str,
        serves: Serves,
        parent: Option<&str>,
        sets: usize,
        ways: usize,
    ) -> LevelConfig {
        LevelConfig {
            name: name.into(),
            serves,
            parent: parent.map(Into::into),
            hit_cycles: 0.0,
            arrays: vec![SetAssocConfig {
                sets,
                ways,
                ..SetAssocConfig::default()
            }],
        }
    }

    fn hierarchy(levels: Vec<LevelConfig>) -> Result<Hierarchy, String> {
        Hierarchy::build(
            &TlbConfig::Hierarchy(HierarchyConfig {
                flush_on_switch: false,
                levels,
            }),
            PageSize::K4,
            0,
        )
    }

    fn t4k(pfn: u64) -> Translation {
        Translation {
            pfn: Pfn(pfn),
            size: PageSize::K4,
            perms: Perms::RW,
        }
    }

    #[test]
    fn split_l1s_share_a_unified_l2() {
        let mut h = hierarchy(vec![
            level("l1d", Serves::Data, Some("l2"), 1, 2),
            level("l1i", Serves::Instruction, Some("l2"), 1, 2),
            level("l2", Serves::All, None, 1, 8),
        ])
        .unwrap();
        assert_eq!(h.path_names(DATA), ["l1d", "l2"]);
        assert_eq!(h.path_names(INSTRUCTION), ["l1i", "l2"]);
        let (asid, va) = (Asid(0), VirtAddr(0x5000));
        let walks = std::cell::Cell::new(0);
        let walk = || -> Result<Translation, ()> {
            walks.set(walks.get() + 1);
            Ok(t4k(9))
        };
        // Data miss: walks, fills l1d and l2.
        assert_eq!(h.access(DATA, asid, va), None);
        assert_eq!(h.miss(DATA, asid, va, walk), Ok(Some(PageSize::K4)));
        // The fetch of the same page misses l1i but hits l2: no walk.
        assert_eq!(h.access(INSTRUCTION, asid, va), None);
        assert_eq!(h.miss(INSTRUCTION, asid, va, walk), Ok(Some(PageSize::K4)));
        assert_eq!(walks.get(), 1);
        assert_eq!(h.access(INSTRUCTION, asid, va), Some(PageSize::K4));
        let l = h.levels();
        assert_eq!((l[0].hits(), l[0].misses()), (0, 1));
        assert_eq!((l[1].hits(), l[1].misses()), (1, 1));
        assert_eq!((l[2].hits(), l[2].misses()), (1, 1));
        // Invalidation reaches every level.
        h.invalidate_range(asid, va, 4096);
        assert_eq!(h.access(INSTRUCTION, asid, va), None);
        assert_eq!(h.miss(INSTRUCTION, asid, va, walk), Ok(Some(PageSize::K4)));
        assert_eq!(walks.get(), 2);
    }

    #[test]
    fn configuration_errors_name_the_field() {
        let cases: Vec<(Vec<LevelConfig>, &str)> = vec![
            (vec![], "tlb.levels"),
            (
                vec![
                    level("l2", Serves::All, None, 1, 8),
                    level("l1", Serves::All, Some("l2"), 1, 2),
                ],
                "tlb.levels[1].parent",
            ),
            (
                vec![level("l1", Serves::All, Some("l3"), 1, 2)],
                "no level is named \"l3\"",
            ),
            (
                vec![level("l1d", Serves::Data, None, 1, 2)],
                "no level serves instruction fetches",
            ),
            (
                vec![
                    level("l1i", Serves::Instruction, Some("l2"), 1, 2),
                    level("l1d", Serves::Data, None, 1, 2),
                    level("l2", Serves::Data, None, 1, 2),
                ],
                "tlb.levels[2].serves",
            ),
            (
                vec![
                    level("a", Serves::All, None, 1, 2),
                    level("b", Serves::All, None, 1, 2),
                ],
                "tlb.levels[1]: level \"b\" is on no path",
            ),
            (
                vec![level("a", Serves::All, None, 0, 2)],
                "tlb.levels[0].arrays[0].sets",
            ),
            (
                vec![
                    level("a", Serves::All, None, 1, 2),
                    level("a", Serves::All, None, 1, 2),
                ],
                "names two levels",
            ),
        ];
        for (levels, want) in cases {
            let e = hierarchy(levels).err().unwrap();
            assert!(e.contains(want), "{e} (wanted {want})");
        }
        let mut big = level("l1", Serves::All, None, 1, 2);
        big.arrays[0].page_sizes = vec![PageSize::M2];
        let e = hierarchy(vec![big]).err().unwrap();
        assert!(e.contains("tlb.levels[0].arrays.page_sizes"), "{e}");
    }

    #[test]
    fn a_superpage_fills_the_array_of_its_size() {
        let mut l1 = level("l1", Serves::All, None, 1, 2);
        l1.arrays.push(SetAssocConfig {
            sets: 1,
            ways: 2,
            page_sizes: vec![PageSize::M2],
            ..SetAssocConfig::default()
        });
        let mut h = hierarchy(vec![l1]).unwrap();
        let huge = Translation {
            pfn: Pfn(512),
            size: PageSize::M2,
            perms: Perms::RW,
        };
        let va = VirtAddr(0x20_1234);
        assert_eq!(
            h.miss(DATA, Asid(0), va, || Ok::<_, ()>(huge)),
            Ok(Some(PageSize::M2))
        );
        assert_eq!(
            h.access(DATA, Asid(0), VirtAddr(0x3f_0000)),
            Some(PageSize::M2)
        );
        let sizes = h.levels()[0].by_size();
        assert_eq!(sizes.len(), 1);
        assert_eq!(
            (sizes[0].size.as_str(), sizes[0].hits, sizes[0].misses),
            ("2M", 1, 1)
        );
    }
}
