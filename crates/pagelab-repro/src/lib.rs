//! `pagelab repro PAPER`: each paper pagelab is built on, its headline experiments
//! run as sweeps and its claims judged one by one.
//!
//! A paper is a claim file, `repro/<paper>.toml` ([`claims`]): the experiments (sweeps
//! into one results database) and the claims, each with the paper's section, its
//! number, the measure pagelab computes for it and how the two compare. The paper's
//! module computes the measures from the runs ([`results`]); [`verdict`] compares
//! them, and [`run`] ties it together; [`stored`] keeps the verdicts beside the runs,
//! where `pagelab report` shows them.

pub mod claims;
pub mod papers;
mod preset;
pub mod results;
pub mod run;
pub mod sensitivity;
pub mod stored;
pub mod verdict;

use std::collections::BTreeMap;
use verdict::Measured;

/// The measures a paper's module computed, by name.
pub type Measures = BTreeMap<String, Measured>;

/// A paper that can be reproduced: a claim file and its module, found by the build
/// ([`papers`]).
pub struct PaperDef {
    /// As `pagelab repro` names it.
    pub id: &'static str,
    /// Its claim file's text.
    pub text: &'static str,
    /// Its measures from the runs of its experiments.
    pub measure: fn(&results::Results) -> Measures,
}

pub use papers::PAPERS;

/// The paper `id`, or an error naming the ones there are.
pub fn paper(id: &str) -> Result<&'static PaperDef, String> {
    PAPERS.iter().find(|p| p.id == id).ok_or_else(|| {
        let ids: Vec<&str> = PAPERS.iter().map(|p| p.id).collect();
        format!("no paper {id:?} (papers: {})", ids.join(", "))
    })
}

/// Put a measure, or why it could not be made.
pub(crate) fn put(m: &mut Measures, name: &str, value: Result<Measured, String>) {
    m.insert(name.to_string(), value.unwrap_or_else(Measured::from_error));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_claim_file_parses_and_names_its_paper() {
        for p in &PAPERS {
            let f = claims::PaperFile::parse(p.text, p.id).unwrap();
            assert_eq!(f.paper.id, p.id);
        }
    }

    #[test]
    fn the_recorded_workloads_are_listed_once_and_none_for_a_quick_run() {
        let fang = paper("fang").unwrap();
        let names = run::workloads(fang, false).unwrap();
        assert_eq!(names.len(), 7, "{names:?}");
        assert!(names.iter().all(|n| n.starts_with("fang-")), "{names:?}");
        for p in &PAPERS {
            assert!(run::workloads(p, true).unwrap().is_empty(), "{}", p.id);
        }
    }
}
