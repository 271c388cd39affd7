//! `pagelab results export results.db --csv F`: the runs of a results database as
//! one table: a column per override key, the run's status, error and time, and the
//! report's headline counts (references, walks, page faults, overheads).

use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum ResultsCommand {
    /// Write the runs as CSV.
    Export {
        /// The results database.
        db: PathBuf,
        /// The CSV file ("-" for standard output).
        #[arg(long)]
        csv: PathBuf,
    },
}

pub fn run(command: &ResultsCommand) -> Result<()> {
    let ResultsCommand::Export { db, csv } = command;
    if !db.is_file() {
        anyhow::bail!("{}: no such results database", db.display());
    }
    crate::output::check(csv, "--csv", &[db.as_path()])?;
    let conn = crate::sweep::open_db(db)?;
    let mut stmt = conn.prepare(
        "SELECT key, trace, version, status, error, seconds, overrides, report FROM runs ORDER BY trace, overrides",
    )?;
    type Row = (
        String,
        String,
        String,
        String,
        Option<String>,
        f64,
        String,
        Option<String>,
    );
    let rows: Vec<Row> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        })?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: cannot read its runs", db.display()))?;
    let parse = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap_or_default();
    let keys: BTreeSet<String> = rows
        .iter()
        .filter_map(|r| {
            parse(&r.6)
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>())
        })
        .flatten()
        .collect();
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::from("key,trace,version,status,error,seconds");
    for k in &keys {
        let _ = write!(out, ",{}", quote(k));
    }
    out.push_str(
        ",references,walks,page_faults,translation_overhead_percent,tlb_overhead_percent\n",
    );
    for (key, trace, version, status, error, seconds, overrides, report) in &rows {
        let o = parse(overrides);
        let _ = write!(
            out,
            "{key},{},{version},{status},{},{seconds}",
            quote(trace),
            quote(error.as_deref().unwrap_or(""))
        );
        for k in &keys {
            let v = match o.get(k) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            };
            let _ = write!(out, ",{}", quote(&v));
        }
        let r = report.as_deref().map(parse).unwrap_or_default();
        let field = |path: &[&str]| {
            let mut at = &r;
            for p in path {
                at = &at[*p];
            }
            if at.is_null() {
                String::new()
            } else {
                at.to_string()
            }
        };
        let _ = writeln!(
            out,
            ",{},{},{},{},{}",
            field(&["counts", "references"]),
            field(&["counts", "walks"]),
            field(&["counts", "page_faults"]),
            field(&["translation_overhead_percent"]),
            field(&["tlb_overhead_percent"])
        );
    }
    crate::output::write_text(csv, &out)
}
