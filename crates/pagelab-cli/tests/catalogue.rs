//! The workload catalogue's schema, checked by `pagelab workloads` (the one checker:
//! workloads/catalogue.py asks it): each kind of mistake is rejected with a message
//! that names the file, the workload and the field, and the real catalogue passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PAGELAB: &str = env!("CARGO_BIN_EXE_pagelab");

/// A workload with every required field right.
const GOOD: &str = r#"[[workload]]
name = "good"
description = "a workload with nothing wrong"
apt = []
pip = []
command = ["true"]
size = "small"
"#;

fn workloads(dir: &Path, json: bool) -> Output {
    let mut c = Command::new(PAGELAB);
    c.arg("workloads");
    if json {
        c.arg("--json");
    }
    c.env("PAGELAB_WORKLOADS", dir).output().unwrap()
}

/// A folder holding `text` as catalogue.toml.
fn catalogue(case: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "pagelab-catalogue-test-{}-{case}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("catalogue.toml"), text).unwrap();
    dir
}

/// The good workload, then `bad` (a second workload's lines, or any TOML): rejected,
/// with every one of `expected` in the message.
fn rejected(case: &str, bad: &str, expected: &[&str]) {
    let dir = catalogue(case, &format!("{GOOD}\n{bad}\n"));
    let o = workloads(&dir, true);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{case}: accepted");
    assert!(o.stdout.is_empty(), "{case}: printed a catalogue");
    assert!(
        err.contains(&format!("{}: line ", dir.join("catalogue.toml").display())),
        "{case}: the file is not named: {err}"
    );
    for e in expected {
        assert!(err.contains(e), "{case}: {e:?} is not in {err:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A second workload: GOOD's fields renamed `name`, less those in `drop`, plus `add`.
fn second(name: &str, drop: &[&str], add: &str) -> String {
    let mut lines = vec!["[[workload]]".to_string(), format!("name = {name:?}")];
    for line in GOOD.lines().skip(2) {
        let key = line.split(' ').next().unwrap();
        if !drop.contains(&key) {
            lines.push(line.to_string());
        }
    }
    lines.push(add.to_string());
    lines.join("\n")
}

#[test]
fn a_workload_without_a_required_field_is_rejected() {
    for field in ["description", "apt", "pip", "command", "size"] {
        rejected(
            &format!("missing-{field}"),
            &second("lacking", &[field], ""),
            &["workload #2 (lacking)", &format!("missing field `{field}`")],
        );
    }
    let no_name = GOOD.replace("name = \"good\"\n", "");
    rejected(
        "missing-name",
        &no_name,
        &["workload #2", "missing field `name`"],
    );
}

#[test]
fn a_name_outside_the_pattern_is_rejected() {
    for (case, name) in [("upper", "Big"), ("underscore", "a_b"), ("empty", "")] {
        rejected(
            &format!("name-{case}"),
            &second(name, &[], ""),
            &[
                "workload #2",
                &format!("name {name:?} must match [a-z0-9-]+"),
            ],
        );
    }
}

#[test]
fn a_duplicate_name_is_rejected() {
    rejected(
        "duplicate",
        &second("good", &[], ""),
        &["workload #2 (good)", "duplicate name"],
    );
}

#[test]
fn a_size_outside_the_three_is_rejected() {
    rejected(
        "size",
        &second("huge", &["size"], "size = \"enormous\""),
        &[
            "workload #2 (huge)",
            "size \"enormous\" must be one of small, medium, large",
        ],
    );
}

#[test]
fn an_empty_command_is_rejected() {
    rejected(
        "command-empty",
        &second("idle", &["command"], "command = []"),
        &["workload #2 (idle)", "command is empty"],
    );
}

#[test]
fn a_description_of_two_lines_is_rejected() {
    rejected(
        "description-lines",
        &second("wordy", &["description"], "description = \"one\\ntwo\""),
        &["workload #2 (wordy)", "description must be one line"],
    );
}

#[test]
fn an_empty_list_item_is_rejected() {
    for field in ["apt", "pip", "command"] {
        rejected(
            &format!("empty-item-{field}"),
            &second("holey", &[field], &format!("{field} = [\"x\", \"\"]")),
            &[
                "workload #2 (holey)",
                &format!("{field}: item #2 is an empty string"),
            ],
        );
    }
}

#[test]
fn a_field_of_the_wrong_type_is_rejected() {
    rejected(
        "type-string",
        &second("typed", &["description"], "description = 3"),
        &["workload #2 (typed)", "description must be a string"],
    );
    rejected(
        "type-list",
        &second("typed", &["apt"], "apt = \"sqlite3\""),
        &["workload #2 (typed)", "apt must be a list of strings"],
    );
}

#[test]
fn an_unknown_field_or_table_is_rejected() {
    rejected(
        "unknown-field",
        &second("coloured", &[], "colour = \"red\""),
        &["workload #2 (coloured)", "unknown field `colour`"],
    );
    rejected(
        "unknown-table",
        "[settings]\nfast = true",
        &["unknown field `settings`", "only [[workload]] tables"],
    );
}

#[test]
fn a_toml_syntax_error_names_its_line() {
    rejected("syntax", "[[workload]]\nname = ", &["line 10"]);
}

#[test]
fn the_real_catalogue_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads");
    let o = workloads(&dir, true);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let list: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert!(list.len() >= 20, "{} workloads", list.len());
    let fields = [
        "name",
        "description",
        "apt",
        "pip",
        "prepare",
        "command",
        "stdin",
        "driver",
        "size",
    ];
    for w in &list {
        for f in fields {
            assert!(w.get(f).is_some(), "{w}: no {f}");
        }
    }
    assert!(list.iter().any(|w| w["name"] == "sqlite"));
    // The table, and `record --workload list`, show the same catalogue.
    let table = workloads(&dir, false);
    assert!(table.status.success());
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert_eq!(table.lines().count(), list.len());
    let listed = Command::new(PAGELAB)
        .args(["record", "--workload", "list"])
        .env("PAGELAB_WORKLOADS", &dir)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&listed.stdout), table);
}

#[test]
fn a_missing_catalogue_is_named() {
    let dir = std::env::temp_dir().join("pagelab-catalogue-test-nowhere");
    let o = workloads(&dir, true);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no catalogue.toml there"), "{err}");
}
