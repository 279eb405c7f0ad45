/*
 * test_procfs_cpu.c - the procfs-cpu sensor on fixture trees (desktop with
 * cpufreq, VM without) and on this machine's real /proc.
 *
 * Fixture tests copy a tree into a mkdtemp() folder, tick with an explicit
 * clock, rewrite files, tick again: every expected value below is computed
 * by hand from the fixture files (USER_HZ = 100: one tick = 10 ms).
 */
#include "internal.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS 10000000ull /* one USER_HZ tick */
#define VTE                                                                                        \
    "/user.slice/user-1000.slice/user@1000.service/app.slice/"                                     \
    "app-org.gnome.Terminal.slice/"                                                                \
    "vte-spawn-5f1c2a9e-4d3b-4c55-a1a6-8f3e2b1c9d70.scope"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* Sets proc(5) field `field` (>= 3) of the stat file root/proc/rel. */
static void stat_set(const char *root, const char *rel, int field, const char *value)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/proc/%s", root, rel);
    char *s = pa_test_slurp(path);
    ck_assert_msg(s != NULL, "cannot read %s", path);
    char *close_paren = strrchr(s, ')');
    ck_assert(close_paren != NULL);
    char out[4096];
    size_t n = (size_t)(close_paren + 1 - s);
    memcpy(out, s, n);
    out[n] = '\0';
    char *save = NULL;
    int f = 3;
    for (char *tok = strtok_r(close_paren + 1, " \n", &save); tok;
         tok = strtok_r(NULL, " \n", &save), f++) {
        size_t l = strlen(out);
        snprintf(out + l, sizeof(out) - l, " %s", f == field ? value : tok);
    }
    ck_assert_msg(f > field, "%s has no field %d", path, field);
    size_t l = strlen(out);
    snprintf(out + l, sizeof(out) - l, "\n");
    char prel[4096];
    snprintf(prel, sizeof(prel), "proc/%s", rel);
    pa_test_write(root, prel, "%s", out);
    free(s);
}

static void stat_set_u(const char *root, const char *rel, int field, unsigned long long v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%llu", v);
    stat_set(root, rel, field, buf);
}

/* utime (14) and stime (15) of root/proc/rel. */
static void stat_times(const char *root, const char *rel, unsigned long long u,
                       unsigned long long s)
{
    stat_set_u(root, rel, 14, u);
    stat_set_u(root, rel, 15, s);
}

static pa_ctx *ctx_on(const char *root)
{
    pa_ctx *ctx = pa_test_ctx(root);
    int rc = pa_module_enable(ctx, "procfs-cpu", NULL);
    ck_assert_msg(rc == 0, "enable procfs-cpu: %s", pa_last_error());
    return ctx;
}

static void tick(pa_ctx *ctx, double t_s)
{
    int rc = pa_tick_at(ctx, (uint64_t)(t_s * 1e9));
    ck_assert_msg(rc == 0, "tick at %.3f s: %s (%s)", t_s, pa_strerror(rc), pa_last_error());
}

/* The system readings of the last tick (engine internals). */
static const pa_sysread *last_sys(const pa_ctx *ctx)
{
    return &ctx->sys[!ctx->sys_cur];
}

/* Finds a process or thread target; live (gone == 0) or exited (1). */
static const pa_target_info *find(const pa_report *r, pa_target_type type, pid_t id, int gone)
{
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *t = &r->targets[i];
        if (t->type != type || (type == PA_TARGET_THREAD ? t->tid : t->pid) != id)
            continue;
        if (!!(t->power.flags & PA_POWER_EXITED) == gone)
            return t;
    }
    return NULL;
}

static size_t count_type(const pa_report *r, pa_target_type type)
{
    size_t n = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        n += r->targets[i].type == type;
    return n;
}

static pa_report *report(pa_ctx *ctx)
{
    pa_report *r = NULL;
    int rc = pa_report_get(ctx, &r);
    ck_assert_msg(rc == 0, "pa_report_get: %s", pa_last_error());
    return r;
}

/* ------------------------------------------------------------------ */
/* System readings                                                     */
/* ------------------------------------------------------------------ */

