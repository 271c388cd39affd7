/* threads: T worker threads (argv[1], default 3), all alive at once (a
   barrier), each mallocs, fills and sums an array of 4096 longs and frees
   it; used to check THREAD records and a multi-threaded run. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t all_alive;

static void* work(void* arg)
{
   long k = (long)arg, i, s = 0;
   long* a;
   pthread_barrier_wait(&all_alive);   /* all T threads exist at once */
   a = malloc(4096 * sizeof(long));
   for (i = 0; i < 4096; i++) a[i] = i * k;
   pthread_barrier_wait(&all_alive);   /* ... and each allocation is live */
   for (i = 0; i < 4096; i++) s += a[i];
   free(a);
   return (void*)s;
}

int main(int argc, char** argv)
{
   int t = argc > 1 ? atoi(argv[1]) : 3, i;
   pthread_t th[64];
   if (t < 1 || t > 64) return 2;
   pthread_barrier_init(&all_alive, NULL, t);
   for (i = 0; i < t; i++) pthread_create(&th[i], NULL, work, (void*)(long)(i + 1));
   for (i = 0; i < t; i++) pthread_join(th[i], NULL);
   return 0;
}
