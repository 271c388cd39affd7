"""Recording programs, advising on them and the workload catalogue, through pagelab's
command line: ``record``, ``advise`` and ``workloads``. These run programs under
Valgrind and natively, supervised as process groups; the command line does that, and
these functions run it (``$PAGELAB_BIN``, else ``pagelab`` on ``PATH``, else the
repository's build) and return its results as Python values.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Dict, List, Optional, Sequence, Union

__all__ = ["record", "advise", "workloads", "command_line"]

PathLike = Union[str, "os.PathLike[str]"]


def command_line() -> str:
    """The path of the ``pagelab`` command these functions run.

    Raises:
        FileNotFoundError: it is not found (build it: ``make build``, or set
            ``PAGELAB_BIN``).
    """
    named = os.environ.get("PAGELAB_BIN")
    if named:
        if not os.access(named, os.X_OK):
            raise FileNotFoundError(f"PAGELAB_BIN={named}: not an executable file")
        return named
    found = shutil.which("pagelab")
    if found:
        return found
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
    for build in ("release", "ci"):
        path = os.path.join(root, "target", build, "pagelab")
        if os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("pagelab's command line is not found: build it (make build) or set PAGELAB_BIN")


def _run(args: List[str], quiet: bool, capture: bool) -> str:
    """Run ``pagelab ARGS``; its standard output when ``capture``. A failure raises
    ValueError with the command's error line."""
    done = subprocess.run(
        [command_line(), *args],
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.PIPE if quiet else None,
        text=True,
    )
    if done.returncode != 0:
        lines = [line for line in (done.stderr or "").splitlines() if line.strip()]
        message = lines[-1] if lines else f"pagelab {args[0]} failed (exit status {done.returncode})"
        raise ValueError(message.removeprefix("pagelab: error: "))
    return done.stdout or ""


def _options(**options: Any) -> List[str]:
    """``--name value`` of each option given (``True``: the flag alone)."""
    out: List[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        out += [flag] if value is True else [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return out


def record(
    command: Optional[Sequence[str]] = None,
    output: Optional[PathLike] = None,
    *,
    workload: Optional[str] = None,
    fetches: Optional[str] = None,
    sample: Optional[int] = None,
    tool: Optional[str] = None,
    label: Optional[str] = None,
    quiet: bool = True,
) -> str:
    """Run a program under Valgrind and record its memory references, allocations and
    memory map as a native trace (``pagelab record``): ``command`` (the program and its
    arguments), or the catalogue's ``workload``, into ``output`` (for a workload,
    ``WORKLOAD.plt`` by default). Returns the trace's path.

    Raises:
        ValueError: the program cannot be run or recorded (the message is the command
            line's).
    """
    if (command is None) == (workload is None):
        raise ValueError("name a command or a workload (one of them)")
    if isinstance(command, str):
        raise TypeError("command is a list: the program and its arguments")
    if output is None and workload is None:
        raise ValueError("output: name the trace to write")
    if output is not None and os.fspath(output) == "-":
        raise ValueError("output: a trace file, not standard output")
    args = ["record", *_options(output=output, workload=workload, fetches=fetches, sample=sample, tool=tool, label=label)]
    if quiet:
        args.append("--quiet")
    if command is not None:
        args += ["--", *[os.fspath(c) for c in command]]
    _run(args, quiet, capture=False)
    # Without an output, the command line writes WORKLOAD.plt here.
    return os.fspath(output) if output is not None else f"{workload}.plt"


def advise(
    command: Optional[Sequence[str]] = None,
    *,
    trace: Optional[PathLike] = None,
    workload: Optional[str] = None,
    machine: Optional[str] = None,
    config: Optional[PathLike] = None,
    runs: Optional[int] = None,
    max_runs: Optional[int] = None,
    max_seconds: Optional[float] = None,
    confidence: Optional[float] = None,
    resolution: Optional[float] = None,
    budget: Optional[str] = None,
    quiet: bool = True,
) -> Dict[str, Any]:
    """Which data categories of a program gain from huge pages, predicted and checked on
    this machine (``pagelab advise``): the program is recorded (or ``trace`` read),
    analysed (on ``machine``, by default this one: ``"host"``, where C_TLBmiss is the
    program's mean walk simulated through its data caches), run natively with each
    category backed by transparent huge pages, and compared. The native runs go in
    rounds (all small and each mapping still to measure): ``runs`` rounds of every
    mapping, then more of those whose interval still holds 1.0 and is wider than 1 ±
    ``resolution``, up to ``max_runs`` rounds or ``max_seconds`` of runs (0: ``runs``
    rounds exactly); ``confidence`` is shared among the looks at the intervals. Each
    mapping's ``measured_speedup`` is the geometric mean of its rounds' speedups, with
    ``measured_low``, ``measured_high`` and ``measurable`` (the interval leaves out
    1.0). Returns the command line's JSON result as a dict.

    Raises:
        ValueError: the program cannot be run, or the analysis failed.
    """
    if isinstance(command, str):
        raise TypeError("command is a list: the program and its arguments")
    args = ["advise", *_options(trace=trace, workload=workload, machine=machine, config=config, runs=runs,
                                max_runs=max_runs, max_seconds=max_seconds, confidence=confidence,
                                resolution=resolution,
                                budget=budget), "--json", "-"]
    if quiet:
        args.append("--quiet")
    if command is not None:
        args += ["--", *[os.fspath(c) for c in command]]
    result: Dict[str, Any] = json.loads(_run(args, quiet, capture=True))
    return result


def calibrate(output: Optional[PathLike] = None, *, quick: bool = False, quiet: bool = True) -> Dict[str, Any]:
    """Measure this machine's costs natively (``pagelab calibrate``): the core clock, a
    4 KiB and a 2 MiB page fault, a page cleared and copied from memory, and loads
    whose pages miss the TLBs by footprint with 4 KiB and 2 MiB pages, and the latency
    of each data cache and of memory (``lines``), and the data TLBs' reach (``reach``:
    loads over one line in each of N pages), each as ``{median, min, max, runs}`` in
    cycles. With ``output``, also writes the host machine with the measured costs,
    latencies and data TLB sizes there as TOML (for ``config=``). Needs ``make native``; about
    twenty seconds (``quick``: six)."""
    args = ["calibrate", "--json", "-"] + _options(output=output, quick=quick, quiet=quiet)
    result: Dict[str, Any] = json.loads(_run(args, quiet, capture=True))
    return result


def workloads() -> List[Dict[str, Any]]:
    """The workload catalogue (``pagelab workloads``), validated: a dict per workload
    with every field (name, description, apt, pip, prepare, command, stdin, driver,
    size)."""
    result: List[Dict[str, Any]] = json.loads(_run(["workloads", "--json"], quiet=True, capture=True))
    return result
