//! The workload catalogue's schema (workloads/catalogue.toml), in one place: this
//! module reads and validates it for `pagelab record --workload` and `pagelab
//! workloads`, and `pagelab workloads --json` hands the validated catalogue to the
//! scripts of workloads/ (setup.sh, check.sh through catalogue.py), which do not check
//! it themselves.
//!
//! Every error names the file, the line of the workload's table and the workload
//! (`workloads/catalogue.toml: line 42: workload #5 (bzip2): size must be ...`).

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The sizes a workload may have: how long recording it takes.
pub const SIZES: [&str; 3] = ["small", "medium", "large"];

/// Every field of a workload, and those of them that are lists of strings (the others
/// are strings).
const FIELDS: [&str; 9] = [
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
const LISTS: [&str; 3] = ["apt", "pip", "command"];

/// One workload; catalogue.toml's header says what each field means.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// `[a-z0-9-]+`, unique.
    pub name: String,
    /// One line.
    pub description: String,
    /// Debian packages it needs.
    pub apt: Vec<String>,
    /// PyPI packages it needs (in the repository's .venv).
    pub pip: Vec<String>,
    /// A shell command that makes its inputs in the work folder ("" for none).
    #[serde(default)]
    pub prepare: String,
    /// The recorded program and its arguments: not empty.
    pub command: Vec<String>,
    /// A file fed on standard input ("" for none).
    #[serde(default)]
    pub stdin: String,
    /// A shell command run beside a server, which drives its load ("" for none).
    #[serde(default)]
    pub driver: String,
    /// One of [`SIZES`].
    pub size: String,
}

/// The document: `[[workload]]` tables and nothing else. Each table is kept as TOML
/// (with its position) until it is checked, so that its errors can name it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    workload: Vec<toml::Spanned<toml::Table>>,
}

/// The folder of the catalogue: `PAGELAB_WORKLOADS`, else beside the build.
pub fn folder() -> Option<PathBuf> {
    let has = |d: &Path| d.join("catalogue.toml").is_file();
    if let Some(d) = std::env::var_os("PAGELAB_WORKLOADS") {
        return Some(PathBuf::from(d))
            .filter(|d| has(d))
            .and_then(|d| d.canonicalize().ok());
    }
    crate::repository::candidates("workloads")
        .into_iter()
        .find(|d| has(d))
        .and_then(|d| d.canonicalize().ok())
}

/// The catalogue's folder, or an error that says how to name it.
pub fn find() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("PAGELAB_WORKLOADS") {
        return folder().with_context(|| {
            format!(
                "PAGELAB_WORKLOADS={}: no catalogue.toml there",
                Path::new(&d).display()
            )
        });
    }
    folder().context(
        "the workload catalogue (workloads/catalogue.toml) is not found; set PAGELAB_WORKLOADS",
    )
}

/// Read and validate `dir/catalogue.toml`.
pub fn load(dir: &Path) -> Result<Vec<Workload>> {
    let path = dir.join("catalogue.toml");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    parse(&text, &path)
}

/// Validate the text of a catalogue; `path` names it in errors.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Workload>> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let doc: Document = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_of(s.start));
        let message = if e.message().contains("unknown field") {
            format!("{} (only [[workload]] tables are allowed)", e.message())
        } else {
            e.message().trim().replace('\n', ": ")
        };
        anyhow::anyhow!("{}: line {line}: {message}", path.display())
    })?;
    let mut workloads = Vec::with_capacity(doc.workload.len());
    let mut seen = HashSet::new();
    for (i, table) in doc.workload.into_iter().enumerate() {
        let line = line_of(table.span().start);
        let table = table.into_inner();
        let name = table
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_string();
        let place = format!(
            "{}: line {line}: workload #{} ({name})",
            path.display(),
            i + 1
        );
        // serde's type errors do not say which field: check the types first.
        for (key, value) in &table {
            let (ok, what) = if LISTS.contains(&key.as_str()) {
                let strings = value
                    .as_array()
                    .is_some_and(|a| a.iter().all(toml::Value::is_str));
                (strings, "a list of strings")
            } else {
                (value.is_str(), "a string")
            };
            if !ok && FIELDS.contains(&key.as_str()) {
                bail!("{place}: {key} must be {what}, not {}", value.type_str());
            }
        }
        let w: Workload = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| anyhow::anyhow!("{place}: {}", e.message().trim()))?;
        if let Err(problem) = check(&w) {
            bail!("{place}: {problem}");
        }
        if !seen.insert(w.name.clone()) {
            bail!("{place}: duplicate name: an earlier workload is called {name:?} too");
        }
        workloads.push(w);
    }
    Ok(workloads)
}

/// What serde does not check of one workload.
fn check(w: &Workload) -> Result<(), String> {
    let name_ok = !w.name.is_empty()
        && w.name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !name_ok {
        return Err(format!("name {:?} must match [a-z0-9-]+", w.name));
    }
    if w.description.contains('\n') {
        return Err("description must be one line".into());
    }
    if !SIZES.contains(&w.size.as_str()) {
        return Err(format!(
            "size {:?} must be one of {}",
            w.size,
            SIZES.join(", ")
        ));
    }
    if w.command.is_empty() {
        return Err("command is empty: it must name the recorded program".into());
    }
    for (field, list) in [("apt", &w.apt), ("pip", &w.pip), ("command", &w.command)] {
        if let Some(i) = list.iter().position(String::is_empty) {
            return Err(format!("{field}: item #{} is an empty string", i + 1));
        }
    }
    Ok(())
}
