/*
 * test_scope.c - scopes (DESIGN.md section 15): the energy of a region of
 * code, its price from the context's last window, nesting, aggregates,
 * the bound on names and the errors.
 *
 * Prices worked out by hand from fixture trees ticked with an explicit
 * clock:
 *   - vm-nocpufreq with cpu-tdp tdp=100,ftdp=2000,vtdp=1.0: P = 70 W on 2
 *     CPUs; java (1801) uses 1 CPU-s of a 2 s window (capacity 4 CPU-s):
 *     17.5 W, 35 J, so 35 J per CPU-second; the machine busy 2 of 4
 *     CPU-s: (70 - 35 idle) W x 2 s / 2 CPU-s = 35 J per CPU-second too
 *     (share=capacity prices every CPU-second alike);
 *   - rapl-server2s with rapl-share (measured): 100 W, 2 of 4 CPU-s busy,
 *     web (100) 1.2 CPU-s on package 0 gets 30 W: 25 J per CPU-second;
 *     db (200) 0.6 CPU-s on package 1 gets 20 W: 33.3 J per CPU-second;
 *     the machine (100 - 50 idle) W / 2 busy CPU-s: 25.
 * Scopes use explicit thread CPU clocks (pa_scope_begin_at/end_at), so
 * every figure is exact; one test burns real CPU time.
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOL 1e-9
#define MS 1000000ull /* ns */

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */
/* ------------------------------------------------------------------ */

/* java's stat on the VM fixture with utime and stime changed. */
static void vm_java_stat(const char *root, unsigned utime, unsigned stime)
{
    pa_test_write(root, "proc/1801/stat",
                  "1801 (java) S 1734 1801 1734 34816 1801 4194560 2801 0 0 "
                  "0 %u %u 0 0 20 0 6 0 70011 17862656 1124 "
                  "18446744073709551615 0 0 0 0 0 0 0 4096 1256 0 0 0 17 0 "
                  "0 0 0 0 0\n",
                  utime, stime);
}

/* /proc/stat of the VM 2 s later with 2 of its 4 CPU-seconds busy. */
static void vm_machine_busy(const char *root)
{
    pa_test_write(root, "proc/stat",
                  "cpu  10232 12 8151 1698521 2203 0 411 1530 0 0\n"
                  "cpu0 5361 5 4240 848831 1190 0 289 771 0 0\n"
                  "cpu1 4871 7 3911 849690 1013 0 122 759 0 0\n"
                  "intr 0\nctxt 0\nbtime 1732191396\nprocesses 1\n");
}

/* The VM, priced at 35 J per CPU-second by a window from 1 s to 3 s; the
 * machine busy 2 of its 4 CPU-seconds.  Returns the context; *root is
 * the fixture copy. */
