//! The CPO paper's measures (`repro/cpo.toml`): its significance rule on its own
//! Table 1, and the benefit analysis against the simulator on the bundled traces and
//! our stand-ins for three of its SPECfp2000 programs.

use crate::results::{at, named, Results};
use crate::verdict::{format_number, Measured};
use crate::{put, Measures};
use pagelab_core::analysis::benefit::{PAGE_FAULTS_PER_SECOND, TLB_MISSES_PER_SECOND};
use serde_json::Value;

/// Table 1, all small pages: page faults per second and thousands of DTLB misses per
/// second, with the reference input and with the train input.
const TABLE1: [(&str, [f64; 2], [f64; 2]); 15] = [
    ("RF-CTH", [796.0, 935.0], [1205.0, 67.0]),
    ("UMT2K", [4073.0, 291.0], [6734.0, 200.0]),
    ("apsi", [129.0, 353.0], [7342.0, 39.0]),
    ("sixtrack", [81.0, 7.0], [369.0, 11.0]),
    ("fma3d", [126.0, 181.0], [32.0, 0.0]),
    ("lucas", [3912.0, 1646.0], [4097.0, 20.0]),
    ("ammp", [30.0, 1080.0], [115.0, 1093.0]),
    ("equake", [129.0, 312.0], [243.0, 233.0]),
    ("art", [18.0, 4.0], [117.0, 2.0]),
    ("galgel", [919.0, 208.0], [2817.0, 40.0]),
    ("mesa", [45.0, 35.0], [70.0, 28.0]),
    ("applu", [201.0, 252.0], [764.0, 357.0]),
    ("mgrid", [77.0, 307.0], [401.0, 194.0]),
    ("swim", [34.0, 2877.0], [615.0, 5311.0]),
    ("wupwise", [304.0, 179.0], [1991.0, 172.0]),
];

/// The programs of Table 1 pagelab's significance test fails, for one input.
fn fails(train: bool) -> Measured {
    Measured::Set(
        TABLE1
            .iter()
            .filter(|(_, r, t)| {
                let [faults, dtlb_k] = if train { *t } else { *r };
                // The same rule as benefit::Significance::of.
                !(dtlb_k * 1000.0 >= TLB_MISSES_PER_SECOND || faults >= PAGE_FAULTS_PER_SECOND)
            })
            .map(|(name, _, _)| name.to_string())
            .collect(),
    )
}

/// The experiments of benefit analyses: the bundled traces, and the stand-ins.
const ANALYSES: [&str; 2] = ["benefit", "kernels"];

/// Each trace's benefit analysis, of every experiment that makes them.
fn analyses(r: &Results) -> Result<Vec<(String, &Value)>, String> {
    let mut out = Vec::new();
    for e in ANALYSES {
        for t in r.traces(e) {
            out.push((t.clone(), r.get(e, &t, &[])?));
        }
    }
    if out.is_empty() {
        return Err("no benefit analyses".into());
    }
    Ok(out)
}

/// Each stand-in's best single category (`swim: static`), as the paper names its
/// programs' (§5.3, Figure 4).
fn stand_ins(r: &Results) -> Result<Measured, String> {
    let traces = r.traces("kernels");
    if traces.is_empty() {
        return Err("no analyses of the stand-ins".into());
    }
    let mut out = Vec::new();
    for t in traces {
        let name = t.trim_start_matches("cpo-").trim_end_matches(".plt");
        let best = best_category(r.get("kernels", &t, &[])?).unwrap_or_else(|| "none".into());
        out.push(format!("{name}: {}", best.replace('-', " ")));
    }
    Ok(Measured::Set(out))
}

