/*
 * test_rapl_share.c - the rapl-share formula: exact watts per process and
 * exact conservation (attributed + idle = measured package power), end
 * to end on the 2-socket server fixture (procfs-cpu + rapl + rapl-share,
 * explicit clock), and on hand-built deltas for the cycles path (no PMU
 * here to give real cycles).  The fixture's web (pid 100) last ran on
 * CPU 1 (package 0) and db (pid 200) on CPU 2 (package 1): each package's
 * power goes to the processes that ran on it; without the CPU -> package
 * map, or with a target whose CPU is unknown, the packages are summed.
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-9

/* proc(5) stat of a running process: utime (14), stime (15), starttime
 * (22) as the fixture has them. */
static void write_pid_stat(const char *root, int pid, const char *comm, unsigned long utime,
                           unsigned long stime, int cpu)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
    pa_test_write(root, rel,
                  "%d (%s) R 1 %d %d 0 -1 4194560 100 0 0 0 %lu %lu 0 0 20 0 "
                  "1 0 %d 17530880 1043 18446744073709551615 0 0 0 0 0 0 0 "
                  "4096 0 0 0 0 17 %d 0 0 0 0 0\n",
                  pid, comm, pid, pid, utime, stime, 40000 + pid, cpu);
}

/* /proc/stat of the 4-CPU server with each CPU's own busy (user) and idle
 * ticks. */
static void write_stat4(const char *root, const unsigned long *b, const unsigned long *i)
{
    pa_test_write(root, "proc/stat",
                  "cpu  %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu0 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu1 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu2 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu3 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "intr 0\nctxt 1000\nbtime 1732200000\nprocesses 500\n"
                  "procs_running 1\nprocs_blocked 0\n",
                  b[0] + b[1] + b[2] + b[3], i[0] + i[1] + i[2] + i[3], b[0], i[0], b[1], i[1],
                  b[2], i[2], b[3], i[3]);
}

/* The same spread evenly (cpu0 takes the remainder, the totals are exact). */
static void write_stat(const char *root, unsigned long busy, unsigned long idle)
{
    const unsigned long b[4] = {busy / 4 + busy % 4, busy / 4, busy / 4, busy / 4};
    const unsigned long i[4] = {idle / 4 + idle % 4, idle / 4, idle / 4, idle / 4};
    write_stat4(root, b, i);
}

static void write_uj(const char *root, const char *zone, unsigned long long v)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "sys/class/powercap/%s/energy_uj", zone);
    pa_test_write(root, rel, "%llu\n", v);
}

typedef struct server {
    char *root;
    pa_ctx *ctx;
    /* cumulative fixture values */
    unsigned long busy, idle, u100, u200;
    int cpu100, cpu200; /* the CPU each last ran on (stat field 39) */
    unsigned long long pkg0, pkg1, dram0, dram1;
    uint64_t t_ns;
} server;

/* Opens the server on a copy of the fixture at root (taken over). */
static void server_open_root(server *s, char *root, bool watch_all, const char *share_opts)
{
    memset(s, 0, sizeof(*s));
    s->root = root;
    s->ctx = pa_test_ctx(s->root);
    s->busy = 100000;
    s->idle = 300000;
    s->u100 = 1200; /* utime + stime of the fixture */
    s->u200 = 600;
    s->cpu100 = 1;
    s->cpu200 = 2;
    s->pkg0 = 100000000;
    s->pkg1 = 200000000;
    s->dram0 = 20000000;
    s->dram1 = 30000000;
    if (share_opts) {
        ck_assert_int_eq(pa_module_enable(s->ctx, "procfs-cpu", NULL), 0);
        ck_assert_int_eq(pa_module_enable(s->ctx, "rapl", NULL), 0);
        int rc = pa_module_enable(s->ctx, "rapl-share", share_opts);
        ck_assert_msg(rc == 0, "%s", pa_last_error());
    }
    if (watch_all)
        ck_assert_int_eq(pa_watch_all(s->ctx, 1), 0);
    else
        ck_assert_int_eq(pa_watch_pid(s->ctx, 100, 0), 0);
    s->t_ns = NS_PER_S;
    ck_assert_int_eq(pa_tick_at(s->ctx, s->t_ns), 0);
}