static pa_ctx *vm_priced(char **root, pid_t price_pid)
{
    *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(*root);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    int rc = pa_module_enable(ctx, "cpu-tdp", "tdp=100,ftdp=2000,vtdp=1.0");
    ck_assert_msg(rc == 0, "cpu-tdp: %s", pa_last_error());
    ck_assert_int_eq(pa_watch_pid(ctx, 1801, 0), 0);
    pa_scope_opts o = {.pid = price_pid};
    ck_assert_int_eq(pa_scope_configure(ctx, &o), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    vm_java_stat(*root, 4410 + 90, 391 + 10);
    vm_machine_busy(*root);
    rc = pa_tick_at(ctx, 3 * NS_PER_S);
    ck_assert_msg(rc == 0, "tick: %s", pa_last_error());
    return ctx;
}

static void vm_close(pa_ctx *ctx, char *root)
{
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}

/* One scope from a to b (ms of thread CPU time). */
static pa_scope_result scope_ms(pa_ctx *ctx, const char *name, unsigned a, unsigned b)
{
    pa_scope_result r;
    ck_assert_int_eq(pa_scope_begin_at(ctx, name, a * MS), 0);
    int rc = pa_scope_end_at(ctx, name, b * MS, &r);
    ck_assert_msg(rc == 0, "end %s: %s", name, pa_last_error());
    return r;
}

static pa_scope_stats stats(pa_ctx *ctx, const char *name)
{
    pa_scope_stats s;
    int rc = pa_scope_get(ctx, name, &s);
    ck_assert_msg(rc == 0, "stats %s: %s", name, pa_last_error());
    return s;
}

/* ------------------------------------------------------------------ */
/* Prices                                                              */
/* ------------------------------------------------------------------ */

/* Before the first window a scope has no price; after it, 250 ms of CPU
 * at 35 J per CPU-second are 8.75 J, modelled, from the process. */
START_TEST(known_answer_process_price)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    pa_scope_result r = scope_ms(ctx, "early", 0, 10);
    ck_assert_uint_eq(r.flags & PA_SCOPE_NO_WINDOW, PA_SCOPE_NO_WINDOW);
    ck_assert_double_eq(r.energy_j, 0);
    ck_assert_double_eq_tol(r.cpu_time_s, 0.010, TOL);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);

    ctx = vm_priced(&root, 1801);
    r = scope_ms(ctx, "checkout", 1000, 1250);
    ck_assert_double_eq_tol(r.j_per_cpu_s, 35.0, TOL);
    ck_assert_double_eq_tol(r.cpu_time_s, 0.25, TOL);
    ck_assert_double_eq_tol(r.energy_j, 8.75, TOL);
    ck_assert_double_eq_tol(r.self_energy_j, 8.75, TOL);
    ck_assert_uint_eq(r.flags, 0); /* modelled, from the process */
    ck_assert_uint_eq(r.depth, 0);
    pa_scope_stats s = stats(ctx, "checkout");
    ck_assert_uint_eq(s.calls, 1);
    ck_assert_uint_eq(s.rated_calls, 1);
    ck_assert_uint_eq(s.measured_calls, 0);
    ck_assert_double_eq_tol(s.energy_j, 8.75, TOL);
    ck_assert_double_eq_tol(s.mean_j, 8.75, TOL);
    ck_assert_uint_eq(s.flags & PA_POWER_MEASURED, 0);
    /* a window in which nothing ran prices nothing: the price stays */
    ck_assert_int_eq(pa_tick_at(ctx, 4 * NS_PER_S), 0);
    r = scope_ms(ctx, "checkout", 0, 100);
    ck_assert_double_eq_tol(r.energy_j, 3.5, TOL);
    ck_assert_uint_eq(r.flags, 0);
    vm_close(ctx, root);
}
END_TEST

/* Windows that ended before the context's first scope: the first scope
 * gets the last one's price (here the machine's: this test process is
 * not in the fixture). */
START_TEST(price_of_windows_before_first_scope)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", "tdp=100,ftdp=2000,vtdp=1.0"), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    vm_machine_busy(root);
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    pa_scope_result r = scope_ms(ctx, "first", 0, 100);
    ck_assert_uint_eq(r.flags, PA_SCOPE_RATE_SYSTEM);
    ck_assert_double_eq_tol(r.energy_j, 3.5, TOL);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* A process the context does not watch (or pid -1): the machine's price,
 * flagged. */
START_TEST(system_price_when_not_watched)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 4242);
    pa_scope_result r = scope_ms(ctx, "x", 0, 100);
    ck_assert_uint_eq(r.flags, PA_SCOPE_RATE_SYSTEM);
    ck_assert_double_eq_tol(r.j_per_cpu_s, 35.0, TOL);
    ck_assert_double_eq_tol(r.energy_j, 3.5, TOL);
    vm_close(ctx, root);
    ctx = vm_priced(&root, -1);
    r = scope_ms(ctx, "x", 0, 100);
    ck_assert_uint_eq(r.flags, PA_SCOPE_RATE_SYSTEM);
    ck_assert_double_eq_tol(r.energy_j, 3.5, TOL);
    vm_close(ctx, root);
}
END_TEST

static void write_server_window(const char *root)
{
    /* +1 s: 2 of 4 CPU-seconds busy, web +1.2 s, db +0.6 s, 60 + 40 J */
    pa_test_write(root, "proc/stat",
                  "cpu  100200 0 0 300200 0 0 0 0 0 0\n"
                  "cpu0 25050 0 0 75050 0 0 0 0 0 0\n"
                  "cpu1 25050 0 0 75050 0 0 0 0 0 0\n"
                  "cpu2 25050 0 0 75050 0 0 0 0 0 0\n"
                  "cpu3 25050 0 0 75050 0 0 0 0 0 0\n"
                  "intr 0\nctxt 1000\nbtime 1732200000\nprocesses 500\n");
    const char *fmt = "%d (%s) R 1 %d %d 0 -1 4194560 100 0 0 0 %d 0 0 0 20 "
                      "0 1 0 %d 17530880 1043 18446744073709551615 0 0 0 0 "
                      "0 0 0 4096 0 0 0 0 17 %d 0 0 0 0 0\n";
    pa_test_write(root, "proc/100/stat", fmt, 100, "web", 100, 100, 1320, 40100, 1);
    pa_test_write(root, "proc/200/stat", fmt, 200, "db", 200, 200, 660, 40200, 2);
    pa_test_write(root, "sys/class/powercap/intel-rapl:0/energy_uj", "160000000\n");
    pa_test_write(root, "sys/class/powercap/intel-rapl:1/energy_uj", "240000000\n");
}