START_TEST(test_desktop_system)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *ctx = ctx_on(root);
    tick(ctx, 1.0);
    const pa_sysread *s = last_sys(ctx);
    ck_assert(s->have & PA_HAVE_CPU);
    ck_assert(s->have & PA_HAVE_FREQ);
    ck_assert_uint_eq(s->ncpus, 4);
    /* user+nice+system+irq+softirq = 2255394+1580+671825+0+21048 */
    ck_assert_uint_eq(s->busy_ns, 2949847ull * TICK_NS);
    /* idle+iowait = 39112874+30147 */
    ck_assert_uint_eq(s->idle_ns, 39143021ull * TICK_NS);
    ck_assert_uint_eq(s->uptime_ns, 105232170000000ull);
    ck_assert_str_eq(s->cpu_model, "Intel(R) Core(TM) i5-6500 CPU @ 3.20GHz");
    ck_assert(s->nominal_mhz == 0); /* cpufreq present */
    /* 16 P-states, ascending, each summed over the 4 policies */
    ck_assert_uint_eq(s->nfreq, 16);
    ck_assert_uint_eq(s->freq[0].khz, 800000);
    ck_assert_uint_eq(s->freq[0].time_ns, (9932450ull + 9943663 + 9947020 + 9960066) * TICK_NS);
    ck_assert_uint_eq(s->freq[15].khz, 3201000);
    ck_assert_uint_eq(s->freq[15].time_ns, (402311ull + 398112 + 391876 + 385020) * TICK_NS);
    ck_assert_uint_eq(s->freq[1].khz, 900000);
    ck_assert_uint_eq(s->freq[1].time_ns, 0);

    /* 2 s later: each of the 4 CPUs 200 ticks further, 150 of the 800
     * busy (user +100, system +30, softirq +20), 650 idle (+645, iowait
     * +5) */
    pa_test_write(root, "proc/stat",
                  "cpu  2255494 1580 671855 39113519 30152 0 21068 0 0 0\n"
                  "cpu0 571353 398 170066 9770195 7861 0 11920 0 0 0\n"
                  "cpu1 561820 386 167569 9784741 7464 0 3285 0 0 0\n"
                  "cpu2 563151 401 166875 9782909 7430 0 3096 0 0 0\n"
                  "cpu3 559170 395 167345 9775674 7397 0 2767 0 0 0\n"
                  "intr 184613095 9\nctxt 561963327\nbtime 1732085168\n");
    pa_test_write(root, "proc/uptime", "105234.17 391135.24\n");
    pa_test_write(root,
                  "sys/devices/system/cpu/cpufreq/policy0/stats/"
                  "time_in_state",
                  "3201000 402461\n3200000 1203\n3000000 0\n2800000 22018\n"
                  "2600000 0\n2400000 51022\n2200000 0\n2000000 0\n"
                  "1900000 0\n1700000 33190\n1500000 0\n1300000 81023\n"
                  "1100000 0\n1000000 0\n900000 0\n800000 9932500\n");
    tick(ctx, 3.0);
    s = last_sys(ctx);
    ck_assert_uint_eq(s->busy_ns, (2949847ull + 150) * TICK_NS);
    ck_assert_uint_eq(s->idle_ns, (39143021ull + 650) * TICK_NS);
    ck_assert_uint_eq(s->freq[15].time_ns, (402461ull + 398112 + 391876 + 385020) * TICK_NS);
    pa_power sp;
    ck_assert_int_eq(pa_system_power(ctx, &sp), 0);
    ck_assert_double_eq_tol(sp.interval_s, 2.0, 1e-12);
    ck_assert_double_eq_tol(sp.cpu_time_s, 1.5, 1e-12);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(test_vm_system)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = ctx_on(root);
    tick(ctx, 1.0);
    const pa_sysread *s = last_sys(ctx);
    ck_assert(s->have & PA_HAVE_CPU);
    ck_assert(!(s->have & PA_HAVE_FREQ));
    ck_assert_uint_eq(s->nfreq, 0);
    ck_assert_uint_eq(s->ncpus, 2);
    /* steal (1530) is neither busy nor idle */
    ck_assert_uint_eq(s->busy_ns, (10132ull + 12 + 8051 + 0 + 411) * TICK_NS);
    ck_assert_uint_eq(s->idle_ns, (1698321ull + 2203) * TICK_NS);
    ck_assert_uint_eq(s->uptime_ns, 8603300000000ull);
    ck_assert_str_eq(s->cpu_model, "Intel(R) Xeon(R) Processor");
    ck_assert_double_eq(s->nominal_mhz, 2000.0);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* A container on an 8-CPU host limited to 2 CPUs by cpu.max (see the
 * fixture's README): /proc/stat's 8 CPUs are used, and the report says
 * the limit disagrees; without a limit ("max") nothing is said. */
START_TEST(container_cpumax_uses_proc_stat)
{
    char *root = pa_test_fixture_copy("container-cpumax");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", NULL), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, 1801, 0), 0);
    tick(ctx, 1.0);
    ck_assert_uint_eq(last_sys(ctx)->ncpus, 8);
    /* 1 s later: java +150 ticks (1.5 CPU-s, under its 2-CPU limit);
     * each CPU +40 busy, +60 idle ticks */
    stat_times(root, "1801/stat", 4410 + 120, 391 + 30);
    char lines[1024] = "";
    for (int i = 0; i < 8; i++) {
        size_t u = strlen(lines);
        snprintf(lines + u, sizeof(lines) - u, "cpu%d 30030 0 10010 960060 0 0 0 0 0 0\n", i);
    }
    pa_test_write(root, "proc/stat", "cpu  %d 0 %d %d 0 0 0 0 0 0\n%sintr 0\nctxt 0\n", 8 * 30030,
                  8 * 10010, 8 * 960060, lines);
    tick(ctx, 2.0);
    pa_report *r = report(ctx);
    /* default TDP 5 W x 8 CPUs, P = 0.7 x 40 = 28 W; java 1.5 of 8
     * CPU-s: 28 x 1.5 / 8 = 5.25 W (with the limit's 2 CPUs it would
     * be 21 W) */
    const pa_target_info *j = find(r, PA_TARGET_PROCESS, 1801, 0);
    ck_assert_ptr_nonnull(j);
    ck_assert_double_eq_tol(j->power.cpu_time_s, 1.5, 1e-9);
    ck_assert_double_eq_tol(j->power.cpu_w, 5.25, 1e-9);
    ck_assert_double_eq_tol(r->system.cpu_w, 28, 1e-9);
    ck_assert_msg(strstr(r->assumed, "5W x 8 CPUs"), "%s", r->assumed);
    ck_assert_msg(strstr(r->assumed, "cgroup: cpu.max limits these processes "
                                     "to 2.00 CPUs; /proc/stat shows 8"),
                  "%s", r->assumed);
    pa_report_free(r);
    /* the limit lifted at run time: nothing to say */
    pa_test_write(root, "sys/fs/cgroup/cpu.max", "max 100000\n");
    tick(ctx, 3.0);
    r = report(ctx);
    ck_assert_ptr_null(strstr(r->assumed, "cpu.max"));
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* Policies shared by several CPUs count once per affected CPU. */
START_TEST(test_freq_policy_weight)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    const char *cf = "sys/devices/system/cpu/cpufreq";
    char rel[256];
    snprintf(rel, sizeof(rel), "%s/policy0/affected_cpus", cf);
    pa_test_write(root, rel, "0 1\n");
    snprintf(rel, sizeof(rel), "%s/policy2/affected_cpus", cf);
    pa_test_write(root, rel, "2 3\n");
    snprintf(rel, sizeof(rel), "%s/policy1", cf);
    pa_test_remove(root, rel);
    snprintf(rel, sizeof(rel), "%s/policy3", cf);
    pa_test_remove(root, rel);
    pa_ctx *ctx = ctx_on(root);
    tick(ctx, 1.0);
    const pa_sysread *s = last_sys(ctx);
    ck_assert_uint_eq(s->nfreq, 16);
    ck_assert_uint_eq(s->freq[0].time_ns, (9932450ull * 2 + 9947020ull * 2) * TICK_NS);
    ck_assert_uint_eq(s->freq[15].time_ns, (402311ull * 2 + 391876ull * 2) * TICK_NS);
    pa_ctx_free(ctx);

    /* no affected_cpus: related_cpus */
    snprintf(rel, sizeof(rel), "%s/policy2/affected_cpus", cf);
    pa_test_remove(root, rel);
    snprintf(rel, sizeof(rel), "%s/policy2/related_cpus", cf);
    pa_test_write(root, rel, "2 3 4\n");
    ctx = ctx_on(root);
    tick(ctx, 1.0);
    s = last_sys(ctx);
    ck_assert_uint_eq(s->freq[0].time_ns, (9932450ull * 2 + 9947020ull * 3) * TICK_NS);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* Older kernels: cpuN/cpufreq/stats/time_in_state, one per CPU. */
START_TEST(test_freq_per_cpu_layout)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_test_remove(root, "sys/devices/system/cpu/cpufreq");
    for (int c = 0; c < 4; c++) {
        char rel[256];
        snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cpufreq/stats/time_in_state", c);
        pa_test_write(root, rel, "2400000 %d\n1600000 %d\n800000 %d\n", 100 + c, 2000,
                      50000 * (c + 1));
    }
    pa_ctx *ctx = ctx_on(root);
    tick(ctx, 1.0);
    const pa_sysread *s = last_sys(ctx);
    ck_assert(s->have & PA_HAVE_FREQ);
    ck_assert_uint_eq(s->nfreq, 3);
    ck_assert_uint_eq(s->freq[0].khz, 800000);
    ck_assert_uint_eq(s->freq[0].time_ns, 500000ull * TICK_NS);
    ck_assert_uint_eq(s->freq[1].time_ns, 8000ull * TICK_NS);
    ck_assert_uint_eq(s->freq[2].khz, 2400000);
    ck_assert_uint_eq(s->freq[2].time_ns, 406ull * TICK_NS);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* intel_pstate: cpufreq policies without time_in_state; the nominal
 * frequency is the base frequency, not the "cpu MHz" of one CPU. */
START_TEST(test_freq_intel_pstate)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    for (int c = 0; c < 4; c++) {
        char rel[256];
        snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpufreq/policy%d/stats", c);
        pa_test_remove(root, rel);
        snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpufreq/policy%d/base_frequency", c);
        pa_test_write(root, rel, "3200000\n");
        snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpufreq/policy%d/scaling_driver", c);
        pa_test_write(root, rel, "intel_pstate\n");
    }
    pa_ctx *ctx = ctx_on(root);
    tick(ctx, 1.0);
    const pa_sysread *s = last_sys(ctx);
    ck_assert(!(s->have & PA_HAVE_FREQ));
    ck_assert_uint_eq(s->nfreq, 0);
    ck_assert_double_eq(s->nominal_mhz, 3200.0);
    pa_ctx_free(ctx);

    /* no base_frequency either: cpuinfo's first "cpu MHz" */
    for (int c = 0; c < 4; c++) {
        char rel[256];
        snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpufreq/policy%d/base_frequency", c);
        pa_test_remove(root, rel);
    }
    ctx = ctx_on(root);
    tick(ctx, 1.0);
    s = last_sys(ctx);
    ck_assert_double_eq_tol(s->nominal_mhz, 3201.341, 1e-9);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Processes                                                           */
/* ------------------------------------------------------------------ */

START_TEST(test_all_processes)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    tick(ctx, 1.0);
    /* 2 s: "my prog) (x" +150 user +30 system ticks, "a b" +1, firefox
     * +190 and +10 */
    stat_times(root, "3021/stat", 10231 + 150, 412 + 30);
    stat_times(root, "3022/stat", 3 + 1, 1);
    stat_times(root, "3100/stat", 150230 + 190, 30411 + 10);
    tick(ctx, 3.0);

    pa_report *r = report(ctx);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 12);
    const pa_target_info *t = find(r, PA_TARGET_PROCESS, 3021, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "my prog) (x");
    ck_assert_int_eq(t->ppid, 2210);
    ck_assert_str_eq(t->cgroup, VTE);
    ck_assert_double_eq_tol(t->power.cpu_time_s, 1.8, 1e-12);
    ck_assert_double_eq_tol(t->power.interval_s, 2.0, 1e-12);
    t = find(r, PA_TARGET_PROCESS, 3022, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "a b");
    ck_assert_double_eq_tol(t->power.cpu_time_s, 0.01, 1e-12);
    t = find(r, PA_TARGET_PROCESS, 3100, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_double_eq_tol(t->power.cpu_time_s, 2.0, 1e-12);
    ck_assert_str_eq(t->cgroup, "/user.slice/user-1000.slice/user@1000."
                                "service/app.slice/app-gnome-firefox\\x2desr"
                                "-3100.scope");
    t = find(r, PA_TARGET_PROCESS, 1291, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "(sd-pam)");
    ck_assert_double_eq(t->power.cpu_time_s, 0);
    t = find(r, PA_TARGET_PROCESS, 87, 0); /* long kworker name, cut */
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "kworker/u8:3-ev");
    t = find(r, PA_TARGET_PROCESS, 412, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->cgroup, "/system.slice/systemd-journald.service");
    ck_assert_str_eq(t->comm, "systemd-journal");

    pa_power pw;
    ck_assert_int_eq(pa_pid_power(ctx, 3021, &pw), 0);
    ck_assert_double_eq_tol(pw.cpu_time_s, 1.8, 1e-12);

    /* the raw readings, including the reaped children's time */
    pa_task *task = pa__task_find(ctx, PA_TARGET_PROCESS, 2210);
    ck_assert_ptr_nonnull(task);
    ck_assert_uint_eq(task->prev.cpu_ns, (45ull + 19) * TICK_NS);
    ck_assert_uint_eq(task->prev.child_cpu_ns, (20160ull + 1210) * TICK_NS);
    ck_assert_uint_eq(task->start_ticks, 6801);
    ck_assert(task->watched);
    task = pa__task_find(ctx, PA_TARGET_PROCESS, 3021);
    ck_assert_int_eq(task->last_cpu, 1);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* A pid watched alone: only it is read, and a pid is refused if absent. */
START_TEST(test_watch_pid)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_pid(ctx, 1734, 0), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, 4242, 0), -ESRCH);
    tick(ctx, 10.0);
    stat_times(root, "1734/stat", 12 + 7, 6 + 3);
    tick(ctx, 10.5);
    pa_report *r = report(ctx);
    ck_assert_uint_eq(r->ntargets, 1);
    const pa_target_info *t = find(r, PA_TARGET_PROCESS, 1734, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "bash");
    ck_assert_str_eq(t->cgroup, "/user.slice/user-1000.slice/session-3.scope");
    ck_assert_double_eq_tol(t->power.cpu_time_s, 0.1, 1e-12);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(test_threads)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    /* a kernel without schedstat for one thread: its stat is used */
    pa_test_remove(root, "proc/3100/task/3111/schedstat");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_pid(ctx, 3100, PA_WATCH_THREADS), 0);
    tick(ctx, 1.0);
    /* Socket Thread: +0.75 s (schedstat ns); Renderer: +40 ticks (stat);
     * the process: +115 ticks */
    pa_test_write(root, "proc/3100/task/3106/schedstat", "%llu 4143537364 17134\n",
                  153310882476ull + 750000000ull);
    stat_times(root, "3100/task/3111/stat", 22000 + 35, 3000 + 5);
    stat_times(root, "3100/stat", 150230 + 100, 30411 + 15);
    tick(ctx, 2.0);

    pa_report *r = report(ctx);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 1);
    ck_assert_uint_eq(count_type(r, PA_TARGET_THREAD), 4);
    const pa_target_info *t = find(r, PA_TARGET_THREAD, 3106, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "Socket Thread");
    ck_assert_int_eq(t->pid, 3100);
    ck_assert_double_eq_tol(t->power.cpu_time_s, 0.75, 1e-12);
    t = find(r, PA_TARGET_THREAD, 3111, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "Renderer");
    ck_assert_double_eq_tol(t->power.cpu_time_s, 0.4, 1e-12);
    t = find(r, PA_TARGET_THREAD, 3104, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "gmain");
    ck_assert_double_eq(t->power.cpu_time_s, 0);

    pa_power pw;
    ck_assert_int_eq(pa_tid_power(ctx, 3106, &pw), 0);
    ck_assert_double_eq_tol(pw.cpu_time_s, 0.75, 1e-12);
    ck_assert_int_eq(pa_pid_power(ctx, 3100, &pw), 0);
    ck_assert_double_eq_tol(pw.cpu_time_s, 1.15, 1e-12);

    pa_task *th = pa__task_find(ctx, PA_TARGET_THREAD, 3106);
    ck_assert_ptr_nonnull(th);
    ck_assert_ptr_eq(th->proc, pa__task_find(ctx, PA_TARGET_PROCESS, 3100));
    ck_assert_uint_eq(th->start_ticks, 12001 + 3 + 2 * 2);

    /* a thread ends */
    pa_test_remove(root, "proc/3100/task/3104");
    tick(ctx, 3.0);
    pa_report_free(r);
    r = report(ctx);
    ck_assert_ptr_null(find(r, PA_TARGET_THREAD, 3104, 0));
    ck_assert_ptr_nonnull(find(r, PA_TARGET_THREAD, 3104, 1));
    ck_assert_ptr_nonnull(find(r, PA_TARGET_THREAD, 3106, 0));
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* pa_watch_all with PA_WATCH_ALL_THREADS: every thread of every process
 * (15 task entries across the 12 processes of the fixture). */
