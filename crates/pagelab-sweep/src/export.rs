//! A results database as one table: a row per run, a column per override key, the
//! run's status, error and time, and the report's headline counts; written as CSV or
//! Parquet (typed columns: integers, floats, booleans and text), whole or not at all.

use anyhow::{Context, Result};
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// The report's fields every table has, after the overrides: (column, JSON path).
const REPORT_COLUMNS: [(&str, &[&str]); 5] = [
    ("references", &["counts", "references"]),
    ("walks", &["counts", "walks"]),
    ("page_faults", &["counts", "page_faults"]),
    (
        "translation_overhead_percent",
        &["translation_overhead_percent"],
    ),
    ("tlb_overhead_percent", &["tlb_overhead_percent"]),
];

/// A database's runs: column names and rows of JSON values (`Null` where absent).
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

/// The runs of the database at `path`, ordered by trace and overrides. With `whole`,
/// two more columns: `config` (the configuration's TOML) and `report` (the whole
/// report, as JSON).
pub fn table(path: &Path, whole: bool) -> Result<Table> {
    let conn = crate::db::open_existing(path)?;
    // A database from before analyses has no analysis column: its runs simulate.
    let analysis = match crate::db::has_analysis_column(&conn)? {
        true => "analysis",
        false => "'' AS analysis",
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT key, trace, version, status, error, seconds, overrides, report, config, {analysis}
         FROM runs ORDER BY trace, 10, overrides"
    ))?;
    let raw: Vec<[Value; 10]> = stmt
        .query_map([], |r| {
            let text = |i| -> rusqlite::Result<Value> {
                Ok(r.get::<_, Option<String>>(i)?
                    .map_or(Value::Null, Value::String))
            };
            Ok([
                text(0)?,
                text(1)?,
                text(2)?,
                text(3)?,
                text(4)?,
                Value::from(r.get::<_, f64>(5)?),
                text(6)?,
                text(7)?,
                text(8)?,
                text(9)?,
            ])
        })?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: cannot read its runs", path.display()))?;
    let parse = |v: &Value| {
        v.as_str()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .unwrap_or_default()
    };
    let overrides: Vec<Value> = raw.iter().map(|r| parse(&r[6])).collect();
    let keys: BTreeSet<String> = overrides
        .iter()
        .filter_map(Value::as_object)
        .flat_map(|o| o.keys().cloned())
        .collect();
    let mut columns: Vec<String> = [
        "key", "trace", "analysis", "version", "status", "error", "seconds",
    ]
    .map(String::from)
    .to_vec();
    columns.extend(keys.iter().cloned());
    columns.extend(REPORT_COLUMNS.iter().map(|(c, _)| c.to_string()));
    if whole {
        columns.extend(["config".to_string(), "report".to_string()]);
    }
    let rows = raw
        .iter()
        .zip(&overrides)
        .map(|(r, o)| {
            // The analysis by its kind's name.
            let analysis = crate::analysis::Analysis::from_json(r[9].as_str().unwrap_or(""))
                .map_or_else(|_| r[9].clone(), |a| Value::from(a.name()));
            let mut row: Vec<Value> = r[..2].to_vec();
            row.push(analysis);
            row.extend_from_slice(&r[2..6]);
            row.extend(keys.iter().map(|k| o.get(k).cloned().unwrap_or_default()));
            let report = parse(&r[7]);
            row.extend(REPORT_COLUMNS.iter().map(|(_, path)| {
                path.iter()
                    .try_fold(&report, |at, p| at.get(*p))
                    .cloned()
                    .unwrap_or_default()
            }));
            if whole {
                row.extend([r[8].clone(), report]);
            }
            row
        })
        .collect();
    Ok(Table { columns, rows })
}

/// A value as CSV text: strings bare, others as JSON, null empty.
fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The table as CSV.
pub fn csv(t: &Table) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&t.columns)?;
    for row in &t.rows {
        w.write_record(row.iter().map(text))?;
    }
    Ok(w.into_inner().map_err(|e| e.into_error())?)
}

/// A column's type in Parquet: the narrowest that holds all its values.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Float,
    Bool,
    Text,
}

