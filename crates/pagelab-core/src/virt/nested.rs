//! The host side of a two-dimensional walk (see the module above): the host table,
//! host-physical memory, the host's walk caches and the nested TLB, and the walk of a
//! guest walk's entries through them.

use super::{VirtualizationConfig, VirtualizationReport};
use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr, BASE_SHIFT};
use crate::frames::FrameAllocator;
use crate::pagetable::{
    build_page_table, AnyPageTable, MapError, Perms, Translation, Walk, MAX_WALK_REFS,
};
use crate::tlb::{AnyArray, Tlb, WalkCaches};

/// The host tables carry no address space: one virtual machine's.
const VM: Asid = Asid(0);

pub struct Nested {
    table: AnyPageTable,
    frames: Box<dyn FrameAllocator>,
    /// What a host fault maps when it can, and the host table's smallest page.
    host_page: PageSize,
    host_base: PageSize,
    walk_caches: WalkCaches,
    nested_tlb: Option<AnyArray>,
    /// A host walk (kept: a walk is large).
    walk: Walk,
    /// The last two-dimensional walk's entries (kept, so that it allocates nothing
    /// once grown), and the references it made beyond the guest and host walks'
    /// records.
    out: Vec<PhysAddr>,
    out_dropped: usize,
    /// Recent host translations by guest-physical base page, direct-mapped, for the
    /// lookups that count nothing (`u64::MAX`: none). Exact: a host mapping, once
    /// made, never changes (host memory is never reclaimed or moved). Unused over a
    /// linear host table, whose lookups change its own TLB.
    memo: Box<[(u64, Translation)]>,
    stats: VirtualizationReport,
}

/// Slots of [`Nested::memo`] (a power of two).
const MEMO: usize = 1 << 10;

