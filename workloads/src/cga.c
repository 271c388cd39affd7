/* cga.c -- conjugate gradient on a random sparse symmetric positive definite matrix,
   in the style of NAS Parallel Benchmarks 2.3 CG, class A.

     cga [N [NONZER [NITER [CGIT]]]]    (defaults: 14000 11 15 25, NPB's class A)

   Stands in for `cga` of Fang, Zhang, Carter, McKee and Hsieh, "Online Superpage
   Promotion Revisited" (SIGMETRICS 2000), §4.2 and Table 1: "the
   NPB2.3 benchmark suite's class A conjugate gradient benchmark, which performs a
   sparse matrix-vector product". Our own code, from NPB's published description of
   CG, not NPB's source; in particular the matrix is not NPB's makea's.

   The matrix A (N x N) is built simply and deterministically, row by row, with no
   scattered stores: 6 NONZER distinct random offsets d (splitmix64, fixed seed) from
   1 to (N - 1) / 2 give every row i its entries off the diagonal, at the columns
   (i + d) mod N and (i - d) mod N (a random circulant pattern: symmetric, the same
   for every row), each of value -u, u in (0, 1] a hash of its pair {i, j}, so A is
   symmetric; the diagonal is 12 NONZER + 1, more than the sum of the others in its
   row, so A is positive definite. That is (12 NONZER + 1) N nonzeros: 1.86 M for
   class A (NPB's random pattern: 1.85 M), in compressed sparse rows (int column
   indices, double values: 21 MiB), each row's columns in increasing order as NPB's
   are. A row's 133 columns spread over the whole vector as NPB's random ones do;
   only the sparsity pattern repeats from row to row, which NPB's does not.

   Then NPB's inverse power iteration: x = (1, ..., 1); NITER times, CGIT iterations of
   CG solve A z = x (from z = 0; a sparse product A p each, and one A z for the residual
   norm), zeta = SHIFT + 1 / (x . z) with class A's SHIFT = 20, x = z / |z|. It prints
   zeta and the last residual norm (the same arguments give the same output on
   machines with IEEE doubles; the square roots are our own, no libm). The product's
   gathers p[col] sweep the 28 pages of p (N = 14,000 doubles) in every row; with the
   streams of A and the other vectors that is about what a 32-entry TLB holds, a
   fraction of a 128-entry one (Table 1: 15 % against 3.7 % of the time).

   Scaled down: NPB's class A run is 15 x 26 products (~2.2 G data references); the
   catalogue runs NITER = 1, CGIT = 6 (7 products, ~5.8 M references each, after the
   matrix's construction, ~7.5 M: ~48 M in all). Under `pagelab record --start-off`
   (recorder/include/pagelab.h) tracing starts with the first CG iteration, after the
   matrix is built. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pagelab.h"

#define OFFSET_SEED 0xc9a1u
#define SHIFT 20.0

static uint64_t mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static uint64_t splitmix64(uint64_t *s)
{
    return mix(*s += 0x9e3779b97f4a7c15u);
}

static void *alloc(uint64_t count, uint64_t size, const char *what)
{
    uint64_t align = (uint64_t)2 << 20, bytes = count * size;
    void *p = aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) {
        fprintf(stderr, "cga: cannot allocate %s (%" PRIu64 " KiB)\n", what, bytes >> 10);
        exit(1);
    }
    return p;
}

/* The 2 k + 1 signed offsets of a row, in increasing order: -d_k .. -d_1, 0,
   d_1 .. d_k, the d distinct, from 1 to (n - 1) / 2 (so no two columns coincide). */
static void offsets(int32_t *e, int32_t k, int32_t n)
{
    uint64_t s = OFFSET_SEED;
    int32_t *d = e + k + 1;
    for (int32_t m = 0; m < k; m++) {
        int32_t v, dup;
        do {
            v = 1 + (int32_t)(splitmix64(&s) % (uint64_t)((n - 1) / 2));
            dup = 0;
            for (int32_t q = 0; q < m; q++)
                dup |= d[q] == v;
        } while (dup);
        int32_t q = m;                  /* insertion: d[0 .. m] stays sorted */
        for (; q > 0 && d[q - 1] > v; q--)
            d[q] = d[q - 1];
        d[q] = v;
    }
    e[k] = 0;
    for (int32_t m = 0; m < k; m++)
        e[k - 1 - m] = -d[m];
}

/* A's entry (i, j), i != j: symmetric, in [-1, 0). */
static double value(int32_t i, int32_t j, int32_t n)
{
    uint64_t lo = (uint64_t)(i < j ? i : j), hi = (uint64_t)(i < j ? j : i);
    return -(double)((mix(lo * (uint64_t)n + hi) >> 11) + 1) * 0x1p-53;
}

/* The square root of v by Newton's method from above: IEEE operations only, so the
   same on every machine (no libm). */
static double root(double v)
{
    double r = v > 1.0 ? v : 1.0, next;
    if (v <= 0.0)
        return 0.0;
    while ((next = 0.5 * (r + v / r)) < r)
        r = next;
    return r;
}