START_TEST(test_all_threads)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1 | PA_WATCH_ALL_THREADS), 0);
    tick(ctx, 1.0);
    pa_test_write(root, "proc/3100/task/3106/schedstat", "%llu 4143537364 17134\n",
                  153310882476ull + 750000000ull);
    tick(ctx, 2.0);
    pa_report *r = report(ctx);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 12);
    ck_assert_uint_eq(count_type(r, PA_TARGET_THREAD), 15);
    const pa_target_info *t = find(r, PA_TARGET_THREAD, 3106, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_double_eq_tol(t->power.cpu_time_s, 0.75, 1e-12);
    pa_report_free(r);
    /* back to processes only: the threads are dropped, not reported as
     * exited */
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    tick(ctx, 3.0);
    r = report(ctx);
    ck_assert_uint_eq(count_type(r, PA_TARGET_THREAD), 0);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 12);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* PA_WATCH_CHILDREN: the watched pid and every descendant, nothing else,
 * including a child born between two ticks. */
START_TEST(test_children)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_pid(ctx, 2210, PA_WATCH_CHILDREN), 0);
    tick(ctx, 1.0);
    /* 3022 ("a b") starts "make" (pid 3060) 1 s after the first tick
     * (uptime 105232.17 s -> starttime 10523317 ticks) */
    pa_test_write(root, "proc/uptime", "105234.17 391136.74\n");
    pa_test_write(root, "proc/3060/stat",
                  "3060 (make) R 3022 3022 2210 34816 3021 4194304 212 0 0 0 "
                  "61 9 0 0 20 0 1 0 10523317 9437184 812 "
                  "18446744073709551615 94000000000000 94000000100000 "
                  "140720000000000 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 "
                  "94000000200000 94000000210000 94000001000000 "
                  "140720000001000 140720000001020 140720000001020 "
                  "140720000004000 0\n");
    pa_test_write(root, "proc/3060/cgroup", "0::%s\n", VTE);
    stat_times(root, "3021/stat", 10231 + 100, 412);
    tick(ctx, 3.0);
    pa_report *r = report(ctx);
    const pid_t in[] = {2210, 3021, 3022, 3050, 3060};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        ck_assert_msg(find(r, PA_TARGET_PROCESS, in[i], 0) != NULL, "pid %d missing from the tree",
                      (int)in[i]);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 5);
    ck_assert_uint_eq(count_type(r, PA_TARGET_THREAD), 0);
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, 3100, 0));
    const pa_target_info *t = find(r, PA_TARGET_PROCESS, 3060, 0);
    ck_assert_str_eq(t->comm, "make");
    ck_assert_int_eq(t->ppid, 3022);
    /* born in the window: all of its 70 ticks count */
    ck_assert_double_eq_tol(t->power.cpu_time_s, 0.7, 1e-12);
    t = find(r, PA_TARGET_PROCESS, 3021, 0);
    ck_assert_double_eq_tol(t->power.cpu_time_s, 1.0, 1e-12);
    pa_power pw;
    ck_assert_int_eq(pa_tree_power(ctx, 2210, &pw), 0);
    ck_assert_double_eq_tol(pw.cpu_time_s, 1.7, 1e-12);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* PA_WATCH_CHILDREN | PA_WATCH_THREADS: the threads of every process of
 * the tree (a shell script that starts a JVM: the JVM's threads). */
START_TEST(test_children_threads)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_pid(ctx, 1734, PA_WATCH_CHILDREN | PA_WATCH_THREADS), 0);
    tick(ctx, 1.0);
    pa_test_write(root, "proc/1801/task/1803/schedstat", "%llu 67846790 401\n",
                  2510331224ull + 300000000ull);
    tick(ctx, 2.0);
    pa_report *r = report(ctx);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 2);
    ck_assert_uint_eq(count_type(r, PA_TARGET_THREAD), 1 + 6);
    const pa_target_info *t = find(r, PA_TARGET_THREAD, 1803, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "GC Thread#0");
    ck_assert_int_eq(t->pid, 1801);
    ck_assert_double_eq_tol(t->power.cpu_time_s, 0.3, 1e-12);
    t = find(r, PA_TARGET_THREAD, 1806, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "C2 CompilerThre");
    ck_assert_ptr_nonnull(find(r, PA_TARGET_THREAD, 1734, 0));
    ck_assert_ptr_null(find(r, PA_TARGET_THREAD, 1733, 0));
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* A pid that vanishes is reported exited once, then dropped. */
START_TEST(test_vanish)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    tick(ctx, 1.0);
    stat_times(root, "1801/stat", 4410 + 30, 391);
    tick(ctx, 2.0);
    pa_test_remove(root, "proc/1801");
    tick(ctx, 3.0);
    pa_report *r = report(ctx);
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, 1801, 0));
    const pa_target_info *t = find(r, PA_TARGET_PROCESS, 1801, 1);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->comm, "java");
    ck_assert_double_eq(t->power.cpu_time_s, 0);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 10);
    pa_report_free(r);
    tick(ctx, 4.0);
    r = report(ctx);
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, 1801, 0));
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, 1801, 1));
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 9);
    pa_power pw;
    ck_assert_int_eq(pa_pid_power(ctx, 1801, &pw), -ESRCH);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* Same pid, new starttime: the old process exits, a new one begins. */
