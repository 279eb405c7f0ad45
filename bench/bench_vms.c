/*
 * bench_vms.c - the cost of naming VMs (issue 41; DESIGN.md section 18):
 * a window of a host running N libvirt QEMU VMs (default 200, 2 vCPUs
 * and 4 threads each) beside as many other processes, with `--group-by
 * vm` and without.
 *
 * The tree is tests/fixtures/vms/make.py --many N (QEMU command lines,
 * libvirt's scopes, named vCPU threads).  Two contexts (procfs-cpu,
 * cpu-tdp, pa_watch_all, cgroup reports on) tick the same tree with an
 * explicit clock, interleaved.  The floor is a window without VMs: tick
 * and report.  Between them, the same with the hypervisors' threads
 * watched (what the vCPU split costs the library, without naming).  The
 * VM window is what `monitor --vms` does: the same, plus
 * the VM table's scan (every process's comm; a command line, cgroup and
 * threads for each new hypervisor, the threads of every known one), the
 * hypervisors watched with their threads, and the report grouped per VM.
 * Printed: the first window of each (the VM one names every VM there),
 * the median of the next ones, the difference per window and per VM, and
 * the scan alone.
 *
 * Prints figures; it does not pass or fail.
 *
 * Usage: bench_vms [VMS [WINDOWS]]
 */
#include "internal.h"
#include "vmgroups.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static pa_ctx *make_ctx(const char *dir)
{
    char procfs[4200], sysfs[4200];
    snprintf(procfs, sizeof(procfs), "%s/proc", dir);
    snprintf(sysfs, sizeof(sysfs), "%s/sys", dir);
    pa_ctx_opts o = {.procfs = procfs, .sysfs = sysfs, .rootfs = dir};
    pa_ctx *ctx = NULL;
    if (pa_ctx_new(&ctx, &o) < 0 || pa_module_enable(ctx, "procfs-cpu", NULL) < 0 ||
        pa_module_enable(ctx, "cpu-tdp", NULL) < 0 || pa_watch_all(ctx, 1) < 0 ||
        pa_report_cgroups(ctx, 1) < 0) {
        fprintf(stderr, "bench_vms: %s\n", pa_last_error());
        exit(1);
    }
    return ctx;
}

/* Lists the VMs and watches their threads, as monitor does. */
static double scan(pa_ctx *ctx, rp_vmgroups *g)
{
    double t0 = now_ms();
    if (rp_vmgroups_scan(g, ctx) < 0) {
        fprintf(stderr, "bench_vms: scan: %s\n", pa_last_error());
        exit(1);
    }
    return now_ms() - t0;
}

/* One window at w: tick and report, grouped when g; its time in ms. */
static double window(pa_ctx *ctx, rp_vmgroups *g, int w, double *scan_ms, size_t *nvm)
{
    double t0 = now_ms();
    if (pa_tick_at(ctx, (uint64_t)(w + 1) * 1000000000ull) < 0) {
        fprintf(stderr, "bench_vms: tick: %s\n", pa_last_error());
        exit(1);
    }
    pa_report *r = NULL;
    if (pa_report_get(ctx, &r) == 0 && g) {
        *scan_ms = scan(ctx, g);
        const pa_report *vr = NULL;
        if (rp_vmgroups_report(g, r, &vr) < 0)
            exit(1);
        *nvm = vr->ntargets - 1;
    }
    pa_report_free(r);
    return now_ms() - t0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    int windows = argc > 2 ? atoi(argv[2]) : 9;
    if (n <= 0 || windows < 3) {
        fprintf(stderr, "usage: bench_vms [VMS [WINDOWS]]\n");
        return 2;
    }
    char tmpl[] = "/tmp/bench-vms-XXXXXX";
    char *dir = mkdtemp(tmpl), cmd[8192];
    snprintf(cmd, sizeof(cmd), "python3 '%s/vms/make.py' --many %d '%s'", PA_FIXTURES, n, dir);
    if (!dir || system(cmd) != 0)
        return 1;
    pa_ctx *plain = make_ctx(dir), *named = make_ctx(dir), *threads = make_ctx(dir);
    char procfs[4200];
    snprintf(procfs, sizeof(procfs), "%s/proc", dir);
    rp_vmgroups *g = NULL;
    if (rp_vmgroups_new(&g, procfs, dir) < 0)
        return 1;
    double first_scan = scan(named, g); /* before the first tick, as monitor */
    const pa_vms *vms = rp_vmgroups_vms(g);
    for (size_t i = 0; i < pa_vms_count(vms); i++)
        (void)pa_watch_pid(threads, pa_vms_get(vms, i)->pid, PA_WATCH_THREADS);
    double *a = calloc((size_t)windows, sizeof(double)),
           *b = calloc((size_t)windows, sizeof(double));
    double *s = calloc((size_t)windows, sizeof(double));
    double *t = calloc((size_t)windows, sizeof(double));
    size_t nvm = 0;
    for (int w = 0; w < windows; w++) {
        double unused;
        a[w] = window(plain, NULL, w, &unused, &nvm);
        t[w] = window(threads, NULL, w, &unused, &nvm);
        b[w] = window(named, g, w, &s[w], &nvm);
    }
    printf("bench_vms: %d QEMU VMs (2 vCPUs, 4 threads each) and %d other processes, "
           "%d windows\n",
           n, n, windows);
    printf("  first scan (names every VM: comm, cmdline, cgroup, threads): %.2f ms\n", first_scan);
    double ma = pa_bench_median(a + 2, (size_t)windows - 2);
    double mb = pa_bench_median(b + 2, (size_t)windows - 2);
    double ms = pa_bench_median(s + 2, (size_t)windows - 2);
    double mt = pa_bench_median(t + 2, (size_t)windows - 2);
    printf("  window without VMs (tick + report):        %8.2f ms (median of %d)\n", ma,
           windows - 2);
    printf("  the same, the hypervisors' threads watched: %8.2f ms\n", mt);
    printf("  window with --group-by vm (%zu VMs named):  %8.2f ms\n", nvm, mb);
    printf("    of which the scan (comm of every process, threads of each VM): %.2f ms\n", ms);
    printf("  difference: %.2f ms a window, %.1f us a VM (threads %.2f ms, naming and\n"
           "  grouping %.2f ms)\n",
           mb - ma, (mb - ma) * 1e3 / n, mt - ma, mb - mt);
    rp_vmgroups_free(g);
    pa_ctx_free(plain);
    pa_ctx_free(named);
    pa_ctx_free(threads);
    free(t);
    free(a);
    free(b);
    free(s);
    snprintf(cmd, sizeof(cmd), "rm -r '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
