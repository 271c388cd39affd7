"""Reuse distances (Cașcaval et al., "Multiple Page Size Modeling and Optimization",
PACT 2005, §3.1) from Python.

:func:`reuse_distance` is ``pagelab analyze reuse``: the exact LRU stack distances of
a trace's page stream at one or more page sizes, in one pass, and from them the misses
of a fully associative LRU TLB of every size. Runs in Rust without the GIL; the
results are pandas DataFrames.
"""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional, Sequence

from . import _pagelab

__all__ = ["reuse_distance", "ReuseDistance"]


class ReuseDistance(NamedTuple):
    """What :func:`reuse_distance` returns.

    ``curve``: a DataFrame with ``page_size``, ``entries``, ``misses`` and
    ``miss_ratio`` (a fully associative LRU TLB of that many entries; at the usual TLB
    sizes 16 … 4096 and every power of two up to the distinct pages).
    ``histogram``: ``page_size``, ``distance`` (the lowest of a bucket of powers of
    two: 0, 1, 2, 4, …) and ``references``.
    ``summary``: a DataFrame, one row per page size: ``translations``,
    ``distinct_pages``, ``cold`` (first references), ``median``, ``p90``, ``p99``
    (None: among the first references).
    ``exact``: True unless pages were sampled (``sample_rate``): then the counts are
    estimates.
    """

    curve: Any
    histogram: Any
    summary: Any
    exact: bool

    def to_frame(self) -> Any:
        """The miss-ratio curve (``curve``)."""
        return self.curve

    def to_dict(self) -> Dict[str, Any]:
        """Every table as a list of row dicts, and ``exact``."""
        return {
            "curve": self.curve.to_dict("records"),
            "histogram": self.histogram.to_dict("records"),
            "summary": self.summary.to_dict("records"),
            "exact": self.exact,
        }


def reuse_distance(
    trace,
    page_sizes: Sequence[str] = ("4K",),
    format: Optional[str] = None,
    sample_rate: Optional[float] = None,
    warmup=None,
) -> ReuseDistance:
    """Exact reuse distances of a trace's page stream, and its miss-ratio curves.

    Args:
        trace: path of the trace.
        page_sizes: the page sizes, e.g. ``("4K", "2M", "1G")``; all in one pass.
        format: the trace format; None detects it.
        sample_rate: approximate from this share of the pages (0 < rate <= 1,
            chosen by a hash of their numbers, counts scaled up: SHARDS); the result's
            ``exact`` is then False. Default None: exact.
        warmup: read the first references (an ``int``, or a share of the trace:
            ``0.1`` or ``"10%"``) without counting them: their pages are known, so
            only what follows is measured, as in the steady state.

    Returns:
        A :class:`ReuseDistance` of DataFrames (needs pandas).

    Raises:
        ValueError: a bad trace or page size (the message names it).
    """
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError("pagelab.reuse_distance needs pandas, which is not installed: pip install pandas") from e
    from . import _trace_path, _warmup_text

    if isinstance(page_sizes, str):
        page_sizes = [page_sizes]
    result: Dict[str, Any] = _pagelab.reuse(
        _trace_path(trace), [str(s) for s in page_sizes], format, sample_rate, warmup=_warmup_text(warmup)
    )
    sizes = result["page_sizes"]
    curve = pd.DataFrame(
        [(p["page_size"], n, m, r) for p in sizes for n, m, r in p["curve"]],
        columns=["page_size", "entries", "misses", "miss_ratio"],
    )
    histogram = pd.DataFrame(
        [(p["page_size"], d, n) for p in sizes for d, n in p["histogram"]],
        columns=["page_size", "distance", "references"],
    )
    summary = pd.DataFrame(
        [{k: p[k] for k in ("page_size", "translations", "distinct_pages", "cold", "median", "p90", "p99")} for p in sizes]
    )
    return ReuseDistance(curve=curve, histogram=histogram, summary=summary, exact=result["exact"])