fn rows(v: &Value) -> &[Value] {
    v.get("rows")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The paper's three data categories (§3.1): a trace whose references fall in none of
/// them (it records no allocations) has only the whole-footprint mappings to rank.
const PAPER_CATEGORIES: [&str; 3] = ["static", "small-dynamic", "large-dynamic"];

/// Whether any reference of the analysis falls in one of the paper's categories.
fn has_categories(v: &Value) -> bool {
    v.get("categories")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                PAPER_CATEGORIES.contains(&c[0].as_str().unwrap_or(""))
                    && c[1].as_u64().unwrap_or(0) > 0
            })
        })
}

/// Each trace's ranking error (§5.3.2), over the traces with categories; those left
/// out are named.
#[derive(Clone)]
struct RankingErrors {
    ranked: Vec<(String, f64)>,
    left_out: Vec<String>,
}

impl RankingErrors {
    /// Per trace, the median, and what was left out, for the verdict's line.
    fn describe(&self) -> String {
        let mut values: Vec<f64> = self.ranked.iter().map(|(_, x)| *x).collect();
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = match n % 2 {
            1 => values[n / 2],
            _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
        };
        let per: Vec<String> = self
            .ranked
            .iter()
            .map(|(t, x)| format!("{} {}", t.trim_end_matches(".plt"), format_number(*x)))
            .collect();
        let mut out = format!(
            "per trace {}; median {}",
            per.join(", "),
            format_number(median)
        );
        if !self.left_out.is_empty() {
            out += &format!(
                "; left out, no allocations to categorise: {}",
                self.left_out.join(", ")
            );
        }
        out
    }
}

fn ranking_errors(a: &[(String, &Value)]) -> Result<RankingErrors, String> {
    let mut e = RankingErrors {
        ranked: Vec::new(),
        left_out: Vec::new(),
    };
    for (trace, v) in a {
        if !has_categories(v) {
            e.left_out.push(trace.trim_end_matches(".plt").to_string());
            continue;
        }
        if let Some(x) = v
            .get("validation")
            .and_then(|x| x.get("ranking_error"))
            .and_then(Value::as_f64)
        {
            e.ranked.push((trace.clone(), x));
        }
    }
    if e.ranked.is_empty() {
        return Err("no trace with categories was ranked".to_string());
    }
    Ok(e)
}

/// The single category with the largest predicted benefit, if any gains.
fn best_category(v: &Value) -> Option<String> {
    rows(v)
        .iter()
        .filter(|row| {
            row.get("all").and_then(Value::as_bool) == Some(false)
                && row
                    .get("categories")
                    .and_then(Value::as_array)
                    .map(Vec::len)
                    == Some(1)
        })
        .filter_map(|row| {
            Some((
                row["categories"][0].as_str()?,
                row.get("benefit_cycles")?.as_f64()?,
            ))
        })
        .filter(|(_, b)| *b > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c.to_string())
}

/// Ranks of `values`, ties sharing their mean rank.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|a, b| values[*a].total_cmp(&values[*b]));
    let mut out = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        for k in i..=j {
            out[order[k]] = (i + j) as f64 / 2.0 + 1.0;
        }
        i = j + 1;
    }
    out
}

/// Spearman's rank correlation.
fn spearman(x: &[f64], y: &[f64]) -> f64 {
    let (rx, ry) = (ranks(x), ranks(y));
    let n = x.len() as f64;
    let mean = (n + 1.0) / 2.0;
    let (mut cov, mut vx, mut vy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        cov += (a - mean) * (b - mean);
        vx += (a - mean) * (a - mean);
        vy += (b - mean) * (b - mean);
    }
    cov / (vx * vy).sqrt()
}

/// The whole footprint on 2M pages: its large pages, and its predicted benefit as a
/// share of the estimated run time.
fn footprint_and_gain(v: &Value) -> Result<(f64, f64), String> {
    let row = named(v, "rows", "mapping", "all@2M")?;
    let seconds = at(v, &["significance", "seconds"])?;
    // The analysis estimates the run time at 3 GHz when none is given.
    let cycles = seconds * 3e9;
    Ok((
        at(row, &["large_pages"])?,
        at(row, &["benefit_cycles"])? / cycles,
    ))
}

