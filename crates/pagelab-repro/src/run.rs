//! Reproducing one paper: its experiments run as sweeps into one results database
//! (so an interrupted repro resumes), its measures computed from the runs, each claim
//! judged, and the verdicts stored beside the runs for the report.

use crate::claims::{Class, Experiment, Native, PaperFile};
use crate::results::{text, Results, Run};
use crate::verdict::{judge, not_run, Outcome, Verdict};
use crate::PaperDef;
use anyhow::{bail, Context, Result};
use pagelab_sweep::{Executor, Observer, Summary};
use pagelab_sweep::{Sweep, SweepFile};
use std::path::{Path, PathBuf};

/// A trace of the claim files named `bundled:NAME`: `NAME` in the bundled traces.
pub const BUNDLED: &str = "bundled:";

pub use crate::claims::WORKLOAD;

/// The trace cache: `$PAGELAB_CACHE`, else `$XDG_CACHE_HOME/pagelab/traces`, else
/// `~/.cache/pagelab/traces`.
pub fn default_cache() -> PathBuf {
    if let Some(d) = std::env::var_os("PAGELAB_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("pagelab")
        .join("traces")
}

/// How to reproduce.
pub struct Options {
    /// The results database.
    pub db: PathBuf,
    /// The bundled traces' folder.
    pub traces: PathBuf,
    /// The trace cache, where the `workload:` traces are recorded ([`default_cache`]).
    pub cache: PathBuf,
    /// The experiments' quick inputs.
    pub quick: bool,
    /// None: make the native measurements the results folder lacks; else why none is
    /// made (the claims that need one it lacks are not run, saying so).
    pub no_native: Option<String>,
    /// A warm-up for every simulation (`pagelab repro --warmup`): the experiments'
    /// simulations measure the steady state; other analyses are left as they are.
    pub warmup: Option<pagelab_core::analysis::warmup::Warmup>,
}

/// What a reproduction found.
pub struct Reproduction {
    pub file: PaperFile,
    pub verdicts: Vec<Verdict>,
    /// Each experiment's sweep summary.
    pub sweeps: Vec<(String, Summary)>,
    /// Per input and value of the paper's `[[sensitivity]]`, the verdicts that change
    /// (none with the quick inputs: the table is the full run's).
    pub sensitivity: Vec<crate::sensitivity::Row>,
}

/// An experiment's sweep, with the quick inputs if asked, bundled traces found, and
/// `input` (a key and its value, for a sensitivity run) added to its grid.
pub fn experiment_sweep(
    paper: &str,
    e: &Experiment,
    options: &Options,
    input: Option<(&str, &toml::Value)>,
) -> Result<Sweep> {
    let origin = format!("repro/{paper}.toml, experiment {:?}", e.name);
    let mut table = e.sweep.clone();
    if options.quick {
        if let Some(quick) = &e.quick {
            table.extend(quick.clone());
        }
    }
    if let Some((key, value)) = input {
        let grid = table
            .entry("grid")
            .or_insert_with(|| toml::Value::Table(Default::default()));
        if let toml::Value::Table(grid) = grid {
            grid.insert(key.to_string(), toml::Value::Array(vec![value.clone()]));
        }
    }
    if let Some(w) = options.warmup {
        with_warmup(&mut table, w);
    }
    if let Some(toml::Value::Array(traces)) = table.get_mut("traces") {
        for t in traces.iter_mut() {
            let Some(name) = t.as_str() else { continue };
            let path = if let Some(name) = name.strip_prefix(BUNDLED) {
                let path = options.traces.join(name);
                if !path.exists() {
                    bail!(
                        "{origin}: {}: no such bundled trace (name the traces' folder with --traces)",
                        path.display()
                    );
                }
                path
            } else if let Some(name) = name.strip_prefix(WORKLOAD) {
                let path = options.cache.join(format!("{name}.plt"));
                if !path.exists() {
                    bail!(
                        "{origin}: workload {name} is not recorded in {} (`pagelab repro {paper}` records it; or `pagelab record --workload {name} -o {}`)",
                        options.cache.display(),
                        path.display()
                    );
                }
                path
            } else {
                continue;
            };
            *t = toml::Value::String(path.display().to_string());
        }
    }
    let file: SweepFile = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| anyhow::anyhow!("{origin}: {}", e.message().trim()))?;
    pagelab_sweep::expand(&file, &origin, Path::new(".")).map_err(anyhow::Error::msg)
}

