//! A paper's claim file (`repro/<paper>.toml`): the paper, the experiments that
//! reproduce it (each a sweep), and its claims, each with the section and the number
//! it comes from, the measure pagelab computes for it and how the two are compared.
//!
//! ```toml
//! [paper]
//! id = "fang"
//! title = "Online Superpage Promotion Revisited"
//! cite = "Fang, Zhang, Carter, McKee and Hsieh, SIGMETRICS 2000"
//! source = "Proceedings of ACM SIGMETRICS 2000"
//! about = "What runs, in a paragraph."
//!
//! [[experiment]]
//! name = "microbench-base"
//! about = "the §4.1 microbenchmark with base pages, 1 to 4096 references per page"
//! sweep = { machine = "pa-risc-32", traces = ["synthetic:column-walk:iterations=1"] }
//! quick = { traces = ["synthetic:column-walk:iterations=1,rows=1024"] }
//!
//! [[claim]]
//! id = "remap-asap-break-even"
//! section = "§5.1, Figure 2b"
//! claim = "remap+asap breaks even after sixteen references per page"
//! paper = 16
//! measure = "break_even.remap.asap"
//! check = { kind = "power-of-two", within = 1 }
//! tolerance = "the grid is powers of two: one step either way is the grid's resolution"
//! compared = "the fewest references per page at which the run is no slower than base pages"
//! ```
//!
//! Every claim is of one [`Class`]: *measured* (a result of the runs against the
//! paper's; only these count in a paper's headline), *input check* (a constant of
//! pagelab's, a preset's size or a threshold, against the paper's: it shows the inputs
//! are the paper's, not that a result agrees; `class = "input-check"`), or *not
//! reproducible here* (`check = { kind = "not-reproducible", reason = ".." }`, the
//! missing thing named). A check with a tolerance says in `tolerance` why it is that
//! wide.

use serde::Deserialize;
use std::collections::BTreeSet;

/// A claim file, as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperFile {
    pub paper: Paper,
    #[serde(default)]
    pub experiment: Vec<Experiment>,
    /// Measurements on this machine (native runs), each a pagelab command run once.
    #[serde(default)]
    pub native: Vec<Native>,
    pub claim: Vec<Claim>,
    /// Inputs whose effect on the verdicts a full reproduction shows.
    #[serde(default)]
    pub sensitivity: Vec<Sensitivity>,
}

/// An input the paper does not state, or states in two ways: the experiments that
/// use it (`experiments`, default all) run again with `key` at each of `values`, and
/// the claims whose verdicts change are listed with their measures before and after.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sensitivity {
    /// A dotted configuration key, as a sweep's grid takes it.
    pub key: String,
    pub values: Vec<toml::Value>,
    /// What the input is and where each value comes from, in a sentence.
    pub about: String,
    #[serde(default)]
    pub experiments: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paper {
    pub id: String,
    pub title: String,
    pub cite: String,
    /// Where the paper is published: its DOI as a link, or its proceedings.
    pub source: String,
    /// What the reproduction runs, and what it cannot, in a paragraph.
    pub about: String,
}

/// One experiment: a sweep into the repro's database.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    pub about: String,
    /// A sweep file's fields. A trace named `bundled:NAME` is a bundled trace.
    pub sweep: toml::Table,
    /// Fields replacing the sweep's in a quick run (`--quick`): smaller inputs that
    /// exercise the same pipeline. A quick run records nothing: an experiment on
    /// recorded workloads names other traces here (its claims are then not judged),
    /// or has no quick inputs and is skipped.
    #[serde(default)]
    pub quick: Option<toml::Table>,
}

impl Experiment {
    /// Whether it runs on catalogue workloads recorded into the trace cache
    /// (`workload:NAME`).
    pub fn recorded(&self) -> bool {
        self.sweep.get("traces").is_some_and(names_workload)
    }
}

/// Whether a sweep's `traces` name a recorded workload.
fn names_workload(traces: &toml::Value) -> bool {
    traces.as_array().is_some_and(|ts| {
        ts.iter()
            .any(|t| t.as_str().is_some_and(|t| t.starts_with(WORKLOAD)))
    })
}

/// A trace of the claim files named `workload:NAME`: the catalogue workload `NAME`
/// (one of the papers' own kernels), recorded into the trace cache as `NAME.plt` by
/// the command line before the experiments run.
pub const WORKLOAD: &str = "workload:";

/// One name or a list of them.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Names {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Names::deserialize(d)? {
        Names::One(n) => vec![n],
        Names::Many(v) => v,
    })
}

