//! A level's arrays: the set-associative array of each replacement policy as one type
//! ([`AnyArray`], dispatched by `match`), and the parts of a level a specialized loop
//! borrows ([`Above`]).

use super::*;

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
            pub fn take_victim(&mut self) -> Option<crate::tlb::TlbKey> {
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
            fn for_each_entry(&self, f: &mut dyn FnMut(crate::tlb::TlbKey, Pfn)) {
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
    pub(super) parents: &'h mut [Level],
    pub(super) path: &'h [usize],
    pub(super) first: usize,
    /// The page size of every translation in the run.
    pub(super) base: PageSize,
    /// The range tables a range TLB on the path fetches from.
    pub(super) tables: Option<&'h crate::range::RangeTables>,
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
        if level.range.is_some() {
            return None;
        }
        Some(&level.arrays[level.base_array?])
    }
}

impl<'h> Above<'h> {
    /// After a walk: the range walker fetches the page's range, if it lies in one.
    #[cold]
    fn range_walk(&mut self, asid: Asid, va: VirtAddr) {
        let Some(tables) = self.tables else { return };
        let offset = self.first + 1;
        for &i in self.path {
            if let Some(r) = self.parents[i - offset].range.as_mut() {
                r.walked(asid, va.0 >> crate::addr::BASE_SHIFT, tables);
            }
        }
    }

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
        let mut ranged = false;
        for (pos, &i) in self.path.iter().enumerate() {
            let level = &mut self.parents[i - offset];
            let k = level.base_array.expect("base_parts checked every level");
            if level.arrays[k].touch(vpn, meta) {
                level.hits[shift] += 1;
                missed = pos;
                break;
            }
            if let (Some(r), Some(tables)) = (level.range.as_mut(), self.tables) {
                ranged = true;
                if r.lookup(asid, va.0 >> crate::addr::BASE_SHIFT, tables)
                    .is_some()
                {
                    // The level beside the range unit missed; it is not filled.
                    level.misses[shift] += 1;
                    missed = pos;
                    break;
                }
            }
        }
        if missed == self.path.len() {
            on_walk();
            if ranged {
                self.range_walk(asid, va);
            }
        }
        for &i in self.path[..missed].iter().rev() {
            let level = &mut self.parents[i - offset];
            let k = level.base_array.expect("base_parts checked every level");
            level.misses[shift] += 1;
            level.arrays[k].fill_absent(vpn, meta, Pfn(0), Perms::RW);
        }
    }
}
