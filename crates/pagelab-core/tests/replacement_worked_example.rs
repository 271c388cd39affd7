//! A worked example by hand: one set of four ways, the reference string
//! A B C D A E B F A C G D, and for each policy the outcome of every reference — a
//! hit, a miss that fills a free way, or a miss that evicts a page — written out as
//! literals and derived step by step in the comments. The policy objects are driven
//! directly (the victims are visible), and the same string through `SetAssocTlb`
//! must hit and miss on the same references and evict as often.

use pagelab_core::addr::{Asid, PageSize, Pfn, VirtAddr};
use pagelab_core::pagetable::{Perms, Translation};
use pagelab_core::replacement::{Fifo, Lru, Nru, Replacement, TreePlru};
use pagelab_core::tlb::{SetAssocTlb, Tlb};

const STRING: &str = "ABCDAEBFACGD";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Hit,
    /// A miss filled a free way.
    Cold,
    /// A miss evicted this page.
    Evicts(char),
}
use Outcome::*;

/// One set of four ways driven by policy `P`, as the array drives it: a hit touches
/// the way; a miss fills the lowest free way, else the policy's victim.
fn replay<P: Replacement>() -> Vec<Outcome> {
    let mut policy = P::new(1, 4, 0);
    let mut ways: [Option<char>; 4] = [None; 4];
    STRING
        .chars()
        .map(|page| {
            if let Some(w) = ways.iter().position(|&p| p == Some(page)) {
                policy.hit(0, w);
                return Hit;
            }
            let (w, outcome) = match ways.iter().position(|p| p.is_none()) {
                Some(free) => (free, Cold),
                None => {
                    let v = policy.victim(0);
                    (v, Evicts(ways[v].expect("a full set")))
                }
            };
            ways[w] = Some(page);
            policy.fill(0, w);
            outcome
        })
        .collect()
}

/// The same string through the array: hit or miss per reference, and evictions.
fn through_array<P: Replacement>() -> (Vec<bool>, u64) {
    let mut tlb = SetAssocTlb::<P>::new(1, 4, &[PageSize::K4], 0);
    let hits = STRING
        .chars()
        .map(|page| {
            let va = VirtAddr((page as u64) << 12);
            let hit = tlb.access(Asid(0), va).is_some();
            if !hit {
                let t = Translation {
                    pfn: Pfn(page as u64),
                    size: PageSize::K4,
                    perms: Perms::RW,
                };
                tlb.fill(Asid(0), va, t);
            }
            hit
        })
        .collect();
    (hits, tlb.stats().evictions)
}

fn check<P: Replacement>(want: [Outcome; 12]) {
    assert_eq!(replay::<P>(), want);
    let (hits, evictions) = through_array::<P>();
    assert_eq!(hits, want.map(|o| o == Hit));
    assert_eq!(
        evictions,
        want.iter().filter(|o| matches!(o, Evicts(_))).count() as u64
    );
}

#[test]
fn lru_by_hand() {
    // Recency, most recent first, after each reference:
    //  A B C D fill ways 0-3 ........... D C B A
    //  A hit ........................... A D C B
    //  E evicts the least recent, B .... E A D C
    //  B evicts C ...................... B E A D
    //  F evicts D ...................... F B E A
    //  A hit ........................... A F B E
    //  C evicts E ...................... C A F B
    //  G evicts B ...................... G C A F
    //  D evicts F ...................... D G C A
    check::<Lru>([
        Cold,
        Cold,
        Cold,
        Cold,
        Hit,
        Evicts('B'),
        Evicts('C'),
        Evicts('D'),
        Hit,
        Evicts('E'),
        Evicts('B'),
        Evicts('F'),
    ]);
}

#[test]
fn nru_by_hand() {
    // Ways hold [w0 w1 w2 w3]; bits are the reference bits of ways 0-3.
    //  A B C D fill ways 0-3; D's fill sets the last clear bit, so every other
    //          bit is cleared ................... [A B C D] 0001
    //  A hit ................................... [A B C D] 1001
    //  E: first clear bit is way 1, evicts B .... [A E C D] 1101
    //  B: way 2, evicts C; all set, keep way 2 .. [A E B D] 0010
    //  F: way 0, evicts A (hit at step 5, but its bit went with the epoch)
    //                                            [F E B D] 1010
    //  A: way 1, evicts E ....................... [F A B D] 1110
    //  C: way 3, evicts D; all set, keep way 3 .. [F A B C] 0001
    //  G: way 0, evicts F ....................... [G A B C] 1001
    //  D: way 1, evicts A ....................... [G D B C] 1101
    check::<Nru>([
        Cold,
        Cold,
        Cold,
        Cold,
        Hit,
        Evicts('B'),
        Evicts('C'),
        Evicts('A'),
        Evicts('E'),
        Evicts('D'),
        Evicts('F'),
        Evicts('A'),
    ]);
}

#[test]
fn tree_plru_by_hand() {
    // Nodes: r chooses between ways 0-1 (0) and 2-3 (1); a chooses 0 or 1; b chooses
    // 2 or 3. Touching a way points its nodes away from it. Shown as r a b.
    //  A B C D fill ways 0-3 ........... [A B C D] 0 0 0
    //  A hit: r→right, a→1 ............. [A B C D] 1 1 0
    //  E: r=1, b=0: way 2, evicts C .... [A B E D] 0 1 1
    //  B hit (LRU had evicted B) ....... [A B E D] 1 0 1
    //  F: r=1, b=1: way 3, evicts D .... [A B E F] 0 0 0
    //  A hit ........................... [A B E F] 1 1 0
    //  C: r=1, b=0: way 2, evicts E .... [A B C F] 0 1 1
    //  G: r=0, a=1: way 1, evicts B .... [A G C F] 1 0 1
    //  D: r=1, b=1: way 3, evicts F .... [A G C D] 0 0 0
    check::<TreePlru>([
        Cold,
        Cold,
        Cold,
        Cold,
        Hit,
        Evicts('C'),
        Hit,
        Evicts('D'),
        Hit,
        Evicts('E'),
        Evicts('B'),
        Evicts('F'),
    ]);
}

#[test]
fn fifo_by_hand() {
    // Fill order, oldest first; hits change nothing.
    //  A B C D fill ways 0-3 ..... A B C D
    //  A hit ..................... A B C D
    //  E evicts A ................ B C D E
    //  B hit ..................... B C D E
    //  F evicts B ................ C D E F
    //  A evicts C ................ D E F A
    //  C evicts D ................ E F A C
    //  G evicts E ................ F A C G
    //  D evicts F ................ A C G D
    check::<Fifo>([
        Cold,
        Cold,
        Cold,
        Cold,
        Hit,
        Evicts('A'),
        Hit,
        Evicts('B'),
        Evicts('C'),
        Evicts('D'),
        Evicts('E'),
        Evicts('F'),
    ]);
}