static void server_open(server *s, bool watch_all, const char *share_opts)
{
    server_open_root(s, pa_test_fixture_copy("rapl-server2s"), watch_all, share_opts);
}

/* One window of 1 s: CPU ticks (1/100 s) and joules added. */
static void server_step(server *s, unsigned long busy, unsigned long idle, unsigned long d100,
                        unsigned long d200, double j0, double j1, double dj0, double dj1)
{
    s->busy += busy;
    s->idle += idle;
    s->u100 += d100;
    s->u200 += d200;
    s->pkg0 += (unsigned long long)(j0 * 1e6);
    s->pkg1 += (unsigned long long)(j1 * 1e6);
    s->dram0 += (unsigned long long)(dj0 * 1e6);
    s->dram1 += (unsigned long long)(dj1 * 1e6);
    write_stat(s->root, s->busy, s->idle);
    /* all CPU time as utime; the split does not matter */
    write_pid_stat(s->root, 100, "web", s->u100, 0, s->cpu100);
    write_pid_stat(s->root, 200, "db", s->u200, 0, s->cpu200);
    write_uj(s->root, "intel-rapl:0", s->pkg0);
    write_uj(s->root, "intel-rapl:1", s->pkg1);
    write_uj(s->root, "intel-rapl:0:0", s->dram0);
    write_uj(s->root, "intel-rapl:1:0", s->dram1);
    s->t_ns += NS_PER_S;
    int rc = pa_tick_at(s->ctx, s->t_ns);
    ck_assert_msg(rc == 0, "tick: %s", pa_last_error());
}

static void server_close(server *s)
{
    pa_ctx_free(s->ctx);
    pa_test_rmtree(s->root);
}

static double pid_w(pa_ctx *ctx, pid_t pid)
{
    pa_power p;
    int rc = pa_pid_power(ctx, pid, &p);
    ck_assert_msg(rc == 0, "pid %d: %s", (int)pid, pa_last_error());
    ck_assert(p.flags & PA_POWER_MEASURED);
    return p.cpu_w;
}

/* The process records' cpu watts + the exited and unaccounted records' +
 * idle == system cpu watts; what no process accounts for is never
 * negative. */
static void assert_conservation(pa_ctx *ctx)
{
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    double sum = 0;
    for (size_t i = 0; i < r->ntargets; i++) {
        pa_target_type ty = r->targets[i].type;
        if (ty == PA_TARGET_PROCESS || ty == PA_TARGET_EXITED || ty == PA_TARGET_UNACCOUNTED)
            sum += r->targets[i].power.cpu_w;
        ck_assert(r->targets[i].power.cpu_w >= 0);
    }
    ck_assert_double_eq_tol(sum + r->system.idle_w, r->system.cpu_w, TOL);
    ck_assert_str_eq(r->cpu_source, "rapl");
    pa_report_free(r);
}

/* The cpu watts of the unaccounted record (every process watched). */
static double unaccounted_w(pa_ctx *ctx)
{
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    double w = -1;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_UNACCOUNTED)
            w = r->targets[i].power.cpu_w;
    pa_report_free(r);
    ck_assert_msg(w >= 0, "no unaccounted record");
    return w;
}

/* The report's assumed text contains what. */
static void assert_assumed(pa_ctx *ctx, const char *what)
{
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_msg(strstr(r->assumed, what) != NULL, "'%s' not in '%s'", what, r->assumed);
    pa_report_free(r);
}

