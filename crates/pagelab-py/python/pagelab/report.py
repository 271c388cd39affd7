"""One self-contained HTML page of a results database: its tables, and the figures a
person would rather look at — miss-ratio curves, TLB misses and translation overhead
by configuration, page-walk cost by page-table structure, free memory and promotions
over a run, and speedup bars like the papers' figures. The images are PNGs drawn with
matplotlib and embedded in the page, so the file stands alone::

    import pagelab
    pagelab.report("results.db", "report.html")

or ``pagelab report results.db -o report.html`` (which runs ``python -m
pagelab.report``). A figure that has nothing to show for a sweep (no axis varied a
TLB's entries, no run sampled its free memory) is left out, and the page says so.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import os
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _pagelab
from ._frames import pandas

class InputError(ValueError):
    """What the report was given is refused: not a results database or an advise
    result, or an output that is the input itself."""


#: The most runs a bar figure shows per trace (the ones with the most overhead).
MAX_BARS = 24
#: The most lines a figure draws per trace.
MAX_LINES = 8
#: Below this spread of a trace's bars (largest − smallest, over the largest), its axis
#: starts near the smallest value instead of 0, so that the differences show.
RELATIVE_BELOW = 0.2
#: A marker and a line style per line: lines that coincide stay told apart.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_DASHES = ("-", "--", ":", "-.")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.5em; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
td { max-width: 36em; overflow-wrap: break-word; } table.nowrap td { white-space: nowrap; }
.scroll { overflow-x: auto; max-width: 100%; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[data-order="asc"]::after { content: " \\25B2"; }
table.sortable th[data-order="desc"]::after { content: " \\25BC"; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; max-width: 60em; }
.note { color: #666; font-size: 0.9em; }
table.claims td, table.claims th { text-align: left; vertical-align: top; }
td.agrees { background: #e6f4e6; } td.differs { background: #fbe9e7; } td.not-reproducible, td.not-run { background: #eee; }
"""


#: Sorts a table.sortable by the column whose header is clicked (again: the other
#: way); numbers as numbers, text in natural order, empty cells last. Inline: the page
#: stands alone.
_SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(table => {
  const heads = Array.from(table.tHead.rows[0].cells);
  heads.forEach((th, i) => th.addEventListener("click", () => {
    const asc = th.dataset.order !== "asc";
    heads.forEach(h => delete h.dataset.order);
    th.dataset.order = asc ? "asc" : "desc";
    const key = r => { const t = r.cells[i].textContent.trim(); const n = Number(t);
                       return t !== "" && !isNaN(n) ? n : t; };
    const body = table.tBodies[0];
    Array.from(body.rows).sort((a, b) => {
      const x = key(a), y = key(b);
      if (x === "" || y === "") return (x === "") - (y === "");  // empty cells last
      const c = typeof x === "number" && typeof y === "number" ? x - y
        : String(x).localeCompare(String(y), undefined, {numeric: true});
      return asc ? c : -c;
    }).forEach(r => body.appendChild(r));
  }));
});
"""


def _style(i: int) -> Dict[str, Any]:
    """The look of the i-th line of a panel."""
    return {"marker": _MARKERS[i % len(_MARKERS)], "linestyle": _DASHES[i % len(_DASHES)], "markersize": 5}


def _legend(ax, fontsize: int = 8) -> None:
    """The panel's legend beside it, off the data."""
    ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def _png(fig) -> str:
    """The figure as a base64 PNG (no date in its metadata: the same runs, the same file)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight", metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(rows: int = 1, cols: int = 1, width: float = 10.0, height: float = 3.6):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def _short(trace: str) -> str:
    return os.path.basename(trace)


def _present(value: Any) -> bool:
    """Whether an override column holds a value for a run (not None or NaN)."""
    return value is not None and value == value


def _value(v: Any) -> str:
    """An override's value as written (a whole float, from a column with gaps, as an int)."""
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _label(row, keys: Sequence[str]) -> str:
    """`key=value, …` of a run's overrides among ``keys`` (the keys' last parts)."""
    parts = [f"{k.rsplit('.', 1)[-1]}={_value(row[k])}" for k in keys if _present(row.get(k))]
    return ", ".join(parts) or "base machine"


