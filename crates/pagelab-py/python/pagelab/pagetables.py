"""The page-table structures side by side (``pagelab pagetables compare``): every
structure over one trace or one synthetic layout, after Szmajda and Heiser, "Variable
Radix Page Table: a Page Table for Modern Architectures", ACSAC 2003, §5. Runs in Rust
without the GIL; the result is a :class:`pagelab.PageTableComparison`.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Union

from . import _pagelab
from .comparisons import PageTableComparison

__all__ = ["compare_pagetables", "LAYOUTS"]

#: The synthetic layouts ``layout=`` takes: dense (a program's code, 64 MiB heap and
#: stack), compact (the same pages as a MIPS process, in the low 2 GiB), sparse (256
#: small objects over the 47-bit user space), shared (128 segments of 16 pages shared by
#: 4 address spaces).
LAYOUTS = ("dense", "compact", "sparse", "shared")


def compare_pagetables(
    trace: Union[None, str, "os.PathLike[str]"] = None,
    *,
    layout: Optional[str] = None,
    machine: Any = None,
    config: Any = None,
    format: Optional[str] = None,
    max_refs: Optional[int] = None,
) -> PageTableComparison:
    """Every page-table structure over the same references.

    Args:
        trace: the trace whose references every structure looks up; or ``layout``, one
            of :data:`LAYOUTS`.
        machine: look up only the references this machine's TLB misses (a
            :class:`pagelab.Machine` or a preset name; or ``config``, a configuration as
            :func:`pagelab.simulate` takes it): one lookup per TLB reload, as the paper's
            §5.2 counts; the machine's own structure is as it configures it. Without
            either, every reference is a lookup.
        format: the trace format; None detects it.
        max_refs: stop after this many references of the trace.

    Returns:
        A :class:`pagelab.PageTableComparison`: ``source`` (what was looked up) and
        ``structures``, a row per structure (as ``to_frame()``): refs_mean, refs_p99,
        lines_mean (references and cache lines per lookup), footprint_bytes,
        reclaimable_bytes, in_use_bytes, maps, map_refs_mean, shared_map_refs,
        lookups_per_second and the table references to update one 2 MiB segment
        (``segment``: map, protect, promote, demote, unmap).

    Raises:
        ValueError: neither or both of trace and layout, an unknown layout or preset, a
            bad trace or configuration.
    """
    from . import _machine_choice, _trace_path

    if (trace is None) == (layout is None):
        raise ValueError("name a trace or a layout (one of them)")
    if layout is not None and layout not in LAYOUTS:
        raise ValueError(f"layout: {layout!r} is not one of {', '.join(LAYOUTS)}")
    text, preset, origin = _machine_choice(machine, config)
    result = _pagelab.compare_pagetables(
        trace=None if trace is None else _trace_path(trace),
        layout=layout,
        format=format,
        max_refs=max_refs,
        machine=preset,
        config_toml=text,
        origin=origin,
    )
    return PageTableComparison(result)
