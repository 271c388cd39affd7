"""pagelab: a laboratory for address translation.

Simulate a machine (TLB, page table, physical memory, cost model) over a memory trace
and get its report as a dict::

    import pagelab
    report = pagelab.simulate("run.lackey", {"tlb": {"kind": "set-associative", "sets": 1, "ways": 64}})
    report["levels"][0]["mpki"]

The simulation runs in Rust (``pagelab._pagelab``) without the GIL; this package turns
Python values into the configuration TOML the core reads, and the core's JSON back into
dicts. Errors in a trace, a configuration or a run raise ``ValueError`` with a one-line
message naming the file or field.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _pagelab
from ._pagelab import Machine
from .records import Counts, Level, Report, TraceInfo

__version__: str = _pagelab.__version__

#: The names pagelab accepts, from its core's lists: trace formats (``format=``), page
#: tables (``page_table.kind``), promotion policies (``promotion.policy``) and
#: replacement policies (``replacement`` of a TLB array, walk cache or cache level).
TRACE_FORMATS: List[str] = list(_pagelab.TRACE_FORMATS)
PAGE_TABLES: List[str] = list(_pagelab.PAGE_TABLES)
PROMOTION_POLICIES: List[str] = list(_pagelab.PROMOTION_POLICIES)
REPLACEMENT_POLICIES: List[str] = list(_pagelab.REPLACEMENT_POLICIES)
#: The machine presets ``machine=`` accepts (``pagelab machines`` describes them).
PRESETS: List[str] = list(_pagelab.PRESETS)

__all__ = [
    "Machine",
    "Trace",
    "Report",
    "TraceInfo",
    "Counts",
    "Level",
    "report",
    "simulate",
    "trace_info",
    "sweep",
    "SweepSummary",
    "results",
    "export_results",
    "repro",
    "repro_papers",
    "Reproduction",
    "default_config",
    "default_config_toml",
    "to_toml",
    "flatten_report",
    "to_frame",
    "__version__",
    "TRACE_FORMATS",
    "PAGE_TABLES",
    "PROMOTION_POLICIES",
    "REPLACEMENT_POLICIES",
    "contiguity",
    "compare_translation",
    "compare_virtualized",
    "VirtualizedComparison",
    "PRESETS",
    "reuse_distance",
    "ReuseDistance",
    "benefit",
    "Benefit",
    "compare_pagetables",
    "PageTableComparison",
    "Contiguity",
    "TranslationComparison",
    "convert",
    "machines",
    "host_machine",
    "calibrate",
    "record",
    "advise",
    "workloads",
]

PathLike = Union[str, "os.PathLike[str]"]
Config = Union[None, Mapping, str, "os.PathLike[str]", Machine]


# --- configurations -----------------------------------------------------------------

def to_toml(config: Mapping) -> str:
    """A configuration dict as TOML text, written by the core's TOML library (serde).

    ``config`` is a nested dict whose values are str, int, float, bool, lists of
    those, or dicts. ``None`` is refused, since TOML has no null: leave a key out to
    get its default.

    >>> print(to_toml({"seed": 1, "tlb": {"kind": "set-associative", "ways": 8}}))
    seed = 1
    <BLANKLINE>
    [tlb]
    kind = "set-associative"
    ways = 8
    <BLANKLINE>
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"a configuration must be a dict, not {type(config).__name__}")
    return _pagelab.dict_to_toml(dict(config))


def _looks_like_path(text: str) -> bool:
    # One line naming an existing file, or ending in .toml and not a `key = value` line.
    return "\n" not in text and (os.path.isfile(text) or ("=" not in text and text.endswith(".toml")))


def _config_text(config: Config, name: str = "<config>") -> Tuple[str, str]:
    """(TOML text, the name errors give it) of a configuration argument."""
    if config is None:
        return "", name
    if isinstance(config, Machine):
        return config.to_toml(), f"{name} ({config.name})"
    if isinstance(config, Mapping):
        return to_toml(config), name
    if isinstance(config, os.PathLike) or (isinstance(config, str) and _looks_like_path(config)):
        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), path
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise ValueError(f"{path}: cannot read: {reason}") from None
    if isinstance(config, str):
        return config, name
    raise TypeError(
        f"a configuration is a dict, TOML text or a path to a .toml file, not {type(config).__name__}"
    )


