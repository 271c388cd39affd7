//! Coalesced TLB entries against plain LRU models of one page size: with every frame
//! contiguous, a TLB that coalesces 16 pages misses as a TLB of 64 KiB pages; with
//! none contiguous, as a TLB of 4 KiB pages. The models are a list kept in recency
//! order, one entry per page of their size.

use pagelab_core::config::MachineConfig;
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::machine::Machine;

/// Region the references fall in: 64 MiB at 1 GiB.
const BASE: u64 = 1 << 30;
const SPAN: u64 = 64 << 20;
const WAYS: usize = 64;

/// Misses of a fully associative LRU TLB of `WAYS` entries of pages of `shift`.
fn lru_misses(refs: &[MemRef], shift: u32) -> u64 {
    let mut stack: Vec<u64> = Vec::new();
    let mut misses = 0;
    for r in refs {
        let page = r.addr.0 >> shift;
        match stack.iter().position(|&p| p == page) {
            Some(i) => {
                stack.remove(i);
            }
            None => {
                misses += 1;
                if stack.len() == WAYS {
                    stack.pop();
                }
            }
        }
        stack.insert(0, page);
    }
    misses
}

/// References in the region: runs within a 64 KiB group and jumps between groups.
fn trace(n: usize, seed: u64) -> Vec<MemRef> {
    let mut x = seed | 1;
    let mut at = BASE;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            at = if x % 4 == 0 {
                BASE + (x >> 8) % SPAN
            } else {
                (at & !0xffff) | ((x >> 20) & 0xfff8)
            };
            MemRef::new(at & !7, 8, AccessKind::Load)
        })
        .collect()
}

fn machine(extra: &str) -> Machine {
    let text = format!(
        "[tlb]\nkind = \"set-associative\"\nsets = 1\nways = {WAYS}\npage_sizes = [\"4K\", \"64K\"]\n\
         [coalescing]\nkind = \"contiguous-bit\"\npages = 16\n{extra}"
    );
    let config: MachineConfig = toml::from_str(&text).unwrap();
    Machine::build(&config).unwrap()
}

fn misses(m: &mut Machine, refs: &[MemRef]) -> u64 {
    m.run_batch(&Batch {
        refs: refs.to_vec(),
        events: vec![],
    })
    .unwrap();
    m.report().levels[0].misses
}

#[test]
fn every_frame_contiguous_misses_as_64k_pages() {
    // Eager paging maps the region at once, in aligned buddy blocks.
    let region = format!(
        "[frames]\nkind = \"buddy\"\nmemory = \"1G\"\nmax_block = \"4M\"\n[ranges]\nallocation = \"eager\"\nregions = [\"{BASE:#x}+64M\"]\n"
    );
    let refs = trace(20_000, 0xc0a1);
    let mut m = machine(&region);
    let got = misses(&mut m, &refs);
    assert_eq!(got, lru_misses(&refs, 16));
    assert!(got < lru_misses(&refs, 12));
    let by_size = &m.report().levels[0].by_size;
    assert!(
        by_size
            .iter()
            .all(|s| s.size == "64K" || s.hits + s.misses == 0),
        "{by_size:?}"
    );
}

#[test]
fn no_frame_contiguous_misses_as_4k_pages() {
    // Every page touched first from the top down: each next page's frame is the one
    // before the previous page's.
    let pages = SPAN / 4096;
    let mut refs: Vec<MemRef> = (0..pages)
        .rev()
        .map(|p| MemRef::new(BASE + p * 4096, 8, AccessKind::Load))
        .collect();
    refs.extend(trace(20_000, 0xc0a2));
    let mut m = machine("");
    let got = misses(&mut m, &refs);
    assert_eq!(got, lru_misses(&refs, 12));
}
