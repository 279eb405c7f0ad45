/*
 * test_deps.c - which modules run: a formula brings the sensors it
 * requires (pa_module_ops.requires), disabling it releases them, a sensor
 * a user formula requires cannot be disabled (-EBUSY naming it), and
 * "auto" fills the components no formula covers without bringing back
 * what the user disabled (powerapi.h, pa_module_enable).
 *
 * Every built-in formula is enabled alone on a fixture with an explicit
 * clock and gives the same exact watts as the tests that name its sensors:
 *   cpu-tdp on vm-nocpufreq: tdp=100 at ftdp=2000, vtdp=1: 0.7 x 100 =
 *     70 W; java (pid 1801) uses 1 s of a 2 s window on 2 CPUs: 17.5 W.
 *   rapl-share on rapl-server2s: the packages gain 30 + 20 J in 1 s: the
 *     system draws 50 W, measured; web's 0.5 s of CPU of a window with
 *     0.5 of 4 CPU-seconds busy gets the active part, 50 x 0.5/4 = 6.25 W.
 *   nic-linear on net-server: 0.1218 W of physical interfaces (see
 *     test_nic.c for the arithmetic).
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- fixture helpers ---- */

/* Adds du/ds clock ticks to utime (proc(5) field 14) and stime (15). */
static void add_stat_times(const char *root, pid_t pid, unsigned long du, unsigned long ds)
{
    char rel[64], path[4096];
    snprintf(rel, sizeof(rel), "proc/%d/stat", (int)pid);
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    char *s = pa_test_slurp(path);
    ck_assert_ptr_nonnull(s);
    char *close = strrchr(s, ')');
    ck_assert_ptr_nonnull(close);
    *close = '\0';
    char out[2048];
    size_t off = (size_t)snprintf(out, sizeof(out), "%s)", s);
    char *save = NULL;
    int field = 3;
    for (char *t = strtok_r(close + 1, " \n", &save); t;
         t = strtok_r(NULL, " \n", &save), field++) {
        unsigned long v = strtoul(t, NULL, 10);
        if (field == 14)
            off += (size_t)snprintf(out + off, sizeof(out) - off, " %lu", v + du);
        else if (field == 15)
            off += (size_t)snprintf(out + off, sizeof(out) - off, " %lu", v + ds);
        else
            off += (size_t)snprintf(out + off, sizeof(out) - off, " %s", t);
    }
    pa_test_write(root, rel, "%s\n", out);
    free(s);
}

/* Adds joules to a powercap zone's energy_uj. */
static void add_uj(const char *root, const char *zone, double j)
{
    char rel[128], path[4096];
    snprintf(rel, sizeof(rel), "sys/class/powercap/%s/energy_uj", zone);
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    char *s = pa_test_slurp(path);
    ck_assert_ptr_nonnull(s);
    unsigned long long v = strtoull(s, NULL, 10);
    free(s);
    pa_test_write(root, rel, "%llu\n", v + (unsigned long long)(j * 1e6));
}

static void set_if(const char *root, const char *name, unsigned long long rx, unsigned long long tx)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "sys/class/net/%s/statistics/rx_bytes", name);
    pa_test_write(root, rel, "%llu\n", rx);
    snprintf(rel, sizeof(rel), "sys/class/net/%s/statistics/tx_bytes", name);
    pa_test_write(root, rel, "%llu\n", tx);
}

/* net-server's interfaces at t = 3 s (test_nic.c, tick2_interfaces) */
static void net_tick2(const char *root)
{
    set_if(root, "lo", 81234567ull + 3000000, 81234567ull + 3000000);
    set_if(root, "eth0", 1876543210ull + 3000000, 987654321ull + 2000000);
    set_if(root, "enp5s0f0", 912345678901ull + 20000000, 45678901234ull + 5000000);
    set_if(root, "veth3a1f", 5566778ull + 500000, 6677889ull + 500000);
    set_if(root, "docker0", 4455667ull + 500000, 5566778ull + 500000);
}

/* ---- module list helpers ---- */

static pa_module_info infos[32];

