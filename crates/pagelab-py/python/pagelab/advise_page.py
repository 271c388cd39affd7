"""The page of a ``pagelab advise`` result (its ``--json``): per mapping, the speedup
the analysis predicted beside the one measured natively, the huge pages the process
really got, and the memory each mapping's large pages would take beyond what the
program touches (bloat)::

    pagelab advise --json advice.json -- ./prog
    pagelab report advice.json -o advice.html

(``pagelab.report`` tells an advise result from a results database by its content.)
"""

from __future__ import annotations

import html
import importlib
import json
import os
from typing import Any, Dict, List, Optional, Tuple

#: What PMB means, wherever a page shows it.
PMB = ("PMB: the percentage of the maximal benefit (Caşcaval, Duesterwald, Sweeney and Wisniewski, "
       "Multiple Page Size Modeling and Optimization, PACT 2005, §3.3): the MissCycles "
       "a mapping saves over all small pages, as a share of what the best mapping saves.")


def _report_module():
    """The report module, whose style and helpers the page shares (``pagelab.report``
    itself is the function)."""
    return importlib.import_module(f"{__package__}.report")


def is_advice(path: str) -> bool:
    """Whether ``path`` holds an advise result (JSON with its mappings and analysis)."""
    try:
        with open(path, "rb") as f:
            if f.read(1) != b"{":
                return False
            f.seek(0)
            value = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(value, dict) and "mappings" in value and "analysis" in value


def _mib(b: Optional[float]) -> str:
    return "" if b is None else f"{b / 2**20:.1f}"


def _measured(a: Dict[str, Any]) -> str:
    """The measured speedup as the page shows it: "no difference" where its interval
    holds 1.0."""
    if a.get("mapping") == "all small":
        return "–"
    if "measurable" in a and a.get("measured_low") is None:
        return f"{a['measured_speedup']:.3f}× (1 round)"
    if a.get("measurable") is False:
        return "no difference"
    return f"{a['measured_speedup']:.3f}×"


def _interval(a: Dict[str, Any]) -> str:
    if a.get("measured_low") is None or a.get("measured_high") is None:
        return ""
    return f"{a['measured_low']:.3f}–{a['measured_high']:.3f}"


def _figure(advice: List[Dict[str, Any]]) -> Tuple[str, bool]:
    """The figure (a base64 PNG), and whether its speedup axis starts near its smallest
    value rather than at 0."""
    r = _report_module()

    names = [a["mapping"] + (" (sum)" if a.get("additive") else "") for a in advice]
    fig, (speed, huge) = r._figure(1, 2, height=0.45 * len(advice) + 1.6)
    ys = list(range(len(advice)))
    predicted = [a["predicted_speedup"] for a in advice]
    measured = [a["measured_speedup"] for a in advice]
    height = 0.38
    bars = speed.barh([y - height / 2 for y in ys], [p if p is not None else 0 for p in predicted], height,
                      label="predicted", color="#8da0cb")
    speed.bar_label(bars, labels=[f"{p:.3f}×" if p is not None else "all" for p in predicted], padding=3,
                    fontsize=7)
    # The measured speedup's interval, where the result has one (advise before its
    # rounds gave none).
    low = [a.get("measured_low") if a.get("measured_low") is not None else m for a, m in zip(advice, measured)]
    high = [a.get("measured_high") if a.get("measured_high") is not None else m for a, m in zip(advice, measured)]
    bars = speed.barh([y + height / 2 for y in ys], measured, height, label="measured (interval)", color="#4c72b0",
                      xerr=[[m - lo for m, lo in zip(measured, low)], [h - m for m, h in zip(measured, high)]],
                      error_kw={"elinewidth": 1, "capsize": 2, "ecolor": "#333"})
    speed.bar_label(bars, labels=[_measured(a) for a in advice], padding=3, fontsize=7)
    values = [v for v in predicted + measured + low + high if v is not None]
    lo, hi = min(values), max(values)
    relative = None not in predicted and lo > 0 and (hi - lo) / hi < r.RELATIVE_BELOW
    if relative:
        span = max(hi - lo, hi * 1e-3)
        speed.set_xlim(lo - 0.5 * span, hi + 0.8 * span)
    else:
        speed.set_xlim(0, hi * 1.2)
    speed.axvline(1.0, color="#888", lw=1)
    speed.set_yticks(ys, names, fontsize=7)
    speed.invert_yaxis()
    speed.set_xlabel("speedup over all small pages (×)")
    speed.grid(axis="x", alpha=0.3)
    speed.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.01), ncol=2, borderaxespad=0.0)
    got = [a["anon_huge_mib"] for a in advice]
    needed = [a.get("large_pages", 0) * 2.0 for a in advice]
    bars = huge.barh([y - height / 2 for y in ys], needed, height, label="the analysis maps (2M pages)",
                     color="#8da0cb")
    huge.bar_label(bars, labels=[f"{v:.0f}" for v in needed], padding=3, fontsize=7)
    bars = huge.barh([y + height / 2 for y in ys], got, height, label="the process got (AnonHugePages)",
                     color="#4c72b0")
    huge.bar_label(bars, labels=[f"{v:.0f}" for v in got], padding=3, fontsize=7)
    huge.set_xlim(0, max(needed + got + [1.0]) * 1.25)
    huge.set_yticks(ys, [""] * len(ys))
    huge.invert_yaxis()
    huge.set_xlabel("huge pages (MiB)")
    huge.grid(axis="x", alpha=0.3)
    huge.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.01), ncol=2, borderaxespad=0.0)
    return r._png(fig), relative


