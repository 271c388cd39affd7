"""The shared context of the recorder's tests: the build folder, checked once, and a
scratch folder for the session."""
import os
import shutil
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_recorder import Ctx  # noqa: E402

BUILT = ("full/pagelab-amd64-linux", "bare/pagelab-amd64-linux",
         "tests/pattern", "tests/threads")


@pytest.fixture(scope="session")
def c():
    out = os.environ.get("PAGELAB_RECORDER_OUT") or os.path.join(
        HERE, "..", "..", "target", "valgrind")
    out = os.path.abspath(out)
    missing = [f for f in BUILT if not os.path.exists(os.path.join(out, f))]
    if missing:
        pytest.fail("%s missing: `make recorder` builds it" %
                    os.path.join(out, missing[0]), pytrace=False)
    tmp = tempfile.mkdtemp(prefix="pagelab-check-")
    try:
        yield Ctx(out, tmp)
    finally:
        if os.environ.get("PAGELAB_RECORDER_KEEP"):
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