/* RAPL: the price is measured, and it is the priced process's own. */
START_TEST(measured_price_per_process)
{
    static const struct {
        pid_t pid;
        double rate;
        unsigned flags;
    } want[] = {{100, 25.0, PA_POWER_MEASURED},
                /* package 1's active 20 W over its CPUs' busy 1 s: db's
                 * 0.6 s of it costs 12 W, 20 J a CPU-second */
                {200, 20.0, PA_POWER_MEASURED},
                {-1, 25.0, PA_POWER_MEASURED | PA_SCOPE_RATE_SYSTEM}};
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        char *root = pa_test_fixture_copy("rapl-server2s");
        pa_ctx *ctx = pa_test_ctx(root);
        ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
        ck_assert_int_eq(pa_module_enable(ctx, "rapl", NULL), 0);
        ck_assert_int_eq(pa_module_enable(ctx, "rapl-share", "idle=separate"), 0);
        ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
        pa_scope_opts o = {.pid = want[k].pid};
        ck_assert_int_eq(pa_scope_configure(ctx, &o), 0);
        ck_assert_int_eq(pa_tick_at(ctx, NS_PER_S), 0);
        write_server_window(root);
        int rc = pa_tick_at(ctx, 2 * NS_PER_S);
        ck_assert_msg(rc == 0, "tick: %s", pa_last_error());
        pa_scope_result r = scope_ms(ctx, "q", 0, 600);
        ck_assert_uint_eq(r.flags, want[k].flags);
        ck_assert_double_eq_tol(r.j_per_cpu_s, want[k].rate, TOL);
        ck_assert_double_eq_tol(r.energy_j, 0.6 * want[k].rate, TOL);
        ck_assert_uint_eq(stats(ctx, "q").flags & PA_POWER_MEASURED, PA_POWER_MEASURED);
        pa_ctx_free(ctx);
        pa_test_rmtree(root);
    }
}
END_TEST