/// From `pagelab advise`'s run on this machine: the mapping predicted fastest (not all
/// small), its measured speedup as a share of the fastest measured, and its predicted
/// speedup over its measured one.
fn native(r: &Results) -> Result<(f64, f64), String> {
    let advice = r.get("native:advise-randread", "advise-randread", &[])?;
    let mappings = advice
        .get("mappings")
        .and_then(Value::as_array)
        .ok_or("the native measurement has no mappings")?;
    let speedup = |m: &Value, k: &str| m.get(k).and_then(Value::as_f64);
    let best = mappings
        .iter()
        .filter(|m| m.get("mapping").and_then(Value::as_str) != Some("all small"))
        .filter_map(|m| Some((m, speedup(m, "predicted_speedup")?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .ok_or("no mapping has a predicted speedup")?;
    let measured = speedup(best.0, "measured_speedup").ok_or("no measured speedup")?;
    let fastest = mappings
        .iter()
        .filter_map(|m| speedup(m, "measured_speedup"))
        .fold(f64::NEG_INFINITY, f64::max);
    Ok((measured / fastest, best.1 / measured))
}

pub fn measure(r: &Results) -> Measures {
    let mut m = Measures::new();
    m.insert("significance.fails.ref".into(), fails(false));
    m.insert("significance.fails.train".into(), fails(true));
    let native = native(r);
    put(
        &mut m,
        "native.best_predicted_share_of_fastest",
        native.clone().map(|(share, _)| Measured::Number(share)),
    );
    put(
        &mut m,
        "native.predicted_over_measured",
        native.map(|(_, ratio)| Measured::Number(ratio)),
    );
    put(&mut m, "stand_ins.best_category", stand_ins(r));
    let all = analyses(r);
    let errors = all.clone().and_then(|a| ranking_errors(&a));
    put(
        &mut m,
        "ranking_error.geomean",
        errors.clone().map(|e| {
            let values: Vec<f64> = e.ranked.iter().map(|(_, x)| *x).collect();
            // A ranking error of 0 counts as 0.01 points, so the mean is defined.
            let logs: f64 = values.iter().map(|x| x.max(0.01).ln()).sum();
            let mean = (logs / values.len() as f64).exp();
            Measured::Described(mean, format!("geometric mean; {}", e.describe()))
        }),
    );
    put(
        &mut m,
        "ranking_error.most",
        errors.map(|e| {
            let most = e.ranked.iter().map(|(_, x)| *x).fold(0.0, f64::max);
            Measured::Described(most, e.describe())
        }),
    );
    put(
        &mut m,
        "best_category.distinct",
        all.clone().map(|a| {
            let mut best: Vec<String> = a.iter().filter_map(|(_, v)| best_category(v)).collect();
            best.sort();
            best.dedup();
            Measured::Number(best.len() as f64)
        }),
    );
    put(
        &mut m,
        "footprint_vs_benefit.spearman",
        all.and_then(|a| {
            let pairs: Vec<(f64, f64)> = a
                .iter()
                .map(|(_, v)| footprint_and_gain(v))
                .collect::<Result<_, _>>()?;
            if pairs.len() < 3 {
                return Err("fewer than three traces to correlate".to_string());
            }
            let (x, y): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
            let rho = spearman(&x, &y);
            if !rho.is_finite() {
                return Err("every trace has the same footprint or gain: no correlation".into());
            }
            Ok(Measured::Number(rho))
        }),
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_is_one_for_the_same_order_and_minus_one_reversed() {
        let x = [1.0, 2.0, 3.0, 4.0];
        assert!((spearman(&x, &[10.0, 20.0, 30.0, 45.0]) - 1.0).abs() < 1e-12);
        assert!((spearman(&x, &[4.0, 3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        assert_eq!(ranks(&[5.0, 1.0, 5.0]), vec![2.5, 1.0, 2.5]);
    }
}