START_TEST(test_pid_reuse)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    tick(ctx, 1.0);
    pa_test_write(root, "proc/uptime", "105234.17 391136.74\n");
    pa_test_write(root, "proc/3022/stat",
                  "3022 (cc1) R 3060 3060 2210 34816 3021 4194304 5210 0 0 0 "
                  "80 12 0 0 20 0 1 0 10523390 61440000 9120 "
                  "18446744073709551615 94000000000000 94000000100000 "
                  "140720000000000 0 0 0 0 0 0 0 0 0 17 2 0 0 0 0 0 "
                  "94000000200000 94000000210000 94000001000000 "
                  "140720000001000 140720000001020 140720000001020 "
                  "140720000004000 0\n");
    tick(ctx, 3.0);
    pa_report *r = report(ctx);
    const pa_target_info *old = find(r, PA_TARGET_PROCESS, 3022, 1);
    const pa_target_info *cur = find(r, PA_TARGET_PROCESS, 3022, 0);
    ck_assert_ptr_nonnull(old);
    ck_assert_ptr_nonnull(cur);
    ck_assert_str_eq(old->comm, "a b");
    ck_assert_str_eq(cur->comm, "cc1");
    ck_assert_int_eq(cur->ppid, 3060);
    ck_assert(cur->power.flags & PA_POWER_FIRST);
    /* born in the window (starttime 105233.90 s > 105232.17 s) */
    ck_assert_double_eq_tol(cur->power.cpu_time_s, 0.92, 1e-12);
    pa_power pw;
    ck_assert_int_eq(pa_pid_power(ctx, 3022, &pw), 0);
    ck_assert_double_eq_tol(pw.cpu_time_s, 0.92, 1e-12);
    pa_task *t = pa__task_find(ctx, PA_TARGET_PROCESS, 3022);
    ck_assert_uint_eq(t->start_ticks, 10523390);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* A watched pid is a process: when its pid is reused by another, the
 * watched one is reported exited and the newcomer is not followed. */
