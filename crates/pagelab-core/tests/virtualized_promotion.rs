//! Superpage policies in a virtual machine's guest:
//!
//! - over host pages as large as the guest's superpages, every TLB entry is the
//!   guest's page, so the run is the native run, policy for policy: the same hits and
//!   misses, faults, promotions and copies (a differential test of every policy:
//!   `static` maps its regions at faults, the others promote);
//! - over 4 KiB host pages a guest superpage is held as 4 KiB entries (splintered), a
//!   case worked by hand;
//! - a promotion's copy reaches the data caches at host frames, and the host maps the
//!   fresh block as the copy writes it, with a cache model or without.
//!
//! That promotions under virtualization never change what an address reaches, and
//! leave no TLB entry stale, is in superpages_integrity.rs.

use pagelab_core::addr::{Asid, PhysAddr, VirtAddr};
use pagelab_core::config::MachineConfig;
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::machine::Machine;

/// A 512-entry TLB of 4K and 2M pages over a radix table and a buddy allocator,
/// with `promotion` (the lines of `[promotion]`), over a host of `host` pages if
/// given; `extra` is added to the machine.
fn config(promotion: &str, host: Option<&str>, extra: &str) -> MachineConfig {
    let mut text = format!(
        "[tlb]\nkind = \"set-associative\"\nsets = 64\nways = 8\npage_sizes = [\"4K\", \"2M\"]\n\
         [frames]\nkind = \"buddy\"\nmemory = \"1G\"\n\
         [promotion]\n{promotion}\n{extra}\n"
    );
    if let Some(page) = host {
        text += &format!(
            "[virtualization]\nhost_page = \"{page}\"\n\
             host_frames = {{ kind = \"buddy\", memory = \"4G\" }}\n"
        );
    }
    toml::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn run(m: &mut Machine, refs: &[MemRef]) {
    for chunk in refs.chunks(300) {
        m.run_batch(&Batch {
            refs: chunk.to_vec(),
            events: vec![],
        })
        .unwrap();
    }
}

fn load(va: u64) -> MemRef {
    MemRef::new(va, 8, AccessKind::Load)
}

/// Sweeps of a 4 MiB region (two 2 MiB candidates filled), then random references
/// over it and two other regions, some pages often, some once.
fn trace(seed: u64) -> Vec<MemRef> {
    let regions = [0x4000_0000u64, 0x8000_0000, 0x7f00_0000_0000];
    let sweep = (0..1024u64).map(|p| load(regions[0] + p * 4096 + 64));
    let mut x = seed | 1;
    let random = (0..12_000).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let pages = if x & 8 == 0 { 16 } else { 1024 };
        load(regions[(x % 3) as usize] + ((x >> 8) % pages) * 4096 + (x >> 40) % 512 * 8)
    });
    sweep.clone().chain(random).chain(sweep).collect()
}

/// Every policy, with options that make it map superpages on [`trace`].
const POLICIES: [(&str, &str); 7] = [
    (
        "static",
        "policy = \"static\"\nregions = [{ start = 0x40000000, bytes = \"4M\", page_size = \"2M\" }]",
    ),
    ("thp at faults", "policy = \"thp\""),
    (
        "thp by its background pass",
        "policy = \"thp\"\nfault = false\nscan_every = 50\nranges_per_scan = 4\nmax_ptes_none = 511",
    ),
    ("asap", "policy = \"asap\"\nsizes = [\"2M\"]"),
    (
        "approx-online",
        "policy = \"approx-online\"\nsizes = [\"2M\"]\nthreshold = 4",
    ),
    (
        "online",
        "policy = \"online\"\nsizes = [\"2M\"]\nthreshold = 4",
    ),
    ("reservation", "policy = \"reservation\"\nsizes = [\"2M\"]"),
];

#[test]
fn over_host_pages_as_large_as_its_superpages_a_guest_policy_runs_as_natively() {
    let refs = trace(0x2545_f491);
    for (name, promotion) in POLICIES {
        let mut native = Machine::build(&config(promotion, None, "")).unwrap();
        let mut nested = Machine::build(&config(promotion, Some("2M"), "")).unwrap();
        run(&mut native, &refs);
        run(&mut nested, &refs);
        let (n, v) = (native.report(), nested.report());
        let (nc, vc) = (&n.counts, &v.counts);
        assert!(nc.promotions + nc.large_faults > 0, "{name}: no superpage");
        assert_eq!(n.levels, v.levels, "{name}: the TLB");
        assert_eq!(
            (nc.page_faults, nc.large_faults, nc.walks, nc.promotions),
            (vc.page_faults, vc.large_faults, vc.walks, vc.promotions),
            "{name}"
        );
        assert_eq!(
            (nc.pages_copied, nc.pages_zeroed, nc.promotion_failures),
            (vc.pages_copied, vc.pages_zeroed, vc.promotion_failures),
            "{name}"
        );
        assert_eq!(n.policy_stats, v.policy_stats, "{name}");
        let virt = v.virtualization.as_ref().unwrap();
        assert_eq!(nc.walk_refs, virt.guest_refs, "{name}: the guest's walks");
        assert_eq!(virt.splintered, 0, "{name}");
        for r in &refs {
            assert_eq!(
                native.guest_translation(r.asid, r.addr),
                nested.guest_translation(r.asid, r.addr),
                "{name}: {:#x}",
                r.addr.0
            );
        }
    }
}

