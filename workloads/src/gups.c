/* gups.c -- random read-modify-write updates of a large table, in the style of the
   HPCC RandomAccess benchmark (GUPS, giga-updates per second).

     gups LOG2_WORDS UPDATES [FROM COUNT]

   A table of 2^LOG2_WORDS 64-bit words (2^27: 1 GiB, 2 MiB-aligned) is filled with
   t[i] = i, front to back; then UPDATES times the next value r of HPCC's generator
   (a 64-bit shift register, x <- 2x xor 7 when the top bit is set; here started from
   splitmix64 of a fixed seed) updates one word: t[r mod 2^LOG2_WORDS] ^= r. Each update
   reads and writes a word no cache or TLB holds (a load and a store in the trace). It
   prints the sum of the old values it read, so that a run can be checked; the same
   arguments give the same sum.

   Under `pagelab record --start-off` (recorder/include/pagelab.h) tracing starts with
   the first update (after the table is filled), or with FROM and COUNT only for updates
   FROM to FROM + COUNT - 1: a window of the same run. Outside Valgrind the requests do
   nothing. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pagelab.h"

#define POLY 0x7u               /* HPCC's primitive polynomial */
#define SEED 0x5eed5eedu

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* HPCC RandomAccess's generator: one step of the shift register. */
static uint64_t next(uint64_t r)
{
    return (r << 1) ^ ((int64_t)r < 0 ? POLY : 0);
}

/* N updates of table t (mask = its size - 1) from generator state *r; returns the sum
   of the words' old values. */
static uint64_t update(uint64_t *t, uint64_t mask, uint64_t *r, uint64_t n)
{
    uint64_t sum = 0, x = *r;
    for (uint64_t k = 0; k < n; k++) {
        x = next(x);
        uint64_t *w = &t[x & mask];
        sum += *w;
        *w ^= x;
    }
    *r = x;
    return sum;
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "gups: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 5) {
        fprintf(stderr, "usage: gups LOG2_WORDS UPDATES [FROM COUNT]\n");
        return 2;
    }
    uint64_t log2 = number(argv[1], "LOG2_WORDS");
    uint64_t updates = number(argv[2], "UPDATES");
    uint64_t from = argc == 5 ? number(argv[3], "FROM") : 0;
    uint64_t count = argc == 5 ? number(argv[4], "COUNT") : updates;
    if (log2 < 10 || log2 > 34 || from > updates || count > updates - from) {
        fprintf(stderr, "gups: need 10 <= LOG2_WORDS <= 34 and FROM + COUNT <= UPDATES\n");
        return 2;
    }
    uint64_t words = (uint64_t)1 << log2;
    uint64_t *t = aligned_alloc((size_t)2 << 20, words * sizeof *t);
    if (!t) {
        fprintf(stderr, "gups: cannot allocate %" PRIu64 " MiB\n", words >> 17);
        return 1;
    }
    for (uint64_t i = 0; i < words; i++)
        t[i] = i;

    uint64_t r = splitmix64(SEED), sum = 0;
    sum += update(t, words - 1, &r, from);
    PAGELAB_START();
    sum += update(t, words - 1, &r, count);
    if (argc == 5)
        PAGELAB_STOP();
    sum += update(t, words - 1, &r, updates - from - count);

    printf("gups: %" PRIu64 " words (%" PRIu64 " MiB), %" PRIu64 " updates, sum %016" PRIx64 "\n",
           words, words >> 17, updates, sum);
    free(t);
    return 0;
}
