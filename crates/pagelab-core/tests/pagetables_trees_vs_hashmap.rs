//! Every page-table structure walked down a tree by the address's bits (radix of 4 and
//! 5 levels, the virtual linear array, guarded and variable radix tables, with variants
//! of their options) against a plain HashMap reference: random sequences of map,
//! unmap, protect, lookup, and shared segments mapped into and out of several address
//! spaces, with mixed page sizes (4K, 64K, 2M, 1G; a structure that cannot map one
//! must refuse it). The reference decides every refusal on its own (size, canonical
//! form, alignment, overlap, nothing mapped); after every operation the first, a
//! middle and the last byte of every mapped page, the bytes just outside it and random
//! addresses must translate alike in every address space. A walk must record every
//! reference it makes, the footprint must be the frames the table holds, and once
//! everything is unmapped the table must hold what a fresh table that mapped and
//! unmapped one page per address space holds (no leak), and still work. Every
//! structure the configuration lists must be tested, here or in
//! pagetables_hashed_vs_hashmap.rs; the kinds, the run and the reference are in
//! common/pagetables.rs and common/pagetable_reference.rs.

mod common;

use common::pagetables::{against_hashmap, hashed_kinds, kind_names, tree_kinds};

tree_kinds!(against_hashmap);

#[test]
fn every_listed_structure_is_tested() {
    let kinds = [tree_kinds!(kind_names), hashed_kinds!(kind_names)].concat();
    for name in pagelab_core::pagetable::NAMES {
        assert!(
            kinds.contains(name),
            "page table {name:?} has no kind in kind() and no line in tree_kinds! or hashed_kinds!"
        );
    }
}
