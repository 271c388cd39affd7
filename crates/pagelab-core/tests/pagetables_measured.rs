//! What Szmajda and Heiser, "Variable Radix Page Table", ACSAC 2003 claims about lookup
//! depth, measured on address-space layouts rather than asserted as constants: on a
//! dense layout a variable radix table touches no more cache lines per lookup than the
//! x86-64 radix table, and on a sparse 64-bit layout the guarded and variable radix
//! tables read fewer entries (levels) per lookup than the 4-level radix table. And
//! every structure runs as the machine's page table, with the same faults and walks.

use pagelab_core::addr::{Asid, PageSize, Pfn, VirtAddr};
use pagelab_core::analysis::layout::{dense_pages, sparse_pages};
use pagelab_core::analysis::pagetables::default_structures;
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::frames::SimpleAllocator;
use pagelab_core::pagetable::{
    GuardedPageTable, PageTable, Perms, RadixPageTable, VariableRadixPageTable,
};
use pagelab_core::rng::splitmix64 as splitmix;
use pagelab_core::{Machine, MachineConfig};

const SIZES: [PageSize; 3] = [PageSize::K4, PageSize::M2, PageSize::G1];

/// Map `pages` (4K each) into `table`, frames in order.
fn populate(table: &mut dyn PageTable, pages: &[u64]) {
    let mut frames = SimpleAllocator::new(1 << 24);
    for (i, &va) in pages.iter().enumerate() {
        let pfn = Pfn(0x10_0000 + i as u64);
        table
            .map(
                Asid(0),
                VirtAddr(va),
                PageSize::K4,
                pfn,
                Perms::RW,
                &mut frames,
            )
            .unwrap();
    }
}

/// Per page: (entries read, distinct cache lines) of a lookup, checking it finds it.
fn measure(table: &dyn PageTable, pages: &[u64]) -> Vec<(usize, usize)> {
    pages
        .iter()
        .map(|&va| {
            let w = table.walk(Asid(0), VirtAddr(va + 0x10));
            assert_eq!(w.translation.map(|t| t.size), Some(PageSize::K4));
            (w.refs().len(), w.distinct_lines())
        })
        .collect()
}

fn mean(v: impl Iterator<Item = usize>) -> f64 {
    let v: Vec<usize> = v.collect();
    v.iter().sum::<usize>() as f64 / v.len() as f64
}

#[test]
fn vrpt_touches_no_more_lines_than_radix_on_a_dense_layout() {
    let pages = dense_pages();
    let mut radix = RadixPageTable::new(4);
    let mut vrpt = VariableRadixPageTable::growing(4, 16, &SIZES);
    populate(&mut radix, &pages);
    populate(&mut vrpt, &pages);
    let (r, v) = (measure(&radix, &pages), measure(&vrpt, &pages));
    let worse = pages
        .iter()
        .zip(r.iter().zip(&v))
        .filter(|(_, (r, v))| v.1 > r.1)
        .count();
    let (rl, vl) = (mean(r.iter().map(|x| x.1)), mean(v.iter().map(|x| x.1)));
    assert_eq!(
        worse, 0,
        "lookups where the VRPT touches more lines than radix (means: VRPT {vl:.2}, radix {rl:.2})"
    );
    assert!(vl <= rl, "lines per lookup: VRPT {vl:.2}, radix {rl:.2}");
}

#[test]
fn guarded_and_vrpt_read_fewer_levels_than_radix_on_a_sparse_layout() {
    // 32 small objects of 4 pages scattered over the 47-bit user half.
    let pages = sparse_pages(32, 4, 42);
    let mut radix = RadixPageTable::new(4);
    let mut guarded = GuardedPageTable::new(16, &SIZES);
    let mut vrpt = VariableRadixPageTable::growing(4, 16, &SIZES);
    populate(&mut radix, &pages);
    populate(&mut guarded, &pages);
    populate(&mut vrpt, &pages);
    let levels = |t: &dyn PageTable| mean(measure(t, &pages).into_iter().map(|x| x.0));
    let (r, g, v) = (levels(&radix), levels(&guarded), levels(&vrpt));
    assert!(
        g < r,
        "entries read per lookup: guarded {g:.2}, radix {r:.2}"
    );
    assert!(v < r, "entries read per lookup: VRPT {v:.2}, radix {r:.2}");
    // The space each needs, for the record of the failure message below.
    let bytes = [
        radix.footprint_bytes(),
        guarded.footprint_bytes(),
        vrpt.footprint_bytes(),
    ];
    assert!(
        bytes[1] < bytes[0] && bytes[2] < bytes[0],
        "bytes: radix {}, guarded {}, VRPT {}",
        bytes[0],
        bytes[1],
        bytes[2]
    );
}

#[test]
fn every_structure_runs_as_the_machine_page_table() {
    let mut seed = 7;
    let refs: Vec<MemRef> = (0..20_000)
        .map(|_| {
            let r = splitmix(&mut seed);
            let addr = [0x5555_5555_0000u64, 0x7ffd_0000_0000, 0x7f12_0000_0000][r as usize % 3]
                + (r >> 8) % (8 << 20);
            MemRef::new(addr, 8, AccessKind::Load)
        })
        .collect();
    let batch = Batch {
        refs,
        ..Batch::default()
    };
    let mut reports = Vec::new();
    for page_table in default_structures() {
        let config = MachineConfig {
            page_table,
            ..MachineConfig::default()
        };
        let mut machine = Machine::build(&config).unwrap();
        machine.run_batch(&batch).unwrap();
        reports.push(machine.report());
    }
    let radix = &reports[0];
    assert!(radix.counts.page_faults > 1000);
    for r in &reports {
        // Same TLB, same pages: the same misses and faults; only the walks differ.
        assert_eq!(
            (r.counts.walks, r.counts.page_faults),
            (radix.counts.walks, radix.counts.page_faults)
        );
        assert!(r.walk_refs_per_walk >= 1.0, "{r:?}");
        assert!(r.page_table_bytes > 0);
    }
}
