//! The range TLB (Gandhi et al., "Range Translations for Fast Virtual Memory", IEEE
//! Micro 2016, "Range TLB", Fig. 4): a fully associative cache of range translations,
//! probed beside a TLB level (the paper puts 32 entries beside the L2 TLB). A hit is
//! `BASE <= vpn < LIMIT`; it gives the translation `vpn + OFFSET` with the range's
//! rights, which refills the levels below (the L1 TLB), not the level it sits beside.
//! When neither hits, the page walk serves the miss, and if the page lies in a range
//! (its PTE's range bit) the range walker fetches that range from the range table in
//! the background and installs it.
//!
//! A direct segment (Basu et al., the paper's "DS") is the same unit with one entry
//! the OS loads at the start and never replaces: a hit for every page of the segment,
//! no walk of any table for them, no TLB entry of its own.
//!
//! The unit is looked up only when the level beside it missed (the case where its
//! answer is used), so a page-TLB hit changes nothing in it.

use super::config::{RangeTlbConfig, RangeUnitKind};
use super::table::NODE_LINES;
use super::{Range, RangeTables};
use crate::addr::Asid;
use crate::replacement::AnyReplacement;
use serde::Serialize;

#[derive(Clone, Copy)]
struct Entry {
    asid: Asid,
    range: Range,
}

pub struct RangeTlb {
    pub name: String,
    pub kind: RangeUnitKind,
    pub hit_cycles: f64,
    entries: Vec<Option<Entry>>,
    policy: AnyReplacement,
    /// The entry hit or filled last (a repeated hit on it skips the scan).
    last: usize,
    pub hits: u64,
    pub misses: u64,
    /// Range-table walks (after page walks of pages in a range), their references
    /// (and distinct lines: every node is two lines of its own), and fills.
    pub walks: u64,
    pub walk_refs: u64,
    pub fills: u64,
    pub evictions: u64,
}

/// What a range unit did in a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RangeUnitReport {
    pub name: String,
    pub kind: String,
    /// The TLB level it is looked up beside.
    pub beside: String,
    pub entries: u64,
    pub hits: u64,
    pub misses: u64,
    pub range_walks: u64,
    pub range_walk_refs: u64,
    pub range_walk_lines: u64,
    pub fills: u64,
}

