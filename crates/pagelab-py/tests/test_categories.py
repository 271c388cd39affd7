"""Data categories in pagelab.trace_info: every reference in exactly one."""

import os

import pagelab

TRACES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data", "traces")


def test_trace_info_counts_references_by_category():
    info = pagelab.trace_info(os.path.join(TRACES, "redis-huge-rec.plt"))
    cats = {name: (refs, pages) for name, refs, pages in info["categories"]["categories"]}
    assert set(cats) == {"static", "small-dynamic", "large-dynamic", "stack", "code", "other"}
    assert sum(r for r, _ in cats.values()) == info["references"]
    # redis's values live in large allocations: (references, pages) per category,
    # exactly (the trace and the classification are fixed).
    assert cats["large-dynamic"][1] > 10_000
    assert cats == {
        "static": (617_649, 28),
        "small-dynamic": (550_313, 5),
        "large-dynamic": (2_900_475, 16_751),
        "stack": (2_956_782, 3),
        "code": (958_153, 132),
        "other": (16_628, 9),
    }
