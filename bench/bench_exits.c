/*
 * bench_exits.c - the cost of counting processes that exit between two
 * ticks (issue 38, DESIGN.md section 2 "Exits") under a fork storm.
 *
 * A storm of bare fork + _exit loops (as many as asked, default 2) runs
 * while two contexts watch every process, ticked in turn each window:
 * one with the kernel's taskstats records (procfs-cpu's default as root),
 * one with exits=off (the children-time estimate: the floor, the same
 * scan without records).  For each, per window: the tick's own CPU time
 * (this thread's clock), the processes the exited record counted, and
 * the socket overflows (exits_lost).  The difference over the exits is
 * the cost per exit; the records a second that were lost say whether the
 * socket kept up.  Prints figures; it does not pass or fail.
 *
 * Usage: bench_exits [WINDOWS [STORMS]]   (default 6 windows of 1 s, 2)
 */
#include "powerapi.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static pa_ctx *open_ctx(const char *procfs_opts)
{
    pa_ctx *ctx = NULL;
    if (pa_ctx_new(&ctx, NULL) < 0 || pa_module_enable(ctx, "procfs-cpu", procfs_opts) < 0 ||
        pa_module_enable(ctx, "cpu-curve", NULL) < 0 || pa_watch_all(ctx, 1) < 0) {
        fprintf(stderr, "bench_exits: %s\n", pa_last_error());
        exit(1);
    }
    return ctx;
}

/* One tick: its CPU ms, and the exited record's processes. */
static double tick(pa_ctx *ctx, unsigned *procs, unsigned long long *lost, char *src, size_t len)
{
    double t0 = thread_cpu_ms();
    if (pa_tick(ctx) < 0) {
        fprintf(stderr, "bench_exits: tick: %s\n", pa_last_error());
        exit(1);
    }
    double ms = thread_cpu_ms() - t0;
    pa_report *r = NULL;
    *procs = 0;
    if (pa_report_get(ctx, &r) == 0) {
        for (size_t i = 0; i < r->ntargets; i++)
            if (r->targets[i].type == PA_TARGET_EXITED)
                *procs = r->targets[i].processes;
        *lost = r->exits_lost;
        snprintf(src, len, "%s", r->exits_source);
        pa_report_free(r);
    }
    return ms;
}

int main(int argc, char **argv)
{
    int windows = argc > 1 ? atoi(argv[1]) : 6;
    int storms = argc > 2 ? atoi(argv[2]) : 2;
    pa_ctx *with = open_ctx(NULL), *without = open_ctx("exits=off");
    unsigned n;
    unsigned long long lost = 0;
    char src[2][32];
    tick(with, &n, &lost, src[0], sizeof(src[0])); /* prime */
    tick(without, &n, &lost, src[1], sizeof(src[1]));
    pid_t kids[64];
    for (int i = 0; i < storms && i < 64; i++)
        if ((kids[i] = fork()) == 0)
            for (;;) {
                pid_t c = fork();
                if (c == 0)
                    _exit(0);
                if (c > 0)
                    waitpid(c, NULL, 0);
            }
    printf("window  records: tick CPU ms  exits counted  lost | estimate: tick CPU ms\n");
    double sum_w = 0, sum_o = 0, exits = 0;
    for (int w = 0; w < windows; w++) {
        usleep(500000);
        double a = tick(with, &n, &lost, src[0], sizeof(src[0]));
        usleep(500000);
        unsigned n2;
        unsigned long long l2;
        double b = tick(without, &n2, &l2, src[1], sizeof(src[1]));
        printf("%6d  %8.2f %8u %6llu   | %8.2f\n", w + 1, a, n, lost, b);
        sum_w += a;
        sum_o += b;
        exits += n;
    }
    for (int i = 0; i < storms && i < 64; i++)
        kill(kids[i], SIGKILL);
    while (wait(NULL) > 0)
        ;
    printf("exits via '%s' (floor via '%s'): %.0f processes a second; tick %.2f ms against the "
           "floor's %.2f ms: %.2f us per exit; socket overflows %llu\n",
           src[0], src[1], exits / windows, sum_w / windows, sum_o / windows,
           exits > 0 ? (sum_w - sum_o) * 1e3 / exits : 0, lost);
    pa_ctx_free(with);
    pa_ctx_free(without);
    return 0;
}
