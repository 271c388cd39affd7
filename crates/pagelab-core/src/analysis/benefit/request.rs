//! The benefit analysis's options as a person gives them: on the command line, as
//! Python keywords, or in a sweep file (`analysis = { kind = "benefit", … }`). One
//! struct, read alike by all three, then checked into [`Options`].

use super::{Budget, Options};
use crate::categories::UserCategory;
use crate::PageSize;
use serde::{Deserialize, Serialize};

/// The options before they are checked: page sizes and the budget as text, counts as
/// given (a negative one is refused, naming it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Request {
    /// Large page sizes to analyse ("2M", "1G"); empty: every one the machine has.
    pub page_sizes: Vec<String>,
    /// Large pages available to the agent: a count ("512") or bytes ("1G").
    pub budget: Option<String>,
    /// C_TLBmiss, cycles of a TLB miss; default the machine's walk of an uncached 4K
    /// translation.
    pub tlb_miss_cycles: Option<f64>,
    /// C_PF, cycles of a page fault; default the machine's `page_fault_cycles`.
    pub page_fault_cycles: Option<f64>,
    /// Entries of the page table faults are counted at (H_PF); default every page
    /// stays mapped.
    pub page_table_entries: Option<i64>,
    /// The program's run time with small pages, for the significance test; default
    /// estimated at `clock_ghz`.
    pub seconds: Option<f64>,
    /// Default 3.
    pub clock_ghz: f64,
    /// Analyse one data reference in this many; default 1 (every one).
    pub sample: i64,
    /// Also run every mapping through the simulator; default false.
    pub simulate: bool,
}

impl Default for Request {
    fn default() -> Request {
        let o = Options::default();
        Request {
            page_sizes: Vec::new(),
            budget: None,
            tlb_miss_cycles: None,
            page_fault_cycles: None,
            page_table_entries: None,
            seconds: None,
            clock_ghz: o.clock_ghz,
            sample: o.sample as i64,
            simulate: false,
        }
    }
}

impl Request {
    /// The checked options, with the user's categories `rules`; `named` gives a
    /// field's name as the user wrote it (`--page-size`, `page_sizes`,
    /// `analysis.page_sizes`).
    pub fn options(
        &self,
        rules: Vec<UserCategory>,
        named: impl Fn(&str) -> String,
    ) -> Result<Options, String> {
        let mut sizes = Vec::new();
        for s in &self.page_sizes {
            let size = PageSize::parse(s.trim())
                .map_err(|e| format!("{}: {s:?}: {e}", named("page_sizes")))?;
            if !sizes.contains(&size) {
                sizes.push(size);
            }
        }
        let counted = |field: &str, n: i64| {
            u64::try_from(n).map_err(|_| format!("{} {n}: cannot be negative", named(field)))
        };
        if let Some(s) = self.seconds {
            if !(s.is_finite() && s > 0.0) {
                return Err(format!("{} {s}: not a run time", named("seconds")));
            }
        }
        Ok(Options {
            large_sizes: (!sizes.is_empty()).then_some(sizes),
            tlb_miss_cycles: self.tlb_miss_cycles,
            page_fault_cycles: self.page_fault_cycles,
            page_table_entries: self
                .page_table_entries
                .map(|n| counted("page_table_entries", n))
                .transpose()?,
            budget: self.budget.as_deref().map(Budget::parse).transpose()?,
            seconds: self.seconds,
            clock_ghz: self.clock_ghz,
            sample: counted("sample", self.sample)?,
            rules,
            ..Options::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_analysis_defaults_and_bad_values_are_named() {
        let o = Request::default()
            .options(Vec::new(), str::to_string)
            .unwrap();
        let d = Options::default();
        assert_eq!(
            (o.clock_ghz, o.sample, o.large_sizes),
            (d.clock_ghz, d.sample, None)
        );
        let flag = |f: &str| format!("--{}", f.replace('_', "-"));
        for (r, says) in [
            (
                Request {
                    sample: -2,
                    ..Request::default()
                },
                "--sample -2",
            ),
            (
                Request {
                    seconds: Some(0.0),
                    ..Request::default()
                },
                "--seconds 0",
            ),
            (
                Request {
                    page_sizes: vec!["3K".into()],
                    ..Request::default()
                },
                "--page-sizes",
            ),
            (
                Request {
                    budget: Some("-1".into()),
                    ..Request::default()
                },
                "--budget -1",
            ),
        ] {
            let e = r.options(Vec::new(), flag).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        let r: Request = toml::from_str("page_sizes = [\"2M\", \"2M\"]\nbudget = \"512\"").unwrap();
        let o = r.options(Vec::new(), str::to_string).unwrap();
        assert_eq!(o.large_sizes, Some(vec![PageSize::M2]));
        assert!(toml::from_str::<Request>("budgett = 1").is_err());
    }
}
