//! The papers and verdicts a reproduction keeps in its results database, beside the
//! sweeps' runs: written by `pagelab repro` ([`store`]), read by the report ([`read`]).

use crate::claims::PaperFile;
use crate::verdict::Verdict;
use anyhow::{Context, Result};
use rusqlite::params;
use serde::Serialize;
use std::path::Path;

/// The paper and its verdicts in the database (replacing the paper's earlier ones),
/// where the report finds them.
pub fn store(
    conn: &rusqlite::Connection,
    file: &PaperFile,
    verdicts: &[Verdict],
    quick: bool,
) -> Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS papers (
            id TEXT PRIMARY KEY, title TEXT NOT NULL, cite TEXT NOT NULL,
            source TEXT NOT NULL, about TEXT NOT NULL, experiments TEXT NOT NULL,
            quick INTEGER NOT NULL);
         CREATE TABLE IF NOT EXISTS claims (
            paper TEXT NOT NULL, position INTEGER NOT NULL, id TEXT NOT NULL,
            section TEXT NOT NULL, claim TEXT NOT NULL, paper_value TEXT NOT NULL,
            measured TEXT NOT NULL, verdict TEXT NOT NULL, detail TEXT NOT NULL,
            compared TEXT NOT NULL, PRIMARY KEY (paper, id));",
    )?;
    // Verdicts stored before claims had classes: the columns added (each claim is
    // written again below).
    let has_class = conn
        .prepare("SELECT 1 FROM pragma_table_info('claims') WHERE name = 'class'")?
        .exists([])?;
    if !has_class {
        conn.execute_batch(
            "ALTER TABLE claims ADD COLUMN class TEXT NOT NULL DEFAULT 'measured';
             ALTER TABLE claims ADD COLUMN tolerance TEXT NOT NULL DEFAULT '';
             ALTER TABLE claims ADD COLUMN cause TEXT NOT NULL DEFAULT '';",
        )?;
    }
    let p = &file.paper;
    let experiments = serde_json::to_string(
        &file
            .experiment
            .iter()
            .map(|e| serde_json::json!({"name": e.name, "about": e.about}))
            .chain(file.native.iter().map(
                |n| serde_json::json!({"name": format!("native:{}", n.name), "about": n.about}),
            ))
            .collect::<Vec<_>>(),
    )?;
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        "INSERT OR REPLACE INTO papers VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![p.id, p.title, p.cite, p.source, p.about, experiments, quick],
    )?;
    tx.execute("DELETE FROM claims WHERE paper = ?1", [&p.id])?;
    for (i, v) in verdicts.iter().enumerate() {
        tx.execute(
            "INSERT INTO claims (paper, position, id, section, claim, paper_value, measured,
                verdict, detail, compared, class, tolerance, cause)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                p.id,
                i as i64,
                v.id,
                v.section,
                v.claim,
                v.paper,
                v.measured,
                v.outcome.name(),
                v.detail,
                v.compared,
                v.class.name(),
                v.tolerance,
                v.cause
            ],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// A paper reproduced into a database, as the report shows it.
#[derive(Clone, Debug, Serialize)]
pub struct StoredPaper {
    pub id: String,
    pub title: String,
    pub cite: String,
    /// Where the paper is published (a URL when it has one).
    pub source: String,
    pub about: String,
    /// Its experiments: {name, about}, each a sweep in the database.
    pub experiments: Vec<serde_json::Value>,
    /// Whether the verdicts come from the quick inputs.
    pub quick: bool,
    pub claims: Vec<StoredClaim>,
}

/// One claim's verdict as stored.
#[derive(Clone, Debug, Serialize)]
pub struct StoredClaim {
    pub id: String,
    pub section: String,
    pub claim: String,
    pub paper_value: String,
    pub measured: String,
    pub verdict: String,
    pub detail: String,
    pub compared: String,
    /// measured, input check or not reproducible here.
    pub class: String,
    pub cause: String,
}

