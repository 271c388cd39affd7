/* filter.c -- a binomial filter (a discrete Gaussian blur) of a colour image.

     filter [HEIGHT [WIDTH [ORDER]]]    (defaults: 32 1024 129, the paper's)

   Stands in for `filter` of Fang, Zhang, Carter, McKee and Hsieh, "Online Superpage
   Promotion Revisited" (SIGMETRICS 2000), §4.2 and Table 1: it
   "performs an order-129 binomial filter on a 32 x 1024 color image". Our own code,
   from that description.

   Pixels are 4 bytes, R G B A (R in the low byte of a uint32_t), so a row of 1,024
   pixels is 4 KiB, one page (each array 2 MiB-aligned). The image is generated: R a
   horizontal ramp, G a vertical one, B noise from splitmix64 (fixed seed), A = 255.
   The filter is separable: the ORDER weights C(ORDER - 1, k) / 2^(ORDER - 1), k = 0 ..
   ORDER - 1, are computed once as doubles; a horizontal pass (src -> tmp) then a
   vertical one (tmp -> dst), each output pixel the weighted sum of the ORDER pixels
   centred on it along its row or column, R, G and B summed in doubles and rounded to
   bytes (A stays 255). The image is taken as periodic (indices wrap), so with 32 rows
   and 129 taps every output pixel of the vertical pass walks down its column through
   all 32 rows, a different page each, ~4 times round: with the tmp and dst pages in
   use that is more than a 32-entry TLB holds (Table 1: 37 % of the time in misses;
   the paper's 128-entry TLB fares little better, 35 %: its pixels were probably
   larger than ours, so its image spanned more pages).

   It prints a sum and a hash of the filtered image (the same arguments give the same
   output). Nothing is scaled down: the paper's image and filter are ~17 M data
   references (two loads a tap: the pixel and the weight). Under `pagelab record
   --start-off` (recorder/include/pagelab.h) tracing starts with the horizontal pass. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pagelab.h"

#define NOISE_SEED 0xf117e4u

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t x = (*s += 0x9e3779b97f4a7c15u);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static void *alloc(uint64_t bytes, const char *what)
{
    uint64_t align = (uint64_t)2 << 20;
    void *p = aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) {
        fprintf(stderr, "filter: cannot allocate %s (%" PRIu64 " KiB)\n", what, bytes >> 10);
        exit(1);
    }
    return p;
}

static uint32_t channel(double v)
{
    v += 0.5;
    return v >= 255.0 ? 255u : v <= 0.0 ? 0u : (uint32_t)v;
}

/* One pass, in row order of the output: each out[y][x] is the weighted sum of the
   ORDER pixels of `in` centred on (y, x) along its row or (vertical) its column, the
   index wrapping round the image. */
static void pass(const uint32_t *in, uint32_t *out, const double *w, uint64_t order,
                 uint64_t h, uint64_t wd, int vertical)
{
    uint64_t len = vertical ? h : wd, step = vertical ? wd : 1, half = order / 2 % len;
    for (uint64_t y = 0; y < h; y++)
        for (uint64_t x = 0; x < wd; x++) {
            const uint32_t *line = vertical ? in + x : in + y * wd;
            uint64_t at = ((vertical ? y : x) + len - half) % len;
            double r = 0.0, g = 0.0, b = 0.0;
            for (uint64_t k = 0; k < order; k++) {
                uint32_t p = line[at * step];
                r += w[k] * (double)(p & 255);
                g += w[k] * (double)(p >> 8 & 255);
                b += w[k] * (double)(p >> 16 & 255);
                if (++at == len)
                    at = 0;
            }
            out[y * wd + x] = channel(r) | channel(g) << 8 | channel(b) << 16 | 0xffu << 24;
        }
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "filter: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 4) {
        fprintf(stderr, "usage: filter [HEIGHT [WIDTH [ORDER]]]   (defaults: 32 1024 129)\n");
        return 2;
    }
    uint64_t h = argc > 1 ? number(argv[1], "HEIGHT") : 32;
    uint64_t wd = argc > 2 ? number(argv[2], "WIDTH") : 1024;
    uint64_t order = argc > 3 ? number(argv[3], "ORDER") : 129;
    if (h < 1 || h > 65536 || wd < 1 || wd > 65536 || order < 1 || order > 1023
        || order % 2 == 0) {
        fprintf(stderr, "filter: need 1 <= HEIGHT, WIDTH <= 65536 and ORDER odd, 1 to 1023\n");
        return 2;
    }
    uint64_t pixels = h * wd;
    uint32_t *src = alloc(pixels * 4, "image"), *tmp = alloc(pixels * 4, "image");
    uint32_t *dst = alloc(pixels * 4, "image");
    double *w = alloc(order * 8, "weights");

    /* C(order - 1, k) / 2^(order - 1), from 2^-(order - 1) by the binomial recurrence. */
    w[0] = 1.0;
    for (uint64_t k = 1; k < order; k++)
        w[0] *= 0.5;
    for (uint64_t k = 0; k + 1 < order; k++)
        w[k + 1] = w[k] * (double)(order - 1 - k) / (double)(k + 1);

    uint64_t s = NOISE_SEED;
    for (uint64_t y = 0; y < h; y++)
        for (uint64_t x = 0; x < wd; x++)
            src[y * wd + x] = (uint32_t)(x * 256 / wd) | (uint32_t)(y * 256 / h) << 8
                              | (uint32_t)(splitmix64(&s) & 255) << 16 | 0xffu << 24;

    PAGELAB_START();
    pass(src, tmp, w, order, h, wd, 0);
    pass(tmp, dst, w, order, h, wd, 1);

    uint64_t sum = 0, hash = 0;
    for (uint64_t i = 0; i < pixels; i++) {
        uint32_t p = dst[i];
        sum += (p & 255) + (p >> 8 & 255) + (p >> 16 & 255);
        hash = (hash ^ p) * 0x100000001b3u;
    }
    printf("filter: %" PRIu64 "x%" PRIu64 " RGBA pixels, order %" PRIu64 " binomial, "
           "sum %" PRIu64 ", hash %016" PRIx64 "\n", h, wd, order, sum, hash);
    free(w);
    free(dst);
    free(tmp);
    free(src);
    return 0;
}
