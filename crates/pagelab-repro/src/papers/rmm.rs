//! RMM's measures (`repro/rmm.toml`): entries by pages and ranges, page-walk
//! overhead of the five schemes, Skylake's TLB reach and sizes, and the range table's
//! node geometry.

use crate::results::{at, named, Results};
use crate::verdict::Measured;
use crate::{put, Measures};
use pagelab_core::range::table::{NODE_LINES, NODE_RANGES};
use serde_json::Value;

/// A contiguity result's mapping's entries for the whole footprint.
fn entries(result: &Value, mapping: &str) -> Result<f64, String> {
    at(named(result, "mappings", "name", mapping)?, &["entries"])
}

/// A contiguity result's mapping's entries for 99% of the footprint.
fn entries_99(result: &Value, mapping: &str) -> Result<f64, String> {
    named(result, "mappings", "name", mapping)?
        .get("curve")
        .and_then(Value::as_array)
        .and_then(|c| {
            c.iter()
                .find(|p| p.get(0).and_then(Value::as_f64) == Some(99.0))
        })
        .and_then(|p| p.get(1))
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("the result has no point at 99% for {mapping}"))
}

/// A translation comparison's row of `scheme`.
fn scheme<'a>(result: &'a Value, scheme: &str) -> Result<&'a Value, String> {
    named(result, "schemes", "scheme", scheme)
}

/// Page- and range-walk cycles of a scheme.
fn walk_cycles(row: &Value) -> Result<f64, String> {
    Ok(at(row, &["walk_cycles"])? + at(row, &["range_walk_cycles"])?)
}

/// `f` of every trace's result of `experiment`.
fn over(
    r: &Results,
    experiment: &str,
    f: impl Fn(&Value) -> Result<f64, String>,
) -> Result<Vec<f64>, String> {
    let traces = r.traces(experiment);
    if traces.is_empty() {
        return Err(format!(
            "{}no runs of {experiment}",
            crate::results::NOT_RUN
        ));
    }
    traces
        .iter()
        .map(|t| f(r.get(experiment, t, &[])?))
        .collect()
}

fn most(v: Vec<f64>) -> Measured {
    Measured::Number(v.into_iter().fold(f64::NEG_INFINITY, f64::max))
}

fn least(v: Vec<f64>) -> Measured {
    Measured::Number(v.into_iter().fold(f64::INFINITY, f64::min))
}

pub fn measure(r: &Results) -> Measures {
    let mut m = Measures::new();
    put(
        &mut m,
        "ranges.most",
        over(r, "contiguity", |v| entries(v, "ideal ranges")).map(most),
    );
    let ratio = |v: &Value| Ok(entries(v, "4K pages")? / entries(v, "ideal ranges")?.max(1.0));
    put(
        &mut m,
        "pages_over_ranges.least",
        over(r, "contiguity", ratio).map(least),
    );
    put(
        &mut m,
        "pages_over_ranges_99.least",
        over(r, "contiguity", |v| {
            Ok(entries_99(v, "4K pages")? / entries_99(v, "ideal ranges")?.max(1.0))
        })
        .map(least),
    );
    put(&mut m, "walk_overhead.mean_by_scheme", {
        let schemes = ["4K", "THP 2M", "1G", "DS", "RMM"];
        schemes
            .iter()
            .map(|s| {
                let v = over(r, "translation", |v| {
                    at(scheme(v, s)?, &["walk_overhead_percent"])
                })?;
                Ok((s.to_string(), v.iter().sum::<f64>() / v.len() as f64))
            })
            .collect::<Result<Vec<_>, String>>()
            .map(Measured::Series)
    });
    for (name, other) in [("thp", "THP 2M"), ("1g", "1G")] {
        put(
            &mut m,
            &format!("walk_cycles.{name}_over_rmm.least"),
            over(r, "translation", |v| {
                // One cycle at least, so a scheme with no walks left is a ratio.
                Ok(walk_cycles(scheme(v, other)?)? / walk_cycles(scheme(v, "RMM")?)?.max(1.0))
            })
            .map(least),
        );
    }
    let overhead = |v: &Value, s: &str| at(scheme(v, s)?, &["walk_overhead_percent"]);
    put(
        &mut m,
        "walk_overhead.rmm_minus_ds.most",
        over(r, "translation", |v| {
            Ok(overhead(v, "RMM")? - overhead(v, "DS")?)
        })
        .map(most),
    );
    put(
        &mut m,
        "walk_cycles_removed.rmm.least",
        over(r, "translation", |v| {
            at(scheme(v, "RMM")?, &["walk_cycles_removed_percent"])
        })
        .map(least),
    );
    put(
        &mut m,
        "walk_overhead.rmm.mean",
        over(r, "translation", |v| overhead(v, "RMM"))
            .map(|v| Measured::Number(v.iter().sum::<f64>() / v.len() as f64)),
    );
    match crate::preset::data_tlb("skylake") {
        Ok(tlb) => {
            let (l1, l2, reach) = (tlb.l1_entries, tlb.l2_entries, tlb.reach_bytes);
            m.insert("skylake.l1_entries".into(), Measured::Number(l1));
            m.insert("skylake.l2_entries".into(), Measured::Number(l2));
            m.insert(
                "skylake.reach_percent_of_256g".into(),
                Measured::Number(100.0 * reach / (256.0 * (1u64 << 30) as f64)),
            );
        }
        Err(e) => {
            for k in ["l1_entries", "l2_entries", "reach_percent_of_256g"] {
                m.insert(format!("skylake.{k}"), Measured::from_error(e.clone()));
            }
        }
    }
    // A B-tree node of NODE_RANGES ranges has NODE_RANGES + 1 children.
    let per_node = NODE_RANGES as f64;
    let fanout = per_node + 1.0;
    m.insert(
        "range_table.three_levels".into(),
        Measured::Number(per_node * (1.0 + fanout + fanout * fanout)),
    );
    m.insert(
        "range_table.per_4k_page".into(),
        Measured::Number(4096.0 / (NODE_LINES as f64 * 64.0) * per_node),
    );
    m
}