/// A native measurement: `pagelab ARGS --json FILE` run once, its JSON kept beside
/// the database (a repro started again reuses it).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Native {
    pub name: String,
    pub about: String,
    pub args: Vec<String>,
}

/// One claim.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    /// Where in the paper: section, and table or figure.
    pub section: String,
    /// What the paper says, quoted or closely paraphrased.
    pub claim: String,
    /// The paper's number(s) the check compares with; absent where there is none.
    #[serde(default)]
    pub paper: Option<toml::Value>,
    /// The paper's number as the paper puts it ("more than 1,000"), when that is not
    /// the number itself.
    #[serde(default)]
    pub paper_text: Option<String>,
    /// The measure (named by the paper's module) the check compares.
    #[serde(default)]
    pub measure: Option<String>,
    pub check: Check,
    /// What the measure comes from besides the experiments every run has: native
    /// measurements (without one — `--quick`, `--no-native`, or a run that failed —
    /// the claim is not run) and experiments on recorded workloads (which `--quick`
    /// skips). One name or a list.
    #[serde(default, deserialize_with = "one_or_many")]
    pub needs: Vec<String>,
    /// What is compared, in a line.
    pub compared: String,
    /// `input-check` for a constant of pagelab's compared with the paper's; default
    /// `measured`. (A not-reproducible claim says so by its check.)
    #[serde(default)]
    pub class: Option<Class>,
    /// Why the check's tolerance (or bound) is what it is, in a sentence: required
    /// wherever the check has one.
    #[serde(default)]
    pub tolerance: Option<String>,
    /// Where the claim differs (in the documented full run): the cause, in a sentence
    /// (a departure of pagelab's model, an input the paper does not give, the
    /// programs). Shown beside a verdict that differs.
    #[serde(default)]
    pub cause: Option<String>,
}

/// What kind of evidence a claim's verdict is.
#[derive(Clone, Copy, Debug, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// A result of pagelab's runs against the paper's: counted in the headline.
    Measured,
    /// A constant of pagelab's (a preset's size, a threshold) against the paper's:
    /// listed apart, never counted as an agreement.
    InputCheck,
    /// Not reproducible here, for the reason the check gives.
    NotReproducible,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Measured => "measured",
            Class::InputCheck => "input check",
            Class::NotReproducible => "not reproducible here",
        }
    }
}

impl Claim {
    /// The claim's class: not reproducible by its check, else as written (measured
    /// by default).
    pub fn class(&self) -> Class {
        match self.check {
            Check::NotReproducible { .. } => Class::NotReproducible,
            _ => self.class.unwrap_or(Class::Measured),
        }
    }
}

impl Check {
    /// Whether the check has a tolerance or a bound someone chose (and so a
    /// `tolerance` sentence to justify it).
    fn has_tolerance(&self) -> bool {
        match self {
            Check::PowerOfTwo { .. } | Check::Range { .. } => true,
            Check::Relative { within } => *within > 0.0,
            Check::Order { slack, .. } => *slack > 0.0,
            Check::SameSet | Check::NotReproducible { .. } => false,
        }
    }
}

/// How a measure is compared with the paper.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Check {
    /// Within `within` powers of two of the paper's number (break-evens measured on a
    /// grid of powers of two).
    PowerOfTwo { within: f64 },
    /// Within `within` (a fraction) of the paper's number: |ours / paper − 1|.
    Relative { within: f64 },
    /// At least `min` and at most `max` (the paper's bound or range).
    Range {
        #[serde(default)]
        min: Option<f64>,
        #[serde(default)]
        max: Option<f64>,
    },
    /// Labelled values in the paper's order: every value of a group no greater than
    /// every value of a later group (with `slack`, a fraction, allowed).
    Order {
        order: Vec<Vec<String>>,
        #[serde(default)]
        slack: f64,
    },
    /// The same set of names as the paper's.
    SameSet,
    /// Not reproducible here; `reason` says why.
    NotReproducible { reason: String },
}