/* A scope that burns a known CPU time gets that time x the price. */
START_TEST(real_cpu_time)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    struct timespec a, b, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    ck_assert_int_eq(pa_scope_begin(ctx, "burn"), 0);
    volatile uint64_t x = 1;
    do {
        for (int i = 0; i < 10000; i++)
            x = x * 6364136223846793005ull + 1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((double)(t.tv_sec - a.tv_sec) + (double)(t.tv_nsec - a.tv_nsec) * 1e-9 < 0.050);
    pa_scope_result r;
    ck_assert_int_eq(pa_scope_end(ctx, "burn", &r), 0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    double outer = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    /* inside the two outer readings, and at least the 50 ms burnt less
     * what begin itself took (well under a millisecond) */
    ck_assert_msg(r.cpu_time_s <= outer && r.cpu_time_s > 0.049, "scope %.6f s, outer %.6f s",
                  r.cpu_time_s, outer);
    ck_assert_double_eq_tol(r.energy_j, r.cpu_time_s * 35.0, TOL);
    vm_close(ctx, root);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Nesting                                                             */
/* ------------------------------------------------------------------ */

/* request 0..1000 ms holds db 100..400 and render 500..600: inclusive
 * and self exact; a new price between render's end and request's end
 * prices request's self time at the new one and keeps its children's. */
START_TEST(nesting_inclusive_exclusive)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    pa_scope_result req, db, render;
    ck_assert_int_eq(pa_scope_begin_at(ctx, "request", 0), 0);
    ck_assert_int_eq(pa_scope_begin_at(ctx, "db", 100 * MS), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "db", 400 * MS, &db), 0);
    ck_assert_int_eq(pa_scope_begin_at(ctx, "render", 500 * MS), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "render", 600 * MS, &render), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "request", 1000 * MS, &req), 0);
    ck_assert_uint_eq(db.depth, 1);
    ck_assert_uint_eq(req.depth, 0);
    ck_assert_double_eq_tol(db.energy_j, 0.3 * 35, TOL);
    ck_assert_double_eq_tol(render.energy_j, 0.1 * 35, TOL);
    ck_assert_double_eq_tol(req.cpu_time_s, 1.0, TOL);
    ck_assert_double_eq_tol(req.self_cpu_time_s, 0.6, TOL);
    ck_assert_double_eq_tol(req.energy_j, 35.0, TOL);
    ck_assert_double_eq_tol(req.self_energy_j, 21.0, TOL);

    /* cpu-tdp at tdp=200 from the next window (3 s to 5 s, java 1 CPU-s):
     * 140 W x 2 s / 4 CPU-s = 70 J per CPU-second */
    ck_assert_int_eq(pa_scope_begin_at(ctx, "request", 0), 0);
    ck_assert_int_eq(pa_scope_begin_at(ctx, "db", 100 * MS), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "db", 400 * MS, &db), 0);
    ck_assert_int_eq(pa_module_configure(ctx, "cpu-tdp", "tdp=200"), 0);
    vm_java_stat(root, 4500 + 90, 401 + 10);
    ck_assert_int_eq(pa_tick_at(ctx, 5 * NS_PER_S), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "request", 1000 * MS, &req), 0);
    ck_assert_double_eq_tol(db.j_per_cpu_s, 35.0, TOL);
    ck_assert_double_eq_tol(req.j_per_cpu_s, 70.0, TOL);
    ck_assert_double_eq_tol(req.self_energy_j, 0.7 * 70, TOL);
    ck_assert_double_eq_tol(req.energy_j, 0.7 * 70 + 0.3 * 35, TOL);

    /* aggregates: two requests, two db calls, one render */
    pa_scope_stats s = stats(ctx, "request");
    ck_assert_uint_eq(s.calls, 2);
    ck_assert_double_eq_tol(s.cpu_time_s, 2.0, TOL);
    ck_assert_double_eq_tol(s.self_cpu_time_s, 0.6 + 0.7, TOL);
    ck_assert_double_eq_tol(s.energy_j, 35.0 + 59.5, TOL);
    ck_assert_double_eq_tol(s.self_energy_j, 21.0 + 49.0, TOL);
    ck_assert_double_eq_tol(s.mean_j, (35.0 + 59.5) / 2, TOL);
    s = stats(ctx, "db");
    ck_assert_uint_eq(s.calls, 2);
    ck_assert_double_eq_tol(s.cpu_time_s, 0.6, TOL);
    ck_assert_double_eq_tol(s.self_cpu_time_s, 0.6, TOL);
    ck_assert_double_eq_tol(s.energy_j, 21.0, TOL);
    pa_scope_stats all[4];
    ck_assert_int_eq(pa_scope_list(ctx, all, 4), 3);
    ck_assert_str_eq(all[0].name, "request"); /* first-use order */
    ck_assert_str_eq(all[1].name, "db");
    ck_assert_str_eq(all[2].name, "render");
    vm_close(ctx, root);
}
END_TEST

/* parse 0..1000 calls parse 200..500: two calls, the inner one flagged;
 * the inclusive sum counts the outer call only (no double count), self
 * sums both; the mean per call is over both calls' inclusive energy. */
START_TEST(recursion_counted_once)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    pa_scope_result in, out;
    ck_assert_int_eq(pa_scope_begin_at(ctx, "parse", 0), 0);
    ck_assert_int_eq(pa_scope_begin_at(ctx, "parse", 200 * MS), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "parse", 500 * MS, &in), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "parse", 1000 * MS, &out), 0);
    ck_assert_uint_eq(in.flags & PA_SCOPE_RECURSIVE, PA_SCOPE_RECURSIVE);
    ck_assert_uint_eq(out.flags & PA_SCOPE_RECURSIVE, 0);
    pa_scope_stats s = stats(ctx, "parse");
    ck_assert_uint_eq(s.calls, 2);
    ck_assert_double_eq_tol(s.cpu_time_s, 1.0, TOL);
    ck_assert_double_eq_tol(s.self_cpu_time_s, 1.0, TOL);
    ck_assert_double_eq_tol(s.energy_j, 35.0, TOL);
    ck_assert_double_eq_tol(s.self_energy_j, 35.0, TOL);
    ck_assert_double_eq_tol(s.mean_j, (35.0 + 0.3 * 35) / 2, TOL);
    vm_close(ctx, root);
}
END_TEST