/* Window: 2 of 4 CPU-seconds busy, 1 s per package; web 1.2 s on package
 * 0, db 0.6 s on package 1 (0.4 s of package 1's busy time no process
 * accounts for); packages 60 J + 40 J in 1 s = 100 W.  idle=separate, per
 * package: each package's active part (x 2/4 busy) goes to the processes
 * that ran on it by their share of its busy time (never less than theirs):
 * web 60 x 1/2 = 30 W, db 40 x 1/2 x 0.6 = 12 W; 8 W is unaccounted, the
 * rest (50 W) is idle. */
START_TEST(separate_exact_watts)
{
    server s;
    server_open(&s, true, "idle=separate");
    server_step(&s, 200, 200, 120, 60, 60, 40, 8, 7);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 30.0, TOL);
    ck_assert_double_eq_tol(pid_w(s.ctx, 200), 12.0, TOL);
    pa_power sys;
    ck_assert_int_eq(pa_system_power(s.ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.cpu_w, 100.0, TOL);
    ck_assert_double_eq_tol(sys.idle_w, 50.0, TOL);
    ck_assert(sys.flags & PA_POWER_MEASURED);
    ck_assert_double_eq_tol(unaccounted_w(s.ctx), 8.0, TOL);
    assert_conservation(s.ctx);
    assert_assumed(s.ctx, "rapl-share: per package");
    /* energy integrates */
    pa_power p;
    ck_assert_int_eq(pa_pid_power(s.ctx, 100, &p), 0);
    ck_assert_double_eq_tol(p.cpu_j, 30.0, TOL);
    /* DRAM is its own component: 8 J + 7 J in 1 s, never in the package */
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    ck_assert_double_eq_tol(r->dram_w, 15.0, TOL);
    ck_assert_double_eq_tol(r->psys_w, 0.0, TOL);
    pa_report_free(r);
    server_close(&s);
}
END_TEST

/* The packages are not equally busy: CPUs 0-1 (package 0) 70 % of the
 * window, CPUs 2-3 (package 1) 30 %, the system 50 % as above.  Each
 * package's active part follows its own CPUs: web 60 x 0.7 x 1.2 / 1.4 =
 * 36 W (package 0's 0.2 s more, 6 W, no process explains), db 40 x 0.3 =
 * 12 W, idle 100 - 54 = 46 W (the system fraction would give 30 and
 * 20 W). */
START_TEST(separate_per_package_busy)
{
    server s;
    server_open(&s, true, "idle=separate");
    unsigned long b[4], i[4];
    const unsigned long db[4] = {70, 70, 30, 30}, di[4] = {30, 30, 70, 70};
    for (int k = 0; k < 4; k++) {
        b[k] = s.busy / 4 + db[k];
        i[k] = s.idle / 4 + di[k];
    }
    s.busy += 200;
    s.idle += 200;
    s.u100 += 120;
    s.u200 += 60;
    s.pkg0 += 60000000;
    s.pkg1 += 40000000;
    write_stat4(s.root, b, i);
    write_pid_stat(s.root, 100, "web", s.u100, 0, s.cpu100);
    write_pid_stat(s.root, 200, "db", s.u200, 0, s.cpu200);
    write_uj(s.root, "intel-rapl:0", s.pkg0);
    write_uj(s.root, "intel-rapl:1", s.pkg1);
    s.t_ns += NS_PER_S;
    ck_assert_msg(pa_tick_at(s.ctx, s.t_ns) == 0, "%s", pa_last_error());
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 36.0, TOL);
    ck_assert_double_eq_tol(pid_w(s.ctx, 200), 12.0, TOL);
    ck_assert_double_eq_tol(unaccounted_w(s.ctx), 6.0, TOL);
    pa_power sys;
    ck_assert_int_eq(pa_system_power(s.ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.cpu_w, 100.0, TOL);
    ck_assert_double_eq_tol(sys.idle_w, 46.0, TOL);
    assert_conservation(s.ctx);
    assert_assumed(s.ctx, "each package's active part scaled by its CPUs' "
                          "busy fraction");
    server_close(&s);
}
END_TEST

/* XeMPower's rule as is: the whole power of each package by share of its
 * busy time (db's 0.6 s of package 1's 1 s: 24 W, 16 W unaccounted). */
