//! A results database as one table: a row per run, a column per override key, the
//! run's status, error and time, and every number of its report as flat columns
//! (`pagelab_core::report_columns`: per TLB level and page size, walks, faults, cycles,
//! overheads); written as CSV or Parquet (typed columns: integers, floats, booleans
//! and text), whole or not at all.

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

/// The columns of every table, before the override keys.
const FIXED: [&str; 7] = [
    "key", "trace", "analysis", "version", "status", "error", "seconds",
];

/// A database's runs: column names and rows of JSON values (`Null` where absent).
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// The columns that are override keys (what the sweep varied), in column order.
    pub keys: Vec<String>,
}

/// The runs of the database at `path`, ordered by trace, analysis and each swept key
/// by value. With `whole`, two more columns: `config` (the configuration's TOML) and `report` (the whole
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
    let reports: Vec<Value> = raw.iter().map(|r| parse(&r[7])).collect();
    // A simulation's report flattens to its columns; another analysis's result is
    // kept whole in `report`.
    let flat: Vec<Vec<(String, Value)>> = raw
        .iter()
        .zip(&reports)
        .map(
            |(r, report)| match r[9].as_str().map(crate::analysis::Analysis::from_json) {
                Some(Ok(a)) if a.name() != "simulate" => Vec::new(),
                _ => pagelab_core::report_columns::columns(report),
            },
        )
        .collect();
    // Every run's columns, headline first and the rest by name, as within one report.
    let mut report_columns: Vec<String> = flat
        .iter()
        .flatten()
        .map(|(c, _)| c.clone())
        .filter(|c| !keys.contains(c) && !FIXED.contains(&c.as_str()))
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect();
    report_columns.sort_by(|a, b| pagelab_core::report_columns::column_order(a, b));
    let mut columns: Vec<String> = FIXED.map(String::from).to_vec();
    columns.extend(keys.iter().cloned());
    columns.extend(report_columns.iter().cloned());
    if whole {
        columns.extend(["config".to_string(), "report".to_string()]);
    }
    let mut rows: Vec<Vec<Value>> = raw
        .iter()
        .zip(&overrides)
        .zip(reports.into_iter().zip(&flat))
        .map(|((r, o), (report, flat))| {
            // The analysis by its kind's name.
            let analysis = crate::analysis::Analysis::from_json(r[9].as_str().unwrap_or(""))
                .map_or_else(|_| r[9].clone(), |a| Value::from(a.name()));
            let mut row: Vec<Value> = r[..2].to_vec();
            row.push(analysis);
            row.extend_from_slice(&r[2..6]);
            row.extend(keys.iter().map(|k| o.get(k).cloned().unwrap_or_default()));
            let by_name: std::collections::HashMap<&str, &Value> =
                flat.iter().map(|(name, v)| (name.as_str(), v)).collect();
            row.extend(report_columns.iter().map(|c| {
                by_name
                    .get(c.as_str())
                    .map_or(Value::Null, |v| (*v).clone())
            }));
            if whole {
                row.extend([r[8].clone(), report]);
            }
            row
        })
        .collect();
    // By trace, analysis, then each swept key by value (numbers as numbers: 4 ways
    // before 12), as one would plot them.
    let sorted_by: Vec<usize> = [1, 2]
        .into_iter()
        .chain((0..keys.len()).map(|i| FIXED.len() + i))
        .collect();
    rows.sort_by(|a, b| {
        sorted_by
            .iter()
            .map(|&i| by_value(&a[i], &b[i]))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let keys = keys.into_iter().collect();
    Ok(Table {
        columns,
        rows,
        keys,
    })
}

/// Values in a plotting order: absent first, then booleans, numbers by value, text,
/// and anything else by its JSON text.
fn by_value(a: &Value, b: &Value) -> std::cmp::Ordering {
    let rank = |v: &Value| match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        _ => 4,
    };
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.total_cmp(&y)
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ => rank(a)
            .cmp(&rank(b))
            .then_with(|| a.to_string().cmp(&b.to_string())),
    }
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
