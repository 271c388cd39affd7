#!/bin/sh
# native/test.sh: checks of libpagelab_huge.so on the native builds of randread and
# smallheap (make test-native builds them into target/native/ first). The programs
# print their own AnonHugePages (PAGELAB_REPORT_HUGE=1, workloads/src/hugereport.h)
# while their data are still allocated. Where Linux gives no transparent huge pages
# (THP `never`) the checks that some were given are skipped; where it gives them
# unasked (`always`), so are the checks that none were. Then the library under another
# allocator (jemalloc, where installed), and redis-server, which links it. About 3 s.
set -eu
cd "$(dirname "$0")/.."
N=$PWD/target/native
LIB=$N/libpagelab_huge.so
PRELOAD=$LIB   # LD_PRELOAD of run
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

thp=$(sed -n 's/.*\[\([a-z]*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true)
[ -n "$thp" ] || thp=never

ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; fails=$((fails + 1)); }
skip() { echo "skip  $*"; }

# run OUT CATEGORIES [NAME=VALUE...] PROGRAM ARGS...: the program with $PRELOAD (the
# library) preloaded, PAGELAB_HUGE=CATEGORIES (unset for "-"); stdout to OUT, stderr
# to OUT.err.
run() {
    out=$1 cats=$2
    shift 2
    if [ "$cats" = - ]; then
        env -u PAGELAB_HUGE PAGELAB_REPORT_HUGE=1 LD_PRELOAD="$PRELOAD" "$@" >"$out" 2>"$out.err"
    else
        env PAGELAB_HUGE="$cats" PAGELAB_REPORT_HUGE=1 LD_PRELOAD="$PRELOAD" "$@" >"$out" 2>"$out.err"
    fi
}
huge() { sed -n 's/^AnonHugePages: \([0-9]*\) kB$/\1/p' "$1"; }
checksum() { sed -n 's/.*checksum \(0x[0-9a-f]*\),.*/\1/p' "$1"; }

# expect_huge WHAT OUT: some huge pages (unless THP is `never`).
expect_huge() {
    kb=$(huge "$2")
    if [ "$thp" = never ]; then
        skip "$1: THP is never here"
    elif [ "${kb:-0}" -gt 0 ]; then
        ok "$1: AnonHugePages $kb kB"
    else
        bad "$1: AnonHugePages ${kb:-missing}, expected > 0"
    fi
}

# expect_none WHAT OUT: no huge pages (checked where THP is `madvise`).
expect_none() {
    kb=$(huge "$2")
    if [ "$thp" != madvise ]; then
        skip "$1: THP is $thp here, not madvise"
    elif [ "$kb" = 0 ]; then
        ok "$1: AnonHugePages 0 kB"
    else
        bad "$1: AnonHugePages ${kb:-missing}, expected 0"
    fi
}

# expect_same WHAT A B: the same checksum, both runs having printed one.
expect_same() {
    a=$(checksum "$2") b=$(checksum "$3")
    if [ -n "$a" ] && [ "$a" = "$b" ]; then
        ok "$1: checksum $a"
    else
        bad "$1: checksums ${a:-missing} and ${b:-missing}"
    fi
}

# randread: its array, one 256 MiB malloc, is large-dynamic.
run "$T/rr-large" large-dynamic "$N/randread" 256 3000000 || bad "randread large-dynamic: exit $?"
expect_huge "randread 256 MiB, large-dynamic" "$T/rr-large"
run "$T/rr-unset" - "$N/randread" 256 3000000 || bad "randread, PAGELAB_HUGE unset: exit $?"
expect_none "randread 256 MiB, PAGELAB_HUGE unset" "$T/rr-unset"
expect_same "randread with and without huge pages" "$T/rr-large" "$T/rr-unset"
# The padded heap must not take the array: it is mapped, as glibc would.
run "$T/rr-small" small-dynamic "$N/randread" 256 1000 || bad "randread small-dynamic: exit $?"
expect_none "randread 256 MiB, small-dynamic" "$T/rr-small"