START_TEST(split_exact_watts)
{
    server s;
    server_open(&s, true, "idle=split");
    server_step(&s, 200, 200, 120, 60, 60, 40, 8, 7);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 60.0, TOL);
    ck_assert_double_eq_tol(pid_w(s.ctx, 200), 24.0, TOL);
    pa_power sys;
    ck_assert_int_eq(pa_system_power(s.ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.idle_w, 0.0, TOL);
    ck_assert_double_eq_tol(unaccounted_w(s.ctx), 16.0, TOL);
    assert_conservation(s.ctx);
    server_close(&s);
}
END_TEST

/* Both on package 0: it is split 1.2 : 0.6 (60 x 1/2 = 30 W: 20 + 10);
 * package 1's CPUs were busy half the window with no process on them: its
 * active half (20 W) is unaccounted, its other half idle with package 0's
 * (50 W).  idle=split: 60 W as 40 + 20, package 1's 40 W unaccounted,
 * nothing idle. */
START_TEST(package_without_process_is_idle)
{
    const char *opts[2] = {"idle=separate", "idle=split"};
    const double web[2] = {20, 40}, db[2] = {10, 20}, idle[2] = {50, 0}, un[2] = {20, 40};
    for (int k = 0; k < 2; k++) {
        server s;
        server_open(&s, true, opts[k]);
        s.cpu200 = 0;
        server_step(&s, 200, 200, 120, 60, 60, 40, 8, 7);
        ck_assert_double_eq_tol(pid_w(s.ctx, 100), web[k], TOL);
        ck_assert_double_eq_tol(pid_w(s.ctx, 200), db[k], TOL);
        pa_power sys;
        ck_assert_int_eq(pa_system_power(s.ctx, &sys), 0);
        ck_assert_double_eq_tol(sys.cpu_w, 100.0, TOL);
        ck_assert_double_eq_tol(sys.idle_w, idle[k], TOL);
        ck_assert_double_eq_tol(unaccounted_w(s.ctx), un[k], TOL);
        assert_conservation(s.ctx);
        server_close(&s);
    }
}
END_TEST

/* Without the CPU -> package map (no topology in sysfs) the packages are
 * summed: the active part 100 W x 2/4 = 50 W is split by the share of the
 * busy 2 s (every process watched: the 0.2 s no process accounts for is
 * unaccounted, 5 W), the rest is idle. */
START_TEST(summed_without_topology)
{
    server s;
    char *root = pa_test_fixture_copy("rapl-server2s");
    for (int c = 0; c < 4; c++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/topology", c);
        pa_test_remove(root, rel);
    }
    server_open_root(&s, root, true, "idle=separate");
    server_step(&s, 200, 200, 120, 60, 60, 40, 8, 7);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 50.0 * 1.2 / 2, TOL);
    ck_assert_double_eq_tol(pid_w(s.ctx, 200), 50.0 * 0.6 / 2, TOL);
    ck_assert_double_eq_tol(unaccounted_w(s.ctx), 50.0 * 0.2 / 2, TOL);
    pa_power sys;
    ck_assert_int_eq(pa_system_power(s.ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.idle_w, 50.0, TOL);
    assert_conservation(s.ctx);
    assert_assumed(s.ctx, "rapl-share: packages summed (the CPU -> package "
                          "map is unknown)");
    server_close(&s);
}
END_TEST

/* A target whose last CPU has no known package: summed for that window
 * only (db on CPU 7 of a 4-CPU map), per package again after. */