def _machine_choice(machine: Union[None, str, "Machine"], config: Config) -> Tuple[str, Optional[str], str]:
    """(TOML text, preset name, origin) of the ``machine=`` and ``config=`` arguments the
    analyses take: a :class:`Machine` or a preset name, or a configuration."""
    if machine is not None and config is not None:
        raise ValueError("give machine (a Machine or a preset name) or config, not both")
    if isinstance(machine, Machine):
        return machine.to_toml(), None, machine.name
    if machine is not None and not isinstance(machine, str):
        raise TypeError(f"machine is a Machine or a preset name, not {type(machine).__name__}")
    text, origin = _config_text(config)
    return text, machine, origin


def _trace_path(trace: Union[PathLike, "Trace"]) -> str:
    if isinstance(trace, Trace):
        return trace.path
    try:
        return os.fsdecode(os.fspath(trace))
    except TypeError:
        raise TypeError(f"a trace is a path (str or os.PathLike), not {type(trace).__name__}") from None


def _parse_toml(text: str) -> Optional[dict]:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text)
    try:
        import tomli  # type: ignore[import-not-found]
    except ImportError:
        return None
    return tomli.loads(text)


def default_config_toml() -> str:
    """The default machine configuration as TOML text, every field written out.

    A good starting point for a configuration file: edit it and pass its path, or the
    edited text, as ``config`` to :func:`simulate`.
    """
    return _pagelab.default_config()


def default_config() -> Union[dict, str]:
    """The default machine configuration as a dict, every field written out.

    Edit it and pass it back as ``config`` to :func:`simulate` or :func:`sweep`. TOML
    is parsed with ``tomllib`` (Python 3.11+) or the ``tomli`` package if it is
    installed; on older Pythons without ``tomli`` the TOML text is returned instead
    (see :func:`default_config_toml`).
    """
    text = default_config_toml()
    parsed = _parse_toml(text)
    return text if parsed is None else parsed


# --- running ------------------------------------------------------------------------


TraceLike = Union[PathLike, "Trace"]


def simulate(
    trace: Union[None, TraceLike, Sequence[TraceLike]] = None,
    config: Config = None,
    format: Optional[str] = None,
    *,
    synthetic: Optional[str] = None,
    quantum: int = 1_000_000,
    baseline: bool = False,
    warmup: Union[None, int, float, str] = None,
) -> Report:
    """Simulate a machine over a whole trace and return its report (``pagelab simulate``).

    Args:
        trace: path of the trace file, in one of :data:`TRACE_FORMATS` (text and
            binary record formats may be gz/xz/zst-compressed); or a list of them, run
            as processes of one machine, each in its own address space, switched every
            ``quantum`` references.
        config: the machine: None for every default; a dict (see
            :func:`default_config` for its shape); TOML text; or the path of a
            ``.toml`` file (a ``str`` is taken as a path when it is one line that names
            an existing file, or ends in ``.toml`` and has no ``=``).
        format: the trace format, one of :data:`TRACE_FORMATS`; None detects it
            from the file.
        synthetic: a built-in synthetic workload instead of (or after) the traces, e.g.
            ``"column-walk:iterations=64"`` (the 4096-page microbenchmark of Fang et
            al., SIGMETRICS 2000, §4.1).
        baseline: also run the machine with base pages only (promotion policy none,
            all else the same): the report's ``baseline`` gives the speedup, the TLB
            misses removed and the memory bloat.
        warmup: measure the steady state: the first references (an ``int``, or a
            share of the input: ``0.1`` or ``"10%"``) warm the TLBs, caches and page
            table up and are left out of every count and cost; the report's
            ``warmup`` gives what they counted and cost (their cold page faults,
            eager paging) apart.

    Returns:
        The report: ``machine`` (the configuration's name), ``counts`` (references,
        ``by_kind`` [load, store, fetch, modify], translations, page_crossing,
        walks, walk_refs, walk_lines, page_faults), ``levels`` (per TLB level: name,
        entries, hits, misses, evictions, miss_ratio, mpki, hit_cycles, by_size),
        ``walk_caches``,
        walk_refs_per_walk, walk_lines_per_walk, page_table_bytes, frames_used,
        ``cycles`` and translation_overhead_percent. :func:`to_frame` tabulates reports.

    Raises:
        ValueError: the trace cannot be read or is malformed, the configuration has an
            unknown field or a bad value, or the run failed (e.g. out of memory); the
            message names the file, line or field.
        TypeError: ``config`` holds a value that has no TOML form.
    """
    text, origin = _config_text(config)
    if trace is None:
        traces: List[TraceLike] = []
    elif isinstance(trace, (str, bytes, os.PathLike, Trace)):
        traces = [trace]
    else:
        traces = list(trace)
    if not traces and synthetic is None:
        raise ValueError("name a trace or a synthetic workload")
    if format is None and traces and isinstance(traces[0], Trace):
        format = traces[0].format
    raw = _pagelab.simulate(
        [_trace_path(t) for t in traces], text, format, origin,
        synthetic=synthetic, quantum=quantum, baseline=baseline, warmup=_warmup_text(warmup),
    )
    return Report(raw)


