/* pagelab_preload.c -- vgpreload_pagelab-amd64-linux.so
 *
 * Valgrind's core LD_PRELOADs this library into the client when it lies
 * beside the tool (the "full" build).  It *wraps* (does not replace) the
 * allocator functions of libc.so*: each wrapper calls glibc's own function,
 * then reports (op, result, size, old address, alignment) to the tool with a
 * client request; the tool adds a call-site hash and writes an ALLOC record.
 *
 * Nested calls (glibc's realloc(NULL, n) calls malloc, memalign of a small
 * alignment calls malloc, ...) are reported once, by the outermost wrapper:
 * a per-thread depth counter (initial-exec TLS, resolved by ld.so).
 *
 * The tool does not record the instructions of this library (neither their
 * fetches nor their data references), so the wrappers leave almost no trace
 * in the stream; see recorder/README.md for the residue.
 *
 * Built with -nostdlib: no libc function is used here.
 */
#include <stddef.h>
#include <valgrind/valgrind.h>
#include "pagelab.h"

static __thread unsigned long pl_depth __attribute__((tls_model("initial-exec")));

#define OP_MALLOC   0
#define OP_CALLOC   1
#define OP_REALLOC  2
#define OP_FREE     3
#define OP_MEMALIGN 7

#define REPORT(op, result, size, old, flags)                               \
   VALGRIND_DO_CLIENT_REQUEST_STMT(PAGELAB_REQ_ALLOC, (op), (result),      \
                                   (size), (old), (flags))

/* soname libc.so*  (Z-encoded: libcZdsoZa) */
#define WRAP(fn) I_WRAP_SONAME_FNNAME_ZU(libcZdsoZa, fn)

void* WRAP(malloc)(size_t n);
void* WRAP(malloc)(size_t n)
{
   OrigFn fn;
   void*  r;
   VALGRIND_GET_ORIG_FN(fn);
   pl_depth++;
   CALL_FN_W_W(r, fn, n);
   if (--pl_depth == 0 && r)
      REPORT(OP_MALLOC, r, n, 0, 0);
   return r;
}

void* WRAP(calloc)(size_t nmemb, size_t size);
void* WRAP(calloc)(size_t nmemb, size_t size)
{
   OrigFn fn;
   void*  r;
   VALGRIND_GET_ORIG_FN(fn);
   pl_depth++;
   CALL_FN_W_WW(r, fn, nmemb, size);
   if (--pl_depth == 0 && r)
      REPORT(OP_CALLOC, r, nmemb * size, 0, 0);
   return r;
}

void* WRAP(realloc)(void* p, size_t n);
void* WRAP(realloc)(void* p, size_t n)
{
   OrigFn fn;
   void*  r;
   VALGRIND_GET_ORIG_FN(fn);
   pl_depth++;
   CALL_FN_W_WW(r, fn, p, n);
   /* r == NULL: failure (p kept), or realloc(p, 0) which freed p */
   if (--pl_depth == 0 && (r || (n == 0 && p)))
      REPORT(OP_REALLOC, r, n, p, 0);
   return r;
}

void WRAP(free)(void* p);
void WRAP(free)(void* p)
{
   OrigFn fn;
   VALGRIND_GET_ORIG_FN(fn);
   pl_depth++;
   CALL_FN_v_W(fn, p);
   if (--pl_depth == 0 && p)
      REPORT(OP_FREE, 0, 0, p, 0);
}

int WRAP(posix_memalign)(void** memptr, size_t align, size_t size);
int WRAP(posix_memalign)(void** memptr, size_t align, size_t size)
{
   OrigFn fn;
   long   rc;
   VALGRIND_GET_ORIG_FN(fn);
   pl_depth++;
   CALL_FN_W_WWW(rc, fn, memptr, align, size);
   if (--pl_depth == 0 && (int)rc == 0)
      REPORT(OP_MEMALIGN, *memptr, size, 0, align);
   return (int)rc;
}

void* WRAP(memalign)(size_t align, size_t size);
void* WRAP(memalign)(size_t align, size_t size)
{
   OrigFn fn;
   void*  r;
   VALGRIND_GET_ORIG_FN(fn);
   pl_depth++;
   CALL_FN_W_WW(r, fn, align, size);
   if (--pl_depth == 0 && r)
      REPORT(OP_MEMALIGN, r, size, 0, align);
   return r;
}

void* WRAP(aligned_alloc)(size_t align, size_t size);
void* WRAP(aligned_alloc)(size_t align, size_t size)
{
   OrigFn fn;
   void*  r;
   VALGRIND_GET_ORIG_FN(fn);
   pl_depth++;
   CALL_FN_W_WW(r, fn, align, size);
   if (--pl_depth == 0 && r)
      REPORT(OP_MEMALIGN, r, size, 0, align);
   return r;
}

void* WRAP(valloc)(size_t size);
void* WRAP(valloc)(size_t size)
{
   OrigFn fn;
   void*  r;
   VALGRIND_GET_ORIG_FN(fn);
   pl_depth++;
   CALL_FN_W_W(r, fn, size);
   if (--pl_depth == 0 && r)
      REPORT(OP_MEMALIGN, r, size, 0, 4096);
   return r;
}
