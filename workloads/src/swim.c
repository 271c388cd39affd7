/* swim.c -- a shallow-water finite-difference model on a periodic N x N grid, in the
   manner of SPECfp2000's 171.swim, whose data are all static: our stand-in for swim in
   Cascaval, Duesterwald, Sweeney and Wisniewski, "Multiple Page Size Modeling and
   Optimization" (PACT 2005). In its §5.3
   (Figure 4, Table 1) swim gains the most from large pages of all its benchmarks
   (59%), and static data (§3.3's category: data and BSS) is its best category.

     swim N STEPS [ORDER]        (ORDER: rows, the default, or columns)

   Thirteen global arrays of (NMAX + 1)^2 doubles in BSS (NMAX = 512: 2.0 MiB each,
   26 MiB in all), like swim's Fortran COMMON blocks of a fixed size, of which the run
   uses (N + 1)^2 (N <= NMAX): the velocities u, v and the pressure p at three
   time levels (old, now, new), the mass fluxes cu, cv, the vorticity z and h. Stored
   as in the Fortran, the first index i contiguous: element (i, j) is a[j][i].

   Initial state: a stream function psi = A sin((i + 1/2) 2pi/N) sin((j + 1/2) 2pi/N)
   gives u and v by differences; p = P (cos(4pi i/N) + cos(4pi j/N)) + 50000. Each
   time step (dt = 90 s on a 100 km grid) is swim's three sweeps: the fluxes cu, cv,
   the vorticity z and h from u, v, p; the new u, v, p by leapfrog (forward for the
   first step); the Robert-Asselin time filter (alpha = 0.001), which also makes the
   new level the current one. After each of the first two sweeps the periodic edges
   (column N, row N) are copied from the other side: walks down columns, a page per
   point. The sines and cosines come from our own series, without libm.

   The sweeps go along the rows (i innermost), as swim's Fortran does: a dozen
   streams, a new page every 512 points of each, so a 4 KiB TLB misses about once in
   800 references. With ORDER columns they go down the columns (j innermost), as a C
   transliteration that kept the Fortran's loop nest but wrote a[i][j] would: each
   reference then falls on another page (rows are 4,104 bytes), TLB-bound as swim is
   in the paper (Table 1: 2,877 K DTLB misses a second on 4 KiB pages, 0.2 K on 16 MB
   pages). Both orders compute the same values.

   It prints swim's three checks, the sums of |p|, |u| and |v| over the N x N points
   (the same arguments give the same output). Scaled from the paper: SPEC's reference
   grid is over a thousand points a side (arrays of about 14 MB; §5.3 counts 15
   large pages of 16 MB) run for hundreds of steps; at 512 x 512 a step
   makes about 13 M data references, so the catalogue's run is a few steps. The data
   stay static and beyond a 4 KiB TLB's reach (26 MiB, a dozen streams of pages).

   With PAGELAB_REPORT_HUGE=1 a last line gives the AnonHugePages of the process
   (hugereport.h). Under `pagelab record --start-off` (recorder/include/pagelab.h)
   tracing starts with the first step (after the initial state). Outside Valgrind the
   requests do nothing. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hugereport.h"
#include "pagelab.h"

#define NMAX 512
#define N1 (NMAX + 1)
#define PI 3.14159265358979323846

static double u[N1][N1], v[N1][N1], p[N1][N1], unew[N1][N1], vnew[N1][N1], pnew[N1][N1],
    uold[N1][N1], vold[N1][N1], pold[N1][N1], cu[N1][N1], cv[N1][N1], z[N1][N1], h[N1][N1];
static double sn[N1], cs[N1];   /* sin((i + 1/2) 2pi/N), cos(4pi i/N) */

static int n, columns;

/* A sweep over the points (i, j), 0 <= i, j < m, calling f(i, j, ...) at each: i
   innermost, as in swim's Fortran (along the rows: i is contiguous), or j innermost
   with ORDER columns (down the columns: a page per point). */
#define SWEEP(m, call)                                  \
    do {                                                \
        if (columns)                                    \
            for (int i = 0; i < (m); i++)               \
                for (int j = 0; j < (m); j++)           \
                    call;                               \
        else                                            \
            for (int j = 0; j < (m); j++)               \
                for (int i = 0; i < (m); i++)           \
                    call;                               \
    } while (0)
static double tdt;
static const double dt = 90, dx = 1e5, dy = 1e5, a = 1e6, alpha = 0.001;

/* sin(x) for |x| <= 2pi + 1: brought to |x| <= pi/2 by symmetry, then its Taylor
   series (twelve terms: an error below 2^-60). */
static double sine(double x)
{
    if (x > PI)
        x -= 2 * PI;
    if (x < -PI)
        x += 2 * PI;
    if (x > PI / 2)
        x = PI - x;
    if (x < -PI / 2)
        x = -PI - x;
    double x2 = x * x, s = 1;
    for (int k = 24; k > 0; k -= 2)
        s = 1 - x2 / (k * (k + 1)) * s;
    return x * s;
}

/* The periodic copies of array f's edges: column N from column 0 (cols = 1) or the
   other way round (cols = -1), then row N from row 0 or the other way round (which
   also sets the corners as swim does). */
static void edges(double f[N1][N1], int cols, int rows)
{
    for (int j = 0; j <= n; j++) {
        if (cols > 0)
            f[j][n] = f[j][0];
        else
            f[j][0] = f[j][n];
    }
    for (int i = 0; i <= n; i++) {
        if (rows > 0)
            f[n][i] = f[0][i];
        else
            f[0][i] = f[n][i];
    }
}

