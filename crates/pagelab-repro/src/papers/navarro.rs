//! Navarro et al.'s measures (`repro/navarro.toml`): reservations against base pages
//! in the best case (our kernels: the slides' transpose and FFT, and the other
//! papers' SPEC stand-ins), on the synthetic extremes, by superpage size, and in
//! memory a file cache has fragmented, with either page daemon.

use crate::results::{at, named, total_cycles, Results, Run};
use crate::verdict::Measured;
use crate::{put, Measures};
use serde_json::Value;

const TRANSPOSE: &str = "column-walk:iterations=1000,rows=1000,row_bytes=8000";
/// The slides' own kernels, as recorded (`workloads/src/transpose.c`, `fft3d.c`).
const TRANSPOSE_KERNEL: &str = "navarro-transpose.plt";
const FFT_KERNEL: &str = "navarro-fft.plt";
const TOUCH_ONCE: &str = "column-walk:iterations=1,rows=4096,row_bytes=8192";
const POLICY: &str = "promotion.policy";

/// Data TLB misses of an Alpha run (its `dtb` level).
fn dtb_misses(report: &Value) -> Result<f64, String> {
    at(named(report, "levels", "name", "dtb")?, &["misses"])
}

/// Base pages against reservations of one trace with `more` overrides: (improvement
/// in percent, share of data TLB misses removed).
fn gain(
    r: &Results,
    experiment: &str,
    trace: &str,
    more: &[(&str, &str)],
) -> Result<(f64, f64), String> {
    let with = |policy| {
        let mut o = more.to_vec();
        o.push((POLICY, policy));
        r.get(experiment, trace, &o)
    };
    let (base, sup) = (with("none")?, with("reservation")?);
    let improvement = 100.0 * (total_cycles(base)? / total_cycles(sup)? - 1.0);
    let misses = dtb_misses(base)?;
    if misses == 0.0 {
        return Err(format!(
            "{trace}: no data TLB misses with base pages to reduce"
        ));
    }
    let reduction = 1.0 - dtb_misses(sup)? / misses;
    Ok((improvement, reduction))
}

fn best_case(r: &Results) -> Result<Vec<(f64, f64)>, String> {
    let traces = r.traces("kernels");
    if traces.is_empty() {
        return Err("no runs of the kernels".into());
    }
    traces.iter().map(|t| gain(r, "kernels", t, &[])).collect()
}

/// Run time with every size, in the best case.
fn all_sizes(r: &Results, trace: &str) -> Result<f64, String> {
    let experiment = if trace == TRANSPOSE {
        "synthetic"
    } else {
        "reference"
    };
    total_cycles(r.get(experiment, trace, &[(POLICY, "reservation")])?)
}

/// How much longer, in percent, every size takes than the best single size, the most
/// over the traces.
fn sizes(r: &Results) -> Result<f64, String> {
    let mut most = f64::NEG_INFINITY;
    for trace in r.traces("sizes") {
        let mut best = f64::INFINITY;
        for run in r.runs("sizes").iter().filter(|x: &&Run| x.trace == trace) {
            let report = run.result.as_ref().map_err(|e| {
                format!(
                    "{}the run of sizes: {trace} failed: {e}",
                    crate::results::NOT_RUN
                )
            })?;
            best = best.min(total_cycles(report)?);
        }
        most = most.max(100.0 * (all_sizes(r, &trace)? / best - 1.0));
    }
    if most.is_infinite() {
        return Err("no runs with single sizes".into());
    }
    Ok(most)
}

/// The kernels as the fragmented runs see them: for each whose best case removes at
/// least half of its data TLB misses, (its share of the best case's miss reduction
/// with the clock, with the contiguity daemon, the cache frames the contiguity daemon
/// evicted beyond the clock's as a percent of the cache at the start).
fn fragmented(r: &Results) -> Result<Vec<(f64, f64, f64)>, String> {
    let mut out = Vec::new();
    for trace in r.traces("fragmented") {
        let (_, best) = gain(r, "kernels", &trace, &[])?;
        if best < 0.5 {
            continue;
        }
        let base = dtb_misses(r.get("kernels", &trace, &[(POLICY, "none")])?)?;
        let run = |daemon| r.get("fragmented", &trace, &[("paging.daemon", daemon)]);
        let (clock, contiguity) = (run("clock")?, run("contiguity")?);
        let share = |report| Ok::<_, String>((1.0 - dtb_misses(report)? / base) / best);
        let evicted = |report: &Value| {
            Ok::<_, String>(
                at(report, &["file_cache", "evicted_for_memory"])?
                    + at(report, &["file_cache", "evicted_for_contiguity"])?,
            )
        };
        let cache = at(clock, &["file_cache", "frames_at_start"])?;
        let extra = 100.0 * (evicted(contiguity)? - evicted(clock)?) / cache;
        out.push((share(clock)?, share(contiguity)?, extra));
    }
    if out.is_empty() {
        return Err(
            "no kernel whose best case removes half of its TLB misses was run fragmented".into(),
        );
    }
    Ok(out)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn measure(r: &Results) -> Measures {
    let mut m = Measures::new();
    put(
        &mut m,
        "coverage_bytes",
        crate::preset::data_tlb("alpha-21264")
            .map(|t| Measured::Number(t.l1_entries * t.base_page_bytes)),
    );
    let best = best_case(r);
    put(
        &mut m,
        "best_case.share_reduced_95",
        best.clone()
            .map(|v| Measured::Share(v.iter().filter(|(_, red)| *red >= 0.95).count(), v.len())),
    );
    put(
        &mut m,
        "best_case.mean_improvement_percent",
        best.clone()
            .map(|v| Measured::Number(v.iter().map(|(i, _)| i).sum::<f64>() / v.len() as f64)),
    );
    put(
        &mut m,
        "best_case.least_improvement_percent",
        best.map(|v| Measured::Number(v.iter().map(|(i, _)| *i).fold(f64::INFINITY, f64::min))),
    );
    for (name, kernel) in [("transpose", TRANSPOSE_KERNEL), ("fft", FFT_KERNEL)] {
        put(
            &mut m,
            &format!("{name}.speedup"),
            gain(r, "kernels", kernel, &[]).map(|(i, _)| Measured::Number(1.0 + i / 100.0)),
        );
    }
    put(
        &mut m,
        "touch_once.improvement_percent",
        gain(r, "synthetic", TOUCH_ONCE, &[]).map(|(i, _)| Measured::Number(i)),
    );
    put(
        &mut m,
        "sizes.all_over_best_single_percent",
        sizes(r).map(Measured::Number),
    );
    let frag = fragmented(r);
    put(
        &mut m,
        "fragmented.clock_share_of_best",
        frag.clone()
            .map(|v| Measured::Number(median(v.iter().map(|x| x.0).collect()))),
    );
    put(
        &mut m,
        "fragmented.contiguity_share_of_best",
        frag.clone()
            .map(|v| Measured::Number(median(v.iter().map(|x| x.1).collect()))),
    );
    put(
        &mut m,
        "fragmented.contiguity_extra_evicted_percent",
        frag.map(|v| Measured::Number(v.iter().map(|x| x.2).fold(f64::NEG_INFINITY, f64::max))),
    );
    m
}
