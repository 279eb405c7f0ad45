/*
 * bench_cgnames.c - the cost of naming cgroups (issue 27): a window of
 * 10,000 processes in 1,000 containers, with names and without.
 *
 * A procfs tree of the vm-nocpufreq fixture plus N processes (default
 * 10,000), each in one of C containers (default 1,000: Docker, containerd
 * in pods, CRI-O in pods, Podman, a quarter each), and under a rootfs the
 * runtimes' state files of every container.  Two contexts (procfs-cpu,
 * cpu-tdp, pa_watch_all, cgroup reports on) tick the same tree with an
 * explicit clock, interleaved: one names the cgroups, the other not (its
 * floor: the same window without names).  Printed: the first window of
 * each (the naming one reads every state file there), then the median of
 * the next windows and the difference per window, per container and per
 * process; and the state files read in all (each once, unless it changes).
 *
 * Prints figures; it does not pass or fail.
 *
 * Usage: bench_cgnames [PROCESSES [CONTAINERS [WINDOWS]]]
 */
#include "internal.h"

/* paths here are a temporary folder plus a few hundred bytes */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void put(const char *path, const char *text)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bench_cgnames: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* Container k's ID, cgroup path and state file (under root). */
static void container(const char *root, int k, char *id, char *cg, size_t cglen, int write)
{
    snprintf(id, 65, "%08x%056x", 0xc0de0000u + (unsigned)k, 0u);
    char p[4096], text[1024], uid[40];
    snprintf(uid, sizeof(uid), "%08x-0000-4000-8000-%012x", (unsigned)k, (unsigned)k);
    char uid_[40];
    snprintf(uid_, sizeof(uid_), "%s", uid);
    for (char *c = uid_; *c; c++)
        if (*c == '-')
            *c = '_';
    switch (k % 4) {
    case 0:
        snprintf(cg, cglen, "/system.slice/docker-%s.scope", id);
        snprintf(p, sizeof(p), "%s/var/lib/docker/containers/%s/config.v2.json", root, id);
        snprintf(text, sizeof(text), "{\"ID\":\"%s\",\"Name\":\"/web-%d\"}", id, k);
        break;
    case 1:
        snprintf(cg, cglen,
                 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/"
                 "cri-containerd-%s.scope",
                 uid_, id);
        snprintf(p, sizeof(p),
                 "%s/run/containerd/io.containerd.runtime.v2.task/k8s.io/%s/"
                 "config.json",
                 root, id);
        snprintf(text, sizeof(text),
                 "{\"annotations\":{\"io.kubernetes.cri.container-name\":\"api\","
                 "\"io.kubernetes.cri.sandbox-name\":\"api-%d\","
                 "\"io.kubernetes.cri.sandbox-namespace\":\"shop\","
                 "\"io.kubernetes.cri.sandbox-uid\":\"%s\"}}",
                 k, uid);
        break;
    case 2:
        snprintf(cg, cglen,
                 "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice/"
                 "crio-%s.scope",
                 uid_, id);
        snprintf(p, sizeof(p),
                 "%s/run/containers/storage/overlay-containers/%s/userdata/"
                 "config.json",
                 root, id);
        snprintf(text, sizeof(text),
                 "{\"annotations\":{\"io.kubernetes.container.name\":\"worker\","
                 "\"io.kubernetes.pod.name\":\"worker-%d\","
                 "\"io.kubernetes.pod.namespace\":\"jobs\",\"io.kubernetes.pod.uid\":\"%s\"}}",
                 k, uid);
        break;
    default:
        snprintf(cg, cglen, "/machine.slice/libpod-%s.scope/container", id);
        p[0] = '\0'; /* containers.json: all of them in one file */
        break;
    }
    if (write && p[0])
        put(p, text);
}

/* The tree: the fixture's procfs copied, n processes in c containers. */
static void make_tree(const char *dir, int n, int c)
{
    char cmd[8192], p[4096], text[2048], id[65], cg[512];
    snprintf(cmd, sizeof(cmd), "cp -r '%s/vm-nocpufreq/proc' '%s/vm-nocpufreq/sys' '%s/'",
             PA_FIXTURES, PA_FIXTURES, dir);
    if (system(cmd) != 0)
        exit(1);
    char root[4096];
    snprintf(root, sizeof(root), "%s/root", dir);
    size_t cap = (size_t)c * 200 + 16, len = 0;
    char *pod = malloc(cap);
    len += (size_t)snprintf(pod + len, cap - len, "[");
    for (int k = 0; k < c; k++) {
        container(root, k, id, cg, sizeof(cg), 1);
        if (k % 4 == 3)
            len += (size_t)snprintf(pod + len, cap - len, "%s{\"id\":\"%s\",\"names\":[\"db-%d\"]}",
                                    len > 1 ? "," : "", id, k);
    }
    snprintf(pod + len, cap - len, "]");
    snprintf(p, sizeof(p), "%s/var/lib/containers/storage/overlay-containers/containers.json",
             root);
    put(p, pod);
    free(pod);
    for (int i = 0; i < n; i++) {
        int pid = 100000 + i;
        container(root, i % c, id, cg, sizeof(cg), 0);
        snprintf(p, sizeof(p), "%s/proc/%d/stat", dir, pid);
        snprintf(text, sizeof(text),
                 "%d (w%d) S 1 %d %d 0 -1 4194560 100 0 0 0 %d %d 0 0 20 0 1 0 %d 1000000 100 "
                 "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
                 pid, i, pid, pid, i % 50, i % 7, 1000 + i);
        put(p, text);
        snprintf(p, sizeof(p), "%s/proc/%d/cgroup", dir, pid);
        snprintf(text, sizeof(text), "0::%s\n", cg);
        put(p, text);
    }
}

