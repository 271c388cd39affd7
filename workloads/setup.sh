#!/usr/bin/env bash
# setup.sh [NAME...]: install what the named workloads of catalogue.toml need (with no
# NAME: every workload).
#   - Debian packages (`apt`): those not installed yet, with
#     `apt-get install -y --no-install-recommends` (after one `apt-get update`);
#     this needs root.
#   - PyPI packages (`pip`): into the repository's virtual environment .venv (made
#     with `python3 -m venv` when missing), when not installed there yet.
# Packages are asked for by name only. Safe to run again: it installs only what is
# missing.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
VENV="$REPO/.venv"

# The catalogue is read by catalogue.py, which asks pagelab (`pagelab workloads
# --json`, from target/release, $PAGELAB or PATH) for it: build pagelab first.
if [[ -x /usr/bin/python3 ]]; then
    SYSPY=/usr/bin/python3
elif command -v python3 >/dev/null; then
    SYSPY=python3
else
    echo "setup.sh: python3 is needed to run catalogue.py: apt-get install python3" >&2
    exit 1
fi
CAT=("$SYSPY" "$HERE/catalogue.py")
"${CAT[@]}" validate >/dev/null
mapfile -t apt_pkgs < <("${CAT[@]}" apt "$@")
mapfile -t pip_pkgs < <("${CAT[@]}" pip "$@")

# apt_install PKG...: install Debian packages (root only; one apt-get update first).
updated=0
apt_install() {
    if [[ $(id -u) -ne 0 ]]; then
        echo "setup.sh: these Debian packages are missing: $*" >&2
        echo "setup.sh: installing them needs root: run this script as root, or" >&2
        echo "    sudo apt-get update && sudo apt-get install -y --no-install-recommends $*" >&2
        exit 1
    fi
    echo "setup.sh: apt-get install $*"
    export DEBIAN_FRONTEND=noninteractive
    if [[ $updated -eq 0 ]]; then
        apt-get update -qq
        updated=1
    fi
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# Debian packages.
missing=()
for p in "${apt_pkgs[@]}"; do
    [[ -n $p ]] || continue
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    apt_install "${missing[@]}"
    # Debian may start the services it installs (redis-server); the workloads start
    # their own server on a free port, so stop a system one that was just started.
    for p in "${missing[@]}"; do
        if [[ $p == redis-server ]] && command -v systemctl >/dev/null && systemctl is-active -q redis-server 2>/dev/null; then
            systemctl stop redis-server || true
        fi
    done
else
    echo "setup.sh: Debian packages: all installed (${apt_pkgs[*]:-none needed})"
fi

# PyPI packages, into .venv.
if [[ ${#pip_pkgs[@]} -gt 0 && -n ${pip_pkgs[0]} ]]; then
    if [[ ! -x $VENV/bin/python ]]; then
        # Debian's python3 makes virtual environments only with python3-venv.
        if ! python3 -c 'import ensurepip' 2>/dev/null && command -v dpkg >/dev/null; then
            apt_install python3-venv
        fi
        echo "setup.sh: creating $VENV"
        python3 -m venv "$VENV"
    fi
    need=()
    for p in "${pip_pkgs[@]}"; do
        "$VENV/bin/python" -c 'import importlib.metadata, sys
importlib.metadata.version(sys.argv[1])' "$p" 2>/dev/null || need+=("$p")
    done
    if [[ ${#need[@]} -gt 0 ]]; then
        echo "setup.sh: pip install ${need[*]} (into $VENV)"
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${need[@]}"
    else
        echo "setup.sh: PyPI packages: all installed in $VENV (${pip_pkgs[*]})"
    fi
fi
echo "setup.sh: ready: ${*:-every workload}"
