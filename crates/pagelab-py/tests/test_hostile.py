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


@pytest.mark.parametrize(
    "override, says",
    [
        ({"cost.walk_ref_cycles": float("nan")}, "cost.walk_ref_cycles"),
        ({"cost.page_fault_cycles": float("inf")}, "cost.page_fault_cycles"),
        ({"cost.walk_ref_cycles": -3.0}, "cost.walk_ref_cycles"),
        ({"tlb.levels.stlb.sets": 1 << 56}, "memory"),
    ],
)
def test_a_machine_is_checked_where_it_is_made(override, says):
    # Refused by with_overrides and by from_dict, not at the first simulate.
    sky = pagelab.Machine.preset("skylake")
    with pytest.raises(ValueError, match=says):
        sky.with_overrides(override)
    (key, value), = override.items()
    top, _, field = key.partition(".")
    if top == "cost":
        with pytest.raises(ValueError, match=field):
            pagelab.Machine.from_dict({"variant_of": "skylake", "cost": {field: value}})


def test_a_string_where_a_list_is_expected_is_refused(tmp_path):
    db = tmp_path / "runs.db"
    for spec, says in [
        ({"traces": "data/traces/xz.plt"}, r"traces: .*sequence"),
        ({"traces": ["synthetic:column-walk:iterations=1"], "grid": {"tlb.ways": "48"}}, r"grid.tlb.ways: .*sequence"),
    ]:
        with pytest.raises(TypeError, match=says):
            pagelab.sweep(spec, str(db), quiet=True)
        assert not db.exists()


@pytest.mark.parametrize("warmup, error, says", [
    (True, TypeError, "warmup"),
    ([3], TypeError, "warmup"),
    ("lots", ValueError, "warm-up"),
    (1.5, ValueError, "warm-up"),
    (6, ValueError, "warm-up of 6 references leaves none"),
])
def test_a_bad_warmup_is_refused_naming_it(tmp_path, warmup, error, says):
    trace = tmp_path / "t.addrs"
    trace.write_text("".join(f"R {0x1000 * (i + 1):#x} 8\n" for i in range(6)))
    with pytest.raises(error, match=says):
        pagelab.simulate(trace, warmup=warmup)


@pytest.mark.parametrize("coalescing", ["no", 0, None])
def test_coalescing_that_is_not_a_bool_is_refused(coalescing):
    # "no" would be true: refused before any run rather than taken as yes.
    with pytest.raises(TypeError, match="coalescing is True or False"):
        pagelab.compare_translation("data/traces/sqlite-rec.plt", coalescing=coalescing)


def test_a_sweep_asked_to_run_apart_by_a_string_is_refused(tmp_path):
    # "no" would be true: a flag that is not a bool is refused, not taken for one.
    spec = {"traces": ["synthetic:column-walk:iterations=1"], "grid": {"tlb.ways": [2, 4]}}
    with pytest.raises(TypeError, match="separate: True or False, not str"):
        pagelab.sweep(spec, str(tmp_path / "runs.db"), separate="no", quiet=True)
    assert not (tmp_path / "runs.db").exists()