def render(path: str, title: Optional[str] = None) -> str:
    """The page of the advise result in ``path``, as HTML text.

    Raises:
        ValueError (pagelab.report.InputError): ``path`` is not a whole advise result.
    """
    with open(path, encoding="utf-8") as f:
        result = json.load(f)
    problem = _shape_problem(result)
    if problem is not None:
        raise _report_module().InputError(f"{path}: not an advise result (pagelab advise --json): {problem}")
    return _render(result, path, title)


#: The fields of each mapping the page reads.
_MAPPING_FIELDS = ("mapping", "predicted_seconds_saved", "measured_speedup", "median_seconds", "min_seconds",
                   "max_seconds", "anon_huge_mib")


def _shape_problem(result: Any) -> Optional[str]:
    """What an advise result lacks for the page, or None."""
    if not isinstance(result, dict) or not isinstance(result.get("mappings"), list) or not result["mappings"]:
        return "no mappings"
    if not isinstance(result.get("analysis"), dict):
        return "no analysis"
    for i, m in enumerate(result["mappings"]):
        if not isinstance(m, dict):
            return f"mappings[{i}] is not an object"
        for field in _MAPPING_FIELDS:
            if field not in m:
                return f"mappings[{i}] has no {field}"
            if field != "mapping" and not isinstance(m[field], (int, float)):
                return f"mappings[{i}].{field} is not a number ({m[field]!r})"
    return None


def _render(result: Dict[str, Any], path: str, title: Optional[str]) -> str:
    r = _report_module()
    esc = html.escape
    advice = result["mappings"]
    analysis = result["analysis"]
    title = title or f"pagelab advise: {result.get('program', os.path.basename(path))}"
    png, relative = _figure(advice)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title><style>{r._STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<p>Predicted on <code>{esc(str(result.get('machine')))}</code> from "
        f"{analysis.get('references', 0):,} data references (C_TLBmiss {analysis.get('tlb_miss_cycles')} and "
        f"C_PF {analysis.get('page_fault_cycles')} cycles, {result.get('clock_ghz', 0):.2f} GHz); measured natively"
        + (f" in {result['rounds']} rounds, each all small and the mappings still to measure, the speedup "
           f"the geometric mean of a mapping's rounds with its {100 * result.get('confidence', 0.95):g}% interval.</p>"
           if "rounds" in result else f", the median of {result.get('runs')} runs of each mapping.</p>"),
        "<h2>Predicted and measured speedup</h2><figure>"
        f'<img src="data:image/png;base64,{png}" alt="Predicted and measured speedup">'
        "<figcaption>Left: each mapping's speedup over all small pages, predicted by the analysis (its MissCycles "
        "saved at this machine's clock; \"all\" where the saving is the whole measured time or more) and measured "
        "(wall-clock time, with its interval; \"no difference\" where the interval holds 1). Right: the huge pages the mapping "
        "asks for and the most any of its runs got; a mapping that got none was timed on small pages."
        + (" The speedup axis starts near the smallest value, not at 0: the mappings differ by less than "
           f"{r.RELATIVE_BELOW:.0%}." if relative else "") + "</figcaption>"
        "</figure>",
    ]
    rows = []
    for a in advice:
        spread = f"{a['min_seconds']:.3f}–{a['max_seconds']:.3f}"
        predicted = "all" if a.get("predicted_speedup") is None else f"{a['predicted_speedup']:.3f}"
        pmb = "" if a.get("predicted_pmb") is None else f"{a['predicted_pmb']:.1f}"
        rows.append(
            f"<tr><td>{esc(a['mapping'])}{' (sum)' if a.get('additive') else ''}</td>"
            f"<td>{esc(', '.join(a.get('categories') or []) or 'none')}</td><td>{pmb}</td>"
            f"<td>{a['predicted_seconds_saved']:.3f}</td><td>{predicted}</td><td>{esc(_measured(a))}</td><td>{_interval(a)}</td>"
            f"<td>{a['median_seconds']:.3f}</td><td>{spread}</td><td>{a.get('large_pages', 0)}</td>"
            f"<td>{_mib(a.get('bloat_bytes'))}</td><td>{a['anon_huge_mib']:.0f}</td></tr>")
    parts.append(
        "<h2>Mappings</h2><div class=\"scroll\"><table class=\"sortable nowrap\"><thead><tr><th>mapping</th>"
        "<th>on large pages</th><th>PMB (%)</th><th>saved (s)</th><th>predicted (×)</th><th>measured (×)</th><th>interval (×)</th>"
        "<th>median (s)</th><th>range (s)</th><th>large pages</th><th>bloat (MiB)</th><th>huge got (MiB)</th>"
        "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")
    parts.append(f'<p class="note">{esc(PMB)} Bloat: the memory the mapping\'s large pages take beyond the '
                 "4 KiB pages the program touches in them. Click a heading to sort by it.</p>")
    choice = analysis.get("choice") or {}
    significance = analysis.get("significance") or {}
    parts.append(f"<p>Significance over the measured {significance.get('seconds', 0):.3f} s: "
                 f"{'passes' if significance.get('passes') else 'fails: large pages cannot pay'}. "
                 f"The agent chooses <b>{esc(str(choice.get('mapping')))}</b> ({esc(str(choice.get('why')))}).</p>")
    notes = list(analysis.get("notes") or []) + list(result.get("notes") or [])
    if notes:
        parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    parts.append(f"<script>{r._SORT_SCRIPT}</script></body></html>")
    return "\n".join(parts)