START_TEST(test_watched_pid_reuse)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_pid(ctx, 3022, 0), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, 2210, PA_WATCH_CHILDREN), 0);
    tick(ctx, 1.0);
    /* 3022 exits, 3022 is reused by a process outside the tree; the
     * tree's root 2210 exits too and its pid goes to another process
     * (3021 and 3050, still in the tree, become children of init) */
    pa_test_write(root, "proc/uptime", "105234.17 391136.74\n");
    stat_set_u(root, "3022/stat", 22, 10523390);
    stat_set_u(root, "3022/stat", 4, 1);
    stat_set_u(root, "2210/stat", 22, 10523391);
    stat_set_u(root, "2210/stat", 4, 1);
    stat_set_u(root, "3021/stat", 4, 1);
    tick(ctx, 2.0);
    pa_report *r = report(ctx);
    ck_assert_ptr_nonnull(find(r, PA_TARGET_PROCESS, 3022, 1));
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, 3022, 0));
    ck_assert_ptr_nonnull(find(r, PA_TARGET_PROCESS, 2210, 1));
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, 2210, 0));
    pa_report_free(r);
    tick(ctx, 3.0);
    r = report(ctx);
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, 3022, 0));
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, 3022, 1));
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, 2210, 0));
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* Broken stat records are rejected whole, never half-parsed. */
static const char *const bad_stats[] = {
    "",
    "\n",
    "4000",
    "4000 (x",
    "4000 (x) S 1 4000 4000 0 -1 4194304 100 0 0 0 50 7\n", /* truncated */
    /* no trailing newline: cut after a field that looks complete */
    "4000 (x) S 1 4000 4000 0 -1 4194304 100 0 0 0 50 7 0 0 20 0 1 0 "
    "10523300 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0",
    /* utime not a number */
    "4000 (x) S 1 4000 4000 0 -1 4194304 100 0 0 0 5x0 7 0 0 20 0 1 0 "
    "10523300 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
    /* negative utime */
    "4000 (x) S 1 4000 4000 0 -1 4194304 100 0 0 0 -50 7 0 0 20 0 1 0 "
    "10523300 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
    /* utime overflows 64 bits */
    "4000 (x) S 1 4000 4000 0 -1 4194304 100 0 0 0 99999999999999999999 7 "
    "0 0 20 0 1 0 10523300 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
    /* another pid's record */
    "4001 (x) S 1 4000 4000 0 -1 4194304 100 0 0 0 50 7 0 0 20 0 1 0 "
    "10523300 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
    /* two-character state */
    "4000 (x) SS 1 4000 4000 0 -1 4194304 100 0 0 0 50 7 0 0 20 0 1 0 "
    "10523300 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
    /* double space shifts every field */
    "4000 (x) S 1  4000 4000 0 -1 4194304 100 0 0 0 50 7 0 0 20 0 1 0 "
    "10523300 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
    /* only 38 fields */
    "4000 (x) S 1 4000 4000 0 -1 4194304 100 0 0 0 50 7 0 0 20 0 1 0 "
    "10523300 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17\n",
    /* no ')' at all */
    "4000 (x S 1 4000 4000 0 -1 4194304 100 0 0 0 50 7 0 0 20 0 1 0 "
    "10523300 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
};

