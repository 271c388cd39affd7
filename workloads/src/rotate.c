/* rotate.c -- rotation of a colour image about its centre, bilinear interpolation.

     rotate [SIZE [MILLIRADIANS]]       (defaults: 1024 1000, the paper's)

   Stands in for `rotate` of Fang, Zhang, Carter, McKee and Hsieh, "Online Superpage
   Promotion Revisited" (SIGMETRICS 2000), §4.2 and Table 1: it "turns
   a 1024 x 1024 color image clockwise through one radian". Our own code, from that
   description.

   The images are SIZE x SIZE pixels of 4 bytes, R G B A (channels as bytes, the
   usual layout of image code), so a row of 1,024 pixels is 4 KiB, one page (each
   image 4 MiB, 2 MiB-aligned). The source is generated: a checkerboard of 16-pixel
   squares in R, a ramp in G, noise in B (splitmix64, fixed seed), A = 255. Each
   destination pixel, in row order, is mapped back by the inverse rotation about the
   centre to a point of the source; inside the source, each of its 4 channels is the
   bilinear interpolation of the 4 pixels around that point (4 x 4 byte loads, 4 byte
   stores); outside, it is opaque black. Rotated by a radian, a destination row runs
   diagonally across the source, to a new source row (a new page) every 1.2 pixels, and
   comes back to a page only a destination row later, some 800 pages on: no 32- or
   128-entry TLB holds that (Table 1: 54 % of the time in misses with either).

   It prints a sum and a hash of the rotated image (the same arguments give the same
   output on machines with IEEE doubles: sin and cos are our own, from their series).
   Nothing is scaled down: the paper's image is ~28 M data references, ~20 M of them
   the rotation. Under `pagelab record --start-off` (recorder/include/pagelab.h)
   tracing starts with the rotation, after the source image is made. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pagelab.h"

#define NOISE_SEED 0x207a7eu

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t x = (*s += 0x9e3779b97f4a7c15u);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static uint8_t *alloc(uint64_t bytes)
{
    uint64_t align = (uint64_t)2 << 20;
    uint8_t *p = aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) {
        fprintf(stderr, "rotate: cannot allocate an image (%" PRIu64 " KiB)\n", bytes >> 10);
        exit(1);
    }
    return p;
}

/* cos a and sin a (0 <= a < 7) by their Taylor series: IEEE operations only, so the
   same on every machine (no libm). */
static void cossin(double a, double *c, double *s)
{
    double term = 1.0;                  /* a^k / k! */
    *c = *s = 0.0;
    for (int k = 0; k < 64; k++) {
        double *to = k % 2 ? s : c;
        *to += k % 4 < 2 ? term : -term;
        term *= a / (k + 1);
    }
}

/* dst = src (n x n pixels) turned clockwise by `angle` radians about the centre. */
static void rotate(const uint8_t *src, uint8_t *dst, uint64_t n, double angle)
{
    double c, s, mid = (double)(n - 1) / 2, last = (double)(n - 1);
    cossin(angle, &c, &s);
    for (uint64_t y = 0; y < n; y++)
        for (uint64_t x = 0; x < n; x++) {
            /* Clockwise on the screen (y down) is (x, y) -> (c x - s y, s x + c y)
               about the centre; the source point is the inverse's image. */
            double dx = (double)x - mid, dy = (double)y - mid;
            double sx = c * dx + s * dy + mid, sy = -s * dx + c * dy + mid;
            uint8_t *out = dst + (y * n + x) * 4;
            if (!(sx >= 0.0 && sx <= last && sy >= 0.0 && sy <= last)) {
                out[0] = out[1] = out[2] = 0;
                out[3] = 255;
                continue;
            }
            uint64_t x0 = (uint64_t)sx, y0 = (uint64_t)sy;
            uint64_t x1 = x0 + 1 < n ? x0 + 1 : x0, y1 = y0 + 1 < n ? y0 + 1 : y0;
            double fx = sx - (double)x0, fy = sy - (double)y0;
            const uint8_t *p00 = src + (y0 * n + x0) * 4, *p01 = src + (y0 * n + x1) * 4;
            const uint8_t *p10 = src + (y1 * n + x0) * 4, *p11 = src + (y1 * n + x1) * 4;
            for (int ch = 0; ch < 4; ch++) {
                double top = p00[ch] + fx * (p01[ch] - p00[ch]);
                double bottom = p10[ch] + fx * (p11[ch] - p10[ch]);
                out[ch] = (uint8_t)(top + fy * (bottom - top) + 0.5);
            }
        }
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "rotate: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 3) {
        fprintf(stderr, "usage: rotate [SIZE [MILLIRADIANS]]   (defaults: 1024 1000)\n");
        return 2;
    }
    uint64_t n = argc > 1 ? number(argv[1], "SIZE") : 1024;
    uint64_t mrad = argc > 2 ? number(argv[2], "MILLIRADIANS") : 1000;
    if (n < 1 || n > 32768 || mrad > 6283) {
        fprintf(stderr, "rotate: need 1 <= SIZE <= 32768 and MILLIRADIANS <= 6283\n");
        return 2;
    }
    uint8_t *src = alloc(n * n * 4), *dst = alloc(n * n * 4);
    uint64_t seed = NOISE_SEED;
    for (uint64_t y = 0; y < n; y++)
        for (uint64_t x = 0; x < n; x++) {
            uint8_t *p = src + (y * n + x) * 4;
            p[0] = ((x >> 4) ^ (y >> 4)) & 1 ? 255 : 0;
            p[1] = (uint8_t)(x * 256 / n);
            p[2] = (uint8_t)splitmix64(&seed);
            p[3] = 255;
        }

    PAGELAB_START();
    rotate(src, dst, n, (double)mrad / 1000.0);

    uint64_t sum = 0, hash = 0;
    for (uint64_t i = 0; i < n * n * 4; i += 4) {
        uint32_t p = (uint32_t)dst[i] | (uint32_t)dst[i + 1] << 8 | (uint32_t)dst[i + 2] << 16
                     | (uint32_t)dst[i + 3] << 24;
        sum += dst[i] + dst[i + 1] + dst[i + 2];
        hash = (hash ^ p) * 0x100000001b3u;
    }
    printf("rotate: %" PRIu64 "x%" PRIu64 " RGBA pixels turned clockwise by %" PRIu64
           " mrad, sum %" PRIu64 ", hash %016" PRIx64 "\n", n, n, mrad, sum, hash);
    free(dst);
    free(src);
    return 0;
}
