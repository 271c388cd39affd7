//! How sure a measured speedup is. Each round of `advise` runs all small and the
//! other mappings one after another, so a round's ratio (all small's seconds over the
//! mapping's) pairs two runs that met the same state of the machine; the speedup is
//! the geometric mean of the rounds' ratios, and its interval Student's t interval on
//! their logarithms (a ratio's logarithm is a difference, and the noise of a virtual
//! machine's run times is multiplicative).
//!
//! The rounds stop early where an interval settles (rounds.rs), so each look at the
//! intervals is a chance to see a difference that is not there: the confidence is
//! shared among the looks planned ([`look_confidence`]), and the interval reported is
//! at that share.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A mapping's measured speedup over all small, from paired rounds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Speedup {
    /// The geometric mean of the rounds' ratios.
    pub speedup: f64,
    /// The interval's bounds; None with one round (no spread to measure).
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The rounds.
    pub rounds: usize,
}

impl Speedup {
    /// The rounds' ratios at `confidence` (0.95: a 95 % interval). None without a
    /// round, or with a time that is not positive.
    pub fn paired(small: &[f64], mapping: &[f64], confidence: f64) -> Option<Speedup> {
        let logs: Vec<f64> = small
            .iter()
            .zip(mapping)
            .map(|(s, m)| (s / m).ln())
            .collect();
        if logs.is_empty() || logs.iter().any(|l| !l.is_finite()) {
            return None;
        }
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let (low, high) = if logs.len() < 2 {
            (None, None)
        } else {
            let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0);
            let t = StudentsT::new(0.0, 1.0, n - 1.0)
                .ok()?
                .inverse_cdf(0.5 + confidence / 2.0);
            let half = t * (var / n).sqrt();
            (Some((mean - half).exp()), Some((mean + half).exp()))
        };
        Some(Speedup {
            speedup: mean.exp(),
            low,
            high,
            rounds: logs.len(),
        })
    }

    /// The interval leaves out 1.0: a difference from all small larger than the noise
    /// (false with no interval).
    pub fn measurable(&self) -> bool {
        match (self.low, self.high) {
            (Some(l), Some(h)) => l > 1.0 || h < 1.0,
            _ => false,
        }
    }

    /// Settled: more rounds are not needed, as the interval leaves out 1.0 (the effect
    /// is larger than the noise), or lies within 1 ± `resolution` (any effect is smaller
    /// than what is worth telling).
    pub fn settled(&self, resolution: f64) -> bool {
        self.measurable()
            || matches!((self.low, self.high),
                (Some(l), Some(h)) if l >= 1.0 / (1.0 + resolution) && h <= 1.0 + resolution)
    }
}

/// The rounds after which `advise` looks at the intervals: `runs`, then twice as many,
/// four times..., and `max_runs` (one look when they are equal).
pub fn looks(runs: u32, max_runs: u32) -> Vec<u32> {
    let mut at = vec![runs];
    let mut n = runs;
    while n < max_runs {
        n = (n * 2).min(max_runs);
        at.push(n);
    }
    at
}

/// The confidence of each of `looks` intervals such that all of them hold the true
/// speedup with `confidence` at least (Bonferroni: the chance of error shared evenly).
pub fn look_confidence(confidence: f64, looks: usize) -> f64 {
    1.0 - (1.0 - confidence) / looks.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_double_up_to_the_limit_and_share_the_confidence() {
        assert_eq!(looks(5, 30), vec![5, 10, 20, 30]);
        assert_eq!(looks(3, 3), vec![3]);
        assert_eq!(looks(1, 4), vec![1, 2, 4]);
        assert!((look_confidence(0.95, 4) - 0.9875).abs() < 1e-12);
        assert_eq!(look_confidence(0.95, 1), 0.95);
    }

    #[test]
    fn equal_ratios_have_no_spread() {
        let s = Speedup::paired(&[2.0, 4.0, 3.0], &[1.0, 2.0, 1.5], 0.95).unwrap();
        assert!((s.speedup - 2.0).abs() < 1e-12);
        assert!((s.low.unwrap() - 2.0).abs() < 1e-12 && (s.high.unwrap() - 2.0).abs() < 1e-12);
        assert!(s.measurable() && s.settled(0.01));
        assert_eq!(s.rounds, 3);
    }

    #[test]
    fn interval_is_students_t_on_the_logarithms() {
        // Logarithms 0.1 and 0.3: mean 0.2, standard deviation 0.1414, n 2, t(0.975, 1)
        // = 12.7062 (the table's value): half-width 12.7062 * 0.1414 / sqrt(2) = 1.27062.
        let small = [0.1f64.exp(), 0.3f64.exp()];
        let s = Speedup::paired(&small, &[1.0, 1.0], 0.95).unwrap();
        assert!((s.speedup - 0.2f64.exp()).abs() < 1e-12);
        assert!((s.low.unwrap().ln() - (0.2 - 1.27062)).abs() < 1e-4);
        assert!((s.high.unwrap().ln() - (0.2 + 1.27062)).abs() < 1e-4);
        assert!(!s.measurable());
        // Five rounds, t(0.975, 4) = 2.7764.
        let logs = [0.05, 0.07, 0.06, 0.04, 0.08];
        let small: Vec<f64> = logs.iter().map(|l: &f64| l.exp()).collect();
        let s = Speedup::paired(&small, &[1.0; 5], 0.95).unwrap();
        let sd = (0.001f64 / 4.0).sqrt();
        let half = 2.7764 * sd / 5f64.sqrt();
        assert!((s.low.unwrap().ln() - (0.06 - half)).abs() < 1e-4);
        assert!(s.measurable());
    }

    #[test]
    fn one_round_has_no_interval_and_is_not_measurable() {
        let s = Speedup::paired(&[2.0], &[1.0], 0.95).unwrap();
        assert_eq!((s.low, s.high), (None, None));
        assert!(!s.measurable() && !s.settled(0.5));
    }

    #[test]
    fn noise_around_one_is_no_difference_and_settles_only_when_narrow() {
        let s = Speedup::paired(&[1.0, 1.0, 1.0, 1.0], &[0.9, 1.1, 0.95, 1.05], 0.95).unwrap();
        assert!(!s.measurable());
        assert!(!s.settled(0.01));
        let s = Speedup::paired(&[1.0, 1.0, 1.0, 1.0], &[0.999, 1.001, 1.0, 1.0], 0.95).unwrap();
        assert!(!s.measurable() && s.settled(0.01));
    }

    #[test]
    fn times_that_are_not_positive_give_none() {
        assert_eq!(Speedup::paired(&[], &[], 0.95), None);
        assert_eq!(Speedup::paired(&[1.0], &[0.0], 0.95), None);
        assert_eq!(Speedup::paired(&[-1.0], &[1.0], 0.95), None);
    }
}