def _warmup_text(warmup: Union[None, int, float, str]) -> Optional[str]:
    """A warm-up as the command line's ``--warmup`` takes it."""
    if warmup is None:
        return None
    if isinstance(warmup, bool) or not isinstance(warmup, (int, float, str)):
        raise TypeError(f"warmup: expected a number of references, a share of the input or a text such as '10%', not {warmup!r}")
    return str(warmup)


def trace_info(trace: Union[PathLike, "Trace"], format: Optional[str] = None, categories=None) -> TraceInfo:
    """Read a whole trace and say what it holds.

    Returns a dict with ``references``, ``by_kind`` (load/store/fetch/modify → count),
    ``events`` (by type), ``footprint_pages`` (distinct pages by page size: "4K", "2M",
    "1G"), ``page_crossing``, ``min_address``/``max_address`` (None for an empty trace),
    ``address_spaces``, ``instructions`` (its fetches), ``categories`` (references
    and 4K pages per data category: static, small-dynamic, large-dynamic, stack,
    code, other, with a ``note`` when the trace lacks the events to tell them), ``format``
    (the format read) and ``metadata`` (what the trace says about itself).
    ``categories`` adds user-defined categories, as :func:`benefit` takes them (a TOML
    file's path or a list of rule dicts); ``categories["callsites"]`` lists the
    allocation call sites with the most bytes, for rules to name (each with its
    ``name``, "fn (file:line) < caller (file:line) …", where the recording names it).

    Raises ValueError if the trace cannot be read or is malformed.
    """
    from .benefit import _categories_toml

    if isinstance(trace, Trace) and format is None:
        format = trace.format
    return TraceInfo(_pagelab.trace_info(_trace_path(trace), format, _categories_toml(categories)))


# --- tables -------------------------------------------------------------------------


def flatten_report(report: Mapping) -> Dict[str, Any]:
    """One report as a flat dict of columns (the rows of :func:`to_frame`, and the
    columns of :func:`results` and ``pagelab results export``), made by the core, so
    every table names a number alike.

    The headline comes first: ``machine``, ``references``, ``walks``, ``page_faults``,
    ``miss_ratio`` and ``mpki`` (those of the last TLB level, whose misses walk),
    ``translation_overhead_percent``, ``tlb_overhead_percent``, ``cycles_total``,
    ``walk_refs``; then the rest by name. Counts lose their ``counts`` prefix;
    ``by_kind`` becomes ``loads``, ``stores``, ``fetches``, ``modifies``; nested dicts
    join their keys with ``_`` (``cycles_walks``); each TLB level's fields are
    prefixed with its name (``stlb_hits``, ``stlb_misses``, ``stlb_miss_ratio``,
    ``stlb_mpki``), its counts by page size with the size too (``stlb_2M_misses``);
    each walk cache's with its table level (``walk_cache_l2_hits``). The policy's own
    counts become ``policy_<name>`` (spaces as ``_``); of the free memory over time,
    the last sample gives ``free_frames`` and ``free_usable_<size>``; each cache
    level's fields are prefixed with ``cache_<name>`` (``cache_l1d_misses_data``), the
    caches' totals with ``cache``; the pager's report with ``paging``
    (``paging_daemon_wakes``).
    """
    return _pagelab.flatten_report(dict(report))