/* Advances every process's utime by one tick (a busy window). */
static void advance(const char *dir, int n, int w)
{
    char p[4096], text[1024];
    for (int i = 0; i < n; i++) {
        int pid = 100000 + i;
        snprintf(p, sizeof(p), "%s/proc/%d/stat", dir, pid);
        snprintf(text, sizeof(text),
                 "%d (w%d) S 1 %d %d 0 -1 4194560 100 0 0 0 %d %d 0 0 20 0 1 0 %d 1000000 100 "
                 "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
                 pid, i, pid, pid, i % 50 + w, i % 7, 1000 + i);
        put(p, text);
    }
}

static pa_ctx *make_ctx(const char *dir, int names)
{
    char procfs[4200], sysfs[4200], root[4200];
    snprintf(procfs, sizeof(procfs), "%s/proc", dir);
    snprintf(sysfs, sizeof(sysfs), "%s/sys", dir);
    snprintf(root, sizeof(root), "%s/root", dir);
    pa_ctx_opts o = {.procfs = procfs, .sysfs = sysfs, .rootfs = root};
    pa_ctx *ctx = NULL;
    if (pa_ctx_new(&ctx, &o) < 0 || pa_module_enable(ctx, "procfs-cpu", NULL) < 0 ||
        pa_module_enable(ctx, "cpu-tdp", NULL) < 0 || pa_watch_all(ctx, 1) < 0 ||
        pa_report_cgroups(ctx, 1) < 0) {
        fprintf(stderr, "bench_cgnames: %s\n", pa_last_error());
        exit(1);
    }
    ctx->names_off = !names;
    return ctx;
}

/* One tick at window w; its time in ms. */
static double tick(pa_ctx *ctx, int w)
{
    double t0 = now_ms();
    if (pa_tick_at(ctx, (uint64_t)(w + 1) * 1000000000ull) < 0) {
        fprintf(stderr, "bench_cgnames: tick: %s\n", pa_last_error());
        exit(1);
    }
    return now_ms() - t0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    int c = argc > 2 ? atoi(argv[2]) : 1000;
    int windows = argc > 3 ? atoi(argv[3]) : 9;
    if (n <= 0 || c <= 0 || windows < 3) {
        fprintf(stderr, "usage: bench_cgnames [PROCESSES [CONTAINERS [WINDOWS]]]\n");
        return 2;
    }
    char tmpl[] = "/tmp/bench-cgnames-XXXXXX";
    char *dir = mkdtemp(tmpl);
    if (!dir)
        return 1;
    make_tree(dir, n, c);
    pa_ctx *with = make_ctx(dir, 1), *without = make_ctx(dir, 0);
    tick(with, 0);
    tick(without, 0);
    advance(dir, n, 1);
    double first_with = tick(with, 1), first_without = tick(without, 1);
    double *dw = calloc((size_t)windows, sizeof(double)),
           *dn = calloc((size_t)windows, sizeof(double));
    for (int w = 2; w < windows + 2; w++) {
        advance(dir, n, w);
        /* interleaved, the order alternating: the machine is noisy */
        if (w & 1) {
            dw[w - 2] = tick(with, w);
            dn[w - 2] = tick(without, w);
        } else {
            dn[w - 2] = tick(without, w);
            dw[w - 2] = tick(with, w);
        }
    }
    qsort(dw, (size_t)windows, sizeof(double), cmp_double);
    qsort(dn, (size_t)windows, sizeof(double), cmp_double);
    double mw = dw[windows / 2], mn = dn[windows / 2];
    pa_report *r = NULL;
    size_t named = 0;
    if (pa_report_get(with, &r) == 0) {
        for (size_t i = 0; i < r->ntargets; i++)
            named += r->targets[i].type == PA_TARGET_CGROUP && r->targets[i].names &&
                     r->targets[i].names->container_name[0];
        pa_report_free(r);
    }
    printf("bench_cgnames: %d processes in %d containers (%zu cgroup records named), %d windows\n",
           n, c, named, windows);
    printf("  first window (names resolved): %.1f ms with names, %.1f ms without (+%.1f ms, "
           "%.1f us a container)\n",
           first_with, first_without, first_with - first_without,
           (first_with - first_without) * 1e3 / c);
    printf("  later windows (median):        %.1f ms with names, %.1f ms without (+%.2f ms, "
           "%.2f us a container, %.3f us a process)\n",
           mw, mn, mw - mn, (mw - mn) * 1e3 / c, (mw - mn) * 1e3 / n);
    printf("  state lookups in all: %llu (one per container: each read once)\n",
           (unsigned long long)pa__cgcache_reads(with->cgcache));
    pa_ctx_free(with);
    pa_ctx_free(without);
    free(dw);
    free(dn);
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
