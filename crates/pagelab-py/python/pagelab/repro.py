"""The papers pagelab is built on, reproduced: each paper's headline experiments run as
sweeps into one results database, and each claim judged against the paper's number;
the same engine as ``pagelab repro``::

    import pagelab
    [p["id"] for p in pagelab.repro_papers()]       # cpo, fang, navarro, rmm, vrpt
    r = pagelab.repro("vrpt", "/tmp/vrpt")            # results.db, verdicts, report.html
    r.to_frame()                                      # a row per claim (pandas)

Run again into the same folder, a repro runs only what its database lacks. The native
measurements (the CPO paper's speedup on this machine, by ``pagelab advise``) are the
command line's: from Python their claims are "not run".
"""

from __future__ import annotations

import copy
import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Union

from . import _pagelab
from ._frames import pandas

PathLike = Union[str, "os.PathLike[str]"]

#: The bundled traces, beside the package in the repository.
_TRACES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "data", "traces")


@dataclass(frozen=True)
class Reproduction:
    """A paper reproduced: its claims with their verdicts, and where the results are."""

    paper: str
    title: str
    #: One dict per claim: id, class ("measured", "input-check", "not-reproducible"),
    #: section, claim, paper, measured, outcome ("agrees", "differs",
    #: "not-reproducible", "not-run"), detail, compared, tolerance, cause.
    claims: List[Dict[str, Any]]
    #: The folder: results.db, verdicts.json, verdicts.md, summary.txt, report.html.
    output: str
    quick: bool
    #: The claims counted by class: measured_agree, measured_differ (the headline),
    #: input_checks and input_checks_agree, not_reproducible, not_run.
    tally: Dict[str, int]
    #: Per input the paper does not state and each of its other values (none with
    #: ``quick``): key, value, about, measured, and the changes (id, from, to,
    #: measured_from, measured_to) of the measured verdicts it moves.
    sensitivity: List[Dict[str, Any]]

    def counts(self) -> Dict[str, int]:
        """Claims by outcome."""
        out: Dict[str, int] = {}
        for c in self.claims:
            out[c["outcome"]] = out.get(c["outcome"], 0) + 1
        return out

    def to_frame(self):
        """The claims as a pandas DataFrame, a row per claim."""
        return pandas("Reproduction.to_frame").DataFrame(self.claims)

    def to_dict(self) -> Dict[str, Any]:
        """The whole reproduction as plain dicts and lists (a copy)."""
        return copy.deepcopy(dataclasses.asdict(self))


def repro_papers() -> List[Dict[str, Any]]:
    """The papers ``repro`` takes: id, title, cite, and counts of claims and experiments."""
    return list(_pagelab.repro_papers())


def repro(paper: str, output: PathLike, *, quick: bool = False, jobs: Optional[int] = None,
          traces: Optional[PathLike] = None, cache: Optional[PathLike] = None, report: bool = True,
          quiet: bool = True, warmup=None) -> Reproduction:
    """Reproduce ``paper`` (one of ``repro_papers()``) into the folder ``output``: its
    experiments on the local cores (``jobs`` at once; default every core), each claim
    judged, the inputs of its sensitivity table run at their other values (not with
    ``quick``), the verdicts written and, with ``report``, ``output/report.html`` drawn
    (needs matplotlib). ``quick`` runs the smaller inputs; ``traces`` is the bundled
    traces' folder (default: the repository's ``data/traces``); ``cache`` the folder of
    the papers' own kernels as recorded traces (default as the command line's:
    ``$PAGELAB_CACHE``, else ``$XDG_CACHE_HOME/pagelab/traces``, else
    ``~/.cache/pagelab/traces``), which ``pagelab repro PAPER``
    records on first use. ``warmup`` (an ``int``, or a share of each trace: ``0.1`` or
    ``"10%"``) measures every simulation of the experiments in the steady state, as
    ``pagelab repro --warmup`` does.

    Raises:
        ValueError: an unknown paper, a missing trace, or a database that cannot be written.
    """
    from . import _warmup_text

    output = os.fspath(output)
    folder = os.fspath(traces) if traces is not None else os.path.normpath(_TRACES)
    v = _pagelab.repro(paper, output, folder, quick=quick, jobs=jobs, quiet=quiet,
                          cache=os.fspath(cache) if cache is not None else None,
                          warmup=_warmup_text(warmup))
    if report:
        from .report import report as draw

        draw(os.path.join(output, "results.db"), os.path.join(output, "report.html"),
             title=f"pagelab repro {paper}: {v['title']}")
    return Reproduction(paper=v["paper"], title=v["title"], claims=list(v["claims"]), output=output,
                        quick=bool(v["quick"]), tally=dict(v["counts"]),
                        sensitivity=list(v["sensitivity"]))
