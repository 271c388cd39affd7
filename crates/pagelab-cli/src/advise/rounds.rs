//! `advise`'s native runs, in rounds: each round runs all small and the mappings still
//! to measure, one after another in an order that turns by one each round, each after
//! `--warmup` untimed runs of its own. The first `--runs` rounds run every mapping.
//! After them, at planned looks (`--runs` rounds, twice as many, four times..., and
//! `--max-runs`), a mapping whose interval has settled (it leaves out 1.0, or lies
//! within 1 ± `--resolution`) is left out of later rounds; the rounds stop when every
//! mapping has settled, at `--max-runs`, or when the next round would pass
//! `--max-seconds` of native runs. Every interval is at the confidence the looks share
//! (interval.rs).

use super::interval::{self, Speedup};
use crate::native::{self, Run};
use crate::supervisor::Supervisor;
use crate::target::Target;
use anyhow::Result;
use std::path::Path;
use std::time::Instant;

/// When to stop.
pub struct Plan {
    pub min_rounds: u32,
    pub max_rounds: u32,
    pub max_seconds: f64,
    pub warmup: u32,
    pub confidence: f64,
    pub resolution: f64,
}

/// The runs of each mapping (all small first), and the rounds each took part in.
pub struct Measured {
    pub runs: Vec<Vec<Run>>,
    rounds_of: Vec<Vec<usize>>,
    /// Why the rounds stopped.
    pub stopped: String,
    /// The confidence of each interval: the run's, shared among the looks planned.
    pub confidence: f64,
    /// The looks planned.
    pub looks: usize,
}

impl Measured {
    /// Mapping `i`'s speedup over all small, from the rounds it ran in, at
    /// [`Measured::confidence`].
    pub fn speedup(&self, i: usize) -> Option<Speedup> {
        self.speedup_at(i, self.confidence)
    }

    fn speedup_at(&self, i: usize, confidence: f64) -> Option<Speedup> {
        let small: Vec<f64> = self.rounds_of[i]
            .iter()
            .map(|&r| self.runs[0][r].seconds)
            .collect();
        let own: Vec<f64> = self.runs[i].iter().map(|r| r.seconds).collect();
        Speedup::paired(&small, &own, confidence)
    }

    /// The rounds run.
    pub fn rounds(&self) -> usize {
        self.runs[0].len()
    }
}

/// Run the mappings (each a name and its categories; all small first) by `plan`.
pub fn measure(
    target: &Target,
    lib: &Path,
    mappings: &[(String, Vec<String>)],
    plan: &Plan,
    supervisor: &Supervisor,
    quiet: bool,
) -> Result<Measured> {
    let n = mappings.len();
    let looks = if plan.max_seconds > 0.0 {
        interval::looks(plan.min_rounds, plan.max_rounds)
    } else {
        vec![plan.min_rounds]
    };
    let mut m = Measured {
        runs: vec![Vec::new(); n],
        rounds_of: vec![Vec::new(); n],
        stopped: String::new(),
        confidence: interval::look_confidence(plan.confidence, looks.len()),
        looks: looks.len(),
    };
    let start = Instant::now();
    // The last round's seconds per mapping run (its warm-ups included).
    let mut per_mapping = 0.0;
    // The mappings still to measure, as of the last look.
    let mut open: Vec<usize> = (1..n).collect();
    let mut round = 0usize;
    loop {
        if round >= plan.min_rounds as usize {
            if looks.contains(&(round as u32)) {
                open.retain(|&i| !m.speedup(i).is_some_and(|s| s.settled(plan.resolution)));
            }
            let spent = start.elapsed().as_secs_f64();
            m.stopped = if open.is_empty() {
                format!(
                    "every mapping's interval leaves out 1.0 or lies within 1 ± {}",
                    plan.resolution
                )
            } else if round >= plan.max_rounds as usize {
                format!("--max-runs {} reached", plan.max_rounds)
            } else if spent + per_mapping * (open.len() + 1) as f64 > plan.max_seconds {
                format!(
                    "another round would pass --max-seconds {} ({spent:.0} s spent)",
                    plan.max_seconds
                )
            } else {
                String::new()
            };
            if !m.stopped.is_empty() {
                break;
            }
        }
        let active: Vec<usize> = std::iter::once(0).chain(open.iter().copied()).collect();
        let began = Instant::now();
        for k in 0..active.len() {
            let i = active[(k + round) % active.len()];
            let cats: Vec<&str> = mappings[i].1.iter().map(String::as_str).collect();
            for _ in 0..plan.warmup {
                native::run(target, lib, &cats, supervisor)?;
            }
            let r = native::run(target, lib, &cats, supervisor)?;
            if !quiet {
                eprintln!(
                    "pagelab: round {:>2} {:<40} {:>8.3} s {:>9.1} MiB in huge pages",
                    round + 1,
                    mappings[i].0,
                    r.seconds,
                    r.anon_huge_kib as f64 / 1024.0
                );
            }
            m.runs[i].push(r);
            m.rounds_of[i].push(round);
        }
        per_mapping = began.elapsed().as_secs_f64() / active.len() as f64;
        round += 1;
    }
    Ok(m)
}