/// 512 pages of one 2 MiB candidate, once each: asap promotes at the last one.
fn fill_candidate(m: &mut Machine) {
    let refs: Vec<MemRef> = (0..512u64).map(|p| load(0x4000_0000 + p * 4096)).collect();
    run(m, &refs);
    assert_eq!(m.report().counts.promotions, 1);
}

#[test]
fn a_guest_superpage_over_small_host_pages_is_held_as_small_entries() {
    let asap = "policy = \"asap\"\nsizes = [\"2M\"]";
    for (host, misses, splintered) in [("4K", 512, 512), ("2M", 1, 0)] {
        let mut m = Machine::build(&config(asap, Some(host), "")).unwrap();
        fill_candidate(&mut m);
        let before = m.report();
        // The promotion dropped every entry of the range: the second pass misses
        // once per entry the superpage is held as.
        let refs: Vec<MemRef> = (0..512u64).map(|p| load(0x4000_0000 + p * 4096)).collect();
        run(&mut m, &refs);
        let after = m.report();
        let (v, w) = (
            after.virtualization.as_ref().unwrap(),
            before.virtualization.as_ref().unwrap(),
        );
        assert_eq!(
            after.levels[0].misses - before.levels[0].misses,
            misses,
            "host {host}"
        );
        assert_eq!(v.splintered - w.splintered, splintered, "host {host}");
        assert_eq!(after.counts.page_faults, before.counts.page_faults);
        let t = m.guest_translation(Asid(0), VirtAddr(0x4000_0000)).unwrap();
        assert_eq!(t.size.to_string(), "2M", "the guest maps one superpage");
    }
}

#[test]
fn a_promotions_copy_reaches_the_caches_at_host_frames() {
    let asap = "policy = \"asap\"\nsizes = [\"2M\"]";
    let caches = "[cache]\n[[cache.levels]]\nname = \"L1\"\nsets = 64\nways = 8\nhit_cycles = 4\n";
    let mut cached = Machine::build(&config(asap, Some("4K"), caches)).unwrap();
    let mut uncached = Machine::build(&config(asap, Some("4K"), "")).unwrap();
    fill_candidate(&mut cached);
    fill_candidate(&mut uncached);
    let block = cached
        .guest_translation(Asid(0), VirtAddr(0x4000_0000))
        .unwrap();
    let gpa = |p: u64| PhysAddr(block.pfn.addr().0 + p * 4096);
    // The copy wrote every page of the fresh block: the host mapped each, with caches
    // or without (the copy is then priced, not traced, and its faults the same).
    let mapped = |m: &Machine| {
        (0..512)
            .filter(|&p| m.host_translation(gpa(p)).is_some())
            .count()
    };
    assert_eq!(mapped(&cached), 512);
    assert_eq!(mapped(&uncached), 512);
    let faults = |m: &Machine| m.report().virtualization.unwrap().host_faults;
    assert_eq!(faults(&cached), faults(&uncached));
    // 512 pages of 64 lines, each read and written.
    let l1 = &cached.report().cache.unwrap().levels[0];
    assert_eq!(l1.hits.copy + l1.misses.copy, 512 * 128);
    // The last line written is in the first level, at its host address.
    let last = PhysAddr(gpa(511).0 + 4096 - 64);
    let host = cached.host_translation(last).unwrap();
    let at = PhysAddr(host.phys(VirtAddr(last.0)).0);
    let caches = cached.caches().unwrap();
    assert!(caches.holds(0, at));
    assert_ne!(at, last, "host and guest frames differ here");
}

#[test]
fn remapped_superpages_are_refused_in_a_guest() {
    let c = config(
        "policy = \"asap\"",
        Some("4K"),
        "[mechanism]\nkind = \"remap\"\n",
    );
    let e = Machine::build(&c).err().expect("refused").to_string();
    assert!(e.contains("mechanism.kind"), "{e}");
}
