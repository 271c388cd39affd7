/* lucas.c -- iterations of the Lucas-Lehmer test of a Mersenne number 2^P - 1, each
   a squaring by FFT over large heap arrays, in the manner of SPECfp2000's 189.lucas:
   our stand-in for lucas in Cascaval, Duesterwald, Sweeney and Wisniewski, "Multiple
   Page Size Modeling and Optimization" (PACT 2005). In its §5.3 (Figure 4, Table 1) lucas's best category on large
   pages is large dynamic data (§3.3: malloc blocks of 128 KiB or more, which glibc
   serves by mmap); its DTLB misses drop from 1,646 K to 2.7 K a second.

     lucas P ITERATIONS

   s starts at 4 and each iteration makes s = s^2 - 2 mod 2^P - 1 (2^P - 1, P prime,
   is prime iff s is 0 after P - 2 of them). s is held as N balanced digits of
   ceil(P (j + 1) / N) - ceil(P j / N) bits (N the least power of two, at least 4,
   with P / N <= 14), and squared by the irrational-base discrete weighted transform
   of Crandall and Fagin: digit j times 2^(ceil(P j / N) - P j / N), a length-N
   complex FFT, the square of each point, the inverse FFT, the weights taken off, then
   rounding, -2, and the carries (the last one wraps round to digit 0: 2^P = 1).
   The FFT is the four-step one for N = R x C (C = R or 2 R) over the array viewed as
   R rows of C points: R-point FFTs down each column (stride C points: 4 KiB at N =
   65,536, a page per point), the twiddles e^(-2 pi i r c / N), C-point FFTs along
   each row; the squares do not mind the transposed order, and the inverse undoes the
   steps in reverse. The 1D FFTs are iterative radix-2, their roots read with a stride
   from one table of the N roots of unity, computed without libm.

   Four arrays, each its own malloc: the FFT's N complex doubles, the N roots, the N
   digits and the N weights (at N = 65,536: 1 MiB, 1 MiB, 512 KiB, 512 KiB: all large
   dynamic from N = 16,384 on). It prints the low 64 bits of the residue (as
   GIMPS's "Res64"), the largest rounding error seen (below 0.5 when the products are
   exact), and, after P - 2 iterations, whether 2^P - 1 is prime.

   Scaled from the paper: SPEC's lucas squares far longer numbers by far longer FFTs
   (tens of MB of large dynamic data). P = 859,433 (a Mersenne prime's exponent) has
   N = 65,536 and an iteration makes about 9 M data references, so the catalogue's
   run is a few of the 859,431 iterations (s is still short then, 64 bits after 5,
   but every FFT runs over all N points and its references do not depend on the
   values). Small exponents check the code: `lucas 4423 4421` says prime, `lucas 4409
   4407` composite.

   With PAGELAB_REPORT_HUGE=1 a last line gives the AnonHugePages of the process
   (hugereport.h). Under `pagelab record --start-off` (recorder/include/pagelab.h)
   tracing starts with the first iteration. Outside Valgrind the requests do nothing. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hugereport.h"
#include "pagelab.h"

typedef struct {
    double re, im;
} cplx;

/* e^(-2 pi i t): t brought to the nearest quarter turn q / 4, the rest x (|x| <= pi
   / 4) summed by the Taylor series of sin and cos, then turned by q quarter turns. */
static cplx root(double t)
{
    double q = (double)(int64_t)(4 * t + (t >= 0 ? 0.5 : -0.5));
    double x = 6.283185307179586476925 * (t - q / 4), x2 = x * x, s = 1, c = 1;
    for (int k = 20; k > 0; k -= 2) {
        s = 1 - x2 / (k * (k + 1)) * s;
        c = 1 - x2 / ((k - 1) * k) * c;
    }
    s *= x;
    int64_t quarter = (int64_t)q & 3;
    cplx w = {quarter == 0 ? c : quarter == 1 ? -s : quarter == 2 ? -c : s,
              quarter == 0 ? -s : quarter == 1 ? -c : quarter == 2 ? s : c};
    return w;
}

/* 2^f for 0 <= f < 1: the Taylor series of e^(f ln 2). */
static double exp2frac(double f)
{
    double x = f * 0.693147180559945309417, e = 1;
    for (int k = 24; k > 0; k--)
        e = 1 + x / k * e;
    return e;
}

/* In place, the DFT of the n points a[0], a[s], ..., a[(n - 1) s], with the roots
   e^(-2 pi i j / n) = tab[j ts], conjugated when sign is -1 (the inverse). */
static void fft(cplx *a, uint64_t n, uint64_t s, const cplx *tab, uint64_t ts, double sign)
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
        uint64_t half = len / 2, step = n / len * ts;
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

/* The twiddles of the four-step FFT: point (r, c) times e^(-2 pi i r c / N), or its
   conjugate. */
