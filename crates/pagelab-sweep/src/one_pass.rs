//! Simulations of one trace that differ only in the geometry of the last TLB level,
//! run in one pass ([`pagelab_core::machine::one_pass`]): a sweep over the STLB's
//! sets and ways reads the trace and runs the levels below once, not once per
//! geometry. Each run's result is the one its own run gives (tested byte for byte);
//! where one pass cannot be exact, the runs go one by one, as they would anyway.

use crate::job::{run_one, Job, Outcome};
use pagelab_core::machine::one_pass::OnePass;
use pagelab_core::MachineConfig;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// `jobs` with the simulations that one pass can run together made one job each:
/// the first of each group, with the others as its siblings.
pub fn group(jobs: Vec<Job>) -> Vec<Job> {
    let mut families: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    let configs: Vec<Option<MachineConfig>> = jobs
        .iter()
        .map(|j| {
            let simulate = j.analysis.is_empty();
            simulate
                .then(|| MachineConfig::from_toml(&j.config_toml, "config").ok())
                .flatten()
        })
        .collect();
    for (i, (job, config)) in jobs.iter().zip(&configs).enumerate() {
        if let Some(key) = config.as_ref().and_then(OnePass::family) {
            let trace = job.trace.display().to_string();
            families.entry((trace, key)).or_default().push(i);
        }
    }
    let mut lead: Vec<Option<Vec<usize>>> = vec![None; jobs.len()];
    let mut taken = vec![false; jobs.len()];
    for members in families.into_values().filter(|m| m.len() > 1) {
        let group: Vec<MachineConfig> = members
            .iter()
            .map(|&i| configs[i].clone().expect("keyed"))
            .collect();
        if OnePass::plan(&group).is_ok() {
            members.iter().for_each(|&i| taken[i] = true);
            lead[members[0]] = Some(members[1..].to_vec());
        }
    }
    let mut slots: Vec<Option<Job>> = jobs.into_iter().map(Some).collect();
    let mut out = Vec::new();
    for i in 0..slots.len() {
        let Some(mut job) = slots[i].take() else {
            continue;
        };
        if let Some(others) = &lead[i] {
            for &o in others {
                let sibling = slots[o].take().expect("a sibling is taken once");
                job.siblings.push((sibling.index, sibling.config_toml));
            }
        } else if taken[i] {
            unreachable!("a member of a group is its lead's sibling");
        }
        out.push(job);
    }
    out
}

/// A job and its siblings: one pass, or one run each where the pass cannot be exact
/// (or fails: each run then fails with its own error). The pass's time is shared
/// equally among its runs.
pub fn run(job: &Job) -> Vec<Outcome> {
    if job.siblings.is_empty() {
        let t = Instant::now();
        let result = run_one(&job.trace, &job.config_toml, &job.analysis);
        return vec![Outcome {
            index: job.index,
            result,
            seconds: t.elapsed().as_secs_f64(),
            shared: false,
        }];
    }
    let t = Instant::now();
    let texts: Vec<&str> = std::iter::once(job.config_toml.as_str())
        .chain(job.siblings.iter().map(|(_, c)| c.as_str()))
        .collect();
    let indices: Vec<usize> = std::iter::once(job.index)
        .chain(job.siblings.iter().map(|&(i, _)| i))
        .collect();
    match std::panic::catch_unwind(|| pass(&job.trace, &texts)) {
        Ok(Ok(results)) => {
            let seconds = t.elapsed().as_secs_f64() / results.len() as f64;
            indices
                .into_iter()
                .zip(results)
                .map(|(index, r)| Outcome {
                    index,
                    result: Ok(r),
                    seconds,
                    shared: true,
                })
                .collect()
        }
        _ => job.separate().iter().flat_map(run).collect(),
    }
}

/// The reports (JSON) and references of each configuration, from one pass.
fn pass(trace: &Path, texts: &[&str]) -> Result<Vec<(String, u64)>, String> {
    let configs = texts
        .iter()
        .map(|t| MachineConfig::from_toml(t, "config").map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let plan = OnePass::plan(&configs)?;
    let mut reader = crate::inputs::open_trace(trace)?;
    let reports = plan
        .run(reader.as_mut(), trace, |_, _| {})
        .map_err(|e| e.to_string())?;
    reports
        .iter()
        .map(|r| {
            let text = serde_json::to_string(r).map_err(|e| e.to_string())?;
            Ok((text, r.counts.references))
        })
        .collect()
}