impl Nested {
    /// The host side `c` describes, every value checked (errors name
    /// `virtualization.<field>`); `seed` is the machine's.
    pub fn build(c: &VirtualizationConfig, seed: u64) -> Result<Nested, String> {
        let field = |e: String| format!("virtualization.host_{e}");
        let table = build_page_table(&c.host_page_table).map_err(field)?;
        let sizes = table.as_ref().page_sizes();
        let host_base = sizes[0];
        if !sizes.contains(&c.host_page) {
            return Err(format!(
                "virtualization.host_page: the host page table cannot map {} pages (it maps {})",
                c.host_page,
                sizes
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let levels = match &c.host_page_table {
            crate::pagetable::PageTableConfig::Radix(r) => Some(r.levels),
            _ => None,
        };
        let walk_caches = WalkCaches::build(&c.host_walk_caches, levels, seed)
            .map_err(|e| format!("virtualization.host_{e}"))?;
        let nested_tlb = match &c.nested_tlb {
            Some(a) if a.hit_cycles != 0.0 => {
                return Err(
                    "virtualization.nested_tlb.hit_cycles: a nested TLB's hits are priced with the walk's; leave it 0"
                        .into(),
                )
            }
            Some(a) if !a.page_sizes.contains(&host_base) || !a.page_sizes.contains(&c.host_page) => {
                return Err(format!(
                    "virtualization.nested_tlb.page_sizes: must hold the pages the host maps ({host_base} and {})",
                    c.host_page
                ))
            }
            Some(a) => Some(AnyArray::build(
                a,
                crate::tlb::array_seed(seed, "virtualization.nested_tlb"),
                "virtualization.nested_tlb",
            )?),
            None => None,
        };
        let frames = crate::frames::build(&c.host_frames, host_base, c.host_page, false, seed)
            .map_err(field)?;
        Ok(Nested {
            table,
            frames,
            host_page: c.host_page,
            host_base,
            walk_caches,
            nested_tlb,
            walk: Walk::new(),
            out: Vec::with_capacity(4 * MAX_WALK_REFS),
            out_dropped: 0,
            memo: vec![
                (
                    u64::MAX,
                    Translation {
                        pfn: Pfn(0),
                        size: host_base,
                        perms: Perms::RWX,
                    }
                );
                MEMO
            ]
            .into_boxed_slice(),
            stats: VirtualizationReport::default(),
        })
    }

    /// Make the guest walk `walk` (its entries guest-physical, the first `skip` made
    /// unnecessary by the guest's walk caches) two-dimensional into [`Nested::refs`]:
    /// the guest entries after the first `skip`, each preceded by the host walk of its
    /// guest-physical address, then the host walk of the data's, when the guest walk
    /// found a translation for `va`. A guest walk-cache hit holds the host-physical
    /// address of the table it points to, so the first entry read after it needs no
    /// host walk. Returns the translation a TLB entry holds: the host frame, and the
    /// smaller of the guest and the host page. `retry`: the walk retried after a guest
    /// fault, whose references are the fault's (counted apart, as the machine counts
    /// them). Errors: the host ran out of memory or cannot map an address.
    pub fn expand(
        &mut self,
        walk: &Walk,
        skip: usize,
        va: VirtAddr,
        retry: bool,
    ) -> Result<Option<Translation>, String> {
        self.out.clear();
        // A guest entry beyond the walk's record is counted, not walked in two
        // dimensions (only a hashed guest table with long chains makes one).
        self.out_dropped = walk.dropped();
        let refs = walk.refs();
        let first = skip.min(refs.len());
        let host_refs = self.stats.host_refs;
        for (i, &entry) in refs.iter().enumerate().skip(first) {
            let known = if i == first && skip > 0 {
                self.lookup_memo(entry)
            } else {
                None
            };
            let host = match known {
                Some(t) => t,
                None => self.host_translate(entry)?,
            };
            self.out.push(host.phys(VirtAddr(entry.0)));
        }
        let translation = match walk.translation {
            Some(guest) => {
                let gpa = guest.phys(va);
                let host = self.host_translate(gpa)?;
                Some(self.combine(guest, host, gpa))
            }
            None => None,
        };
        let guest_refs = (refs.len() - first + walk.dropped()) as u64;
        let s = &mut self.stats;
        if retry {
            let made = s.host_refs - host_refs;
            s.host_refs = host_refs;
            s.fault_refs += guest_refs + made;
        } else {
            s.walks += 1;
            s.guest_refs += guest_refs;
        }
        Ok(translation)
    }

    /// The entries the last two-dimensional walk read, host-physical, in order.
    #[inline]
    pub fn refs(&self) -> &[PhysAddr] {
        &self.out
    }

    /// References of the last walk made beyond those recorded (a hashed table's long
    /// chains, in either dimension).
    #[inline]
    pub fn dropped(&self) -> usize {
        self.out_dropped
    }

    /// [`entry`], counting a splintered one.
    fn combine(&mut self, guest: Translation, host: Translation, gpa: PhysAddr) -> Translation {
        let t = entry(guest, host, gpa);
        self.stats.splintered += (t.size < guest.size) as u64;
        t
    }

    /// The host translation of `gpa` (the nested TLB, else a host walk through the
    /// host's walk caches, the entries it reads added to the walk's; a host fault
    /// maps the page first).
    #[inline]
    fn host_translate(&mut self, gpa: PhysAddr) -> Result<Translation, String> {
        // The usual host, a radix table with no nested caches: its walk alone.
        if let (AnyPageTable::Radix(r), None, true) =
            (&self.table, &self.nested_tlb, self.walk_caches.is_empty())
        {
            let start = self.out.len();
            let out = &mut self.out;
            let translation = r.walk_with(VM, VirtAddr(gpa.0), |e| out.push(e));
            self.stats.host_walks += 1;
            self.stats.host_refs += (self.out.len() - start) as u64;
            if let Some(t) = translation {
                return Ok(t);
            }
            return self.fault(gpa);
        }
        self.host_translate_cached(gpa)
    }

    /// [`Nested::host_translate`] through the nested TLB and the host's walk caches,
    /// or over another host table.
    #[inline(never)]
    fn host_translate_cached(&mut self, gpa: PhysAddr) -> Result<Translation, String> {
        let key = VirtAddr(gpa.0);
        if let Some(tlb) = &mut self.nested_tlb {
            if let Some(t) = tlb.lookup(VM, key) {
                self.stats.nested_tlb_hits += 1;
                return Ok(t);
            }
            self.stats.nested_tlb_misses += 1;
        }
        // The walk's entries go to the end of the record (a radix table's straight
        // there), then those the host's walk caches make unnecessary leave it.
        let start = self.out.len();
        let (translation, dropped) = match &self.table {
            AnyPageTable::Radix(r) => {
                let out = &mut self.out;
                (r.walk_with(VM, key, |e| out.push(e)), 0)
            }
            table => {
                table.walk_into(VM, key, &mut self.walk);
                self.out.extend_from_slice(self.walk.refs());
                (self.walk.translation, self.walk.dropped())
            }
        };
        let read = self.out.len() - start;
        let skip = if self.walk_caches.is_empty() {
            0
        } else {
            self.walk_caches.filter(VM, key, read)
        };
        self.out.drain(start..start + skip);
        self.out_dropped += dropped;
        self.stats.host_walks += 1;
        self.stats.host_refs += (read + dropped - skip) as u64;
        self.stats.host_refs_skipped += skip as u64;
        let t = match translation {
            Some(t) => t,
            None => self.fault(gpa)?,
        };
        if let Some(tlb) = &mut self.nested_tlb {
            tlb.fill(VM, key, t);
        }
        Ok(t)
    }

    /// A host fault on `gpa`: map its page (of `host_page` if it can be had, else
    /// of the smallest host page) and walk again, that walk counted as the fault's.
    #[cold]
    #[inline(never)]
    fn fault(&mut self, gpa: PhysAddr) -> Result<Translation, String> {
        self.stats.host_faults += 1;
        let mut mapped = Err(None);
        if self.host_page > self.host_base {
            mapped = self.map(gpa, self.host_page);
            self.stats.host_large_faults += mapped.is_ok() as u64;
        }
        if mapped.is_err() {
            mapped = self.map(gpa, self.host_base);
        }
        match mapped {
            Ok(()) => {}
            Err(None) => {
                return Err(format!(
                    "out of host-physical memory after {} host faults (virtualization.host_frames.memory is {} base frames; raise it)",
                    self.stats.host_faults,
                    self.frames.total_frames()
                ))
            }
            Err(Some(e)) => {
                return Err(format!(
                    "guest-physical address {:#x}: the host cannot map it: {e}",
                    gpa.0
                ))
            }
        }
        let key = VirtAddr(gpa.0);
        self.table.walk_into(VM, key, &mut self.walk);
        self.stats.host_fault_refs += (self.walk.refs().len() + self.walk.dropped()) as u64;
        self.walk.translation.ok_or_else(|| {
            format!(
                "guest-physical address {:#x}: still unmapped in the host after its fault",
                gpa.0
            )
        })
    }

    /// Map the page of `size` holding `gpa` to a fresh host block. `Err(None)`: no
    /// free block of the size.
    fn map(&mut self, gpa: PhysAddr, size: PageSize) -> Result<(), Option<MapError>> {
        let page = VirtAddr(gpa.0 & !(size.bytes() - 1));
        let pfn = self.frames.alloc(size).ok_or(None)?;
        match self
            .table
            .as_dyn()
            .map(VM, page, size, pfn, Perms::RWX, self.frames.as_mut())
        {
            Ok(_) => Ok(()),
            Err(e) => {
                self.frames.free(pfn, size);
                Err(Some(e))
            }
        }
    }

    /// [`Nested::lookup`] through the memo of recent host translations.
    #[inline]
    fn lookup_memo(&mut self, gpa: PhysAddr) -> Option<Translation> {
        if self.stateful_lookups() {
            // A lookup of the linear table moves its own TLB: each one is made.
            return self.lookup(gpa);
        }
        let page = gpa.0 >> BASE_SHIFT;
        let slot = &mut self.memo[page as usize & (MEMO - 1)];
        if slot.0 == page {
            return Some(slot.1);
        }
        let t = translate(&self.table, VM, VirtAddr(gpa.0))?;
        *slot = (page, t);
        Some(t)
    }

    /// The host translation of `gpa` if the host maps it, counting nothing (for the
    /// data caches' addresses and for checks).
    #[inline]
    pub fn lookup(&self, gpa: PhysAddr) -> Option<Translation> {
        translate(&self.table, VM, VirtAddr(gpa.0))
    }

    /// The host-physical address of `gpa`, which the guest's kernel touches (a
    /// promotion's copy): a host fault maps its page first if the host has not.
    pub fn touch(&mut self, gpa: PhysAddr) -> Result<PhysAddr, String> {
        let t = match self.lookup(gpa) {
            Some(t) => t,
            None => self.fault(gpa)?,
        };
        Ok(t.phys(VirtAddr(gpa.0)))
    }

    /// What a TLB entry holds for `va` with the guest translation `guest`, the host
    /// mapping its page already; counting nothing.
    pub fn entry_of(&self, guest: Translation, va: VirtAddr) -> Option<Translation> {
        let gpa = guest.phys(va);
        Some(entry(guest, self.lookup(gpa)?, gpa))
    }

    /// A hint that `gpa` will be translated soon: the host table brings the
    /// entries its walk reads into the host's cache. Changes nothing simulated.
    #[inline]
    pub fn prefetch(&self, gpa: PhysAddr) {
        self.table.prefetch(VM, VirtAddr(gpa.0));
    }

    /// Whether a lookup of the host table changes its state (the linear table's own
    /// TLB of its pages): then a pass that looks frames up afterwards (a decoupled
    /// run's caches) would count differently, and runs go in order.
    pub fn stateful_lookups(&self) -> bool {
        matches!(self.table, AnyPageTable::Linear(_))
    }

    /// The smallest page a TLB entry may hold: the host's smallest.
    pub fn host_base(&self) -> PageSize {
        self.host_base
    }

    pub fn report(&self) -> VirtualizationReport {
        let s = &self.stats;
        let per = |n: u64| {
            if s.walks > 0 {
                n as f64 / s.walks as f64
            } else {
                0.0
            }
        };
        VirtualizationReport {
            guest_refs_per_walk: per(s.guest_refs),
            host_refs_per_walk: per(s.host_refs),
            host_table_bytes: self.table.as_ref().footprint_bytes(),
            host_frames_used: self.frames.used_frames(),
            host_walk_caches: self.walk_caches.report(),
            ..s.clone()
        }
    }
}

/// `va`'s translation in `table`, counting nothing, without writing the walk down
/// where the table can (a walk's record is large: copying it costs more than the
/// walk).
#[inline]
pub(crate) fn translate(table: &AnyPageTable, asid: Asid, va: VirtAddr) -> Option<Translation> {
    match table.walk_brief(asid, va, crate::pagetable::WalkHint::NONE) {
        Some((_, t)) => t,
        None => table.as_ref().walk(asid, va).translation,
    }
}

/// What a TLB entry holds for a reference that reaches `gpa` through the guest
/// translation `guest` and then the host's `host`: the page of the smaller size
/// around it, host-physical. Within that page both translations are contiguous and
/// aligned alike, so one entry serves it.
fn entry(guest: Translation, host: Translation, gpa: PhysAddr) -> Translation {
    let size = guest.size.min(host.size);
    let hpa = host.phys(VirtAddr(gpa.0)).0;
    Translation {
        pfn: Pfn((hpa & !(size.bytes() - 1)) >> BASE_SHIFT),
        size,
        perms: guest.perms,
    }
}
