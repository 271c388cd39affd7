//! Every guest structure over every host structure, checked against two references:
//!
//! - the native run of the same guest: guest-physical memory is the guest's own
//!   allocator, so every address reaches the same guest frame, and the guest side of
//!   the run (TLB hits and misses, faults, walks, the guest entries read) is the
//!   native run's, whatever the host, while host pages are no smaller than guest ones;
//! - the two tables looked up one after the other: every TLB entry a two-dimensional
//!   walk made holds the host frame the guest and host tables compose to, and
//!   distinct guest pages reach distinct host frames.
//!
//! A decoupled run of each pair counts what the in-order run counts.

use pagelab_core::addr::{Asid, VirtAddr};
use pagelab_core::config::MachineConfig;
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::machine::Machine;
use pagelab_core::pagetable::NAMES;
use std::collections::HashMap;

const DATA: usize = 0;

/// A machine whose guest table is `guest`; over a host table `host` (with a host
/// fault mapping `host_page`) if given. Memory is small enough for the inverted
/// tables' frame arrays.
fn config(guest: &str, host: Option<(&str, &str)>) -> MachineConfig {
    let mut text = format!(
        "[tlb]\nkind = \"set-associative\"\nsets = 4\nways = 2\n\
         [frames]\nkind = \"buddy\"\nmemory = \"1G\"\n\
         [page_table]\nkind = \"{guest}\"\n"
    );
    if guest == "inverted" {
        text += "memory = \"1G\"\n";
    }
    if let Some((host, page)) = host {
        let memory = if host == "inverted" {
            ", memory = \"2G\""
        } else {
            ""
        };
        text += &format!(
            "[virtualization]\nhost_page = \"{page}\"\n\
             host_page_table = {{ kind = \"{host}\"{memory} }}\n\
             host_frames = {{ kind = \"buddy\", memory = \"2G\" }}\n"
        );
    }
    toml::from_str(&text).unwrap()
}

/// References over three regions far apart, some pages often, some once.
fn trace(n: usize, seed: u64) -> Vec<MemRef> {
    let mut x = seed | 1;
    let regions = [0x40_0000u64, 0x1_0000_0000, 0x7f00_0000_0000];
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let base = regions[(x % 3) as usize];
            let pages = if x & 8 == 0 { 16 } else { 1024 };
            let va = base + ((x >> 8) % pages) * 4096 + (x >> 40) % 4096 / 8 * 8;
            MemRef::new(va, 8, AccessKind::Load)
        })
        .collect()
}

fn run(m: &mut Machine, refs: &[MemRef]) {
    for chunk in refs.chunks(700) {
        m.run_batch(&Batch {
            refs: chunk.to_vec(),
            events: vec![],
        })
        .unwrap();
    }
}

