"""A trace file, and what pagelab can do with it.

>>> import pagelab
>>> trace = pagelab.Trace("data/traces/xz.plt")
>>> trace.info().references > 0
True
>>> machine = pagelab.Machine.preset("skylake").with_overrides({"tlb.levels.stlb.ways": 16})
>>> machine.to_dict()["tlb"]["levels"][2]["arrays"][0]["ways"]
16
>>> report = trace.simulate(machine)
>>> report.levels[-1].name, report.counts.references == trace.info().references
('stlb', True)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

from . import _pagelab

if TYPE_CHECKING:
    from .benefit import Benefit
    from .comparisons import Contiguity, TranslationComparison
    from .records import Report, TraceInfo
    from .reuse import ReuseDistance

MachineLike = Union[None, str, _pagelab.Machine]


class Trace:
    """A trace file in one of :data:`pagelab.TRACE_FORMATS`, read when asked.

    Args:
        path: the file (text and binary record formats may be gz/xz/zst-compressed).
        format: its format; None detects it from the content and the name.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], format: Optional[str] = None):
        try:
            self.path: str = os.fsdecode(os.fspath(path))
        except TypeError:
            raise TypeError(f"a trace is a path (str or os.PathLike), not {type(path).__name__}") from None
        if format is not None and format not in _pagelab.TRACE_FORMATS:
            raise ValueError(f"format: {format!r} is not one of {', '.join(_pagelab.TRACE_FORMATS)}")
        self.format: Optional[str] = format

    def __repr__(self) -> str:
        return f"Trace({self.path!r}" + (f", format={self.format!r})" if self.format else ")")

    def __fspath__(self) -> str:
        return self.path

    def info(self, categories: Any = None) -> "TraceInfo":
        """What the trace holds (:func:`pagelab.trace_info`)."""
        from . import trace_info

        return trace_info(self, categories=categories)

    def simulate(self, machine: Union[MachineLike, Any] = None) -> "Report":
        """The report of ``machine`` (a :class:`pagelab.Machine`, a preset name, a
        configuration dict, TOML text or file; None: the default machine) over the
        whole trace."""
        from . import simulate

        if isinstance(machine, str) and machine in _pagelab.PRESETS:
            machine = _pagelab.Machine.preset(machine)
        return simulate(self, machine)

    def reuse_distance(self, page_sizes: Sequence[str] = ("4K",), sample_rate: Optional[float] = None) -> "ReuseDistance":
        """Exact (or sampled) LRU stack distances at each page size (:func:`pagelab.reuse_distance`)."""
        from .reuse import reuse_distance

        return reuse_distance(self.path, page_sizes, format=self.format, sample_rate=sample_rate)

    def benefit(self, machine: MachineLike = None, **options: Any) -> "Benefit":
        """The page-size benefit analysis (:func:`pagelab.benefit`; ``options`` as it takes them)."""
        from .benefit import benefit

        return benefit(self.path, machine=machine, format=self.format, **options)

    def contiguity(self, machine: MachineLike = None, regions: Sequence[str] = ()) -> "Contiguity":
        """Translation entries by share of the footprint (:func:`pagelab.contiguity`)."""
        from .ranges import contiguity

        return contiguity(self.path, machine=machine, regions=regions, format=self.format)

    def compare_translation(self, machine: MachineLike = None, regions: Sequence[str] = ()) -> "TranslationComparison":
        """One run per translation scheme (:func:`pagelab.compare_translation`)."""
        from .ranges import compare_translation

        return compare_translation(self.path, machine=machine, regions=regions, format=self.format)