/* Scopes of two contexts nest on one thread: each context's parent is
 * its own nearest scope; ending in the wrong order is refused. */
START_TEST(two_contexts)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    char *root2 = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *other = pa_test_ctx(root2);
    pa_scope_result a, b;
    ck_assert_int_eq(pa_scope_begin_at(ctx, "a", 0), 0);
    ck_assert_int_eq(pa_scope_begin_at(other, "b", 100 * MS), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "a", 300 * MS, &a), -EPROTO);
    ck_assert_msg(strstr(pa_last_error(), "begun on another context"), "%s", pa_last_error());
    ck_assert_int_eq(pa_scope_end_at(other, "b", 300 * MS, &b), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "a", 400 * MS, &a), 0);
    ck_assert_uint_eq(b.flags & PA_SCOPE_NO_WINDOW, PA_SCOPE_NO_WINDOW);
    ck_assert_uint_eq(b.depth, 1);
    /* b is not a's child: a's self time is all of it */
    ck_assert_double_eq_tol(a.self_cpu_time_s, 0.4, TOL);
    ck_assert_int_eq(pa_scope_list(other, NULL, 0), 1);
    ck_assert_int_eq(pa_scope_get(other, "a", &(pa_scope_stats){0}), -ENOENT);
    pa_ctx_free(other);
    pa_test_rmtree(root2);
    vm_close(ctx, root);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Aggregates                                                          */
/* ------------------------------------------------------------------ */

/* 100 calls of 1..100 ms at 35 J per CPU-second: the mean exact, the
 * quantiles within the histogram's 6.25 %. */
START_TEST(quantiles)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    for (unsigned k = 100; k >= 1; k--) /* order does not matter */
        scope_ms(ctx, "req", 0, k);
    pa_scope_stats s = stats(ctx, "req");
    ck_assert_uint_eq(s.calls, 100);
    ck_assert_double_eq_tol(s.mean_j, 35 * 0.0505, TOL);
    ck_assert_double_eq_tol(s.self_mean_j, 35 * 0.0505, TOL);
    const double p[3] = {s.p50_j, s.p95_j, s.p99_j};
    const double want[3] = {35 * 0.050, 35 * 0.095, 35 * 0.099};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(p[i] >= want[i] * (1 - 0.0625) && p[i] <= want[i] * (1 + 0.0625),
                      "quantile %d: %g, want %g", i, p[i], want[i]);
    ck_assert_double_eq(s.p50_j, s.self_p50_j);
    ck_assert_double_eq(s.p99_j, s.self_p99_j);
    /* 99 more calls of 1 ms: the median falls to 1 ms's bucket */
    for (int k = 0; k < 99; k++)
        scope_ms(ctx, "req", 0, 1);
    s = stats(ctx, "req");
    ck_assert_msg(s.p50_j >= 0.035 * (1 - 0.0625) && s.p50_j <= 0.035 * (1 + 0.0625), "%g",
                  s.p50_j);
    vm_close(ctx, root);
}
END_TEST

/* max_names 3: the 4th name and later go to [other scopes], listed last
 * with a note; max_names is fixed after the first scope. */
START_TEST(cardinality_bound)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    pa_scope_opts o = {.max_names = 3, .pid = 1801};
    ck_assert_int_eq(pa_scope_configure(ctx, &o), 0);
    char name[32];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 10; i++) {
            snprintf(name, sizeof(name), "n%d", i);
            pa_scope_result r = scope_ms(ctx, name, 0, 10);
            ck_assert_uint_eq(!!(r.flags & PA_SCOPE_FOLDED), i >= 3);
        }
    pa_scope_stats all[8];
    ck_assert_int_eq(pa_scope_list(ctx, all, 8), 4);
    ck_assert_str_eq(all[2].name, "n2");
    ck_assert_str_eq(all[3].name, PA_SCOPE_OTHER);
    ck_assert_uint_eq(all[3].calls, 14);
    ck_assert_double_eq_tol(all[3].energy_j, 14 * 0.35, TOL);
    ck_assert_uint_eq(all[3].flags & PA_SCOPE_FOLDED, PA_SCOPE_FOLDED);
    ck_assert_ptr_nonnull(all[3].note);
    ck_assert_ptr_null(all[0].note);
    ck_assert_uint_eq(all[0].calls, 2);
    /* a short array gets the first names and the full count */
    ck_assert_int_eq(pa_scope_list(ctx, all, 2), 4);
    pa_scope_stats s;
    ck_assert_int_eq(pa_scope_get(ctx, "n5", &s), -ENOENT);
    ck_assert_msg(strstr(pa_last_error(), PA_SCOPE_OTHER), "%s", pa_last_error());
    ck_assert_int_eq(pa_scope_get(ctx, PA_SCOPE_OTHER, &s), 0);
    ck_assert_uint_eq(s.calls, 14);
    /* a folded name still must end as itself */
    ck_assert_int_eq(pa_scope_begin_at(ctx, "n7", 0), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "n8", 1, NULL), -EPROTO);
    ck_assert_int_eq(pa_scope_end_at(ctx, "n7", 1, NULL), 0);
    o.max_names = 5;
    ck_assert_int_eq(pa_scope_configure(ctx, &o), -EBUSY);
    o.max_names = 3; /* the same value is fine */
    ck_assert_int_eq(pa_scope_configure(ctx, &o), 0);
    vm_close(ctx, root);
}
END_TEST