#: The numbers of each run the runs table shows.
_HEADLINE = ("references", "walks", "page_faults", "miss_ratio", "mpki", "translation_overhead_percent",
             "tlb_overhead_percent")


class _Runs:
    """The successful runs of a database, with their reports and what varied."""

    def __init__(self, db: str, with_faults: bool = False):
        pd = pandas("pagelab.report")
        # Whether the figures count page faults and eager paging (the cost of first
        # touching memory) in, or show the steady state (the default).
        self.with_faults = with_faults
        try:
            table = _pagelab.results_table(db, whole=True)
        except ValueError as e:
            raise InputError(str(e)) from None
        frame = pd.DataFrame(table["rows"], columns=table["columns"])
        self.all = frame
        # What the sweep varied: the override keys (the other columns are the runs'
        # fields and their reports' numbers).
        self.axes = list(table["keys"])
        # The figures draw simulations; other analyses' runs are in the runs table.
        ok = frame[(frame["status"] == "ok") & (frame["analysis"] == "simulate")].copy()
        ok["cycles"] = [_cycles(r.get("cycles") or {}, with_faults) for r in ok["report"]]
        ok["warmup_refs"] = [(r.get("warmup") or {}).get("references", 0) for r in ok["report"]]
        # Translation's share of those cycles: what the overhead figure draws.
        base = [(r.get("cycles") or {}).get("base", 0.0) for r in ok["report"]]
        ok["overhead_shown"] = [100.0 * (c - b) / c if c > 0 else 0.0 for c, b in zip(ok["cycles"], base)]
        ok["walk_refs_per_walk"] = [r.get("walk_refs_per_walk") for r in ok["report"]]
        ok["walk_lines_per_walk"] = [r.get("walk_lines_per_walk") for r in ok["report"]]
        ok["page_table"] = [_config_field(c, ("page_table", "kind")) for c in ok["config"]]
        ok["promotion"] = [_config_field(c, ("promotion", "policy")) or "none" for c in ok["config"]]
        ok["mpki"] = 1000.0 * ok["walks"] / ok["references"].where(ok["references"] > 0)
        ok["label"] = [_label(r, self.axes) for r in ok.to_dict("records")]
        self.ok = ok
        self.traces = list(dict.fromkeys(ok["trace"]))

    def numeric_axes(self) -> List[str]:
        pd = pandas("pagelab.report")
        return [a for a in self.axes if pd.api.types.is_numeric_dtype(self.ok[a]) and self.ok[a].nunique() > 1]


#: Cycles of first touching memory: zero-fill page faults and eager paging (major
#: faults, pages read back from swap, are the running program's and stay in).
_START_UP = ("page_faults", "eager_paging")


def _cycles(cycles: Mapping[str, float], with_faults: bool) -> float:
    """A run's cycles: all of them, or those of the steady state (without page faults
    and eager paging)."""
    return sum(v for k, v in cycles.items() if with_faults or k not in _START_UP)


def _steady_note(runs: "_Runs") -> str:
    """What the figures of cycles count, for their captions."""
    warm = runs.ok["warmup_refs"]
    lo, hi = (int(warm[warm > 0].min()), int(warm.max())) if (warm > 0).any() else (0, 0)
    warmed = (f" {int((warm > 0).sum())} of the {len(warm)} runs were measured after a warm-up "
              f"(their first {lo:,}{'' if lo == hi else f' to {hi:,}'} references left out of every count)."
              if hi > 0 else "")
    if runs.with_faults:
        return " Page faults and eager paging are counted in (--with-faults)." + warmed
    return (" Zero-fill page faults and eager paging, the cost of first touching memory, are left out "
            "(they are in the runs table; pagelab report --with-faults counts them in)." + warmed)


