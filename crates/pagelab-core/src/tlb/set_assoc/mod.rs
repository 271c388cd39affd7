//! A set-associative TLB array: `sets × ways` entries, one or more page sizes probed
//! in turn (a fully associative TLB is one set). The set of a page is its page number
//! modulo the number of sets, which need not be a power of two. Victims are chosen by
//! the replacement policy `R`.

mod scan;
#[cfg(test)]
mod tests;
pub use scan::Scan;

use super::fingerprint::{self, Fingerprints};
use super::way_index::WayIndex;
use super::{sub_page, Tlb, TlbKey, TlbStats};
use crate::addr::{Asid, PageSize, Pfn, VirtAddr, Vpn};
use crate::pagetable::{Perms, Translation};
use crate::replacement::{PackedPlru, Replacement, SetPolicy, TreePlru};

/// Entries are kept as parallel arrays so that a set's tags are contiguous:
/// `tags[i]` is the page number, `meta[i]` packs the address space and page size
/// (0 marks an invalid entry; a page size's log2 is never 0).
pub struct SetAssocTlb<R: Replacement> {
    sets: usize,
    ways: usize,
    /// `sets - 1` when sets is a power of two, for a mask instead of a division.
    mask: Option<u64>,
    /// Page sizes held, largest first (fills use the largest that fits).
    sizes: Vec<PageSize>,
    tags: Vec<u64>,
    meta: Vec<u32>,
    pfns: Vec<Pfn>,
    perms: Vec<Perms>,
    policy: R,
    stats: TlbStats,
    /// Whether the array holds several page sizes; then `live` counts its valid
    /// entries by size (log2), and lookups skip the sizes it holds none of.
    multi: bool,
    live: [u32; 64],
    /// Whether fills record what they evict (only for a policy that follows the TLB:
    /// off, the hot path pays one predictable branch).
    track_victims: bool,
    /// The entry the last fill evicted, (tag, meta), if it evicted one.
    victim: Option<(u64, u32)>,
    /// Bytes that find a way without reading every tag, for an array of one set
    /// and a few dozen ways (see [`Fingerprints`]).
    prints: Option<Fingerprints>,
    /// Where each valid entry sits, for a wider array of one set (see [`WayIndex`]).
    index: Option<WayIndex>,
    /// The low 32 bits of each tag, for an array of 12 ways (empty otherwise): a set
    /// is searched four ways at a time in them (see [`fingerprint::equal_lows`]).
    lows: Vec<u32>,
    /// Valid entries: once every entry is, a fill needs no search for a free way.
    valid: usize,
}

/// The tag a page of `size` in `asid` is held under, with its page number (0 marks
/// an invalid entry; a page size's log2 is never 0).
#[inline(always)]
pub fn tag_meta(asid: Asid, size: PageSize) -> u32 {
    (asid.0 as u32) << 8 | size.shift()
}
use tag_meta as meta_of;

impl<R: Replacement> SetAssocTlb<R> {
    /// `sizes` must be non-empty; `sets` and `ways` at least 1 (checked by the config).
    pub fn new(sets: usize, ways: usize, sizes: &[PageSize], seed: u64) -> Self {
        assert!(sets > 0 && ways > 0 && !sizes.is_empty());
        let mut sizes = sizes.to_vec();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        sizes.dedup();
        let n = sets * ways;
        SetAssocTlb {
            sets,
            ways,
            mask: sets.is_power_of_two().then_some(sets as u64 - 1),
            tags: vec![0; n],
            meta: vec![0; n],
            pfns: vec![Pfn(0); n],
            perms: vec![Perms::NONE; n],
            policy: R::new(sets, ways, seed),
            stats: TlbStats::default(),
            multi: sizes.len() > 1,
            live: [0; 64],
            track_victims: false,
            victim: None,
            prints: (sets == 1 && (fingerprint::MIN_WAYS..=fingerprint::MAX_WAYS).contains(&ways))
                .then(|| Fingerprints::new(ways)),
            index: (sets == 1 && ways > fingerprint::MAX_WAYS).then(|| WayIndex::new(ways)),
            lows: if ways == 12 { vec![0; n] } else { Vec::new() },
            valid: 0,
            sizes,
        }
    }