#ifndef PA_SANITIZE_BUILD
/* malloc and calloc counted (the sanitizers have their own allocator) */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
static _Atomic long allocs;

void *malloc(size_t n)
{
    allocs++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    allocs++;
    return __libc_calloc(n, size);
}

/* After a name's first use, begin and end allocate nothing: no malloc or
 * calloc in 10,000 pairs with a nested one; a name's first use does. */
START_TEST(no_allocation_after_first_use)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    pa_scope_result r;
    scope_ms(ctx, "hot", 0, 1);
    scope_ms(ctx, "inner", 0, 1);
    long before = allocs;
    for (int i = 0; i < 10000; i++) {
        pa_scope_begin(ctx, "hot");
        pa_scope_begin(ctx, "inner");
        pa_scope_end(ctx, "inner", &r);
        pa_scope_end(ctx, "hot", &r);
    }
    ck_assert_int_eq(allocs - before, 0);
    scope_ms(ctx, "new name", 0, 1);
    ck_assert_int_gt(allocs - before, 0); /* the counter works */
    ck_assert_uint_eq(stats(ctx, "hot").calls, 10001);
    vm_close(ctx, root);
}
END_TEST
#endif

typedef struct worker_arg {
    pa_ctx *ctx;
    int rc;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    for (int i = 0; i < 20000 && !w->rc; i++) {
        w->rc = pa_scope_begin_at(w->ctx, "t", 0);
        if (!w->rc)
            w->rc = pa_scope_begin_at(w->ctx, "inner", MS);
        if (!w->rc)
            w->rc = pa_scope_end_at(w->ctx, "inner", 2 * MS, NULL);
        if (!w->rc)
            w->rc = pa_scope_end_at(w->ctx, "t", 4 * MS, NULL);
    }
    return NULL;
}

