"""pagelab.repro: the same engine as `pagelab repro`, the same verdicts."""

import json
import subprocess

import pytest

import pagelab
from conftest import CLI


def test_the_papers_are_the_command_lines():
    ids = [p["id"] for p in pagelab.repro_papers()]
    # Every claim file of the repository, in the order of their ids.
    assert ids == sorted(ids) and set(ids) >= {"fang", "vrpt", "navarro", "cpo", "rmm"}
    listed = subprocess.run([CLI, "repro", "list"], check=True, capture_output=True, text=True).stdout
    assert [line.split()[0] for line in listed.splitlines()] == ids


def test_python_and_the_command_line_judge_alike(tmp_path):
    # The command line records the paper's kernels into the trace cache; Python reads them.
    cache = tmp_path / "cache"
    subprocess.run([CLI, "repro", "vrpt", "-o", str(tmp_path / "cli"), "--no-report", "--quiet",
                    "--cache", str(cache)], check=True, stdout=subprocess.DEVNULL)
    r = pagelab.repro("vrpt", tmp_path / "py", report=False, cache=cache)
    cli = json.loads((tmp_path / "cli" / "verdicts.json").read_text())
    assert r.claims == cli["claims"] and r.title == cli["title"]
    assert r.tally == cli["counts"]
    assert r.sensitivity == cli["sensitivity"] and len(r.sensitivity) == 3
    assert r.tally["measured_agree"] + r.tally["measured_differ"] == sum(
        1 for c in r.claims if c["class"] == "measured")
    assert sum(r.counts().values()) == len(r.claims) == 14
    frame = r.to_frame()
    assert list(frame["id"]) == [c["id"] for c in r.claims]
    # A second run reads its runs back: the same verdicts.
    assert pagelab.repro("vrpt", tmp_path / "py", report=False, cache=cache).claims == r.claims


def test_a_kernel_not_yet_recorded_is_named(tmp_path):
    with pytest.raises(ValueError, match="fang-matmul is not recorded"):
        pagelab.repro("vrpt", tmp_path / "py", report=False, cache=tmp_path / "empty")


def test_an_unknown_paper_is_named():
    with pytest.raises(ValueError, match='"nope".*fang'):
        pagelab.repro("nope", "/tmp/never")
