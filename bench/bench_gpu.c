/*
 * bench_gpu.c - the GPU sensors' cost per window (issue 28): 8 devices and
 * 200 GPU processes, beside the same window without them, interleaved.
 *
 * One tree of 200 processes (procfs), each a DRM client of one of 8 cards
 * (sysfs hwmon, fdinfo) and an NVML process of one of 8 GPUs of the
 * stand-in library (its timeline: 25 processes a GPU, a sample each a
 * window).  Three contexts on it, ticked in turn with an explicit clock:
 *   base   procfs-cpu + cpu-tdp
 *   nvml   the same + nvml-share (nvml sensor, the stand-in)
 *   drm    the same + gpu-share (drm-gpu sensor)
 * Printed: the median tick of each (the thread's CPU time), and the GPU
 * part (the difference).
 *
 * The DRM files are rewritten before each window (not timed); the three
 * contexts take turns at ticking first.
 *
 * Usage: bench_gpu [windows]   (default 200)
 */
#include "internal.h"

#include "../sensors/gpu.h"
#include "bench_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NDEV 8
#define NPROC 200

static char root[256];

/* This thread's CPU time: the tick's own cost, not the waits of a shared
 * machine (the library ticks on the caller's thread). */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void mkdirs(const char *path)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

/* Writes root/rel (its folders made first when mk). */
static void put_at(int mk, const char *rel, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put_at(int mk, const char *rel, const char *fmt, ...)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    if (mk)
        mkdirs(p);
    *slash = '/';
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

/* The DRM counters of window w: each card's energy, each client's busy
 * time grow. */
static void drm_window(int w)
{
    char rel[256];
    for (int c = 0; c < NDEV; c++) {
        snprintf(rel, sizeof(rel), "sys/class/drm/card%d/device/hwmon/hwmon%d/energy1_input", c, c);
        put_at(1, rel, "%lld\n", 1000000ll * (c + 1) + 100000000ll * w);
    }
    for (int i = 0; i < NPROC; i++) {
        snprintf(rel, sizeof(rel), "proc/%d/fdinfo/3", 5000 + i);
        put_at(0, rel,
               "pos:\t0\ndrm-driver:\tamdgpu\ndrm-pdev:\t0000:%02x:00.0\ndrm-client-id:\t%d\n"
               "drm-engine-gfx:\t%lld ns\n",
               i % NDEV + 3, i, 1000000ll * (1 + i % 99) * w);
    }
}

/* The machine: procfs basics, 8 cards, 200 processes, the NVML timeline. */
static void machine(void)
{
    put_at(1, "proc/stat",
           "cpu  1000 0 1000 100000 0 0 0 0 0 0\ncpu0 1000 0 1000 100000 0 0 0 0 0 0\n");
    put_at(1, "proc/uptime", "1000.00 900.00\n");
    put_at(1, "proc/cpuinfo", "processor\t: 0\nmodel name\t: Bench CPU\ncpu MHz\t\t: 2000.000\n");
    for (int c = 0; c < NDEV; c++) {
        char rel[256];
        snprintf(rel, sizeof(rel), "sys/class/drm/card%d/device/uevent", c);
        put_at(1, rel, "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:%02x:00.0\n", c + 3);
        snprintf(rel, sizeof(rel), "sys/class/drm/card%d/device/hwmon/hwmon%d/energy1_input", c, c);
        put_at(1, rel, "%d\n", 1000000 * (c + 1));
    }
    char *script = malloc(64 * 1024);
    size_t n = (size_t)snprintf(script, 64 * 1024, "step\n");
    for (int d = 0; d < NDEV; d++)
        n += (size_t)snprintf(script + n, 64 * 1024 - n,
                              "dev %d uuid=GPU-bench-%d bus=00000000:%02X:00.0 name=Bench_GPU "
                              "energy=1000 denergy=%d power=100000\n",
                              d, d, d + 0x20, 100000 + 1000 * d);
    for (int i = 0; i < NPROC; i++) {
        int pid = 5000 + i, card = i % NDEV;
        char rel[256], link[4400], dir[4300];
        snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
        put_at(1, rel,
               "%d (gpu%d) S 1 %d %d 0 -1 4194560 100 0 0 0 10 0 0 0 20 0 1 0 5000 1000000 100 "
               "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
               pid, i, pid, pid);
        snprintf(rel, sizeof(rel), "proc/%d/fdinfo/3", pid);
        put_at(1, rel,
               "pos:\t0\ndrm-driver:\tamdgpu\ndrm-pdev:\t0000:%02x:00.0\ndrm-client-id:\t%d\n"
               "drm-engine-gfx:\t%d ns\n",
               card + 3, i, 1000 * i);
        snprintf(dir, sizeof(dir), "%s/proc/%d/fd", root, pid);
        mkdirs(dir);
        snprintf(link, sizeof(link), "%s/3", dir);
        if (symlink("/dev/dri/renderD128", link) < 0 && errno != EEXIST)
            perror(link);
        n += (size_t)snprintf(script + n, 64 * 1024 - n,
                              "util %d pid=%d ts=1000000 sm=%d\nproc %d compute pid=%d mem=1024\n",
                              card, pid, 1 + i % 99, card, pid);
    }
    put_at(1, "nvml.script", "%s", script);
    free(script);
}

static pa_ctx *bench_ctx(const char *gpu_formula)
{
    char proc[300], sys[300];
    snprintf(proc, sizeof(proc), "%s/proc", root);
    snprintf(sys, sizeof(sys), "%s/sys", root);
    pa_ctx_opts o = {.procfs = proc, .sysfs = sys, .devfs = sys};
    pa_ctx *ctx = NULL;
    if (pa_ctx_new(&ctx, &o) < 0 || pa_module_disable(ctx, "auto") < 0 ||
        pa_module_enable(ctx, "procfs-cpu", NULL) < 0 ||
        pa_module_enable(ctx, "cpu-tdp", NULL) < 0 ||
        (gpu_formula && pa_module_enable(ctx, gpu_formula, "idle=10W") < 0) ||
        pa_watch_all(ctx, 1) < 0) {
        fprintf(stderr, "bench_gpu: %s\n", pa_last_error());
        exit(1);
    }
    return ctx;
}

int main(int argc, char **argv)
{
    int windows = argc > 1 ? atoi(argv[1]) : 200;
    if (windows < 3)
        windows = 3;
#ifndef PA_NVML_STANDIN
    fprintf(stderr, "bench_gpu: built without the test suite's stand-in NVML (PA_BUILD_TESTS)\n");
    return 77;
#else
    snprintf(root, sizeof(root), "/tmp/bench_gpu.XXXXXX");
    if (!mkdtemp(root))
        return 1;
    machine();
    char path[400];
    snprintf(path, sizeof(path), "%s/nvml.script", root);
    setenv("PA_NVML_SCRIPT", path, 1);
    setenv("POWERAPI_NVML_LIBRARY", PA_NVML_STANDIN, 1);
    static const char *const names[3] = {"base", "nvml", "drm"};
    pa_ctx *ctx[3] = {bench_ctx(NULL), bench_ctx("nvml-share"), bench_ctx("gpu-share")};
    double *ms[3];
    for (int k = 0; k < 3; k++)
        ms[k] = calloc((size_t)windows, sizeof(double));
    for (int w = 0; w <= windows; w++) {
        drm_window(w); /* not timed */
        for (int j = 0; j < 3; j++) {
            int k = (w + j) % 3; /* each first in turn */
            double t0 = now_ms();
            if (pa_tick_at(ctx[k], (uint64_t)(w + 1) * 1000000000ull) < 0) {
                fprintf(stderr, "bench_gpu: %s: %s\n", names[k], pa_last_error());
                return 1;
            }
            if (w > 0) /* the first tick only primes */
                ms[k][w - 1] = now_ms() - t0;
        }
    }
    for (int k = 1; k < 3; k++) {
        pa_report *r = NULL;
        if (pa_report_get(ctx[k], &r) < 0)
            continue;
        double procs = 0, sys = r->ncomponents > 2 ? r->system_component_w[2] : 0;
        for (size_t i = 0; i < r->ntargets && r->ncomponents > 2; i++)
            procs += r->target_component_w[i * r->ncomponents + 2];
        printf("%s last window: %zu devices, %zu targets, gpu %.1f W, processes %.1f W, "
               "assumed %zu bytes\n",
               names[k], r->ndevices, r->ntargets, sys, procs, strlen(r->assumed));
        pa_report_free(r);
    }
    double med[3];
    for (int k = 0; k < 3; k++) {
        med[k] = pa_bench_median(ms[k], (size_t)windows);
        printf("%-5s median %7.3f ms CPU a window   (%d windows, %d processes, %d devices)\n",
               names[k], med[k], windows, NPROC, k ? NDEV : 0);
    }
    printf("GPU part: nvml %+.3f ms, drm %+.3f ms a window\n", med[1] - med[0], med[2] - med[0]);
    /* the nvml sensor's reading alone, after the contexts' run */
    pa_nvml *nv = NULL;
    char why[512];
    pa_gpu_reading *rd = calloc(1, sizeof(*rd));
    if (rd && pa_nvml_open(PA_NVML_STANDIN, &nv, why, sizeof(why)) == 0) {
        for (int w = 0; w < windows; w++) {
            double t0 = now_ms();
            pa_nvml_read(nv, rd, why, sizeof(why));
            ms[1][w] = now_ms() - t0;
        }
        printf("nvml sensor alone (pa_nvml_read): median %.3f ms CPU a window, %d devices, %d "
               "processes\n",
               pa_bench_median(ms[1], (size_t)windows), rd->ndev, rd->nproc);
        pa_nvml_close(nv);
    }
    free(rd);
    for (int k = 0; k < 3; k++) {
        pa_ctx_free(ctx[k]);
        free(ms[k]);
    }
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : 1;
#endif
}
