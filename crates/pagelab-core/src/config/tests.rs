//! The configuration's unit tests.

use super::*;
use crate::pagetable::{
    ClusteredConfig, GuardedConfig, HashedConfig, InvertedConfig, LinearConfig, RadixConfig,
    VariableRadixConfig,
};

#[test]
fn empty_document_is_the_default_machine() {
    let c = MachineConfig::from_toml("", "t").unwrap();
    assert_eq!(c.tlb, TlbConfig::default());
    assert_eq!(
        c.page_table,
        PageTableConfig::Radix(RadixConfig { levels: 4 })
    );
}

#[test]
fn fields_parse() {
    let c = MachineConfig::from_toml(
        "name = \"x\"\n[tlb]\nkind = \"set-associative\"\nsets = 1\nways = 64\npage_sizes = [\"4K\", \"2M\"]\n\
         [frames]\nkind = \"simple\"\nmemory = \"1G\"\n",
        "t",
    )
    .unwrap();
    let TlbConfig::SetAssociative(t) = &c.tlb else {
        panic!("a set-associative TLB")
    };
    assert_eq!((t.sets, t.ways), (1, 64));
    assert_eq!(t.page_sizes, vec![PageSize::K4, PageSize::M2]);
    let FramesConfig::Simple(f) = &c.frames else {
        panic!("simple frames")
    };
    assert_eq!(f.memory, ByteSize(1 << 30));
    // And back.
    assert_eq!(MachineConfig::from_toml(&c.to_toml(), "t").unwrap(), c);
}

#[test]
fn every_page_table_kind_parses_with_defaults_and_checks_its_options() {
    for kind in [
        "linear",
        "hashed",
        "clustered",
        "inverted",
        "guarded",
        "variable-radix",
    ] {
        let c =
            MachineConfig::from_toml(&format!("[page_table]\nkind = \"{kind}\"\n"), "t").unwrap();
        assert_eq!(MachineConfig::from_toml(&c.to_toml(), "t").unwrap(), c);
        let e = MachineConfig::from_toml(
            &format!("[page_table]\nkind = \"{kind}\"\nlevels = 4\n"),
            "t",
        )
        .unwrap_err();
        assert!(e.0.contains("levels"), "{kind}: {e}");
    }
    let c = MachineConfig::from_toml(
        "[page_table]\nkind = \"clustered\"\nsubblock_factor = 8\npage_sizes = [\"4K\"]\n",
        "t",
    )
    .unwrap();
    let PageTableConfig::Clustered(cl) = &c.page_table else {
        panic!("clustered")
    };
    assert_eq!((cl.subblock_factor, cl.buckets), (8, 1 << 12));
    assert_eq!(cl.bucket, crate::pagetable::Bucket::Pointer);
    let c = MachineConfig::from_toml("[page_table]\nkind = \"hashed\"\nbucket = \"entry\"\n", "t")
        .unwrap();
    let PageTableConfig::Hashed(h) = &c.page_table else {
        panic!("hashed")
    };
    assert_eq!(h.bucket, crate::pagetable::Bucket::Entry);
    let e = MachineConfig::from_toml("[page_table]\nkind = \"hashed\"\nbucket = \"tag\"\n", "t")
        .unwrap_err();
    assert!(e.0.contains("bucket"), "{e}");
    let bad = ClusteredConfig {
        subblock_factor: 12,
        ..ClusteredConfig::default()
    };
    assert!(bad
        .check()
        .unwrap_err()
        .contains("page_table.subblock_factor"));
    let bad = HashedConfig {
        page_sizes: vec![],
        ..HashedConfig::default()
    };
    assert!(bad.check().unwrap_err().contains("page_table.page_sizes"));
    let bad = LinearConfig {
        page_sizes: vec![PageSize::from_shift(31).unwrap()],
        ..LinearConfig::default()
    };
    assert!(bad.check().unwrap_err().contains("2G"));
    let bad = VariableRadixConfig {
        max_node_bits: 2,
        ..VariableRadixConfig::default()
    };
    assert!(bad
        .check()
        .unwrap_err()
        .contains("page_table.max_node_bits"));
    let bad = InvertedConfig {
        memory: ByteSize(1000),
        ..InvertedConfig::default()
    };
    assert!(bad.check().unwrap_err().contains("page_table.memory"));
    assert_eq!(InvertedConfig::default().hat(), 1 << 24);
    assert!(GuardedConfig {
        radix: 3,
        ..GuardedConfig::default()
    }
    .check()
    .is_err());
}

#[test]
fn unknown_fields_are_named_with_their_line() {
    let e = MachineConfig::from_toml("[tlb]\nkind = \"set-associative\"\nsetz = 4\n", "m.toml")
        .unwrap_err();
    assert!(e.0.starts_with("m.toml: line "), "{e}");
    assert!(e.0.contains("setz"), "{e}");
    let e = MachineConfig::from_toml("[tlb]\nkind = \"magic\"\n", "m.toml").unwrap_err();
    assert!(e.0.contains("magic"), "{e}");
    let e = MachineConfig::from_toml("colour = 1\n", "m.toml").unwrap_err();
    assert!(e.0.contains("colour") && e.0.contains("line 1"), "{e}");
    let e = MachineConfig::from_toml(
        "[tlb]\nkind = \"set-associative\"\npage_sizes = [\"3K\"]\n",
        "m.toml",
    )
    .unwrap_err();
    assert!(e.0.contains("3K"), "{e}");
}

/// A field of a tagged table (read whole before its fields) is named at its own line,
/// in nested tables too; a missing field stays at its table's header.
#[test]
fn type_errors_are_named_at_the_field_line() {
    let cases = [
        (
            "name = \"x\"\n[page_table]\nkind = \"hashed\"\n\nbuckets = \"many\"\n",
            "line 5: buckets: invalid type",
        ),
        (
            "[tlb]\nkind = \"hierarchy\"\n[[tlb.levels]]\nname = \"l1\"\nhit_cycles = \"fast\"\n[[tlb.levels.arrays]]\nsets = 1\n",
            "line 5: hit_cycles: invalid type",
        ),
        (
            "[promotion]\npolicy = \"asap\"\nmiss_cycles = true\n",
            "line 3: miss_cycles: invalid type",
        ),
        (
            "[cache]\n[[cache.levels]]\nname = \"l1d\"\nsets = \"64\"\n",
            "line 4: sets: invalid type",
        ),
        ("[tlb]\nsets = 4\n", "line 1: missing field `kind`"),
    ];
    for (text, want) in cases {
        let e = MachineConfig::from_toml(text, "m.toml").unwrap_err();
        assert!(
            e.0.starts_with("m.toml: ") && e.0.contains(want),
            "{want}: {e}"
        );
    }
}