    pub fn ways(&self) -> usize {
        self.ways
    }

    /// (sets, ways, page sizes held, largest first).
    pub fn shape(&self) -> (usize, usize, &[PageSize]) {
        (self.sets, self.ways, &self.sizes)
    }

    #[inline(always)]
    fn set_of(&self, vpn: Vpn) -> usize {
        match self.mask {
            Some(m) => (vpn.0 & m) as usize,
            None => (vpn.0 % self.sets as u64) as usize,
        }
    }

    /// The way of `set` holding (vpn, meta), if any.
    #[inline(always)]
    fn find(&self, set: usize, vpn: u64, meta: u32) -> Option<usize> {
        // The usual associativities get a loop of known length, unrolled.
        match self.ways {
            4 => self.find_in::<4>(set, vpn, meta),
            8 => self.find_in::<8>(set, vpn, meta),
            12 => {
                let base = set * 12;
                let lows: &[u32; 12] = self.lows[base..base + 12].try_into().expect("12 ways");
                let tags = &self.tags[base..base + 12];
                Self::search_lows(lows, tags, &self.meta[base..base + 12], vpn, meta)
            }
            _ => {
                if let Some(prints) = &self.prints {
                    return prints.find(vpn, meta, &self.tags, &self.meta);
                }
                if let Some(index) = &self.index {
                    return index.find(vpn, meta, &self.tags, &self.meta);
                }
                let base = set * self.ways;
                let tags = &self.tags[base..base + self.ways];
                let metas = &self.meta[base..base + tags.len()];
                Self::search(tags, metas, vpn, meta)
            }
        }
    }

    #[inline(always)]
    fn find_in<const W: usize>(&self, set: usize, vpn: u64, meta: u32) -> Option<usize> {
        let base = set * W;
        let tags: &[u64; W] = self.tags[base..base + W].try_into().expect("W ways");
        let metas: &[u32; W] = self.meta[base..base + W].try_into().expect("W ways");
        Self::search(tags, metas, vpn, meta)
    }

    /// Which way holds (vpn, meta), found without a branch on which way it is (that is
    /// unpredictable), only on whether some way holds the page number. A page is held
    /// at most once per size, so at most one way matches.
    #[inline(always)]
    fn search(tags: &[u64], metas: &[u32], vpn: u64, meta: u32) -> Option<usize> {
        if tags.len() > 64 {
            let mut hit = usize::MAX;
            for w in 0..tags.len().min(metas.len()) {
                let matches = (tags[w] == vpn) & (metas[w] == meta);
                hit = if matches { w } else { hit };
            }
            return (hit != usize::MAX).then_some(hit);
        }
        // The ways whose page number matches, as bits; then the first of them whose
        // tag matches too (almost always the only one).
        let mut same = 0u64;
        for (w, &tag) in tags.iter().enumerate() {
            same |= ((tag == vpn) as u64) << w;
        }
        while same != 0 {
            let w = same.trailing_zeros() as usize;
            if metas.get(w) == Some(&meta) {
                return Some(w);
            }
            same &= same - 1;
        }
        None
    }

    /// [`SetAssocTlb::search`] for a set of 12 ways, candidates first by the low bits.
    #[inline(always)]
    fn search_lows(
        lows: &[u32; 12],
        tags: &[u64],
        metas: &[u32],
        vpn: u64,
        meta: u32,
    ) -> Option<usize> {
        let candidates = fingerprint::equal_lows(lows, vpn) as u64;
        fingerprint::held_among(candidates, tags, metas, vpn, meta)
    }

    /// The tag a page of `size` in `asid` is held under (with its page number).
    #[inline(always)]
    pub fn tag_meta(asid: Asid, size: PageSize) -> u32 {
        meta_of(asid, size)
    }

    /// Look page `vpn` (tagged `meta`, see [`SetAssocTlb::tag_meta`]) up and touch it
    /// on a hit, as [`Tlb::access`] does but without counting: for loops that count
    /// for themselves and [`SetAssocTlb::count`] at the end.
    #[inline(always)]
    pub fn touch(&mut self, vpn: u64, meta: u32) -> bool {
        self.touch_in::<0>(vpn, meta)
    }