static void twiddle(cplx *a, uint64_t rows, uint64_t cols, const cplx *tab, double sign)
{
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) {
            cplx w = tab[r * c], *p = &a[r * cols + c];
            double wim = sign * w.im, re = p->re * w.re - p->im * wim;
            p->im = p->re * wim + p->im * w.re, p->re = re;
        }
}

/* Balanced digit of t in base 2^bits, into *d; returns the carry. */
static int64_t digit(int64_t t, uint64_t bits, double *d)
{
    int64_t base = (int64_t)1 << bits, v = t & (base - 1);
    if (v >= base / 2)
        v -= base;
    *d = (double)v;
    return (t - v) / base;
}

static void *alloc(size_t size)
{
    void *p = malloc(size);
    if (!p) {
        fprintf(stderr, "lucas: out of memory\n");
        exit(1);
    }
    return p;
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "lucas: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: lucas P ITERATIONS\n");
        return 2;
    }
    uint64_t p = number(argv[1], "P"), iterations = number(argv[2], "ITERATIONS");
    if (p < 5 || p > 100000000 || iterations > 100000000) {
        fprintf(stderr, "lucas: need 5 <= P <= 100000000 and ITERATIONS <= 100000000\n");
        return 2;
    }
    uint64_t n = 4, lg = 2;
    for (; p > 14 * n; n *= 2)
        lg++;
    uint64_t cols = (uint64_t)1 << (lg + 1) / 2, rows = n / cols;
#define START(j) ((p * (j) + n - 1) / n)   /* the first bit of digit j */
#define BITS(j) (START((j) + 1) - START(j))

    cplx *a = alloc(n * sizeof *a), *tab = alloc(n * sizeof *tab);
    double *x = alloc(n * sizeof *x), *w = alloc(n * sizeof *w);
    for (uint64_t j = 0; j < n; j++) {
        tab[j] = root((double)j / (double)n);
        w[j] = exp2frac((double)(START(j) * n - p * j) / (double)n);
        x[j] = j == 0 ? 4 : 0;
    }

    PAGELAB_START();
    double err = 0;
    for (uint64_t it = 0; it < iterations; it++) {
        for (uint64_t j = 0; j < n; j++)
            a[j].re = x[j] * w[j], a[j].im = 0;
        for (uint64_t c = 0; c < cols; c++)
            fft(a + c, rows, cols, tab, cols, 1);
        twiddle(a, rows, cols, tab, 1);
        for (uint64_t r = 0; r < rows; r++)
            fft(a + r * cols, cols, 1, tab, rows, 1);
        for (uint64_t j = 0; j < n; j++) {
            double re = a[j].re * a[j].re - a[j].im * a[j].im;
            a[j].im = 2 * a[j].re * a[j].im, a[j].re = re;
        }
        for (uint64_t r = 0; r < rows; r++)
            fft(a + r * cols, cols, 1, tab, rows, -1);
        twiddle(a, rows, cols, tab, -1);
        for (uint64_t c = 0; c < cols; c++)
            fft(a + c, rows, cols, tab, cols, -1);
        int64_t carry = 0;
        for (uint64_t j = 0; j < n; j++) {
            double v = a[j].re / ((double)n * w[j]);
            int64_t t = (int64_t)(v + (v >= 0 ? 0.5 : -0.5));
            double e = __builtin_fabs(v - (double)t);
            err = e > err ? e : err;
            carry = digit(t + carry - (j == 0 ? 2 : 0), BITS(j), &x[j]);
        }
        for (uint64_t j = 0; carry; j = (j + 1) % n)
            carry = digit((int64_t)x[j] + carry, BITS(j), &x[j]);
    }

    /* The residue in plain digits (0 <= digit < 2^bits), then its low 64 bits. */
    int64_t carry = 0;
    uint64_t zeros = 0, ones = 0, res64 = 0;
    do {
        for (uint64_t j = 0; j < n; j++) {
            int64_t t = (int64_t)x[j] + carry, base = (int64_t)1 << BITS(j);
            x[j] = (double)(t & (base - 1)), carry = (t - (t & (base - 1))) / base;
        }
    } while (carry);
    for (uint64_t j = 0; j < n; j++) {
        zeros += x[j] == 0;
        ones += x[j] == (double)(((uint64_t)1 << BITS(j)) - 1);
        if (START(j) < 64)
            res64 |= (uint64_t)x[j] << START(j);
    }
    printf("lucas: 2^%" PRIu64 " - 1, %" PRIu64 "-point FFT (%" PRIu64 " x %" PRIu64 "), "
           "%" PRIu64 " iterations, residue %016" PRIx64 ", largest rounding error %.3g",
           p, n, rows, cols, iterations, res64, err);
    if (iterations == p - 2)
        printf(", %s", zeros == n || ones == n ? "prime" : "composite");
    printf("\n");
    report_huge_pages();
    free(w), free(x), free(tab), free(a);
    return 0;
}