impl PaperFile {
    /// Parse and check a claim file: unique ids and experiment names, a measure for
    /// every check that compares one, a paper number where the check needs one.
    pub fn parse(text: &str, origin: &str) -> Result<PaperFile, String> {
        let file: PaperFile = toml::from_str(text)
            .map_err(|e| format!("{origin}: {}", e.message().trim().replace('\n', " ")))?;
        let mut ids = BTreeSet::new();
        for c in &file.claim {
            let fail = |m: &str| Err(format!("{origin}: claim {:?}: {m}", c.id));
            if !ids.insert(c.id.as_str()) {
                return fail("two claims have this id");
            }
            let number = c.paper.as_ref().and_then(number);
            match (&c.check, c.class) {
                (Check::NotReproducible { .. }, Some(Class::Measured | Class::InputCheck)) => {
                    return fail("a not-reproducible claim has no other class");
                }
                (Check::NotReproducible { .. }, _) => {}
                (_, Some(Class::NotReproducible)) => {
                    return fail("not reproducible: give check = { kind = \"not-reproducible\", reason = \"..\" }");
                }
                _ => {}
            }
            if c.check.has_tolerance() && c.tolerance.as_deref().is_none_or(|t| t.trim().is_empty())
            {
                return fail(
                    "this check has a tolerance: say why it is what it is in tolerance = \"..\"",
                );
            }
            match &c.check {
                Check::NotReproducible { .. } => continue,
                Check::PowerOfTwo { .. } | Check::Relative { .. } if number.is_none() => {
                    return fail("this check compares with the paper's number: give paper = N");
                }
                Check::SameSet if c.paper.as_ref().and_then(names).is_none() => {
                    return fail("this check compares with the paper's names: give paper = [..]");
                }
                Check::Range {
                    min: None,
                    max: None,
                } => return fail("a range needs min or max"),
                Check::Range {
                    min: Some(lo),
                    max: Some(hi),
                } if lo > hi => return fail("the range's min is above its max"),
                Check::PowerOfTwo { within } | Check::Relative { within }
                    if !(within.is_finite() && *within >= 0.0) =>
                {
                    return fail("within must be a number, 0 or more");
                }
                Check::Order { order, slack } => {
                    if order.len() < 2 || order.iter().any(Vec::is_empty) {
                        return fail("an order needs two groups or more, none empty");
                    }
                    if !(slack.is_finite() && *slack >= 0.0) {
                        return fail("slack must be a number, 0 or more");
                    }
                }
                _ => {}
            }
            if c.measure.is_none() {
                return fail("give the measure this check compares");
            }
            for n in &c.needs {
                let native = file.native.iter().any(|x| &x.name == n);
                let recorded = file.experiment.iter().any(|e| &e.name == n && e.recorded());
                if !native && !recorded {
                    return fail(&format!(
                        "needs {n:?}, which names no [[native]] and no experiment on recorded workloads"
                    ));
                }
            }
        }
        let mut names = BTreeSet::new();
        for e in &file.experiment {
            if !names.insert(e.name.as_str()) {
                return Err(format!("{origin}: two experiments are named {:?}", e.name));
            }
            // A quick run records nothing: an experiment on recorded workloads names
            // other traces for it, or has no quick inputs and is skipped.
            if let Some(q) = &e.quick {
                match q.get("traces") {
                    Some(t) if names_workload(t) => {
                        return Err(format!(
                            "{origin}: experiment {:?}: a quick run records nothing, so its quick traces are not workloads",
                            e.name
                        ));
                    }
                    None if e.recorded() => {
                        return Err(format!(
                            "{origin}: experiment {:?} runs on recorded workloads: its quick inputs name other traces (or it has none, and a quick run skips it)",
                            e.name
                        ));
                    }
                    _ => {}
                }
            }
        }
        for s in &file.sensitivity {
            let fail = |m: &str| Err(format!("{origin}: sensitivity {:?}: {m}", s.key));
            if s.values.is_empty() {
                return fail("give one value at least");
            }
            for name in &s.experiments {
                if !names.contains(name.as_str()) {
                    return fail(&format!("no experiment is named {name:?}"));
                }
            }
            for e in file.experiment.iter().filter(|e| s.applies_to(&e.name)) {
                let axis = |name: &str| {
                    e.sweep
                        .get(name)
                        .and_then(|t| t.as_table())
                        .and_then(|t| t.get(&s.key))
                        .cloned()
                };
                if axis("zip").is_some() {
                    return fail(&format!(
                        "experiment {:?} zips this key with others: name the experiments it applies to",
                        e.name
                    ));
                }
                // One value of a grid may be replaced; an axis of several would collapse.
                if axis("grid")
                    .and_then(|v| v.as_array().map(Vec::len))
                    .unwrap_or(0)
                    > 1
                {
                    return fail(&format!(
                        "experiment {:?} sweeps this key over several values: name the experiments it applies to",
                        e.name
                    ));
                }
            }
        }
        Ok(file)
    }
}

impl Sensitivity {
    /// Whether the experiment `name` runs again for this input.
    pub fn applies_to(&self, name: &str) -> bool {
        self.experiments.is_empty() || self.experiments.iter().any(|e| e == name)
    }
}

/// A TOML number as f64.
pub fn number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// A TOML array of strings.
pub fn names(v: &toml::Value) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_str().map(str::to_string))
        .collect()
}
