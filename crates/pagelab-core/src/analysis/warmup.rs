//! How long a run warms up before it is measured: a number of references, or a share
//! of the input's (`--warmup 5000000`, `--warmup 10%`, `--warmup 0.1`). The machine
//! leaves those references out of its report ([`crate::Machine::set_warmup`]).

use crate::event::{Batch, PlainBatch};
use crate::trace::{Part, TraceError, TraceReader};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A warm-up, as the user gave it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Warmup {
    /// The first this many references.
    References(u64),
    /// This share of the input's references, in [0, 1).
    Fraction(f64),
}

/// What the option accepts, for errors.
const FORMS: &str = "a number of references (5000000, 5e6) or a share of the input (10%, 0.1)";

impl Warmup {
    /// From the command line's text.
    pub fn parse(text: &str) -> Result<Warmup, String> {
        let t = text.trim();
        let bad = || format!("warm-up {text:?}: expected {FORMS}");
        if let Some(percent) = t.strip_suffix('%') {
            let p: f64 = percent.trim().parse().map_err(|_| bad())?;
            return Warmup::fraction(p / 100.0).map_err(|e| format!("warm-up {text:?}: {e}"));
        }
        if let Ok(n) = t.replace('_', "").parse::<u64>() {
            return Ok(Warmup::References(n));
        }
        let x: f64 = t.parse().map_err(|_| bad())?;
        if x < 1.0 {
            Warmup::fraction(x).map_err(|e| format!("warm-up {text:?}: {e}"))
        } else if x.fract() == 0.0 && x <= u64::MAX as f64 {
            Ok(Warmup::References(x as u64))
        } else {
            Err(bad())
        }
    }

    fn fraction(x: f64) -> Result<Warmup, String> {
        if (0.0..1.0).contains(&x) {
            Ok(Warmup::Fraction(x))
        } else {
            Err("a share of the input is at least 0 and below 100%".into())
        }
    }

    /// Whether it needs the input's length to be resolved.
    pub fn is_share(&self) -> bool {
        matches!(self, Warmup::Fraction(f) if *f > 0.0)
    }

    /// The references it leaves out, of an input of `total` (asked only for a share).
    pub fn references(&self, total: impl FnOnce() -> Result<u64, String>) -> Result<u64, String> {
        match *self {
            Warmup::References(n) => Ok(n),
            Warmup::Fraction(f) if f > 0.0 => Ok((total()? as f64 * f) as u64),
            Warmup::Fraction(_) => Ok(0),
        }
    }
}

/// The references a reader gives, read through (what a share of the input needs).
pub fn count_references(reader: &mut dyn TraceReader) -> Result<u64, TraceError> {
    let (mut plain, mut batch) = (PlainBatch::default(), Batch::default());
    let mut n = 0u64;
    loop {
        match reader.next_plain(true, &mut plain, &mut batch)? {
            Part::End => return Ok(n),
            Part::Plain => n += plain.addrs.len() as u64,
            Part::Full => n += batch.refs.len() as u64,
        }
    }
}

impl fmt::Display for Warmup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warmup::References(n) => write!(f, "{n} references"),
            Warmup::Fraction(x) => write!(f, "{}% of the input", 100.0 * x),
        }
    }
}

/// From a number (references if whole and at least 1, a share if below 1) or the
/// command line's text.
impl<'de> Deserialize<'de> for Warmup {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Warmup, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Whole(u64),
            Real(f64),
            Text(String),
        }
        let text = match Given::deserialize(d)
            .map_err(|_| serde::de::Error::custom(format!("warmup: expected {FORMS}")))?
        {
            Given::Whole(n) => return Ok(Warmup::References(n)),
            Given::Real(x) => x.to_string(),
            Given::Text(t) => t,
        };
        Warmup::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_references_and_shares() {
        assert_eq!(Warmup::parse("5000000"), Ok(Warmup::References(5_000_000)));
        assert_eq!(
            Warmup::parse("5_000_000"),
            Ok(Warmup::References(5_000_000))
        );
        assert_eq!(Warmup::parse("5e6"), Ok(Warmup::References(5_000_000)));
        assert_eq!(Warmup::parse("10%"), Ok(Warmup::Fraction(0.1)));
        assert_eq!(Warmup::parse("0.25"), Ok(Warmup::Fraction(0.25)));
        assert_eq!(Warmup::parse("0"), Ok(Warmup::References(0)));
        for bad in ["", "-5", "100%", "1.5", "ten", "50%%"] {
            let e = Warmup::parse(bad).unwrap_err();
            assert!(e.contains("warm-up"), "{bad}: {e}");
        }
    }

    #[test]
    fn resolves_a_share_of_the_input_only_when_asked() {
        let never = || -> Result<u64, String> { panic!("the length is not needed") };
        assert_eq!(Warmup::References(7).references(never), Ok(7));
        assert_eq!(Warmup::Fraction(0.0).references(never), Ok(0));
        assert_eq!(Warmup::Fraction(0.1).references(|| Ok(1005)), Ok(100));
    }

    #[test]
    fn reads_from_toml_and_json() {
        #[derive(Deserialize)]
        struct T {
            warmup: Warmup,
        }
        let t: T = toml::from_str("warmup = 1000").unwrap();
        assert_eq!(t.warmup, Warmup::References(1000));
        let t: T = toml::from_str("warmup = 0.2").unwrap();
        assert_eq!(t.warmup, Warmup::Fraction(0.2));
        let t: T = toml::from_str("warmup = \"20%\"").unwrap();
        assert_eq!(t.warmup, Warmup::Fraction(0.2));
        let e = toml::from_str::<T>("warmup = 2.5")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("warm-up"), "{e}");
        let t: T = serde_json::from_str(r#"{"warmup": 0.5}"#).unwrap();
        assert_eq!(t.warmup, Warmup::Fraction(0.5));
    }
}
