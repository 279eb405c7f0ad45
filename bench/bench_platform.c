/*
 * bench_platform.c - the cost of the whole machine's meter and the
 * platform component per window (issue 46; DESIGN.md section 19): an ACPI
 * power meter read at each tick and the platform formula splitting its
 * rest over N processes by CPU time, beside the same window without them,
 * interleaved (the two contexts take turns at ticking first).
 *
 *   base   procfs-cpu + cpu-tdp
 *   wall   the same + acpi-power + platform (split=cpu)
 *
 * Printed: the median tick of each (the thread's CPU time) and the
 * difference, the meter and platform's part.
 *
 * Usage: bench_platform [processes] [windows]   (default 2000 200)
 */
#include "bench_util.h"
#include "powerapi.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static char root[256];

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Writes root/rel, its folders made. */
static void put(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(const char *rel, const char *fmt, ...)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    for (char *s = p + strlen(root) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    FILE *f = fopen(p, "w");
    if (!f) {
        perror(p);
        exit(1);
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

/* Window w: every process 1 tick more, the machine busy, the meter. */
static void window(int nproc, int w)
{
    put("proc/stat", "cpu  %d 0 0 %d 0 0 0 0 0 0\ncpu0 %d 0 0 %d 0 0 0 0 0 0\n", 1000 + nproc * w,
        100000 + 10 * w, 1000 + nproc * w, 100000 + 10 * w);
    for (int i = 0; i < nproc; i++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "proc/%d/stat", 1000 + i);
        put(rel,
            "%d (p%d) S 1 %d %d 0 -1 4194560 100 0 0 0 %d 0 0 0 20 0 1 0 5000 1000000 100 "
            "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
            1000 + i, i, 1000 + i, 1000 + i, 10 + w);
    }
    put("sys/class/hwmon/hwmon0/power1_average", "%d\n", 150000000 + 1000 * (w % 7));
}

static pa_ctx *ctx_new(int wall)
{
    char procfs[300], sysfs[300];
    snprintf(procfs, sizeof(procfs), "%s/proc", root);
    snprintf(sysfs, sizeof(sysfs), "%s/sys", root);
    pa_ctx_opts o = {.procfs = procfs, .sysfs = sysfs};
    pa_ctx *ctx = NULL;
    if (pa_ctx_new(&ctx, &o) < 0 || pa_module_disable(ctx, "auto") < 0 ||
        pa_module_enable(ctx, "procfs-cpu", NULL) < 0 ||
        pa_module_enable(ctx, "cpu-tdp", NULL) < 0 ||
        (wall && (pa_module_enable(ctx, "acpi-power", NULL) < 0 ||
                  pa_module_enable(ctx, "platform", NULL) < 0)) ||
        pa_watch_all(ctx, 1) < 0) {
        fprintf(stderr, "bench_platform: %s\n", pa_last_error());
        exit(1);
    }
    return ctx;
}

int main(int argc, char **argv)
{
    int nproc = argc > 1 ? atoi(argv[1]) : 2000, nwin = argc > 2 ? atoi(argv[2]) : 200;
    snprintf(root, sizeof(root), "/tmp/bench-platform-XXXXXX");
    if (!mkdtemp(root) || nproc < 1 || nwin < 3)
        return 1;
    put("proc/uptime", "1000.00 900.00\n");
    put("proc/cpuinfo", "processor\t: 0\nmodel name\t: Bench CPU\ncpu MHz\t\t: 2000.000\n");
    put("sys/class/hwmon/hwmon0/name", "power_meter\n");
    put("sys/class/hwmon/hwmon0/power1_average_interval", "1000\n");
    window(nproc, 0);
    pa_ctx *c[2] = {ctx_new(0), ctx_new(1)};
    double *t[2] = {calloc((size_t)nwin, sizeof(double)), calloc((size_t)nwin, sizeof(double))};
    for (int w = 0; w < nwin; w++) {
        window(nproc, w);
        for (int k = 0; k < 2; k++) {
            int i = (w + k) % 2; /* take turns at ticking first */
            double t0 = cpu_ms();
            if (pa_tick_at(c[i], (uint64_t)(w + 1) * 1000000000ull) < 0 && w > 0) {
                fprintf(stderr, "bench_platform: %s\n", pa_last_error());
                return 1;
            }
            t[i][w] = cpu_ms() - t0;
        }
    }
    double base = pa_bench_median(t[0] + 1, (size_t)nwin - 1);
    double wall = pa_bench_median(t[1] + 1, (size_t)nwin - 1);
    printf("bench_platform: %d processes, %d windows (median tick, thread CPU time)\n", nproc,
           nwin - 1);
    printf("  base (procfs-cpu + cpu-tdp)              %8.3f ms\n", base);
    printf("  + acpi-power + platform (split=cpu)      %8.3f ms\n", wall);
    printf("  the meter and platform's part            %8.3f ms (%.1f %% of the base)\n",
           wall - base, base > 0 ? 100 * (wall - base) / base : 0);
    pa_ctx_free(c[0]);
    pa_ctx_free(c[1]);
    free(t[0]);
    free(t[1]);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : 1;
}