static inline void point1(int i, int j, double fsdx, double fsdy)
{
    cu[j][i + 1] = .5 * (p[j][i + 1] + p[j][i]) * u[j][i + 1];
    cv[j + 1][i] = .5 * (p[j + 1][i] + p[j][i]) * v[j + 1][i];
    z[j + 1][i + 1] = (fsdx * (v[j + 1][i + 1] - v[j + 1][i]) - fsdy * (u[j + 1][i + 1] - u[j][i + 1]))
        / (p[j][i] + p[j][i + 1] + p[j + 1][i + 1] + p[j + 1][i]);
    h[j][i] = p[j][i] + .25 * (u[j][i + 1] * u[j][i + 1] + u[j][i] * u[j][i]
                               + v[j + 1][i] * v[j + 1][i] + v[j][i] * v[j][i]);
}

static void calc1(void)
{
    double fsdx = 4 / dx, fsdy = 4 / dy;
    SWEEP(n, point1(i, j, fsdx, fsdy));
    edges(cu, -1, 1), edges(cv, 1, -1), edges(z, -1, -1), edges(h, 1, 1);
}

static inline void point2(int i, int j, double tdts8, double tdtsdx, double tdtsdy)
{
    unew[j][i + 1] = uold[j][i + 1]
        + tdts8 * (z[j + 1][i + 1] + z[j][i + 1]) * (cv[j + 1][i + 1] + cv[j + 1][i] + cv[j][i] + cv[j][i + 1])
        - tdtsdx * (h[j][i + 1] - h[j][i]);
    vnew[j + 1][i] = vold[j + 1][i]
        - tdts8 * (z[j + 1][i + 1] + z[j + 1][i]) * (cu[j + 1][i + 1] + cu[j + 1][i] + cu[j][i] + cu[j][i + 1])
        - tdtsdy * (h[j + 1][i] - h[j][i]);
    pnew[j][i] = pold[j][i] - tdtsdx * (cu[j][i + 1] - cu[j][i]) - tdtsdy * (cv[j + 1][i] - cv[j][i]);
}

static void calc2(void)
{
    double tdts8 = tdt / 8, tdtsdx = tdt / dx, tdtsdy = tdt / dy;
    SWEEP(n, point2(i, j, tdts8, tdtsdx, tdtsdy));
    edges(unew, -1, 1), edges(vnew, 1, -1), edges(pnew, 1, 1);
}

static inline void point3(int i, int j, double f)
{
    uold[j][i] = u[j][i] + f * (unew[j][i] - 2 * u[j][i] + uold[j][i]);
    vold[j][i] = v[j][i] + f * (vnew[j][i] - 2 * v[j][i] + vold[j][i]);
    pold[j][i] = p[j][i] + f * (pnew[j][i] - 2 * p[j][i] + pold[j][i]);
    u[j][i] = unew[j][i], v[j][i] = vnew[j][i], p[j][i] = pnew[j][i];
}

/* The time filter (forward: first = 1, no filter, and the leapfrog's 2 dt from now). */
static void calc3(int first)
{
    SWEEP(n + 1, point3(i, j, first ? 0 : alpha));
    if (first)
        tdt += tdt;
}

static long number(const char *s, const char *what)
{
    char *end;
    long v = strtol(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "swim: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: swim N STEPS [rows|columns]\n");
        return 2;
    }
    long nn = number(argv[1], "N"), steps = number(argv[2], "STEPS");
    columns = argc == 4 && strcmp(argv[3], "columns") == 0;
    if (nn < 4 || nn > NMAX || steps < 1 || steps > 100000
        || (argc == 4 && !columns && strcmp(argv[3], "rows") != 0)) {
        fprintf(stderr, "swim: need 4 <= N <= %d, 1 <= STEPS <= 100000, ORDER rows or columns\n",
                NMAX);
        return 2;
    }
    n = (int)nn;
    double di = 2 * PI / n, pcf = PI * PI * a * a / (n * dx * n * dx);
    for (int i = 0; i <= n; i++)
        sn[i] = sine((i + .5) * di), cs[i] = sine(2 * i % n * di + PI / 2);
    for (int j = 0; j < n; j++)   /* psi(i, j) = a sn[i] sn[j] */
        for (int i = 0; i < n; i++) {
            u[j][i + 1] = -a * sn[i + 1] * (sn[j + 1] - sn[j]) / dy;
            v[j + 1][i] = a * (sn[i + 1] - sn[i]) * sn[j + 1] / dx;
        }
    edges(u, -1, 1), edges(v, 1, -1);
    for (int j = 0; j <= n; j++)
        for (int i = 0; i <= n; i++) {
            p[j][i] = pcf * (cs[i] + cs[j]) + 50000;
            uold[j][i] = u[j][i], vold[j][i] = v[j][i], pold[j][i] = p[j][i];
        }
    tdt = dt;

    PAGELAB_START();
    for (long t = 0; t < steps; t++) {
        calc1();
        calc2();
        calc3(t == 0);
    }

    double pc = 0, uc = 0, vc = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            pc += __builtin_fabs(p[j][i]);
            uc += __builtin_fabs(u[j][i]);
            vc += __builtin_fabs(v[j][i]);
        }
    printf("swim: %d x %d grid, 13 static arrays of %d KiB, %ld steps along the %s, "
           "pcheck %.12e ucheck %.12e vcheck %.12e\n",
           n, n, (int)(sizeof u / 1024), steps, columns ? "columns" : "rows", pc, uc, vc);
    report_huge_pages();
    return 0;
}
