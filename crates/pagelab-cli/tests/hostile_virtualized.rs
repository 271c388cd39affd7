//! Hostile input to `[virtualization]` (see hostile.rs): every bad host section is
//! refused with the file and the field named, before or during the run, and no input
//! changes.

mod common;
use common::*;

#[test]
fn a_bad_host_section_names_the_file_and_the_field() {
    let d = folder("virtualization");
    write(&d, "ok.lackey", LACKEY);
    for (name, section, named) in [
        ("unknown.toml", "host_pages = \"4K\"\n", "host_pages"),
        (
            "kind.toml",
            "host_page_table = { kind = \"btree\" }\n",
            "btree",
        ),
        (
            "size.toml",
            "host_page = \"8K\"\n",
            "virtualization.host_page",
        ),
        (
            "caches.toml",
            "host_page_table = { kind = \"inverted\" }\nhost_walk_caches = [{ level = 2 }]\n",
            "virtualization.host_walk_caches[0]",
        ),
        (
            "level.toml",
            "host_walk_caches = [{ level = 9 }]\n",
            "virtualization.host_walk_caches[0].level",
        ),
        (
            "ntlb.toml",
            "nested_tlb = { sets = 0 }\n",
            "virtualization.nested_tlb.sets",
        ),
        (
            "priced.toml",
            "nested_tlb = { hit_cycles = 3 }\n",
            "virtualization.nested_tlb.hit_cycles",
        ),
        (
            "memory.toml",
            "host_frames = { kind = \"buddy\", memory = \"2K\" }\n",
            "virtualization.host_frames.memory",
        ),
        (
            "ntlb-sizes.toml",
            "host_page = \"2M\"\nnested_tlb = { page_sizes = [\"4K\"] }\n",
            "virtualization.nested_tlb.page_sizes",
        ),
        (
            "huge.toml",
            "nested_tlb = { sets = 4294967296, ways = 65536 }\n",
            "virtualization.nested_tlb",
        ),
    ] {
        write(&d, name, format!("[virtualization]\n{section}"));
        refused(
            &d,
            &["simulate", "--trace", "ok.lackey", "--config", name],
            &[name, named],
        );
    }
    // A host page smaller than the guest's base page, which no TLB array holds.
    write(
        &d,
        "small-host.toml",
        "base_page = \"2M\"\n[tlb]\nkind = \"set-associative\"\npage_sizes = [\"2M\"]\n[virtualization]\n",
    );
    refused(
        &d,
        &[
            "simulate",
            "--trace",
            "ok.lackey",
            "--config",
            "small-host.toml",
        ],
        &["small-host.toml", "virtualization.host_page_table"],
    );
    write(
        &d,
        "policy.toml",
        "[promotion]\npolicy = \"asap\"\n[mechanism]\nkind = \"remap\"\n[tlb]\nkind = \"set-associative\"\npage_sizes = [\"4K\", \"2M\"]\n[virtualization]\n",
    );
    refused(
        &d,
        &[
            "simulate",
            "--trace",
            "ok.lackey",
            "--config",
            "policy.toml",
        ],
        &["policy.toml", "mechanism.kind"],
    );
}

/// Host memory that runs out during the run: the error names the reference and the
/// field to raise, and nothing is written.
#[test]
fn host_memory_running_out_is_an_error_naming_the_field() {
    let d = folder("virtualization-memory");
    let refs: String = (0..64).map(|i| format!(" L {:x},8\n", i << 21)).collect();
    write(&d, "wide.lackey", refs);
    write(
        &d,
        "small.toml",
        "[virtualization]\nhost_frames = { kind = \"simple\", memory = \"64K\" }\n",
    );
    refused(
        &d,
        &[
            "simulate",
            "--trace",
            "wide.lackey",
            "--config",
            "small.toml",
            "--json",
            "out.json",
        ],
        &["reference", "virtualization.host_frames.memory"],
    );
    assert!(!d.join("out.json").exists());
}

/// `compare translation --virtualized`: a structure or page that does not exist, an
/// option of the schemes (`--region`, `--coalescing`), or a pair option without
/// `--virtualized`, is refused before
/// any run, and no output is written.
#[test]
fn bad_pairs_are_refused_before_any_run() {
    let d = folder("virtualized-compare");
    write(&d, "ok.lackey", LACKEY);
    let compare = [
        "compare",
        "translation",
        "--trace",
        "ok.lackey",
        "--json",
        "out.json",
    ];
    for (extra, named) in [
        (
            &["--virtualized", "--guests", "radix,btree"][..],
            &["--guests", "btree"][..],
        ),
        (
            &["--virtualized", "--hosts", "b-tree"],
            &["--hosts", "b-tree"],
        ),
        (
            &["--virtualized", "--host-page", "3K"],
            &["--host-page", "3K"],
        ),
        (
            &["--virtualized", "--region", "0x1000+4K"],
            &["--region", "--virtualized"],
        ),
        (&["--hosts", "radix"], &["--virtualized"]),
        (
            &["--virtualized", "--coalescing"],
            &["--coalescing", "--virtualized"],
        ),
    ] {
        let args: Vec<&str> = compare.iter().chain(extra).copied().collect();
        let o = run_in(&d, &args, None);
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?}");
        for n in named {
            assert!(err.contains(n), "{args:?}: {err}");
        }
        assert!(!d.join("out.json").exists(), "{args:?}");
    }
}

/// `[coalescing]`: a kind that does not exist, a group that is no power of two, a
/// group size no TLB array holds, and coalescing under virtualization; folio sizes
/// that are not below the huge page.
#[test]
fn a_bad_coalescing_section_names_the_field() {
    let d = folder("coalescing");
    write(&d, "ok.lackey", LACKEY);
    let held = "[tlb]\nkind = \"set-associative\"\npage_sizes = [\"4K\", \"64K\"]\n";
    for (name, text, named) in [
        (
            "kind.toml",
            format!("{held}[coalescing]\nkind = \"arm\"\n"),
            "arm",
        ),
        (
            "pages.toml",
            format!("{held}[coalescing]\nkind = \"amd\"\npages = 6\n"),
            "coalescing.pages",
        ),
        (
            "held.toml",
            "[coalescing]\nkind = \"contiguous-bit\"\n".to_string(),
            "page_sizes",
        ),
        (
            "folios.toml",
            format!(
                "[tlb]\nkind = \"set-associative\"\npage_sizes = [\"4K\", \"2M\"]\n[promotion]\npolicy = \"thp\"\nfolio_sizes = [\"4M\"]\n"
            ),
            "promotion.folio_sizes",
        ),
        (
            "online.toml",
            "[tlb]\nkind = \"set-associative\"\npage_sizes = [\"4K\", \"64K\", \"2M\"]\n\
             [coalescing]\nkind = \"colt\"\n[promotion]\npolicy = \"online\"\n"
                .to_string(),
            "coalescing",
        ),
        (
            "paged-folios.toml",
            "[tlb]\nkind = \"set-associative\"\npage_sizes = [\"4K\", \"2M\"]\n[paging]\nresident_limit = \"64M\"\n\
             [promotion]\npolicy = \"thp\"\nfolio_sizes = [\"64K\"]\n"
                .to_string(),
            "promotion.folio_sizes",
        ),
        (
            "nested.toml",
            format!("{held}[coalescing]\nkind = \"colt\"\n[virtualization]\n"),
            "[coalescing]",
        ),
    ] {
        write(&d, name, text);
        refused(
            &d,
            &["simulate", "--trace", "ok.lackey", "--config", name],
            &[name, named],
        );
    }
}
