"""Range translations (Gandhi et al., "Range Translations for Fast Virtual Memory",
IEEE Micro 2016) from Python, as typed results with ``to_frame()``.

:func:`contiguity` is ``pagelab analyze contiguity``: how many translation entries map
each share of a trace's footprint with 4K, 2M and 1G pages, ideal ranges and the
ranges eager paging made (the paper's Figure 2). :func:`compare_translation` is
``pagelab compare translation``: one run per scheme (4K, THP 2M, 1G, DS, RMM) on one
machine (Figure 7); :func:`compare_virtualized` is its ``--virtualized``: each guest
page table natively and over each host page table. They run in Rust without the GIL;
their ``to_frame()`` needs pandas.
"""

from __future__ import annotations

from typing import Optional, Sequence

from . import _pagelab
from .comparisons import Contiguity, TranslationComparison, VirtualizedComparison

__all__ = ["contiguity", "compare_translation", "compare_virtualized"]


def _machine_args(machine, config, regions):
    from . import _machine_choice

    if isinstance(regions, str):
        raise TypeError('regions is a list of spans ("0xSTART-0xEND" or "0xSTART+SIZE"), not one string')
    text, name, origin = _machine_choice(machine, config)
    return text, name, [str(r) for r in regions], origin


def contiguity(
    trace,
    machine=None,
    config=None,
    regions: Sequence[str] = (),
    format: Optional[str] = None,
) -> Contiguity:
    """Translation entries that map each share of a trace's footprint.

    Args:
        trace: path of the trace.
        machine: the preset that runs the trace (default ``sandy-bridge-rmm``): its
            eager paging makes the "eager ranges" and its frames are those whose
            contiguity is counted; or ``config``, a machine as :func:`pagelab.simulate`
            takes it (with ``ranges.allocation = "eager"`` for eager ranges).
        regions: spans eager paging allocates before the trace ("0xSTART-0xEND",
            "0xSTART+SIZE"), for traces without allocation events.
        format: the trace format; None detects it.

    Returns:
        A :class:`pagelab.Contiguity`: ``footprint_pages``, ``address_spaces``,
        ``machine``, ``note`` (why eager ranges are missing or empty), ``entries``
        (mapping → entries for the whole footprint); ``to_frame()`` has a row per
        mapping ("4K pages", "2M pages", "1G pages", "ideal ranges", "eager ranges")
        and share (``percent``, 1 … 100 and 99.9): the fewest ``entries``, largest
        first, that map that share; ``coalescable_frame()`` a row per run length
        (``pages`` 2 … 512) with the footprint the machine's frames leave
        coalescable (``groups``, ``footprint_pages``, ``percent``).

    Raises:
        ValueError: a bad trace, machine or region (the message names it).
    """
    text, name, spans, origin = _machine_args(machine, config, regions)
    from . import _trace_path

    return Contiguity(_pagelab.contiguity(_trace_path(trace), text, name, spans, format, origin))


def compare_translation(
    trace,
    machine=None,
    config=None,
    regions: Sequence[str] = (),
    format: Optional[str] = None,
    coalescing: bool = False,
) -> TranslationComparison:
    """One run of a trace per translation scheme, side by side.

    Args:
        trace: path of the trace (read once per scheme).
        machine: the preset the schemes are built on (default ``sandy-bridge``); or
            ``config``, a machine as :func:`pagelab.simulate` takes it.
        regions: spans DS and RMM allocate eagerly before the trace.
        format: the trace format; None detects it.
        coalescing: also the schemes whose TLB entries cover contiguous frames, after
            "THP 2M": "mTHP 64K" (64 KiB folios, arm64's contiguous bit) and "PTE
            coalescing" (base pages, AMD's coalescing of 4), as ``--coalescing``.

    Returns:
        A :class:`pagelab.TranslationComparison` (``machine``, ``skipped``: the
        schemes not run, and why) whose ``schemes`` and ``to_frame()`` have a row per
        scheme ("4K", "THP 2M", "1G", "DS", "RMM") the machine can run: ``scheme``, ``references``,
        ``tlb_misses``, ``mpki``, ``walk_refs``, ``walk_cycles``, ``range_walks``,
        ``range_walk_cycles``, ``walk_overhead_percent``,
        ``translation_overhead_percent``, ``walk_cycles_removed_percent`` (of the 4K
        scheme's), ``page_faults``, ``range_hits``, ``promotions``, ``peak_bytes``
        ``bloat_bytes`` (beyond the 4K scheme's peak) and ``untouched_bytes``
        (allocated eagerly, never used).

    Raises:
        ValueError: a bad trace, machine or region (the message names it).
    """
    if not isinstance(coalescing, bool):
        raise TypeError(f"coalescing is True or False, not {coalescing!r}")
    text, name, spans, origin = _machine_args(machine, config, regions)
    from . import _trace_path

    return TranslationComparison(
        _pagelab.compare_translation(_trace_path(trace), text, name, spans, format, origin,
                                     coalescing))


def compare_virtualized(
    trace,
    machine=None,
    config=None,
    guests: Sequence[str] = (),
    hosts: Sequence[str] = (),
    host_page: Optional[str] = None,
    format: Optional[str] = None,
) -> VirtualizedComparison:
    """Each guest page table natively and over each host page table, side by side
    (``pagelab compare translation --virtualized``).

    Args:
        trace: path of the trace (read once per run).
        machine: the preset every run is built on (default ``sandy-bridge``); or
            ``config``, a machine as :func:`pagelab.simulate` takes it (its
            ``[virtualization]`` section, if any, gives the host's memory and caches).
        guests, hosts: structure names from :data:`pagelab.PAGE_TABLES` (empty: all).
        host_page: the page a host fault maps when it can ("4K", "2M", "1G").
        format: the trace format; None detects it.

    Returns:
        A :class:`pagelab.VirtualizedComparison` whose ``native`` (a row per guest),
        ``pairs`` (a row per guest and host) and ``to_frame()`` (both; ``host`` is
        None, in the frame missing, for a native row) have: guest, host, references, walks, mpki, refs_per_walk,
        guest_refs_per_walk, host_refs_per_walk, walk_cycles, walk_overhead_percent,
        walk_cycles_vs_native, page_faults, host_faults, splintered, walk_caches,
        host_walk_caches, page_table_bytes, host_table_bytes.

    Raises:
        ValueError: a bad trace, machine, structure name or page size (the message
            names it).
    """
    for what, names in (("guests", guests), ("hosts", hosts)):
        if isinstance(names, str):
            raise TypeError(f"{what} is a list of structure names, not one string")
    from . import _machine_choice, _trace_path

    text, name, origin = _machine_choice(machine, config)
    return VirtualizedComparison(
        _pagelab.compare_virtualized(
            _trace_path(trace), text, name, [str(g) for g in guests], [str(h) for h in hosts],
            host_page, format, origin))
