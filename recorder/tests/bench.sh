#!/bin/sh
# Speed of the pagelab tool against Lackey, end to end (wall time).
#
#   tests/bench.sh OUT [KB] [REPEAT]
#
# Runs `xz -1 -c` of a generated text file of KB KiB (default 40) under
#   valgrind --tool=lackey --trace-mem=yes --log-file=/dev/null
#   valgrind --tool=pagelab --fetches=all --out=$TMP/x.pgrec   (bare build)
#   valgrind --tool=none                                       (for reference)
# REPEAT times each (default 1), prints each wall time and the references
# per second (references = the END record's count, the same stream as
# Lackey's).
set -eu
OUT=$(cd "${1:?usage: bench.sh OUT [KB] [REPEAT]}" && pwd)
KB=${2:-40}
REPEAT=${3:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d /tmp/pagelab-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"

python3 - "$KB" > in.txt <<'EOF'
import random, sys
random.seed(1)
words = ["".join(random.choice("abcdefghijklmnopqrstuvwxyz")
                 for _ in range(random.randint(2, 9))) for _ in range(5000)]
n, out = int(sys.argv[1]) * 1024, []
while n > 0:
    line = " ".join(random.choice(words) for _ in range(12)) + "\n"
    out.append(line); n -= len(line)
sys.stdout.write("".join(out))
EOF

wall() {  # prints the wall seconds of "$@"
  s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N)
  python3 -c "print('%.2f' % ($e - $s))"
}

export VALGRIND_LIB="$OUT/bare"
i=0
while [ $i -lt "$REPEAT" ]; do
  tn=$(wall valgrind -q --tool=none xz -1 -c in.txt)
  tp=$(wall valgrind -q --tool=pagelab --fetches=all --out="$TMP/x.pgrec" xz -1 -c in.txt)
  refs=$(python3 -c "
import struct
f = open('$TMP/x.pgrec', 'rb'); f.seek(-24, 2)
tag, seen, written = struct.unpack('<3Q', f.read(24))
assert tag == 5 << 56 | 1 << 63, 'no END record'
print(written)")
  tl=$(wall valgrind -q --tool=lackey --trace-mem=yes --log-file=/dev/null xz -1 -c in.txt)
  python3 -c "
r, tn, tp, tl = $refs, $tn, $tp, $tl
print('xz -1 of %d KiB: %d references' % ($KB, r))
print('  none    %6.2f s' % tn)
print('  pagelab %6.2f s  %6.2f M refs/s' % (tp, r / tp / 1e6))
print('  lackey  %6.2f s  %6.2f M refs/s' % (tl, r / tl / 1e6))
print('  pagelab is %.1fx faster than lackey' % (tl / tp))"
  i=$((i + 1))
done
