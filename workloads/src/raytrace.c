/* raytrace.c -- isosurface ray casting of a volume of bytes.

     raytrace [SIZE [IMAGE]]            (defaults: 256 128)

   Stands in for `raytrace` of Fang, Zhang, Carter, McKee and Hsieh, "Online
   Superpage Promotion Revisited" (SIGMETRICS 2000), §4.2 and Table 1:
   "an interactive isosurfacing volume renderer whose input is a 1024 x 1024 x 1024
   volume; its implementation is based on work done by Parker et al." (interactive
   ray tracing of isosurfaces). Our own code, from that description: one frame, rays
   marched through the volume, without Parker et al.'s bricking and macrocells.

   The volume is SIZE^3 bytes, x fastest then y then z (SIZE = 256: 16 MiB, 4,096
   pages; a z-slice is 16 pages; 2 MiB-aligned), generated procedurally, 8 voxels to
   an 8-byte store: a lattice of triangle waves, tri(x + y/2) + tri(y + z/2) +
   tri(z + x/2), of period SIZE/4, fading with the distance from the volume's axis
   along x. The camera looks at the centre from outside the volume, with perspective;
   for each of IMAGE x IMAGE pixels, in row order, a ray is clipped to the volume's
   box and marched one voxel at a time, sampling the volume by trilinear interpolation
   (8 byte loads), until the value crosses the isovalue 128; the crossing is refined
   linearly, shaded by the gradient (6 more samples) against a fixed light, and the
   pixel gets 32 to 255 (0: no hit; 70 % of the rays hit, after 136 steps on average).
   The rays run mostly along z, so nearly every step lands in another page, and the
   next ray, 2 voxels over, walks the same ~140 pages again: more than a 32- or a
   128-entry TLB holds (Table 1: 34 % of the time in misses with either).

   It prints the hits, the steps marched and a checksum of the image (the same
   arguments give the same output on machines with IEEE doubles; the square roots are
   our own, no libm). Scaled down: the paper's volume would take 128 M stores and
   ~20 G instructions to make, far beyond a recording; 256^3 is 32 times the reach of
   a 128-entry TLB of 4 KiB pages, but 4 superpages of 4 MiB cover it where the
   paper's needed 256 (more than either TLB holds): promotion should help this version
   more than the paper's. The catalogue runs the defaults (~39 M data references, 2.1 M
   of them making the volume). Under `pagelab record --start-off` (recorder/include/
   pagelab.h) tracing starts with the first ray, after the volume is made. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pagelab.h"

#define ISO 128.0

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

struct vec { double x, y, z; };

static struct vec v3(double x, double y, double z) { return (struct vec){ x, y, z }; }
static struct vec add(struct vec a, struct vec b) { return v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static struct vec scale(struct vec a, double k) { return v3(a.x * k, a.y * k, a.z * k); }
static double dot(struct vec a, struct vec b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static struct vec unit(struct vec a) { return scale(a, 1.0 / root(dot(a, a))); }
static struct vec cross(struct vec a, struct vec b)
{
    return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

/* A triangle wave of period 2 p (a power of two): 0 .. p. */
static int64_t tri(int64_t u, int64_t p)
{
    int64_t m = u & (2 * p - 1);
    return m > p ? 2 * p - m : m;
}

/* The volume, 8 voxels to an 8-byte store: a lattice of triangle waves of period
   n / 4, tri(x + y/2) + tri(z + x/2) + tri(y + z/2) scaled to 0 .. 192, plus 48, less
   a fade with the square of the distance from the volume's axis along x (128 at the
   middle of a face). A row is periodic in x (period n / 2): its second half is a copy
   of its first. */
static void generate(uint64_t *vol, int64_t n)
{
    int64_t p = n / 8, c = n / 2, shift = 0;
    while (((int64_t)1 << shift) < p)
        shift++;
    for (int64_t z = 0; z < n; z++)
        for (int64_t y = 0; y < n; y++, vol += n / 8) {
            int64_t r2 = (y - c) * (y - c) + (z - c) * (z - c);
            int64_t fade = r2 * 128 / (c * c), row = tri(y + z / 2, p);
            for (int64_t x = 0; x < n / 2; x += 8) {
                uint64_t w = 0;
                for (int64_t k = 7; k >= 0; k--) {
                    int64_t l = tri(x + k + y / 2, p) + tri(z + (x + k) / 2, p) + row;
                    int64_t v = ((l << 6) >> shift) + 48 - fade;
                    w = w << 8 | (uint64_t)(v < 0 ? 0 : v);
                }
                vol[x / 8] = w;
            }
            for (int64_t i = n / 16; i < n / 8; i++)
                vol[i] = vol[i - n / 16];
        }
}

/* Trilinear interpolation at (px, py, pz), inside [0, n - 1]^3. */
static double sample(const uint8_t *vol, int64_t n, double px, double py, double pz)
{
    int64_t x = (int64_t)px, y = (int64_t)py, z = (int64_t)pz;
    x = x > n - 2 ? n - 2 : x;
    y = y > n - 2 ? n - 2 : y;
    z = z > n - 2 ? n - 2 : z;
    double fx = px - (double)x, fy = py - (double)y, fz = pz - (double)z;
    const uint8_t *v = vol + (z * n + y) * n + x;
    double c00 = v[0] + fx * (v[1] - v[0]), c01 = v[n] + fx * (v[n + 1] - v[n]);
    v += n * n;
    double c10 = v[0] + fx * (v[1] - v[0]), c11 = v[n] + fx * (v[n + 1] - v[n]);
    double c0 = c00 + fy * (c01 - c00), c1 = c10 + fy * (c11 - c10);
    return c0 + fz * (c1 - c0);
}

