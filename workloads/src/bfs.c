/* bfs.c -- breadth-first search of a generated random graph stored as CSR.

     bfs LOG2_VERTICES DEGREE [FROM COUNT]

   The graph has n = 2^LOG2_VERTICES vertices; vertex u has between 1 and 2 DEGREE - 1
   out-edges (uniformly: DEGREE on average) to vertices drawn uniformly at random (a
   directed multigraph, self-loops allowed). Vertex ids are 64-bit, as in Graph500's
   reference code. It is stored in compressed sparse rows: off[u] .. off[u + 1] - 1 index
   u's targets in adj[]; both are filled front to back, adj[] one vertex at a time. With
   2^22 vertices and degree 32, adj[] is 1 GiB, off[], parent[] and the queue 32 MiB each.

   Then a top-down BFS from vertex 0 with a FIFO queue: for each vertex taken from the
   queue, each target not yet reached gets it as parent and joins the queue. It prints
   the vertices reached, the number of levels and a checksum of the BFS tree (the same
   arguments give the same output).

   The generator is splitmix64 on two fixed seeds (degrees, targets), so the graph is
   the same on every machine. Under `pagelab record --start-off`
   (recorder/include/pagelab.h) tracing starts with the search (after the graph is
   built), or with FROM and COUNT only while vertices FROM to FROM + COUNT - 1 of the
   queue are expanded: a window of the same run. Outside Valgrind the requests do
   nothing. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pagelab.h"

#define DEGREE_SEED 0xd3a7u
#define TARGET_SEED 0x7a26u

/* splitmix64: the next value of the generator whose state is *s. */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t x = (*s += 0x9e3779b97f4a7c15u);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* An array of WORDS 64-bit words, 2 MiB-aligned (C11 wants the size rounded up). */
static void *alloc(uint64_t words, const char *what)
{
    uint64_t align = (uint64_t)2 << 20;
    void *p = aligned_alloc(align, (words * 8 + align - 1) / align * align);
    if (!p) {
        fprintf(stderr, "bfs: cannot allocate %s (%" PRIu64 " MiB)\n", what, words >> 17);
        exit(1);
    }
    return p;
}

/* Expand queue[*head .. stop - 1]: each vertex's unreached targets join the queue at
   *tail. Returns the checksum of the tree edges found. */
static uint64_t expand(const uint64_t *off, const uint64_t *adj, int64_t *parent,
                       uint64_t *queue, uint64_t *head, uint64_t *tail, uint64_t stop)
{
    uint64_t sum = 0, h = *head, t = *tail;
    for (; h < stop; h++) {
        uint64_t u = queue[h], last = off[u + 1];
        for (uint64_t e = off[u]; e < last; e++) {
            uint64_t v = adj[e];
            if (parent[v] < 0) {
                parent[v] = (int64_t)u;
                queue[t++] = v;
                sum += (u + 1) * (v ^ 0x9e3779b97f4a7c15u);
            }
        }
    }
    *head = h;
    *tail = t;
    return sum;
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "bfs: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 5) {
        fprintf(stderr, "usage: bfs LOG2_VERTICES DEGREE [FROM COUNT]\n");
        return 2;
    }
    uint64_t log2 = number(argv[1], "LOG2_VERTICES");
    uint64_t degree = number(argv[2], "DEGREE");
    uint64_t from = argc == 5 ? number(argv[3], "FROM") : 0;
    uint64_t count = argc == 5 ? number(argv[4], "COUNT") : 0;
    if (log2 < 1 || log2 > 32 || degree < 1 || degree > 1024) {
        fprintf(stderr, "bfs: need 1 <= LOG2_VERTICES <= 32 and 1 <= DEGREE <= 1024\n");
        return 2;
    }
    uint64_t n = (uint64_t)1 << log2;

    /* The graph: degrees first (off[]), then the targets, front to back. */
    uint64_t *off = alloc(n + 1, "off");
    uint64_t s = DEGREE_SEED;
    off[0] = 0;
    for (uint64_t u = 0; u < n; u++)
        off[u + 1] = off[u] + 1 + splitmix64(&s) % (2 * degree - 1);
    uint64_t m = off[n];
    uint64_t *adj = alloc(m, "adj");
    s = TARGET_SEED;
    for (uint64_t e = 0; e < m; e++)
        adj[e] = splitmix64(&s) & (n - 1);

    int64_t *parent = alloc(n, "parent");
    uint64_t *queue = alloc(n, "queue");
    for (uint64_t v = 0; v < n; v++)
        parent[v] = -1;

    /* Level by level, so that the levels can be counted; the window's bounds cut a
       level where they fall. */
    uint64_t head = 0, tail = 0, sum = 0, levels = 0;
    parent[0] = 0;
    queue[tail++] = 0;
    if (argc == 3)
        PAGELAB_START();
    while (head < tail) {
        uint64_t end = tail;
        levels++;
        if (argc == 5 && head <= from && from < end) {
            sum += expand(off, adj, parent, queue, &head, &tail, from);
            PAGELAB_START();
        }
        if (argc == 5 && head <= from + count && from + count < end) {
            sum += expand(off, adj, parent, queue, &head, &tail, from + count);
            PAGELAB_STOP();
        }
        sum += expand(off, adj, parent, queue, &head, &tail, end);
    }

    printf("bfs: %" PRIu64 " vertices, %" PRIu64 " edges (%" PRIu64 " MiB of CSR), "
           "%" PRIu64 " reached, %" PRIu64 " levels, checksum %016" PRIx64 "\n",
           n, m, (m + n + 1) >> 17, tail, levels, sum);
    free(queue);
    free(parent);
    free(adj);
    free(off);
    return 0;
}