START_TEST(summed_when_a_cpu_is_unknown)
{
    server s;
    server_open(&s, true, "idle=split");
    s.cpu200 = 7;
    server_step(&s, 200, 200, 120, 60, 60, 40, 8, 7);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 100.0 * 1.2 / 2, TOL);
    ck_assert_double_eq_tol(pid_w(s.ctx, 200), 100.0 * 0.6 / 2, TOL);
    assert_conservation(s.ctx);
    assert_assumed(s.ctx, "packages summed (a target's last CPU or its "
                          "package is unknown)");
    s.cpu200 = 3;
    server_step(&s, 200, 200, 120, 60, 60, 40, 8, 7);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 60.0, TOL);
    ck_assert_double_eq_tol(pid_w(s.ctx, 200), 40.0 * 0.6 / 1, TOL);
    assert_conservation(s.ctx);
    assert_assumed(s.ctx, "rapl-share: per package");
    server_close(&s);
}
END_TEST

/* Only web watched: shares of the busy time (2 s), and the unwatched
 * db's share is not idle; the packages are summed (the other processes'
 * CPUs are not known). */
START_TEST(watch_one_idle_is_inactive_part)
{
    server s;
    server_open(&s, false, "");
    server_step(&s, 200, 200, 120, 60, 60, 40, 8, 7);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 30.0, TOL);
    pa_power sys;
    ck_assert_int_eq(pa_system_power(s.ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.cpu_w, 100.0, TOL);
    ck_assert_double_eq_tol(sys.idle_w, 50.0, TOL);
    assert_assumed(s.ctx, "packages summed (not every process is watched)");
    server_close(&s);
}
END_TEST

/* Conservation every tick over windows of different loads, per package
 * (web on package 0, db on package 1). */
START_TEST(conservation_every_tick)
{
    server s;
    server_open(&s, true, NULL);
    struct {
        unsigned long busy, idle, d100, d200;
        double j0, j1;
        double w100, w200, idle_w;
    } steps[] = {
        /* 4/4 busy, 90 W + 60 W: all active; db ran 1 s of package 1's
         * 2 s, the other half of its 60 W is unaccounted */
        {400, 0, 300, 100, 90, 60, 90, 30, 0},
        /* idle machine: 20 W, nothing busy */
        {0, 400, 0, 0, 12, 8, 0, 0, 20},
        /* 1/4 busy, 25 W + 15 W: a quarter of each is active */
        {100, 300, 50, 50, 25, 15, 6.25, 3.75, 30},
        /* tasks report 1.5 s but stat only 1 s busy: each package's
         * active quarter still goes whole to its one process */
        {100, 300, 100, 50, 50, 30, 12.5, 7.5, 60},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        server_step(&s, steps[i].busy, steps[i].idle, steps[i].d100, steps[i].d200, steps[i].j0,
                    steps[i].j1, 1, 1);
        ck_assert_double_eq_tol(pid_w(s.ctx, 100), steps[i].w100, TOL);
        ck_assert_double_eq_tol(pid_w(s.ctx, 200), steps[i].w200, TOL);
        pa_power sys;
        ck_assert_int_eq(pa_system_power(s.ctx, &sys), 0);
        ck_assert_double_eq_tol(sys.cpu_w, steps[i].j0 + steps[i].j1, TOL);
        ck_assert_double_eq_tol(sys.idle_w, steps[i].idle_w, TOL);
        assert_conservation(s.ctx);
    }
    server_close(&s);
}
END_TEST

/* With nothing enabled, auto takes rapl-share where RAPL reads. */
START_TEST(auto_picks_rapl_share)
{
    server s;
    server_open(&s, true, NULL);
    server_step(&s, 200, 200, 120, 60, 60, 40, 8, 7);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    ck_assert_msg(strstr(r->formula, "rapl-share") != NULL, "%s", r->formula);
    ck_assert_msg(strstr(r->sensors, "rapl") != NULL, "%s", r->sensors);
    ck_assert_str_eq(r->cpu_source, "rapl");
    pa_report_free(r);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 30.0, TOL);
    server_close(&s);
}
END_TEST

