"""Sweeps from Python (pagelab.sweep, pagelab.results, pagelab.export_results): the
same engine and database as `pagelab sweep`, resumable, and the same runs on a local
Ray instance as on the local cores."""

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

import pagelab
from conftest import CLI, trace

GRID = {"tlb.levels.stlb.ways": [4, 8, 12], "tlb.levels.dtlb.replacement": ["lru", "fifo"]}


def spec():
    return {
        "traces": [trace("chess-large-rec.plt"), trace("gups-rec.plt")],
        "machine": "skylake",
        "grid": GRID,
        "zip": {"cost.walk_ref_cycles": [8.0, 12.0]},
    }


def runs(db):
    """The runs of a database without the time each took, in a fixed order."""
    frame = pagelab.results(db).drop(columns=["seconds"])
    return frame.sort_values("key").reset_index(drop=True)


def test_a_sweep_is_committed_and_not_run_twice(tmp_path):
    db = tmp_path / "r.db"
    first = pagelab.sweep(spec(), db, jobs=2, quiet=True)
    assert (first.total, first.present, first.ran, first.failed) == (24, 0, 24, 0)
    again = pagelab.sweep(spec(), db, quiet=True)
    assert (again.present, again.ran) == (24, 0)
    frame = runs(db)
    assert len(frame) == 24 and set(frame["status"]) == {"ok"}
    assert set(frame["tlb.levels.stlb.ways"]) == {4, 8, 12}


def test_each_run_is_simulate_on_its_stored_configuration(tmp_path):
    db = tmp_path / "r.db"
    pagelab.sweep({"traces": [trace("gups-rec.plt")], "machine": "skylake",
                   "grid": {"tlb.levels.stlb.ways": [4, 16]}}, db, quiet=True)
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT trace, config, report FROM runs").fetchall()
    assert len(stored) == 2
    for path, config, report in stored:
        assert "ways = 4" in config or "ways = 16" in config
        assert json.loads(report) == pagelab.simulate(path, config)


def test_the_file_and_the_dict_and_the_cli_agree(tmp_path):
    file = tmp_path / "sweep.toml"
    file.write_text(
        f'traces = ["{trace("gups-rec.plt")}"]\nmachine = "skylake"\n'
        '[grid]\n"tlb.levels.stlb.ways" = [4, 8]\n'
    )
    pagelab.sweep(file, tmp_path / "py.db", quiet=True)
    subprocess.run([CLI, "sweep", str(file), "-o", str(tmp_path / "cli.db"), "--quiet"], check=True)
    assert runs(tmp_path / "py.db").equals(runs(tmp_path / "cli.db"))


def test_repeats_run_once_and_failures_are_retried(tmp_path):
    db = tmp_path / "r.db"
    twice = {"traces": [trace("gups-rec.plt"), trace("gups-rec.plt")], "grid": {"tlb.ways": [2, 4]}}
    s = pagelab.sweep(twice, db, quiet=True)
    assert (s.total, s.duplicates, s.ran) == (4, 2, 2)
    failing = {"traces": [trace("gups-rec.plt")], "grid": {"frames.memory": ["1M"]}}
    first = pagelab.sweep(failing, db, quiet=True)
    again = pagelab.sweep(failing, db, quiet=True)
    assert (first.failed, again.ran, again.failed) == (1, 1, 1)
    assert len(pagelab.results(db)) == 3
    with pytest.raises(ValueError, match="results database itself"):
        pagelab.export_results(db, csv=db)
    with pytest.raises(ValueError, match="results database itself"):
        pagelab.report(db, db)


