//! A claim's verdict: the measure pagelab computed, compared with the paper's number
//! as the claim's check says.

use crate::claims::{names, number, Check, Claim, Class};
use serde::Serialize;

/// What pagelab measured for a claim.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Measured {
    Number(f64),
    /// A number compared as [`Measured::Number`], shown with how it was made (the
    /// values it summarises, what was left out).
    Described(f64, String),
    /// `k` of `n` cases: compared as the fraction k / n.
    Share(usize, usize),
    /// Labelled values, for orderings.
    Series(Vec<(String, f64)>),
    /// A set of names.
    Set(Vec<String>),
    /// Not measurable from these runs: why (a break-even beyond the grid).
    Missing(String),
    /// A run the measure needs failed or was not made: why. The claim is not run.
    NotRun(String),
}

impl Measured {
    /// The measure of an error: *not run* when a run it needs is missing or failed
    /// (the error says [`crate::results::NOT_RUN`]), else missing.
    pub fn from_error(why: String) -> Measured {
        match why.contains(crate::results::NOT_RUN) {
            true => Measured::NotRun(why.replacen(crate::results::NOT_RUN, "", 1)),
            false => Measured::Missing(why),
        }
    }
}

/// The three verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Agrees,
    Differs,
    NotReproducible,
    /// Its native measurement was not made this time.
    NotRun,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Agrees => "agrees",
            Outcome::Differs => "differs",
            Outcome::NotReproducible => "not reproducible here",
            Outcome::NotRun => "not run",
        }
    }
}

/// A claim with its verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub id: String,
    /// Measured, an input check or not reproducible: only measured claims count in a
    /// paper's headline.
    pub class: Class,
    pub section: String,
    pub claim: String,
    /// The paper's number, as the paper puts it.
    pub paper: String,
    /// Ours, formatted; empty when not reproducible.
    pub measured: String,
    pub outcome: Outcome,
    /// Why: the numbers that differ, or the reason it cannot be reproduced.
    pub detail: String,
    pub compared: String,
    /// Why the check's tolerance is what it is (empty where it has none).
    pub tolerance: String,
    /// Where it differs, the cause the claim file gives (empty otherwise).
    pub cause: String,
    /// Whether a measure was made (false: a run failed, a measure could not be
    /// computed, or the claim is not judged); not written out.
    #[serde(skip)]
    pub measurable: bool,
}

/// A number as the tables show it: four significant digits, thousands grouped.
pub fn format_number(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == x.round() && x.abs() < 1e15 {
        return group(x as i64);
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    if x.abs() >= 1000.0 {
        return group(x.round() as i64);
    }
    let text = format!("{x:.digits$}");
    // Four significant digits, without trailing zeros.
    match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => text,
    }
}

