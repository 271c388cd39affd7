//! Memory pressure: a resident-set limit, the page daemon that keeps to it, a swap
//! store, and the demotions Navarro's design makes for it (Navarro et al., OSDI 2002,
//! as Gopalan's slides present it, "III Design": "Speculative demotions", "Demotions:
//! dirty superpages", "Fragmentation control"). This module holds the `[paging]`
//! section (`config.rs`), the state the pager works on, and the daemon's victim
//! choices (`victims/`, one file each); the machine carries the operations out
//! (`machine/pressure.rs`).
//!
//! - **Resident set.** Every mapping of the program (a base page or a superpage: one
//!   page-table entry, [`Pte`]) with one reference bit and one dirty bit, as the slides
//!   say a superpage has ("one reference bit, one dirty bit"). The resident set is the
//!   base pages they map, superpages' pages never touched included.
//! - **Reference bits.** A walk that loads a mapping into the TLB sets its bit, as x86
//!   and ARM walkers set the accessed bit; TLB hits never reach the page table, in
//!   hardware as in the simulator. So that a page in use that lives in the TLB is not
//!   taken for idle, the daemon counts every mapping some TLB level holds when it
//!   wakes as referenced: what an OS that flushes the TLB entry as it clears the bit
//!   (FreeBSD's `pmap_ts_referenced`) would see, without simulating those flushes.
//! - **The daemon** wakes when a fault or a promotion takes the resident set past
//!   `paging.resident_limit`, and reclaims until it is `free_target` below (FreeBSD's
//!   page daemon runs between a free minimum and a free target the same way). Its hand
//!   goes round the mappings in the order they were made (clock, second chance): a
//!   referenced mapping loses its bit and is passed over; a referenced superpage is
//!   also demoted ("on memory pressure, demote superpages when resetting ref bit"), so
//!   that its base pages' bits tell which parts are still used; an unreferenced
//!   superpage is demoted and its base pages become the next victims ("demote also
//!   when the page daemon selects a base page as a victim page"); an unreferenced base
//!   page is reclaimed: unmapped, its TLB entries dropped at every level, its data put
//!   in the swap store, its frame freed (unless a reservation keeps it for the page).
//!   Touching it again is a major fault that reads the same data back.
//! - **Re-promotion.** A demoted block is promoted again, incrementally, size by size
//!   ("re-promote (incrementally) as pages are referenced"), when all the base pages of
//!   an aligned candidate within it are resident, referenced since the demotion, and
//!   all dirty or all clean (a superpage has one dirty bit).
//! - **Dirty superpages.** With `demote_on_write`, the first write to a clean superpage
//!   demotes it, the written base page alone becomes dirty, and the block is promoted
//!   again when all its pages are dirty ("demote on first write to clean superpage",
//!   "re-promote (incrementally) as other pages are dirtied"). Without it a write makes
//!   the whole superpage dirty, and paging it out writes every page of it.
//! - **Contiguity.** With `daemon = "contiguity"` the daemon gathers the inactive
//!   pages the clock finds (up to `contiguity_window`) and reclaims first those whose
//!   frames complete a free aligned block of the smallest superpage size, fewest pages
//!   first ("modified page daemon for victim selection: restore contiguity ... prefer
//!   victim pages that contribute the most to contiguity"), then the others in the
//!   clock's order ("minimize impact"). Either daemon counts the blocks of each
//!   superpage size its frees complete. On a real trace it trades major faults for
//!   free blocks (README, Superpages).
//!
//! Simplifications: the daemon runs at the fault that crosses the limit (no
//! concurrency: the faulting reference waits for it), and its own work (scanning,
//! unmapping, writing pages back) costs no cycles; the count of pages written back
//! (dirty when reclaimed) is its I/O. Memory exhaustion below `frames.memory` is still
//! an error, not a trigger. A write that retries after a demotion is not walked again:
//! the next reference to the page misses.