/* On the VM fixture rapl-share is unavailable, and says why. */
START_TEST(unavailable_without_rapl)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    pa_module_info info[16];
    int n = pa_module_list(ctx, info, 16);
    ck_assert_int_gt(n, 0);
    bool found = false;
    for (int i = 0; i < n && i < 16; i++)
        if (!strcmp(info[i].name, "rapl-share")) {
            found = true;
            ck_assert_int_eq(info[i].available, 0);
            ck_assert_msg(strstr(info[i].why, "no RAPL in this VM"), "%s", info[i].why);
        }
    ck_assert(found);
    ck_assert_int_eq(pa_module_enable(ctx, "rapl-share", NULL), -ENODEV);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* ---- compute() on hand-built deltas (cycles: no PMU here) ---- */

typedef struct delta_rig {
    pa_module m;
    pa_frame_delta d;
    pa_power_table t;
    pa_task tasks[3];
    pa_task *tp[3];
    double ctr[3][3 * PA_MAX_COUNTERS];
} delta_rig;

static const char *const names[] = {"INSTRUCTIONS_RETIRED", "UNHALTED_CORE_CYCLES"};

static void delta_setup(delta_rig *r, const char *opts)
{
    memset(r, 0, sizeof(*r));
    r->m.ops = &pa__mod_rapl_share;
    pa_options *o = NULL;
    ck_assert_int_eq(pa__options_parse("rapl-share", opts, pa__mod_rapl_share.options, &o), 0);
    ck_assert_int_eq(pa__mod_rapl_share.start(&r->m, o), 0);
    pa__options_free(o);
    pa_frame_delta *d = &r->d;
    d->interval_s = 2;
    d->ncpus = 4;
    d->have = PA_HAVE_RAPL | PA_HAVE_CPU | PA_HAVE_CYCLES;
    d->busy_s = 3;
    d->capacity_s = 8;
    d->nrapl = 4;
    d->rapl[0] = (pa_rapl_delta){0, PA_RAPL_PKG, 100};
    d->rapl[1] = (pa_rapl_delta){0, PA_RAPL_CORE, 70}; /* inside pkg */
    d->rapl[2] = (pa_rapl_delta){1, PA_RAPL_PKG, 60};
    d->rapl[3] = (pa_rapl_delta){0, PA_RAPL_DRAM, 10};
    d->cycles_all = 1e9;
    d->ncounters = 2;
    d->counter_names = names;
    double cyc[3] = {5e8, 2.5e8, 1e8};
    double cpu[3] = {1.0, 1.5, 0.2};
    pa_target_type type[3] = {PA_TARGET_PROCESS, PA_TARGET_PROCESS, PA_TARGET_THREAD};
    for (int i = 0; i < 3; i++) {
        r->tasks[i].type = type[i];
        r->tasks[i].ctr_cur = r->ctr[i];
        r->tasks[i].ctr_prev = r->ctr[i] + PA_MAX_COUNTERS;
        r->tasks[i].ctr_d = r->ctr[i] + 2 * PA_MAX_COUNTERS;
        r->tasks[i].ctr_d[1] = cyc[i];
        r->tasks[i].ctr_d[0] = 7e9; /* instructions: not used */
        r->tasks[i].d_cpu_s = cpu[i];
        r->tp[i] = &r->tasks[i];
    }
    d->ntasks = 3;
    d->tasks = r->tp;
    r->t.tasks = r->tp;
    r->t.ntasks = 3;
    r->t.component = PA_COMP_CPU;
}

/* 160 J in 2 s = 80 W (core not added to package); 3/8 busy: active 30 W
 * split by cycles 50% / 25% / 10% (the thread of the first). */
START_TEST(cycles_shares)
{
    delta_rig r;
    delta_setup(&r, "");
    ck_assert_int_eq(pa__mod_rapl_share.compute(&r.m, &r.d, &r.t), 0);
    ck_assert_double_eq_tol(r.t.cpu_w, 80, TOL);
    ck_assert_double_eq_tol(r.t.dram_w, 5, TOL);
    ck_assert_double_eq_tol(r.tasks[0].cpu_w, 15, TOL);
    ck_assert_double_eq_tol(r.tasks[1].cpu_w, 7.5, TOL);
    ck_assert_double_eq_tol(r.tasks[2].cpu_w, 3, TOL);
    ck_assert_double_eq_tol(r.t.idle_w, 50, TOL);
    ck_assert(r.t.measured);
    pa__mod_rapl_share.stop(&r.m);
}
END_TEST