def _config_field(text: Optional[str], path: Tuple[str, ...]) -> Optional[str]:
    try:
        import tomllib
    except ImportError:  # Python < 3.11: the figures that need it are left out
        return None
    try:
        value: Any = tomllib.loads(text or "")
        for p in path:
            value = value.get(p) if isinstance(value, dict) else None
        return None if value is None else str(value)
    except tomllib.TOMLDecodeError:
        return None


# --- the figures: each returns (title, caption, base64 PNG) or None -------------------

Figure = Optional[Tuple[str, str, str]]


def _miss_ratio_curves(runs: _Runs) -> Figure:
    """Miss ratio against entries, for every TLB level whose entries the sweep varied."""
    curves: Dict[str, List[Tuple[str, int, float, str]]] = {}
    for row in runs.ok.to_dict("records"):
        for level in row["report"].get("levels") or []:
            curves.setdefault(level["name"], []).append(
                (row["trace"], level["entries"], level["miss_ratio"], row["label"]))
    # A level varied when some trace ran it at two sizes or more.
    varied = {name: pts for name, pts in curves.items()
              if any(len({p[1] for p in pts if p[0] == t}) > 1 for t in {p[0] for p in pts})}
    if not varied:
        return None
    fig, axes = _figure(1, len(varied), width=5.0 * len(varied))
    for ax, (name, pts) in zip(axes, varied.items()):
        for n, trace in enumerate(dict.fromkeys(p[0] for p in pts)):
            by_entries: Dict[int, float] = {}
            for t, entries, ratio, _ in pts:
                if t == trace:
                    by_entries[entries] = min(ratio, by_entries.get(entries, ratio))
            if len(by_entries) < 2:
                continue
            xs = sorted(by_entries)
            ax.plot(xs, [by_entries[x] for x in xs], label=_short(trace), **_style(n))
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"{name} entries")
        ax.set_ylabel("miss ratio")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        _legend(ax)
    return ("Miss-ratio curves",
            "Each TLB level whose entries the sweep varied: its miss ratio against its entries, per trace "
            "(at each size, the lowest among the runs of that size).", _png(fig))


def _misses_by_axis(runs: _Runs) -> Figure:
    axes = runs.numeric_axes()
    if not axes:
        return None
    fig, plots = _figure(len(axes), 1)
    for ax, axis in zip(plots, axes):
        n = 0
        for trace in runs.traces:
            sub = runs.ok[(runs.ok["trace"] == trace) & runs.ok[axis].notna()]
            if sub.empty:
                continue
            others = [a for a in runs.axes if a != axis and sub[a].notna().any()]
            groups = sub.groupby([sub[o].astype(str) for o in others], dropna=False) if others else [((), sub)]
            for i, (_, g) in enumerate(groups):
                if i >= MAX_LINES:
                    break
                g = g.sort_values(axis)
                label = _short(trace) + (" · " + _label(g.iloc[0].to_dict(), others) if others else "")
                ax.plot(g[axis], g["mpki"], label=label, **_style(n))
                n += 1
        ax.set_xlabel(axis)
        ax.set_ylabel("TLB misses per 1,000 refs")
        ax.grid(alpha=0.3)
        _legend(ax, fontsize=7)
    return ("TLB misses by configuration",
            "Walks per thousand references (the misses of the last TLB level) against each numeric axis of "
            f"the sweep; a line per trace and setting of the other axes (at most {MAX_LINES} per trace), each "
            "with its own marker and dashes, so that lines that coincide show.",
            _png(fig))