START_TEST(test_malformed_new)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    tick(ctx, 1.0);
    pa_test_write(root, "proc/4000/stat", "%s", bad_stats[_i]);
    tick(ctx, 2.0);
    ck_assert_msg(pa__task_find(ctx, PA_TARGET_PROCESS, 4000) == NULL, "bad record %d was accepted",
                  _i);
    pa_report *r = report(ctx);
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, 4000, 0));
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 12);
    pa_report_free(r);
    /* the same record, well formed: accepted (the test can fail) */
    pa_test_write(root, "proc/4000/stat",
                  "4000 (x) S 1 4000 4000 0 -1 4194304 100 0 0 0 50 7 0 0 20 "
                  "0 1 0 10523300 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17 1 0 0 0 "
                  "0 0\n");
    tick(ctx, 3.0);
    ck_assert_ptr_nonnull(pa__task_find(ctx, PA_TARGET_PROCESS, 4000));
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* A known process whose record breaks is not given made-up values; the
 * others are unaffected. */
START_TEST(test_malformed_known)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    tick(ctx, 1.0);
    /* truncated in the middle of utime, no newline */
    pa_test_write(root, "proc/3022/stat",
                  "3022 (a b) S 2210 3022 2210 34816 3021 4194560 4022 0 0 0 "
                  "1");
    /* garbage in stime */
    stat_set(root, "3021/stat", 15, "4I2");
    pa_test_write(root, "proc/3050/stat", "%s", "");
    stat_times(root, "3100/stat", 150230 + 50, 30411);
    tick(ctx, 2.0);
    pa_report *r = report(ctx);
    const pid_t bad[] = {3021, 3022, 3050};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, bad[i], 0));
        const pa_target_info *t = find(r, PA_TARGET_PROCESS, bad[i], 1);
        if (t)
            ck_assert_double_eq(t->power.cpu_time_s, 0);
    }
    const pa_target_info *t = find(r, PA_TARGET_PROCESS, 3100, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_double_eq_tol(t->power.cpu_time_s, 0.5, 1e-12);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS) -
                          (size_t)(find(r, PA_TARGET_PROCESS, 3021, 1) != NULL) -
                          (size_t)(find(r, PA_TARGET_PROCESS, 3022, 1) != NULL) -
                          (size_t)(find(r, PA_TARGET_PROCESS, 3050, 1) != NULL),
                      9);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* Root reads everything: drop the capabilities that bypass file modes
 * (Check runs each test in its own process). */
static void drop_dac_override(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct d[2];
    ck_assert_int_eq(syscall(SYS_capget, &h, d), 0);
    d[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
    ck_assert_int_eq(syscall(SYS_capset, &h, d), 0);
}

START_TEST(test_unreadable)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    drop_dac_override();
    char path[4096];
    snprintf(path, sizeof(path), "%s/proc/3022/stat", root);
    ck_assert_int_eq(chmod(path, 0), 0);
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    tick(ctx, 1.0);
    tick(ctx, 2.0);
    ck_assert_ptr_null(pa__task_find(ctx, PA_TARGET_PROCESS, 3022));
    pa_report *r = report(ctx);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 11);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* The chain to watts: procfs-cpu + cpu-tdp on the VM (nominal 2000 MHz,
 * no cpufreq).  With ftdp = the nominal frequency, P_cpu = 0.7 x TDP =
 * 70 W; java used 1 s of a 2 s window on 2 CPUs (capacity 4 s): 17.5 W,
 * 35 J. */
START_TEST(test_watts_cpu_tdp)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = ctx_on(root);
    int rc = pa_module_enable(ctx, "cpu-tdp", "tdp=100,ftdp=2000,vtdp=1.0");
    ck_assert_msg(rc == 0, "cpu-tdp: %s", pa_last_error());
    ck_assert_int_eq(pa_watch_pid(ctx, 1801, 0), 0);
    tick(ctx, 1.0);
    stat_times(root, "1801/stat", 4410 + 90, 391 + 10);
    tick(ctx, 3.0);
    pa_power pw;
    ck_assert_int_eq(pa_pid_power(ctx, 1801, &pw), 0);
    ck_assert_double_eq_tol(pw.cpu_time_s, 1.0, 1e-12);
    ck_assert_double_eq_tol(pw.cpu_w, 17.5, 1e-9);
    ck_assert_double_eq_tol(pw.cpu_j, 35.0, 1e-9);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Steady state: no allocation per tick                                */
