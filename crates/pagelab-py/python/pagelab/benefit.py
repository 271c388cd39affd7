"""The page-size benefit analysis (Cașcaval, Duesterwald, Sweeney and Wisniewski,
"Multiple Page Size Modeling and Optimization", PACT 2005, §3-4) from Python.

:func:`benefit` is ``pagelab analyze benefit``: for each mapping of data categories to
large pages, the TLB misses, page faults and MissCycles predicted from reuse distances,
ranked by percentage of the maximal benefit (PMB); the significance test; the mapping
the agent would choose within a budget; with ``simulate=True`` the simulator's ranking
beside. Runs in Rust without the GIL; the tables are pandas DataFrames.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Union

from . import _pagelab
from ._frames import pandas

__all__ = ["benefit", "Benefit"]


class Benefit(NamedTuple):
    """What :func:`benefit` returns.

    ``table``: a DataFrame, one row per mapping in the order analysed ("all small"
    first): ``mapping``, ``page_size``, ``categories`` (on large pages), ``all``,
    ``translations``, ``tlb_misses``, ``page_faults``, ``large_pages``,
    ``bloat_bytes`` (the memory its large pages take beyond the 4K pages touched in
    them), ``miss_cycles``, ``benefit_cycles``, ``pmb`` (the percentage of the maximal
    benefit: the MissCycles saved over all small, as a share of the best mapping's) and
    ``rank`` (None when no mapping gains).
    ``simulated``: with ``simulate=True``, a DataFrame of the same mappings run through
    the simulator (``walks``, ``page_faults``, ``large_faults``, ``miss_cycles``,
    ``benefit_cycles``, ``pmb``, ``rank``, ``predicted_pmb``, ``predicted_rank``);
    else None.
    ``ranking_error``: the mean |predicted − simulated PMB| in points, or None.
    ``choice``: the agent's mapping (dict: ``mapping``, ``page_size``,
    ``categories``, ``large_pages``, ``benefit_cycles``, ``additive``, ``why``).
    ``significance``: ``seconds``, ``estimated``, ``tlb_misses_per_second``,
    ``page_faults_per_second``, ``passes``.
    ``result``: everything else the analysis says (machine, TLBs, costs, categories,
    sampling and the Hellinger affinity, notes), as a dict.
    """

    table: Any
    simulated: Any
    ranking_error: Optional[float]
    choice: Dict[str, Any]
    significance: Dict[str, Any]
    result: Dict[str, Any]

    def to_frame(self) -> Any:
        """The mappings, ranked (``table``)."""
        return self.table

    def to_dict(self) -> Dict[str, Any]:
        """Every field, tables as lists of row dicts."""
        return {
            "table": self.table.to_dict("records"),
            "simulated": None if self.simulated is None else self.simulated.to_dict("records"),
            "ranking_error": self.ranking_error,
            "choice": self.choice,
            "significance": self.significance,
            "result": self.result,
        }


def _categories_toml(categories) -> str:
    if categories is None:
        return ""
    if isinstance(categories, (str, os.PathLike)):
        with open(categories, encoding="utf-8") as f:
            return f.read()
    from . import to_toml

    rules: List[Mapping] = list(categories)
    for r in rules:
        if not isinstance(r, Mapping):
            raise TypeError(f"categories: each rule must be a dict, not {type(r).__name__}")
    return to_toml({"category": rules})


def benefit(
    trace,
    machine=None,
    config=None,
    page_sizes: Sequence[str] = (),
    budget: Optional[Union[int, str]] = None,
    tlb_miss_cycles: Optional[float] = None,
    page_fault_cycles: Optional[float] = None,
    page_table_entries: Optional[int] = None,
    seconds: Optional[float] = None,
    clock_ghz: float = 3.0,
    sample: int = 1,
    categories=None,
    simulate: bool = False,
    format: Optional[str] = None,
) -> Benefit:
    """The benefit of large pages for each data category of a trace.

    Args:
        trace: path of the trace.
        machine: a :class:`pagelab.Machine` or a preset name (``pagelab.PRESETS``); or
            ``config``, a configuration dict, TOML text or file; sandy-bridge when
            neither is given.
        page_sizes: the large sizes to analyse, e.g. ``("2M",)``; default every one
            the machine has.
        budget: large pages available to the agent: a count (``512``) or bytes
            (``"1G"``).
        tlb_miss_cycles, page_fault_cycles: C_TLBmiss and C_PF; default from the
            machine.
        page_table_entries: the page table's size for H_PF; default unlimited.
        seconds: the program's run time with small pages (significance test);
            default estimated at ``clock_ghz``.
        sample: analyse one data reference in this many (§5.1).
        categories: user-defined categories: a TOML file's path, or a list of dicts
            such as ``{"name": "table", "callsites": ["0x…"]}``,
            ``{"name": "tables", "functions": ["make_table"]}`` or
            ``{"name": "big", "min_size": "64M"}``.
        simulate: also run every mapping through the simulator.
        format: the trace format; None detects it.

    Raises:
        ValueError: a bad trace, machine, option or rule (the message names it).
    """
    pd = pandas("pagelab.benefit")
    from . import _machine_choice, _trace_path

    if isinstance(page_sizes, str):
        page_sizes = [page_sizes]
    config_toml, preset, origin = _machine_choice(machine, config)
    result: Dict[str, Any] = _pagelab.benefit(
        _trace_path(trace),
        config_toml=config_toml,
        machine=preset,
        origin=origin,
        format=format,
        page_sizes=[str(s) for s in page_sizes],
        budget=None if budget is None else str(budget),
        tlb_miss_cycles=tlb_miss_cycles,
        page_fault_cycles=page_fault_cycles,
        page_table_entries=page_table_entries,
        seconds=seconds,
        clock_ghz=clock_ghz,
        sample=sample,
        categories_toml=_categories_toml(categories),
        simulate=simulate,
    )
    table = pd.DataFrame(result.pop("rows"))
    validation = result.pop("validation")
    simulated = pd.DataFrame(validation["rows"]) if validation else None
    return Benefit(
        table=table,
        simulated=simulated,
        ranking_error=validation["ranking_error"] if validation else None,
        choice=result.pop("choice"),
        significance=result.pop("significance"),
        result=result,
    )
