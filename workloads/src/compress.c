/* compress.c -- LZW compression in the style of SPEC95's 129.compress (Unix compress).

     compress [CHARS]                   (default: 1000000, the paper's)

   Stands in for `compress` of Fang, Zhang, Carter, McKee and Hsieh, "Online
   Superpage Promotion Revisited" (SIGMETRICS 2000), §4.2 and Table 1:
   "the SPEC95 data compression program run on an input of one million characters",
   the algorithm run once (as Romer et al.'s appears to have been; SPEC95's harness
   runs it 25 times). Our own code, from the published description of compress's
   method, not SPEC's source; its output is not byte for byte compress's.

   The input is CHARS characters of generated text: words of a fixed vocabulary of
   1,024 (2 to 9 letters, splitmix64, fixed seed) drawn with a skew towards the first
   ones, separated by spaces and newlines, in a buffer. LZW with 16-bit codes at most:
   the dictionary is compress's open-addressing hash table, htab[69001] holding each
   entry's (character << 16) + prefix code and codetab[69001] (unsigned short) its
   code; a byte c after the prefix ent probes htab[(c << 8) ^ ent], then steps back by
   69001 minus that index (wrapping) until it finds the pair or an empty slot.
   Codes go out 9 bits wide at first, one bit wider each time the next code needs it,
   up to 16, packed into an output buffer; codes 0-255 are the bytes, 256 is CLEAR.
   Once all 65,536 codes are used, the compression ratio is checked every 10,000
   input bytes, and when it falls the table is cleared (every slot of htab set to -1)
   and CLEAR emitted, as compress does in block mode. It prints the sizes and a hash
   of the output (the same arguments give the same output).

   htab's entries are the paper's machine's longs, 32 bits (int32_t): htab is 270 KiB
   (68 pages) and codetab 135 KiB (34 pages), and every input byte probes both at
   random, so a 32-entry TLB misses nearly every time and a 128-entry one holds them
   (Table 1: 60 % against 0.06 % of the time in misses). Nothing is scaled down: one
   run over the paper's million characters is ~12 M data references. Under
   `pagelab record --start-off` (recorder/include/pagelab.h) tracing starts with the
   compression, after the input is generated. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pagelab.h"

#define TEXT_SEED 0xc0de5u
#define HSIZE 69001             /* compress's table size for 16-bit codes */
#define MAXBITS 16
#define CLEAR 256
#define FIRST 257               /* the first free code */
#define CHECK_GAP 10000         /* input bytes between ratio checks */
#define WORDS 1024

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t x = (*s += 0x9e3779b97f4a7c15u);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static int32_t htab[HSIZE];
static uint16_t codetab[HSIZE];

/* The output: codes of n_bits bits, least significant bit first, into out[]. */
struct coder {
    uint8_t *out;
    uint64_t bytes, codes;
    uint32_t acc, held, n_bits, maxcode;
};

static void put(struct coder *o, uint32_t code)
{
    o->acc |= code << o->held;
    o->held += o->n_bits;
    while (o->held >= 8) {
        o->out[o->bytes++] = (uint8_t)o->acc;
        o->acc >>= 8;
        o->held -= 8;
    }
    o->codes++;
}

static void clear_table(void)
{
    for (int32_t i = 0; i < HSIZE; i++)
        htab[i] = -1;
}

/* Compresses in[0 .. n - 1] (n >= 1) into out[]; returns the bytes written and
   counts the table's clears. */
