/* pattern: a program whose reference pattern is known.
 *
 *   pattern [N]     (N pages, default 64; N must be coprime with 7)
 *
 * mallocs N pages, prints "ADDRESS SIZE" (hex address, decimal bytes) on
 * stdout, then between PAGELAB_START() and PAGELAB_STOP() stores one byte in
 * page (i * 7) mod N for i = 0 .. N-1, in that order.  The loop keeps
 * everything in registers: the only data references of the marked region
 * are those N one-byte stores.  After STOP: PAGELAB_MARKER(42, "pattern-done").
 */
#include <stdio.h>
#include <stdlib.h>
#include "pagelab.h"

int main(int argc, char** argv)
{
   unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
   unsigned long size, i, page;
   volatile char* p;
   char* base;

   if (n == 0 || n % 7 == 0) {
      fprintf(stderr, "pattern: N must be > 0 and coprime with 7\n");
      return 2;
   }
   size = n * 4096;
   base = malloc(size);
   if (!base) return 1;
   printf("%lx %lu\n", (unsigned long)base, size);
   fflush(stdout);

   p = base;
   page = 0;
   PAGELAB_START();
   for (i = 0; i < n; i++) {
      p[page * 4096] = (char)i;        /* the only memory reference */
      page += 7;
      if (page >= n) page -= n;
   }
   PAGELAB_STOP();
   PAGELAB_MARKER(42, "pattern-done");

   free(base);
   return 0;
}
