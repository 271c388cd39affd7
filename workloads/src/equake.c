/* equake.c -- explicit time steps of a sparse stiffness matrix over an unstructured
   mesh whose every part is a small heap block, in the manner of SPECfp2000's
   183.equake: our stand-in for equake in Cascaval, Duesterwald, Sweeney and
   Wisniewski, "Multiple Page Size Modeling and Optimization" (PACT 2005). In its §5.3 (Figure 4, Table 1)
   equake's best category on large pages is small dynamic data (§3.3: malloc blocks
   below 128 KiB, which glibc serves from the brk heap).

     equake SIDE STEPS

   The mesh: the SIDE^3 points of a cubic grid, cut into tetrahedra (each cube into
   six, along its main diagonal), so that a node is joined to up to 14 others (along
   x, y, z, the face diagonals x+y, y+z, x+z and the main diagonal x+y+z, both ways).
   Nodes are numbered in a random order (a Fisher-Yates shuffle, splitmix64, fixed
   seed), as a mesh generator's numbering need not follow space, and each is made of
   six malloc blocks, one after the other: the node (64 bytes), its neighbour list
   (pointers), its row of K (the diagonal, then a coupling per neighbour), its
   displacement now, a step before, and K x (3 doubles each); about 430 bytes a node,
   14 MiB at SIDE = 32 (32,768 nodes). The lists and K are filled once all nodes
   exist. The tables that build it are blocks of 32 KiB, freed before the steps: no
   block reaches 128 KiB.

   K is the mesh's graph Laplacian, with weights in [1/2, 1) drawn per edge, and each
   step is the leapfrog x' = 2 x - x_old - dt^2 K x (dt^2 = 1/20), from a random
   start at rest: for each node in order, y = K x reads the displacement of each
   neighbour through its pointer (pointer chasing across the whole heap), then a
   second sweep updates the displacements. It prints the sum of the displacements
   weighted by component and grid point (the same arguments give the same sum).

   Scaled from the paper: equake's reference mesh has tens of thousands of nodes, as
   here, but it runs thousands of steps with 3 x 3 blocks of K; here K is scalar per
   edge and a step makes about 3 M data references, so the catalogue's run is a dozen
   steps after the build (16 M references, 60% of them in malloc).

   With PAGELAB_REPORT_HUGE=1 a last line gives the AnonHugePages of the process
   (hugereport.h). Under `pagelab record --start-off` (recorder/include/pagelab.h)
   tracing starts with the first step (after the mesh is built). Outside Valgrind
   the requests do nothing. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hugereport.h"
#include "pagelab.h"

#define SHUFFLE_SEED 0xe9a4eu
#define VALUE_SEED 0x5e15u
#define BLK 4096                /* entries of a block of the build's tables: 32 KiB */
#define DT2 0.05

struct node {
    struct node *next;          /* the next node by number */
    struct node **nbr;          /* its neighbours */
    double *k;                  /* k[0]: the diagonal; k[1 + e]: the weight of nbr[e] */
    double *x, *xold, *y;       /* displacement now, a step before, and (K x) */
    uint64_t g, deg;            /* its grid point, number of neighbours */
};

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static void *alloc(size_t size)
{
    void *p = malloc(size);
    if (!p) {
        fprintf(stderr, "equake: out of memory\n");
        exit(1);
    }
    return p;
}

/* The build's table of n words, as blocks of BLK: entry i is at(t, i). */
static uintptr_t **table(uint64_t n)
{
    uintptr_t **t = alloc((n + BLK - 1) / BLK * sizeof *t);
    for (uint64_t b = 0; b < (n + BLK - 1) / BLK; b++)
        t[b] = alloc(BLK * sizeof **t);
    return t;
}
#define at(t, i) ((t)[(i) / BLK][(i) % BLK])

/* The weight of the edge between grid points g and h (the same both ways). */
static double weight(uint64_t g, uint64_t h)
{
    uint64_t lo = g < h ? g : h, hi = g < h ? h : g;
    return 0.5 + (double)(splitmix64(VALUE_SEED ^ (lo << 32 | hi)) >> 11) * 0x1p-54;
}

/* The grid points joined to grid point g, those of g +- (m & 1, m >> 1 & 1, m >> 2)
   for m = 1 .. 7 that lie in the grid: into out[] (unless NULL); returns how many. */
