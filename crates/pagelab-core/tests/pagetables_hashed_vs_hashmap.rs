//! Every page-table structure found by hashing (hashed and clustered tables with
//! pointer or entry buckets, the inverted table) against a plain HashMap reference:
//! random sequences of map, unmap, protect, lookup, and shared segments mapped into
//! and out of several address spaces, with mixed page sizes (4K, 64K, 2M, 1G). The
//! reference decides every refusal on its own (size, alignment, frames beyond an
//! inverted table's memory, overlap, nothing mapped); after every operation the first,
//! a middle and the last byte of every mapped page, the bytes just outside it and
//! random addresses must translate alike in every address space. A walk must record
//! every reference it makes (a long chain's first ones, the rest counted), the
//! footprint must be the frames the table holds, and once everything is unmapped the
//! table must hold what a fresh table that mapped and unmapped one page per address
//! space holds (no leak), and still work. The structures walked down a tree are in
//! pagetables_trees_vs_hashmap.rs; the kinds, the run and the reference are in
//! common/pagetables.rs and common/pagetable_reference.rs.

mod common;

use common::pagetables::{against_hashmap, hashed_kinds};

hashed_kinds!(against_hashmap);
