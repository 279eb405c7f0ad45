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
 * Then the export for the guests (`daemon --export-vms`, DESIGN.md
 * section 18.1): a fourth context does what the VM window does and writes
 * every VM's folder (report/vmexport.c: energy_uj and powerapi-vm each
 * window, temp + rename), beside the VM window without the export and the
 * floor of that I/O (as many files replaced the same way in one folder),
 * interleaved, on the file system of /tmp.  And the guest's
 * host sensor (section 18.2): a context with only that sensor ticking on
 * one VM's exported folder, beside its floor, one read of that file
 * (pa_file_read: open, read, close).
 *
 * Prints figures; it does not pass or fail.
 *
 * Usage: bench_vms [VMS [WINDOWS]]
 */
#include "internal.h"
#include "vmexport.h"
#include "vmgroups.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

static rp_vmexport *bench_export; /* the exported window's writer, else NULL */

/* One window at w: tick and report, grouped when g (and exported when x);
 * its time in ms. */
static double window_x(pa_ctx *ctx, rp_vmgroups *g, rp_vmexport *x, int w, double *scan_ms,
                       size_t *nvm)
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
        char why[256];
        if (x && rp_vmexport_window(x, vr, why, sizeof(why)) < 0) {
            fprintf(stderr, "bench_vms: %s\n", why);
            exit(1);
        }
    }
    pa_report_free(r);
    return now_ms() - t0;
}

static double window(pa_ctx *ctx, rp_vmgroups *g, int w, double *scan_ms, size_t *nvm)
{
    return window_x(ctx, g, NULL, w, scan_ms, nvm);
}

/* The floor of an export window: n files of about 400 bytes replaced
 * atomically (open a temporary, write, close, rename) in one folder under
 * dir, twice per VM (energy_uj and powerapi-vm); its time in ms. */
static double replace_floor(const char *dir, int n)
{
    char d[4300], tmp[4400], path[4400], text[400];
    snprintf(d, sizeof(d), "%s/floor", dir);
    mkdir(d, 0755);
    memset(text, 'x', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\n';
    double t0 = now_ms();
    for (int i = 0; i < 2 * n; i++) {
        snprintf(tmp, sizeof(tmp), "%s/.f%d.tmp", d, i);
        snprintf(path, sizeof(path), "%s/f%d", d, i);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, text, sizeof(text)) < 0 || close(fd) < 0 || rename(tmp, path) < 0)
            exit(1);
    }
    return now_ms() - t0;
}

/* The guest's host sensor on the folder vmdir: the median cost of a tick
 * with only that sensor, and of one read of its file, in us. */
static void guest_read(const char *dir, const char *vmdir, int reads)
{
    char procfs[4200], sysfs[4200], opt[4700];
    snprintf(procfs, sizeof(procfs), "%s/proc", dir);
    snprintf(sysfs, sizeof(sysfs), "%s/sys", dir);
    snprintf(opt, sizeof(opt), "path=%s,stale=1000000", vmdir); /* never stale: the counting path */
    pa_ctx_opts o = {.procfs = procfs, .sysfs = sysfs};
    pa_ctx *ctx = NULL;
    if (pa_ctx_new(&ctx, &o) < 0 || pa_module_disable(ctx, "auto") < 0 ||
        pa_module_enable(ctx, "host", opt) < 0) {
        fprintf(stderr, "bench_vms: guest: %s\n", pa_last_error());
        exit(1);
    }
    double *tick = calloc((size_t)reads, sizeof(double)),
           *file = calloc((size_t)reads, sizeof(double));
    char buf[4096];
    for (int i = 0; i < reads; i++) {
        double t0 = now_ms();
        if (pa_tick_at(ctx, (uint64_t)(i + 1) * 1000000000ull) < 0) {
            fprintf(stderr, "bench_vms: guest tick: %s\n", pa_last_error());
            exit(1);
        }
        double t1 = now_ms();
        if (pa_file_read(vmdir, "powerapi-vm", buf, sizeof(buf)) < 0)
            exit(1);
        file[i] = (now_ms() - t1) * 1e3;
        tick[i] = (t1 - t0) * 1e3;
    }
    printf("guest: a tick of the host sensor alone (parse, count, note): %.1f us (median of %d)\n"
           "  beside its floor, one read of powerapi-vm (open, read, close): %.1f us\n",
           pa_bench_median(tick, (size_t)reads), reads, pa_bench_median(file, (size_t)reads));
    free(tick);
    free(file);
    pa_ctx_free(ctx);
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
    pa_ctx *exported = make_ctx(dir);
    char expdir[4300], why[256];
    snprintf(expdir, sizeof(expdir), "%s/export", dir);
    rp_vmgroups *gx = NULL;
    char procfs[4200];
    snprintf(procfs, sizeof(procfs), "%s/proc", dir);
    rp_vmgroups *g = NULL;
    if (rp_vmgroups_new(&g, procfs, dir) < 0)
        return 1;
    if (rp_vmgroups_new(&gx, procfs, dir) < 0 ||
        rp_vmexport_new(&bench_export, expdir, procfs, dir, 0, why, sizeof(why)) < 0)
        return 1;
    double first_scan = scan(named, g); /* before the first tick, as monitor */
    scan(exported, gx);
    const pa_vms *vms = rp_vmgroups_vms(g);
    for (size_t i = 0; i < pa_vms_count(vms); i++)
        (void)pa_watch_pid(threads, pa_vms_get(vms, i)->pid, PA_WATCH_THREADS);
    double *a = calloc((size_t)windows, sizeof(double)),
           *b = calloc((size_t)windows, sizeof(double));
    double *s = calloc((size_t)windows, sizeof(double));
    double *t = calloc((size_t)windows, sizeof(double));
    double *x = calloc((size_t)windows, sizeof(double));
    double *fl = calloc((size_t)windows, sizeof(double));
    size_t nvm = 0;
    for (int w = 0; w < windows; w++) {
        double unused;
        a[w] = window(plain, NULL, w, &unused, &nvm);
        t[w] = window(threads, NULL, w, &unused, &nvm);
        b[w] = window(named, g, w, &s[w], &nvm);
        x[w] = window_x(exported, gx, bench_export, w, &unused, &nvm);
        fl[w] = replace_floor(dir, n);
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
    double mx = pa_bench_median(x + 2, (size_t)windows - 2);
    printf("export: window with --export-vms (%zu VMs' folders written): %8.2f ms\n"
           "  beside the same window without the export: %.2f ms: %.2f ms a window, %.1f us a VM\n",
           nvm, mx, mb, mx - mb, (mx - mb) * 1e3 / n);
    printf("  its floor, %d files of 400 bytes replaced (temp + rename) in one folder: %.2f ms\n",
           2 * n, pa_bench_median(fl + 2, (size_t)windows - 2));
    char vmdir[4600], vmname[256];
    rp_vmexport_dirname(pa_vms_get(rp_vmgroups_vms(gx), 0), vmname, sizeof(vmname));
    snprintf(vmdir, sizeof(vmdir), "%s/%s", expdir, vmname);
    guest_read(dir, vmdir, 2000);
    rp_vmexport_free(bench_export);
    rp_vmgroups_free(gx);
    pa_ctx_free(exported);
    free(x);
    free(fl);
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