mod config;
pub mod victims;

pub use config::PagingConfig;
pub use victims::{DaemonKind, Victim, VictimChoice};

use crate::addr::{Asid, PageSize, VirtAddr, BASE_SHIFT};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// A mapping's key: its address space and first address.
pub type Key = (Asid, u64);

/// One mapping of the resident set, as its page-table entry's bits see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pte {
    pub size: PageSize,
    pub referenced: bool,
    pub dirty: bool,
    /// The reference whose fault or promotion made it (a write by that reference
    /// counts as made before it: the mapping is dirty, not demoted).
    pub made: u64,
    /// Its place in the clock's queue (older queue entries of the key are stale).
    seq: u64,
}

/// Why a superpage was demoted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Demotion {
    /// By the page daemon: a referenced superpage whose bit it cleared (speculative),
    /// or an unreferenced one it takes pages from.
    Pressure,
    /// By the first write to a clean superpage.
    Write,
}

/// The swap store: the data of reclaimed pages, by address space and virtual 4 KiB
/// frame (the data tags of `superpage::mechanism::Contents`).
#[derive(Default)]
pub struct Swap {
    held: HashMap<(Asid, u64), (Asid, u64)>,
}

impl Swap {
    pub fn put(&mut self, asid: Asid, vfn: u64, data: (Asid, u64)) {
        self.held.insert((asid, vfn), data);
    }
    /// Take the data of virtual frame `vfn` back (a major fault reads it in).
    pub fn take(&mut self, asid: Asid, vfn: u64) -> Option<(Asid, u64)> {
        self.held.remove(&(asid, vfn))
    }
    pub fn get(&self, asid: Asid, vfn: u64) -> Option<(Asid, u64)> {
        self.held.get(&(asid, vfn)).copied()
    }
    /// Whether any 4 KiB frame of `[va, va + bytes)` is here.
    pub fn holds_any(&self, asid: Asid, va: VirtAddr, bytes: u64) -> bool {
        let first = va.0 >> BASE_SHIFT;
        let n = (bytes >> BASE_SHIFT).max(1);
        !self.held.is_empty() && (first..first + n).any(|v| self.held.contains_key(&(asid, v)))
    }
    pub fn frames(&self) -> u64 {
        self.held.len() as u64
    }
    pub fn iter(&self) -> impl Iterator<Item = (Asid, u64)> + '_ {
        self.held.keys().copied()
    }
}

/// What the pager counts besides the machine's `Counts`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PagerStats {
    pub wakes: u64,
    /// The largest resident set the daemon left behind (never above the limit).
    pub max_after_daemon: u64,
    /// Free blocks completed by the daemon's frees, by superpage size (as `sizes`).
    pub blocks_restored: Vec<u64>,
    /// Promotions refused because a page of the candidate was in the swap store (a
    /// promotion would have cleared it).
    pub promotions_refused_swapped: u64,
}

pub struct Pager {
    /// In base pages; 0: no limit (the pager only keeps dirty bits).
    pub limit: u64,
    /// The resident set the daemon reclaims down to.
    pub target: u64,
    pub base: PageSize,
    pub daemon: Box<dyn VictimChoice>,
    pub window: usize,
    pub speculative: bool,
    pub demote_on_write: bool,
    /// Superpage sizes, ascending: candidates of re-promotion, blocks of contiguity.
    pub sizes: Vec<PageSize>,
    ptes: BTreeMap<Key, Pte>,
    resident: u64,
    queue: VecDeque<(Key, u64)>,
    next_seq: u64,
    /// Demoted blocks not yet promoted back whole, with their size.
    demoted: BTreeMap<Key, PageSize>,
    /// The last mapping found dirty: (address space, first, end) — writes to it need no
    /// lookup.
    dirty_hint: Option<(Asid, u64, u64)>,
    pub stats: PagerStats,
}

