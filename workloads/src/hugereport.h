/* hugereport.h -- the optional last line of our workloads: how much of the process
   Linux backs with transparent huge pages, as /proc/self/smaps_rollup counts it
   (AnonHugePages: anonymous memory mapped by 2 MiB pages).

   With PAGELAB_REPORT_HUGE=1 in the environment, report_huge_pages() prints
   `AnonHugePages: N kB` on standard output; otherwise it does nothing. Call it before
   freeing the data it should see. `pagelab advise` and native/test.sh read the line. */
#ifndef HUGEREPORT_H
#define HUGEREPORT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report_huge_pages(void)
{
    const char *want = getenv("PAGELAB_REPORT_HUGE");
    if (!want || strcmp(want, "1") != 0)
        return;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kb = -1;
    while (f && kb < 0 && fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %ld kB", &kb) != 1)
            kb = -1;
    if (f)
        fclose(f);
    if (kb < 0)
        fprintf(stderr, "cannot read AnonHugePages in /proc/self/smaps_rollup\n");
    else
        printf("AnonHugePages: %ld kB\n", kb);
}

#endif
