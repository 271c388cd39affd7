#!/usr/bin/env bash
# record-window.sh NAME SKIP COUNT OUT.plt: record a window of a catalogue workload:
# references SKIP to SKIP + COUNT - 1 of what `pagelab record --workload NAME` records,
# with every event of the whole run (the memory map at start-up, mmap/munmap/brk,
# allocations), as a native trace at zstd level 19.
#
# The workload runs as `pagelab record --workload` runs it: in its work folder
# (${TMPDIR:-/tmp}/pagelab-workloads/NAME), after its prepare, in the same clean
# environment, with its stdin, and its driver beside it; under pagelab's Valgrind tool
# (target/valgrind/full: make recorder) with --fetches=page. The tool's stream goes
# through src/pgrec-window.c, which keeps the window's references and every event, and
# `pagelab trace convert --from pgrec` writes OUT. (pagelab itself cannot cut a window
# out of a trace yet: `trace convert` has no option to skip references.)
#
# For programs of our own, PAGELAB_START/STOP in the program and `pagelab record
# --start-off` choose a window by what the program does (data/traces/README.md).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
PAGELAB=${PAGELAB:-$REPO/target/release/pagelab}
VGLIB=$REPO/target/valgrind/full
if [[ -x /usr/bin/python3 ]]; then SYSPY=/usr/bin/python3; else SYSPY=python3; fi
VENV_PY="$REPO/.venv/bin/python"
[[ -x $VENV_PY ]] || VENV_PY=python3

if [[ $# -ne 4 ]]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
fi
name=$1 skip=$2 count=$3 out=$4
[[ -x $PAGELAB ]] || { echo "record-window.sh: $PAGELAB is not built" >&2; exit 1; }
[[ -x $VGLIB/pagelab-amd64-linux ]] || { echo "record-window.sh: pagelab's Valgrind tool is not built: make recorder" >&2; exit 1; }
eval "$("$SYSPY" "$HERE/catalogue.py" shell "$name")"

work="${TMPDIR:-/tmp}/pagelab-workloads/$name"
mkdir -p "$work"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pagelab-window.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The environment `pagelab record --workload` gives the program (crates/pagelab-cli/
# src/workloads.rs), and VALGRIND_LIB as the recorder sets it.
envv=(env -i "PAGELAB_WORKLOADS=$HERE" "PYTHON=$VENV_PY" PATH=/usr/local/bin:/usr/bin:/bin:/usr/games
      "HOME=$work" LC_ALL=C TZ=UTC PYTHONHASHSEED=0 PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0)

subst() {
    local s=$1
    s=${s//'${PAGELAB_WORKLOADS}'/$HERE}
    s=${s//'${PYTHON}'/$VENV_PY}
    printf '%s' "$s"
}
cmd=()
for a in "${W_COMMAND[@]}"; do cmd+=("$(subst "$a")"); done
if [[ -n $W_PREPARE ]]; then
    (cd "$work" && "${envv[@]}" sh -c "$W_PREPARE")
fi
stdin=/dev/null
[[ -n $W_STDIN ]] && stdin=$(cd "$work" && realpath "$(subst "$W_STDIN")")
gcc -O2 -Wall -o "$tmp/pgrec-window" "$HERE/src/pgrec-window.c"
mkfifo "$tmp/stream"

"$tmp/pgrec-window" "$skip" "$count" <"$tmp/stream" >"$tmp/window.pgrec" &
filter=$!
(cd "$work" && exec "${envv[@]}" "VALGRIND_LIB=$VGLIB" valgrind -q --tool=pagelab \
    "--out=$tmp/stream" --fetches=page --sample=1 --start=yes "${cmd[@]}" \
    <"$stdin" >"$work/stdout.txt") &
prog=$!
drv_rc=0
if [[ -n $W_DRIVER ]]; then
    (cd "$work" && exec "${envv[@]}" sh -c "$W_DRIVER") || drv_rc=$?
fi
rc=0
wait "$prog" || rc=$?
# A program that never started leaves the filter waiting for a writer.
[[ $rc -eq 0 ]] || kill "$filter" 2>/dev/null || true
frc=0
wait "$filter" || frc=$?
if [[ $rc -ne 0 || $drv_rc -ne 0 || $frc -ne 0 ]]; then
    echo "record-window.sh: $name failed: program $rc, driver $drv_rc, pgrec-window $frc" >&2
    exit 1
fi
"$PAGELAB" trace convert -q --from pgrec --level 19 \
    --workload "$name: references $skip to $((skip + count - 1)) of its recording (workloads/record-window.sh)" \
    "$tmp/window.pgrec" "$out"
echo "record-window.sh: $out: references $skip to $((skip + count - 1)) of $name"