impl Pager {
    /// The pager a configuration asks for, with its daemon's choice of victims (built
    /// from `c.daemon`); `largest` is the largest page a fault or a promotion can map.
    /// Errors name the field.
    pub fn build(
        c: &PagingConfig,
        daemon: Box<dyn VictimChoice>,
        base: PageSize,
        sizes: Vec<PageSize>,
        largest: PageSize,
    ) -> Result<Pager, String> {
        if !(c.free_target.is_finite() && (0.0..=0.5).contains(&c.free_target)) {
            return Err(format!(
                "paging.free_target: {} must be a share of the limit from 0 to 0.5",
                c.free_target
            ));
        }
        if !(1..=1 << 20).contains(&c.contiguity_window) {
            return Err(format!(
                "paging.contiguity_window: {} must be from 1 to 1048576",
                c.contiguity_window
            ));
        }
        let limit = c.resident_limit.0 >> base.shift();
        let least = (largest.bytes() >> base.shift()).max(16);
        if c.resident_limit.0 > 0 && limit < least {
            return Err(format!(
                "paging.resident_limit: {} is less than the {} base pages of {} a run needs (16, and the largest page a fault or a promotion maps, {largest}); raise it or set 0 for no limit",
                crate::addr::format_bytes(c.resident_limit.0),
                least,
                crate::addr::format_bytes(least << base.shift()),
            ));
        }
        Ok(Pager {
            limit,
            target: limit - (limit as f64 * c.free_target) as u64,
            base,
            daemon,
            window: c.contiguity_window,
            speculative: c.speculative_demotion,
            demote_on_write: c.demote_on_write,
            stats: PagerStats {
                blocks_restored: vec![0; sizes.len()],
                ..PagerStats::default()
            },
            sizes,
            ptes: BTreeMap::new(),
            resident: 0,
            queue: VecDeque::new(),
            next_seq: 0,
            demoted: BTreeMap::new(),
            dirty_hint: None,
        })
    }

    fn pages(&self, size: PageSize) -> u64 {
        size.bytes() >> self.base.shift()
    }

    /// Base pages mapped now.
    pub fn resident(&self) -> u64 {
        self.resident
    }

    pub fn over_limit(&self) -> bool {
        self.limit > 0 && self.resident > self.limit
    }

    /// The mapping holding `va`, if resident.
    pub fn containing(&self, asid: Asid, va: u64) -> Option<(Key, Pte)> {
        let (&(a, start), &p) = self.ptes.range(..=(asid, va)).next_back()?;
        (a == asid && va < start + p.size.bytes()).then_some(((a, start), p))
    }

    pub fn get(&self, key: Key) -> Option<Pte> {
        self.ptes.get(&key).copied()
    }

    pub fn set_referenced(&mut self, key: Key, on: bool) {
        if let Some(p) = self.ptes.get_mut(&key) {
            p.referenced = on;
        }
    }

    /// Mark the mapping `key` dirty.
    pub fn set_dirty(&mut self, key: Key) {
        if let Some(p) = self.ptes.get_mut(&key) {
            p.dirty = true;
            self.dirty_hint = Some((key.0, key.1, key.1 + p.size.bytes()));
        }
    }

    /// Whether a write to `va` needs no bookkeeping: its mapping is known dirty.
    #[inline]
    pub fn known_dirty(&self, asid: Asid, va: u64) -> bool {
        matches!(self.dirty_hint, Some((a, s, e)) if a == asid && s <= va && va < e)
    }