/* Per package by cycles: process 0 on CPU 0 (package 0), process 1 on
 * CPU 2 (package 1), the thread on CPU 1 (package 0).  Packages 100 J and
 * 60 J in 2 s = 50 W + 30 W, 3/8 busy: active 18.75 W + 11.25 W, each
 * package's to its one process; the thread has 1e8 of package 0's 5e8
 * process cycles: 3.75 W.  idle = 80 - 30 = 50 W. */
START_TEST(cycles_per_package)
{
    delta_rig r;
    delta_setup(&r, "");
    static pa_sysread cur;
    memset(&cur, 0, sizeof(cur));
    cur.ncpu_socket = 4;
    const int16_t map[4] = {0, 0, 1, 1};
    memcpy(cur.cpu_socket, map, sizeof(map));
    r.d.cur = &cur;
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, NULL), 0);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    r.d.ctx = ctx;
    r.tasks[0].last_cpu = 0;
    r.tasks[1].last_cpu = 2;
    r.tasks[2].last_cpu = 1;
    ck_assert_int_eq(pa__mod_rapl_share.compute(&r.m, &r.d, &r.t), 0);
    ck_assert_double_eq_tol(r.t.cpu_w, 80, TOL);
    ck_assert_double_eq_tol(r.tasks[0].cpu_w, 18.75, TOL);
    ck_assert_double_eq_tol(r.tasks[1].cpu_w, 11.25, TOL);
    ck_assert_double_eq_tol(r.tasks[2].cpu_w, 3.75, TOL);
    ck_assert_double_eq_tol(r.t.idle_w, 50, TOL);
    ck_assert_msg(strstr(r.t.assumed, "per package"), "%s", r.t.assumed);
    /* a CPU beyond the map: summed, as cycles_shares */
    r.tasks[2].last_cpu = 9;
    r.t.assumed[0] = '\0';
    ck_assert_int_eq(pa__mod_rapl_share.compute(&r.m, &r.d, &r.t), 0);
    ck_assert_double_eq_tol(r.tasks[0].cpu_w, 30.0 * 5 / 10, TOL);
    ck_assert_msg(strstr(r.t.assumed, "packages summed"), "%s", r.t.assumed);
    pa_ctx_free(ctx);
    pa__mod_rapl_share.stop(&r.m);
}
END_TEST

START_TEST(cycles_split)
{
    delta_rig r;
    delta_setup(&r, "idle=split");
    ck_assert_int_eq(pa__mod_rapl_share.compute(&r.m, &r.d, &r.t), 0);
    ck_assert_double_eq_tol(r.tasks[0].cpu_w, 40, TOL);
    ck_assert_double_eq_tol(r.tasks[1].cpu_w, 20, TOL);
    ck_assert_double_eq_tol(r.tasks[2].cpu_w, 8, TOL);
    /* reconfigure back to separate */
    pa_options *o = NULL;
    ck_assert_int_eq(
        pa__options_parse("rapl-share", "idle=separate", pa__mod_rapl_share.options, &o), 0);
    ck_assert_int_eq(pa__mod_rapl_share.configure(&r.m, o), 0);
    pa__options_free(o);
    ck_assert_int_eq(pa__mod_rapl_share.compute(&r.m, &r.d, &r.t), 0);
    ck_assert_double_eq_tol(r.tasks[0].cpu_w, 15, TOL);
    pa__mod_rapl_share.stop(&r.m);
}
END_TEST

