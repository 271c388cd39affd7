"""Runs of a sweep as Ray tasks, for ``pagelab sweep --ray ADDRESS`` and
``pagelab.sweep(..., ray=ADDRESS)``: the sweep engine (Rust) starts this module, writes
one JSON line per run to its standard input (``{"index", "trace", "config", "analysis"}``), and
reads one JSON line per finished run from its standard output, in the order they
finish (``{"index", "report" | "error", "references", "seconds"}``). Each task runs
the same function as a local run (``_pagelab.sweep_run``); the nodes must import
``pagelab`` and see the traces at the same paths.

    python -m pagelab._ray_runner ADDRESS < runs.jsonl
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from typing import Any, Dict, Optional

#: How long a cluster's address may take to answer before the sweep gives up.
CONNECT_SECONDS = 10.0


def _run(trace: str, config: str, analysis: str) -> Dict[str, Any]:
    from pagelab import _pagelab

    start = time.perf_counter()
    try:
        report, references = _pagelab.sweep_run(trace, config, analysis)
        out: Dict[str, Any] = {"report": report, "references": references}
    except Exception as e:  # the run's error is its result
        out = {"error": f"{e}"}
    out["seconds"] = time.perf_counter() - start
    return out


def unreachable(address: str) -> Optional[str]:
    """Why nothing answers at ``address`` within CONNECT_SECONDS, or None when
    something does ("auto" is left to Ray, which fails at once without a cluster):
    ray.init would otherwise retry for minutes."""
    if address == "auto":
        return None
    hostport = address[len("ray://"):] if address.startswith("ray://") else address
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit():
        return f"{address!r} is not HOST:PORT, ray://HOST:PORT or auto"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS):
            return None
    except OSError as e:
        return f"nothing answers at {hostport} within {CONNECT_SECONDS:.0f} s ({e})"


def main(argv: list) -> int:
    if len(argv) != 2:
        print("usage: python -m pagelab._ray_runner ADDRESS < runs.jsonl", file=sys.stderr)
        return 2
    why = unreachable(argv[1])
    if why is not None:
        print(why, file=sys.stderr)
        return 1
    parent = os.getppid()
    try:
        import ray
    except ImportError:
        print(f"{sys.executable} cannot import ray: pip install 'ray[default]'", file=sys.stderr)
        return 1
    jobs = [json.loads(line) for line in sys.stdin if line.strip()]
    # The results go to the real standard output, and anything else that prints (Ray,
    # a library) to standard error, where it cannot break the protocol.
    results = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    ray.init(address=argv[1], logging_level=logging.ERROR, log_to_driver=False)
    task = ray.remote(num_cpus=1)(_run)
    pending = {task.remote(j["trace"], j["config"], j.get("analysis", "")): j["index"] for j in jobs}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=2.0)
            if os.getppid() != parent:
                # The sweep is gone (killed): nothing reads the results.
                return 1
            for ref in ready:
                index = pending.pop(ref)
                try:
                    out = ray.get(ref)
                except Exception as e:  # the task's worker died: the run failed
                    out = {"error": f"the Ray task failed: {e}".replace("\n", " "), "seconds": 0.0}
                out["index"] = index
                results.write(json.dumps(out) + "\n")
                results.flush()
    except BrokenPipeError:
        # The sweep stopped reading (killed): what it committed is kept.
        return 1
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
