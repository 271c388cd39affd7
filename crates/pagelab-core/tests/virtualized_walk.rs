//! Two-dimensional walks worked by hand (Bhargava et al., "Accelerating
//! Two-Dimensional Page Walks for Virtualized Systems", ASPLOS 2008,
//! doi:10.1145/1346281.1346286, §2.2: a 4-level guest table over a 4-level host
//! table takes 24 references with every cache cold), and the counts with each
//! nested cache warm.
//!
//! Each machine has a one-entry TLB and runs A, B, A, where A = 0x1000 and B =
//! 0x2000 share every guest table node. By the second A, the guest has mapped A and
//! B, and the host has mapped every guest-physical page the walks touched (the
//! guest's four table nodes, A's frame and B's frame, all within the first 2 MiB of
//! guest-physical memory): A's walk is the one worked here, faulting nowhere.

use pagelab_core::config::MachineConfig;
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::machine::{Machine, Report};
use pagelab_core::virt::VirtualizationReport;

const A: u64 = 0x1000;
const B: u64 = 0x2000;

/// A one-entry TLB over a 4-level guest table; `guest_caches` and `host` are TOML
/// lines added to the machine and to its `[virtualization]`.
fn machine(guest_caches: &str, host: &str) -> Machine {
    let text = format!(
        "[tlb]\nkind = \"set-associative\"\nsets = 1\nways = 1\n{guest_caches}\n[virtualization]\n{host}\n"
    );
    let config: MachineConfig = toml::from_str(&text).unwrap();
    Machine::build(&config).unwrap()
}

fn run(m: &mut Machine, va: u64) -> Report {
    m.run_batch(&Batch {
        refs: vec![MemRef::new(va, 8, AccessKind::Load)],
        events: vec![],
    })
    .unwrap();
    m.report()
}

/// The walk of the second A: its references, guest references and host references
/// (with the counts of that reference alone checked to be one walk, no fault).
fn second_a(guest_caches: &str, host: &str) -> (u64, u64, u64) {
    let mut m = machine(guest_caches, host);
    run(&mut m, A);
    let before = run(&mut m, B);
    let after = run(&mut m, A);
    let (c, w) = (&after.counts, &before.counts);
    assert_eq!(c.walks - w.walks, 1);
    assert_eq!(c.page_faults, w.page_faults, "A is mapped");
    let (v, vw): (&VirtualizationReport, &VirtualizationReport) = (
        after.virtualization.as_ref().unwrap(),
        before.virtualization.as_ref().unwrap(),
    );
    assert_eq!(
        v.host_faults, vw.host_faults,
        "the host maps all A's walk touches"
    );
    (
        c.walk_refs - w.walk_refs,
        v.guest_refs - vw.guest_refs,
        v.host_refs - vw.host_refs,
    )
}

#[test]
fn cold_walk_of_four_over_four_levels_takes_24_references() {
    // Each of the four guest entries: a host walk of 4, then the entry; then the
    // host walk of the data's guest-physical address: 4 × (4 + 1) + 4.
    assert_eq!(second_a("", ""), (24, 4, 20));
}

#[test]
fn five_level_guest_over_five_level_host_takes_35_references() {
    let radix5 = "[page_table]\nkind = \"radix\"\nlevels = 5\n";
    let host5 = "host_page_table = { kind = \"radix\", levels = 5 }";
    // 5 × (5 + 1) + 5.
    assert_eq!(second_a(radix5, host5), (35, 5, 30));
}

#[test]
fn a_warm_guest_walk_cache_skips_guest_entries_and_their_host_walks() {
    // The page-directory entry cached (by B's walk) holds the host-physical address
    // of the last guest table: its entry is read with no host walk, then the data's
    // host walk: 1 + 4.
    let pde = "[[walk_caches]]\nlevel = 2\n";
    assert_eq!(second_a(pde, ""), (5, 1, 4));
}

#[test]
fn a_warm_nested_tlb_skips_every_host_walk() {
    // Every guest-physical page of A's walk was translated before (the four nodes
    // by B's walk, A's frame by A's first): the four guest entries alone.
    let ntlb = "nested_tlb = { sets = 1, ways = 16 }";
    assert_eq!(second_a("", ntlb), (4, 4, 0));
}

#[test]
fn a_warm_host_walk_cache_skips_the_upper_host_entries() {
    // Every guest-physical address lies in the first 2 MiB: the host's
    // page-directory entry for it is cached, and each of the five host walks reads
    // the last host entry only: 4 × (1 + 1) + 1.
    let host_pde = "host_walk_caches = [{ level = 2 }]";
    assert_eq!(second_a("", host_pde), (9, 4, 5));
}

#[test]
fn every_cache_warm_leaves_one_guest_entry() {
    let pde = "[[walk_caches]]\nlevel = 2\n";
    let both = "nested_tlb = { sets = 1, ways = 16 }\nhost_walk_caches = [{ level = 2 }]";
    assert_eq!(second_a(pde, both), (1, 1, 0));
}

#[test]
fn a_guest_superpage_over_host_base_pages_is_splintered() {
    // The guest maps 2 MiB pages, the host 4 KiB ones: the TLB holds a 4 KiB entry,
    // so a reference 4 KiB further misses again, and its walk is splintered too.
    let guest = "base_page = \"2M\"\n[tlb]\n";
    let mut config: MachineConfig = toml::from_str(
        &format!("{guest}kind = \"set-associative\"\nsets = 1\nways = 4\npage_sizes = [\"4K\", \"2M\"]\n[virtualization]\n"),
    )
    .unwrap();
    let mut m = Machine::build(&config).unwrap();
    run(&mut m, 0x20_0000);
    let r = run(&mut m, 0x20_1000);
    assert_eq!(r.counts.page_faults, 1, "one guest page");
    assert_eq!(r.levels[0].misses, 2, "two TLB entries for it");
    assert_eq!(r.virtualization.as_ref().unwrap().splintered, 2);
    // With 2 MiB host pages the entry is the guest's whole page.
    config.virtualization.as_mut().unwrap().host_page = pagelab_core::addr::PageSize::M2;
    let mut m = Machine::build(&config).unwrap();
    run(&mut m, 0x20_0000);
    let r = run(&mut m, 0x20_1000);
    assert_eq!(r.levels[0].misses, 1);
    let v = r.virtualization.as_ref().unwrap();
    assert_eq!((v.splintered, v.host_large_faults), (0, v.host_faults));
}

#[test]
fn a_virtualized_machine_refuses_what_it_does_not_model() {
    for (section, named) in [
        (
            "[promotion]\npolicy = \"asap\"\n[mechanism]\nkind = \"remap\"\n",
            "mechanism.kind",
        ),
        ("[paging]\nresident_limit = \"1M\"\n", "[paging]"),
        ("[virtualization]\nhost_page = \"8K\"\n", "virtualization.host_page"),
        (
            "[virtualization]\nhost_walk_caches = [{ level = 2 }]\nhost_page_table = { kind = \"hashed\" }\n",
            "virtualization.host_walk_caches[0]",
        ),
        (
            "[virtualization]\nhost_frames = { kind = \"simple\", memory = \"1K\" }\n",
            "virtualization.host_frames.memory",
        ),
    ] {
        let text = if section.starts_with("[virtualization]") {
            section.to_string()
        } else {
            format!("{section}[virtualization]\n")
        };
        let config: MachineConfig = toml::from_str(&text).unwrap();
        let e = Machine::build(&config).err().expect("refused").to_string();
        assert!(e.contains(named), "{e}");
    }
}