    /// [`SetAssocTlb::touch`] for an array of `W` ways (0: any number), so that a
    /// loop over many references decides the search once, not per reference.
    #[inline(always)]
    pub fn touch_in<const W: usize>(&mut self, vpn: u64, meta: u32) -> bool {
        let set = self.set_of(Vpn(vpn));
        let found = if W != 0 && W == self.ways {
            self.find_in::<W>(set, vpn, meta)
        } else {
            self.find(set, vpn, meta)
        };
        match found {
            Some(way) => {
                self.policy.hit(set, way);
                true
            }
            None => false,
        }
    }

    /// Add hits and misses established by a loop over [`SetAssocTlb::touch`].
    pub fn count(&mut self, hits: u64, misses: u64) {
        self.stats.add(hits, misses);
    }

    #[inline(always)]
    fn probe(&mut self, asid: Asid, va: VirtAddr, size: PageSize) -> Option<Translation> {
        let i = self.hit_index(asid, va, size)?;
        Some(Translation {
            pfn: self.pfns[i],
            size,
            perms: self.perms[i],
        })
    }

    /// Find and touch the entry of `va` at `size`; its index into the arrays.
    #[inline(always)]
    fn hit_index(&mut self, asid: Asid, va: VirtAddr, size: PageSize) -> Option<usize> {
        let vpn = va.vpn(size);
        let set = self.set_of(vpn);
        let way = self.find(set, vpn.0, meta_of(asid, size))?;
        self.policy.hit(set, way);
        Some(set * self.ways + way)
    }

    /// Fill page `vpn` (tagged `meta`), known not to be held: into the first free
    /// way of its set, else into the policy's victim (an eviction).
    #[inline(always)]
    pub fn fill_absent(&mut self, vpn: u64, meta: u32, pfn: Pfn, perms: Perms) {
        let set = self.set_of(Vpn(vpn));
        let free = match self.ways {
            _ if self.valid == self.tags.len() => None,
            4 => Self::first_free(self.set_metas::<4>(set)),
            8 => Self::first_free(self.set_metas::<8>(set)),
            12 => Self::first_free(self.set_metas::<12>(set)),
            ways => Self::first_free(&self.meta[set * ways..(set + 1) * ways]),
        };
        let way = match free {
            Some(way) => {
                if self.track_victims {
                    self.victim = None;
                }
                way
            }
            None => {
                self.stats.evictions += 1;
                let way = self.policy.victim(set);
                if self.track_victims {
                    let i = set * self.ways + way;
                    self.victim = Some((self.tags[i], self.meta[i]));
                }
                way
            }
        };
        self.place(set, way, vpn, meta, pfn, perms);
    }

    #[inline(always)]
    fn set_metas<const W: usize>(&self, set: usize) -> &[u32; W] {
        self.meta[set * W..set * W + W].try_into().expect("W ways")
    }

    /// The first invalid way, without a branch per way.
    #[inline(always)]
    fn first_free<M: AsRef<[u32]> + ?Sized>(metas: &M) -> Option<usize> {
        let mut free = usize::MAX;
        for (w, &m) in metas.as_ref().iter().enumerate().rev() {
            free = if m == 0 { w } else { free };
        }
        (free != usize::MAX).then_some(free)
    }

    #[inline(always)]
    fn place(&mut self, set: usize, way: usize, vpn: u64, meta: u32, pfn: Pfn, perms: Perms) {
        let i = set * self.ways + way;
        self.valid += (self.meta[i] == 0) as usize;
        if self.multi {
            Self::relive(&mut self.live, self.meta[i], meta);
        }
        if let Some(prints) = self.prints.as_mut() {
            prints.set(i, vpn, meta);
        }
        if let Some(low) = self.lows.get_mut(i) {
            *low = vpn as u32;
        }
        if let Some(index) = self.index.as_mut() {
            if self.meta[i] != 0 {
                index.remove(i, self.tags[i], self.meta[i], &self.tags, &self.meta);
            }
            index.insert(i, vpn, meta);
        }
        debug_assert!(self.index.as_ref().is_none_or(|ix| ix.len() == self.valid));
        self.tags[i] = vpn;
        self.meta[i] = meta;
        self.pfns[i] = pfn;
        self.perms[i] = perms;
        self.policy.fill(set, way);
    }

