"""What the Python tests share: the repository's paths and the command-line binary they
compare against ($PAGELAB_BIN, which `make test-python` sets to the tests' build; else
target/release/pagelab)."""

import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TRACES = os.path.join(ROOT, "data", "traces")
CLI = os.environ.get("PAGELAB_BIN") or os.path.join(ROOT, "target", "release", "pagelab")


def trace(name):
    """The path of a bundled trace."""
    return os.path.join(TRACES, name)
