/*
 * bench_scope.c - what a scope costs (issue 29's "Scope enter+exit cost"):
 * pa_scope_begin + pa_scope_end of a named scope on a context whose price
 * is known (a window of the real /proc), beside the floor measured in the
 * same run, interleaved round by round: the two reads of the thread CPU
 * clock (clock_gettime(CLOCK_THREAD_CPUTIME_ID)) a scope cannot do
 * without.  Also the library's own part (pa_scope_begin_at/end_at, no
 * clock), a nested pair (depth 2), and all of them with a sampler ticking
 * every millisecond (each tick publishes a price the ends read), and N
 * threads on one name (shared counters).
 *
 * Figures: median over rounds of the mean ns per begin+end pair, and the
 * fastest round (the least disturbed by other work on the machine).
 * Prints figures; not a pass/fail test.
 *
 * Usage: bench_scope [ROUNDS [PAIRS_PER_ROUND [THREADS]]]
 *        (default 201 rounds of 2000 pairs: a round of about a millisecond
 *        is seldom preempted; 2 threads)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "powerapi.h"

#include "bench_util.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

enum { FLOOR, SCOPE, SCOPE_AT, NESTED, NKINDS };
static const char *const kind_name[NKINDS] = {
    "floor: 2 x clock_gettime(THREAD_CPUTIME)", "pa_scope_begin + end",
    "pa_scope_begin_at + end_at (no clock)", "nested pair (outer + inner)"};

static volatile uint64_t sink;

/* ns per pair of one round of n pairs. */
static double round_ns(pa_ctx *ctx, int kind, unsigned n)
{
    struct timespec ts;
    pa_scope_result r;
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++) {
        switch (kind) {
        case FLOOR:
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
            sink += (uint64_t)ts.tv_nsec;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
            sink += (uint64_t)ts.tv_nsec;
            break;
        case SCOPE:
            pa_scope_begin(ctx, "checkout");
            pa_scope_end(ctx, "checkout", &r);
            break;
        case SCOPE_AT:
            pa_scope_begin_at(ctx, "checkout", i);
            pa_scope_end_at(ctx, "checkout", i + 100, &r);
            break;
        case NESTED:
            pa_scope_begin(ctx, "checkout");
            pa_scope_begin(ctx, "db");
            pa_scope_end(ctx, "db", &r);
            pa_scope_end(ctx, "checkout", &r);
            break;
        }
        sink += (uint64_t)r.depth;
    }
    return (double)(now_ns() - t0) / n;
}

static void run(pa_ctx *ctx, const char *title, unsigned rounds, unsigned n)
{
    double *v[NKINDS];
    for (int k = 0; k < NKINDS; k++)
        v[k] = calloc(rounds, sizeof(double));
    for (int k = 0; k < NKINDS; k++) /* warm-up: names, caches */
        round_ns(ctx, k, n / 10 + 1);
    for (unsigned i = 0; i < rounds; i++)
        for (int k = 0; k < NKINDS; k++) /* interleaved */
            v[k][i] = round_ns(ctx, k, n);
    printf("%s%*s median ns (fastest round)\n", title, (int)(44 - strlen(title)), "");
    double floor = pa_bench_median(v[FLOOR], rounds), floor_min = v[FLOOR][0];
    for (int k = 0; k < NKINDS; k++) {
        double m = pa_bench_median(v[k], rounds); /* sorts v[k] */
        printf("  %-42s %8.1f (%6.1f)", kind_name[k], m, v[k][0]);
        int f = k == NESTED ? 2 : k == SCOPE ? 1 : 0;
        if (f)
            printf("   floor + %.1f (+ %.1f)", m - f * floor, v[k][0] - f * floor_min);
        printf("\n");
        free(v[k]);
    }
}

typedef struct thread_arg {
    pa_ctx *ctx;
    unsigned n;
    double ns;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    a->ns = round_ns(a->ctx, SCOPE, a->n);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 201;
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 2000;
    unsigned nth = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
    if (!rounds || !n || !nth || nth > 64) {
        fprintf(stderr, "usage: bench_scope [ROUNDS [PAIRS [THREADS]]]\n");
        return 2;
    }
    pa_ctx *ctx = NULL;
    if (pa_ctx_new(&ctx, NULL) < 0 || pa_watch_pid(ctx, getpid(), 0) < 0 || pa_tick(ctx) < 0) {
        fprintf(stderr, "bench_scope: %s\n", pa_last_error());
        return 1;
    }
    usleep(100000);
    pa_tick(ctx);
    pa_scope_result r;
    pa_scope_begin(ctx, "price");
    pa_scope_end(ctx, "price", &r);
    printf("bench_scope: %u rounds x %u pairs, median ns per pair; price "
           "%.3f J/CPU-s (%s%s)\n",
           rounds, n, r.j_per_cpu_s, r.flags & 1u ? "measured" : "modelled",
           r.flags & PA_SCOPE_RATE_SYSTEM ? ", the machine's" : "");
    run(ctx, "no sampler:", rounds, n);
    if (pa_start(ctx, 1000000, NULL, NULL) == 0) {
        run(ctx, "sampler ticking every 1 ms:", rounds, n);
        pa_stop(ctx);
    }
    pthread_t th[64];
    thread_arg a[64];
    for (unsigned i = 0; i < nth; i++) {
        a[i] = (thread_arg){ctx, n * 5, 0};
        pthread_create(&th[i], NULL, thread_main, &a[i]);
    }
    double sum = 0;
    for (unsigned i = 0; i < nth; i++) {
        pthread_join(th[i], NULL);
        sum += a[i].ns;
    }
    printf("%u threads on one name at once: %.1f ns per pair (mean of the "
           "threads)\n",
           nth, sum / nth);
    pa_ctx_free(ctx);
    return 0;
}