def test_exports_are_the_table(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    db = tmp_path / "r.db"
    pagelab.sweep({"traces": [trace("gups-rec.plt")], "grid": {"tlb.ways": [2, 4]}}, db, quiet=True)
    pagelab.export_results(db, csv=tmp_path / "r.csv", parquet=tmp_path / "r.parquet")
    table = pagelab.results(db)
    parquet = pd.read_parquet(tmp_path / "r.parquet")
    assert list(parquet.columns) == list(table.columns)
    assert parquet["walks"].tolist() == table["walks"].tolist()
    assert parquet["tlb.ways"].dtype.kind == "i"
    assert pd.read_csv(tmp_path / "r.csv")["walks"].tolist() == table["walks"].tolist()


def test_the_stlb_study_needs_nothing_but_the_results(tmp_path):
    """STLB ways 4, 8, 12, 16 over two traces, then miss ratio against ways: every
    level's numbers are columns of pagelab.results, the ways sort as numbers, and each
    row is what simulate gives for the same setting."""
    pd = pytest.importorskip("pandas")
    db = tmp_path / "r.db"
    traces = [trace("xz.plt"), trace("sqlite.plt")]
    ways = [16, 4, 12, 8]
    pagelab.sweep({"traces": traces, "machine": "skylake", "grid": {"tlb.levels.stlb.ways": ways}},
                  db, quiet=True)
    runs = pagelab.results(db)
    for column in ("stlb_hits", "stlb_misses", "stlb_miss_ratio", "stlb_mpki", "dtlb_4K_misses",
                   "walk_cache_l2_hits", "cycles_walks", "loads", "miss_ratio", "mpki"):
        assert column in runs.columns, column
    for trace_runs in runs.groupby("trace")["tlb.levels.stlb.ways"]:
        assert trace_runs[1].tolist() == [4, 8, 12, 16]
    curve = runs.pivot_table("stlb_miss_ratio", "tlb.levels.stlb.ways", "trace")
    assert curve.shape == (4, 2) and list(curve.index) == [4, 8, 12, 16]
    assert (runs["miss_ratio"] == runs["stlb_miss_ratio"]).all()  # the last level's
    for _, row in runs.iterrows():
        machine = pagelab.Machine.preset("skylake").with_overrides(
            {"tlb.levels.stlb.ways": int(row["tlb.levels.stlb.ways"])})
        report = pagelab.simulate(row["trace"], machine)
        stlb = report.levels["stlb"]
        assert (row["stlb_misses"], row["stlb_miss_ratio"], row["stlb_mpki"]) == (
            stlb.misses, stlb.miss_ratio, stlb.mpki)
        # The setting is in the report's own record too.
        assert pagelab.to_frame(report)["tlb.levels.stlb.ways"].tolist() == [row["tlb.levels.stlb.ways"]]
    plt = pytest.importorskip("matplotlib.pyplot")
    axes = curve.plot(marker="o")
    assert len(axes.get_lines()) == 2
    plt.close("all")


def test_a_trace_is_named_in_the_results_as_it_was_given(tmp_path, monkeypatch):
    monkeypatch.chdir(os.path.dirname(trace("xz.plt")))
    db = tmp_path / "r.db"
    pagelab.sweep({"traces": ["xz.plt"], "machine": "skylake", "grid": {"tlb.levels.stlb.ways": [4, 8]}}, db,
                  quiet=True)
    assert pagelab.results(db)["trace"].tolist() == ["xz.plt", "xz.plt"]


def test_stlb_geometries_in_one_pass_are_the_separate_runs(tmp_path):
    geometries = {
        "traces": [trace("gups-rec.plt"), trace("xz.plt")],
        "machine": "skylake",
        "grid": {"tlb.levels.stlb.sets": [32, 96], "tlb.levels.stlb.ways": [2, 12]},
        "zip": {"tlb.levels.stlb.replacement": ["lru"], "walk_caches": [[]], "cache.levels": [[]]},
    }
    pagelab.sweep(geometries, tmp_path / "one.db", quiet=True)
    pagelab.sweep(geometries, tmp_path / "apart.db", separate=True, quiet=True)
    one, apart = runs(tmp_path / "one.db"), runs(tmp_path / "apart.db")
    assert len(one) == 8
    assert pagelab.sweep(geometries, tmp_path / "again.db", quiet=True).one_pass == 8
    assert one.equals(apart)
    # One pass per trace shares its time among its runs; runs apart each time their own.
    seconds = pagelab.results(tmp_path / "one.db").groupby("trace")["seconds"].nunique()
    assert list(seconds) == [1, 1]
    with pytest.raises(ValueError, match="separate or ray"):
        pagelab.sweep(geometries, tmp_path / "x.db", separate=True, ray="auto", quiet=True)


def test_bad_sweeps_are_refused_before_any_run(tmp_path):
    db = tmp_path / "r.db"
    for bad, says in [
        ({"traces": [trace("gups-rec.plt")], "grid": {"tlb.wayz": [1]}}, "wayz"),
        ({"traces": [str(tmp_path / "nope.plt")]}, "no such file"),
        ({"traces": [trace("gups-rec.plt")], "grid": {"tlb.ways": []}}, "empty axis"),
        ({"traces": [trace("gups-rec.plt")], "machines": "skylake"}, "machines"),
    ]:
        with pytest.raises(ValueError, match=says):
            pagelab.sweep(bad, db, quiet=True)
    assert not db.exists()
    with pytest.raises(ValueError, match="no such results database"):
        pagelab.results(tmp_path / "none.db")


def _ray_cli():
    ray = shutil.which("ray", path=os.path.dirname(sys.executable))
    try:
        import ray as _  # noqa: F401
    except ImportError:
        return None
    return ray


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A local Ray instance started as a user would (`ray start --head`), stopped after."""
    ray = _ray_cli()
    if ray is None:
        pytest.skip("Ray is not installed (pip install 'ray[default]'): the Ray executor is untested")
    temp = tmp_path_factory.mktemp("ray")
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    # A port nobody holds now (a fixed one may still be held by an earlier instance).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    start = subprocess.run(
        [ray, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
         "--disable-usage-stats", f"--temp-dir={temp}"],
        env=env, capture_output=True, text=True, timeout=180,
    )
    if start.returncode != 0:
        pytest.fail(f"ray start failed:\n{start.stdout}\n{start.stderr}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=120)


def test_the_same_sweep_through_ray_gives_the_same_results(tmp_path, ray_cluster):
    local = tmp_path / "local.db"
    pagelab.sweep(spec(), local, quiet=True)
    # From Python, and from the command line with this interpreter.
    through = tmp_path / "ray.db"
    summary = pagelab.sweep(spec(), through, ray=ray_cluster, quiet=True)
    assert (summary.ran, summary.failed) == (24, 0)
    assert runs(through).equals(runs(local))
    cli = tmp_path / "cli-ray.db"
    file = tmp_path / "sweep.toml"
    file.write_text(
        f'traces = ["{trace("chess-large-rec.plt")}", "{trace("gups-rec.plt")}"]\nmachine = "skylake"\n'
        '[grid]\n"tlb.levels.stlb.ways" = [4, 8, 12]\n"tlb.levels.dtlb.replacement" = ["lru", "fifo"]\n'
        '[zip]\n"cost.walk_ref_cycles" = [8.0, 12.0]\n'
    )
    subprocess.run(
        [CLI, "sweep", str(file), "-o", str(cli), "--ray", ray_cluster, "--python", sys.executable, "--quiet"],
        check=True, timeout=600,
    )
    assert runs(cli).equals(runs(local))


def test_a_ray_address_that_does_not_answer_is_an_error_within_30_s(tmp_path):
    """Nothing listens on the port: the sweep says so (whether or not Ray is installed)
    instead of waiting on ray.init, and no runner is left behind."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free once closed
    spec = {"traces": [trace("xz.plt")], "machine": "skylake"}
    start = time.monotonic()
    with pytest.raises(ValueError, match=f"nothing answers at 127.0.0.1:{port}"):
        pagelab.sweep(spec, tmp_path / "r.db", ray=f"127.0.0.1:{port}", quiet=True)
    assert time.monotonic() - start < 30
    runners = subprocess.run(["pgrep", "-f", f"_ray_runner 127.0.0.1:{port}"], capture_output=True, text=True)
    assert runners.stdout == ""
