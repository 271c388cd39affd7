#!/usr/bin/env python3
"""Run the README's runnable commands, as a user would on a fresh clone.

A code block is runnable when the line before its ```sh fence is `<!-- runnable -->`.
Each such block runs as one bash script (`set -euo pipefail`) from the repository's
root, with target/release (or $PAGELAB_BIN_DIR) first on PATH (so `pagelab` is the one
just built). Blocks write their outputs under /tmp. Exits 1 naming the block's line and
showing its output when one fails, when the README has no runnable block at all, and
when it is longer than 250 lines.

    python3 tools/readme_check.py [README.md]
"""
import os
import subprocess
import sys

MARK = "<!-- runnable -->"
MAX_LINES = 250  # a user's guide; the reference lives in docs/


def blocks(lines):
    """(line number of the fence, the block's text) of every runnable block."""
    found = []
    for i, line in enumerate(lines):
        if line.strip() != MARK:
            continue
        fence = i + 1
        if fence >= len(lines) or lines[fence].strip() != "```sh":
            sys.exit(f"README line {i + 1}: {MARK} must be followed by a ```sh fence")
        end = next((j for j in range(fence + 1, len(lines)) if lines[j].strip() == "```"), None)
        if end is None:
            sys.exit(f"README line {fence + 1}: the block never ends")
        found.append((fence + 1, "\n".join(lines[fence + 1:end])))
    return found


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    readme = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "README.md")
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if len(lines) > MAX_LINES:
        sys.exit(f"{readme}: {len(lines)} lines; a guide of at most {MAX_LINES} (move reference to docs/)")
    todo = blocks(lines)
    if not todo:
        sys.exit(f"{readme}: no runnable block ({MARK} before a ```sh fence)")
    env = dict(os.environ)
    bin_dir = env.get("PAGELAB_BIN_DIR") or os.path.join(root, "target", "release")
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    failed = 0
    for line, text in todo:
        run = subprocess.run(["bash", "-c", "set -euo pipefail\n" + text], cwd=root, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        if run.returncode != 0:
            failed += 1
            out = run.stdout.decode(errors="replace")[-4000:]
            print(f"{readme}:{line}: the block failed (exit {run.returncode}):\n{out}")
    print(f"readme_check: {len(todo) - failed} of {len(todo)} runnable blocks ran")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