/* q = A p */
static void spmv(int32_t n, const int32_t *row, const int32_t *col, const double *a,
                 const double *p, double *q)
{
    for (int32_t i = 0; i < n; i++) {
        double s = 0.0;
        for (int32_t e = row[i]; e < row[i + 1]; e++)
            s += a[e] * p[col[e]];
        q[i] = s;
    }
}

static double dot(int32_t n, const double *x, const double *y)
{
    double s = 0.0;
    for (int32_t i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "cga: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 5) {
        fprintf(stderr, "usage: cga [N [NONZER [NITER [CGIT]]]]   (defaults: 14000 11 15 25)\n");
        return 2;
    }
    uint64_t nn = argc > 1 ? number(argv[1], "N") : 14000;
    uint64_t nonzer = argc > 2 ? number(argv[2], "NONZER") : 11;
    uint64_t niter = argc > 3 ? number(argv[3], "NITER") : 15;
    uint64_t cgit = argc > 4 ? number(argv[4], "CGIT") : 25;
    if (nonzer < 1 || nn < 12 * nonzer + 1 || nn > 10000000 || nn * (12 * nonzer + 1) > INT32_MAX
        || niter < 1 || niter > 1000 || cgit < 1 || cgit > 1000) {
        fprintf(stderr, "cga: need NONZER >= 1, 12 NONZER + 1 <= N <= 10^7, (12 NONZER + 1) N "
                        "< 2^31, 1 <= NITER, CGIT <= 1000\n");
        return 2;
    }
    int32_t n = (int32_t)nn, k = (int32_t)(6 * nonzer), m = 2 * k + 1;
    uint64_t nnz = (uint64_t)m * nn;
    int32_t *e = alloc((uint64_t)m, 4, "offsets"), *row = alloc(nn + 1, 4, "row starts");
    int32_t *col = alloc(nnz, 4, "columns");
    double *a = alloc(nnz, 8, "values");
    offsets(e, k, n);

    /* Row i: the columns i + e mod n in increasing order: those that wrap past n - 1
       (e[h ..]), then those that do not (e[l .. h - 1]), then those that wrap below 0
       (e[.. l - 1]). */
    for (int32_t i = 0, l = k, h = m; i < n; i++) {
        while (l > 0 && e[l - 1] + i >= 0)
            l--;
        while (h > 0 && e[h - 1] >= n - i)
            h--;
        int32_t *c = col + (uint64_t)i * m;
        double *v = a + (uint64_t)i * m;
        row[i] = i * m;
        for (int32_t q = h; q < m; q++)
            *c++ = i + e[q] - n;
        for (int32_t q = l; q < h; q++)
            *c++ = i + e[q];
        for (int32_t q = 0; q < l; q++)
            *c++ = i + e[q] + n;
        for (c = col + (uint64_t)i * m; c < col + (uint64_t)(i + 1) * m; c++)
            *v++ = *c == i ? (double)m : value(i, *c, n);
    }
    row[n] = n * m;

    double *x = alloc(nn, 8, "x"), *z = alloc(nn, 8, "z"), *p = alloc(nn, 8, "p");
    double *q = alloc(nn, 8, "q"), *r = alloc(nn, 8, "r");
    for (int32_t i = 0; i < n; i++)
        x[i] = 1.0;

    PAGELAB_START();
    double zeta = 0.0, rnorm = 0.0;
    for (uint64_t it = 0; it < niter; it++) {
        for (int32_t i = 0; i < n; i++) {
            z[i] = 0.0;
            r[i] = p[i] = x[i];
        }
        double rho = dot(n, r, r);
        for (uint64_t k = 0; k < cgit; k++) {
            spmv(n, row, col, a, p, q);
            double alpha = rho / dot(n, p, q), rho0 = rho;
            for (int32_t i = 0; i < n; i++) {
                z[i] += alpha * p[i];
                r[i] -= alpha * q[i];
            }
            rho = dot(n, r, r);
            double beta = rho / rho0;
            for (int32_t i = 0; i < n; i++)
                p[i] = r[i] + beta * p[i];
        }
        spmv(n, row, col, a, z, r);
        double sum = 0.0;
        for (int32_t i = 0; i < n; i++)
            sum += (x[i] - r[i]) * (x[i] - r[i]);
        rnorm = root(sum);
        zeta = SHIFT + 1.0 / dot(n, x, z);
        double scale = 1.0 / root(dot(n, z, z));
        for (int32_t i = 0; i < n; i++)
            x[i] = scale * z[i];
    }

    printf("cga: n %" PRId32 ", %" PRIu64 " nonzeros (%" PRIu64 " KiB), %" PRIu64 " x %" PRIu64
           " CG iterations, zeta %.13e, rnorm %.6e\n",
           n, nnz, nnz * 12 >> 10, niter, cgit, zeta, rnorm);
    free(r);
    free(q);
    free(p);
    free(z);
    free(x);
    free(a);
    free(col);
    free(row);
    free(e);
    return 0;
}