/* Runs fn on n threads (n <= 4) and checks that each returned 0. */
static void run_workers(pa_ctx *ctx, void *(*fn)(void *), int n)
{
    pthread_t th[4];
    worker_arg w[4];
    for (int i = 0; i < n; i++) {
        w[i] = (worker_arg){ctx, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, fn, &w[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(w[i].rc == 0, "thread %d: %s", i, pa_strerror(w[i].rc));
    }
}

/* 4 threads end 20,000 scopes each, with an inner one: nothing lost. */
START_TEST(threads_exact_sums)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    run_workers(ctx, worker, 4);
    pa_scope_stats s = stats(ctx, "t");
    ck_assert_uint_eq(s.calls, 80000);
    ck_assert_double_eq_tol(s.cpu_time_s, 80000 * 0.004, 1e-6);
    ck_assert_double_eq_tol(s.self_cpu_time_s, 80000 * 0.003, 1e-6);
    ck_assert_double_eq_tol(s.energy_j, 80000 * 0.004 * 35, 1e-6);
    s = stats(ctx, "inner");
    ck_assert_uint_eq(s.calls, 80000);
    ck_assert_double_eq_tol(s.energy_j, 80000 * 0.001 * 35, 1e-6);
    vm_close(ctx, root);
}
END_TEST

static void *real_worker(void *p)
{
    worker_arg *w = p;
    pa_scope_result r;
    for (int i = 0; i < 5000 && !w->rc; i++) {
        w->rc = pa_scope_begin(w->ctx, "live");
        if (!w->rc)
            w->rc = pa_scope_end(w->ctx, "live", &r);
        if (!w->rc &&
            (r.j_per_cpu_s != 35.0 || r.flags != 0 || r.energy_j != r.cpu_time_s * 35.0)) {
            fprintf(stderr, "price %.17g flags %#x energy %.17g cpu %.17g\n", r.j_per_cpu_s,
                    r.flags, r.energy_j, r.cpu_time_s);
            w->rc = -EDOM;
        }
    }
    return NULL;
}

/* The same with the thread clocks while a sampler ticks every ms: each
 * tick makes the next end read the price again (the fixture does not
 * change, so nothing ran: the price stays 35). */
START_TEST(threads_with_sampler)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    ck_assert_int_eq(pa_start(ctx, 1000000, NULL, NULL), 0);
    run_workers(ctx, real_worker, 3);
    ck_assert_int_eq(pa_stop(ctx), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_uint_gt(r->tick, 3); /* the sampler did tick */
    pa_report_free(r);
    pa_scope_stats s = stats(ctx, "live");
    ck_assert_uint_eq(s.calls, 15000);
    ck_assert_double_eq_tol(s.energy_j, s.cpu_time_s * 35, 1e-9);
    vm_close(ctx, root);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

START_TEST(bad_input)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    pa_scope_result r = {.energy_j = -1};
    ck_assert_int_eq(pa_scope_begin(NULL, "x"), -EINVAL);
    ck_assert_int_eq(pa_scope_begin(ctx, NULL), -EINVAL);
    ck_assert_int_eq(pa_scope_begin(ctx, ""), -EINVAL);
    char long_name[PA_SCOPE_NAME_MAX + 1];
    memset(long_name, 'a', PA_SCOPE_NAME_MAX);
    long_name[PA_SCOPE_NAME_MAX] = '\0';
    ck_assert_int_eq(pa_scope_begin(ctx, long_name), -ENAMETOOLONG);
    long_name[PA_SCOPE_NAME_MAX - 1] = '\0'; /* the longest allowed */
    ck_assert_int_eq(pa_scope_begin(ctx, long_name), 0);
    ck_assert_int_eq(pa_scope_end(ctx, long_name, NULL), 0);

    /* end without begin */
    ck_assert_int_eq(pa_scope_end(ctx, "x", &r), -ENOENT);
    ck_assert_msg(strstr(pa_last_error(), "no scope is open"), "%s", pa_last_error());
    ck_assert_double_eq(r.energy_j, -1); /* untouched */
    ck_assert_int_eq(pa_scope_end(NULL, "x", &r), -EINVAL);

    /* unbalanced: nothing is closed, the right order still works */
    ck_assert_int_eq(pa_scope_begin_at(ctx, "outer", 0), 0);
    ck_assert_int_eq(pa_scope_begin_at(ctx, "inner", 0), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "outer", MS, &r), -EPROTO);
    ck_assert_msg(strstr(pa_last_error(), "innermost open scope on this "
                                          "thread is 'inner'"),
                  "%s", pa_last_error());
    ck_assert_double_eq(r.energy_j, -1);
    ck_assert_int_eq(pa_scope_end_at(ctx, "inner", MS, &r), 0);
    /* a clock before the begin or the children's end */
    ck_assert_int_eq(pa_scope_end_at(ctx, "outer", 0, &r), -EINVAL);
    ck_assert_int_eq(pa_scope_end_at(ctx, NULL, 2 * MS, &r), 0); /* any */
    ck_assert_uint_eq(r.depth, 0);

    /* too deep */
    for (int i = 0; i < PA_SCOPE_MAX_DEPTH; i++)
        ck_assert_int_eq(pa_scope_begin_at(ctx, "deep", 0), 0);
    ck_assert_int_eq(pa_scope_begin_at(ctx, "deep", 0), -E2BIG);
    for (int i = 0; i < PA_SCOPE_MAX_DEPTH; i++)
        ck_assert_int_eq(pa_scope_end_at(ctx, "deep", 0, NULL), 0);
    ck_assert_int_eq(pa_scope_end_at(ctx, "deep", 0, NULL), -ENOENT);

    /* options and reading */
    ck_assert_int_eq(pa_scope_configure(NULL, NULL), -EINVAL);
    ck_assert_int_eq(pa_scope_configure(ctx, &(pa_scope_opts){.pid = -2}), -EINVAL);
    ck_assert_int_eq(pa_scope_configure(ctx, &(pa_scope_opts){.max_names = 70000}), -EINVAL);
    pa_scope_stats s;
    ck_assert_int_eq(pa_scope_get(ctx, "never", &s), -ENOENT);
    ck_assert_int_eq(pa_scope_get(NULL, "x", &s), -EINVAL);
    ck_assert_int_eq(pa_scope_get(ctx, NULL, &s), -EINVAL);
    ck_assert_int_eq(pa_scope_list(NULL, NULL, 0), -EINVAL);
    ck_assert_int_eq(pa_scope_list(ctx, NULL, 1), -EINVAL);
    vm_close(ctx, root);

    /* a context that never had a scope */
    char *root2 = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *fresh = pa_test_ctx(root2);
    ck_assert_int_eq(pa_scope_list(fresh, NULL, 0), 0);
    ck_assert_int_eq(pa_scope_get(fresh, "x", &s), -ENOENT);
    ck_assert_int_eq(pa_scope_end(fresh, "x", NULL), -ENOENT);
    pa_ctx_free(fresh);
    pa_test_rmtree(root2);
}
END_TEST

