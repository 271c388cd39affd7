"""Hostile Python values: each is refused with an exception naming where it is, and
the interpreter lives on (the command-line cases are in
crates/pagelab-cli/tests/hostile.rs)."""

import pytest

import pagelab


def test_a_list_that_contains_itself_is_refused():
    loop = []
    loop.append(loop)
    with pytest.raises(TypeError, match=r"tlb\.page_sizes\[0\].*contains itself"):
        pagelab.Machine.from_dict({"tlb": {"kind": "set-associative", "page_sizes": loop}})


def test_a_dict_nested_too_deep_is_refused():
    deep: dict = {}
    inner = deep
    for _ in range(100_000):
        inner["a"] = {}
        inner = inner["a"]
    with pytest.raises(TypeError, match="nested more than 64"):
        pagelab.Machine.from_dict(deep)
    with pytest.raises(TypeError, match="nested more than 64"):
        pagelab.Machine.preset("skylake").with_overrides({"cost.walk_ref_cycles": deep})


def test_a_sweep_whose_grid_contains_itself_is_refused(tmp_path):
    loop: list = [4]
    loop.append(loop)
    spec = {"traces": ["synthetic:column-walk:iterations=1"], "grid": {"tlb.ways": loop}}
    with pytest.raises(TypeError, match="contains itself"):
        pagelab.sweep(spec, str(tmp_path / "runs.db"), quiet=True)
    assert not (tmp_path / "runs.db").exists()


def test_a_sweep_over_its_run_limit_is_refused_with_the_count(tmp_path):
    grid = {f"cost.key{k}": list(range(10)) for k in range(7)}
    spec = {"traces": ["synthetic:column-walk:iterations=1"], "grid": grid}
    with pytest.raises(ValueError, match="10000000 runs"):
        pagelab.sweep(spec, str(tmp_path / "runs.db"), quiet=True)
    assert not (tmp_path / "runs.db").exists()