/// The papers reproduced into the results database at `path`, by id, with their
/// claims in the claim file's order; none for a database of plain sweeps.
pub fn read(path: &Path) -> Result<Vec<StoredPaper>> {
    let shown = path.display();
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("{shown}: cannot open"))?;
    let has = |table: &str| -> Result<bool> {
        Ok(conn
            .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")?
            .exists([table])?)
    };
    if !(has("papers")? && has("claims")?) {
        return Ok(Vec::new());
    }
    // Verdicts stored before claims had classes are all counted as measured.
    let classed = conn
        .prepare("SELECT 1 FROM pragma_table_info('claims') WHERE name = 'class'")?
        .exists([])?;
    let extra = if classed {
        "class, cause"
    } else {
        "'measured', ''"
    };
    let mut papers = conn
        .prepare(
            "SELECT id, title, cite, source, about, experiments, quick FROM papers ORDER BY id",
        )?
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, bool>(6)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()
        .with_context(|| format!("{shown}: cannot read its papers"))?;
    let mut claims = conn.prepare(&format!(
        "SELECT id, section, claim, paper_value, measured, verdict, detail, compared, {extra}
         FROM claims WHERE paper = ?1 ORDER BY position"
    ))?;
    let mut out = Vec::new();
    for (id, title, cite, source, about, experiments, quick) in papers.drain(..) {
        let claims = claims
            .query_map([&id], |r| {
                Ok(StoredClaim {
                    id: r.get(0)?,
                    section: r.get(1)?,
                    claim: r.get(2)?,
                    paper_value: r.get(3)?,
                    measured: r.get(4)?,
                    verdict: r.get(5)?,
                    detail: r.get(6)?,
                    compared: r.get(7)?,
                    class: r.get(8)?,
                    cause: r.get(9)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
            .with_context(|| format!("{shown}: cannot read the claims of {id}"))?;
        let experiments = serde_json::from_str(&experiments)
            .with_context(|| format!("{shown}: paper {id}: its experiments are not a JSON list"))?;
        out.push(StoredPaper {
            id,
            title,
            cite,
            source,
            about,
            experiments,
            quick,
            claims,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::judge;

    #[test]
    fn verdicts_stored_before_classes_gain_the_columns_and_are_replaced() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        // The claims table as pagelab repro wrote it before claims had classes.
        conn.execute_batch(
            "CREATE TABLE claims (
                paper TEXT NOT NULL, position INTEGER NOT NULL, id TEXT NOT NULL,
                section TEXT NOT NULL, claim TEXT NOT NULL, paper_value TEXT NOT NULL,
                measured TEXT NOT NULL, verdict TEXT NOT NULL, detail TEXT NOT NULL,
                compared TEXT NOT NULL, PRIMARY KEY (paper, id));
             INSERT INTO claims VALUES ('rmm', 0, 'old', 's', 'c', 'p', 'm', 'agrees', 'd', 'c');",
        )
        .unwrap();
        let file = PaperFile::parse(crate::paper("rmm").unwrap().text, "rmm.toml").unwrap();
        let verdicts: Vec<Verdict> = file.claim.iter().map(|c| judge(c, None)).collect();
        store(&conn, &file, &verdicts, true).unwrap();
        let rows: Vec<(String, String)> = conn
            .prepare("SELECT id, class FROM claims ORDER BY position")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), file.claim.len());
        assert!(rows.iter().all(|(id, _)| id != "old"));
        let class = |id: &str| rows.iter().find(|r| r.0 == id).unwrap().1.clone();
        assert_eq!(class("skylake-l1-entries"), "input check");
        assert_eq!(class("ranges-under-112"), "measured");
        assert_eq!(class("per-workload-figures"), "not reproducible here");
        // A second store with the columns present writes the same rows.
        store(&conn, &file, &verdicts, true).unwrap();
    }
}