/// The checks of one pair against the native run of its guest.
fn check_pair(guest: &str, host: &str, page: &str, refs: &[MemRef]) {
    let pair = format!("{guest} over {host}, host pages {page}");
    let mut native = Machine::build(&config(guest, None)).unwrap();
    run(&mut native, refs);
    let mut nested = Machine::build(&config(guest, Some((host, page)))).unwrap();
    nested.set_decoupled(false);
    let mut decoupled = Machine::build(&config(guest, Some((host, page)))).unwrap();
    let mut host_frames: HashMap<u64, u64> = HashMap::new();
    for chunk in refs.chunks(500) {
        run(&mut nested, chunk);
        // Every entry the walks made is the two tables composed: it reaches the
        // host address of the guest address of the reference, within the smaller
        // of the two pages.
        for r in chunk {
            if let Some(t) = nested.tlb().peek(DATA, r.asid, r.addr) {
                let guest = nested.guest_translation(r.asid, r.addr).unwrap();
                let gpa = guest.phys(r.addr);
                let host = nested.host_translation(gpa).unwrap();
                let at = format!("{pair}: entry of {:#x}", r.addr.0);
                assert_eq!(t.phys(r.addr), host.phys(VirtAddr(gpa.0)), "{at}");
                assert_eq!(t.size, guest.size.min(host.size), "{at}");
                assert_eq!(Some(t), nested.entry_of(r.asid, r.addr), "{at}");
            }
        }
    }
    run(&mut decoupled, refs);
    let (n, v, d) = (native.report(), nested.report(), decoupled.report());
    let virt = v.virtualization.as_ref().unwrap();
    for (a, b) in n.levels.iter().zip(&v.levels) {
        assert_eq!(
            (a.hits, a.misses),
            (b.hits, b.misses),
            "{pair}: level {}",
            a.name
        );
    }
    let (nc, vc) = (&n.counts, &v.counts);
    assert_eq!(
        (nc.page_faults, nc.walks, nc.walk_refs),
        (vc.page_faults, vc.walks, virt.guest_refs),
        "{pair}: the guest side is the native run"
    );
    assert_eq!(vc.walk_refs, virt.guest_refs + virt.host_refs, "{pair}");
    assert!(
        virt.host_refs >= virt.guest_refs,
        "{pair}: a host walk per guest entry"
    );
    assert_eq!(v.counts, d.counts, "{pair}: decoupled");
    assert_eq!(v.levels, d.levels, "{pair}: decoupled");
    assert_eq!(v.virtualization, d.virtualization, "{pair}: decoupled");
    // The same guest frames; distinct pages in distinct host frames.
    let asid = Asid(0);
    let mut pages: Vec<u64> = refs.iter().map(|r| r.addr.0 & !4095).collect();
    pages.sort_unstable();
    pages.dedup();
    for &page in &pages {
        let va = VirtAddr(page);
        let guest = nested.guest_translation(asid, va);
        assert_eq!(
            guest,
            native.guest_translation(asid, va),
            "{pair}: {page:#x}"
        );
        let e = nested
            .entry_of(asid, va)
            .expect("mapped in both dimensions");
        assert!(e.size <= guest.unwrap().size);
        let frame = e.phys(va).0 >> 12;
        if let Some(other) = host_frames.insert(frame, page) {
            panic!("{pair}: {page:#x} and {other:#x} reach host frame {frame:#x}");
        }
    }
    assert_eq!(
        vc.fault_walk_refs, virt.fault_refs,
        "{pair}: the retried walks' references"
    );
    assert!(virt.host_faults > 0 && virt.walks == vc.walks, "{pair}");
    if page == "2M" {
        assert!(virt.host_large_faults > 0, "{pair}: 2 MiB host pages");
    }
}

#[test]
fn every_guest_structure_over_every_host_structure() {
    let refs = trace(6000, 0x9e37_79b9);
    for guest in NAMES {
        for host in NAMES {
            check_pair(guest, host, "4K", &refs);
        }
    }
}

#[test]
fn every_pair_with_large_host_pages() {
    // Every structure maps 2 MiB pages by default.
    let refs = trace(3000, 0x5151);
    for guest in NAMES {
        for host in NAMES {
            check_pair(guest, host, "2M", &refs);
        }
    }
}

/// Hashed tables of two buckets read hundreds of records a walk, past what a walk
/// records: every reference still counts, in both dimensions.
#[test]
fn walks_longer_than_their_record_count_every_reference() {
    let text = "[tlb]\nkind = \"set-associative\"\nsets = 4\nways = 2\n\
                [page_table]\nkind = \"hashed\"\nbuckets = 2\n\
                [virtualization]\nhost_page_table = { kind = \"hashed\", buckets = 2 }\n";
    let mut m = Machine::build(&toml::from_str(text).unwrap()).unwrap();
    run(&mut m, &trace(3000, 0x77));
    let r = m.report();
    let v = r.virtualization.as_ref().unwrap();
    assert!(v.host_refs_per_walk > 64.0, "{v:?}");
    assert_eq!(r.counts.walk_refs, v.guest_refs + v.host_refs);
    assert_eq!(r.counts.fault_walk_refs, v.fault_refs);
}
