/* transpose.c -- naive out-of-place transpose of an N x N matrix of doubles, the
   "1000x1000 matrix transpose" of Navarro, Iyer, Druschel and Cox, "Practical,
   Transparent Operating System Support for Superpages" (OSDI 2002): on the slides
   (Gopalan's lecture slides of it, "Best-case benefits", "Other benchmarks") it
   gains 655% from superpages on an Alpha 21264 (8 KiB base pages, 128-entry DTLB).

     transpose [N [REPEATS]]        (defaults 1000 and 10)

   Two N x N matrices of doubles, row-major, each 2 MiB-aligned (N = 1000: 8 MB each,
   as in the paper). A is filled front to back with integers below 2^20 (splitmix64 of
   the element's index, fixed seed). Then REPEATS transposes, each the naive two loops
     for i, for j: dst[j][i] = src[i][j]
   from A to B, then from B back to A, and so on: the reads walk src along its rows,
   the writes walk dst down its columns, N * 8 bytes apart (8,000 bytes at N = 1000),
   so every store of a column falls on another 4 KiB page (on 8 KiB pages, on another
   page 39 times in 40) and a column touches about N pages, far more than a TLB holds.
   Nothing is blocked or tiled: this is the TLB-hostile loop the paper measured.

   It prints the checksum sum over k of (k mod 8 + 1) * M[k] of the last matrix
   written (exact in doubles: the same arguments give the same sum). Only the
   repetitions are scaled: the paper does not say how many transposes it timed; ten
   make about 23 M data references under Valgrind (two a pair of elements).

   With PAGELAB_REPORT_HUGE=1 a last line gives the AnonHugePages of the process
   (hugereport.h). Under `pagelab record --start-off` (recorder/include/pagelab.h)
   tracing starts with the first transpose (after A is filled). Outside Valgrind the
   requests do nothing. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hugereport.h"
#include "pagelab.h"

#define SEED 0x7a5905eu

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* An N x N matrix of doubles, 2 MiB-aligned (C11 wants the size rounded up). */
static double *matrix(uint64_t n)
{
    uint64_t align = (uint64_t)2 << 20;
    double *m = aligned_alloc(align, (n * n * 8 + align - 1) / align * align);
    if (!m) {
        fprintf(stderr, "transpose: cannot allocate %" PRIu64 " MiB\n", (n * n) >> 17);
        exit(1);
    }
    return m;
}

/* dst = the transpose of src: src read along its rows, dst written down its columns. */
static void transpose(double *restrict dst, const double *restrict src, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t j = 0; j < n; j++)
            dst[j * n + i] = src[i * n + j];
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "transpose: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 3) {
        fprintf(stderr, "usage: transpose [N [REPEATS]]\n");
        return 2;
    }
    uint64_t n = argc > 1 ? number(argv[1], "N") : 1000;
    uint64_t repeats = argc > 2 ? number(argv[2], "REPEATS") : 10;
    if (n < 2 || n > 32768 || repeats < 1 || repeats > 1000000) {
        fprintf(stderr, "transpose: need 2 <= N <= 32768 and 1 <= REPEATS <= 1000000\n");
        return 2;
    }
    double *a = matrix(n), *b = matrix(n);
    for (uint64_t k = 0; k < n * n; k++)
        a[k] = (double)(splitmix64(SEED + k) & 0xfffff);

    PAGELAB_START();
    for (uint64_t r = 0; r < repeats; r++) {
        if (r % 2 == 0)
            transpose(b, a, n);
        else
            transpose(a, b, n);
    }

    /* Below N^2 * 8 * 2^20 <= 2^53 (N <= 32768), so the sum is exact. */
    const double *m = repeats % 2 ? b : a;
    double sum = 0;
    for (uint64_t k = 0; k < n * n; k++)
        sum += (double)(k % 8 + 1) * m[k];
    printf("transpose: %" PRIu64 " x %" PRIu64 " doubles (%" PRIu64 " KiB each), "
           "%" PRIu64 " transposes, checksum %" PRIu64 "\n",
           n, n, n * n * 8 / 1024, repeats, (uint64_t)sum);
    report_huge_pages();
    free(b);
    free(a);
    return 0;
}
