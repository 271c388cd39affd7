#!/usr/bin/env python3
"""Read workloads/catalogue.toml for setup.sh and check.sh, through pagelab.

    catalogue.py validate            check every entry against the schema; print the names
    catalogue.py names               every workload's name, one a line
    catalogue.py apt NAME...         the Debian packages the named workloads need (unique)
    catalogue.py pip NAME...         the PyPI packages the named workloads need (unique)
    catalogue.py shell NAME          bash assignments for one workload (check.sh evals them)

The schema lives in one place, pagelab's Rust side (crates/pagelab-cli/src/catalogue.rs):
this script runs `pagelab workloads --json`, which validates the catalogue beside this
script and prints it, and checks nothing itself. pagelab is found as $PAGELAB, else
target/release/pagelab of this repository, else `pagelab` on PATH.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def pagelab():
    """The pagelab binary to ask, or exit with what to do."""
    env = os.environ.get("PAGELAB")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            sys.exit(f"catalogue.py: PAGELAB={env} is not an executable file")
        return env
    built = REPO / "target" / "release" / "pagelab"
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    on_path = shutil.which("pagelab")
    if on_path:
        return on_path
    sys.exit(
        "catalogue.py: pagelab is needed to read the catalogue and was not found "
        f"({built} is missing, no pagelab on PATH, PAGELAB is not set): build it with "
        "`cargo build --release -p pagelab-cli` (or `make build`) in "
        f"{REPO}, or set PAGELAB=/path/to/pagelab"
    )


def load():
    """The validated catalogue, by name, in the file's order."""
    binary = pagelab()
    env = dict(os.environ, PAGELAB_WORKLOADS=str(HERE))
    try:
        done = subprocess.run(
            [binary, "workloads", "--json"], env=env, stdout=subprocess.PIPE, text=True
        )
    except OSError as e:
        sys.exit(f"catalogue.py: cannot run {binary}: {e}")
    if done.returncode != 0:
        # pagelab has said what is wrong (file, line, workload) on standard error.
        sys.exit(f"catalogue.py: {binary} workloads --json failed (exit status {done.returncode})")
    try:
        return {w["name"]: w for w in json.loads(done.stdout)}
    except (ValueError, TypeError, KeyError) as e:
        sys.exit(f"catalogue.py: {binary} workloads --json printed no catalogue ({e}); is it too old?")


def pick(cat, names):
    for n in names:
        if n not in cat:
            sys.exit(f"unknown workload {n!r} (known: {' '.join(cat)})")
    return [cat[n] for n in names] if names else list(cat.values())


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    op, args = sys.argv[1], sys.argv[2:]
    if op not in ("validate", "names", "apt", "pip") and not (op == "shell" and len(args) == 1):
        sys.exit(__doc__)
    cat = load()
    if op in ("validate", "names"):
        print("\n".join(cat))
    elif op in ("apt", "pip"):
        out = []
        for w in pick(cat, args):
            out += [p for p in w[op] if p not in out]
        print("\n".join(out))
    else:
        w = pick(cat, args)[0]
        q = shlex.quote
        print(f"W_NAME={q(w['name'])}")
        print(f"W_SIZE={q(w['size'])}")
        print(f"W_PREPARE={q(w['prepare'])}")
        print(f"W_STDIN={q(w['stdin'])}")
        print(f"W_DRIVER={q(w['driver'])}")
        print("W_COMMAND=(" + " ".join(q(a) for a in w["command"]) + ")")
        print("W_APT=(" + " ".join(q(a) for a in w["apt"]) + ")")
        print("W_PIP=(" + " ".join(q(a) for a in w["pip"]) + ")")


if __name__ == "__main__":
    main()