static const pa_module_info *info(pa_ctx *ctx, const char *name)
{
    int n = pa_module_list(ctx, infos, 32);
    ck_assert_int_gt(n, 0);
    for (int i = 0; i < n && i < 32; i++)
        if (!strcmp(infos[i].name, name))
            return &infos[i];
    ck_abort_msg("module %s not listed", name);
    return NULL;
}

static bool enabled(pa_ctx *ctx, const char *name)
{
    return info(ctx, name)->enabled != 0;
}

static pa_report *report(pa_ctx *ctx)
{
    pa_report *r = NULL;
    ck_assert_msg(pa_report_get(ctx, &r) == 0, "%s", pa_last_error());
    return r;
}

static void assert_formula(pa_ctx *ctx, const char *formula, const char *sensors)
{
    pa_report *r = report(ctx);
    ck_assert_str_eq(r->formula, formula);
    ck_assert_str_eq(r->sensors, sensors);
    pa_report_free(r);
}

/* ---- every built-in formula enabled alone ---- */

START_TEST(cpu_tdp_alone)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_msg(pa_module_enable(ctx, "cpu-tdp", "tdp=100,ftdp=2000,vtdp=1.0") == 0, "%s",
                  pa_last_error());
    const pa_module_info *pc = info(ctx, "procfs-cpu");
    ck_assert(pc->enabled);
    ck_assert(!pc->user);
    ck_assert_str_eq(pc->required_by, "cpu-tdp");
    const pa_module_info *f = info(ctx, "cpu-tdp");
    ck_assert(f->user && !f->by_auto);
    ck_assert_ptr_nonnull(f->requires);
    ck_assert_str_eq(f->requires[0], "procfs-cpu");
    ck_assert_ptr_null(f->requires[1]);
    ck_assert_int_eq(pa_watch_pid(ctx, 1801, 0), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    add_stat_times(root, 1801, 90, 10);
    ck_assert_msg(pa_tick_at(ctx, 3 * NS_PER_S) == 0, "%s", pa_last_error());
    pa_power p;
    ck_assert_int_eq(pa_pid_power(ctx, 1801, &p), 0);
    ck_assert_double_eq_tol(p.cpu_time_s, 1.0, 1e-12);
    ck_assert_double_eq_tol(p.cpu_w, 17.5, 1e-9);
    ck_assert_double_eq_tol(p.total_j, 35.0, 1e-9);
    /* no network here: auto has nothing to add */
    assert_formula(ctx, "cpu-tdp", "procfs-cpu");
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(rapl_share_alone)
{
    char *root = pa_test_fixture_copy("rapl-server2s");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_msg(pa_module_enable(ctx, "rapl-share", NULL) == 0, "%s", pa_last_error());
    ck_assert_str_eq(info(ctx, "rapl")->required_by, "rapl-share");
    ck_assert_str_eq(info(ctx, "procfs-cpu")->required_by, "rapl-share");
    const pa_module_info *f = info(ctx, "rapl-share");
    ck_assert_str_eq(f->uses[0], "perf");
    ck_assert(!enabled(ctx, "perf")); /* used when present, never brought */
    ck_assert_int_eq(pa_watch_pid(ctx, 100, 0), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    add_uj(root, "intel-rapl:0", 30);
    add_uj(root, "intel-rapl:1", 20);
    /* web (pid 100, last on CPU 1) runs 0.5 s of the 4 CPU-seconds */
    add_stat_times(root, 100, 50, 0);
    pa_test_write(root, "proc/stat",
                  "cpu  100050 0 0 300350 0 0 0 0 0 0\n"
                  "cpu0 25000 0 0 75100 0 0 0 0 0 0\n"
                  "cpu1 25050 0 0 75050 0 0 0 0 0 0\n"
                  "cpu2 25000 0 0 75100 0 0 0 0 0 0\n"
                  "cpu3 25000 0 0 75100 0 0 0 0 0 0\n"
                  "intr 0\nctxt 1000\nbtime 1732200000\nprocesses 500\n"
                  "procs_running 1\nprocs_blocked 0\n");
    ck_assert_msg(pa_tick_at(ctx, 2 * NS_PER_S) == 0, "%s", pa_last_error());
    pa_power s;
    ck_assert_int_eq(pa_system_power(ctx, &s), 0);
    ck_assert_double_eq_tol(s.cpu_w, 50.0, 1e-6);
    ck_assert(s.flags & PA_POWER_MEASURED);
    /* not every process watched: the packages summed, active part 50 W x
     * 0.5/4 busy, all of it web's (the only CPU time of the window) */
    pa_power p;
    ck_assert_int_eq(pa_pid_power(ctx, 100, &p), 0);
    ck_assert_double_eq_tol(p.cpu_time_s, 0.5, 1e-12);
    ck_assert_double_eq_tol(p.cpu_w, 6.25, 1e-6);
    assert_formula(ctx, "rapl-share", "procfs-cpu+rapl");
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(nic_linear_alone)
{
    char *root = pa_test_fixture_copy("net-server");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_msg(pa_module_enable(ctx, "nic-linear", NULL) == 0, "%s", pa_last_error());
    /* a sensor enabled for a formula takes options like any other */
    char opts[4200];
    snprintf(opts, sizeof(opts), "sockfile=%s/sockets.txt", root);
    ck_assert_int_eq(pa_module_configure(ctx, "nic", opts), 0);
    ck_assert_str_eq(info(ctx, "nic")->required_by, "nic-linear");
    ck_assert(!info(ctx, "nic")->user);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    net_tick2(root);
    ck_assert_msg(pa_tick_at(ctx, 3 * NS_PER_S) == 0, "%s", pa_last_error());
    pa_power s;
    ck_assert_int_eq(pa_system_power(ctx, &s), 0);
    ck_assert_double_eq_tol(s.nic_w, 0.1218, 1e-12);
    /* auto filled the cpu component: procfs-cpu found the processes */
    assert_formula(ctx, "cpu-tdp+nic-linear", "procfs-cpu+nic");
    ck_assert(info(ctx, "cpu-tdp")->by_auto);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* ---- auto around explicit modules ---- */

START_TEST(auto_keeps_nic_when_cpu_tdp_alone)
{
    char *root = pa_test_fixture_copy("net-server");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", "tdp=45"), 0);
    /* auto acts at the tick */
    ck_assert(!enabled(ctx, "nic-linear"));
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    net_tick2(root);
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    assert_formula(ctx, "cpu-tdp+nic-linear", "procfs-cpu+nic");
    const pa_module_info *nl = info(ctx, "nic-linear");
    ck_assert(nl->by_auto && !nl->user);
    ck_assert_str_eq(info(ctx, "nic")->required_by, "nic-linear");
    ck_assert(info(ctx, "cpu-tdp")->user);
    ck_assert_str_eq(info(ctx, "cpu-tdp")->options, "tdp=45");
    pa_power s;
    ck_assert_int_eq(pa_system_power(ctx, &s), 0);
    ck_assert_double_eq_tol(s.nic_w, 0.1218, 1e-12);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(only_a_sensor_keeps_auto_formulas)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    /* a VM: auto's CPU model is cpu-curve (its default per-vCPU curve) */
    assert_formula(ctx, "cpu-curve", "procfs-cpu");
    ck_assert(info(ctx, "cpu-curve")->by_auto);
    /* the sensor is the user's: it stays when auto's formula goes; auto
     * then takes its next choice, never the disabled one */
    ck_assert(info(ctx, "procfs-cpu")->user);
    ck_assert_int_eq(pa_module_disable(ctx, "cpu-curve"), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    assert_formula(ctx, "cpu-tdp", "procfs-cpu");
    ck_assert(info(ctx, "cpu-tdp")->by_auto);
    ck_assert_int_eq(pa_module_disable(ctx, "cpu-tdp"), 0);
    ck_assert(enabled(ctx, "procfs-cpu"));
    ck_assert_int_eq(pa_tick_at(ctx, 4 * NS_PER_S), 0);
    assert_formula(ctx, "", "procfs-cpu");
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(explicit_formula_replaces_auto_choice)
{
    char *root = pa_test_fixture_copy("rapl-server2s");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "auto", NULL), 0);
    ck_assert(info(ctx, "rapl-share")->by_auto);
    ck_assert(enabled(ctx, "rapl"));
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", NULL), 0);
    /* rapl was enabled only for auto's rapl-share; procfs-cpu stays */
    ck_assert(!enabled(ctx, "rapl-share"));
    ck_assert(!enabled(ctx, "rapl"));
    ck_assert_str_eq(info(ctx, "procfs-cpu")->required_by, "cpu-tdp");
    /* a formula the user enabled is not replaced */
    ck_assert_int_eq(pa_module_enable(ctx, "rapl-share", NULL), -EBUSY);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "cpu-tdp"));
    ck_assert(!enabled(ctx, "rapl")); /* nothing left by the failed call */
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* ---- disabling ---- */

START_TEST(disabling_a_formula_releases_its_sensors)
{
    char *root = pa_test_fixture_copy("rapl-server2s");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "rapl-share", NULL), 0);
    ck_assert_str_eq(info(ctx, "procfs-cpu")->required_by, "rapl-share");
    ck_assert_int_eq(pa_module_disable(ctx, "rapl-share"), 0);
    ck_assert(!enabled(ctx, "rapl"));      /* enabled only for it */
    ck_assert(enabled(ctx, "procfs-cpu")); /* the user's own */
    ck_assert_str_eq(info(ctx, "procfs-cpu")->required_by, "");
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(disabling_a_required_sensor_is_busy)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", NULL), 0);
    ck_assert_int_eq(pa_module_disable(ctx, "procfs-cpu"), -EBUSY);
    ck_assert_str_eq(pa_last_error(), "procfs-cpu: cpu-tdp requires it (disable cpu-tdp first)");
    /* also when the user enabled the sensor by name */
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_disable(ctx, "procfs-cpu"), -EBUSY);
    ck_assert(enabled(ctx, "procfs-cpu"));
    ck_assert_int_eq(pa_module_disable(ctx, "cpu-tdp"), 0);
    ck_assert_int_eq(pa_module_disable(ctx, "procfs-cpu"), 0);
    ck_assert(!enabled(ctx, "procfs-cpu"));
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(disabling_a_sensor_auto_needs_drops_auto_formula)
{
    char *root = pa_test_fixture_copy("net-server");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    ck_assert(enabled(ctx, "nic-linear"));
    ck_assert_int_eq(pa_module_disable(ctx, "nic"), 0);
    ck_assert(!enabled(ctx, "nic-linear"));
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    /* auto does not bring it back: it needs the disabled sensor */
    assert_formula(ctx, "cpu-tdp", "procfs-cpu");
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(user_disabled_module_stays_out)
{
    char *root = pa_test_fixture_copy("net-server");
    pa_ctx *ctx = pa_test_ctx(root);
    /* disabling before auto ran is a wish, not an error */
    ck_assert_int_eq(pa_module_disable(ctx, "nic-linear"), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", NULL), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    assert_formula(ctx, "cpu-tdp", "procfs-cpu");
    ck_assert(!enabled(ctx, "nic"));
    /* nor after other changes */
    ck_assert_int_eq(pa_module_disable(ctx, "cpu-tdp"), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), -ENODATA);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "no module is enabled"));
    ck_assert(!enabled(ctx, "nic-linear"));
    ck_assert(!enabled(ctx, "cpu-tdp"));
    /* the latest explicit request wins */
    ck_assert_int_eq(pa_module_enable(ctx, "nic-linear", NULL), 0);
    ck_assert(enabled(ctx, "nic"));
    ck_assert_int_eq(pa_tick_at(ctx, 4 * NS_PER_S), 0);
    assert_formula(ctx, "nic-linear", "nic");
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(explicit_formula_brings_back_a_disabled_sensor)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_disable(ctx, "procfs-cpu"), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", NULL), 0);
    ck_assert_str_eq(info(ctx, "procfs-cpu")->required_by, "cpu-tdp");
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    assert_formula(ctx, "cpu-tdp", "procfs-cpu");
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(auto_off_and_on)
{
    char *root = pa_test_fixture_copy("net-server");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "auto", NULL), 0); /* at once */
    ck_assert(info(ctx, "cpu-tdp")->by_auto);
    ck_assert(info(ctx, "nic-linear")->by_auto);
    ck_assert_int_eq(pa_module_disable(ctx, "auto"), 0);
    ck_assert(!enabled(ctx, "cpu-tdp"));
    ck_assert(!enabled(ctx, "nic-linear"));
    ck_assert(!enabled(ctx, "procfs-cpu"));
    ck_assert(!enabled(ctx, "nic"));
    /* exactly what was asked */
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    assert_formula(ctx, "", "procfs-cpu");
    ck_assert_int_eq(pa_module_enable(ctx, "auto", NULL), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    assert_formula(ctx, "cpu-tdp+nic-linear", "procfs-cpu+nic");
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* ---- user modules declaring their needs ---- */

static int seventy_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *t)
{
    (void)m;
    for (size_t i = 0; i < pa_delta_count(d); i++)
        pa_table_set_target_w(t, i, 70.0 * pa_delta_cpu_s(d, i) / pa_delta_capacity_s(d));
    pa_table_set_system_w(t, 70.0, 0);
    return 0;
}