static double clamp(double v, double hi)
{
    return v < 0.0 ? 0.0 : v > hi ? hi : v;
}

/* The ray o + t d clipped to the box [0, hi]^3: false if it misses. */
static int clip(struct vec o, struct vec d, double hi, double *t0, double *t1)
{
    double os[3] = { o.x, o.y, o.z }, ds[3] = { d.x, d.y, d.z }, lo_t = 0.0, hi_t = 1e30;
    for (int a = 0; a < 3; a++) {
        if (ds[a] > -1e-12 && ds[a] < 1e-12) {
            if (os[a] < 0.0 || os[a] > hi)
                return 0;
            continue;
        }
        double ta = (0.0 - os[a]) / ds[a], tb = (hi - os[a]) / ds[a];
        if (ta > tb) {
            double t = ta;
            ta = tb;
            tb = t;
        }
        lo_t = ta > lo_t ? ta : lo_t;
        hi_t = tb < hi_t ? tb : hi_t;
    }
    *t0 = lo_t;
    *t1 = hi_t;
    return lo_t <= hi_t;
}

/* One ray: the pixel's value (0: no hit); adds its steps to *steps. */
static uint8_t cast(const uint8_t *vol, int64_t n, struct vec o, struct vec d, struct vec light,
                    uint64_t *steps)
{
    double t0, t1, hi = (double)(n - 1);
    if (!clip(o, d, hi, &t0, &t1))
        return 0;
    double prev = sample(vol, n, o.x + t0 * d.x, o.y + t0 * d.y, o.z + t0 * d.z);
    for (double t = t0 + 1.0; t <= t1; t += 1.0) {
        double v = sample(vol, n, o.x + t * d.x, o.y + t * d.y, o.z + t * d.z);
        ++*steps;
        if (prev < ISO && v >= ISO) {
            /* The crossing, then the gradient by central differences (outwards: from
               high values to low), clamped to the box. */
            double tc = t - (v - ISO) / (v - prev);
            double x = o.x + tc * d.x, y = o.y + tc * d.y, z = o.z + tc * d.z;
            double gx = sample(vol, n, clamp(x - 1, hi), y, z)
                        - sample(vol, n, clamp(x + 1, hi), y, z);
            double gy = sample(vol, n, x, clamp(y - 1, hi), z)
                        - sample(vol, n, x, clamp(y + 1, hi), z);
            double gz = sample(vol, n, x, y, clamp(z - 1, hi))
                        - sample(vol, n, x, y, clamp(z + 1, hi));
            struct vec g = v3(gx, gy, gz);
            double len = root(dot(g, g)), lit = len > 0.0 ? dot(g, light) / len : 0.0;
            return (uint8_t)(32.0 + 223.0 * (lit > 0.0 ? lit : 0.0));
        }
        prev = v;
    }
    return 0;
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "raytrace: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 3) {
        fprintf(stderr, "usage: raytrace [SIZE [IMAGE]]   (defaults: 256 128)\n");
        return 2;
    }
    uint64_t size = argc > 1 ? number(argv[1], "SIZE") : 256;
    uint64_t image = argc > 2 ? number(argv[2], "IMAGE") : 128;
    if (size < 16 || size > 2048 || (size & (size - 1)) != 0 || image < 1 || image > 16384) {
        fprintf(stderr, "raytrace: need SIZE a power of two from 16 to 2048, "
                        "1 <= IMAGE <= 16384\n");
        return 2;
    }
    int64_t n = (int64_t)size;
    uint64_t align = (uint64_t)2 << 20, bytes = size * size * size;
    uint64_t *vol = aligned_alloc(align, (bytes + align - 1) / align * align);
    uint8_t *img = malloc(image * image);
    if (!vol || !img) {
        fprintf(stderr, "raytrace: cannot allocate the volume (%" PRIu64 " MiB)\n", bytes >> 20);
        return 1;
    }
    generate(vol, n);

    /* The camera: from the direction (0.8, -0.6, 1.1), 1.6 SIZE from the centre. */
    double c = (double)(n - 1) / 2;
    struct vec centre = v3(c, c, c), back = unit(v3(0.8, -0.6, 1.1));
    struct vec eye = add(centre, scale(back, 1.6 * (double)n));
    struct vec fwd = scale(back, -1.0), right = unit(cross(fwd, v3(0, 1, 0)));
    struct vec up = cross(right, fwd), light = unit(v3(0.3, 0.7, 0.6));
    double half = 0.3;                           /* tan of half the field of view */

    PAGELAB_START();
    uint64_t steps = 0, hits = 0, sum = 0, hash = 0;
    for (uint64_t j = 0; j < image; j++)
        for (uint64_t i = 0; i < image; i++) {
            double u = ((double)i + 0.5) / (double)image * 2 - 1;
            double v = 1 - ((double)j + 0.5) / (double)image * 2;
            struct vec d = unit(add(fwd, add(scale(right, u * half), scale(up, v * half))));
            uint8_t px = cast((const uint8_t *)vol, n, eye, d, light, &steps);
            img[j * image + i] = px;
            hits += px != 0;
        }
    for (uint64_t k = 0; k < image * image; k++) {
        sum += img[k];
        hash = (hash ^ img[k]) * 0x100000001b3u;
    }
    printf("raytrace: %" PRIu64 "^3 volume (%" PRIu64 " MiB), %" PRIu64 "x%" PRIu64 " rays, "
           "%" PRIu64 " hits, %" PRIu64 " steps, sum %" PRIu64 ", hash %016" PRIx64 "\n",
           size, bytes >> 20, image, image, hits, steps, sum, hash);
    free(img);
    free(vol);
    return 0;
}
