#!/bin/sh
# prepare.sh WHAT: create the inputs of a workload in the current folder (the work
# folder). Called by the catalogue's `prepare` lines with PAGELAB_WORKLOADS set to the
# absolute path of workloads/. Idempotent: a file is made again only when it is
# missing or was made with other parameters (a .stamp beside it records them),
# and outputs of a previous run that would change the next one are removed.
set -eu

W=${PAGELAB_WORKLOADS:?prepare.sh: PAGELAB_WORKLOADS is not set}
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
GENSUM=$(cksum <"$W/gen.py" | cut -d' ' -f1)

# gen KIND COUNT OUT: gen.py's output, made again only if its parameters changed.
gen() {
    stamp="$1 $2 $GENSUM"
    if [ -s "$3" ] && [ -f "$3.stamp" ] && [ "$(cat "$3.stamp")" = "$stamp" ]; then
        return 0
    fi
    rm -f "$3.stamp"
    "$PY" "$W/gen.py" "$1" "$2" "$3"
    printf '%s\n' "$stamp" >"$3.stamp"
}

# Copy a file of workloads/ into the work folder (when it differs).
copy() {
    cmp -s "$W/$1" "./$1" 2>/dev/null || cp "$W/$1" "./$1"
}

# build NAME: compile our own program src/NAME.c into the work folder (gcc -O2, with
# the recorder's client requests, recorder/include/pagelab.h), again only when the
# source, pagelab.h, src/hugereport.h, the flags or gcc changed.
# -fno-tree-loop-distribute-patterns: gcc would make a loop that fills an array with
# -1 a call of memset, which glibc does with `rep stosb`, which Valgrind runs and
# records one byte at a time.
build() {
    inc="$W/../recorder/include"
    flags="-O2 -fno-tree-loop-distribute-patterns -Wall"
    stamp="$(cksum <"$W/src/$1.c" | cut -d' ' -f1) $(cksum <"$inc/pagelab.h" | cut -d' ' -f1)"
    stamp="$stamp $(cksum <"$W/src/hugereport.h" | cut -d' ' -f1) gcc $(gcc -dumpfullversion) $flags"
    if [ -x "$1" ] && [ -f "$1.stamp" ] && [ "$(cat "$1.stamp")" = "$stamp" ]; then
        return 0
    fi
    rm -f "$1.stamp"
    # shellcheck disable=SC2086
    gcc $flags -I "$inc" -o "$1.tmp" "$W/src/$1.c"
    mv "$1.tmp" "$1"
    printf '%s\n' "$stamp" >"$1.stamp"
}

case ${1:?usage: prepare.sh WHAT} in
sqlite-large)
    gen sql 5000 sqlite-5k.sql ;;
xz)
    gen text 150 text-9k.txt
    rm -f text-9k.txt.xz ;;
xz-large)
    gen text 16000 text-1m.txt
    rm -f text-1m.txt.xz ;;
bzip2)
    gen text 400 text-24k.txt
    rm -f text-24k.txt.bz2 ;;
bunzip2)
    gen csrc 240 src-240.c
    # The input: that C source compressed by bzip2 -9 (deterministic: a .bz2 holds no
    # name or date), remade when the source is newer. The command decompresses it
    # into prog-240.c.
    if ! [ -s prog-240.c.bz2 ] || [ src-240.c -nt prog-240.c.bz2 ]; then
        bzip2 -9 -c src-240.c >prog-240.c.bz2.tmp && mv prog-240.c.bz2.tmp prog-240.c.bz2
    fi
    rm -f prog-240.c ;;
gzip)
    gen text 1000 text-60k.txt
    rm -f text-60k.txt.gz ;;
zstd)
    gen text 3000 text-180k.txt
    rm -f text-180k.txt.zst ;;
sort-small)
    gen keys 8000 keys-8k.txt
    rm -f keys-8k.sorted ;;
sort)
    gen keys 100000 keys-100k.txt
    rm -f keys-100k.sorted ;;
sort-large)
    gen keys 300000 keys-300k.txt
    rm -f keys-300k.sorted ;;
python)
    gen json 300 records-300.json
    rm -f records-300.pretty.json ;;
python-large)
    gen json 3000 records-3k.json
    rm -f records-3k.pretty.json ;;
jq)
    gen json 300 records-300.json ;;
perl)
    gen text 150 text-9k.txt ;;
gcc)
    gen cbare 2 prog-2.c
    # cc1 proper (the gcc driver would run it as a child, which Valgrind does not
    # follow): the real compiler, which preprocesses the file itself.
    ln -sf "$(gcc -print-prog-name=cc1)" cc1
    rm -f prog-2.s ;;
gcc-large)
    gen csrc 12 prog-12.c
    ln -sf "$(gcc -print-prog-name=cc1)" cc1
    # Preprocessed here (by gcc -E, itself a driver running cc1 -E), so that the
    # recording is the compiler proper on the 100 KB the headers expand to.
    if ! [ -s prog-12.i ] || [ prog-12.c -nt prog-12.i ]; then
        gcc -E -P prog-12.c -o prog-12.i.tmp && mv prog-12.i.tmp prog-12.i
    fi
    rm -f prog-12.s ;;
gups | bfs | randread | smallheap)
    build "$1" ;;
matmul | radix | cga | filter | rotate | compress | raytrace)
    # Fang et al.'s kernels (SIGMETRICS 2000, §4.2): the catalogue's fang-* workloads.
    build "$1" ;;
transpose | fft3d)
    # Navarro et al.'s kernels (OSDI 2002): navarro-transpose, navarro-fft.
    build "$1" ;;
swim | equake | lucas)
    # Stand-ins for Cascaval et al.'s SPECfp2000 programs (PACT 2005): cpo-*.
    build "$1" ;;
chess-large)
    # stockfish bench's position file: its lines holding "setoption" go to the engine
    # as they are. Set here, after bench's own `setoption name Hash value 16` and
    # `ucinewgame`, the 1 GiB hash is cleared once (on bench's command line: twice).
    # Fine's position 70 (Basic Chess Endings, 1941): white wins only by Kb1, found
    # through the transpositions the hash holds.
    printf '%s\n' 'setoption name Hash value 1024' 'setoption name MultiPV value 3' \
        '8/k7/3p4/p2P1p2/P2P1P2/8/8/K7 w - - 0 1' >fine70.txt ;;
git)
    sh "$W/git-repo.sh" repo
    rm -f git-log.txt ;;
redis | redis-huge)
    # A free high port, chosen now (20000-29999: below Linux's ephemeral range, so no
    # client connection takes it meanwhile); the server's configuration and the
    # driver read it.
    port=$("$PY" -c 'import os, socket
for i in range(10000):
    p = 20000 + (os.getpid() + i) % 10000
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("prepare.sh: no free port in 20000-29999")')
    cat >redis.conf <<EOF
# pagelab workload: loopback only, no persistence, no background saving.
bind 127.0.0.1
port $port
protected-mode yes
daemonize no
save ""
appendonly no
dir ./
logfile ""
loglevel warning
databases 1
io-threads 1
EOF
    if [ "$1" = redis-huge ]; then
        # The driver fills the server with DEBUG POPULATE, which Redis 7 allows only
        # when asked for (here: from the loopback).
        echo "enable-debug-command local" >>redis.conf
        copy redis-huge-driver.py
    else
        copy redis-driver.sh
    fi
    printf '%s\n' "$port" >redis.port ;;
*)
    echo "prepare.sh: nothing to prepare for $1" >&2
    exit 2 ;;
esac
