"""A typed use of pagelab's public API, for mypy (tests/test_types.py): it must check
clean against the package's annotations and the compiled half's stubs. Not run."""

from typing import Dict, List

import pagelab


def use() -> None:
    machine: pagelab.Machine = pagelab.Machine.preset("skylake").with_overrides({"tlb.levels.stlb.ways": 16})
    same: pagelab.Machine = pagelab.Machine.from_dict(machine.to_dict())
    assert same == machine and machine.name == "skylake"
    trace = pagelab.Trace("data/traces/xz.plt")
    report: pagelab.Report = trace.simulate(machine)
    walks: int = report.counts.walks
    ratios: List[float] = [level.miss_ratio for level in report.levels]
    cycles: Dict[str, float] = report.cycles
    info: pagelab.TraceInfo = trace.info()
    pages: Dict[str, int] = info.footprint_pages
    summary: pagelab.SweepSummary = pagelab.sweep({"traces": [trace.path], "grid": {"tlb.ways": [2, 4]}}, "/tmp/x.db")
    ran: int = summary.ran
    path: str = pagelab.report("/tmp/x.db", "/tmp/x.html")
    text: str = pagelab.to_toml({"tlb": {"ways": 4}})
    print(walks, ratios, cycles, pages, ran, path, text)
