#!/usr/bin/env bash
# check.sh [MODE] [--keep] [NAME...]: run workloads of the catalogue and check them.
#
# Each workload runs in a new temporary work folder: check that its packages are
# installed (else: run workloads/setup.sh NAME), run its `prepare`, then its command
# (with its stdin, and its driver beside it for servers), and check that the command
# and the driver exit with status 0. Prints one line per workload with the wall times
# of prepare and of the command. With no NAME: every workload.
#
# MODE (default --native):
#   --native   the program alone
#   --lackey   under `valgrind --tool=lackey --trace-mem=yes --log-file=/dev/null`
#              (what `pagelab record --tool lackey` costs, less writing the trace)
#   --none     under `valgrind --tool=none` (Valgrind's own overhead)
#   --count    under lackey's counters (no trace): prints the approximate number of
#              references a recording with every instruction fetch holds
#              (instructions + loads + stores; lackey's trace folds a load and a store
#              to the same address into one M, so the trace has slightly fewer)
# --keep     keep the work folders (their paths are printed) instead of removing them
#
# Programs run in a scrubbed environment, as a recording should:
#   env -i PATH=... HOME=WORKDIR LC_ALL=C TZ=UTC PYTHONHASHSEED=0 PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0
# plus PAGELAB_WORKLOADS and PYTHON for prepare and the driver.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
VENV_PY="$REPO/.venv/bin/python"
if [[ -x /usr/bin/python3 ]]; then SYSPY=/usr/bin/python3; else SYSPY=python3; fi
CAT=("$SYSPY" "$HERE/catalogue.py")
CLEAN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games

mode=native
keep=0
names=()
for arg in "$@"; do
    case $arg in
    --native | --lackey | --none | --count) mode=${arg#--} ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check.sh: unknown option $arg" >&2; exit 2 ;;
    *) names+=("$arg") ;;
    esac
done
# Validate first: a failure inside the process substitution below would go unnoticed.
"${CAT[@]}" validate >/dev/null
if [[ ${#names[@]} -eq 0 ]]; then
    mapfile -t names < <("${CAT[@]}" names)
fi

# Seconds since the epoch, with microseconds (bash 5).
now() { echo "${EPOCHREALTIME/,/.}"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

missing_packages() {
    local p out=()
    for p in "${W_APT[@]}"; do
        [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || out+=("apt:$p")
    done
    for p in "${W_PIP[@]}"; do
        if [[ ! -x $VENV_PY ]] || ! "$VENV_PY" -c 'import importlib.metadata, sys
importlib.metadata.version(sys.argv[1])' "$p" 2>/dev/null; then
            out+=("pip:$p")
        fi
    done
    echo "${out[*]}"
}

subst() {
    local s=$1
    s=${s//'${PAGELAB_WORKLOADS}'/$HERE}
    s=${s//'${PYTHON}'/$VENV_PY}
    printf '%s' "$s"
}

# The approximate reference count from lackey's --detailed-counts log.
count_refs() {
    awk '/guest instrs:/ { gsub(",", "", $NF); i += $NF }
         /^==[0-9]+== +(I|F|V|D)[0-9]+ / { gsub(",", "", $3); gsub(",", "", $4); m += $3 + $4 }
         END { printf "%.2fM", (i + m) / 1e6 }' "$1"
}

failed=()
printf '%-24s %-7s %9s %9s  %s\n' workload size prepare run "result ($mode)"
for name in "${names[@]}"; do
    eval "$("${CAT[@]}" shell "$name")"
    miss=$(missing_packages)
    if [[ -n $miss ]]; then
        printf '%-24s %-7s %9s %9s  %s\n' "$name" "$W_SIZE" - - "NOT INSTALLED: $miss (run workloads/setup.sh $name)"
        failed+=("$name")
        continue
    fi
    work=$(mktemp -d "${TMPDIR:-/tmp}/pagelab-workload-$name.XXXXXX")
    envv=(env -i "PATH=$CLEAN_PATH" "HOME=$work" LC_ALL=C TZ=UTC PYTHONHASHSEED=0 PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0)
    envx=("${envv[@]}" "PAGELAB_WORKLOADS=$HERE" "PYTHON=$VENV_PY")

    t0=$(now)
    if [[ -n $W_PREPARE ]]; then
        if ! (cd "$work" && "${envx[@]}" bash -c "$W_PREPARE") >"$work/prepare.log" 2>&1; then
            printf '%-24s %-7s %9s %9s  %s\n' "$name" "$W_SIZE" "$(elapsed "$t0" "$(now)")" - "FAILED: prepare (see $work/prepare.log)"
            tail -n 5 "$work/prepare.log" | sed 's/^/    /'
            failed+=("$name")
            continue
        fi
    fi
    t1=$(now)

    cmd=()
    for a in "${W_COMMAND[@]}"; do cmd+=("$(subst "$a")"); done
    stdin=/dev/null
    [[ -n $W_STDIN ]] && stdin=$(subst "$W_STDIN")
    case $mode in
    native) vg=() ;;
    lackey) vg=(valgrind -q --tool=lackey --trace-mem=yes --log-file=/dev/null) ;;
    none) vg=(valgrind -q --tool=none) ;;
    count) vg=(valgrind --tool=lackey --detailed-counts=yes "--log-file=$work/lackey-counts.log") ;;
    esac
    limit=600
    [[ $mode != native ]] && limit=3600

    # The program (in the background when a driver runs beside it).
    (cd "$work" && exec timeout -k 5 "$limit" "${envv[@]}" "${vg[@]}" "${cmd[@]}" \
        <"$stdin" >"$work/stdout.txt" 2>"$work/stderr.txt") &
    prog=$!
    drv_rc=0
    if [[ -n $W_DRIVER ]]; then
        (cd "$work" && exec timeout -k 5 "$limit" "${envx[@]}" bash -c "$W_DRIVER") \
            >"$work/driver.log" 2>&1 || drv_rc=$?
        # The driver stops the program; give it a minute to finish, then end it.
        for _ in $(seq 600); do kill -0 "$prog" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$prog" 2>/dev/null; then
            echo "    $name: still running after its driver ended; stopping it" >&2
            kill -TERM "$prog" 2>/dev/null || true  # timeout passes it on
        fi
    fi
    rc=0
    wait "$prog" || rc=$?
    t2=$(now)

    result="ok"
    if [[ $rc -ne 0 || $drv_rc -ne 0 ]]; then
        result="FAILED: exit status $rc, driver $drv_rc (see $work)"
        failed+=("$name")
        keep_this=1
    else
        keep_this=$keep
        [[ $mode == count ]] && result="ok, ~$(count_refs "$work/lackey-counts.log") references"
    fi
    printf '%-24s %-7s %9s %9s  %s\n' "$name" "$W_SIZE" "$(elapsed "$t0" "$t1")s" "$(elapsed "$t1" "$t2")s" "$result"
    if [[ $keep_this -eq 1 ]]; then
        [[ $rc -ne 0 ]] && tail -n 5 "$work/stderr.txt" | sed 's/^/    /'
        [[ $keep -eq 1 ]] && echo "    work folder: $work"
    else
        rm -rf "$work"
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "check.sh: failed: ${failed[*]}" >&2
    exit 1
fi