/* No system-wide cycles (not root): CPU time shares of the busy time. */
START_TEST(no_cycle_counter_falls_back_to_cpu_time)
{
    delta_rig r;
    delta_setup(&r, "");
    r.d.have &= ~(unsigned)PA_HAVE_CYCLES;
    ck_assert_int_eq(pa__mod_rapl_share.compute(&r.m, &r.d, &r.t), 0);
    ck_assert_double_eq_tol(r.tasks[0].cpu_w, 30.0 * 1.0 / 3, TOL);
    ck_assert_double_eq_tol(r.tasks[1].cpu_w, 30.0 * 1.5 / 3, TOL);
    ck_assert_double_eq_tol(r.tasks[2].cpu_w, 30.0 * 0.2 / 3, TOL);
    /* a cycles counter under another name is not used either */
    r.d.have |= PA_HAVE_CYCLES;
    static const char *const other[] = {"INSTRUCTIONS_RETIRED", "LLC_MISSES"};
    r.d.counter_names = other;
    ck_assert_int_eq(pa__mod_rapl_share.compute(&r.m, &r.d, &r.t), 0);
    ck_assert_double_eq_tol(r.tasks[1].cpu_w, 15, TOL);
    pa__mod_rapl_share.stop(&r.m);
}
END_TEST

/* Targets counting more cycles than the system (skew): shares capped. */
START_TEST(shares_never_exceed_active)
{
    delta_rig r;
    delta_setup(&r, "idle=split");
    r.d.cycles_all = 5e8; /* < 5e8 + 2.5e8 of the processes */
    ck_assert_int_eq(pa__mod_rapl_share.compute(&r.m, &r.d, &r.t), 0);
    ck_assert_double_eq_tol(r.tasks[0].cpu_w + r.tasks[1].cpu_w, 80, TOL);
    ck_assert_double_eq_tol(r.tasks[0].cpu_w, 80.0 * 2 / 3, TOL);
    pa__mod_rapl_share.stop(&r.m);
}
END_TEST

START_TEST(errors)
{
    delta_rig r;
    delta_setup(&r, "");
    r.d.have &= ~(unsigned)PA_HAVE_RAPL;
    ck_assert_int_eq(pa__mod_rapl_share.compute(&r.m, &r.d, &r.t), -ENODATA);
    ck_assert_msg(strstr(pa_last_error(), "enable the rapl sensor"), "%s", pa_last_error());
    r.d.have |= PA_HAVE_RAPL;
    r.d.nrapl = 1;
    r.d.rapl[0] = (pa_rapl_delta){0, PA_RAPL_PSYS, 10};
    ck_assert_int_eq(pa__mod_rapl_share.compute(&r.m, &r.d, &r.t), -ENODATA);
    pa__mod_rapl_share.stop(&r.m);
    pa_options *o = NULL;
    ck_assert_int_eq(pa__options_parse("rapl-share", "idle=none", pa__mod_rapl_share.options, &o),
                     0);
    ck_assert_int_eq(pa__mod_rapl_share.start(&r.m, o), -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), "'separate' or 'split'"), "%s", pa_last_error());
    pa__options_free(o);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("rapl-share");
    TCase *tc = tcase_create("server");
    tcase_add_test(tc, separate_exact_watts);
    tcase_add_test(tc, split_exact_watts);
    tcase_add_test(tc, separate_per_package_busy);
    tcase_add_test(tc, package_without_process_is_idle);
    tcase_add_test(tc, summed_without_topology);
    tcase_add_test(tc, summed_when_a_cpu_is_unknown);
    tcase_add_test(tc, watch_one_idle_is_inactive_part);
    tcase_add_test(tc, conservation_every_tick);
    tcase_add_test(tc, auto_picks_rapl_share);
    tcase_add_test(tc, unavailable_without_rapl);
    suite_add_tcase(s, tc);
    TCase *td = tcase_create("deltas");
    tcase_add_test(td, cycles_shares);
    tcase_add_test(td, cycles_split);
    tcase_add_test(td, cycles_per_package);
    tcase_add_test(td, no_cycle_counter_falls_back_to_cpu_time);
    tcase_add_test(td, shares_never_exceed_active);
    tcase_add_test(td, errors);
    suite_add_tcase(s, td);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
