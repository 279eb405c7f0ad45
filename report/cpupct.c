/*
 * cpupct.c - a target's CPU% as shown to people (the table writer,
 * output.c, and `powerapi top`): capped at 100 % a thread, the threads of
 * a process read from <procfs>/<pid>/stat (proc(5) field 20).
 */
#include "cpupct.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long rp_out_num_threads(const char *procfs, pid_t pid)
{
    char path[4200], buf[1024];
    snprintf(path, sizeof(path), "%s/%d/stat", procfs ? procfs : "/proc", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* counted from the last ')', which ends field 2 (comm may hold any) */
    const char *p = strrchr(buf, ')');
    for (int field = 2; p && field < 20; field++)
        p = strchr(p + 1, ' ');
    if (!p)
        return 0;
    char *end;
    long v = strtol(p + 1, &end, 10);
    return end > p + 1 && v > 0 ? v : 0;
}

double rp_out_cpu_pct(const char *procfs, const pa_target_info *t, double interval_s, bool *capped)
{
    *capped = false;
    if (interval_s <= 0)
        return 0;
    double pct = 100.0 * t->power.cpu_time_s / interval_s;
    if (pct <= 100.0)
        return pct;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN), n = cpus;
    if (t->type == PA_TARGET_THREAD) {
        n = 1;
    } else if (t->type == PA_TARGET_PROCESS) {
        long k = rp_out_num_threads(procfs, t->pid);
        if (k > 0 && (cpus <= 0 || k < cpus))
            n = k;
    }
    if (n > 0 && pct > 100.0 * (double)n) {
        pct = 100.0 * (double)n;
        *capped = true;
    }
    return pct;
}
