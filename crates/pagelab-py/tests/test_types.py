"""The typed API: Machine through serde, typed results, the stubs of the compiled half
against the module and checked by mypy, and the docstrings' examples run."""

import ast
import os
import subprocess
import sys

import pytest

import pagelab
from pagelab import _pagelab
from conftest import ROOT, trace

PACKAGE = os.path.join(ROOT, "crates", "pagelab-py", "python", "pagelab")


def test_a_machine_from_a_dict_is_the_machine_from_its_toml():
    m = pagelab.Machine.preset("skylake")
    assert pagelab.Machine.from_dict(m.to_dict()) == m
    assert pagelab.Machine.from_toml(m.to_toml()) == m
    assert pagelab.Machine() == pagelab.Machine.from_dict({})
    assert repr(m) == 'Machine("skylake")'


def test_overrides_change_what_they_name_and_nothing_else():
    base = pagelab.Machine.preset("skylake")
    m = base.with_overrides({"tlb.levels.stlb.ways": 16, "cost.walk_ref_cycles": 12.5})
    d, b = m.to_dict(), base.to_dict()
    stlb = [lvl for lvl in d["tlb"]["levels"] if lvl["name"] == "stlb"][0]
    assert stlb["arrays"][0]["ways"] == 16 and d["cost"]["walk_ref_cycles"] == 12.5
    # The machine keeps a record of what was set, and nothing else differs.
    assert d.pop("settings") == {"tlb.levels.stlb.ways": 16, "cost.walk_ref_cycles": 12.5}
    d["tlb"], b["tlb"], d["cost"], b["cost"] = None, None, None, None
    assert d == b
    with pytest.raises(ValueError, match="wayz"):
        base.with_overrides({"tlb.levels.stlb.wayz": 1})
    with pytest.raises(TypeError, match="keys are dotted strings"):
        base.with_overrides({1: 2})
    with pytest.raises(TypeError, match="tlb.ways"):
        base.with_overrides({"tlb.ways": None})


def test_dicts_reach_the_core_through_serde():
    assert pagelab.to_toml({"seed": 1, "tlb": {"ways": 4}}) == 'seed = 1\n\n[tlb]\nways = 4\n'
    with pytest.raises(TypeError, match="config"):
        pagelab.to_toml({"seed": None})
    with pytest.raises(TypeError):
        pagelab.to_toml({"seed": 1 << 70})
    with pytest.raises(ValueError, match="wayz"):
        pagelab.Machine.from_dict({"tlb": {"kind": "set-associative", "wayz": 2}})


def test_results_are_typed_and_still_mappings():
    t = pagelab.Trace(trace("xz.plt"))
    r = t.simulate("skylake")
    assert isinstance(r, pagelab.Report)
    assert r.counts.walks == r["counts"]["walks"] > 0
    assert [lvl.name for lvl in r.levels] == [lvl["name"] for lvl in r["levels"]]
    assert r.to_dict() == pagelab.simulate(trace("xz.plt"), pagelab.Machine.preset("skylake")).to_dict()
    # Every count the core reports is a field of Counts, and of Level.
    assert set(r["counts"]) == {f for f in pagelab.Counts.__dataclass_fields__}
    assert set(r["levels"][0]) == {f for f in pagelab.Level.__dataclass_fields__}
    assert r.to_frame().loc[0, "walks"] == r.counts.walks
    info = t.info()
    assert info.references == r.counts.references and info.format == "native"
    assert info.to_frame().loc[0, "references"] == info.references


def test_the_stubs_name_what_the_module_has():
    tree = ast.parse(open(os.path.join(PACKAGE, "_pagelab.pyi")).read())
    stubbed = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            stubbed.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            stubbed.add(node.target.id)
    public = {n for n in dir(_pagelab) if not n.startswith("_")} | {"__version__"}
    assert stubbed == public


def test_mypy_checks_the_package_and_a_typed_use():
    pytest.importorskip("mypy", reason="mypy is not installed (pip install mypy)")
    for target in (["-p", "pagelab"], [os.path.join(os.path.dirname(__file__), "typed_use.py")]):
        run = subprocess.run(
            [sys.executable, "-m", "mypy", "--no-incremental", "--ignore-missing-imports", *target],
            capture_output=True, text=True, cwd=ROOT)
        assert run.returncode == 0, run.stdout + run.stderr


def test_the_docstrings_examples_run():
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--doctest-modules", "-p", "no:cacheprovider",
         os.path.join(PACKAGE, "__init__.py"), os.path.join(PACKAGE, "records.py"),
         os.path.join(PACKAGE, "trace.py"), os.path.join(PACKAGE, "comparisons.py")],
        capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0 and " passed" in run.stdout, run.stdout + run.stderr
