"""Reuse distances from Python (pagelab.reuse_distance): the same curve as the
simulator's fully associative LRU TLB, as DataFrames."""

import os

import pytest

import pagelab

TRACES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data", "traces")


def test_the_curve_is_what_a_fully_associative_lru_tlb_misses():
    trace = os.path.join(TRACES, "bunzip2-rec.plt")
    r = pagelab.reuse_distance(trace, page_sizes=["4K", "2M"])
    assert r.exact
    assert list(r.summary["page_size"]) == ["4K", "2M"]
    k4 = r.curve[r.curve.page_size == "4K"].set_index("entries")
    report = pagelab.simulate(trace, {"tlb": {"kind": "set-associative", "sets": 1, "ways": 64, "replacement": "lru"}})
    assert k4.loc[64, "misses"] == report["levels"][0]["misses"]
    # The histogram accounts for every translation but the first references.
    h = r.histogram[r.histogram.page_size == "4K"]
    s = r.summary.set_index("page_size").loc["4K"]
    assert h.references.sum() + s.cold == s.translations


def test_a_bad_page_size_is_named():
    with pytest.raises(ValueError, match="3M"):
        pagelab.reuse_distance(os.path.join(TRACES, "xz.plt"), page_sizes=["3M"])
