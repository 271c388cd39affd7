/* pgrec-window.c -- cut a window of references out of the recorder's stream (.pgrec,
   recorder/FORMAT.md), keeping every event.

     pgrec-window SKIP COUNT < full.pgrec > window.pgrec

   Copies the header, drops the first SKIP references, keeps the next COUNT and drops
   the rest. Every event record (the memory map at start-up, mmap/munmap/brk, malloc
   and free, thread switches, markers) is kept where it lies, so that a reader of the
   window knows the mappings and the heap as the program had them when the window
   began. The END record is replaced by one that counts the references the stream
   held (seen) and those the window keeps (written). A stream without its END record,
   or with a record it does not know, is an error.

   How the reduced traces of programs that are not ours were made (data/traces/
   README.md): `pagelab trace convert` has no option to skip a prefix of references,
   so the recorder's stream is cut here, and `pagelab trace convert --from pgrec`
   writes the native trace. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define EVENT (UINT64_C(1) << 63)

enum { LONGREF, ALLOC, SEGMENT, MARKER, THREAD, END };

static uint64_t at;     /* words read */

static int get(uint64_t *w)
{
    if (fread(w, sizeof *w, 1, stdin) != 1)
        return 0;
    at++;
    return 1;
}

static void need(uint64_t *w)
{
    if (!get(w)) {
        fprintf(stderr, "pgrec-window: the stream ends inside a record (word %" PRIu64 ")\n", at);
        exit(1);
    }
}

static void put(uint64_t w)
{
    if (fwrite(&w, sizeof w, 1, stdout) != 1) {
        perror("pgrec-window: write");
        exit(1);
    }
}

static uint64_t number(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "pgrec-window: not a number: %s\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pgrec-window SKIP COUNT < full.pgrec > window.pgrec\n");
        return 2;
    }
    uint64_t skip = number(argv[1]), count = number(argv[2]);
    static char in[1 << 20], out[1 << 20];
    setvbuf(stdin, in, _IOFBF, sizeof in);
    setvbuf(stdout, out, _IOFBF, sizeof out);

    uint64_t w, magic, fmt;
    if (!get(&magic) || !get(&fmt) || magic != UINT64_C(0x31304345524C4750)) {
        fprintf(stderr, "pgrec-window: not a recorder stream (no PGLREC01 header)\n");
        return 1;
    }
    put(magic);
    put(fmt);

    uint64_t seen = 0, written = 0;
    int ended = 0;
    while (!ended && get(&w)) {
        if (!(w & EVENT)) {
            if (seen >= skip && seen - skip < count) {
                put(w);
                written++;
            }
            seen++;
            continue;
        }
        unsigned tag = (w >> 56) & 0x7f;
        uint64_t p = w & ((UINT64_C(1) << 56) - 1), more, len;
        switch (tag) {
        case LONGREF: more = 2; break;
        case ALLOC: more = 5; break;
        case SEGMENT: len = (p >> 16) & 0xffff; more = 2 + (len + 7) / 8; break;
        case MARKER: len = (p >> 32) & 0xffff; more = (len + 7) / 8; break;
        case THREAD: more = 0; break;
        case END: more = 2; break;
        default:
            fprintf(stderr, "pgrec-window: unknown record tag %u at word %" PRIu64 "\n", tag, at - 1);
            return 1;
        }
        if (tag == END) {
            uint64_t ignored;
            need(&ignored);
            need(&ignored);
            ended = 1;
            continue;
        }
        int keep = tag != LONGREF || (seen >= skip && seen - skip < count);
        if (keep)
            put(w);
        for (uint64_t i = 0; i < more; i++) {
            need(&w);
            if (keep)
                put(w);
        }
        if (tag == LONGREF) {
            written += keep;
            seen++;
        }
    }
    if (!ended) {
        fprintf(stderr, "pgrec-window: the stream has no END record (cut short at word %" PRIu64 ")\n", at);
        return 1;
    }
    put(EVENT | ((uint64_t)END << 56));
    put(seen);
    put(written);
    if (fflush(stdout) != 0) {
        perror("pgrec-window: write");
        return 1;
    }
    fprintf(stderr, "pgrec-window: %" PRIu64 " references, kept %" PRIu64 " (from %" PRIu64 ")\n",
            seen, written, skip);
    return 0;
}