    /// Every mapping, in address order (for checks).
    pub fn mappings(&self) -> impl Iterator<Item = (Key, Pte)> + '_ {
        self.ptes.iter().map(|(k, p)| (*k, *p))
    }

    /// A new mapping of `size` at `key` (a fault, or a promotion's or demotion's result).
    pub fn insert(&mut self, key: Key, size: PageSize, referenced: bool, dirty: bool, made: u64) {
        self.insert_at(key, size, referenced, dirty, made, false);
    }

    fn insert_at(
        &mut self,
        key: Key,
        size: PageSize,
        referenced: bool,
        dirty: bool,
        made: u64,
        front: bool,
    ) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let old = self.ptes.insert(
            key,
            Pte {
                size,
                referenced,
                dirty,
                made,
                seq,
            },
        );
        if let Some(old) = old {
            self.resident -= self.pages(old.size);
        }
        self.resident += self.pages(size);
        self.dirty_hint = None;
        if self.limit > 0 {
            if front {
                self.queue.push_front((key, seq));
            } else {
                self.queue.push_back((key, seq));
            }
        }
    }

    /// The mapping `key` is gone (reclaimed).
    pub fn remove(&mut self, key: Key) -> Option<Pte> {
        let p = self.ptes.remove(&key)?;
        self.resident -= self.pages(p.size);
        self.dirty_hint = None;
        Some(p)
    }

    /// `c` became one superpage: its mappings are replaced by one, referenced, dirty
    /// if any of them was; a demoted block it covers is whole again.
    pub fn promoted(&mut self, asid: Asid, va: VirtAddr, size: PageSize, made: u64) {
        let end = va.0 + size.bytes();
        let keys: Vec<Key> = self
            .ptes
            .range((asid, va.0)..(asid, end))
            .map(|(k, _)| *k)
            .collect();
        let mut dirty = false;
        for k in keys {
            dirty |= self.remove(k).is_some_and(|p| p.dirty);
        }
        self.insert((asid, va.0), size, true, dirty, made);
        let blocks: Vec<Key> = self
            .demoted
            .range((asid, va.0)..(asid, end))
            .filter(|(k, s)| k.1 + s.bytes() <= end)
            .map(|(k, _)| *k)
            .collect();
        for k in blocks {
            self.demoted.remove(&k);
        }
    }

    /// The superpage at `key` became base pages on the same frames, with its bits;
    /// `front`: they are the hand's next pages (the daemon takes victims from them).
    pub fn demoted(&mut self, key: Key, front: bool) {
        let Some(p) = self.remove(key) else {
            return;
        };
        let step = self.base.bytes();
        let n = self.pages(p.size);
        let order: Vec<u64> = if front {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        };
        for i in order {
            let k = (key.0, key.1 + i * step);
            self.insert_at(k, self.base, p.referenced, p.dirty, u64::MAX, front);
        }
        self.demoted.entry(key).or_insert(p.size);
    }

    /// The demoted block holding `va`, if any: its key and size.
    pub fn demoted_block(&self, asid: Asid, va: u64) -> Option<(Key, PageSize)> {
        if self.demoted.is_empty() {
            return None;
        }
        let (&(a, start), &s) = self.demoted.range(..=(asid, va)).next_back()?;
        (a == asid && va < start + s.bytes()).then_some(((a, start), s))
    }

    /// Whether the candidate `[start, start + size)` can become one superpage again:
    /// fully resident, every mapping in it referenced, and all dirty or all clean.
    pub fn complete(&self, asid: Asid, start: u64, size: PageSize) -> bool {
        let mut pages = 0;
        let mut dirty = None;
        for (_, p) in self.ptes.range((asid, start)..(asid, start + size.bytes())) {
            if !p.referenced || p.size >= size || *dirty.get_or_insert(p.dirty) != p.dirty {
                return false;
            }
            pages += self.pages(p.size);
        }
        pages == self.pages(size)
    }

    /// The clock's next mapping (stale queue entries skipped).
    pub fn next(&mut self) -> Option<Key> {
        while let Some((key, seq)) = self.queue.pop_front() {
            if self.ptes.get(&key).is_some_and(|p| p.seq == seq) {
                return Some(key);
            }
        }
        None
    }

    /// Put the mapping `key` back at the hand's end (second chance) or front.
    pub fn requeue(&mut self, key: Key, front: bool) {
        if let Some(p) = self.ptes.get(&key) {
            if front {
                self.queue.push_front((key, p.seq));
            } else {
                self.queue.push_back((key, p.seq));
            }
        }
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pager(limit_pages: u64) -> Pager {
        let c = PagingConfig {
            resident_limit: crate::addr::ByteSize(limit_pages << 12),
            ..PagingConfig::default()
        };
        Pager::build(
            &c,
            c.daemon.build(true).unwrap(),
            PageSize::K4,
            vec![PageSize::K64],
            PageSize::K64,
        )
        .unwrap()
    }

    #[test]
    fn promotion_and_demotion_keep_the_resident_count_and_the_bits() {
        let mut p = pager(64);
        let a = Asid(0);
        for i in 0..16u64 {
            p.insert((a, i << 12), PageSize::K4, true, i == 3, 0);
        }
        assert_eq!(p.resident(), 16);
        p.promoted(a, VirtAddr(0), PageSize::K64, 5);
        assert_eq!(p.resident(), 16);
        let (k, sp) = p.containing(a, 0x5000).unwrap();
        assert_eq!(
            (k, sp.size, sp.dirty, sp.referenced),
            ((a, 0), PageSize::K64, true, true)
        );
        p.demoted((a, 0), false);
        assert_eq!(p.resident(), 16);
        assert!(p.mappings().all(|(_, q)| q.size == PageSize::K4 && q.dirty));
        assert_eq!(p.demoted_block(a, 0xf000), Some(((a, 0), PageSize::K64)));
        assert!(p.complete(a, 0, PageSize::K64));
        p.set_referenced((a, 0x2000), false);
        assert!(!p.complete(a, 0, PageSize::K64));
        p.remove((a, 0x2000));
        assert_eq!(p.resident(), 15);
    }

    #[test]
    fn the_hand_skips_stale_entries_and_gives_second_chances() {
        let mut p = pager(64);
        let a = Asid(0);
        for i in 0..3u64 {
            p.insert((a, i << 12), PageSize::K4, false, false, 0);
        }
        p.remove((a, 0x1000));
        assert_eq!(p.next(), Some((a, 0)));
        p.requeue((a, 0), false);
        assert_eq!(p.next(), Some((a, 0x2000)));
        assert_eq!(p.next(), Some((a, 0)));
        assert_eq!(p.next(), None);
    }

    /// The error building a pager of `c` gives.
    fn refused(c: &PagingConfig, sizes: Vec<PageSize>, largest: PageSize) -> String {
        let daemon = c.daemon.build(false).unwrap();
        Pager::build(c, daemon, PageSize::K4, sizes, largest)
            .err()
            .expect("refused")
    }

    #[test]
    fn a_limit_below_what_a_run_needs_names_the_field() {
        let c = PagingConfig {
            resident_limit: crate::addr::ByteSize(8 << 12),
            ..PagingConfig::default()
        };
        let e = refused(&c, vec![], PageSize::K4);
        assert!(e.contains("paging.resident_limit"), "{e}");
        let c = PagingConfig {
            resident_limit: crate::addr::ByteSize(1 << 20),
            ..PagingConfig::default()
        };
        let e = refused(&c, vec![PageSize::M2], PageSize::M2);
        assert!(
            e.contains("paging.resident_limit") && e.contains("2M"),
            "{e}"
        );
        let c = PagingConfig {
            daemon: DaemonKind::Contiguity,
            ..PagingConfig::default()
        };
        let e = c.daemon.build(false).err().unwrap();
        assert!(e.contains("paging.daemon"), "{e}");
        let c = PagingConfig {
            free_target: f64::NAN,
            ..PagingConfig::default()
        };
        let e = refused(&c, vec![], PageSize::K4);
        assert!(e.contains("paging.free_target"), "{e}");
    }
}