static uint64_t neighbours(uint64_t g, uint64_t side, uint64_t *out)
{
    int64_t sd = (int64_t)side, px = (int64_t)(g % side), py = (int64_t)(g / side % side);
    int64_t pz = (int64_t)(g / side / side);
    uint64_t d = 0;
    for (int e = 0; e < 14; e++) {
        int64_t sg = e < 7 ? 1 : -1, m = e % 7 + 1;
        int64_t qx = px + sg * (m & 1), qy = py + sg * (m >> 1 & 1), qz = pz + sg * (m >> 2);
        if (qx < 0 || qy < 0 || qz < 0 || qx >= sd || qy >= sd || qz >= sd)
            continue;
        if (out)
            out[d] = (uint64_t)((qz * sd + qy) * sd + qx);
        d++;
    }
    return d;
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "equake: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: equake SIDE STEPS\n");
        return 2;
    }
    uint64_t side = number(argv[1], "SIDE"), steps = number(argv[2], "STEPS");
    if (side < 2 || side > 256 || steps > 1000000) {
        fprintf(stderr, "equake: need 2 <= SIDE <= 256 and STEPS <= 1000000\n");
        return 2;
    }
    uint64_t n = side * side * side;

    /* Node k gets grid point perm[k]; nodes are made in their order, with their
       vectors, and chained by number. */
    uintptr_t **perm = table(n), **node_at = table(n);
    for (uint64_t i = 0; i < n; i++)
        at(perm, i) = i;
    for (uint64_t i = n - 1, r = SHUFFLE_SEED; i > 0; i--) {
        uint64_t j = splitmix64(r++) % (i + 1), t = at(perm, i);
        at(perm, i) = at(perm, j), at(perm, j) = t;
    }
    struct node *first = NULL, **link = &first;
    for (uint64_t k = 0; k < n; k++) {
        struct node *v = alloc(sizeof *v);
        v->g = at(perm, k);
        v->deg = neighbours(v->g, side, NULL);
        v->nbr = alloc(v->deg * sizeof *v->nbr);
        v->k = alloc((v->deg + 1) * sizeof *v->k);
        v->x = alloc(3 * sizeof *v->x), v->xold = alloc(3 * sizeof *v->x);
        v->y = alloc(3 * sizeof *v->x);
        for (int c = 0; c < 3; c++)
            v->x[c] = v->xold[c] = (double)(splitmix64(v->g * 3 + c) >> 11) * 0x1p-52 - 1;
        at(node_at, v->g) = (uintptr_t)v;
        *link = v, link = &v->next;
    }
    *link = NULL;

    /* Then each node's neighbours and row of K, once all nodes exist. */
    for (struct node *v = first; v; v = v->next) {
        uint64_t q[14];
        double diag = 0;
        neighbours(v->g, side, q);
        for (uint64_t e = 0; e < v->deg; e++) {
            struct node *w = (struct node *)at(node_at, q[e]);
            v->nbr[e] = w;
            diag += v->k[e + 1] = weight(v->g, w->g);
        }
        v->k[0] = diag;
    }
    for (uint64_t b = 0; b < (n + BLK - 1) / BLK; b++)
        free(perm[b]), free(node_at[b]);
    free(perm), free(node_at);

    PAGELAB_START();
    for (uint64_t t = 0; t < steps; t++) {
        for (struct node *v = first; v; v = v->next) {
            const double *k = v->k, *x = v->x;
            double y0 = k[0] * x[0], y1 = k[0] * x[1], y2 = k[0] * x[2];
            for (uint64_t e = 0; e < v->deg; e++) {
                const double *xn = v->nbr[e]->x;
                y0 -= k[e + 1] * xn[0], y1 -= k[e + 1] * xn[1], y2 -= k[e + 1] * xn[2];
            }
            v->y[0] = y0, v->y[1] = y1, v->y[2] = y2;
        }
        for (struct node *v = first; v; v = v->next) {
            double *x = v->x, *old = v->xold;
            for (int c = 0; c < 3; c++)
                old[c] = 2 * x[c] - old[c] - DT2 * v->y[c];
            v->x = old, v->xold = x;
        }
    }

    /* Weighted by grid point too: K conserves the plain sum of the displacements. */
    double sum = 0;
    for (struct node *v = first; v; v = v->next)
        sum += (double)(v->g % 8 + 1) * (v->x[0] + 2 * v->x[1] + 3 * v->x[2]);
    printf("equake: %" PRIu64 " nodes (side %" PRIu64 "), 6 small blocks each, "
           "%" PRIu64 " steps, checksum %.12e\n", n, side, steps, sum);
    report_huge_pages();
    return 0;
}
