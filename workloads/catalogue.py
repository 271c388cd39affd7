#!/usr/bin/env python3
"""Read workloads/catalogue.toml for setup.sh and check.sh (Python 3.11+: tomllib).

    catalogue.py validate            check every entry against the schema; print the names
    catalogue.py names               every workload's name, one a line
    catalogue.py apt NAME...         the Debian packages the named workloads need (unique)
    catalogue.py pip NAME...         the PyPI packages the named workloads need (unique)
    catalogue.py shell NAME          bash assignments for one workload (check.sh evals them)

The schema is the one pagelab's Rust side reads (unknown fields are an error there too).
"""
import re
import shlex
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIELDS = {
    "name": str, "description": str, "apt": list, "pip": list, "prepare": str,
    "command": list, "stdin": str, "driver": str, "size": str,
}
REQUIRED = {"name", "description", "apt", "pip", "command", "size"}
SIZES = {"small", "medium", "large"}


def load():
    with open(HERE / "catalogue.toml", "rb") as f:
        doc = tomllib.load(f)
    if set(doc) != {"workload"}:
        sys.exit(f"catalogue.toml: only [[workload]] tables are allowed, found {sorted(doc)}")
    seen = {}
    for i, w in enumerate(doc["workload"]):
        where = f"catalogue.toml: workload #{i + 1} ({w.get('name', '?')})"
        for k, v in w.items():
            if k not in FIELDS:
                sys.exit(f"{where}: unknown field {k!r}")
            if not isinstance(v, FIELDS[k]):
                sys.exit(f"{where}: {k} must be a {FIELDS[k].__name__}")
            if isinstance(v, list) and not all(isinstance(x, str) and x for x in v):
                sys.exit(f"{where}: {k} must hold non-empty strings")
        missing = REQUIRED - set(w)
        if missing:
            sys.exit(f"{where}: missing {sorted(missing)}")
        if not re.fullmatch(r"[a-z0-9-]+", w["name"]):
            sys.exit(f"{where}: name must match [a-z0-9-]+")
        if w["name"] in seen:
            sys.exit(f"{where}: duplicate name")
        if w["size"] not in SIZES:
            sys.exit(f"{where}: size must be one of {sorted(SIZES)}")
        if not w["command"]:
            sys.exit(f"{where}: empty command")
        if "\n" in w["description"]:
            sys.exit(f"{where}: description must be one line")
        seen[w["name"]] = w
    return seen


def pick(cat, names):
    for n in names:
        if n not in cat:
            sys.exit(f"unknown workload {n!r} (known: {' '.join(cat)})")
    return [cat[n] for n in names] if names else list(cat.values())


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cat = load()
    op, args = sys.argv[1], sys.argv[2:]
    if op in ("validate", "names"):
        print("\n".join(cat))
    elif op in ("apt", "pip"):
        out = []
        for w in pick(cat, args):
            out += [p for p in w[op] if p not in out]
        print("\n".join(out))
    elif op == "shell" and len(args) == 1:
        w = pick(cat, args)[0]
        q = shlex.quote
        print(f"W_NAME={q(w['name'])}")
        print(f"W_SIZE={q(w['size'])}")
        print(f"W_PREPARE={q(w.get('prepare', ''))}")
        print(f"W_STDIN={q(w.get('stdin', ''))}")
        print(f"W_DRIVER={q(w.get('driver', ''))}")
        print("W_COMMAND=(" + " ".join(q(a) for a in w["command"]) + ")")
        print("W_APT=(" + " ".join(q(a) for a in w["apt"]) + ")")
        print("W_PIP=(" + " ".join(q(a) for a in w["pip"]) + ")")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