def _bars(traces: Sequence[str], frame, column: str, xlabel: str, fmt: Callable[[float], str]):
    """Horizontal bars of ``column``, a panel per trace (with two runs or more), largest
    first, each bar labelled with its value; whether a panel's axis starts near its
    smallest value (its bars differ by less than RELATIVE_BELOW) rather than at 0; and
    the traces left out because their runs read alike (a bar each would tell nothing).
    No figure when no trace has two runs that differ."""
    same = []
    shown = []
    for t in traces:
        values = frame[frame["trace"] == t][column]
        if len(values) < 2:
            continue
        if len({fmt(v) for v in values}) == 1:
            same.append(f"{_short(t)}: every run {fmt(values.iloc[0])}")
        else:
            shown.append(t)
    traces = shown
    if not traces:
        return None, False, same
    most = max(int((frame["trace"] == t).sum()) for t in traces)
    fig, axes = _figure(len(traces), 1, height=0.3 * min(MAX_BARS, most) + 1.2)
    relative = False
    for ax, trace in zip(axes, traces):
        sub = frame[frame["trace"] == trace].sort_values(column, ascending=False).head(MAX_BARS)
        bars = ax.barh(sub["label"], sub[column], color="#4c72b0")
        ax.bar_label(bars, labels=[fmt(v) for v in sub[column]], padding=3, fontsize=7)
        lo, hi = float(sub[column].min()), float(sub[column].max())
        if hi > 0 and lo > 0 and (hi - lo) / hi < RELATIVE_BELOW:
            span = max(hi - lo, hi * 1e-3)
            ax.set_xlim(lo - 0.5 * span, hi + 0.6 * span)
            relative = True
        elif hi > 0:
            ax.set_xlim(0, hi * 1.15)
        ax.invert_yaxis()
        ax.set_title(_short(trace), fontsize=10)
        ax.set_xlabel(xlabel)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="x", alpha=0.3)
    return fig, relative, same


def _relative_note(relative: bool, same: Sequence[str]) -> str:
    note = (f" Where a trace's runs differ by less than {RELATIVE_BELOW:.0%}, its axis starts near the smallest "
            "value, not at 0." if relative else "")
    if same:
        note += " Left out, their runs alike: " + "; ".join(same) + "."
    return note


def _overhead(runs: _Runs) -> Figure:
    if runs.with_faults:
        label = "translation overhead (% of cycles)"
        what = "translation (TLB hits, walks, promotions, page faults, eager paging)"
    else:
        label = "translation overhead, without first-touch faults (% of cycles)"
        what = "translation (TLB hits, walks, promotions, swap-ins)"
    fig, relative, same = _bars(runs.traces, runs.ok, "overhead_shown", label, lambda v: f"{v:.2f}%")
    if fig is None:
        return None
    return ("Translation overhead by configuration",
            f"The share of each run's cycles spent on {what}, "
            f"per trace with two runs or more, largest first (at most {MAX_BARS} runs per trace)."
            + _steady_note(runs) + _relative_note(relative, same), _png(fig))


def _walk_cost(runs: _Runs) -> Figure:
    ok = runs.ok.dropna(subset=["walk_refs_per_walk"])
    ok = ok[ok["walks"] > 0]
    if ok.empty or ok["page_table"].nunique() < 2:
        return None
    table = ok.groupby(["trace", "page_table"])[["walk_refs_per_walk", "walk_lines_per_walk"]].mean().reset_index()
    fig, axes = _figure(1, 2)
    kinds = list(dict.fromkeys(table["page_table"]))
    width = 0.8 / max(1, len(runs.traces))
    for ax, column, label in zip(axes, ["walk_refs_per_walk", "walk_lines_per_walk"],
                                 ["memory references per walk", "cache lines per walk"]):
        for i, trace in enumerate(runs.traces):
            sub = table[table["trace"] == trace].set_index("page_table").reindex(kinds)
            bars = ax.bar([k + i * width for k in range(len(kinds))], sub[column], width, label=_short(trace))
            ax.bar_label(bars, fmt="%.2f", padding=2, fontsize=7)
        ax.set_xticks([k + width * (len(runs.traces) - 1) / 2 for k in range(len(kinds))], kinds, rotation=20)
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    _legend(axes[1])
    return ("Page-walk cost by page-table structure",
            "Memory references and distinct cache lines per walk, by page-table structure (the mean over "
            "the runs of each structure), per trace, where the runs used two structures or more.", _png(fig))


