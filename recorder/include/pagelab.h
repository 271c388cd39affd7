/* pagelab.h -- client requests of the Valgrind tool "pagelab".

   Include this in a program to mark regions of interest in the trace that
   `valgrind --tool=pagelab` records.  Outside Valgrind (or with NVALGRIND
   defined) every macro does nothing and costs a few instructions.

     PAGELAB_START();            tracing on  (writes MARKER 1 "start")
     PAGELAB_STOP();             tracing off (writes MARKER 2 "stop")
     PAGELAB_MARKER(id, "name"); writes MARKER id "name" (ids 1 and 2 are
                                 the tool's own start/stop; use others)

   Run with `--start=no` to record only what lies between START and STOP.

   Residue in the stream: PAGELAB_START and PAGELAB_STOP (on x86-64) use a
   static, pre-filled argument block, so they add no data reference of their
   own (STOP adds the fetch of its 19-byte magic sequence when fetches are
   recorded).  PAGELAB_MARKER uses valgrind.h's generic request, which
   stores its six-word argument block on the stack first: six 8-byte stores
   appear in the stream before the marker when tracing is on.

   Only needs valgrind.h (Debian: package valgrind; <valgrind/valgrind.h>).
*/
#ifndef PAGELAB_H
#define PAGELAB_H

#include <valgrind/valgrind.h>

/* Request codes: VG_USERREQ_TOOL_BASE('P','L') + n.  ALLOC is internal
   (used by the tool's preload library to report allocator calls). */
#define PAGELAB_REQ_BASE   VG_USERREQ_TOOL_BASE('P', 'L')
#define PAGELAB_REQ_START  (PAGELAB_REQ_BASE + 0)
#define PAGELAB_REQ_STOP   (PAGELAB_REQ_BASE + 1)
#define PAGELAB_REQ_MARKER (PAGELAB_REQ_BASE + 2)   /* id, name */
#define PAGELAB_REQ_ALLOC  (PAGELAB_REQ_BASE + 3)   /* op, result, size, old, flags */

#if !defined(NVALGRIND) && defined(__x86_64__) && defined(__GNUC__) \
    && defined(__SPECIAL_INSTRUCTION_PREAMBLE)
/* The argument block is static and constant, so issuing the request makes
   no memory reference the tool could record. */
#  define PAGELAB_REQ_STATIC_(code)                                        \
   do {                                                                    \
      static const unsigned long int pagelab_args_[6] = { (code), 0, 0, 0, 0, 0 }; \
      unsigned long int pagelab_res_;                                      \
      __asm__ volatile(__SPECIAL_INSTRUCTION_PREAMBLE                      \
                       "xchgq %%rbx,%%rbx"                                 \
                       : "=d" (pagelab_res_)                               \
                       : "a" (&pagelab_args_[0]), "0" (0UL)                \
                       : "cc", "memory");                                  \
      (void)pagelab_res_;                                                  \
   } while (0)
#  define PAGELAB_START() PAGELAB_REQ_STATIC_(PAGELAB_REQ_START)
#  define PAGELAB_STOP()  PAGELAB_REQ_STATIC_(PAGELAB_REQ_STOP)
#else
#  define PAGELAB_START() \
   VALGRIND_DO_CLIENT_REQUEST_STMT(PAGELAB_REQ_START, 0, 0, 0, 0, 0)
#  define PAGELAB_STOP() \
   VALGRIND_DO_CLIENT_REQUEST_STMT(PAGELAB_REQ_STOP, 0, 0, 0, 0, 0)
#endif

#define PAGELAB_MARKER(id, name)                                           \
   VALGRIND_DO_CLIENT_REQUEST_STMT(PAGELAB_REQ_MARKER,                     \
                                   (unsigned long int)(id),                \
                                   (const char*)(name), 0, 0, 0)

#endif /* PAGELAB_H */
