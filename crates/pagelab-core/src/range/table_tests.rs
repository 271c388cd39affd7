use super::*;
use crate::pagetable::Perms;
use proptest::prelude::*;

fn table_of(n: u64) -> RangeTable {
    let mut t = RangeTable::default();
    for i in 0..n {
        t.insert(i * 10, 5, 1000 + i * 5, Perms::RW).unwrap();
    }
    t
}

#[test]
fn four_ranges_a_node_five_children_124_in_three_levels() {
    // Fig. 5: "Each node accommodates four range translations and points to five
    // children, allowing up to 124 range translations in three levels."
    for (n, depth) in [
        (0, 0),
        (1, 1),
        (4, 1),
        (5, 2),
        (24, 2),
        (25, 3),
        (124, 3),
        (125, 4),
    ] {
        let t = table_of(n);
        assert_eq!(t.depth(), depth, "{n} ranges");
        t.check().unwrap();
    }
    // A full three-level tree: 1 + 5 + 25 nodes.
    assert_eq!(table_of(124).nodes(), 31);
}

#[test]
fn a_walk_reads_one_node_a_level() {
    let t = table_of(124);
    for i in [0, 61, 123] {
        let f = t.lookup(i * 10 + 2);
        assert_eq!(f.range.unwrap().base, i * 10);
        assert_eq!(f.range.unwrap().frame(i * 10 + 2), 1000 + i * 5 + 2);
        assert!(f.nodes <= 3);
    }
    // A page in a gap is not found, after a walk down to a leaf.
    let f = t.lookup(7);
    assert_eq!((f.range, f.nodes), (None, 3));
    assert_eq!(RangeTable::default().lookup(7).nodes, 0);
}

#[test]
fn overlapping_or_empty_ranges_are_refused_and_change_nothing() {
    let mut t = table_of(3);
    assert!(t.insert(12, 2, 0, Perms::RW).is_err());
    assert!(t.insert(8, 3, 0, Perms::RW).is_err());
    assert!(t.insert(40, 0, 0, Perms::RW).is_err());
    assert_eq!(t.ranges().len(), 3);
    assert!(t.insert(5, 5, 0, Perms::RW).is_ok());
}

#[test]
fn removing_splits_shrinks_and_deletes() {
    let mut t = RangeTable::default();
    t.insert(100, 100, 5000, Perms::RW).unwrap();
    t.insert(300, 10, 9000, Perms::RW).unwrap();
    let gone = t.remove(150, 160);
    assert_eq!(gone.len(), 1);
    assert_eq!((gone[0].base, gone[0].limit, gone[0].pfn), (150, 160, 5050));
    let r: Vec<_> = t
        .ranges()
        .iter()
        .map(|r| (r.base, r.limit, r.pfn))
        .collect();
    assert_eq!(r, [(100, 150, 5000), (160, 200, 5060), (300, 310, 9000)]);
    t.remove(190, 305);
    let r: Vec<_> = t
        .ranges()
        .iter()
        .map(|r| (r.base, r.limit, r.pfn))
        .collect();
    assert_eq!(r, [(100, 150, 5000), (160, 190, 5060), (305, 310, 9005)]);
    t.check().unwrap();
}

#[test]
fn touched_pages_follow_their_range_through_a_split() {
    let mut t = RangeTable::default();
    let r = t.insert(100, 10, 5000, Perms::RW).unwrap();
    t.touch(&r, 101);
    t.touch(&r, 108);
    assert_eq!(t.untouched_pages(), 8);
    t.remove(104, 106);
    // The pieces keep their bits: 101 and 108 still touched, 6 pages untouched.
    assert_eq!(t.untouched_pages(), 6);
    let tail = t.lookup(108).range.unwrap();
    t.touch(&tail, 109);
    assert_eq!(t.untouched_pages(), 5);
}

#[test]
fn only_the_newest_range_grows_and_only_onto_its_next_frames() {
    let mut t = RangeTable::default();
    t.insert(100, 10, 5000, Perms::RW).unwrap();
    assert!(t.extend(110, 5, 6000).is_none());
    assert_eq!(t.extend(110, 5, 5010).unwrap().limit, 115);
    t.insert(200, 1, 7000, Perms::RW).unwrap();
    assert!(
        t.extend(115, 1, 5015).is_none(),
        "its bits would not follow its own"
    );
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, u64, u64),
    Extend(u64, u64),
    Remove(u64, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..2000, 1u64..60, 0u64..100_000).prop_map(|(b, p, f)| Op::Insert(b, p, f)),
        1 => (1u64..40, any::<bool>()).prop_map(|(p, contiguous)| Op::Extend(p, contiguous as u64)),
        2 => (0u64..2000, 1u64..200).prop_map(|(b, p)| Op::Remove(b, b + p)),
    ]
}

proptest! {
    /// The table finds exactly the ranges inserted and not removed, against a sorted
    /// vector of (base, limit, pfn), for any sequence of changes; the tree keeps its
    /// shape and reads at most one node a level.
    #[test]
    fn the_tree_finds_what_a_sorted_list_holds(ops in prop::collection::vec(op(), 1..120)) {
        let mut t = RangeTable::default();
        let mut reference: Vec<(u64, u64, u64)> = Vec::new();
        for op in ops {
            match op {
                Op::Insert(base, pages, pfn) => {
                    let clash = reference.iter().any(|&(b, l, _)| b < base + pages && base < l);
                    prop_assert_eq!(t.insert(base, pages, pfn, Perms::RW).is_ok(), !clash);
                    if !clash {
                        reference.push((base, base + pages, pfn));
                    }
                }
                Op::Extend(pages, contiguous) => {
                    // Grow the newest range onto its next frames, or onto others.
                    let Some(&(b, l, f)) = t.ranges().iter().max_by_key(|r| r.mark).map(|r| (r.base, r.limit, r.pfn)).as_ref() else { continue };
                    let pfn = if contiguous == 1 { f + (l - b) } else { f + (l - b) + 1 };
                    let room = reference.iter().all(|&(rb, _, _)| rb <= b || rb >= l + pages);
                    let grown = t.extend(l, pages, pfn);
                    prop_assert!(grown.is_none() || (contiguous == 1 && room));
                    if grown.is_some() {
                        let e = reference.iter_mut().find(|e| e.0 == b).unwrap();
                        e.1 += pages;
                    }
                }
                Op::Remove(from, to) => {
                    let mut next = Vec::new();
                    for &(b, l, f) in &reference {
                        if l <= from || to <= b {
                            next.push((b, l, f));
                            continue;
                        }
                        if b < from { next.push((b, from, f)); }
                        if to < l { next.push((to, l, f + (to - b))); }
                    }
                    t.remove(from, to);
                    reference = next;
                }
            }
            reference.sort();
            let got: Vec<_> = t.ranges().iter().map(|r| (r.base, r.limit, r.pfn)).collect();
            prop_assert_eq!(&got, &reference);
            prop_assert!(t.check().is_ok(), "{:?}", t.check());
            for vpn in (0..2300).step_by(7) {
                let want = reference.iter().find(|&&(b, l, _)| b <= vpn && vpn < l);
                let found = t.lookup(vpn);
                prop_assert_eq!(found.range.map(|r| (r.base, r.limit, r.frame(vpn))), want.map(|&(b, l, f)| (b, l, f + (vpn - b))));
                prop_assert!(found.nodes <= t.depth());
            }
        }
    }
}