fn kind(t: &Table, c: usize) -> Kind {
    let values = t.rows.iter().map(|r| &r[c]).filter(|v| !v.is_null());
    let mut kind = None;
    for v in values {
        let k = match v {
            Value::Number(n) if n.is_i64() => Kind::Int,
            Value::Number(_) => Kind::Float,
            Value::Bool(_) => Kind::Bool,
            _ => Kind::Text,
        };
        kind = Some(match (kind, k) {
            (None, k) => k,
            (Some(a), b) if a == b => a,
            (Some(Kind::Int | Kind::Float), Kind::Int | Kind::Float) => Kind::Float,
            _ => Kind::Text,
        });
    }
    kind.unwrap_or(Kind::Text)
}

/// The table as Parquet: one row group, every column optional.
pub fn parquet(t: &Table) -> Result<Vec<u8>> {
    let kinds: Vec<Kind> = (0..t.columns.len()).map(|c| kind(t, c)).collect();
    let fields = t
        .columns
        .iter()
        .zip(&kinds)
        .map(|(name, k)| {
            let (physical, logical) = match k {
                Kind::Int => (Physical::INT64, None),
                Kind::Float => (Physical::DOUBLE, None),
                Kind::Bool => (Physical::BOOLEAN, None),
                Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            };
            Ok(Arc::new(
                Type::primitive_type_builder(name, physical)
                    .with_repetition(Repetition::OPTIONAL)
                    .with_logical_type(logical)
                    .build()?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let schema = Arc::new(
        Type::group_type_builder("runs")
            .with_fields(fields)
            .build()?,
    );
    let props = Arc::new(WriterProperties::builder().build());
    let mut out = Vec::new();
    let mut writer = SerializedFileWriter::new(&mut out, schema, props)?;
    let mut group = writer.next_row_group()?;
    let mut c = 0;
    while let Some(mut column) = group.next_column()? {
        let values: Vec<&Value> = t.rows.iter().map(|r| &r[c]).collect();
        let levels: Vec<i16> = values.iter().map(|v| i16::from(!v.is_null())).collect();
        let present = values.iter().filter(|v| !v.is_null());
        match kinds[c] {
            Kind::Int => {
                let v: Vec<i64> = present.map(|v| v.as_i64().unwrap_or_default()).collect();
                column
                    .typed::<Int64Type>()
                    .write_batch(&v, Some(&levels), None)?;
            }
            Kind::Float => {
                let v: Vec<f64> = present.map(|v| v.as_f64().unwrap_or_default()).collect();
                column
                    .typed::<DoubleType>()
                    .write_batch(&v, Some(&levels), None)?;
            }
            Kind::Bool => {
                let v: Vec<bool> = present.map(|v| v.as_bool().unwrap_or_default()).collect();
                column
                    .typed::<BoolType>()
                    .write_batch(&v, Some(&levels), None)?;
            }
            Kind::Text => {
                let v: Vec<ByteArray> =
                    present.map(|v| ByteArray::from(text(v).as_str())).collect();
                column
                    .typed::<ByteArrayType>()
                    .write_batch(&v, Some(&levels), None)?;
            }
        }
        column.close()?;
        c += 1;
    }
    group.close()?;
    writer.close()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_from_before_analyses_reads_as_simulations() {
        // The runs table as the first databases made it: no analysis column.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE runs (key TEXT PRIMARY KEY, trace TEXT NOT NULL, trace_id TEXT NOT NULL,
                overrides TEXT NOT NULL, config TEXT NOT NULL, version TEXT NOT NULL,
                status TEXT NOT NULL, error TEXT, report TEXT, seconds REAL NOT NULL);
             INSERT INTO runs VALUES ('k', 'xz.plt', 'id', '{}', '', 'v', 'ok', NULL,
                '{\"counts\": {\"references\": 7}}', 0.5);",
        )
        .unwrap();
        drop(conn);
        let t = table(&path, false).unwrap();
        let at = |name: &str| t.columns.iter().position(|c| c == name).unwrap();
        assert_eq!(t.rows[0][at("analysis")], Value::from("simulate"));
        assert_eq!(t.rows[0][at("references")], Value::from(7));
        // Opening it to write adds the column.
        crate::db::open(&path).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        assert!(crate::db::has_analysis_column(&conn).unwrap());
    }
}