static const char *const needs_procfs[] = {"procfs-cpu", NULL};
static const char *const needs_missing[] = {"procfs-cpu", "no-such", NULL};
static const char *const needs_formula[] = {"cpu-tdp", NULL};
static const char *const needs_failing[] = {"procfs-cpu", "fails-to-start", NULL};
static const char *const bad_names[] = {"Not A Name", NULL};

static const pa_module_ops seventy = {
    .abi = PA_MODULE_ABI,
    .name = "seventy",
    .kind = PA_FORMULA,
    .component = PA_COMP_CPU,
    .compute = seventy_compute,
    .requires = needs_procfs,
};

static int fail_start(pa_module *m, const pa_options *o)
{
    (void)o;
    (void)m;
    return pa__err(-EIO, "fails-to-start: scripted");
}

static int no_sample(pa_module *m, pa_frame *f)
{
    (void)m;
    (void)f;
    return 0;
}

static const pa_module_ops failing_sensor = {
    .abi = PA_MODULE_ABI,
    .name = "fails-to-start",
    .kind = PA_SENSOR,
    .start = fail_start,
    .sample = no_sample,
};

START_TEST(user_formula_declares_requires)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_register(ctx, &seventy), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "seventy", NULL), 0);
    ck_assert_str_eq(info(ctx, "procfs-cpu")->required_by, "seventy");
    ck_assert_int_eq(pa_watch_pid(ctx, 1801, 0), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    add_stat_times(root, 1801, 90, 10);
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    pa_power p;
    ck_assert_int_eq(pa_pid_power(ctx, 1801, &p), 0);
    ck_assert_double_eq_tol(p.cpu_w, 17.5, 1e-9);
    ck_assert_int_eq(pa_module_disable(ctx, "procfs-cpu"), -EBUSY);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "disable seventy first"));
    ck_assert_int_eq(pa_module_disable(ctx, "seventy"), 0);
    ck_assert(!enabled(ctx, "procfs-cpu"));
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* Two formulas that require the same sensor: it goes with the last. */
START_TEST(two_formulas_share_a_sensor)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    pa_module_ops nic_needs = seventy;
    nic_needs.name = "nic-needs";
    nic_needs.component = PA_COMP_NIC;
    ck_assert_int_eq(pa_module_register(ctx, &nic_needs), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "nic-needs", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", NULL), 0);
    /* listed in module order: formulas by component, cpu first */
    ck_assert_str_eq(info(ctx, "procfs-cpu")->required_by, "cpu-tdp,nic-needs");
    ck_assert_int_eq(pa_module_disable(ctx, "procfs-cpu"), -EBUSY);
    ck_assert_str_eq(pa_last_error(), "procfs-cpu: cpu-tdp and nic-needs "
                                      "require it (disable them first)");
    ck_assert_int_eq(pa_module_disable(ctx, "cpu-tdp"), 0);
    ck_assert(enabled(ctx, "procfs-cpu"));
    ck_assert_str_eq(info(ctx, "procfs-cpu")->required_by, "nic-needs");
    ck_assert_int_eq(pa_module_disable(ctx, "nic-needs"), 0);
    ck_assert(!enabled(ctx, "procfs-cpu"));
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(bad_requires_are_refused)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    pa_module_ops t = seventy;
    /* an unknown sensor: refused at enable (it may be registered later),
     * and procfs-cpu is not left behind */
    t.name = "needs-missing";
    t.requires = needs_missing;
    ck_assert_int_eq(pa_module_register(ctx, &t), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "needs-missing", NULL), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "'no-such'"));
    ck_assert(!enabled(ctx, "procfs-cpu"));
    /* a formula is not a sensor */
    pa_module_ops t2 = seventy;
    t2.name = "needs-formula";
    t2.requires = needs_formula;
    ck_assert_int_eq(pa_module_register(ctx, &t2), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "needs-formula", NULL), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "not a sensor"));
    /* a sensor that fails to start: the whole enable is undone */
    ck_assert_int_eq(pa_module_register(ctx, &failing_sensor), 0);
    pa_module_ops t3 = seventy;
    t3.name = "needs-failing";
    t3.requires = needs_failing;
    ck_assert_int_eq(pa_module_register(ctx, &t3), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "needs-failing", NULL), -EIO);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "needs-failing requires the sensor "
                                                  "fails-to-start, which failed to start"));
    ck_assert(!enabled(ctx, "procfs-cpu"));
    ck_assert(!enabled(ctx, "needs-failing"));
    /* bad tables */
    pa_module_ops t4 = seventy;
    t4.name = "bad-names";
    t4.uses = bad_names;
    ck_assert_int_eq(pa_module_register(ctx, &t4), -EINVAL);
    pa_module_ops t5 = failing_sensor;
    t5.name = "sensor-with-needs";
    t5.requires = needs_procfs;
    ck_assert_int_eq(pa_module_register(ctx, &t5), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "only formulas"));
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(abi1_table_declares_nothing)
{
    /* A table built against abi 1 ends after stop: the library must not
     * read requires/uses from it (here they hold values it would act on
     * if it did). */
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    pa_module_ops old = seventy;
    old.abi = 1;
    old.name = "old-seventy";
    ck_assert_int_eq(pa_module_register(ctx, &old), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "old-seventy", NULL), 0);
    ck_assert(!enabled(ctx, "procfs-cpu"));
    ck_assert_ptr_null(info(ctx, "old-seventy")->requires);
    pa_module_ops future = seventy;
    future.abi = PA_MODULE_ABI + 1;
    future.name = "future";
    ck_assert_int_eq(pa_module_register(ctx, &future), -EINVAL);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("deps");
    TCase *tc = tcase_create("alone");
    tcase_add_test(tc, cpu_tdp_alone);
    tcase_add_test(tc, rapl_share_alone);
    tcase_add_test(tc, nic_linear_alone);
    suite_add_tcase(s, tc);
    tc = tcase_create("auto");
    tcase_add_test(tc, auto_keeps_nic_when_cpu_tdp_alone);
    tcase_add_test(tc, only_a_sensor_keeps_auto_formulas);
    tcase_add_test(tc, explicit_formula_replaces_auto_choice);
    tcase_add_test(tc, auto_off_and_on);
    suite_add_tcase(s, tc);
    tc = tcase_create("disable");
    tcase_add_test(tc, disabling_a_formula_releases_its_sensors);
    tcase_add_test(tc, disabling_a_required_sensor_is_busy);
    tcase_add_test(tc, disabling_a_sensor_auto_needs_drops_auto_formula);
    tcase_add_test(tc, user_disabled_module_stays_out);
    tcase_add_test(tc, explicit_formula_brings_back_a_disabled_sensor);
    suite_add_tcase(s, tc);
    tc = tcase_create("user");
    tcase_add_test(tc, user_formula_declares_requires);
    tcase_add_test(tc, two_formulas_share_a_sensor);
    tcase_add_test(tc, bad_requires_are_refused);
    tcase_add_test(tc, abi1_table_declares_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
