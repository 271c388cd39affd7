"""Every command of the command line has its Python counterpart, which gives the same
results; and the compiled module hands Python values, never JSON text, across."""

import json
import os
import re
import subprocess

import pytest

import pagelab
from pagelab import _pagelab
from conftest import CLI, trace

# Each leaf command of `pagelab` and the function of the package that does the same.
COUNTERPARTS = {
    "trace info": pagelab.trace_info,
    "trace convert": pagelab.convert,
    "record": pagelab.record,
    "simulate": pagelab.simulate,
    "pagetables compare": pagelab.compare_pagetables,
    "analyze contiguity": pagelab.contiguity,
    "analyze reuse": pagelab.reuse_distance,
    "analyze benefit": pagelab.benefit,
    "compare translation": pagelab.compare_translation,
    "advise": pagelab.advise,
    "sweep": pagelab.sweep,
    "results export": pagelab.export_results,
    "report": pagelab.report,
    "repro": pagelab.repro,
    "config": pagelab.Machine.to_toml,
    "workloads": pagelab.workloads,
    "machines": pagelab.machines,
    "calibrate": pagelab.calibrate,
}


def cli(*args):
    run = subprocess.run([CLI, *args], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def leaf_commands(path=()):
    """The commands `pagelab --help` lists, each down to its subcommands."""
    text = cli(*path, "--help")
    section = re.search(r"^Commands:\n((?:  .*\n)+)", text, re.MULTILINE)
    if section is None:
        return [" ".join(path)]
    names = [line.split()[0] for line in section.group(1).splitlines() if not line.startswith("   ")]
    out = []
    for name in names:
        if name != "help":
            out += leaf_commands((*path, name))
    return out


def test_every_command_has_its_python_counterpart():
    commands = leaf_commands()
    # `repro list` and `repro PAPER`: one command with its listing.
    commands = sorted({c.split(" ")[0] if c.startswith("repro") else c for c in commands})
    assert commands == sorted(COUNTERPARTS), "a command without a counterpart, or one gone"
    assert all(callable(f) for f in COUNTERPARTS.values())
    assert pagelab.repro_papers()[0]["id"]


def test_page_tables_compare_alike(tmp_path):
    data = json.loads(cli("pagetables", "compare", "--layout", "sparse", "--machine", "skylake", "--json", "-"))
    result = pagelab.compare_pagetables(layout="sparse", machine="skylake")
    frame = result.to_frame()
    assert result.source == frame.attrs["source"] == data["source"]
    assert list(frame["structure"]) == [r["structure"] for r in data["structures"]]
    # Everything but the host's speed is deterministic.
    for column in ("refs_mean", "refs_p99", "lines_mean", "footprint_bytes", "map_refs_mean"):
        assert list(frame[column]) == [r[column] for r in data["structures"]], column
    with pytest.raises(ValueError, match="a trace or a layout"):
        pagelab.compare_pagetables()
    with pytest.raises(ValueError, match="layout"):
        pagelab.compare_pagetables(layout="dense-ish")


def test_every_result_is_a_record_with_its_dict_and_frame(tmp_path):
    """One shape for every result: a record with ``to_dict()`` (plain values) and
    ``to_frame()`` (pandas); a table's own function (``results``) is a DataFrame."""
    xz = trace("xz.plt")
    results = {
        "simulate": pagelab.simulate(xz),
        "trace_info": pagelab.trace_info(xz),
        "compare_pagetables": pagelab.compare_pagetables(layout="dense"),
        "contiguity": pagelab.contiguity(xz),
        "compare_translation": pagelab.compare_translation(xz, machine="skylake"),
        "compare_virtualized": pagelab.compare_virtualized(xz, guests=["radix"], hosts=["radix", "linear"]),
        "reuse_distance": pagelab.reuse_distance(xz),
        "benefit": pagelab.benefit(xz, sample=64),
        "sweep": pagelab.sweep({"traces": [xz], "machine": "skylake"}, tmp_path / "runs.db", quiet=True),
    }
    for name, result in results.items():
        whole = result.to_dict()
        assert isinstance(whole, dict) and whole, name
        json.dumps(whole)  # plain values only
        assert len(result.to_frame()) >= 1, name
    assert len(pagelab.results(tmp_path / "runs.db")) == 1


def test_convert_writes_what_the_command_line_writes(tmp_path):
    ours, theirs = tmp_path / "py.lackey", tmp_path / "cli.lackey"
    assert pagelab.convert(trace("xz.plt"), ours) == "lackey"
    cli("trace", "convert", "-q", trace("xz.plt"), str(theirs))
    assert ours.read_bytes() == theirs.read_bytes() and ours.stat().st_size > 0
    native = tmp_path / "back.plt"
    assert pagelab.convert(ours, native, workload="xz") == "native"
    assert pagelab.trace_info(native)["references"] == pagelab.trace_info(trace("xz.plt"))["references"]
    with pytest.raises(ValueError, match="ChampSim"):
        pagelab.convert(trace("xz.plt"), tmp_path / "x.champsim", to="champsim")
    with pytest.raises(ValueError, match="overwrite the input"):
        pagelab.convert(ours, ours)
    # A refused output is left as it was.
    assert ours.read_bytes() == theirs.read_bytes()


def test_several_traces_and_the_baseline_as_the_command_line(tmp_path):
    traces = [trace("xz.plt"), trace("sqlite.plt")]
    machine = pagelab.Machine.preset("skylake").with_overrides({"promotion.policy": "thp"})
    config = tmp_path / "m.toml"
    config.write_text(machine.to_toml())
    args = ["simulate", "-q", "--config", str(config), "--quantum", "5000", "--baseline", "--json", "-"]
    for t in traces:
        args += ["--trace", t]
    data = json.loads(cli(*args))
    report = pagelab.simulate(traces, machine, quantum=5000, baseline=True)
    assert report["counts"] == data["report"]["counts"]
    assert report.counts.address_space_switches > 0
    assert report.baseline == data["baseline"]
    assert report.baseline["base_walks"] > report.counts.walks
    assert pagelab.simulate(traces[0], machine).baseline is None


def test_a_synthetic_workload_as_the_command_line():
    data = json.loads(cli("simulate", "-q", "--synthetic", "column-walk:iterations=2", "--json", "-"))
    report = pagelab.simulate(synthetic="column-walk:iterations=2")
    assert report["counts"] == data["report"]["counts"] and report.counts.references > 0
    with pytest.raises(ValueError, match="unknown synthetic workload"):
        pagelab.simulate(synthetic="column-jog")
    with pytest.raises(ValueError, match="a trace or a synthetic workload"):
        pagelab.simulate()


def test_machines_and_workloads_list_what_the_command_line_lists(monkeypatch):
    data = json.loads(cli("machines", "--json"))
    assert pagelab.machines() == data
    assert pagelab.host_machine() == json.loads(cli("machines", "--host", "--json"))
    assert [m["name"] for m in data] == pagelab.PRESETS
    monkeypatch.setenv("PAGELAB_BIN", CLI)
    assert pagelab.workloads() == json.loads(cli("workloads", "--json"))
    assert pagelab.programs.command_line() == CLI


def test_record_and_advise_say_why_they_refuse(monkeypatch, tmp_path):
    monkeypatch.setenv("PAGELAB_BIN", CLI)
    with pytest.raises(ValueError, match="no such program"):
        pagelab.record(["/nonexistent/prog"], tmp_path / "t.plt")
    assert not (tmp_path / "t.plt").exists()
    with pytest.raises(ValueError, match="output"):
        pagelab.record(["true"])
    with pytest.raises(TypeError, match="list"):
        pagelab.advise("true")
    with pytest.raises(ValueError, match="workload"):
        pagelab.advise(workload="no-such-workload")
    monkeypatch.setenv("PAGELAB_BIN", str(tmp_path / "none"))
    with pytest.raises(FileNotFoundError, match="PAGELAB_BIN"):
        pagelab.workloads()


# Every function of the compiled module, called on a bundled input. What it returns
# must be a Python value, not JSON text; the three that return text return TOML or a
# name.
def calls(tmp_path):
    db = str(tmp_path / "runs.db")
    xz = trace("xz.plt")
    return {
        "simulate": lambda: _pagelab.simulate([xz]),
        "trace_info": lambda: _pagelab.trace_info(xz),
        "contiguity": lambda: _pagelab.contiguity(xz),
        "compare_translation": lambda: _pagelab.compare_translation(xz, machine="skylake"),
        "compare_virtualized": lambda: _pagelab.compare_virtualized(xz, guests=["radix"], hosts=["hashed"]),
        "reuse": lambda: _pagelab.reuse(xz),
        "benefit": lambda: _pagelab.benefit(xz, sample=64),
        "sweep": lambda: _pagelab.sweep({"traces": [xz], "machine": "skylake"}, db, quiet=True),
        "sweep_run": lambda: _pagelab.sweep_run(xz, pagelab.Machine().to_toml()),
        "results_table": lambda: _pagelab.results_table(db, whole=True),
        "flatten_report": lambda: _pagelab.flatten_report(_pagelab.simulate([xz])),
        "export_results": lambda: _pagelab.export_results(db, csv=str(tmp_path / "runs.csv")),
        "repro_papers": _pagelab.repro_papers,
        "repro_claims": lambda: _pagelab.repro_claims(db),
        "compare_pagetables": lambda: _pagelab.compare_pagetables(layout="dense"),
        "machines": _pagelab.machines,
        "host_machine": _pagelab.host_machine,
        "write_file": lambda: _pagelab.write_file(str(tmp_path / "w.txt"), b"x"),
    }


TEXT = {"default_config": "TOML", "dict_to_toml": "TOML", "convert_trace": "a format's name"}
# Called by other tests: repro runs whole papers (test_repro.py).
ELSEWHERE = {"repro"}


def test_the_compiled_module_returns_python_values_not_json_text(tmp_path):
    table = calls(tmp_path)
    functions = {n for n in dir(_pagelab) if callable(getattr(_pagelab, n)) and not n.startswith("_")
                 and n != "Machine"}
    assert functions == set(table) | set(TEXT) | ELSEWHERE
    for name in table:  # in order: the sweep makes the database the others read
        value = table[name]()
        assert not isinstance(value, (str, bytes)), name
        parts = value if isinstance(value, tuple) else (value,)
        assert all(not isinstance(p, str) for p in parts), name
    assert isinstance(_pagelab.simulate([trace("xz.plt")])["counts"]["by_kind"], list)
