/* matmul.c -- tiled dense matrix-matrix multiplication, C = A B, in doubles.

     matmul [N [TILE [ROWS]]]         (defaults: 1024 32 N)

   Stands in for `matmul` of Fang, Zhang, Carter, McKee and Hsieh, "Online
   Superpage Promotion Revisited" (SIGMETRICS 2000), §4.2 and Table 1:
   "the conventional, tiled version of dense matrix-matrix multiplication run on
   1024 x 1024 matrices with 32 x 32 tiles". Our own code, from that description.

   A, B and C are N x N row-major arrays of doubles (N = 1024: a row is 8 KiB, two
   4 KiB pages; each matrix 8 MiB, 2 MiB-aligned). The loops are the textbook six:
   tiles of C (ii, jj), then tiles along the shared dimension (kk), and in a tile, for
   each C[i][j], the dot product of A's row segment with B's column segment:

     for ii, jj, kk (steps of TILE): for i, j in the tile:
         s = C[i][j]; for k in kk .. kk + TILE - 1: s += A[i][k] * B[k][j]; C[i][j] = s

   The walk down B's column touches TILE rows of B, a different page each: with
   32 x 32 tiles that is 32 pages of B plus A's and C's, more than a 32-entry TLB
   holds and well within a 128-entry one (Table 1: 77 % against 0.33 % of the time in
   the TLB miss handler).

   Scaled down: only the first ROWS rows of C are computed (ROWS N^2 multiply-adds; the
   paper's run is ROWS = N = 1024, 1.07 G of them, ~2 G loads, far beyond a Valgrind
   recording). The matrices keep the paper's shape, so every row of C costs what it
   costs in the full run and all of B (8 MiB) is walked for each tile row of C; only
   the first ROWS rows of A and C are initialised and touched. The catalogue runs
   ROWS = 16 (~36 M data references).

   Entries of A and B are small integers (-8 .. 8) drawn from splitmix64 with fixed
   seeds, so every product and sum is exact: the checksum (the sum of C's computed
   entries, and a hash of them) is the same on every machine and in any order of
   summation. Under `pagelab record --start-off` (recorder/include/pagelab.h) tracing
   starts with the multiplication, after the matrices are filled. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pagelab.h"

#define A_SEED 0xa11ceu
#define B_SEED 0xb0b0u

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t x = (*s += 0x9e3779b97f4a7c15u);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* An array of COUNT doubles, 2 MiB-aligned (C11 wants the size rounded up). */
static double *alloc(uint64_t count, const char *what)
{
    uint64_t align = (uint64_t)2 << 20;
    double *p = aligned_alloc(align, (count * sizeof(double) + align - 1) / align * align);
    if (!p) {
        fprintf(stderr, "matmul: cannot allocate %s (%" PRIu64 " MiB)\n", what, count >> 17);
        exit(1);
    }
    return p;
}

/* Rows 0 .. rows - 1 of an n x n matrix: integers -8 .. 8 from seed. */
static void fill(double *m, uint64_t n, uint64_t rows, uint64_t seed)
{
    for (uint64_t i = 0; i < rows * n; i++)
        m[i] = (double)(int)(splitmix64(&seed) % 17) - 8.0;
}

/* The first `rows` rows of C += A B, tiled. */
static void multiply(const double *a, const double *b, double *c, uint64_t n,
                     uint64_t tile, uint64_t rows)
{
    for (uint64_t ii = 0; ii < rows; ii += tile) {
        uint64_t iend = ii + tile < rows ? ii + tile : rows;
        for (uint64_t jj = 0; jj < n; jj += tile)
            for (uint64_t kk = 0; kk < n; kk += tile)
                for (uint64_t i = ii; i < iend; i++)
                    for (uint64_t j = jj; j < jj + tile; j++) {
                        const double *ai = a + i * n, *bj = b + j;
                        double s = c[i * n + j];
                        for (uint64_t k = kk; k < kk + tile; k++)
                            s += ai[k] * bj[k * n];
                        c[i * n + j] = s;
                    }
    }
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "matmul: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 4) {
        fprintf(stderr, "usage: matmul [N [TILE [ROWS]]]   (defaults: 1024 32 N)\n");
        return 2;
    }
    uint64_t n = argc > 1 ? number(argv[1], "N") : 1024;
    uint64_t tile = argc > 2 ? number(argv[2], "TILE") : 32;
    uint64_t rows = argc > 3 ? number(argv[3], "ROWS") : n;
    if (n < 1 || n > 16384 || tile < 1 || n % tile != 0 || rows < 1 || rows > n) {
        fprintf(stderr, "matmul: need 1 <= N <= 16384, TILE dividing N, 1 <= ROWS <= N\n");
        return 2;
    }
    double *a = alloc(n * n, "A"), *b = alloc(n * n, "B"), *c = alloc(n * n, "C");
    fill(a, n, rows, A_SEED);
    fill(b, n, n, B_SEED);
    for (uint64_t i = 0; i < rows * n; i++)
        c[i] = 0.0;

    PAGELAB_START();
    multiply(a, b, c, n, tile, rows);

    int64_t sum = 0;
    uint64_t hash = 0;
    for (uint64_t i = 0; i < rows * n; i++) {
        int64_t v = (int64_t)c[i];
        sum += v;
        hash = (hash ^ (uint64_t)v) * 0x100000001b3u;
    }
    printf("matmul: %" PRIu64 "x%" PRIu64 " doubles, %" PRIu64 "x%" PRIu64 " tiles, "
           "%" PRIu64 " rows of C, sum %" PRId64 ", hash %016" PRIx64 "\n",
           n, n, tile, tile, rows, sum, hash);
    free(c);
    free(b);
    free(a);
    return 0;
}
