//! Which input moves which verdict, and by how much: a paper's `[[sensitivity]]`
//! inputs (what it does not state, or states two ways) each run at other values, and
//! the claims whose verdict changes listed with their measures before and after.

use crate::claims::{Class, Sensitivity};
use crate::results::text;
use crate::verdict::{Outcome, Verdict};
use serde::Serialize;

/// One input at one value.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub key: String,
    pub value: String,
    pub about: String,
    /// Measured claims (of those judged both times).
    pub measured: usize,
    /// The claims whose verdict differs from the reproduction's.
    pub changes: Vec<Change>,
}

/// A claim whose verdict an input changes.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    pub id: String,
    pub from: Outcome,
    pub to: Outcome,
    /// The measure as the reproduction has it, and with the input changed.
    pub measured_from: String,
    pub measured_to: String,
}

impl Row {
    /// The verdicts of the reproduction (`base`) against those with `input` at
    /// `value` (`varied`, claim for claim).
    pub fn new(
        input: &Sensitivity,
        value: &toml::Value,
        base: &[Verdict],
        varied: &[Verdict],
    ) -> Row {
        let mut measured = 0;
        let mut changes = Vec::new();
        for (b, v) in base.iter().zip(varied) {
            if b.class != Class::Measured || !b.measurable {
                continue;
            }
            measured += 1;
            // A measure the varied runs could not make (a run failed) is listed as
            // not run, with why, never as a verdict that moved.
            let to = if v.measurable {
                v.outcome
            } else {
                Outcome::NotRun
            };
            if b.outcome != to {
                changes.push(Change {
                    id: b.id.clone(),
                    from: b.outcome,
                    to,
                    measured_from: b.measured.clone(),
                    measured_to: v.measured.clone(),
                });
            }
        }
        Row {
            key: input.key.clone(),
            value: text(value),
            about: input.about.clone(),
            measured,
            changes,
        }
    }

    fn changes_text(&self) -> String {
        if self.changes.is_empty() {
            return format!("none of {}", self.measured);
        }
        self.changes
            .iter()
            .map(|c| {
                format!(
                    "`{}` {} → {} ({} → {})",
                    c.id,
                    c.from.name(),
                    c.to.name(),
                    c.measured_from,
                    c.measured_to
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The rows as a Markdown table (docs/repro/PAPER.md embeds it): empty for none.
pub fn markdown(rows: &[Row]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from(
        "| input | value | what it is | measured verdicts that change (ours before → after) |\n|---|---|---|---|\n",
    );
    for r in rows {
        out += &format!(
            "| `{}` | {} | {} | {} |\n",
            r.key,
            cell(&r.value),
            cell(&r.about),
            cell(&r.changes_text())
        );
    }
    out
}

/// The rows as the summary's lines.
pub fn lines(rows: &[Row]) -> String {
    let mut out = String::from("sensitivity (measured verdicts that change):\n");
    for r in rows {
        out += &format!("  {} = {}: {}\n", r.key, r.value, r.changes_text());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::PaperFile;
    use crate::verdict::{judge, Measured};

    #[test]
    fn the_verdicts_an_input_changes_are_listed_with_their_measures() {
        let text = "[paper]\nid = \"t\"\ntitle = \"t\"\ncite = \"t\"\nsource = \"t\"\nabout = \"t\"\n\
             [[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\npaper = 16\nmeasure = \"a\"\n\
             check = { kind = \"power-of-two\", within = 1 }\ntolerance = \"t\"\ncompared = \"c\"\n\
             [[claim]]\nid = \"b\"\nsection = \"s\"\nclaim = \"c\"\npaper = 1\nmeasure = \"b\"\n\
             class = \"input-check\"\ncheck = { kind = \"relative\", within = 0 }\ncompared = \"c\"\n\
             [[sensitivity]]\nkey = \"cost.page_fault_cycles\"\nvalues = [900]\nabout = \"the fault\"\n";
        let f = PaperFile::parse(text, "t.toml").unwrap();
        let at = |a: f64, b: f64| {
            vec![
                judge(&f.claim[0], Some(&Measured::Number(a))),
                judge(&f.claim[1], Some(&Measured::Number(b))),
            ]
        };
        let base = at(16.0, 1.0);
        // The measured claim moves out of its tolerance; the input check's change is
        // not a measured verdict and is not listed.
        let row = Row::new(
            &f.sensitivity[0],
            &f.sensitivity[0].values[0],
            &base,
            &at(128.0, 2.0),
        );
        assert_eq!((row.value.as_str(), row.measured), ("900", 1));
        assert_eq!(row.changes.len(), 1);
        assert_eq!(
            (row.changes[0].from, row.changes[0].to),
            (Outcome::Agrees, Outcome::Differs)
        );
        let md = markdown(&[row]);
        assert!(md.contains("`a` agrees → differs (16 → 128)"), "{md}");
        let same = Row::new(
            &f.sensitivity[0],
            &f.sensitivity[0].values[0],
            &base,
            &at(32.0, 1.0),
        );
        assert!(markdown(&[same]).contains("none of 1"));
        assert_eq!(markdown(&[]), "");
    }

    #[test]
    fn bad_sensitivity_entries_are_refused_naming_the_key() {
        let head = "[paper]\nid = \"t\"\ntitle = \"t\"\ncite = \"t\"\nsource = \"t\"\nabout = \"t\"\n\
             [[experiment]]\nname = \"e\"\nabout = \"a\"\n\
             sweep = { machine = \"pa-risc-32\", traces = [\"x\"], grid = { \"promotion.policy\" = [\"none\", \"asap\"] }, zip = { \"mechanism.kind\" = [\"copy\", \"remap\"], \"mechanism.cycles_per_page\" = [1, 2] } }\n\
             [[claim]]\nid = \"a\"\nsection = \"s\"\nclaim = \"c\"\ncheck = { kind = \"not-reproducible\", reason = \"r\" }\ncompared = \"c\"\n";
        for (body, says) in [
            ("[[sensitivity]]\nkey = \"k\"\nvalues = []\nabout = \"a\"\n", "one value"),
            ("[[sensitivity]]\nkey = \"k\"\nvalues = [1]\nabout = \"a\"\nexperiments = [\"nope\"]\n", "\"nope\""),
            ("[[sensitivity]]\nkey = \"mechanism.cycles_per_page\"\nvalues = [1]\nabout = \"a\"\n", "zips"),
            ("[[sensitivity]]\nkey = \"promotion.policy\"\nvalues = [\"asap\"]\nabout = \"a\"\n", "several values"),
        ] {
            let e = PaperFile::parse(&format!("{head}{body}"), "t.toml").unwrap_err();
            assert!(e.starts_with("t.toml: sensitivity") && e.contains(says), "{e}");
        }
    }
}