    /// Count an entry tagged `old` (0: invalid) replaced by one tagged `new`, in the
    /// live entries by size. Most fills replace an entry of the same size: then
    /// nothing is written, so that fills in a row do not wait on each other's
    /// updates of one counter.
    #[inline(always)]
    fn relive(live: &mut [u32; 64], old: u32, new: u32) {
        let (old, new) = ((old & 63) as usize, (new & 63) as usize);
        if old != new {
            if old != 0 {
                live[old] -= 1;
            }
            live[new] += 1;
        }
    }

    /// The array borrowed apart for a loop over many references of one page size,
    /// when it has `W` ways, a power-of-two number of sets and does not record
    /// victims (`None` otherwise). The loop then keeps the array's storage in registers
    /// instead of reloading it from the array after every store. Evictions are added
    /// when the scan is dropped.
    #[inline(always)]
    pub fn scan<const W: usize>(&mut self) -> Option<Scan<'_, R, W>> {
        self.scan_with::<W, _>(Some)
    }

    /// [`SetAssocTlb::scan`] with the policy as `lend` lends it to the loop.
    #[inline(always)]
    fn scan_with<'a, const W: usize, P: SetPolicy>(
        &'a mut self,
        lend: impl FnOnce(&'a mut R) -> Option<P>,
    ) -> Option<Scan<'a, R, W, P>> {
        let mask = self.mask?;
        if !self.scans_as(W) {
            return None;
        }
        Some(Scan {
            mask,
            valid: &mut self.valid,
            tags: &mut self.tags,
            metas: &mut self.meta,
            policy: lend(&mut self.policy)?,
            lows: &mut self.lows,
            live: self.multi.then_some(&mut self.live),
            stats: &mut self.stats,
            evictions: 0,
            _policy: std::marker::PhantomData,
        })
    }

    /// Whether [`SetAssocTlb::scan`] gives the array borrowed apart as `ways` ways.
    pub fn scans_as(&self, ways: usize) -> bool {
        let plain = self.mask.is_some()
            && !self.track_victims
            && self.index.is_none()
            && self.prints.is_none();
        ways != 0 && self.ways == ways && plain
    }

    /// Record, from now on, what each fill evicts (for [`SetAssocTlb::take_victim`]).
    pub fn track_victims(&mut self) {
        self.track_victims = true;
    }

    /// The entry the last fill of an absent page evicted, if it evicted one (once;
    /// only while tracking victims).
    pub fn take_victim(&mut self) -> Option<TlbKey> {
        let (tag, meta) = self.victim.take()?;
        Some(TlbKey {
            vpn: Vpn(tag),
            asid: Asid((meta >> 8) as u16),
            size: PageSize::from_shift(meta & 0xff).expect("valid entries hold a page size"),
        })
    }

    /// The key of entry `i`, if it is valid.
    fn key(&self, i: usize) -> Option<TlbKey> {
        let meta = self.meta[i];
        (meta != 0).then(|| TlbKey {
            vpn: Vpn(self.tags[i]),
            asid: Asid((meta >> 8) as u16),
            size: PageSize::from_shift(meta & 0xff).expect("valid entries hold a page size"),
        })
    }

    fn drop_where(&mut self, pred: impl Fn(TlbKey) -> bool) {
        for i in 0..self.tags.len() {
            let Some(key) = self.key(i) else {
                continue;
            };
            if pred(key) {
                if self.multi {
                    self.live[key.size.shift() as usize] -= 1;
                }
                self.valid -= 1;
                self.meta[i] = 0;
                self.policy.invalidate(i / self.ways, i % self.ways);
            }
        }
        if let Some(index) = self.index.as_mut() {
            index.rebuild(&self.tags, &self.meta);
        }
    }
}

