//! `advise`'s table and CSV.

use super::Advice;
use pagelab_core::analysis::benefit::Benefit;
use std::fmt::Write as _;

/// The measured speedup as the table shows it: "no difference" when its interval
/// holds 1.0; with one round (no interval), the speedup and "(1 round)".
fn measured(a: &Advice) -> String {
    if a.measured_low.is_none() {
        format!("{:.2}x (1 round)", a.measured_speedup)
    } else if a.measurable {
        format!("{:.2}x", a.measured_speedup)
    } else {
        "no difference".into()
    }
}

fn interval(a: &Advice) -> String {
    match (a.measured_low, a.measured_high) {
        (Some(l), Some(h)) => format!("{l:.3}-{h:.3}"),
        _ => "-".into(),
    }
}

pub fn table(
    program: &str,
    b: &Benefit,
    advice: &[Advice],
    clock: f64,
    confidence: f64,
    notes: &[String],
) -> String {
    let pct = confidence * 100.0;
    let pct_text = if (pct - pct.round()).abs() < 1e-9 {
        format!("{pct:.0}%")
    } else {
        format!("{pct:.2}%")
    };
    let mut s = format!(
        "{program}: predicted on {} ({} data references, C_TLBmiss {} cycles, {}, {clock:.2} GHz), measured natively\n\n",
        b.machine,
        b.references,
        b.tlb_miss_cycles,
        crate::benefit::fault_cost(b)
    );
    let ci = format!("{pct_text} interval");
    let mut t = crate::table::Columns::new([
        "mapping",
        "PMB",
        "bloat",
        "saved (s)",
        "predicted",
        "median (s)",
        "measured",
        ci.as_str(),
        "rounds",
        "huge (MiB)",
    ]);
    for (i, a) in advice.iter().enumerate() {
        let base = i == 0;
        t.row([
            format!("{}{}", a.mapping, if a.additive { " (sum)" } else { "" }),
            a.predicted_pmb.map_or("-".into(), |p| format!("{p:.1}%")),
            crate::human_bytes(a.bloat_bytes),
            format!("{:.3}", a.predicted_seconds_saved),
            a.predicted_speedup
                .map_or("all".into(), |x| format!("{x:.2}x")),
            format!("{:.3}", a.median_seconds),
            if base { "-".into() } else { measured(a) },
            if base { "-".into() } else { interval(a) },
            a.rounds.to_string(),
            format!("{:.0}", a.anon_huge_mib),
        ]);
    }
    s.push_str(&t.render());
    let _ = writeln!(
        s,
        "(saved: MissCycles saved at the clock; predicted: speedup over all small; measured: the geometric mean of the rounds' speedups over all small, \"no difference\" when its {pct_text} interval holds 1.0; huge: AnonHugePages, the most any run got)"
    );
    s.push_str(crate::benefit::PMB_AND_BLOAT);
    let g = &b.significance;
    let _ = writeln!(
        s,
        "significance over the measured {:.3} s: {}",
        g.seconds,
        if g.passes {
            "passes"
        } else {
            "fails: large pages cannot pay"
        }
    );
    let _ = writeln!(s, "agent: {} ({})", b.choice.mapping, b.choice.why);
    for n in b.notes.iter().chain(notes) {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

pub fn csv(advice: &[Advice]) -> String {
    let mut s = String::from("mapping,categories,additive,large_pages,bloat_bytes,predicted_pmb,predicted_benefit_cycles,predicted_seconds_saved,predicted_speedup,median_seconds,min_seconds,max_seconds,measured_speedup,measured_low,measured_high,measurable,rounds,anon_huge_mib\n");
    let opt = |x: Option<f64>| x.map_or(String::new(), |p| p.to_string());
    for a in advice {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            a.mapping,
            a.categories.join(";"),
            a.additive,
            a.large_pages,
            a.bloat_bytes,
            opt(a.predicted_pmb),
            a.predicted_benefit_cycles,
            a.predicted_seconds_saved,
            opt(a.predicted_speedup),
            a.median_seconds,
            a.min_seconds,
            a.max_seconds,
            a.measured_speedup,
            opt(a.measured_low),
            opt(a.measured_high),
            a.measurable,
            a.rounds,
            a.anon_huge_mib
        );
    }
    s
}
