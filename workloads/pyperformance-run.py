"""Run one benchmark of the pyperformance suite (PyPI package) once, in this process.

    pyperformance-run.py BENCH SCALE

pyperformance's own runner (pyperf.Runner) starts worker processes and, in each, runs
`uname -p` and `file` for its metadata; a recording follows only the first process.
This runs the benchmark's file from the installed package as a module (so its Runner
is not created; pyperf itself is replaced by a stand-in with perf_counter) and calls
the benchmark's function directly. SCALE is the benchmark's
own size parameter (iterations, loops or games); every benchmark here is
deterministic (fixed seeds, no clocks in the result).
"""
import os
import sys
import time
import types


def load(bench):
    # The benchmarks use pyperf only for perf_counter (and Runner under __main__):
    # a stand-in saves importing pyperf (statistics, fractions, json...: ~350 M
    # references under Valgrind, more than most benchmarks here).
    stub = types.ModuleType("pyperf")
    stub.perf_counter = time.perf_counter
    sys.modules["pyperf"] = stub
    rel = os.path.join("pyperformance", "data-files", "benchmarks", f"bm_{bench}", "run_benchmark.py")
    for base in sys.path:
        path = os.path.join(base or ".", rel)
        if os.path.isfile(path):
            break
    else:
        sys.exit(f"pyperformance-run: no {rel} on sys.path (is the pyperformance package "
                 "installed? workloads/setup.sh installs it into .venv)")
    with open(path, encoding="utf-8") as f:
        code = compile(f.read(), path, "exec")
    g = {"__name__": "pagelab_workload", "__file__": path}
    exec(code, g)
    return g


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    bench, scale = sys.argv[1], int(sys.argv[2])
    g = load(bench)
    if bench == "richards":
        ok = g["Richards"]().run(scale)
        assert ok, "richards: wrong result"
    elif bench == "nbody":
        g["bench_nbody"](1, g["DEFAULT_REFERENCE"], scale)
    elif bench == "raytrace":
        g["bench_raytrace"](1, scale, scale, None)
    elif bench == "go":
        for _ in range(scale):
            g["versus_cpu"]()
    elif bench == "deltablue":
        g["delta_blue"](scale)
    else:
        sys.exit(f"pyperformance-run: {bench} is not wired up here "
                 "(richards, nbody, raytrace, go, deltablue)")
    print(f"{bench} {scale}: done")


if __name__ == "__main__":
    main()