/// A sweep's table with `warmup` in its analysis, if that is a simulation.
fn with_warmup(table: &mut toml::Table, warmup: pagelab_core::analysis::warmup::Warmup) {
    use pagelab_core::analysis::warmup::Warmup;
    let mut analysis = match table.get("analysis") {
        None => toml::Table::new(),
        Some(toml::Value::String(kind)) if kind == "simulate" => toml::Table::new(),
        Some(toml::Value::Table(t))
            if t.get("kind").and_then(toml::Value::as_str) == Some("simulate") =>
        {
            t.clone()
        }
        Some(_) => return,
    };
    analysis.insert("kind".into(), "simulate".into());
    let value = match warmup {
        Warmup::References(n) => toml::Value::Integer(n.min(i64::MAX as u64) as i64),
        Warmup::Fraction(x) => toml::Value::Float(x),
    };
    analysis.insert("warmup".into(), value);
    table.insert("analysis".into(), toml::Value::Table(analysis));
}

/// The catalogue workloads the experiments of `paper` run on (`workload:NAME`; none
/// if `quick`, which skips those experiments), each once, in order: what must be
/// recorded first.
pub fn workloads(paper: &PaperDef, quick: bool) -> Result<Vec<String>> {
    let origin = format!("repro/{}.toml", paper.id);
    let file = PaperFile::parse(paper.text, &origin).map_err(anyhow::Error::msg)?;
    let mut names: Vec<String> = Vec::new();
    for e in file.experiment.iter().filter(|e| !quick && e.recorded()) {
        let Some(toml::Value::Array(traces)) = e.sweep.get("traces") else {
            continue;
        };
        for name in traces
            .iter()
            .filter_map(|t| t.as_str()?.strip_prefix(WORKLOAD))
        {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    Ok(names)
}

/// A run's trace as the measures name it.
fn short(trace: &Path) -> String {
    if let Some(s) = pagelab_sweep::synthetic(trace) {
        return s.to_string();
    }
    if let Some(l) = pagelab_sweep::layout(trace) {
        return l.to_string();
    }
    trace.file_name().map_or_else(
        || trace.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}

/// Where a native measurement's JSON is kept: beside the database.
pub fn native_file(options: &Options, native: &Native) -> PathBuf {
    let dir = options.db.parent().unwrap_or(Path::new("."));
    dir.join(format!("native-{}.json", native.name))
}

/// Run every experiment of `paper` the database lacks, then judge every claim.
/// `observer` is made for each experiment (its name, and its place of how many);
/// `measure` makes a native measurement, writing its JSON to the path given (whole
/// or not at all), when `options.native` asks and the folder lacks it.
pub fn reproduce(
    paper: &PaperDef,
    options: &Options,
    executor: &dyn Executor,
    observer: &mut dyn FnMut(&str, usize, usize) -> Box<dyn Observer>,
    measure: &mut dyn FnMut(&Native, &Path) -> Result<()>,
) -> Result<Reproduction> {
    let origin = format!("repro/{}.toml", paper.id);
    let file = PaperFile::parse(paper.text, &origin).map_err(anyhow::Error::msg)?;
    // Every sweep expanded (and so checked) before the first runs. A quick run
    // records nothing: an experiment on recorded workloads runs its quick traces
    // instead (or nothing), and the claims that need it are not run.
    let mut missing: std::collections::BTreeMap<&str, String> = Default::default();
    let mut sweeps: Vec<(&Experiment, Sweep)> = Vec::new();
    for e in &file.experiment {
        if options.quick && e.recorded() {
            missing.insert(
                &e.name,
                "not run: --quick records no workload, and the claims on the papers' own kernels are judged by a full repro"
                    .into(),
            );
            if e.quick.is_none() {
                continue;
            }
        }
        sweeps.push((e, experiment_sweep(paper.id, e, options, None)?));
    }
    let mut summaries = Vec::new();
    for (i, (e, s)) in sweeps.iter().enumerate() {
        let mut obs = observer(&e.name, i + 1, sweeps.len());
        let summary = pagelab_sweep::run(s, &options.db, executor, obs.as_mut())?;
        summaries.push((e.name.clone(), summary));
    }
    let conn = pagelab_sweep::db::open(&options.db)?;
    let mut results = Results::default();
    for (e, s) in &sweeps {
        results
            .experiments
            .insert(e.name.clone(), runs_of(&conn, s)?);
    }
    // Native measurements: kept from an earlier run, made now, or missing (why).
    for n in &file.native {
        let path = native_file(options, n);
        if !path.exists() {
            if let Some(why) = &options.no_native {
                missing.insert(&n.name, why.clone());
                continue;
            }
            if let Err(e) = measure(n, &path) {
                missing.insert(&n.name, format!("the native measurement failed: {e:#}"));
                continue;
            }
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not the JSON of a native measurement", path.display()))?;
        results.experiments.insert(
            format!("native:{}", n.name),
            vec![Run {
                trace: n.name.clone(),
                overrides: Default::default(),
                result: Ok(value),
            }],
        );
    }
    let judge_all = |results: &Results| -> Vec<Verdict> {
        let measures = (paper.measure)(results);
        file.claim
            .iter()
            .map(
                |c| match c.needs.iter().find_map(|n| missing.get(n.as_str())) {
                    Some(why) => not_run(c, why),
                    None => judge(c, c.measure.as_ref().and_then(|m| measures.get(m))),
                },
            )
            .collect()
    };
    let verdicts = judge_all(&results);
    // Each input of [[sensitivity]] at each of its values: the experiments that use
    // it run again (runs they share with the others come from the database), the
    // claims judged again, and the verdicts that change kept.
    let mut sensitivity = Vec::new();
    if !options.quick {
        for input in &file.sensitivity {
            for value in &input.values {
                let mut varied = results.clone();
                for e in file.experiment.iter().filter(|e| input.applies_to(&e.name)) {
                    let s = experiment_sweep(paper.id, e, options, Some((&input.key, value)))?;
                    let label = format!("{} with {} = {}", e.name, input.key, text(value));
                    let mut obs = observer(&label, 1, 1);
                    pagelab_sweep::run(&s, &options.db, executor, obs.as_mut())?;
                    varied
                        .experiments
                        .insert(e.name.clone(), runs_of(&conn, &s)?);
                }
                sensitivity.push(crate::sensitivity::Row::new(
                    input,
                    value,
                    &verdicts,
                    &judge_all(&varied),
                ));
            }
        }
    }
    crate::stored::store(&conn, &file, &verdicts, options.quick)
        .with_context(|| format!("{}: cannot store the verdicts", options.db.display()))?;
    Ok(Reproduction {
        file,
        verdicts,
        sweeps: summaries,
        sensitivity,
    })
}

/// The runs of the sweep `s` as the database holds them.
fn runs_of(conn: &rusqlite::Connection, s: &Sweep) -> Result<Vec<Run>> {
    let keys = pagelab_sweep::keys(s)?;
    let mut runs = Vec::with_capacity(keys.len());
    for (run, key) in s.runs.iter().zip(&keys) {
        let result = match pagelab_sweep::db::result(conn, key)? {
            None => Err("not in the database".to_string()),
            Some(Err(e)) => Err(e),
            Some(Ok(json)) => serde_json::from_str(&json).map_err(|e| e.to_string()),
        };
        runs.push(Run {
            trace: short(&run.trace),
            overrides: run
                .overrides
                .iter()
                .map(|(k, v)| (k.clone(), text(v)))
                .collect(),
            result,
        });
    }
    Ok(runs)
}

/// A reproduction's verdicts counted by class: the measured claims (the headline),
/// the input checks apart, and those not reproducible here or not run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Tally {
    pub measured_agree: usize,
    pub measured_differ: usize,
    pub input_checks: usize,
    pub input_checks_agree: usize,
    pub not_reproducible: usize,
    pub not_run: usize,
}

impl Tally {
    pub fn of(verdicts: &[Verdict]) -> Tally {
        let mut t = Tally::default();
        for v in verdicts {
            match (v.class, v.outcome) {
                (_, Outcome::NotRun) => t.not_run += 1,
                (Class::NotReproducible, _) | (_, Outcome::NotReproducible) => {
                    t.not_reproducible += 1
                }
                (Class::InputCheck, o) => {
                    t.input_checks += 1;
                    t.input_checks_agree += (o == Outcome::Agrees) as usize;
                }
                (Class::Measured, Outcome::Agrees) => t.measured_agree += 1,
                (Class::Measured, _) => t.measured_differ += 1,
            }
        }
        t
    }

    /// "measured: 5 agree, 3 differ; input checks: 2 of 2 agree; 1 not reproducible
    /// here", as the summaries, the report and the README say it.
    pub fn sentence(&self) -> String {
        let mut out = format!(
            "measured: {} agree, {} differ",
            self.measured_agree, self.measured_differ
        );
        if self.input_checks > 0 {
            out += &format!(
                "; input checks: {} of {} agree",
                self.input_checks_agree, self.input_checks
            );
        }
        out += &format!("; {} not reproducible here", self.not_reproducible);
        if self.not_run > 0 {
            out += &format!("; {} not run", self.not_run);
        }
        out
    }
}

/// The verdicts as plain text: the measured claims, then the input checks, then those
/// not reproducible, a line each; then the counts.
pub fn summary(r: &Reproduction) -> String {
    let mut out = format!(
        "{}: {} ({})\n",
        r.file.paper.id, r.file.paper.title, r.file.paper.cite
    );
    let width = r.verdicts.iter().map(|v| v.id.len()).max().unwrap_or(0);
    for class in [Class::Measured, Class::InputCheck, Class::NotReproducible] {
        let of: Vec<&Verdict> = r.verdicts.iter().filter(|v| v.class == class).collect();
        if of.is_empty() {
            continue;
        }
        out += &format!(" {}:\n", class.name());
        for v in of {
            let ours = match v.outcome {
                Outcome::NotReproducible | Outcome::NotRun => String::new(),
                _ => format!("; pagelab {}", v.measured),
            };
            out += &format!(
                "  {:<21} {:<width$}  {}: paper {}{ours}\n      {}\n",
                v.outcome.name(),
                v.id,
                v.section,
                v.paper,
                v.detail,
            );
        }
    }
    out += &format!(
        "{} claims: {}\n",
        r.verdicts.len(),
        Tally::of(&r.verdicts).sentence()
    );
    if !r.sensitivity.is_empty() {
        out += &crate::sensitivity::lines(&r.sensitivity);
    }
    out
}

/// The verdicts as a Markdown table (what docs/repro's pages embed).
pub fn markdown(r: &Reproduction) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from(
        "| claim | class | where | paper | pagelab | verdict | why |\n|---|---|---|---|---|---|---|\n",
    );
    for v in &r.verdicts {
        out += &format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            v.id,
            v.class.name(),
            cell(&v.section),
            cell(&v.paper),
            cell(&v.measured),
            v.outcome.name(),
            cell(&match v.cause.as_str() {
                "" => v.detail.clone(),
                cause => format!("{} — {cause}", v.detail),
            })
        );
    }
    out
}

/// What `verdicts.json` holds: the paper, the counts of verdicts, every claim's
/// verdict and the sensitivity of the verdicts to the costs.
pub fn verdicts(r: &Reproduction, quick: bool) -> serde_json::Value {
    serde_json::json!({
        "paper": r.file.paper.id,
        "title": r.file.paper.title,
        "cite": r.file.paper.cite,
        "quick": quick,
        "counts": Tally::of(&r.verdicts),
        "claims": r.verdicts,
        "sensitivity": r.sensitivity,
    })
}

/// Write `summary.txt`, `verdicts.json`, `verdicts.md` and `sensitivity.md` into `dir`,
/// each whole or not at all.
pub fn write(dir: &Path, r: &Reproduction, quick: bool) -> Result<()> {
    let json = serde_json::to_string_pretty(&verdicts(r, quick))? + "\n";
    for (name, text) in [
        ("summary.txt", summary(r)),
        ("verdicts.json", json),
        ("verdicts.md", markdown(r)),
        (
            "sensitivity.md",
            crate::sensitivity::markdown(&r.sensitivity),
        ),
    ] {
        pagelab_core::whole_file::write(&dir.join(name), text.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagelab_core::analysis::warmup::Warmup;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    /// `--warmup` reaches the simulations of every experiment and no other analysis.
    #[test]
    fn a_warmup_goes_to_simulations_only() {
        for text in [
            "",
            "analysis = \"simulate\"",
            "analysis = { kind = \"simulate\" }",
        ] {
            let mut t = table(text);
            with_warmup(&mut t, Warmup::Fraction(0.1));
            assert_eq!(
                t["analysis"].to_string(),
                "{ kind = \"simulate\", warmup = 0.1 }",
                "{text}"
            );
        }
        let mut t = table("");
        with_warmup(&mut t, Warmup::References(5000));
        assert_eq!(t["analysis"]["warmup"].as_integer(), Some(5000));
        for text in [
            "analysis = \"translation\"",
            "analysis = { kind = \"benefit\", simulate = true }",
        ] {
            let mut t = table(text);
            with_warmup(&mut t, Warmup::References(5000));
            assert_eq!(t, table(text), "{text}");
        }
    }
}
