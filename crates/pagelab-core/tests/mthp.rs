//! Multi-size THP (`promotion.folio_sizes`): a fault maps a folio of the largest
//! enabled size whose aligned range is unmapped and whose block the buddy allocator
//! has, else the next smaller, else a base page, as Linux's `alloc_anon_folio` falls
//! back; with arm64's contiguous bit, a 64 KiB folio is one TLB entry.

use pagelab_core::config::MachineConfig;
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::machine::{Machine, Report};

const BASE: u64 = 1 << 30;
const PAGES: u64 = 1024;

fn run(frames: &str, extra: &str) -> Report {
    let text = format!(
        "[tlb]\nkind = \"set-associative\"\nsets = 1\nways = 64\npage_sizes = [\"4K\", \"64K\", \"2M\"]\n\
         [frames]\nkind = \"buddy\"\nmemory = \"256M\"\nmax_block = \"4M\"\n{frames}\n\
         [promotion]\npolicy = \"thp\"\nsizes = [\"2M\"]\nfault = false\nscan_every = 0\n\
         folio_sizes = [\"16K\", \"64K\"]\n{extra}"
    );
    let config: MachineConfig = toml::from_str(&text).unwrap();
    let mut m = Machine::build(&config).unwrap();
    // Every page of 4 MiB once, in order.
    let refs = (0..PAGES)
        .map(|p| MemRef::new(BASE + p * 4096, 8, AccessKind::Load))
        .collect();
    m.run_batch(&Batch {
        refs,
        events: vec![],
    })
    .unwrap();
    m.report()
}

fn stat(r: &Report, name: &str) -> u64 {
    r.policy_stats[name]
}

#[test]
fn free_memory_gives_every_fault_the_largest_folio() {
    let r = run("", "");
    assert_eq!(r.counts.page_faults, PAGES / 16);
    assert_eq!(stat(&r, "folio faults"), PAGES / 16);
    assert_eq!(stat(&r, "folio fallbacks"), 0);
    assert_eq!(stat(&r, "folio base pages"), PAGES);
    // Base-page entries: a miss per page.
    assert_eq!(r.levels[0].misses, PAGES);
}

#[test]
fn with_the_contiguous_bit_a_64k_folio_is_one_entry() {
    let r = run("", "[coalescing]\nkind = \"contiguous-bit\"\npages = 16\n");
    assert_eq!(r.levels[0].misses, PAGES / 16);
}

#[test]
fn fragmented_memory_falls_back_to_smaller_folios_then_base_pages() {
    // Three frames in four wired at random: no free 64 KiB block is left, few 16 KiB.
    let r = run("wired = 0.75\n", "");
    let (folios, fallbacks, pages) = (
        stat(&r, "folio faults"),
        stat(&r, "folio fallbacks"),
        stat(&r, "folio base pages"),
    );
    assert_eq!(pages, 4 * folios, "every folio is 16 KiB");
    assert!(folios > 0, "some 16 KiB blocks are free");
    // Every fault tried 64K first; those that mapped a base page tried 16K too.
    let base_faults = r.counts.page_faults - folios;
    assert!(base_faults > 0);
    assert_eq!(fallbacks, folios + 2 * base_faults);
    assert_eq!(pages + base_faults, PAGES);
}
