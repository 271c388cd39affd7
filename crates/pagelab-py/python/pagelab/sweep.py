"""Sweeps: many runs, traces × configuration overrides, each committed to a SQLite
results database the moment it finishes; the same engine as ``pagelab sweep``.

A sweep is a sweep file's path, or a dict of its fields::

    import pagelab
    summary = pagelab.sweep(
        {"traces": ["data/traces/gups-rec.plt"], "machine": "skylake",
         "grid": {"tlb.levels.stlb.ways": [4, 8, 12, 16]}},
        "/tmp/results.db")
    frame = pagelab.results("/tmp/results.db")      # a row per run (pandas)

Run again, a sweep runs only the runs its database lacks. ``ray="HOST:PORT"`` runs the
same runs as tasks on an existing Ray cluster whose nodes see the traces at the same
paths and have pagelab and Ray installed.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Union

from . import _pagelab

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class SweepSummary:
    """What a sweep did."""

    #: Runs in the sweep.
    total: int
    #: Runs already in the database, not run again.
    present: int
    #: Runs repeating another's trace content and configuration: run once.
    duplicates: int
    #: Runs of other pagelab builds (version and commit) in the database, kept apart.
    other_versions: int
    #: Runs executed now, and how many of them failed (their errors are in the database).
    ran: int
    failed: int
    #: Of the runs executed now, those made in one pass with others (simulations that
    #: differ only in the last TLB level's geometry; each one's time a share of it).
    one_pass: int
    #: References simulated by the runs executed now, and the time they took.
    references: int
    seconds: float

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    def to_frame(self) -> Any:
        """One row, a column per field (pandas)."""
        from ._frames import frame

        return frame([self.to_dict()], what="SweepSummary.to_frame")


def sweep(
    spec: Union[PathLike, Mapping[str, Any]],
    db: PathLike,
    *,
    jobs: Optional[int] = None,
    ray: Optional[str] = None,
    quiet: bool = False,
    separate: bool = False,
) -> SweepSummary:
    """Run every run of a sweep that the results database ``db`` lacks.

    Args:
        spec: a sweep file (TOML), or a dict of its fields: ``traces`` (paths),
            ``machine`` (a preset) or ``config`` (a TOML file), ``grid`` and ``zip``
            (dotted configuration keys to lists of values), ``max_runs`` (the most
            runs it may have, default 10,000). Relative paths in a dict are taken
            from the current folder, and kept as given in the results.
        db: the results database (SQLite), made if missing.
        jobs: runs at once on this machine; None uses every core this process may use.
        ray: the address of a Ray cluster ("auto", "HOST:PORT", "ray://HOST:PORT") to
            run on instead, through this interpreter.
        quiet: no progress bar on standard error.
        separate: run every configuration on its own. By default, simulations of a
            trace that differ only in the sets and ways of the last TLB level run in
            one pass, with the same results (not with ``ray``).

    Returns:
        A :class:`SweepSummary`. Runs that fail are counted in ``failed`` and recorded
        with their error; they do not raise.

    Raises:
        ValueError: a bad sweep (unknown field, missing trace, empty axis, a value a
            configuration refuses, more runs than ``max_runs``), before any run; or a
            database or executor failure (the runs committed before it are kept).
        TypeError: a value of the wrong type (a str where a list is wanted), or one
            with no TOML form.
        TypeError: a value with no TOML form, a list or dict that contains itself,
            or nesting more than 64 deep.
    """
    if jobs is not None and ray is not None:
        raise ValueError("give jobs or ray, not both")
    if not isinstance(separate, bool):
        raise TypeError(f"separate: True or False, not {type(separate).__name__}")
    if separate and ray is not None:
        raise ValueError("give separate or ray, not both (Ray runs every configuration apart)")
    if isinstance(spec, (str, os.PathLike)):
        spec = os.fspath(spec)
    elif not isinstance(spec, Mapping):
        raise TypeError(f"spec: a sweep file or a dict, not {type(spec).__name__}")
    else:
        spec = dict(spec)
    out = _pagelab.sweep(
        spec,
        os.fspath(db),
        jobs=jobs,
        ray=ray,
        python=sys.executable,
        quiet=quiet,
        folder=".",
        separate=separate,
    )
    return SweepSummary(**out)


def results(db: PathLike) -> Any:
    """The runs of a results database as a pandas DataFrame: a row per run, a column per
    override key, the run's status, error and seconds, and every number of a
    simulation's report as :func:`pagelab.flatten_report` names them (``stlb_misses``,
    ``stlb_miss_ratio``, ``stlb_mpki``, ``walks``, ``cycles_walks``, …); rows by trace and
    each key's value (the table ``pagelab results export`` writes).

    >>> runs = pagelab.results("runs.db")  # doctest: +SKIP
    >>> runs.pivot_table("stlb_miss_ratio", "tlb.levels.stlb.ways", "trace").plot()  # doctest: +SKIP
    """
    from ._frames import frame

    table = _pagelab.results_table(os.fspath(db))
    return frame(table["rows"], columns=table["columns"], what="pagelab.results")


def export_results(db: PathLike, *, csv: Optional[PathLike] = None, parquet: Optional[PathLike] = None) -> None:
    """Write the runs of a results database as CSV and/or Parquet, each file whole or
    not at all (as ``pagelab results export``)."""
    if csv is None and parquet is None:
        raise ValueError("name a csv or a parquet file")
    _pagelab.export_results(
        os.fspath(db),
        csv=None if csv is None else os.fspath(csv),
        parquet=None if parquet is None else os.fspath(parquet),
    )