# smallheap: 100,000 small blocks in the brk heap, small-dynamic and nothing else.
run "$T/sh-small" small-dynamic "$N/smallheap" 2000000 || bad "smallheap small-dynamic: exit $?"
expect_huge "smallheap, small-dynamic" "$T/sh-small"
run "$T/sh-large" large-dynamic "$N/smallheap" 2000000 || bad "smallheap large-dynamic: exit $?"
expect_none "smallheap, large-dynamic" "$T/sh-large"
run "$T/sh-unset" - "$N/smallheap" 2000000 || bad "smallheap, PAGELAB_HUGE unset: exit $?"
expect_same "smallheap small-dynamic and unset" "$T/sh-small" "$T/sh-unset"
expect_same "smallheap large-dynamic and unset" "$T/sh-large" "$T/sh-unset"

# An unknown category: exit status 2 before the program runs, one line naming it.
status=0
run "$T/unknown" large-dynamic,bogus "$N/randread" 1 1 || status=$?
if [ "$status" = 2 ] && [ ! -s "$T/unknown" ] && [ "$(wc -l <"$T/unknown.err")" -eq 1 ] \
    && grep -q '"bogus"' "$T/unknown.err"; then
    ok "unknown category: exit 2, $(cat "$T/unknown.err")"
else
    bad "unknown category: exit $status, stderr: $(cat "$T/unknown.err")"
fi

# PAGELAB_HUGE_VERBOSE=1: one summary line at exit; randread 4 MiB is one large block.
status=0
run "$T/verbose" static,small-dynamic,large-dynamic PAGELAB_HUGE_VERBOSE=1 "$N/randread" 4 1000 \
    || status=$?
line=$(cat "$T/verbose.err")
case $status:$(($(wc -l <"$T/verbose.err"))):$line in
0:1:"pagelab_huge["*"]: advised static "[1-9]*" ranges "*"; small-dynamic "*"; large-dynamic 1 ranges 4"*" bytes 0 errors")
    ok "verbose summary: $line" ;;
*)
    bad "verbose summary: exit $status, stderr: $line" ;;
esac

# Another allocator: jemalloc preloaded after the library defines malloc & co., which
# the library then forwards every call to (glibc's would crash it: its pointers given
# to jemalloc's free). The checksum is that of randread with nothing preloaded.
JEMALLOC=/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ ! -f "$JEMALLOC" ]; then
    JEMALLOC=$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null \
                | sed -n 's/^[[:space:]]*libjemalloc\.so\.2 .*=> //p' | head -n 1)
fi
if [ -n "$JEMALLOC" ] && [ -f "$JEMALLOC" ]; then
    PRELOAD=
    run "$T/je-plain" - "$N/randread" 64 300000 || bad "randread 64 MiB, nothing preloaded: exit $?"
    PRELOAD="$LIB $JEMALLOC"
    run "$T/je-unset" - "$N/randread" 64 300000 || bad "jemalloc randread, PAGELAB_HUGE unset: exit $?"
    expect_same "jemalloc randread, PAGELAB_HUGE unset" "$T/je-plain" "$T/je-unset"
    expect_none "jemalloc randread 64 MiB, PAGELAB_HUGE unset" "$T/je-unset"
    run "$T/je-large" large-dynamic "$N/randread" 64 300000 || bad "jemalloc randread large-dynamic: exit $?"
    expect_same "jemalloc randread, large-dynamic" "$T/je-plain" "$T/je-large"
    expect_huge "jemalloc randread 64 MiB, large-dynamic" "$T/je-large"
    status=0
    run "$T/je-small" small-dynamic "$N/randread" 64 300000 || status=$?
    expect_same "jemalloc randread, small-dynamic" "$T/je-plain" "$T/je-small"
    expect_none "jemalloc randread 64 MiB, small-dynamic" "$T/je-small"
    line=$(cat "$T/je-small.err")
    case $status:$(($(wc -l <"$T/je-small.err"))):$line in
    0:1:"pagelab_huge: small-dynamic: "*"not glibc's malloc"*)
        ok "jemalloc, small-dynamic: $line" ;;
    *)
        bad "jemalloc, small-dynamic: exit $status, stderr: $line" ;;
    esac
    PRELOAD=$LIB
else
    skip "another allocator: no libjemalloc.so.2 here"
fi

# redis-server (Debian's links libjemalloc.so.2) starts with the library.
if command -v redis-server >/dev/null; then
    status=0
    PAGELAB_HUGE=large-dynamic LD_PRELOAD="$LIB" redis-server --version >"$T/redis" 2>&1 || status=$?
    if [ "$status" = 0 ]; then
        ok "redis-server --version, large-dynamic: $(head -c 60 "$T/redis")"
    else
        bad "redis-server --version, large-dynamic: exit $status, $(head -c 200 "$T/redis")"
    fi
