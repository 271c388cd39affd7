/* fft3d.c -- 3D complex FFT of an N x N x N grid, the "FFT (200^3 matrix)" of
   Navarro, Iyer, Druschel and Cox, "Practical, Transparent Operating System Support
   for Superpages" (OSDI 2002): on Gopalan's slides of it ("Best-case benefits" and
   "Why multiple superpage sizes") it gains 55% on an Alpha 21264 (128-entry DTLB),
   all of it from 4 MB pages.

     fft3d N PASSES

   The grid holds N^3 complex doubles (re, im: 16 bytes), x fastest: point (x, y, z)
   at (z N + y) N + x, in one 2 MiB-aligned block (N = 64: 4 MiB), filled with values
   in [-1, 1) drawn by splitmix64 (fixed seed). A pass is one 3D transform, made of
   three passes of 1D transforms: N^2 lines along x (contiguous), along y (stride N
   points) and along z (stride N^2 points: 64 KiB at N = 64, so each point of a z line
   lies on another page). Each line is transformed in place, where it lies, by an
   iterative radix-2 FFT (bit-reversal permutation, then log2 N stages of butterflies,
   roots from a table of N/2); in the y and z passes, consecutive lines differ in x.
   Passes alternate forward and inverse (the inverse scaled by 1/N^3), so that an
   even number of passes gives back the grid: the program then prints the largest
   difference from the start, besides a checksum of the last grid (the same
   arguments give the same output). The roots come from our own series, without libm.

   Scaled from the paper: 200^3 (128 MB, the paper's size, not a power of two) makes
   far too many references to trace, and 128^3 (32 MiB) 189 M for one transform; at
   64^3 (4 MiB) a transform makes about 20 M. The TLB-hostile structure is kept: the
   z pass strides by a whole plane. But a z line then touches 64 pages, fewer than the
   Alpha's 128 DTB entries, and the next 255 lines (511 on 8 KiB pages) touch the same
   ones, whereas the paper's z lines (200 points, 640 KB apart) touched 200 pages,
   more than the DTB holds with any page below 4 MB. So on pagelab's alpha-21264
   preset a 64^3 transform misses the DTB about once in 8,000 references (on skylake
   the L1 DTLB misses often, the STLB hardly ever): superpages have little to gain.
   N = 128 restores the thrashing z lines (but 512 KiB pages then hold two planes).

   With PAGELAB_REPORT_HUGE=1 a last line gives the AnonHugePages of the process
   (hugereport.h). Under `pagelab record --start-off` (recorder/include/pagelab.h)
   tracing starts with the first pass (after the grid is filled). Outside Valgrind
   the requests do nothing. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hugereport.h"
#include "pagelab.h"

#define SEED 0xff73du

typedef struct {
    double re, im;
} cplx;

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* Point k's starting value: re and im in [-1, 1), 2^-52 apart. */
static cplx start(uint64_t k)
{
    uint64_t r = splitmix64(SEED + k);
    cplx c = {(double)(r >> 11) * 0x1p-52 - 1, (double)(splitmix64(r) >> 11) * 0x1p-52 - 1};
    return c;
}

/* e^(-2 pi i t), for t a fraction of a turn: t is brought to the nearest quarter turn
   q / 4, the rest x (|x| <= pi / 4) summed by the Taylor series of sin and cos (ten
   terms each: an error below 2^-60), then turned by q quarter turns. */
static cplx root(double t)
{
    double q = (double)(int64_t)(4 * t + (t >= 0 ? 0.5 : -0.5));
    double x = 6.283185307179586476925 * (t - q / 4), x2 = x * x, s = 1, c = 1;
    for (int k = 20; k > 0; k -= 2) {
        s = 1 - x2 / (k * (k + 1)) * s;
        c = 1 - x2 / ((k - 1) * k) * c;
    }
    s *= x;
    cplx w;
    switch ((int64_t)q & 3) {
    case 0: w.re = c, w.im = s; break;
    case 1: w.re = -s, w.im = c; break;
    case 2: w.re = -c, w.im = -s; break;
    default: w.re = s, w.im = -c; break;
    }
    w.im = -w.im;
    return w;
}