/* ------------------------------------------------------------------ */

#if !defined(__SANITIZE_ADDRESS__)
/* Counts the allocations of this test program (glibc's allocator behind
 * it).  The sanitizer build has its own allocator: counting is off. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
static volatile long n_allocs;
void *malloc(size_t n);
void *calloc(size_t n, size_t m);
void *realloc(void *p, size_t n);
void *malloc(size_t n)
{
    n_allocs++;
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
    n_allocs++;
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n)
{
    n_allocs++;
    return __libc_realloc(p, n);
}
#define COUNTING 1
#else
static volatile long n_allocs;
#define COUNTING 0
#endif

/* --all, a pid with threads and a tree, ticking over unchanged files:
 * after the first ticks, a tick allocates nothing. */
START_TEST(test_no_alloc_steady)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, 3100, PA_WATCH_THREADS), 0);
    pa_ctx *ctx2 = ctx_on(root);
    ck_assert_int_eq(pa_watch_pid(ctx2, 2210, PA_WATCH_CHILDREN), 0);
    for (int i = 1; i <= 3; i++) {
        tick(ctx, i);
        tick(ctx2, i);
    }
    /* no ck_assert in the loop: Check allocates when it records one */
    int rc = 0;
    long before = n_allocs;
    for (uint64_t i = 4; i <= 8; i++) {
        rc |= pa_tick_at(ctx, i * NS_PER_S);
        rc |= pa_tick_at(ctx2, i * NS_PER_S);
    }
    long during = n_allocs - before;
    ck_assert_int_eq(rc, 0);
    if (COUNTING)
        ck_assert_msg(during == 0, "%ld allocations in 5 steady ticks", during);
    pa_report *r = report(ctx);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 12);
    ck_assert_uint_eq(count_type(r, PA_TARGET_THREAD), 4);
    pa_report_free(r);
    r = report(ctx2);
    ck_assert_uint_eq(count_type(r, PA_TARGET_PROCESS), 5 - 1); /* no 3060 */
    pa_report_free(r);
    pa_ctx_free(ctx2);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

START_TEST(test_missing_root)
{
    pa_ctx_opts o = {.procfs = "/nonexistent/pa-test/proc"};
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, &o), -ENOENT);
    ck_assert_ptr_null(ctx);

    /* a directory that is not a procfs */
    char *root = pa_test_tmpdir();
    pa_test_write(root, "proc/README", "not a procfs\n");
    ctx = pa_test_ctx(root);
    int rc = pa_module_enable(ctx, "procfs-cpu", NULL);
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(pa_last_error(), "/proc/stat") && strstr(pa_last_error(), "--procfs"),
                  "message: %s", pa_last_error());
    pa_module_info mi[16];
    int n = pa_module_list(ctx, mi, 16);
    bool seen = false;
    for (int i = 0; i < n && i < 16; i++)
        if (!strcmp(mi[i].name, "procfs-cpu")) {
            seen = true;
            ck_assert_int_eq(mi[i].available, 0);
            ck_assert_msg(strstr(mi[i].why, "stat"), "why: %s", mi[i].why);
        }
    ck_assert(seen);
    pa_ctx_free(ctx);

    /* a malformed stat */
    pa_test_write(root, "proc/stat", "intr 1 2 3\nctxt 5\n");
    ctx = pa_test_ctx(root);
    rc = pa_module_enable(ctx, "procfs-cpu", NULL);
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(pa_last_error(), "malformed"), "message: %s", pa_last_error());
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* /proc/stat breaking while running fails the sensor with a message. */
START_TEST(test_stat_breaks)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = ctx_on(root);
    ck_assert_int_eq(pa_watch_pid(ctx, 1, 0), 0);
    tick(ctx, 1.0);
    pa_test_write(root, "proc/stat", "cpu  1 2 3\n");
    int rc = pa_tick_at(ctx, 2000000000ull);
    ck_assert_int_eq(rc, -ENODATA);
    pa_module_info mi[16];
    int n = pa_module_list(ctx, mi, 16);
    bool seen = false;
    for (int i = 0; i < n && i < 16; i++)
        if (!strcmp(mi[i].name, "procfs-cpu")) {
            seen = true;
            ck_assert_int_eq(mi[i].failing, 1);
            ck_assert_msg(strstr(mi[i].why, "/proc/stat is malformed"), "why: %s", mi[i].why);
        }
    ck_assert(seen);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Live, on this machine's /proc                                       */
/* ------------------------------------------------------------------ */

static double cpu_clock_s(clockid_t c)
{
    struct timespec ts;
    ck_assert_int_eq(clock_gettime(c, &ts), 0);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void spin_forever(void)
{
    volatile unsigned long x = 0;
    for (;;)
        x++;
}

/* A busy child's CPU time over a 0.5 s window matches the kernel's own
 * clock of that child, and a killed child is reported exited.  Each tick
 * is bracketed by two reads of the child's CPU clock, so the window lies
 * between the inner and the outer difference, give or take the 10 ms
 * resolution of stat at each end. */
START_TEST(test_live_busy_child)
{
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0)
        spin_forever();
    clockid_t cc;
    ck_assert_int_eq(clock_getcpuclockid(child, &cc), 0);
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, child, 0), 0);
    double a0 = cpu_clock_s(cc);
    ck_assert_int_eq(pa_tick(ctx), 0);
    double b0 = cpu_clock_s(cc);
    usleep(500000);
    double a1 = cpu_clock_s(cc);
    ck_assert_int_eq(pa_tick(ctx), 0);
    double b1 = cpu_clock_s(cc);
    pa_power pw;
    ck_assert_int_eq(pa_pid_power(ctx, child, &pw), 0);
    ck_assert_msg(pw.interval_s > 0.45 && pw.interval_s < 1.5, "interval %f", pw.interval_s);
    ck_assert_msg(pw.cpu_time_s >= a1 - b0 - 0.02 && pw.cpu_time_s <= b1 - a0 + 0.02,
                  "procfs-cpu says %.3f s, the kernel's clock %.3f to %.3f s", pw.cpu_time_s,
                  a1 - b0, b1 - a0);
    /* about 0.5 s on an idle machine; less when the cores are shared */
    if (a1 - b0 > 0.05)
        ck_assert_msg(pw.cpu_time_s > 0.02, "a spinning child used %.3f s", pw.cpu_time_s);

    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_report *r = report(ctx);
    ck_assert_ptr_nonnull(find(r, PA_TARGET_PROCESS, child, 1));
    ck_assert_ptr_null(find(r, PA_TARGET_PROCESS, child, 0));
    pa_report_free(r);
    pa_ctx_free(ctx);
}
END_TEST

