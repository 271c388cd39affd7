//! The coalescable footprint (`analysis::coalescable`, read from the tables) against
//! the TLB entries a machine that coalesces makes (`tlb::coalesce`, at its walks):
//! after a pass that maps every page, a TLB flush and a second pass through a TLB
//! that holds everything misses once per coalesced 16-page group and once per page
//! outside them.

use pagelab_core::addr::{Asid, VirtAddr};
use pagelab_core::analysis::coalescable::coalescable;
use pagelab_core::config::MachineConfig;
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::machine::Machine;

const BASE: u64 = 1 << 30;

fn machine(folios: &str) -> Machine {
    let text = format!(
        "[tlb]\nkind = \"hierarchy\"\nflush_on_switch = true\n[[tlb.levels]]\nname = \"tlb\"\n\
         [[tlb.levels.arrays]]\nsets = 1\nways = 8192\npage_sizes = [\"4K\", \"64K\", \"2M\"]\n\
         [coalescing]\nkind = \"contiguous-bit\"\npages = 16\n\
         [frames]\nkind = \"buddy\"\nmemory = \"1G\"\n\
         [promotion]\npolicy = \"thp\"\nsizes = [\"2M\"]\nfault = false\nscan_every = 0\n\
         folio_sizes = [{folios}]\n"
    );
    let config: MachineConfig = toml::from_str(&text).unwrap();
    Machine::build(&config).unwrap()
}

/// Pages of a 32 MiB region in a scattered order, some skipped.
fn pages(seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    (0..3000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % 8192
        })
        .collect()
}

fn run(m: &mut Machine, refs: impl Iterator<Item = MemRef>) {
    m.run_batch(&Batch {
        refs: refs.collect(),
        events: vec![],
    })
    .unwrap();
}

#[test]
fn coalescable_groups_are_the_coalesced_entries() {
    for (folios, seed) in [("", 3), ("\"16K\"", 5), ("\"16K\", \"64K\"", 7)] {
        let mut m = machine(folios);
        let touched = pages(seed);
        let at = |p: u64| MemRef::new(BASE + (p << 12), 8, AccessKind::Load);
        run(&mut m, touched.iter().map(|&p| at(p)));
        let mut footprint: Vec<(u16, u64)> =
            touched.iter().map(|&p| (0, (BASE >> 12) + p)).collect();
        footprint.sort_unstable();
        footprint.dedup();
        let found = coalescable(&footprint, |asid, va| m.entry_of(asid, va));
        let g16 = &found[3];
        assert_eq!(g16.pages, 16);
        // A reference in another address space flushes the TLB, and so does the
        // switch back.
        let before = m.counts().walks;
        let mut other = at(0);
        other.asid = Asid(1);
        run(
            &mut m,
            std::iter::once(other).chain(
                footprint
                    .iter()
                    .map(|&(_, vpn)| MemRef::new(VirtAddr(vpn << 12).0, 8, AccessKind::Load)),
            ),
        );
        let entries = m.counts().walks - before - 1;
        let expected = g16.groups + footprint.len() as u64 - g16.footprint_pages;
        assert_eq!(entries, expected, "folios [{folios}]: {found:?}");
        if folios.contains("64K") {
            assert!(g16.groups > 0, "64K folios coalesce: {found:?}");
        }
    }
}