def _fragmentation(runs: _Runs) -> Figure:
    sampled = [r for r in runs.ok.to_dict("records") if len(r["report"].get("fragmentation") or []) > 1]
    if not sampled:
        return None
    traces = list(dict.fromkeys(r["trace"] for r in sampled))
    fig, axes = _figure(len(traces), 2)
    for t, trace in enumerate(traces):
        share_ax, promo_ax = axes[2 * t], axes[2 * t + 1]
        for r in [r for r in sampled if r["trace"] == trace][:MAX_LINES]:
            samples = r["report"]["fragmentation"]
            sizes = r["report"].get("fragmentation_sizes") or ["?"]
            x = [s["references"] / 1e6 for s in samples]
            n = len(share_ax.get_lines())
            share_ax.plot(x, [s["usable_share"][-1] if s["usable_share"] else 0 for s in samples],
                          label=f"{r['label']} ({sizes[-1]})", markevery=max(1, len(x) // 8), **_style(n))
            promo_ax.plot(x, [s.get("promotions", 0) for s in samples], label=f"{r['label']} ({sizes[-1]})",
                          markevery=max(1, len(x) // 8), **_style(n))
        share_ax.set_title(f"{_short(trace)}: free memory in blocks of the largest size", fontsize=10)
        share_ax.set_ylim(-0.02, 1.02)
        share_ax.set_ylabel("share of free memory")
        promo_ax.set_title(f"{_short(trace)}: promotions", fontsize=10)
        promo_ax.set_ylabel("promotions so far")
        for ax in (share_ax, promo_ax):
            ax.set_xlabel("references (millions)")
            ax.grid(alpha=0.3)
        _legend(promo_ax, fontsize=7)
    return ("Fragmentation and promotions over time",
            "For runs on a buddy allocator that sampled free memory (frames.sample_every): the share of free "
            "memory still in blocks large enough for the largest superpage size, and the promotions made so far.",
            _png(fig))


def _speedup(runs: _Runs) -> Figure:
    ok = runs.ok[runs.ok["cycles"] > 0].copy()
    if len(ok) < 2:
        return None
    captions = []
    for trace in runs.traces:
        sub = ok[ok["trace"] == trace]
        none = sub[sub["promotion"] == "none"] if "promotion.policy" in runs.axes else sub.iloc[0:0]
        base = none["cycles"].max() if len(none) else sub["cycles"].max()
        ok.loc[sub.index, "speedup"] = base / sub["cycles"]
        captions.append("base pages" if len(none) else "the slowest configuration")
    fig, relative, same = _bars(runs.traces, ok, "speedup", "speedup (×)", lambda v: f"{v:.3f}×")
    if fig is None:
        return None
    for ax in fig.axes:
        if ax.get_xlim()[0] <= 1.0:
            ax.axvline(1.0, color="#888", lw=1)
    baseline = " or ".join(sorted(set(captions)))
    return ("Speedup by configuration",
            f"Each run's cycles (references and translation) against {baseline} of its trace, as the "
            "papers' speedup bars, per trace with two runs or more; best first." + _steady_note(runs)
            + _relative_note(relative, same),
            _png(fig))


FIGURES: List[Callable[[_Runs], Figure]] = [_miss_ratio_curves, _misses_by_axis, _overhead, _walk_cost,
                                            _fragmentation, _speedup]


# --- the page ---------------------------------------------------------------------------


def _claims(db: str) -> List[str]:
    """The papers reproduced into ``db`` (pagelab repro) and each claim's verdict: the
    paper's number beside ours, and what is compared; nothing for a plain sweep."""
    esc = html.escape
    parts = []
    for p in _pagelab.repro_claims(db):
        claims = p["claims"]
        count = lambda cls, v=None: sum(1 for c in claims if c["class"] == cls and (v is None or c["verdict"] == v))
        source = p["source"]
        where = f'<a href="{esc(source)}">{esc(source)}</a>' if source.startswith("https://") else esc(source)
        parts.append(f"<h2>{esc(p['title'])}</h2><p>{esc(p['cite'])} ({where}). {esc(p['about'])}</p>")
        runs = "".join(f"<li><code>{esc(e['name'])}</code>: {esc(e['about'])}</li>" for e in p["experiments"])
        parts.append(f"<p>Experiments, each a sweep in this database:</p><ul>{runs}</ul>")
        not_run = sum(1 for c in claims if c["verdict"] == "not run")
        if p["quick"]:
            parts.append('<p class="note">These verdicts come from the quick inputs (--quick).</p>')
        checks = count("input check", "agrees") + count("input check", "differs")
        checks_text = f"; input checks: {count('input check', 'agrees')} of {checks} agree" if checks else ""
        parts.append(f"<p>{len(claims)} claims. Measured: {count('measured', 'agrees')} agree, "
                     f"{count('measured', 'differs')} differ{checks_text}; "
                     f"{count('not reproducible here')} not reproducible here"
                     f"{f'; {not_run} not run' if not_run else ''}. Only measured claims are results "
                     "of these runs; an input check compares one of pagelab's constants with the paper's.</p>")
        rows = []
        for c in claims:
            verdict, cause = c["verdict"], c["cause"]
            css = {"not reproducible here": "not-reproducible", "not run": "not-run"}.get(verdict, verdict)
            rows.append(
                f"<tr><td><code>{esc(c['id'])}</code><br>{esc(c['section'])}</td><td>{esc(c['class'])}</td>"
                f"<td>{esc(c['claim'])}</td><td>{esc(c['paper_value'])}</td><td>{esc(c['measured'])}</td>"
                f"<td class=\"{css}\">{esc(verdict)}</td>"
                f"<td>{esc(c['compared'])}<br><span class=\"note\">{esc(c['detail'])}</span>"
                + (f"<br><span class=\"cause\">Why: {esc(cause)}</span>" if cause else "") + "</td></tr>")
        parts.append('<table class="claims"><tr><th>claim</th><th>class</th><th>the paper says</th><th>paper</th>'
                     "<th>pagelab</th><th>verdict</th><th>what is compared</th></tr>" + "".join(rows) + "</table>")
    return parts


def _number(v: float) -> str:
    """A number of a table: whole or large ones in full (a count stays a count), the
    others to 4 significant digits; never with separators, so that sorting reads them."""
    return f"{v:.0f}" if v.is_integer() or abs(v) >= 1e4 else f"{v:.4g}"


def _html_table(frame, max_rows: int = 200, wrap: bool = False) -> str:
    """A sortable table of ``frame``'s first rows; cells on one line unless ``wrap``
    (it scrolls sideways in its box when wider than the page)."""
    shown = frame.head(max_rows).copy()
    if "trace" in shown.columns:  # the folder is the page's business, not each row's
        names = {t: _short(t) for t in set(frame["trace"]) if isinstance(t, str)}
        if len(set(names.values())) == len(names):  # unless two files share a name
            shown["trace"] = shown["trace"].map(lambda t: names.get(t, t))
    for column in shown.columns:  # no "None" for an absent text (na_rep covers numbers)
        if shown[column].dtype == object:
            shown[column] = shown[column].where(shown[column].notna(), "")
    classes = "sortable" if wrap else "sortable nowrap"
    text = shown.to_html(index=False, border=0, na_rep="", float_format=_number, classes=classes)
    text = f'<div class="scroll">{text}</div>'

    if len(frame) > max_rows:
        text += f'<p class="note">The first {max_rows} of {len(frame)} rows; all of them: pagelab results export.</p>'
    return text


def _folders(traces) -> str:
    """The folders of the traces, for a note above a table that names them by file."""
    folders = sorted({os.path.dirname(t) or "." for t in traces if isinstance(t, str)})
    return ", ".join(folders) if folders else "none"


def render(db: str, title: Optional[str] = None, with_faults: bool = False) -> str:
    """The report of the database ``db`` as HTML text."""
    runs = _Runs(db, with_faults)
    esc = html.escape
    title = title or f"pagelab: {os.path.basename(db)}"
    failed = runs.all[runs.all["status"] != "ok"]
    versions = sorted(set(runs.all["version"]))
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f'<p>{len(runs.all)} runs of {len(set(runs.all["trace"]))} traces in <code>{esc(db)}</code>: '
        f"{len(runs.ok)} finished, {len(failed)} failed; pagelab {esc(', '.join(versions))}. "
        f"Axes of the sweep: {esc(', '.join(runs.axes) or 'none')}.</p>",
    ]
    parts.extend(_claims(db))
    left_out = []
    if len(runs.ok):
        for make in FIGURES:
            made = make(runs)
            if made is None:
                left_out.append(make.__name__.strip("_").replace("_", " "))
                continue
            name, caption, png = made
            parts.append(f"<h2>{esc(name)}</h2><figure><img src=\"data:image/png;base64,{png}\" "
                         f"alt=\"{esc(name)}\"><figcaption>{esc(caption)}</figcaption></figure>")
    if left_out:
        parts.append(f'<p class="note">Left out, with nothing to show for these runs: {esc(", ".join(left_out))}.</p>')
    # The runs' fields, what varied and the headline numbers; every number of each run
    # is in `pagelab.results(db)`.
    # (The analysis and the version only when they vary; a failed run's error in full
    # under "Failed runs".)
    columns = [c for c in ["trace", "analysis", "version", "status", "error", "seconds", *runs.axes, *_HEADLINE]
               if c in runs.all.columns and (c not in ("analysis", "version") or runs.all[c].nunique() > 1)]
    table = runs.all[columns].copy()
    if "error" in table.columns:
        table["error"] = [e[:57] + "…" if isinstance(e, str) and len(e) > 60 else e for e in table["error"]]
    parts.append(f"<h2>Runs</h2><p class=\"note\">Traces in {esc(_folders(runs.all['trace']))}. "
                 "Click a heading to sort by it.</p>" + _html_table(table))
    if len(failed):
        parts.append("<h2>Failed runs</h2>" + _html_table(failed[["trace", *runs.axes, "error"]], wrap=True))
    parts.append(f"<script>{_SORT_SCRIPT}</script></body></html>")
    return "\n".join(parts)


def report(db, output, title: Optional[str] = None, with_faults: bool = False) -> str:
    """Write the HTML report of the results database ``db`` to ``output``, whole or not at
    all; returns the output's path. ``db`` may instead be the JSON of ``pagelab advise
    --json``: its page sets each mapping's predicted speedup beside the measured one.
    The figures of overhead and speedup leave zero-fill page faults and eager paging
    (first touches) out unless ``with_faults``; runs with a warm-up are measured after it. Needs pandas and
    matplotlib.

    Raises:
        ValueError: ``db`` is not a results database.
    """
    db, output = os.fspath(db), os.fspath(output)
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        raise ImportError("pagelab.report needs matplotlib, which is not installed: pip install matplotlib") from e
    if os.path.exists(output) and os.path.exists(db) and os.path.samefile(output, db):
        raise InputError(f"{output}: is the results database itself")
    from . import advise_page

    text = advise_page.render(db, title) if advise_page.is_advice(db) else render(db, title, with_faults)
    _pagelab.write_file(output, text.encode("utf-8"))
    return output


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="pagelab report", description="An HTML report of a results database.")
    parser.add_argument("db", help="the results database (pagelab sweep -o), or the JSON of pagelab advise --json")
    parser.add_argument("-o", "--output", required=True, help="the HTML file to write")
    parser.add_argument("--title", help="the page's title")
    parser.add_argument("--with-faults", action="store_true",
                        help="count page faults and eager paging in the figures of overhead and speedup")
    args = parser.parse_args(argv)
    try:
        report(args.db, args.output, args.title, with_faults=args.with_faults)
    except (InputError, OSError) as e:  # the input refused: 2, as `pagelab report` reads it
        print(f"pagelab report: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"pagelab report: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