impl RangeTlb {
    /// Checks every field; `at` names the configuration section for errors.
    pub fn build(
        c: &RangeTlbConfig,
        at: &str,
        hit_cycles: f64,
        seed: u64,
    ) -> Result<RangeTlb, String> {
        let entries = match c.kind {
            RangeUnitKind::RangeTlb => c.entries,
            RangeUnitKind::DirectSegment => 1,
        };
        if entries == 0 {
            return Err(format!("{at}.entries: a range TLB needs at least 1 entry"));
        }
        if entries > 4096 {
            return Err(format!(
                "{at}.entries: {entries} is more than a fully associative range TLB of 4096 entries"
            ));
        }
        let policy = AnyReplacement::named(&c.replacement, 1, entries, seed).ok_or_else(|| {
            format!(
                "{at}.replacement: unknown policy {:?} (known: {})",
                c.replacement,
                crate::replacement::NAMES.join(", ")
            )
        })?;
        let hit_cycles = c.hit_cycles.unwrap_or(hit_cycles);
        crate::limits::check_cycles(&format!("{at}.hit_cycles"), hit_cycles)?;
        Ok(RangeTlb {
            name: if c.name.is_empty() {
                c.kind.name().into()
            } else {
                c.name.clone()
            },
            kind: c.kind,
            hit_cycles,
            entries: vec![None; entries],
            policy,
            last: 0,
            hits: 0,
            misses: 0,
            walks: 0,
            walk_refs: 0,
            fills: 0,
            evictions: 0,
        })
    }

    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Probe for page `vpn` of `asid` after the level beside it missed: the range
    /// hit, counted, its page marked used.
    #[inline]
    pub fn lookup(&mut self, asid: Asid, vpn: u64, tables: &RangeTables) -> Option<Range> {
        let found = match self.kind {
            RangeUnitKind::DirectSegment => tables
                .get(asid)
                .and_then(|t| t.segment())
                .filter(|s| s.contains(vpn)),
            RangeUnitKind::RangeTlb => self.find(asid, vpn),
        };
        match found {
            Some(r) => {
                self.hits += 1;
                if let Some(t) = tables.get(asid) {
                    t.touch(&r, vpn);
                }
                Some(r)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    #[inline]
    fn find(&mut self, asid: Asid, vpn: u64) -> Option<Range> {
        let hit = |e: &Option<Entry>| e.is_some_and(|e| e.asid == asid && e.range.contains(vpn));
        let way = if hit(&self.entries[self.last]) {
            self.last
        } else {
            let way = self.entries.iter().position(hit)?;
            self.policy.hit(0, way);
            self.last = way;
            way
        };
        self.entries[way].map(|e| e.range)
    }

    /// After a page walk of page `vpn` (its translation found): if the page lies in a
    /// range, the range walker fetches it and installs it (a direct segment walks
    /// nothing). The walk's references are counted.
    #[inline]
    pub fn walked(&mut self, asid: Asid, vpn: u64, tables: &RangeTables) {
        let Some(table) = tables.get(asid) else {
            return;
        };
        let found = table.lookup(vpn);
        let Some(range) = found.range else {
            // The range bit is clear: no walk of the range table.
            return;
        };
        table.touch(&range, vpn);
        if self.kind == RangeUnitKind::DirectSegment {
            // The page is used (for the bloat); no range walker.
            return;
        }
        self.walks += 1;
        self.walk_refs += found.nodes as u64 * NODE_LINES;
        self.install(asid, range);
    }

    fn install(&mut self, asid: Asid, range: Range) {
        // A range grown since it was cached (the heap's by brk) replaces its old copy.
        let same =
            |e: &Option<Entry>| e.is_some_and(|e| e.asid == asid && e.range.base == range.base);
        let way = match self.entries.iter().position(same) {
            Some(w) => w,
            None => match self.entries.iter().position(Option::is_none) {
                Some(w) => w,
                None => {
                    self.evictions += 1;
                    self.policy.victim(0)
                }
            },
        };
        self.entries[way] = Some(Entry { asid, range });
        self.policy.fill(0, way);
        self.last = way;
        self.fills += 1;
    }

    /// Drop every entry of `asid` overlapping pages `[from, to)` (ranges shrunk or
    /// split by an unmapping; the walker fetches what remains when next needed).
    pub fn invalidate(&mut self, asid: Asid, from: u64, to: u64) {
        for (way, e) in self.entries.iter_mut().enumerate() {
            if e.is_some_and(|e| e.asid == asid && e.range.base < to && from < e.range.limit) {
                *e = None;
                self.policy.invalidate(0, way);
            }
        }
    }

    pub fn flush_all(&mut self) {
        for (way, e) in self.entries.iter_mut().enumerate() {
            if e.take().is_some() {
                self.policy.invalidate(0, way);
            }
        }
    }

    pub fn report(&self, beside: &str) -> RangeUnitReport {
        RangeUnitReport {
            name: self.name.clone(),
            kind: self.kind.name().into(),
            beside: beside.into(),
            entries: self.capacity() as u64,
            hits: self.hits,
            misses: self.misses,
            range_walks: self.walks,
            range_walk_refs: self.walk_refs,
            range_walk_lines: self.walk_refs,
            fills: self.fills,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pagetable::Perms;

    fn unit(entries: usize) -> RangeTlb {
        let c = RangeTlbConfig {
            entries,
            ..Default::default()
        };
        RangeTlb::build(&c, "tlb.levels[0].range", 7.0, 0).unwrap()
    }

    #[test]
    fn a_hit_is_base_to_limit_and_a_walk_installs_the_range() {
        let mut tables = RangeTables::default();
        let t = tables.table_mut(Asid(0));
        t.insert(0x100, 0x80, 0x9000, Perms::RW).unwrap();
        t.insert(0x400, 0x10, 0x2000, Perms::RW).unwrap();
        let mut u = unit(2);
        assert_eq!(u.lookup(Asid(0), 0x100, &tables), None);
        u.walked(Asid(0), 0x100, &tables);
        assert_eq!(u.walks, 1);
        let r = u.lookup(Asid(0), 0x17f, &tables).unwrap();
        assert_eq!(r.frame(0x17f), 0x907f);
        assert_eq!(
            u.lookup(Asid(0), 0x180, &tables),
            None,
            "LIMIT is exclusive"
        );
        assert_eq!(
            u.lookup(Asid(1), 0x120, &tables),
            None,
            "another address space"
        );
        // A page outside every range: its range bit is clear, no walk.
        u.walked(Asid(0), 0x300, &tables);
        assert_eq!(u.walks, 1);
        assert_eq!((u.hits, u.misses), (1, 3));
    }

    #[test]
    fn lru_evicts_the_range_unused_longest() {
        let mut tables = RangeTables::default();
        let t = tables.table_mut(Asid(0));
        for i in 0..3 {
            t.insert(i * 0x100, 0x10, 0x1000 * (i + 1), Perms::RW)
                .unwrap();
        }
        let mut u = unit(2);
        u.walked(Asid(0), 0x000, &tables);
        u.walked(Asid(0), 0x100, &tables);
        assert!(u.lookup(Asid(0), 0x001, &tables).is_some());
        u.walked(Asid(0), 0x200, &tables);
        assert!(u.lookup(Asid(0), 0x002, &tables).is_some());
        assert!(u.lookup(Asid(0), 0x101, &tables).is_none());
        assert_eq!(u.evictions, 1);
        u.invalidate(Asid(0), 0x0, 0x8);
        assert!(u.lookup(Asid(0), 0x002, &tables).is_none());
    }

    #[test]
    fn bad_sizes_and_names_are_refused_naming_the_field() {
        let e = RangeTlb::build(
            &RangeTlbConfig {
                entries: 0,
                ..Default::default()
            },
            "tlb.levels[2].range",
            0.0,
            0,
        );
        assert!(e.err().unwrap().starts_with("tlb.levels[2].range.entries:"));
        let c = RangeTlbConfig {
            replacement: "belady".into(),
            ..Default::default()
        };
        let e = RangeTlb::build(&c, "tlb.levels[2].range", 0.0, 0);
        assert!(e.err().unwrap().contains("range.replacement"));
    }
}
