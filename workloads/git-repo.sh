#!/bin/sh
# git-repo.sh DIR: make a git repository of generated text with 60 commits of fixed
# authors and dates (so the same commit ids every time), packed into one pack with
# deltas. Idempotent: DIR is kept when it already holds the expected history.
set -eu

W=${PAGELAB_WORKLOADS:?git-repo.sh: PAGELAB_WORKLOADS is not set}
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
dir=${1:?usage: git-repo.sh DIR}
commits=60
stamp="v1 $commits $(cksum <"$W/gen.py" | cut -d' ' -f1) $(cksum <"$0" | cut -d' ' -f1)"

if [ -f "$dir.stamp" ] && [ "$(cat "$dir.stamp")" = "$stamp" ] && [ -d "$dir/.git" ]; then
    exit 0
fi
rm -rf "$dir" "$dir.stamp"

# No user or system configuration, fixed identities, no hooks, no automatic gc.
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=/nonexistent
export GIT_AUTHOR_NAME="Pagelab Workload" GIT_AUTHOR_EMAIL="workload@pagelab.invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
export LC_ALL=C TZ=UTC

mkdir -p "$dir"
"$PY" "$W/gen.py" text 6000 "$dir/base.txt"
cd "$dir"
git init -q -b main .
git config gc.auto 0
git config core.pager cat
git config pack.threads 1
mkdir -p src doc
split -l 300 -a 2 base.txt src/part-
rm base.txt

i=1
while [ "$i" -le "$commits" ]; do
    # Edit three files: every line whose number is a multiple of (i % 7 + 3) gets its
    # words reversed; every 5th commit adds a file, every 9th removes a line range.
    for k in 0 1 2; do
        f=$(ls src | sed -n "$(( (i * 7 + k * 5) % $(ls src | wc -l) + 1 ))p")
        awk -v m=$(( i % 7 + 3 )) -v i="$i" '
            NR % m == 0 { s = ""; for (j = NF; j >= 1; j--) s = s $j (j > 1 ? " " : ""); print s " r" i; next }
            { print }' "src/$f" >"src/$f.new"
        mv "src/$f.new" "src/$f"
    done
    if [ $(( i % 5 )) -eq 0 ]; then
        head -n $(( 40 + i )) "src/$(ls src | head -n 1)" | tr 'a-z' 'n-za-m' >"doc/note-$i.txt"
    fi
    if [ $(( i % 9 )) -eq 0 ]; then
        f=$(ls src | tail -n 1)
        sed -i "$(( i % 50 + 1 )),$(( i % 50 + 20 ))d" "src/$f"
    fi
    git add -A
    d=$(( 1700000000 + i * 3600 ))
    GIT_AUTHOR_DATE="@$d +0000" GIT_COMMITTER_DATE="@$d +0000" \
        git commit -q -m "Change $i: edit $(git diff --cached --name-only | tr '\n' ' ')"
    i=$(( i + 1 ))
done
git repack -adq -f --window=10 --depth=50
git prune-packed
cd - >/dev/null
printf '%s\n' "$stamp" >"$dir.stamp"
