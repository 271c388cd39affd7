/* randread.c -- dependent random reads of one large array: a TLB miss on nearly
   every read, none of them overlapped, so the page size shows in the run time.

     randread [MIB [READS]]

   One array of MIB MiB (default 1024) comes from a single malloc: one large-dynamic
   block in pagelab's categories, which `pagelab advise` can back with huge pages
   (native/huge_main.c). It is filled with t[i] = i, front to back, 16 bytes a
   store (a recording holds half as many fill references as with 8-byte stores; not
   memset, whose `rep stosb` Valgrind records a byte at a time). Then READS (default
   5,000,000) reads: the next index is the next value of a xorshift64 generator
   (fixed seed) xor the word just read, scaled to the array. Each load's address
   depends on the previous load's value, so the loads cannot overlap and each pays its
   TLB miss and page walk in full, which memory-level parallelism would otherwise hide.

   It prints the sum of the words read (the same arguments give the same sum) and the
   seconds the reads took (CLOCK_MONOTONIC), on one line; with PAGELAB_REPORT_HUGE=1 a
   second line, the AnonHugePages of the process at the end (hugereport.h). Under
   `pagelab record --start-off` (recorder/include/pagelab.h) tracing starts with the
   first read. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hugereport.h"
#include "pagelab.h"

#define SEED 0x5eed5eed12345678u

typedef uint64_t pair __attribute__((vector_size(16), may_alias));

/* t[i] = i for i < words (words even, t 16-byte aligned), one 16-byte store a pair. */
static void fill(uint64_t *t, uint64_t words)
{
    pair *p = (pair *)t, v = { 0, 1 };
    const pair two = { 2, 2 };
    for (uint64_t k = 0; k < words / 2; k++) {
        p[k] = v;
        v += two;
    }
}

/* N dependent reads of t (WORDS words) from generator state *x; returns their sum. */
static uint64_t chase(const uint64_t *t, uint64_t words, uint64_t *x, uint64_t n)
{
    uint64_t r = *x, v = 0, sum = 0;
    for (uint64_t k = 0; k < n; k++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        v = t[(uint64_t)(((unsigned __int128)(r ^ v) * words) >> 64)];
        sum += v;
    }
    *x = r;
    return sum;
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "randread: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 3) {
        fprintf(stderr, "usage: randread [MIB [READS]]  (default 1024 MiB, 5000000 reads)\n");
        return 2;
    }
    uint64_t mib = argc > 1 ? number(argv[1], "MIB") : 1024;
    uint64_t reads = argc > 2 ? number(argv[2], "READS") : 5000000;
    if (mib < 1 || mib > (1u << 20)) {
        fprintf(stderr, "randread: need 1 <= MIB <= 1048576\n");
        return 2;
    }
    uint64_t words = mib << 17;
    uint64_t *t = malloc(words * sizeof *t);
    if (!t) {
        fprintf(stderr, "randread: cannot allocate %" PRIu64 " MiB\n", mib);
        return 1;
    }
    fill(t, words);

    struct timespec t0, t1;
    uint64_t x = SEED;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    PAGELAB_START();
    uint64_t sum = chase(t, words, &x, reads);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    printf("randread: %" PRIu64 " MiB, %" PRIu64 " reads, checksum 0x%016" PRIx64 ", %.3f s\n",
           mib, reads, sum, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    report_huge_pages();
    free(t);
    return 0;
}
