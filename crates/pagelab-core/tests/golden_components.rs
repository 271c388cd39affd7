//! Golden counts per component, on two bundled traces of real programs (`xz.plt`,
//! `sqlite.plt`): every replacement policy of the registry on a 4-way TLB of six sizes
//! (16 to 512 entries), and every page table of the registry with its defaults behind
//! the default machine's TLB — hits, misses, walks, their memory references and
//! distinct cache lines, page faults and table bytes — against
//! `tests/golden/components.txt`. A new policy or table gets its lines (and fails
//! until they are blessed):
//!
//! ```sh
//! PAGELAB_BLESS=1 cargo test --release -p pagelab-core --test golden_components
//! ```

mod common;

use pagelab_core::{Machine, MachineConfig};
use std::fmt::Write;
use std::path::Path;

const TRACES: [&str; 2] = ["xz.plt", "sqlite.plt"];
const ENTRIES: [usize; 6] = [16, 32, 64, 128, 256, 512];
const WAYS: usize = 4;

/// The report's counts of a run of `config` over the bundled trace `name`.
fn run(config: &MachineConfig, name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/traces")
        .join(name);
    let mut machine = Machine::build(config).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut reader = pagelab_core::trace::open(&path, None).unwrap();
    machine
        .run_trace(reader.as_mut(), &path, |_, _| {})
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let r = machine.report();
    let c = &r.counts;
    let mut s = String::new();
    for l in &r.levels {
        write!(s, " {}={}/{}", l.name, l.hits, l.misses).unwrap();
    }
    write!(
        s,
        " walks={} walk_refs={} walk_lines={} faults={} table_bytes={}",
        c.walks, c.walk_refs, c.walk_lines, c.page_faults, r.page_table_bytes
    )
    .unwrap();
    s
}

fn config(text: &str) -> MachineConfig {
    MachineConfig::from_toml(text, "golden").unwrap_or_else(|e| panic!("{e}"))
}

fn counts() -> String {
    let mut out = String::new();
    for trace in TRACES {
        for policy in pagelab_core::replacement::NAMES {
            for entries in ENTRIES {
                let c = config(&format!(
                    "[tlb]\nkind = \"set-associative\"\nsets = {}\nways = {WAYS}\nreplacement = {policy:?}\n",
                    entries / WAYS
                ));
                writeln!(
                    out,
                    "{trace} replacement {policy} {entries}x{WAYS}:{}",
                    run(&c, trace)
                )
                .unwrap();
            }
        }
        for table in pagelab_core::pagetable::NAMES {
            let c = config(&format!("[page_table]\nkind = {table:?}\n"));
            writeln!(out, "{trace} page-table {table}:{}", run(&c, trace)).unwrap();
        }
    }
    out
}

#[test]
fn every_replacement_policy_and_page_table_counts_as_recorded() {
    common::golden::check(
        &common::golden::file("components.txt"),
        &counts(),
        "golden_components",
    );
}