/* The price's reads of the context (through the getters, when the scopes
 * are configured) do not replace the caller's last error message. */
START_TEST(last_error_kept)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 4242); /* pa_pid_power fails inside */
    ck_assert_int_eq(pa_scope_get(ctx, "none", &(pa_scope_stats){0}), -ENOENT);
    char before[256];
    snprintf(before, sizeof(before), "%s", pa_last_error());
    scope_ms(ctx, "x", 0, 1);
    ck_assert_str_eq(pa_last_error(), before);
    pa_scope_opts o = {.pid = 4243}; /* reads the price: pa_pid_power fails */
    ck_assert_int_eq(pa_scope_configure(ctx, &o), 0);
    ck_assert_str_eq(pa_last_error(), before);
    vm_close(ctx, root);
}
END_TEST

/* A carbon intensity gives the aggregates grams of CO2e (issue 29):
 * 8.75 J at 385 g/kWh are 8.75 x 385 / 3.6e6 g; none without it, and
 * an intensity out of range is refused. */
START_TEST(carbon_aggregates)
{
    char *root;
    pa_ctx *ctx = vm_priced(&root, 1801);
    scope_ms(ctx, "checkout", 1000, 1250);
    pa_scope_stats s = stats(ctx, "checkout");
    ck_assert_double_eq(s.co2e_g, 0);
    ck_assert_double_eq(s.carbon_g_per_kwh, 0);
    pa_scope_opts o = {.pid = 1801, .carbon_g_per_kwh = 385};
    ck_assert_int_eq(pa_scope_configure(ctx, &o), 0);
    s = stats(ctx, "checkout");
    ck_assert_double_eq_tol(s.energy_j, 8.75, TOL);
    ck_assert_double_eq(s.carbon_g_per_kwh, 385);
    ck_assert_double_eq_tol(s.co2e_g, 8.75 * 385 / 3.6e6, 1e-12);
    ck_assert_double_eq_tol(s.self_co2e_g, s.self_energy_j * 385 / 3.6e6, 1e-12);
    ck_assert_double_eq_tol(s.mean_co2e_g, s.mean_j * 385 / 3.6e6, 1e-12);
    o.carbon_g_per_kwh = -1;
    ck_assert_int_eq(pa_scope_configure(ctx, &o), -ERANGE);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "carbon_g_per_kwh"));
    o.carbon_g_per_kwh = 5001;
    ck_assert_int_eq(pa_scope_configure(ctx, &o), -ERANGE);
    vm_close(ctx, root);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("scope");
    TCase *tc = tcase_create("scope");
    tcase_add_test(tc, known_answer_process_price);
    tcase_add_test(tc, system_price_when_not_watched);
    tcase_add_test(tc, price_of_windows_before_first_scope);
    tcase_add_test(tc, measured_price_per_process);
    tcase_add_test(tc, real_cpu_time);
    tcase_add_test(tc, nesting_inclusive_exclusive);
    tcase_add_test(tc, recursion_counted_once);
    tcase_add_test(tc, two_contexts);
    tcase_add_test(tc, quantiles);
    tcase_add_test(tc, cardinality_bound);
#ifndef PA_SANITIZE_BUILD
    tcase_add_test(tc, no_allocation_after_first_use);
#endif
    tcase_add_test(tc, threads_exact_sums);
    tcase_add_test(tc, threads_with_sampler);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, last_error_kept);
    tcase_add_test(tc, carbon_aggregates);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