def to_frame(reports: Union[Mapping, Sequence[Mapping]]):
    """Reports (from :func:`simulate`) as a ``pandas.DataFrame``.

    One row per report, columns as :func:`flatten_report` names them, among them
    ``machine``, ``references``, ``tlb_hits``, ``tlb_misses``, ``mpki``, ``walks``,
    ``walk_refs``, ``page_faults`` and ``translation_overhead_percent``. A single
    report gives a one-row frame. Needs pandas (``pip install pandas``).
    """
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError(
            "pagelab.to_frame needs pandas, which is not installed: pip install pandas "
            "(or use pagelab.flatten_report for plain dicts)"
        ) from e
    if isinstance(reports, Mapping):
        reports = [reports]
    return pd.DataFrame([flatten_report(r) for r in reports])


def convert(
    input: Union[PathLike, "Trace"],
    output: PathLike,
    *,
    to: Optional[str] = None,
    format: Optional[str] = None,
    workload: Optional[str] = None,
    chunk_refs: Optional[int] = None,
    level: Optional[int] = None,
    compress_literals: bool = False,
    salvage: bool = False,
) -> str:
    """Convert a trace between formats (``pagelab trace convert``), the output written
    whole or not at all.

    Args:
        input: the trace to read, in one of :data:`TRACE_FORMATS`; ``format`` names its
            format (None detects it).
        output: the file to write.
        to: native, lackey, addrs or u64; None takes it from the output's extension,
            else native.
        workload: what was traced, recorded in the native header.
        chunk_refs, level, compress_literals: the native format's references per
            chunk, zstd level (-7 … 19) and Huffman-coded literals.
        salvage: read a native trace cut short up to its last complete chunk, with a
            warning, instead of failing.

    Returns:
        The format written.

    Raises:
        ValueError: a bad input or option, or an output that cannot be written.
    """
    if isinstance(input, Trace) and format is None:
        format = input.format
    written: str = _pagelab.convert_trace(
        _trace_path(input), os.fspath(output), to=to, from_format=format, workload=workload,
        chunk_refs=chunk_refs, level=level, compress_literals=compress_literals, salvage=salvage,
    )
    return written


def machines() -> List[Dict[str, Any]]:
    """The machine presets (``pagelab machines``): a dict per preset with its ``name``,
    ``description`` (where its numbers come from), ``levels`` (a line per TLB level)
    and ``config`` (the whole configuration, as :meth:`Machine.to_dict` gives it)."""
    presets: List[Dict[str, Any]] = _pagelab.machines()
    return presets


def host_machine() -> Dict[str, Any]:
    """This machine as ``Machine.preset("host")`` builds it (``pagelab machines --host``):
    ``host`` (what CPUID and Linux say: vendor, brand, TLBs each with its ``source``,
    caches, huge page sizes), ``notes`` (what comes from the nearest preset instead),
    ``levels`` (a line per TLB level) and ``config``."""
    described: Dict[str, Any] = _pagelab.host_machine()
    return described


# Range translations (pagelab.ranges), imported last: the module uses the helpers above.
from .ranges import compare_translation, compare_virtualized, contiguity  # noqa: E402
from .reuse import ReuseDistance, reuse_distance  # noqa: E402
from .benefit import Benefit, benefit  # noqa: E402
from .sweep import SweepSummary, export_results, results, sweep  # noqa: E402
from .trace import Trace  # noqa: E402
from .report import report  # noqa: E402
from .repro import Reproduction, repro, repro_papers  # noqa: E402
from .pagetables import compare_pagetables  # noqa: E402
from .comparisons import (  # noqa: E402
    Contiguity,
    PageTableComparison,
    TranslationComparison,
    VirtualizedComparison,
)
from .programs import advise, calibrate, record, workloads  # noqa: E402
