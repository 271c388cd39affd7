//! `advise`'s native runs, in rounds: each round runs all small and, one after
//! another in an order that turns by one each round, the mappings still to measure,
//! each after `--warmup` untimed runs of its own. The first `--runs` rounds run every
//! mapping; after them a mapping is left out once its interval is settled (it leaves
//! out 1.0, or lies within 1 ± `--resolution`), and the rounds stop when every mapping
//! is, at `--max-runs` rounds, or when the next round would pass `--max-seconds` of
//! native runs.

use super::interval::Speedup;
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
}

impl Measured {
    /// Mapping `i`'s speedup over all small, from the rounds it ran in.
    pub fn speedup(&self, i: usize, confidence: f64) -> Option<Speedup> {
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
    let mut m = Measured {
        runs: vec![Vec::new(); n],
        rounds_of: vec![Vec::new(); n],
        stopped: String::new(),
    };
    let start = Instant::now();
    // The last round's seconds per mapping run (its warm-ups included).
    let mut per_mapping = 0.0;
    let mut round = 0usize;
    loop {
        let active: Vec<usize> = if round < plan.min_rounds as usize {
            (0..n).collect()
        } else {
            let open: Vec<usize> = (1..n)
                .filter(|&i| {
                    !m.speedup(i, plan.confidence)
                        .is_some_and(|s| s.settled(plan.resolution))
                })
                .collect();
            let spent = start.elapsed().as_secs_f64();
            m.stopped = if open.is_empty() {
                format!(
                    "every mapping's {:.0} % interval leaves out 1.0 or lies within 1 ± {}",
                    plan.confidence * 100.0,
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
            std::iter::once(0).chain(open).collect()
        };
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
