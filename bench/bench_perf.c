/*
 * bench_perf.c - cost of the perf sensor per target and per event.
 *
 * Starts N sleeping child processes and watches them with procfs-cpu +
 * perf counting E software events (one counter per event, then as one
 * group), then times the perf sensor's sample() alone (counters open, the
 * same tick again: every target read).  Divided by N x E it is the cost
 * of reading one counter of one target.  procfs-cpu's sample() on the
 * same targets is printed for scale.  Software events work in VMs; on a
 * PMU machine a hardware set can be given as the third argument.  Prints
 * figures (the least of 5 runs: the machine is shared, noise only adds).
 *
 * usage: bench_perf [CALLS] [MAX_TARGETS] [EVENTS]
 */
#include "internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ns per sample() of the perf sensor (perf != NULL) or of procfs-cpu. */
static double sample_cost(const pid_t *pids, int n, const char *perf, int calls)
{
    pa_ctx *ctx = NULL;
    if (pa_ctx_new(&ctx, NULL) < 0 ||
        pa_module_disable(ctx, "auto") < 0 || /* no nic sensor from auto */
        pa_module_enable(ctx, "procfs-cpu", NULL) < 0 ||
        pa_module_enable(ctx, "cpu-tdp", NULL) < 0 ||
        (perf && pa_module_enable(ctx, "perf", perf) < 0)) {
        fprintf(stderr, "bench_perf: %s\n", pa_last_error());
        pa_ctx_free(ctx);
        return -1;
    }
    for (int i = 0; i < n; i++)
        pa_watch_pid(ctx, pids[i], 0);
    for (int i = 0; i < 3; i++)
        pa_tick(ctx); /* finds the targets, opens the counters */
    pa_module *m = ctx->modules;
    while (m && strcmp(m->ops->name, perf ? "perf" : "procfs-cpu") != 0)
        m = m->next;
    double best = -1;
    for (int r = 0; r < 5 && m; r++) {
        pa_frame f = {.ctx = ctx, .tick = ctx->tick, .time_ns = 0, .sys = &ctx->sys[ctx->sys_cur]};
        uint64_t t0 = now_ns();
        for (int i = 0; i < calls; i++)
            m->ops->sample(m, &f);
        double c = (double)(now_ns() - t0) / calls;
        if (best < 0 || c < best)
            best = c;
    }
    pa_ctx_free(ctx);
    return best;
}

int main(int argc, char **argv)
{
    int calls = argc > 1 ? atoi(argv[1]) : 1000;
    int maxn = argc > 2 ? atoi(argv[2]) : 64;
    const char *hw = argc > 3 ? argv[3] : NULL;
    if (calls <= 0)
        calls = 1000;
    if (maxn <= 0 || maxn > 4096)
        maxn = 64;
    pid_t *pids = calloc((size_t)maxn, sizeof(pid_t));
    if (!pids)
        return 1;
    for (int i = 0; i < maxn; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            pause();
            _exit(0);
        }
    }
    static const char *const sets[] = {
        "perf::TASK-CLOCK",
        "perf::TASK-CLOCK+perf::CONTEXT-SWITCHES+perf::PAGE-FAULTS+"
        "perf::CPU-MIGRATIONS",
        "perf::TASK-CLOCK+perf::CONTEXT-SWITCHES+perf::PAGE-FAULTS+"
        "perf::CPU-MIGRATIONS+perf::CPU-CLOCK+perf::MINOR-FAULTS+"
        "perf::MAJOR-FAULTS+perf::CGROUP-SWITCHES",
    };
    static const int nevents[] = {1, 4, 8};
    printf("sample() cost, least of 5 runs of %d calls, software events\n", calls);
    printf("%8s %7s %6s %14s %14s %14s\n", "targets", "events", "group", "procfs-cpu ns", "perf ns",
           "ns/target/evt");
    for (int n = 1;; n = n * 8 > maxn && n < maxn ? maxn : n * 8) {
        if (n > maxn)
            break;
        double base = sample_cost(pids, n, NULL, calls);
        for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++)
            for (int g = 0; g < 2; g++) {
                char opts[512];
                snprintf(opts, sizeof(opts), "events=%s,group=%s", sets[s], g ? "on" : "off");
                double c = sample_cost(pids, n, opts, calls);
                if (c < 0)
                    continue;
                printf("%8d %7d %6s %14.0f %14.0f %14.0f\n", n, nevents[s], g ? "on" : "off", base,
                       c, c / (n * nevents[s]));
            }
        if (n == maxn)
            break;
    }
    if (hw) {
        char opts[1024];
        snprintf(opts, sizeof(opts), "events=%s", hw);
        double c = sample_cost(pids, maxn, opts, calls);
        if (c >= 0)
            printf("%8d %7s %6s %14s %14.0f\n", maxn, "custom", "off", "", c);
    }
    for (int i = 0; i < maxn; i++)
        kill(pids[i], SIGKILL);
    for (int i = 0; i < maxn; i++)
        waitpid(pids[i], NULL, 0);
    free(pids);
    return 0;
}
