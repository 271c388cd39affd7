"""Typed results of the comparisons: :class:`PageTableComparison` (``pagelab pagetables
compare``), :class:`Contiguity` (``pagelab analyze contiguity``) and
:class:`TranslationComparison` (``pagelab compare translation``).

Like :class:`pagelab.Report`, each is a read-only mapping of the core's result (the
command's ``--json``) with typed attributes, ``to_dict()`` for the whole of it and
``to_frame()`` for a pandas DataFrame of its rows.

>>> import pagelab
>>> tables = pagelab.compare_pagetables(layout="dense")
>>> [row["structure"] for row in tables.structures][:2]
['radix', 'linear']
>>> float(tables.to_frame().set_index("structure").loc["radix", "refs_mean"])
4.0
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ._frames import frame
from .records import _Record

__all__ = ["PageTableComparison", "Contiguity", "TranslationComparison"]


class PageTableComparison(_Record):
    """Every page-table structure over the same references (:func:`pagelab.compare_pagetables`)."""

    @property
    def source(self) -> str:
        """What was looked up: the trace, or the layout."""
        return str(self._raw["source"])

    @property
    def structures(self) -> List[Dict[str, Any]]:
        """A row per structure: refs_mean, refs_p99, lines_mean (references and cache
        lines per lookup), footprint_bytes, reclaimable_bytes, in_use_bytes, maps,
        map_refs_mean, shared_map_refs, lookups_per_second and ``segment``, the table
        references to update one 2 MiB segment (map, protect, promote, demote, unmap)."""
        return list(self._raw["structures"])

    def to_frame(self) -> Any:
        """A row per structure; ``segment`` as columns ``segment_map``, …;
        ``attrs["source"]`` says what was looked up."""
        rows = []
        for s in self.structures:
            row = {k: v for k, v in s.items() if k != "segment"}
            row.update({f"segment_{k}": v for k, v in (s.get("segment") or {}).items()})
            rows.append(row)
        out = frame(rows, what="PageTableComparison.to_frame")
        out.attrs["source"] = self.source
        return out


class Contiguity(_Record):
    """Translation entries that map each share of a trace's footprint (:func:`pagelab.contiguity`)."""

    @property
    def footprint_pages(self) -> int:
        return int(self._raw["footprint_pages"])

    @property
    def address_spaces(self) -> int:
        return int(self._raw["address_spaces"])

    @property
    def machine(self) -> Optional[str]:
        """The machine that ran the trace: its eager paging made the "eager ranges",
        its frames the coalescable footprint."""
        return self._raw.get("machine")

    def coalescable_frame(self) -> Any:
        """A row per run length: ``pages`` (base pages in an aligned group, 2 … 512),
        ``groups`` (those holding footprint pages whose pages are all mapped to
        contiguous frames aligned like the group, with the same rights),
        ``footprint_pages`` in them and their ``percent`` of the footprint."""
        return frame(list(self._raw.get("coalescable", [])),
                     columns=["pages", "groups", "footprint_pages", "percent"],
                     what="Contiguity.coalescable_frame")

    @property
    def note(self) -> Optional[str]:
        """Why the eager ranges are missing or empty, if they are."""
        return self._raw.get("note")

    @property
    def entries(self) -> Dict[str, int]:
        """Mapping ("4K pages", "2M pages", "1G pages", "ideal ranges", "eager
        ranges") → the entries that map the whole footprint."""
        return {m["name"]: m["entries"] for m in self._raw["mappings"]}

    def to_frame(self) -> Any:
        """A row per mapping and share: ``mapping``, ``percent`` (1 … 100, and 99.9) and
        ``entries`` (the fewest entries, largest first, that map that share). Pivot with
        ``frame.pivot(index="percent", columns="mapping", values="entries")`` to plot
        the curves."""
        rows = [
            {"mapping": m["name"], "percent": p, "entries": n}
            for m in self._raw["mappings"]
            for p, n in m["curve"]
        ]
        return frame(rows, columns=["mapping", "percent", "entries"], what="Contiguity.to_frame")


class TranslationComparison(_Record):
    """One run of a trace per translation scheme (:func:`pagelab.compare_translation`)."""

    @property
    def machine(self) -> str:
        return str(self._raw["machine"])

    @property
    def schemes(self) -> List[Dict[str, Any]]:
        """A row per scheme ("4K", "THP 2M", "1G", "DS", "RMM") the machine can run:
        references, tlb_misses, mpki, walk_refs, walk_cycles, range_walks,
        range_walk_cycles, walk_overhead_percent, translation_overhead_percent,
        walk_cycles_removed_percent (of the 4K scheme's), page_faults, range_hits,
        promotions, peak_bytes, bloat_bytes (beyond the 4K scheme's peak) and
        untouched_bytes (allocated eagerly, never used)."""
        return list(self._raw["schemes"])

    @property
    def skipped(self) -> List[Any]:
        """The schemes not run, and why."""
        return list(self._raw.get("skipped") or [])

    def to_frame(self) -> Any:
        """A row per scheme run."""
        return frame(self.schemes, what="TranslationComparison.to_frame")


class VirtualizedComparison(_Record):
    """Guest page tables natively and over host page tables
    (:func:`pagelab.compare_virtualized`)."""

    @property
    def machine(self) -> str:
        return str(self._raw["machine"])

    @property
    def host_page(self) -> str:
        """The page a host fault mapped when it could."""
        return str(self._raw["host_page"])

    @property
    def native(self) -> List[Dict[str, Any]]:
        """A row per guest structure alone (``host`` None)."""
        return list(self._raw["native"])

    @property
    def pairs(self) -> List[Dict[str, Any]]:
        """A row per guest and host structure."""
        return list(self._raw["pairs"])

    def to_frame(self) -> Any:
        """The native rows, then the pairs."""
        return frame(self.native + self.pairs, what="VirtualizedComparison.to_frame")