fn group(n: i64) -> String {
    let s = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

impl Measured {
    pub fn display(&self) -> String {
        match self {
            Measured::Number(x) => format_number(*x),
            Measured::Described(x, how) => format!("{} ({how})", format_number(*x)),
            Measured::Share(k, n) => format!("{k} of {n}"),
            Measured::Series(s) => s
                .iter()
                .map(|(k, v)| format!("{k} {}", format_number(*v)))
                .collect::<Vec<_>>()
                .join(", "),
            Measured::Set(s) if s.is_empty() => "none".into(),
            Measured::Set(s) => s.join(", "),
            Measured::Missing(why) | Measured::NotRun(why) => why.clone(),
        }
    }
}

fn paper_display(claim: &Claim) -> String {
    if let Some(t) = &claim.paper_text {
        return t.clone();
    }
    match &claim.paper {
        None => "—".into(),
        Some(v) => match (number(v), names(v)) {
            (Some(x), _) => format_number(x),
            (_, Some(n)) => n.join(", "),
            _ => v.to_string(),
        },
    }
}

/// The claim not judged this time: its native measurement was not made (`why`).
pub fn not_run(claim: &Claim, why: &str) -> Verdict {
    Verdict {
        id: claim.id.clone(),
        class: claim.class(),
        section: claim.section.clone(),
        claim: claim.claim.clone(),
        paper: paper_display(claim),
        measured: String::new(),
        outcome: Outcome::NotRun,
        detail: why.to_string(),
        compared: claim.compared.clone(),
        tolerance: claim.tolerance.clone().unwrap_or_default(),
        cause: String::new(),
        measurable: false,
    }
}

/// The verdict on `claim` given its measure (None when the measure was not computed:
/// a bug in the paper's module, said as such).
pub fn judge(claim: &Claim, measured: Option<&Measured>) -> Verdict {
    let paper = paper_display(claim);
    let verdict = |measured: String, outcome: Outcome, detail: String| Verdict {
        id: claim.id.clone(),
        class: claim.class(),
        section: claim.section.clone(),
        claim: claim.claim.clone(),
        paper: paper.clone(),
        measured,
        outcome,
        detail,
        compared: claim.compared.clone(),
        tolerance: claim.tolerance.clone().unwrap_or_default(),
        cause: match outcome {
            Outcome::Differs => claim.cause.clone().unwrap_or_default(),
            _ => String::new(),
        },
        measurable: false,
    };
    if let Check::NotReproducible { reason } = &claim.check {
        return verdict(String::new(), Outcome::NotReproducible, reason.clone());
    }
    let Some(m) = measured else {
        let name = claim.measure.clone().unwrap_or_default();
        return verdict(
            String::new(),
            Outcome::Differs,
            format!("the measure {name:?} was not computed (a bug in pagelab repro)"),
        );
    };
    if let Measured::NotRun(why) = m {
        return verdict(String::new(), Outcome::NotRun, why.clone());
    }
    let shown = m.display();
    let (agrees, detail) = compare(&claim.check, claim.paper.as_ref(), m);
    let outcome = if agrees {
        Outcome::Agrees
    } else {
        Outcome::Differs
    };
    Verdict {
        measurable: !matches!(m, Measured::Missing(_)),
        ..verdict(shown, outcome, detail)
    }
}

/// Whether `m` agrees with the paper's `p` under `check`, and why in a phrase.
fn compare(check: &Check, p: Option<&toml::Value>, m: &Measured) -> (bool, String) {
    let pn = p.and_then(number);
    if let Measured::Share(k, n) = m {
        if *n == 0 {
            return (false, "no cases to count".into());
        }
        let fraction = Measured::Number(*k as f64 / *n as f64);
        return compare(check, p, &fraction);
    }
    if let Measured::Described(x, _) = m {
        return compare(check, p, &Measured::Number(*x));
    }
    if let Measured::Number(x) = m {
        if !x.is_finite() {
            return (
                false,
                format!("the measure is {x}: not a number to compare"),
            );
        }
    }
    match (check, m) {
        (_, Measured::Missing(why)) => (false, why.clone()),
        (Check::PowerOfTwo { within }, Measured::Number(x)) => {
            let p = pn.unwrap_or(f64::NAN);
            let off = (x.log2() - p.log2()).abs();
            (
                off <= *within + 1e-9,
                format!(
                    "{} powers of two from the paper's (agreement: within {})",
                    format_number(off),
                    format_number(*within)
                ),
            )
        }
        (Check::Relative { within }, Measured::Number(x)) => {
            let p = pn.unwrap_or(f64::NAN);
            let ratio = x / p;
            (
                (ratio - 1.0).abs() <= *within,
                format!(
                    "ours / paper = {} (agreement: {} to {})",
                    format_number(ratio),
                    format_number(1.0 - within),
                    format_number(1.0 + within)
                ),
            )
        }
        (Check::Range { min, max }, Measured::Number(x)) => {
            let ok = min.is_none_or(|lo| *x >= lo) && max.is_none_or(|hi| *x <= hi);
            let bound = match (min, max) {
                (Some(lo), Some(hi)) => format!("{} to {}", format_number(*lo), format_number(*hi)),
                (Some(lo), None) => format!("at least {}", format_number(*lo)),
                (None, Some(hi)) => format!("at most {}", format_number(*hi)),
                (None, None) => "any".into(),
            };
            (ok, format!("agreement: {bound}"))
        }
        (Check::Order { order, slack }, Measured::Series(series)) => {
            order_check(order, *slack, series)
        }
        (Check::SameSet, Measured::Set(ours)) => {
            let theirs = p.and_then(names).unwrap_or_default();
            let (mut a, mut b) = (ours.clone(), theirs.clone());
            a.sort();
            b.sort();
            let missing: Vec<_> = b.iter().filter(|x| !a.contains(x)).cloned().collect();
            let extra: Vec<_> = a.iter().filter(|x| !b.contains(x)).cloned().collect();
            if missing.is_empty() && extra.is_empty() {
                (true, "the same set".into())
            } else {
                (
                    false,
                    format!(
                        "only the paper's: {}; only ours: {}",
                        or_none(&missing),
                        or_none(&extra)
                    ),
                )
            }
        }
        (check, m) => (
            false,
            format!(
                "the measure ({m:?}) does not fit the check {check:?} (a bug in the claim file)"
            ),
        ),
    }
}

fn or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Every value of a group no greater than every value of each later group (times
/// 1 + slack); the pairs out of order are named.
fn order_check(order: &[Vec<String>], slack: f64, series: &[(String, f64)]) -> (bool, String) {
    // A value that is not a finite number counts as not measured.
    let value = |name: &str| {
        series
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
            .filter(|v| v.is_finite())
    };
    let mut unknown = Vec::new();
    let mut wrong = Vec::new();
    for (i, early) in order.iter().enumerate() {
        for late in &order[i + 1..] {
            for a in early {
                for b in late {
                    match (value(a), value(b)) {
                        (Some(x), Some(y)) => {
                            if x > y * (1.0 + slack) {
                                wrong.push(format!(
                                    "{a} {} > {b} {}",
                                    format_number(x),
                                    format_number(y)
                                ));
                            }
                        }
                        (None, _) => unknown.push(a.clone()),
                        (_, None) => unknown.push(b.clone()),
                    }
                }
            }
        }
    }
    let paper = order
        .iter()
        .map(|g| g.join(" ≈ "))
        .collect::<Vec<_>>()
        .join(" ≤ ");
    unknown.sort();
    unknown.dedup();
    if !unknown.is_empty() {
        return (false, format!("not measured: {}", unknown.join(", ")));
    }
    if wrong.is_empty() {
        (true, format!("in the paper's order, {paper}"))
    } else {
        (
            false,
            format!("out of the paper's order ({paper}): {}", wrong.join("; ")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::PaperFile;

    fn claim(check: &str, paper: &str) -> Claim {
        let text = format!(
            "[paper]\nid = \"t\"\ntitle = \"t\"\ncite = \"t\"\nsource = \"t\"\nabout = \"t\"\n\
             [[claim]]\nid = \"c\"\nsection = \"§1\"\nclaim = \"c\"\n{paper}\nmeasure = \"m\"\n\
             check = {check}\ntolerance = \"t\"\ncompared = \"c\"\n"
        );
        PaperFile::parse(&text, "t.toml").unwrap().claim.remove(0)
    }

    #[test]
    fn each_check_agrees_inside_its_tolerance_and_differs_outside() {
        let p2 = claim("{ kind = \"power-of-two\", within = 1 }", "paper = 16");
        assert_eq!(
            judge(&p2, Some(&Measured::Number(32.0))).outcome,
            Outcome::Agrees
        );
        assert_eq!(
            judge(&p2, Some(&Measured::Number(64.0))).outcome,
            Outcome::Differs
        );
        let rel = claim("{ kind = \"relative\", within = 0.5 }", "paper = 700");
        assert_eq!(
            judge(&rel, Some(&Measured::Number(1012.0))).outcome,
            Outcome::Agrees
        );
        let v = judge(&rel, Some(&Measured::Number(1100.0)));
        assert_eq!(v.outcome, Outcome::Differs);
        assert!(v.detail.contains("1.571"), "{}", v.detail);
        let range = claim("{ kind = \"range\", max = 112 }", "paper = 112");
        assert_eq!(
            judge(&range, Some(&Measured::Number(112.0))).outcome,
            Outcome::Agrees
        );
        assert_eq!(
            judge(&range, Some(&Measured::Number(113.0))).outcome,
            Outcome::Differs
        );
        let order = claim(
            "{ kind = \"order\", order = [[\"VRPT\"], [\"HPT\", \"CPT\"], [\"GPT\"]] }",
            "",
        );
        let s = |v: [f64; 4]| {
            Measured::Series(
                ["VRPT", "HPT", "CPT", "GPT"]
                    .iter()
                    .zip(v)
                    .map(|(k, x)| (k.to_string(), x))
                    .collect(),
            )
        };
        assert_eq!(
            judge(&order, Some(&s([1.0, 2.0, 2.5, 3.0]))).outcome,
            Outcome::Agrees
        );
        let v = judge(&order, Some(&s([1.0, 3.5, 2.5, 3.0])));
        assert_eq!(v.outcome, Outcome::Differs);
        assert!(v.detail.contains("HPT 3.5 > GPT 3"), "{}", v.detail);
        let set = claim("{ kind = \"same-set\" }", "paper = [\"mesa\", \"art\"]");
        let names = |v: &[&str]| Measured::Set(v.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            judge(&set, Some(&names(&["art", "mesa"]))).outcome,
            Outcome::Agrees
        );
        assert_eq!(
            judge(&set, Some(&names(&["art"]))).outcome,
            Outcome::Differs
        );
    }

    #[test]
    fn a_measure_that_could_not_be_made_differs_saying_why() {
        let p2 = claim("{ kind = \"power-of-two\", within = 1 }", "paper = 16");
        let v = judge(
            &p2,
            Some(&Measured::Missing("no break-even up to 4,096".into())),
        );
        assert_eq!(v.outcome, Outcome::Differs);
        assert_eq!(v.detail, "no break-even up to 4,096");
        assert_eq!(judge(&p2, None).outcome, Outcome::Differs);
    }

    #[test]
    fn a_measure_whose_run_failed_is_not_run_never_differs() {
        let p2 = claim("{ kind = \"power-of-two\", within = 1 }", "paper = 16");
        let r = crate::results::Results {
            experiments: [(
                "e".to_string(),
                vec![crate::results::Run {
                    trace: "t".into(),
                    overrides: Default::default(),
                    result: Err("out of memory".into()),
                }],
            )]
            .into_iter()
            .collect(),
        };
        for error in [
            r.get("e", "t", &[]).unwrap_err(),
            r.get("e", "other", &[]).unwrap_err(),
            format!("fang: {}", r.get("e", "t", &[]).unwrap_err()),
        ] {
            let v = judge(&p2, Some(&Measured::from_error(error.clone())));
            assert_eq!(v.outcome, Outcome::NotRun, "{error}");
            assert!(
                v.detail.contains("e: t") || v.detail.contains("e: other"),
                "{}",
                v.detail
            );
        }
        let v = judge(&p2, Some(&Measured::from_error("no break-even".into())));
        assert_eq!(v.outcome, Outcome::Differs);
    }

    #[test]
    fn bad_claim_files_are_refused_naming_the_claim() {
        let head =
            "[paper]\nid = \"t\"\ntitle = \"t\"\ncite = \"t\"\nsource = \"t\"\nabout = \"t\"\n";
        for (body, says) in [
            ("[[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\nmeasure = \"m\"\ncheck = { kind = \"relative\", within = 1 }\ntolerance = \"t\"\ncompared = \"c\"\n", "give paper"),
            ("[[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\npaper = 1\ncheck = { kind = \"relative\", within = 1 }\ntolerance = \"t\"\ncompared = \"c\"\n", "give the measure"),
            // A tolerance without the sentence that justifies it.
            ("[[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\npaper = 1\nmeasure = \"m\"\ncheck = { kind = \"relative\", within = 0.5 }\ncompared = \"c\"\n", "tolerance"),
            // A class that contradicts the check.
            ("[[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\nclass = \"input-check\"\ncheck = { kind = \"not-reproducible\", reason = \"r\" }\ncompared = \"c\"\n", "no other class"),
            ("[[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\npaper = 1\nmeasure = \"m\"\nclass = \"not-reproducible\"\ncheck = { kind = \"relative\", within = 0 }\ncompared = \"c\"\n", "not reproducible: give check"),
            ("[[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\npaper = 1\nmeasure = \"m\"\nclass = \"fitted\"\ncheck = { kind = \"relative\", within = 0 }\ncompared = \"c\"\n", "fitted"),
            ("[[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\npaper = 1\nmeasure = \"m\"\ncheck = { kind = \"nearly\" }\ncompared = \"c\"\n", "nearly"),
        ] {
            let e = PaperFile::parse(&format!("{head}{body}"), "t.toml").unwrap_err();
            assert!(e.starts_with("t.toml: ") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn experiments_on_recorded_workloads_keep_quick_runs_from_recording() {
        let head =
            "[paper]\nid = \"t\"\ntitle = \"t\"\ncite = \"t\"\nsource = \"t\"\nabout = \"t\"\n";
        let claim = |needs: &str| {
            format!("[[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\nmeasure = \"m\"\nneeds = {needs}\ncheck = {{ kind = \"range\", max = 1 }}\ntolerance = \"t\"\ncompared = \"c\"\n")
        };
        let on = |quick: &str| {
            format!("[[experiment]]\nname = \"k\"\nabout = \"a\"\nsweep = {{ traces = [\"workload:gups\"] }}\n{quick}")
        };
        for (body, says) in [
            // Quick inputs that would record, or that keep the workloads.
            (
                on("quick = { traces = [\"workload:bfs\"] }\n") + &claim("\"k\""),
                "records nothing",
            ),
            (
                on("quick = { machine = \"skylake\" }\n") + &claim("\"k\""),
                "name other traces",
            ),
            // A need that names neither a native measurement nor such an experiment.
            (format!("{}{}", on(""), claim("\"nope\"")), "\"nope\""),
        ] {
            let e = PaperFile::parse(&format!("{head}{body}"), "t.toml").unwrap_err();
            assert!(e.starts_with("t.toml: ") && e.contains(says), "{e}");
        }
        let ok = format!(
            "{head}{}{}",
            on("quick = { traces = [\"bundled:xz.plt\"] }\n"),
            claim("[\"k\"]")
        );
        let f = PaperFile::parse(&ok, "t.toml").unwrap();
        assert!(f.experiment[0].recorded());
        assert_eq!(f.claim[0].needs, ["k"]);
    }

    #[test]
    fn classes_are_as_written_and_an_exact_check_needs_no_tolerance() {
        let head =
            "[paper]\nid = \"t\"\ntitle = \"t\"\ncite = \"t\"\nsource = \"t\"\nabout = \"t\"\n";
        let body = "[[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\npaper = 1\nmeasure = \"m\"\nclass = \"input-check\"\ncheck = { kind = \"relative\", within = 0 }\ncompared = \"c\"\n[[claim]]\nid = \"b\"\nsection = \"s\"\nclaim = \"c\"\ncheck = { kind = \"not-reproducible\", reason = \"r\" }\ncompared = \"c\"\n";
        let f = PaperFile::parse(&format!("{head}{body}"), "t.toml").unwrap();
        assert_eq!(f.claim[0].class(), Class::InputCheck);
        assert_eq!(f.claim[1].class(), Class::NotReproducible);
        let v = judge(&f.claim[0], Some(&Measured::Number(1.0)));
        assert_eq!((v.class, v.outcome), (Class::InputCheck, Outcome::Agrees));
        assert_eq!(
            claim("{ kind = \"range\", max = 1 }", "").class(),
            Class::Measured
        );
    }

    #[test]
    fn a_described_measure_is_compared_as_its_number_and_shown_with_its_summary() {
        let range = claim("{ kind = \"range\", max = 4.6 }", "paper = 2.3");
        let m = Measured::Described(26.0, "per trace a 33, b 22".into());
        let v = judge(&range, Some(&m));
        assert_eq!(v.outcome, Outcome::Differs);
        assert_eq!(v.measured, "26 (per trace a 33, b 22)");
        // A claim that differs shows its cause; one that agrees does not.
        let mut with_cause = range.clone();
        with_cause.cause = Some("other programs".into());
        assert_eq!(judge(&with_cause, Some(&m)).cause, "other programs");
        let agrees = judge(&with_cause, Some(&Measured::Number(2.0)));
        assert_eq!(
            (agrees.outcome, agrees.cause.as_str()),
            (Outcome::Agrees, "")
        );
    }

    #[test]
    fn numbers_read_as_the_papers_print_them() {
        assert_eq!(format_number(88000.0), "88,000");
        assert_eq!(format_number(1.0123), "1.012");
        assert_eq!(format_number(0.05), "0.05");
        assert_eq!(format_number(130.99), "131");
        assert_eq!(format_number(1234.6), "1,235");
    }
}