impl SetAssocTlb<TreePlru> {
    /// [`SetAssocTlb::scan`] with the tree's bits lent to the loop in a register
    /// ([`TreePlru::packed`]), when they fit one.
    #[inline(always)]
    pub fn scan_packed<const W: usize>(
        &mut self,
    ) -> Option<Scan<'_, TreePlru, W, PackedPlru<'_, W>>> {
        self.scan_with::<W, _>(|policy| policy.packed::<W>())
    }

    /// Whether [`SetAssocTlb::scan_packed`] gives the array borrowed apart.
    pub fn scans_packed<const W: usize>(&self) -> bool {
        self.scans_as(W) && self.policy.packs::<W>()
    }
}

impl<R: Replacement> Tlb for SetAssocTlb<R> {
    #[inline(always)]
    fn lookup(&mut self, asid: Asid, va: VirtAddr) -> Option<Translation> {
        let found = if self.sizes.len() == 1 {
            self.probe(asid, va, self.sizes[0])
        } else {
            (0..self.sizes.len()).find_map(|i| {
                let size = self.sizes[i];
                if self.live[size.shift() as usize] == 0 {
                    return None;
                }
                self.probe(asid, va, size)
            })
        };
        match found {
            Some(_) => self.stats.hits += 1,
            None => self.stats.misses += 1,
        }
        found
    }

    #[inline(always)]
    fn access(&mut self, asid: Asid, va: VirtAddr) -> Option<PageSize> {
        let hit = match self.sizes[..] {
            [size] => self.hit_index(asid, va, size).map(|_| size),
            _ => (0..self.sizes.len()).find_map(|i| {
                let size = self.sizes[i];
                if self.live[size.shift() as usize] == 0 {
                    return None;
                }
                self.hit_index(asid, va, size).map(|_| size)
            }),
        };
        if hit.is_some() {
            self.stats.hits += 1;
        } else {
            self.stats.misses += 1;
        }
        hit
    }

    fn fits(&self, size: PageSize) -> Option<PageSize> {
        self.sizes.iter().copied().find(|&s| s <= size)
    }

    #[inline]
    fn fill(&mut self, asid: Asid, va: VirtAddr, t: Translation) -> Option<PageSize> {
        // None: this TLB holds no page size small enough.
        let size = self.fits(t.size)?;
        let t = sub_page(t, va, size);
        let vpn = va.vpn(size);
        let meta = meta_of(asid, size);
        let set = self.set_of(vpn);
        // The way holding this page already is refilled in place.
        match self.find(set, vpn.0, meta) {
            Some(way) => self.place(set, way, vpn.0, meta, t.pfn, t.perms),
            None => self.fill_absent(vpn.0, meta, t.pfn, t.perms),
        }
        Some(size)
    }

    fn invalidate_range(&mut self, asid: Asid, start: VirtAddr, len: u64) {
        let end = start.0.saturating_add(len);
        self.drop_where(|k| {
            let base = k.vpn.base(k.size).0;
            k.asid == asid && base < end && base.saturating_add(k.size.bytes()) > start.0
        });
    }

    fn flush_asid(&mut self, asid: Asid) {
        self.drop_where(|k| k.asid == asid);
    }

    fn peek(&self, asid: Asid, va: VirtAddr) -> Option<Translation> {
        self.sizes.iter().find_map(|&size| {
            let vpn = va.vpn(size);
            let way = self.find(self.set_of(vpn), vpn.0, meta_of(asid, size))?;
            let i = self.set_of(vpn) * self.ways + way;
            let t = Translation {
                pfn: self.pfns[i],
                size,
                perms: self.perms[i],
            };
            Some(t)
        })
    }

    fn for_each_entry(&self, f: &mut dyn FnMut(TlbKey, Pfn)) {
        for i in 0..self.tags.len() {
            if let Some(k) = self.key(i) {
                f(k, self.pfns[i]);
            }
        }
    }

    fn flush_all(&mut self) {
        self.drop_where(|_| true);
    }

    fn credit_hits(&mut self, n: u64) {
        self.stats.hits += n;
    }

    fn min_page_bytes(&self) -> u64 {
        self.sizes.last().map_or(4096, |s| s.bytes())
    }

    fn stats(&self) -> TlbStats {
        self.stats
    }

    fn capacity(&self) -> usize {
        self.sets * self.ways
    }
}