/* In place, the DFT of the N points a[0], a[s], ..., a[(N - 1) s]; tab[j] is
   e^(-2 pi i j / N) (j < N / 2), conjugated when sign is -1 (the inverse). */
static void fft(cplx *a, uint64_t n, uint64_t s, const cplx *tab, double sign)
{
    for (uint64_t i = 1, j = 0; i < n; i++) {
        uint64_t bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j |= bit;
        if (i < j) {
            cplx t = a[i * s];
            a[i * s] = a[j * s];
            a[j * s] = t;
        }
    }
    for (uint64_t len = 2; len <= n; len <<= 1) {
        uint64_t half = len / 2, step = n / len;
        for (uint64_t i = 0; i < n; i += len)
            for (uint64_t j = 0; j < half; j++) {
                cplx w = tab[j * step], *p = &a[(i + j) * s], *q = &a[(i + j + half) * s];
                double wim = sign * w.im;
                double tre = q->re * w.re - q->im * wim, tim = q->re * wim + q->im * w.re;
                q->re = p->re - tre, q->im = p->im - tim;
                p->re += tre, p->im += tim;
            }
    }
}

/* One 3D transform of grid g: along x, then y, then z. */
static void fft3d(cplx *g, uint64_t n, const cplx *tab, double sign)
{
    for (uint64_t zy = 0; zy < n * n; zy++)
        fft(g + zy * n, n, 1, tab, sign);
    for (uint64_t z = 0; z < n; z++)
        for (uint64_t x = 0; x < n; x++)
            fft(g + z * n * n + x, n, n, tab, sign);
    for (uint64_t y = 0; y < n; y++)
        for (uint64_t x = 0; x < n; x++)
            fft(g + y * n + x, n, n * n, tab, sign);
    if (sign < 0) {
        double scale = 1.0 / (double)(n * n * n);
        for (uint64_t k = 0; k < n * n * n; k++)
            g[k].re *= scale, g[k].im *= scale;
    }
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "fft3d: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fft3d N PASSES\n");
        return 2;
    }
    uint64_t n = number(argv[1], "N");
    uint64_t passes = number(argv[2], "PASSES");
    if (n < 2 || n > 1024 || (n & (n - 1)) || passes > 1000) {
        fprintf(stderr, "fft3d: need N a power of two, 2 <= N <= 1024, and PASSES <= 1000\n");
        return 2;
    }
    uint64_t points = n * n * n, align = (uint64_t)2 << 20;
    cplx *g = aligned_alloc(align, (points * sizeof *g + align - 1) / align * align);
    cplx *tab = malloc(n / 2 * sizeof *tab);
    if (!g || !tab) {
        fprintf(stderr, "fft3d: cannot allocate %" PRIu64 " MiB\n", points >> 16);
        return 1;
    }
    for (uint64_t j = 0; j < n / 2; j++)
        tab[j] = root((double)j / (double)n);
    for (uint64_t k = 0; k < points; k++)
        g[k] = start(k);

    PAGELAB_START();
    for (uint64_t p = 0; p < passes; p++)
        fft3d(g, n, tab, p % 2 ? -1 : 1);

    double sum = 0, err = 0;
    for (uint64_t k = 0; k < points; k++) {
        sum += (double)(k % 7 + 1) * g[k].re + (double)(k % 5 + 1) * g[k].im;
        if (passes % 2 == 0) {
            cplx c = start(k);
            double d = __builtin_fabs(g[k].re - c.re) + __builtin_fabs(g[k].im - c.im);
            err = d > err ? d : err;
        }
    }
    printf("fft3d: %" PRIu64 "^3 complex doubles (%" PRIu64 " KiB), %" PRIu64 " passes, "
           "checksum %.12e", n, points * 16 / 1024, passes, sum);
    if (passes % 2 == 0)
        printf(", largest error %.2e", err);
    printf("\n");
    report_huge_pages();
    free(tab);
    free(g);
    return 0;
}