static void *spin_thread(void *arg)
{
    (void)arg;
    spin_forever();
    return NULL;
}

/* Two spinning threads: per-thread schedstat sums to the process's stat,
 * and the process's figure is both threads (not the main thread only). */
START_TEST(test_live_threads)
{
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        pthread_t th;
        pthread_create(&th, NULL, spin_thread, NULL);
        char c = 1;
        if (write(pfd[1], &c, 1) != 1)
            _exit(1);
        spin_forever();
    }
    char c;
    ck_assert_int_eq(read(pfd[0], &c, 1), 1);
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, child, PA_WATCH_THREADS), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    usleep(500000);
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_report *r = report(ctx);
    ck_assert_uint_eq(count_type(r, PA_TARGET_THREAD), 2);
    double sum = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_THREAD)
            sum += r->targets[i].power.cpu_time_s;
    const pa_target_info *p = find(r, PA_TARGET_PROCESS, child, 0);
    ck_assert_ptr_nonnull(p);
    /* stat ticks (10 ms) against schedstat ns, read one after the other
     * while both threads spin (apart by more when this machine is busy) */
    ck_assert_msg(fabs(p->power.cpu_time_s - sum) <= 0.05 + 0.1 * sum,
                  "process %.3f s, threads %.3f s", p->power.cpu_time_s, sum);
    const pa_target_info *main_t = find(r, PA_TARGET_THREAD, child, 0);
    ck_assert_ptr_nonnull(main_t);
    ck_assert(p->power.cpu_time_s >= main_t->power.cpu_time_s);
    pa_report_free(r);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    pa_ctx_free(ctx);
}
END_TEST

/* --all on the real /proc: this process is in the report with its comm. */
START_TEST(test_live_all)
{
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    usleep(50000);
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_report *r = report(ctx);
    ck_assert_uint_gt(count_type(r, PA_TARGET_PROCESS), 2);
    const pa_target_info *me = find(r, PA_TARGET_PROCESS, getpid(), 0);
    ck_assert_ptr_nonnull(me);
    ck_assert_str_eq(me->comm, "test_procfs_cpu");
    ck_assert_ptr_nonnull(find(r, PA_TARGET_PROCESS, 1, 0));
    pa_report_free(r);
    pa_ctx_free(ctx);
}
END_TEST

static int count_dir(const char *path, bool numeric_only)
{
    DIR *d = opendir(path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && (!numeric_only || (e->d_name[0] >= '0' && e->d_name[0] <= '9')))
            n++;
    if (d)
        closedir(d);
    return n;
}

/* A small RLIMIT_NOFILE: the sensor keeps at most half of it open and
 * reads the other processes with open/read/close. */
START_TEST(test_live_fd_budget)
{
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = 64;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    int fds0 = count_dir("/proc/self/fd", false);
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, NULL), 0);
    /* procfs-cpu's own fds: no formula or nic sensor from auto */
    ck_assert_int_eq(pa_module_disable(ctx, "auto"), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    int fds1 = count_dir("/proc/self/fd", false);
    int nprocs = count_dir("/proc", true);
    /* 32 task fds, plus the procfs root, stat and uptime, and the
     * taskstats socket of the exit records (as root) */
    ck_assert_msg(fds1 - fds0 <= 32 + 3 + 1, "%d fds opened", fds1 - fds0);
    /* and it did keep fds, up to its budget */
    int kept = nprocs < 32 ? nprocs : 32;
    ck_assert_msg(fds1 - fds0 >= kept / 2, "%d fds kept for %d processes", fds1 - fds0, nprocs);
    pa_report *r = report(ctx);
    size_t n = count_type(r, PA_TARGET_PROCESS);
    ck_assert_msg(n + 10 >= (size_t)nprocs && n <= (size_t)nprocs + 10,
                  "%zu processes reported, %d in /proc", n, nprocs);
    pa_report_free(r);
    pa_ctx_free(ctx);
    ck_assert_int_eq(count_dir("/proc/self/fd", false), fds0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("procfs-cpu");
    TCase *tc = tcase_create("fixtures");
    tcase_add_test(tc, test_desktop_system);
    tcase_add_test(tc, test_vm_system);
    tcase_add_test(tc, container_cpumax_uses_proc_stat);
    tcase_add_test(tc, test_freq_policy_weight);
    tcase_add_test(tc, test_freq_per_cpu_layout);
    tcase_add_test(tc, test_freq_intel_pstate);
    tcase_add_test(tc, test_all_processes);
    tcase_add_test(tc, test_watch_pid);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_all_threads);
    tcase_add_test(tc, test_children);
    tcase_add_test(tc, test_children_threads);
    tcase_add_test(tc, test_vanish);
    tcase_add_test(tc, test_pid_reuse);
    tcase_add_test(tc, test_watched_pid_reuse);
    tcase_add_loop_test(tc, test_malformed_new, 0, (int)(sizeof(bad_stats) / sizeof(bad_stats[0])));
    tcase_add_test(tc, test_malformed_known);
    tcase_add_test(tc, test_unreadable);
    tcase_add_test(tc, test_watts_cpu_tdp);
    tcase_add_test(tc, test_no_alloc_steady);
    tcase_add_test(tc, test_missing_root);
    tcase_add_test(tc, test_stat_breaks);
    suite_add_tcase(s, tc);
    TCase *live = tcase_create("live");
    tcase_add_test(live, test_live_busy_child);
    tcase_add_test(live, test_live_threads);
    tcase_add_test(live, test_live_all);
    tcase_add_test(live, test_live_fd_budget);
    suite_add_tcase(s, live);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
