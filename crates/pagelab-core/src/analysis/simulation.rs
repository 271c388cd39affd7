//! One simulation as `pagelab simulate` and `pagelab.simulate` run it: its input
//! (traces, interleaved as processes of one machine, or a built-in synthetic
//! workload) and, on request, the same machine with base pages only beside it.

use crate::analysis::warmup::Warmup;
use crate::config::PromotionConfig;
use crate::machine::Report;
use crate::trace::{self, TraceFormat, TraceReader};
use crate::MachineConfig;
use serde::Serialize;
use std::path::PathBuf;

/// References each process runs before the scheduler switches to the next, when
/// several traces run on one machine.
pub const DEFAULT_QUANTUM: usize = 1_000_000;

/// What a simulation reads.
#[derive(Clone, Debug)]
pub struct Input {
    /// The traces; several run as processes of one machine, each in its own address
    /// space, switched every `quantum` references.
    pub traces: Vec<PathBuf>,
    /// A built-in synthetic workload (`trace::synthetic`), after the traces.
    pub synthetic: Option<String>,
    pub quantum: usize,
    /// The traces' format; `None` detects each.
    pub format: Option<TraceFormat>,
    /// Read a trace cut short up to its last good part, with a warning.
    pub salvage: bool,
    /// The first references, left out of the report (see [`crate::analysis::warmup`]).
    pub warmup: Warmup,
}

impl Default for Input {
    fn default() -> Input {
        Input {
            traces: Vec::new(),
            synthetic: None,
            quantum: DEFAULT_QUANTUM,
            format: None,
            salvage: false,
            warmup: Warmup::References(0),
        }
    }
}

impl Input {
    /// The input's name in messages: the synthetic workload, or the traces joined by
    /// ` + `.
    pub fn name(&self) -> String {
        match &self.synthetic {
            Some(spec) => spec.clone(),
            None => self
                .traces
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" + "),
        }
    }

    /// Open it: one reader of every trace and the synthetic workload, interleaved.
    pub fn open(&self) -> Result<Box<dyn TraceReader + Send>, String> {
        let mut readers = Vec::with_capacity(self.traces.len() + 1);
        for path in &self.traces {
            readers.push(
                trace::open_salvaging(path, self.format, self.salvage)
                    .map_err(|e| e.to_string())?,
            );
        }
        if let Some(spec) = &self.synthetic {
            readers.push(trace::synthetic::parse(spec).map_err(|e| format!("synthetic: {e}"))?);
        }
        match readers.len() {
            0 => Err("name a trace or a synthetic workload".into()),
            1 => Ok(readers.pop().expect("one reader")),
            _ => Ok(Box::new(trace::interleave::Interleaved::new(
                readers,
                self.quantum,
            )?)),
        }
    }

    /// The references the warm-up leaves out. A share of the input reads it once
    /// first to count them, so it must be a file, not a pipe.
    pub fn warmup_references(&self) -> Result<u64, String> {
        self.warmup.references(|| {
            self.check_rereadable("a warm-up given as a share of the input")?;
            self.count_references()
        })
    }

    /// The references of the whole input, read through.
    pub fn count_references(&self) -> Result<u64, String> {
        crate::analysis::warmup::count_references(self.open()?.as_mut()).map_err(|e| e.to_string())
    }

    /// Refuse an input that cannot be read twice (a pipe), before a run that must
    /// read it twice (`what` names that run's option).
    pub fn check_rereadable(&self, what: &str) -> Result<(), String> {
        match self.traces.iter().find(|p| !p.is_file() && !p.is_dir()) {
            Some(p) => Err(format!(
                "{}: {what} reads the trace twice, and this is not a regular file (save it to one first)",
                p.display()
            )),
            None => Ok(()),
        }
    }
}

/// The machine of `config` with base pages only: no promotion policy, all else the
/// same.
pub fn base_pages(config: &MachineConfig) -> MachineConfig {
    let mut base = config.clone();
    base.promotion = PromotionConfig::None {};
    base
}

/// A run with superpages against the same run with base pages only.
#[derive(Clone, Debug, Serialize)]
pub struct Baseline {
    /// Cycles of the base-page run over cycles of this one.
    pub speedup: f64,
    pub base_walks: u64,
    /// Share of the base-page run's TLB misses (walks) that this run does not make.
    pub walks_removed: f64,
    pub base_tlb_overhead_percent: f64,
    /// Frames this run holds beyond the base-page run's (superpages' and
    /// reservations' pages never touched), and as bytes.
    pub bloat_frames: i64,
    pub bloat_bytes: i64,
}

impl Baseline {
    /// `report` against `base`, the report of the same input on [`base_pages`].
    pub fn between(report: &Report, base: &Report) -> Baseline {
        let frames = report.frames_used as i64 - base.frames_used as i64;
        Baseline {
            speedup: base.cycles.total() / report.cycles.total().max(f64::MIN_POSITIVE),
            base_walks: base.counts.walks,
            walks_removed: if base.counts.walks > 0 {
                1.0 - report.counts.walks as f64 / base.counts.walks as f64
            } else {
                0.0
            },
            base_tlb_overhead_percent: base.tlb_overhead_percent,
            bloat_frames: frames,
            bloat_bytes: frames << crate::addr::BASE_SHIFT,
        }
    }
}
