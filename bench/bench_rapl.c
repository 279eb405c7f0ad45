/*
 * bench_rapl.c - cost of one rapl sample, per domain, on each path.
 *
 * On this machine's own /sys and /dev when RAPL is there; on the fixture
 * trees otherwise (rapl-server2s for powercap text files, rapl-msr for
 * MSR device files), which measures the sensor's own work (open-once fds,
 * pread, parse, unfold) over regular files rather than the kernel's
 * rdmsr behind sysfs.  Prints figures; never fails on slow results.
 *
 * usage: bench_rapl [ITERATIONS] [FIXTURES_DIR]
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* tests/fixtures of the source tree this file was compiled from */
static void default_fixtures(char *buf, size_t len)
{
    snprintf(buf, len, "%s", __FILE__);
    char *slash = strrchr(buf, '/');
    if (slash)
        snprintf(slash, len - (size_t)(slash - buf), "/../tests/fixtures");
    else
        snprintf(buf, len, "tests/fixtures");
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void bench(const char *label, const char *procfs, const char *sysfs, const char *devfs,
                  const char *path, int iters)
{
    pa_ctx *ctx = NULL;
    pa_ctx_opts o = {.procfs = procfs, .sysfs = sysfs, .devfs = devfs};
    if (pa_ctx_new(&ctx, &o) < 0) {
        printf("%-34s %-9s unavailable: %s\n", label, path, pa_last_error());
        return;
    }
    pa_module m;
    memset(&m, 0, sizeof(m));
    m.ops = &pa__mod_rapl;
    m.ctx = ctx;
    char opt[64];
    snprintf(opt, sizeof(opt), "path=%s", path);
    pa_options *opts = NULL;
    pa__options_parse("rapl", opt, pa__mod_rapl.options, &opts);
    int rc = pa__mod_rapl.start(&m, opts);
    pa__options_free(opts);
    if (rc < 0) {
        printf("%-34s %-9s unavailable: %s\n", label, path, pa_last_error());
        pa_ctx_free(ctx);
        return;
    }
    pa_sysread sys;
    pa_frame f = {.ctx = ctx, .sys = &sys};
    /* warm up */
    for (int i = 0; i < 100; i++) {
        f.tick++;
        pa__mod_rapl.sample(&m, &f);
    }
    uint64_t t0 = now_ns();
    for (int i = 0; i < iters; i++) {
        f.tick++;
        if (pa__mod_rapl.sample(&m, &f) < 0) {
            printf("%-34s %-9s sample failed: %s\n", label, path, pa_last_error());
            break;
        }
    }
    double per = (double)(now_ns() - t0) / iters;
    unsigned n = sys.nrapl ? sys.nrapl : 1;
    printf("%-34s %-9s %2u domains  %8.0f ns/sample  %7.0f ns/domain\n", label, path, sys.nrapl,
           per, per / n);
    pa__mod_rapl.stop(&m);
    pa_ctx_free(ctx);
}

static void bench_fixture(const char *fx, const char *name, const char *path, bool dev, int iters)
{
    char p[4096], s[4096], d[4096], label[64];
    if (pa__path(p, sizeof(p), fx, "%s/proc", name) < 0 ||
        pa__path(s, sizeof(s), fx, "%s/sys", name) < 0 ||
        pa__path(d, sizeof(d), fx, "%s/dev", name) < 0)
        return;
    snprintf(label, sizeof(label), "fixture %.40s%s", name,
             strcmp(path, "perf") ? " (files)" : " (sw PMU)");
    bench(label, p, s, dev ? d : "/dev", path, iters);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    char fxbuf[4096];
    default_fixtures(fxbuf, sizeof(fxbuf));
    const char *fx = argc > 2 ? argv[2] : fxbuf;
    if (iters <= 0)
        iters = 20000;
    printf("rapl sample cost, %d samples each\n", iters);
    /* this machine */
    char why[512];
    pa_env env = {.procfs = "/proc", .sysfs = "/sys", .devfs = "/dev"};
    if (pa__mod_rapl.probe(&env, why, sizeof(why)) < 0) {
        printf("%-34s %-9s unavailable: %s\n", "this machine", "auto", why);
    } else {
        bench("this machine", "/proc", "/sys", "/dev", "perf", iters);
        bench("this machine", "/proc", "/sys", "/dev", "msr", iters);
        bench("this machine", "/proc", "/sys", "/dev", "powercap", iters);
    }
    bench_fixture(fx, "rapl-server2s", "powercap", false, iters);
    bench_fixture(fx, "rapl-laptop", "powercap", false, iters);
    bench_fixture(fx, "rapl-msr", "msr", true, iters);
    /* real perf reads: the software PMU dressed as the power PMU */
    bench_fixture(fx, "rapl-perfsw", "perf", false, iters);
    printf("note: file fixtures measure the sensor's own work (pread, parse,\n"
           "unfold); on RAPL hardware every path adds the kernel's rdmsr on a\n"
           "CPU of the package (an IPI when it is not the reading CPU).  The\n"
           "sw-PMU line is real perf_event reads of per-CPU counters, each an\n"
           "IPI to that CPU (costly in VMs).\n");
    return 0;
}
