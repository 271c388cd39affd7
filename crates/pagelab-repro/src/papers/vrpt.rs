//! The variable radix page table's measures (`repro/vrpt.toml`): references, cache
//! lines and bytes of the seven structures over the three layouts, by the paper's
//! names; references and lines per TLB reload behind the MIPS on the compact layout
//! (§5.2); and §5.3's superpages on the MIPS.

use crate::results::{at, Results};
use crate::verdict::Measured;
use crate::{put, Measures};
use serde_json::Value;

/// pagelab's structures by the paper's names.
const NAMES: [(&str, &str); 7] = [
    ("radix", "MLPT"),
    ("linear", "VLA"),
    ("hashed", "HPT"),
    ("clustered", "CPT"),
    ("inverted", "IPT"),
    ("guarded", "GPT"),
    ("variable-radix", "VRPT"),
];

const LAYOUTS: [&str; 3] = ["dense", "sparse", "shared"];

/// One field of every structure over a layout, by the paper's names.
fn field(r: &Results, layout: &str, key: &str) -> Result<Vec<(String, f64)>, String> {
    field_of(r, "layouts", layout, key)
}

/// One field of every structure in a run of `experiment` over `trace`.
fn field_of(
    r: &Results,
    experiment: &str,
    trace: &str,
    key: &str,
) -> Result<Vec<(String, f64)>, String> {
    let result = r.get(experiment, trace, &[])?;
    let rows = result
        .get("structures")
        .and_then(Value::as_array)
        .ok_or("the result has no structures")?;
    let mut out = Vec::new();
    for row in rows {
        let ours = row.get("structure").and_then(Value::as_str).unwrap_or("");
        let Some((_, paper)) = NAMES.iter().find(|(n, _)| *n == ours) else {
            continue;
        };
        out.push((paper.to_string(), at(row, &[key])?));
    }
    Ok(out)
}

fn of(series: &[(String, f64)], name: &str) -> Result<f64, String> {
    series
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| format!("no {name} among the structures"))
}

/// TLB miss cycles of a MIPS run: the walks' (handler and walk references).
fn miss_cycles(report: &Value) -> Result<f64, String> {
    at(report, &["cycles", "walks"])
}

pub fn measure(r: &Results) -> Measures {
    let mut m = Measures::new();
    for (key, name) in [
        ("lines_mean", "lines"),
        ("refs_mean", "refs"),
        ("footprint_bytes", "bytes"),
        ("in_use_bytes", "in_use"),
    ] {
        for layout in LAYOUTS {
            put(
                &mut m,
                &format!("{name}.{layout}"),
                field(r, layout, key).map(Measured::Series),
            );
        }
    }
    // §5.2: per TLB reload behind the MIPS, on the compact layout.
    for (key, name) in [
        ("lines_mean", "reloads.lines"),
        ("refs_mean", "reloads.refs"),
    ] {
        put(
            &mut m,
            name,
            field_of(r, "reloads", "compact", key).map(Measured::Series),
        );
    }
    let reload_lines = field_of(r, "reloads", "compact", "lines_mean");
    let dense_refs = field(r, "dense", "refs_mean");
    let one = |s: &Result<Vec<(String, f64)>, String>, name: &str| {
        s.clone().and_then(|s| of(&s, name)).map(Measured::Number)
    };
    put(&mut m, "reloads.lines.VRPT", one(&reload_lines, "VRPT"));
    for name in ["VRPT", "VLA", "IPT"] {
        put(
            &mut m,
            &format!("refs.dense.{name}"),
            one(&dense_refs, name),
        );
    }
    put(
        &mut m,
        "reloads.lines.best_other_over_vrpt",
        reload_lines.clone().and_then(|s| {
            let best = ["HPT", "CPT", "GPT"]
                .iter()
                .map(|n| of(&s, n))
                .collect::<Result<Vec<f64>, String>>()?
                .into_iter()
                .fold(f64::INFINITY, f64::min);
            Ok(Measured::Number(best / of(&s, "VRPT")?))
        }),
    );
    put(
        &mut m,
        "bytes.IPT.largest_over_smallest",
        LAYOUTS
            .iter()
            .map(|l| field(r, l, "footprint_bytes").and_then(|s| of(&s, "IPT")))
            .collect::<Result<Vec<f64>, String>>()
            .map(|sizes| {
                let hi = sizes.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lo = sizes.iter().cloned().fold(f64::INFINITY, f64::min);
                Measured::Number(hi / lo)
            }),
    );
    put(&mut m, "superpages.overhead_left", {
        (|| {
            let traces = r.traces("superpages");
            if traces.is_empty() {
                return Err("no runs of the MIPS".to_string());
            }
            let mut worst: f64 = 0.0;
            let mut each = Vec::new();
            for t in traces {
                let base =
                    miss_cycles(r.get("superpages", &t, &[("promotion.policy", "none")])?)?;
                let asap =
                    miss_cycles(r.get("superpages", &t, &[("promotion.policy", "asap")])?)?;
                if base == 0.0 {
                    return Err(format!("{t}: no TLB miss cycles with base pages"));
                }
                worst = worst.max(asap / base);
                let name = t.trim_start_matches("fang-").trim_end_matches(".plt");
                each.push(format!("{name} {:.3}", asap / base));
            }
            Ok(Measured::Described(worst, each.join(", ")))
        })()
    });
    m
}