static uint64_t compress(const uint8_t *in, uint64_t n, uint8_t *out, uint64_t *clears)
{
    struct coder o = { out, 0, 0, 0, 0, 9, 511 };
    uint32_t free_ent = FIRST, ent = in[0];
    uint64_t checkpoint = CHECK_GAP, ratio = 0;
    out[o.bytes++] = 0x1f;              /* compress's magic, then 16 bits, block mode */
    out[o.bytes++] = 0x9d;
    out[o.bytes++] = MAXBITS | 0x80;
    clear_table();
    for (uint64_t k = 1; k < n; k++) {
        uint32_t c = in[k];
        int32_t fcode = (int32_t)((c << MAXBITS) + ent);
        int32_t i = (int32_t)((c << 8) ^ ent);
        if (htab[i] == fcode) {
            ent = codetab[i];
            continue;
        }
        if (htab[i] >= 0) {
            int32_t disp = i == 0 ? 1 : HSIZE - i;
            int found = 0;
            do {
                if ((i -= disp) < 0)
                    i += HSIZE;
                if (htab[i] == fcode) {
                    found = 1;
                    break;
                }
            } while (htab[i] >= 0);
            if (found) {
                ent = codetab[i];
                continue;
            }
        }
        put(&o, ent);
        ent = c;
        if (free_ent < (1u << MAXBITS)) {
            codetab[i] = (uint16_t)free_ent++;
            htab[i] = fcode;
            if (free_ent > o.maxcode + 1 && o.n_bits < MAXBITS)
                o.maxcode = (1u << ++o.n_bits) - 1;
        } else if (k >= checkpoint) {
            /* The table is full: keep it while the ratio (in / out, x 256) grows. */
            checkpoint = k + CHECK_GAP;
            uint64_t r = ((k + 1) << 8) / (o.bytes + 1);
            if (r > ratio) {
                ratio = r;
            } else {
                ratio = 0;
                clear_table();
                put(&o, CLEAR);
                free_ent = FIRST;
                o.n_bits = 9;
                o.maxcode = 511;
                ++*clears;
            }
        }
    }
    put(&o, ent);
    if (o.held > 0)
        o.out[o.bytes++] = (uint8_t)o.acc;
    return o.bytes;
}

int main(int argc, char **argv)
{
    uint64_t n = 1000000;
    if (argc > 2 || (argc == 2 && argv[1][0] == '\0')) {
        fprintf(stderr, "usage: compress [CHARS]   (default: 1000000)\n");
        return 2;
    }
    if (argc == 2) {
        char *end;
        n = strtoull(argv[1], &end, 0);
        if (*end != '\0' || n < 1 || n > ((uint64_t)1 << 32)) {
            fprintf(stderr, "compress: CHARS: need a number from 1 to 2^32: %s\n", argv[1]);
            return 2;
        }
    }
    uint8_t *in = malloc(n), *out = malloc(2 * n + n / 1024 + 16);
    if (!in || !out) {
        fprintf(stderr, "compress: cannot allocate %" PRIu64 " KiB\n", 3 * n >> 10);
        return 1;
    }

    /* The vocabulary, then the text: word w (skewed to small w), a space or newline. */
    static char vocab[WORDS][10];
    uint64_t s = TEXT_SEED, line = 0;
    for (int w = 0; w < WORDS; w++) {
        int len = 2 + (int)(splitmix64(&s) % 8);
        for (int j = 0; j < len; j++)
            vocab[w][j] = (char)('a' + splitmix64(&s) % 26);
        vocab[w][len] = '\0';
    }
    for (uint64_t k = 0; k < n;) {
        uint64_t r = splitmix64(&s);
        const char *word = vocab[(r & 0xffff) % ((r >> 16 & (WORDS - 1)) + 1)];
        for (int j = 0; word[j] != '\0' && k < n; j++, line++)
            in[k++] = (uint8_t)word[j];
        if (k < n)
            in[k++] = line > 64 ? (line = 0, '\n') : ' ';
    }

    PAGELAB_START();
    uint64_t clears = 0, bytes = compress(in, n, out, &clears), hash = 0xcbf29ce484222325u;
    for (uint64_t k = 0; k < bytes; k++)
        hash = (hash ^ out[k]) * 0x100000001b3u;
    printf("compress: %" PRIu64 " chars -> %" PRIu64 " bytes (%.1f %%), %" PRIu64
           " table clears, hash %016" PRIx64 "\n",
           n, bytes, 100.0 * (double)bytes / (double)n, clears, hash);
    free(out);
    free(in);
    return 0;
}
