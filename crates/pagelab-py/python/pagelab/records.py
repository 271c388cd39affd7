"""Typed results: a simulation's :class:`Report` and a trace's :class:`TraceInfo`.

Each is a read-only mapping of the core's JSON (so ``report["counts"]["walks"]`` works
as it always did) with typed attributes for what one reaches for
(``report.counts.walks``, ``report.levels[0].miss_ratio``), ``to_dict()`` for the whole
of it and ``to_frame()`` for a one-row pandas DataFrame.

>>> import pagelab
>>> report = pagelab.simulate("data/traces/xz.plt", pagelab.Machine.preset("skylake"))
>>> report.machine
'skylake'
>>> report.counts.references == report["counts"]["references"] > 0
True
>>> [level.name for level in report.levels]
['itlb', 'dtlb', 'stlb']
>>> report.to_frame()[["references", "walks"]].shape
(1, 2)
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Type, TypeVar

T = TypeVar("T")


def _typed(cls: Type[T], raw: Mapping) -> T:
    """A dataclass of ``cls`` from the fields of ``raw`` it declares."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in raw.items() if k in names})


class _Record(Mapping):
    """A read-only mapping of a result's JSON, with ``to_dict`` and ``to_frame``."""

    def __init__(self, raw: Dict[str, Any]):
        self._raw = raw

    def __getitem__(self, key: str) -> Any:
        return self._raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(list(self._raw)[:6])}, …)"

    def to_dict(self) -> Dict[str, Any]:
        """The whole result as plain dicts and lists (a copy)."""
        return copy.deepcopy(self._raw)


@dataclass(frozen=True)
class Counts:
    """What a run counted."""

    references: int
    translations: int
    page_crossing: int
    walks: int
    walk_refs: int
    walk_lines: int
    walk_refs_skipped: int
    fault_walk_refs: int
    page_faults: int
    large_faults: int
    promotions: int
    promotions_in_place: int
    promotion_failures: int
    promotion_table_refs: int
    pages_copied: int
    pages_remapped: int
    pages_zeroed: int
    policy_misses: int
    controller_lookups: int
    address_space_switches: int
    #: References by kind: ``{"load": …, "store": …, "fetch": …, "modify": …}`` (the
    #: raw report's ``counts["by_kind"]`` is the list in that order).
    by_kind: Dict[str, int]


@dataclass(frozen=True)
class Level:
    """One TLB level of a run."""

    name: str
    entries: int
    hits: int
    misses: int
    evictions: int
    miss_ratio: float
    mpki: float
    hit_cycles: float
    #: Hits and misses by page size: ``[{"size": "4K", "hits": …, "misses": …}, …]``.
    by_size: List[Dict[str, Any]]


#: The kinds of reference, in the order of a report's ``counts["by_kind"]``.
_KINDS = ("load", "store", "fetch", "modify")


class Levels(list):
    """A run's TLB levels: a list, first level first, that a level's name indexes too."""

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, str):
            for level in self:
                if level.name == key:
                    return level
            raise KeyError(f"no TLB level is named {key!r} (there are {', '.join(l.name for l in self)})")
        return super().__getitem__(key)

    def names(self) -> List[str]:
        """The levels' names, first first."""
        return [level.name for level in self]


class Report(_Record):
    """The report of one simulation (:func:`pagelab.simulate`)."""

    @property
    def machine(self) -> str:
        """The machine's name."""
        return str(self._raw["machine"])

    @property
    def counts(self) -> Counts:
        raw = dict(self._raw["counts"])
        raw["by_kind"] = dict(zip(_KINDS, raw.get("by_kind") or []))
        return _typed(Counts, raw)

    @property
    def levels(self) -> "Levels":
        """The TLB levels, first first; by position or by name (``levels["stlb"]``)."""
        return Levels(_typed(Level, level) for level in self._raw.get("levels") or [])

    @property
    def cycles(self) -> Dict[str, float]:
        """Cycles by cause: base, tlb_hits, walks, page_faults, promotions, …"""
        return dict(self._raw.get("cycles") or {})

    @property
    def translation_overhead_percent(self) -> float:
        return float(self._raw["translation_overhead_percent"])

    @property
    def tlb_overhead_percent(self) -> float:
        return float(self._raw["tlb_overhead_percent"])

    @property
    def walk_refs_per_walk(self) -> float:
        return float(self._raw.get("walk_refs_per_walk") or 0.0)

    @property
    def page_table_bytes(self) -> int:
        return int(self._raw.get("page_table_bytes") or 0)

    @property
    def baseline(self) -> Optional[Dict[str, Any]]:
        """With ``simulate(..., baseline=True)``, the same machine with base pages only
        against this run: speedup, base_walks, walks_removed, base_tlb_overhead_percent,
        bloat_frames, bloat_bytes; else None."""
        return self._raw.get("baseline")

    @property
    def fragmentation(self) -> List[Dict[str, Any]]:
        """Free-memory samples of a buddy allocator (``frames.sample_every``)."""
        return list(self._raw.get("fragmentation") or [])

    def to_frame(self) -> Any:
        """One row of flat columns (:func:`pagelab.flatten_report`) as a pandas DataFrame."""
        from . import to_frame

        return to_frame(self._raw)


class TraceInfo(_Record):
    """What a trace holds (:meth:`pagelab.Trace.info`, :func:`pagelab.trace_info`)."""

    @property
    def references(self) -> int:
        return int(self._raw["references"])

    @property
    def by_kind(self) -> Dict[str, int]:
        """References by kind: load, store, fetch, modify."""
        return dict(self._raw["by_kind"])

    @property
    def footprint_pages(self) -> Dict[str, int]:
        """Distinct pages by page size ("4K", "2M", "1G")."""
        return dict(self._raw["footprint_pages"])

    @property
    def format(self) -> str:
        return str(self._raw["format"])

    @property
    def min_address(self) -> Optional[int]:
        return self._raw.get("min_address")

    @property
    def max_address(self) -> Optional[int]:
        return self._raw.get("max_address")

    def to_frame(self) -> Any:
        """One row: the scalar fields and the counts by kind and page size."""
        from ._frames import frame

        row: Dict[str, Any] = {k: v for k, v in self._raw.items() if not isinstance(v, (dict, list))}
        row.update(self.by_kind)
        row.update({f"pages_{size}": n for size, n in self.footprint_pages.items()})
        return frame([row], what="TraceInfo.to_frame")