else
    skip "redis-server: not installed"
fi

# A program that asks for huge pages itself gets them, unless PAGELAB_HUGE_ONLY=1
# makes the categories named the only ones.
cat >"$T/asks.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
int main(void)
{
    size_t n = 8 << 20;
    char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || madvise(p, n, MADV_HUGEPAGE) != 0)
        return 1;
    memset(p, 1, n);
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kb;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            printf("AnonHugePages: %ld kB\n", kb);
    return 0;
}
C
if gcc -O1 -o "$T/asks" "$T/asks.c"; then
    run "$T/asks-own" - "$T/asks" || bad "asks: exit $?"
    expect_huge "a program's own madvise, PAGELAB_HUGE unset" "$T/asks-own"
    env -u PAGELAB_HUGE PAGELAB_HUGE_ONLY=1 LD_PRELOAD="$LIB" "$T/asks" >"$T/asks-only" 2>&1 ||
        bad "asks, PAGELAB_HUGE_ONLY=1: exit $?"
    expect_none "a program's own madvise, PAGELAB_HUGE_ONLY=1" "$T/asks-only"
else
    bad "cannot compile the program that asks for huge pages"
fi

# A program built without -fPIE that takes malloc's address (as Debian's python3 does)
# has a "canonical" PLT entry for it, which dlsym(RTLD_DEFAULT, "malloc") returns: the
# library must see through it to glibc's malloc, not call itself through it.
cat >"$T/stub.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void *(*volatile pick)(size_t);
int main(void)
{
    pick = malloc;   /* in code: an absolute relocation, hence the canonical PLT entry */
    char *p = pick(64 << 20);
    memset(p, 1, 64 << 20);
    long sum = 0;
    for (long i = 0; i < (64 << 20); i += 4096)
        sum += p[i];
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kb;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            printf("AnonHugePages: %ld kB\n", kb);
    free(p);
    printf("checksum 0x%lx, done\n", sum);
    return 0;
}
C
if gcc -O1 -fno-pie -no-pie -o "$T/stub" "$T/stub.c"; then
    # The premise: malloc undefined in the program, with an address (the stub's).
    if readelf --dyn-syms -W "$T/stub" 2>/dev/null | grep -Eq ' [0-9a-f]*[1-9a-f][0-9a-f]* +0 FUNC +GLOBAL +DEFAULT +UND malloc'; then
        ok "the non-PIE program has a canonical PLT entry for malloc"
    else
        skip "the non-PIE program has no canonical PLT entry for malloc here (or no readelf)"
    fi
    PRELOAD=$LIB
    run "$T/stub-small" "" "$T/stub" || bad "a non-PIE program taking malloc's address: exit $?"
    run "$T/stub-large" large-dynamic "$T/stub" || bad "a non-PIE program taking malloc's address, large-dynamic: exit $?"
    expect_same "a non-PIE program taking malloc's address" "$T/stub-small" "$T/stub-large"
    expect_huge "a non-PIE program taking malloc's address, large-dynamic" "$T/stub-large"
    # jemalloc preloaded before the library: the stub leads to jemalloc's malloc, which
    # the library must forward to (it says small dynamic cannot be advised under it).
    if [ -n "$JEMALLOC" ] && [ -f "$JEMALLOC" ]; then
        PRELOAD="$JEMALLOC $LIB"
        run "$T/stub-je" small-dynamic "$T/stub" || bad "jemalloc before the library, non-PIE program: exit $?"
        expect_same "jemalloc before the library, non-PIE program" "$T/stub-small" "$T/stub-je"
        if grep -q "not glibc's malloc" "$T/stub-je.err"; then
            ok "jemalloc before the library, non-PIE program: jemalloc is the allocator"
        else
            bad "jemalloc before the library, non-PIE program: jemalloc not taken for the allocator ($(cat "$T/stub-je.err"))"
        fi
        PRELOAD=$LIB
    fi
else
    bad "cannot compile the non-PIE program"
fi

if [ "$fails" -gt 0 ]; then
    echo "native/test.sh: $fails check(s) failed"
    exit 1
fi
