/* test_cpu_tdp.c - the cpu-tdp formula (DESIGN.md section 6.1), driven by
 * hand-built deltas, with expected watts worked out from the equation:
 *
 *   P_cpu(f) = 0.7 . TDP . (f . V_f^2) / (f_tdp . V_tdp^2)
 *   P_cpu    = sum_f P_cpu(f) . t_f / sum_f t_f
 *   P_task   = P_cpu . d_cpu / capacity   (share=capacity)
 *            = P_cpu . d_cpu / busy       (share=active)
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-9

static pa_ctx ctx; /* only env.hwdb is used by the formula */
static pa_module mod;
static pa_sysread cur, prev;
static pa_frame_delta d;
static pa_power_table tab;
static pa_task tasks[3];
static pa_task *tp[3];

static int start_with(const char *options, const char *hwdb)
{
    memset(&ctx, 0, sizeof(ctx));
    memset(&mod, 0, sizeof(mod));
    ctx.env.hwdb = hwdb;
    mod.ops = &pa__mod_cpu_tdp;
    mod.ctx = &ctx;
    pa_options *o = NULL;
    int rc = pa__options_parse("cpu-tdp", options, pa__mod_cpu_tdp.options, &o);
    if (rc < 0)
        return rc;
    rc = pa__mod_cpu_tdp.start(&mod, o);
    pa__options_free(o);
    return rc;
}

static int configure_with(const char *options)
{
    pa_options *o = NULL;
    int rc = pa__options_parse("cpu-tdp", options, pa__mod_cpu_tdp.options, &o);
    if (rc < 0)
        return rc;
    rc = pa__mod_cpu_tdp.configure(&mod, o);
    pa__options_free(o);
    return rc;
}

/* A window of interval_s on ncpus CPUs, busy_s busy, tasks with the given
 * CPU seconds (ntasks <= 3), no cpufreq (add_freq adds some). */
static void window(const char *model, unsigned ncpus, double interval_s, double busy_s,
                   size_t ntasks, const double *cpu_s)
{
    memset(&cur, 0, sizeof(cur));
    memset(&prev, 0, sizeof(prev));
    memset(&d, 0, sizeof(d));
    memset(&tab, 0, sizeof(tab));
    memset(tasks, 0, sizeof(tasks));
    snprintf(cur.cpu_model, sizeof(cur.cpu_model), "%s", model);
    cur.ncpus = ncpus;
    cur.have = PA_HAVE_CPU;
    d.ctx = &ctx;
    d.cur = &cur;
    d.prev = &prev;
    d.have = PA_HAVE_CPU;
    d.interval_s = interval_s;
    d.ncpus = ncpus;
    d.capacity_s = interval_s * ncpus;
    d.busy_s = busy_s;
    d.idle_s = d.capacity_s - busy_s;
    for (size_t i = 0; i < ntasks; i++) {
        tasks[i].type = PA_TARGET_PROCESS;
        tasks[i].pid = (pid_t)(100 + i);
        tasks[i].in_window = true;
        tasks[i].d_cpu_s = cpu_s[i];
        tasks[i].cpu_w = -1; /* must be overwritten */
        tp[i] = &tasks[i];
    }
    d.ntasks = tab.ntasks = ntasks;
    d.tasks = tab.tasks = tp;
    tab.component = PA_COMP_CPU;
}

static void add_freq(unsigned mhz, double seconds)
{
    d.have |= PA_HAVE_FREQ;
    d.freq[d.nfreq].khz = mhz * 1000;
    d.freq[d.nfreq].time_ns = (uint64_t)(seconds * 1e9 + 0.5);
    d.nfreq++;
}

static void compute_ok(void)
{
    int rc = pa__mod_cpu_tdp.compute(&mod, &d, &tab);
    ck_assert_msg(rc == 0, "compute: %s", pa_last_error());
}

static void assumed_has(const char *text)
{
    ck_assert_msg(strstr(tab.assumed, text) != NULL, "assumed '%s' lacks '%s'", tab.assumed, text);
}

static void teardown(void)
{
    if (mod.priv)
        pa__mod_cpu_tdp.stop(&mod);
    ck_assert_ptr_null(mod.priv);
}

/* Pentium M 1.6 GHz (hwdb: TDP 24.5 W, f_tdp 1600 MHz, Intel's table
 * 600:0.956 800:1.036 1000:1.164 1200:1.276 1400:1.420 1600:1.484).
 * One CPU, a 1 s window, busy 0.8 s; time_in_state: 600 MHz 0.5 s,
 * 1100 MHz 0.25 s (not in the table: interpolated), 1600 MHz 0.25 s. */
static double pentium_m_window(void)
{
    const double cpu_s[] = {0.5, 0.25};
    window("Intel(R) Pentium(R) M processor 1600MHz", 1, 1.0, 0.8, 2, cpu_s);
    add_freq(600, 0.5);
    add_freq(1100, 0.25);
    add_freq(1600, 0.25);
    double k = 0.7 * 24.5;        /* 17.15 W at the TDP point */
    double vtdp2 = 1.484 * 1.484; /* V_tdp^2 */
    double v1100 = 1.164 + (1.276 - 1.164) * (1100 - 1000) / (1200 - 1000);
    /* v1100 = 1.22 V */
    double p600 = k * 600 * 0.956 * 0.956 / (1600 * vtdp2);   /* 2.66897 */
    double p1100 = k * 1100 * v1100 * v1100 / (1600 * vtdp2); /* 7.96872 */
    double p1600 = k;                                         /* 17.15 */
    return (p600 * 0.5 + p1100 * 0.25 + p1600 * 0.25) / 1.0;  /* 7.61416 */
}

START_TEST(test_cpufreq_voltage_table_capacity)
{
    ck_assert_int_eq(start_with(NULL, PA_TEST_HWDB), 0);
    double p = pentium_m_window();
    ck_assert_double_eq_tol(p, 7.614164571466714, 1e-9);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, p, TOL);
    /* capacity = 1 s x 1 CPU: U = 0.5 and 0.25 */
    ck_assert_double_eq_tol(tasks[0].cpu_w, p * 0.5, TOL);  /* 3.80708 W */
    ck_assert_double_eq_tol(tasks[1].cpu_w, p * 0.25, TOL); /* 1.90354 W */
    /* idle: the 0.2 s no task used */
    ck_assert_double_eq_tol(tab.idle_w, p * (1 - 0.8), TOL); /* 1.52283 W */
    ck_assert(!tab.measured);
    assumed_has("tdp=24.5W (hwdb \"Pentium(R) M processor 1600MHz\")");
    assumed_has("V interpolated linearly for 1 frequencies");
    teardown();
}
END_TEST

START_TEST(test_share_active)
{
    ck_assert_int_eq(start_with("share=active", PA_TEST_HWDB), 0);
    double p = pentium_m_window();
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, p, TOL);
    /* busy 0.8 s: U = 0.5/0.8 and 0.25/0.8 */
    ck_assert_double_eq_tol(tasks[0].cpu_w, p * 0.5 / 0.8, TOL);  /* 4.75885 */
    ck_assert_double_eq_tol(tasks[1].cpu_w, p * 0.25 / 0.8, TOL); /* 2.37943 */
    ck_assert_double_eq_tol(tab.idle_w, 0, TOL);
    teardown();
}
END_TEST

START_TEST(test_clamped_above_table)
{
    /* 2000 MHz (turbo-like, above the table): V of the table's top end,
     * 1.484 V = V_tdp, so P = 17.15 x 2000/1600 = 21.4375 W */
    ck_assert_int_eq(start_with(NULL, PA_TEST_HWDB), 0);
    const double cpu_s[] = {1.0};
    window("Intel(R) Pentium(R) M processor 1600MHz", 1, 1.0, 1.0, 1, cpu_s);
    add_freq(2000, 1.0);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 21.4375, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 21.4375, TOL);
    ck_assert_double_eq_tol(tab.idle_w, 0, TOL);
    assumed_has("V of the nearest table end for 1 frequencies");
    teardown();
}
END_TEST

START_TEST(test_q6600_cpufreq_no_table)
{
    /* Q6600 (hwdb: 105 W, 2400 MHz, 4 threads, no voltage table): V is
     * constant, P(f) = 0.7 x 105 x f/2400: P(1600) = 49 W, P(2400) =
     * 73.5 W.  4 CPUs x 1 s: 3 CPU-seconds at 1600, 1 at 2400:
     * P = (49 x 3 + 73.5 x 1) / 4 = 55.125 W */
    ck_assert_int_eq(start_with(NULL, PA_TEST_HWDB), 0);
    const double cpu_s[] = {1.0, 0.5};
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 2.0, 2, cpu_s);
    add_freq(1600, 3.0);
    add_freq(2400, 1.0);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 55.125, TOL);
    /* capacity 4 CPU-seconds: 1.0/4 and 0.5/4 */
    ck_assert_double_eq_tol(tasks[0].cpu_w, 55.125 * 0.25, TOL);  /* 13.78 */
    ck_assert_double_eq_tol(tasks[1].cpu_w, 55.125 * 0.125, TOL); /* 6.89 */
    ck_assert_double_eq_tol(tab.idle_w, 55.125 * (1 - 2.0 / 4), TOL);
    assumed_has("tdp=105W (hwdb \"Q6600\")");
    assumed_has("ftdp=2400MHz (hwdb \"Q6600\")");
    assumed_has("V constant (no voltage table)");
    teardown();
}
END_TEST

START_TEST(test_no_cpufreq_known_cpu)
{
    /* E5-1410 (80 W, 2800 MHz, 8 threads), no cpufreq: f = f_tdp, so
     * P = 0.7 x 80 = 56 W; 8 CPUs x 0.5 s = capacity 4 s */
    ck_assert_int_eq(start_with(NULL, PA_TEST_HWDB), 0);
    const double cpu_s[] = {1.0};
    window("Intel(R) Xeon(R) CPU E5-1410 0 @ 2.80GHz", 8, 0.5, 3.0, 1, cpu_s);
    cur.nominal_mhz = 2800;
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 56, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 56 * 1.0 / 4.0, TOL);   /* 14 W */
    ck_assert_double_eq_tol(tab.idle_w, 56 * (1 - 3.0 / 4.0), TOL); /* 14 W */
    assumed_has("f=2800MHz (no cpufreq: nominal)");
    teardown();
}
END_TEST

START_TEST(test_unknown_vm_default)
{
    /* This VM: generic model name, 2 vCPUs, no cpufreq, cpuinfo 2000 MHz.
     * Default TDP 5 W x 2 = 10 W; P = 0.7 x 10 = 7 W.  A task with 0.5 s
     * of a 2 CPU-second window: 7 x 0.25 = 1.75 W; busy 0.6 s: idle =
     * 7 x (1 - 0.3) = 4.9 W */
    ck_assert_int_eq(start_with(NULL, PA_TEST_HWDB), 0);
    const double cpu_s[] = {0.5};
    window("Intel(R) Xeon(R) Processor", 2, 1.0, 0.6, 1, cpu_s);
    cur.nominal_mhz = 2000;
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 7, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 1.75, TOL);
    ck_assert_double_eq_tol(tab.idle_w, 4.9, TOL);
    assumed_has("tdp=10W (default 5W x 2 CPUs for unknown CPU 'Intel(R) "
                "Xeon(R) Processor')");
    assumed_has("f=2000MHz (no cpufreq: nominal)");
    teardown();
}
END_TEST

START_TEST(test_unknown_cpu_with_cpufreq)
{
    /* Unknown part, 1 CPU: TDP 5 W; f_tdp from "@ 3.00GHz" in the name;
     * all the time at 1500 MHz, V constant: P = 0.7 x 5 x 1500/3000 =
     * 1.75 W */
    ck_assert_int_eq(start_with(NULL, PA_TEST_HWDB), 0);
    const double cpu_s[] = {0.5};
    window("ACME Zeta 9 CPU @ 3.00GHz", 1, 1.0, 0.5, 1, cpu_s);
    add_freq(1500, 1.0);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 1.75, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 0.875, TOL);
    assumed_has("ftdp=3000MHz (from the model name)");
    teardown();
}
END_TEST

START_TEST(test_option_overrides_and_volt)
{
    /* tdp=50, ftdp=2000, vtdp=1.0, volt=1000:0.8+2000:1.0; all the time
     * at 1500 MHz: V = 0.9 (interpolated), P = 0.7 x 50 x 1500 x 0.81 /
     * (2000 x 1.0) = 21.2625 W, whatever the hwdb says of the Q6600 */
    ck_assert_int_eq(start_with("tdp=50W,ftdp=2000,vtdp=1.0,volt=1000:0.8+"
                                "2000:1.0",
                                PA_TEST_HWDB),
                     0);
    const double cpu_s[] = {2.0};
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 2.0, 1, cpu_s);
    add_freq(1500, 4.0);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 21.2625, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 21.2625 * 0.5, TOL);
    assumed_has("tdp=50W (option)");
    assumed_has("ftdp=2000MHz (option)");
    assumed_has("vtdp=1V (option)");
    assumed_has("V per frequency from option volt=");
    teardown();
}
END_TEST

START_TEST(test_vtdp_interpolated_from_table)
{
    /* volt= table without vtdp=: V_tdp is read from it at f_tdp (2400 MHz
     * of the Q6600 record, between 1600:1.0 and 3200:1.2 -> 1.1 V).  All
     * the time at 1600 MHz: P = 0.7 x 105 x 1600 x 1.0 / (2400 x 1.21) =
     * 40.495867768595... W */
    ck_assert_int_eq(start_with("volt=1600:1.0+3200:1.2", PA_TEST_HWDB), 0);
    const double cpu_s[] = {4.0};
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 4.0, 1, cpu_s);
    add_freq(1600, 4.0);
    compute_ok();
    double p = 0.7 * 105 * 1600 * 1.0 / (2400 * 1.1 * 1.1);
    ck_assert_double_eq_tol(tab.cpu_w, p, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, p, TOL);
    assumed_has("vtdp=1.1V (interpolated at 2400MHz)");
    teardown();
}
END_TEST

START_TEST(test_packages_and_vm_slices)
{
    /* Xeon Gold 6248: 150 W per 40-thread package.  80 CPUs = 2 packages:
     * TDP 300 W, no cpufreq: P = 210 W */
    ck_assert_int_eq(start_with(NULL, PA_TEST_HWDB), 0);
    window("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", 80, 1.0, 0, 0, NULL);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 210, TOL);
    assumed_has("tdp=300W (hwdb \"Gold 6248\": 150W x 2 packages of 40 "
                "threads)");
    /* a 2-vCPU VM on the same part: 150 x 2/40 = 7.5 W, P = 5.25 W */
    window("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", 2, 1.0, 0, 0, NULL);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 5.25, TOL);
    assumed_has("VM or CPUs offline");
    teardown();
}
END_TEST

START_TEST(test_model_option_forces_record)
{
    /* model=Q6600 on a VM's generic name: TDP 105 W (4 threads, 4 CPUs),
     * P = 73.5 W */
    ck_assert_int_eq(start_with("model=Q6600", PA_TEST_HWDB), 0);
    window("Intel(R) Xeon(R) Processor", 4, 1.0, 0, 0, NULL);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 73.5, TOL);
    assumed_has("tdp=105W (hwdb \"Q6600\")");
    teardown();
}
END_TEST

START_TEST(test_configure_at_runtime)
{
    ck_assert_int_eq(start_with(NULL, PA_TEST_HWDB), 0);
    const double cpu_s[] = {1.0};
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 1.0, 1, cpu_s);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 73.5, TOL); /* 0.7 x 105 */
    /* the G0 stepping's 95 W: 0.7 x 95 = 66.5 W, task 66.5/4 */
    ck_assert_int_eq(configure_with("tdp=95"), 0);
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 1.0, 1, cpu_s);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 66.5, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 66.5 / 4, TOL);
    assumed_has("tdp=95W (option)");
    /* a bad configure leaves the module as it was */
    ck_assert_int_eq(configure_with("tdp=95,share=most"), -EINVAL);
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 1.0, 1, cpu_s);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 66.5, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 66.5 / 4, TOL);
    /* back to the database when the option goes */
    ck_assert_int_eq(configure_with("share=active"), 0);
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 1.0, 1, cpu_s);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 73.5, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 73.5, TOL); /* 1.0 of 1.0 busy */
    teardown();
}
END_TEST

START_TEST(test_zero_divisions)
{
    /* nothing ran: targets get 0 W; with share=active the whole CPU power
     * is idle (no task caused any), with share=capacity too (busy 0) */
    const double cpu_s[] = {0};
    ck_assert_int_eq(start_with("share=active", PA_TEST_HWDB), 0);
    window("Intel(R) Xeon(R) Processor", 2, 1.0, 0, 1, cpu_s);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 7, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 0, TOL);
    ck_assert_double_eq_tol(tab.idle_w, 7, TOL);
    teardown();
    ck_assert_int_eq(start_with(NULL, PA_TEST_HWDB), 0);
    window("Intel(R) Xeon(R) Processor", 2, 1.0, 0, 1, cpu_s);
    compute_ok();
    ck_assert_double_eq_tol(tasks[0].cpu_w, 0, TOL);
    ck_assert_double_eq_tol(tab.idle_w, 7, TOL);
    /* an empty window (capacity 0) */
    window("Intel(R) Xeon(R) Processor", 2, 0, 0, 1, cpu_s);
    compute_ok();
    ck_assert(isfinite(tasks[0].cpu_w));
    ck_assert_double_eq_tol(tasks[0].cpu_w, 0, TOL);
    ck_assert(isfinite(tab.idle_w));
    /* cpufreq present but no time in the window: nominal */
    window("Intel(R) Xeon(R) Processor", 2, 1.0, 0, 1, cpu_s);
    add_freq(1200, 0);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 7, TOL);
    teardown();
}
END_TEST

static const struct {
    const char *options;
    const char *says;
} bad_opts[] = {
    {"tdp=abc", "tdp=abc"},
    {"tdp=-5", "tdp=-5"},
    {"tdp=0", "e.g. tdp=95"},
    {"ftdp=fast", "ftdp=2400"},
    {"vtdp=12", "vtdp=1.2"},
    {"share=most", "share=capacity"},
    {"volt=1000:0.8+900:0.7", "increasing"},
    {"volt=abc", "volt=800:0.75+3200:1.1"},
    {"model=NoSuchCPU", "model=NoSuchCPU matches no cpu record"},
    {"tpd=95", "did you mean 'tdp'"},
    {"share", "key=value"},
};

START_TEST(test_bad_options)
{
    int rc = start_with(bad_opts[_i].options, PA_TEST_HWDB);
    ck_assert_int_eq(rc, -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), bad_opts[_i].says) != NULL, "%s: '%s' lacks '%s'",
                  bad_opts[_i].options, pa_last_error(), bad_opts[_i].says);
    ck_assert_ptr_null(mod.priv);
}
END_TEST

START_TEST(test_broken_hwdb_fails_start)
{
    char *dir = pa_test_tmpdir();
    pa_test_write(dir, "hwdb.txt", "# ok\ncpu \"X\" tdp=1 source=\"s\"\n");
    char path[4200];
    snprintf(path, sizeof(path), "%s/hwdb.txt", dir);
    ck_assert_int_eq(start_with(NULL, path), -EINVAL);
    char where[4300];
    snprintf(where, sizeof(where), "%s:2:", path);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), where));
    ck_assert_ptr_null(mod.priv);
    /* an unreadable user file is refused with the path */
    ck_assert_int_eq(start_with(NULL, "/nonexistent/hwdb.txt"), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "/nonexistent/hwdb.txt"));
    pa_test_rmtree(dir);
}
END_TEST

START_TEST(test_probe_and_ops)
{
    char why[64] = "x";
    ck_assert_int_eq(pa__mod_cpu_tdp.probe(NULL, why, sizeof(why)), 0);
    ck_assert_str_eq(why, "");
    ck_assert_str_eq(pa__mod_cpu_tdp.name, "cpu-tdp");
    ck_assert_int_eq(pa__mod_cpu_tdp.kind, PA_FORMULA);
    ck_assert_int_eq(pa__mod_cpu_tdp.component, PA_COMP_CPU);
    ck_assert_uint_eq(pa__mod_cpu_tdp.abi, PA_MODULE_ABI);
}
END_TEST

/* ------------------------------------------------------------------ */
/* End to end: procfs-cpu + cpu-tdp through the public API on fixture   */
/* trees, with an explicit clock.  The window's files are rewritten     */
/* with known deltas (USER_HZ = 100: 1 tick = 10 ms; time_in_state      */
/* counts 10 ms units).                                                 */
/* ------------------------------------------------------------------ */

/* <procfs>/stat with the aggregate line "user nice system idle iowait
 * irq softirq steal 0 0" and ncpus per-CPU lines (their values are not
 * used by the model). */
static void write_stat(const char *root, unsigned ncpus, unsigned long user, unsigned long sys,
                       unsigned long idle)
{
    char lines[1024] = "";
    for (unsigned i = 0; i < ncpus; i++) {
        size_t u = strlen(lines);
        snprintf(lines + u, sizeof(lines) - u, "cpu%u %lu 0 %lu %lu 0 0 0 0 0 0\n", i, user / ncpus,
                 sys / ncpus, idle / ncpus);
    }
    pa_test_write(root, "proc/stat",
                  "cpu  %lu 0 %lu %lu 0 0 0 0 0 0\n%sintr 0\nctxt 0\n"
                  "btime 1732085168\nprocesses 4000\nprocs_running 1\n"
                  "procs_blocked 0\n",
                  user, sys, idle, lines);
}

/* The fixture's stat line of a pid with utime/stime (proc(5) fields 14
 * and 15) replaced. */
static void write_pid_times(const char *root, int pid, const char *comm_etc, unsigned long utime,
                            unsigned long stime, const char *rest)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
    pa_test_write(root, rel, "%d %s %lu %lu %s\n", pid, comm_etc, utime, stime, rest);
}

static void write_tis(const char *root, int policy, unsigned long u800, unsigned long u2400,
                      unsigned long u3201)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpufreq/policy%d/stats/time_in_state",
             policy);
    pa_test_write(root, rel,
                  "3201000 %lu\n3200000 0\n2800000 0\n2400000 %lu\n"
                  "1300000 0\n800000 %lu\n",
                  u3201, u2400, u800);
}

#define FIREFOX_MID "(firefox-esr) S 1290 3100 3100 0 -1 4194560 4100 0 0 0"
#define FIREFOX_END                                                                                \
    "0 0 20 0 4 0 12001 23183360 469 18446744073709551615 94000203161600 "                         \
    "94000204073945 140720025395200 0 0 0 0 4096 1256 0 0 0 17 0 0 0 0 0 0 "                       \
    "94000204164752 94000204176600 94000233161600 140720025397155 "                                \
    "140720025397180 140720025397180 140720025399272 0"

START_TEST(test_e2e_desktop_cpufreq)
{
    /* Intel Core i5-6500 (hwdb: 65 W, 3200 MHz, 4 threads), 4 CPUs with
     * one cpufreq policy each, no voltage table. */
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *c = pa_test_ctx(root);
    write_stat(root, 4, 100000, 50000, 800000);
    for (int i = 0; i < 4; i++)
        write_tis(root, i, 10000, 2000, 4000);
    write_pid_times(root, 3100, FIREFOX_MID, 150230, 30411, FIREFOX_END);
    ck_assert_int_eq(pa_module_enable(c, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(c, "cpu-tdp", NULL), 0);
    ck_assert_int_eq(pa_watch_pid(c, 3100, 0), 0);
    ck_assert_int_eq(pa_tick_at(c, 10 * NS_PER_S), 0);

    /* 2 s later: 4 CPUs x 2 s = 800 ticks = 8 CPU-seconds of capacity;
     * busy +300 ticks (user +200, system +100) = 3 s, idle +500 = 5 s.
     * Each policy: 800 MHz +125 units, 2400 MHz +25, 3201 MHz +50, so
     * over the 4 CPUs t(800) = 5 s, t(2400) = 1 s, t(3201) = 2 s.
     * V constant: P = 0.7 x 65 x (800x5 + 2400x1 + 3201x2) / (3200 x 8)
     *               = 45.5 x 12802 / 25600 = 22.7535546875 W.
     * firefox-esr: utime +100, stime +50 = 1.5 s; U = 1.5 / 8 = 0.1875:
     * 22.7535546875 x 0.1875 = 4.26629150390625 W, 8.5325830078125 J.
     * Idle: 22.7535546875 x (1 - 3/8) = 14.2209716796875 W. */
    write_stat(root, 4, 100200, 50100, 800500);
    for (int i = 0; i < 4; i++)
        write_tis(root, i, 10125, 2025, 4050);
    write_pid_times(root, 3100, FIREFOX_MID, 150330, 30461, FIREFOX_END);
    pa_test_write(root, "proc/uptime", "105234.17 391136.74\n");
    ck_assert_int_eq(pa_tick_at(c, 12 * NS_PER_S), 0);

    double p = 0.7 * 65 * (800 * 5 + 2400 * 1 + 3201 * 2) / (3200.0 * 8);
    ck_assert_double_eq_tol(p, 22.7535546875, 1e-12);
    pa_power pw;
    ck_assert_int_eq(pa_pid_power(c, 3100, &pw), 0);
    ck_assert_double_eq_tol(pw.interval_s, 2.0, 1e-12);
    ck_assert_double_eq_tol(pw.cpu_time_s, 1.5, 1e-9);
    ck_assert_double_eq_tol(pw.cpu_w, p * 0.1875, 1e-9);
    ck_assert_double_eq_tol(pw.cpu_j, p * 0.1875 * 2, 1e-9);
    pa_power sys;
    ck_assert_int_eq(pa_system_power(c, &sys), 0);
    ck_assert_double_eq_tol(sys.cpu_w, p, 1e-9);
    ck_assert_double_eq_tol(sys.idle_w, p * (1 - 3.0 / 8), 1e-9);
    ck_assert_double_eq_tol(sys.cpu_j, p * 2, 1e-9);
    ck_assert(!(sys.flags & PA_POWER_MEASURED));
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(c, &r), 0);
    ck_assert_str_eq(r->cpu_source, "model");
    ck_assert_ptr_nonnull(strstr(r->assumed, "tdp=65W (hwdb \"i5-6500\")"));
    ck_assert_ptr_nonnull(strstr(r->assumed, "V constant"));
    pa_report_free(r);

    /* share=active at runtime: the busy 3 s split P: U = 1.5 / 3 */
    ck_assert_int_eq(pa_module_configure(c, "cpu-tdp", "share=active"), 0);
    write_stat(root, 4, 100400, 50200, 801000);
    for (int i = 0; i < 4; i++)
        write_tis(root, i, 10250, 2050, 4100);
    write_pid_times(root, 3100, FIREFOX_MID, 150430, 30511, FIREFOX_END);
    pa_test_write(root, "proc/uptime", "105236.17 391144.74\n");
    ck_assert_int_eq(pa_tick_at(c, 14 * NS_PER_S), 0);
    ck_assert_int_eq(pa_pid_power(c, 3100, &pw), 0);
    ck_assert_double_eq_tol(pw.cpu_w, p * 0.5, 1e-9); /* 11.37677734375 */
    ck_assert_double_eq_tol(pw.cpu_j, p * 0.1875 * 2 + p * 0.5 * 2, 1e-9);
    ck_assert_int_eq(pa_system_power(c, &sys), 0);
    ck_assert_double_eq_tol(sys.idle_w, 0, 1e-12);

    pa_ctx_free(c);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(test_e2e_vm_nocpufreq)
{
    /* This VM's kind: "Intel(R) Xeon(R) Processor", 2 vCPUs, no cpufreq,
     * cpuinfo 2000 MHz.  Default TDP 5 W x 2 = 10 W, P = 7 W. */
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *c = pa_test_ctx(root);
    char *st = pa_test_slurp(PA_FIXTURES "/vm-nocpufreq/proc/1720/stat");
    ck_assert_ptr_nonnull(st);
    /* fields after the comm: keep them but for utime/stime (14, 15) */
    char *rp = strrchr(st, ')');
    ck_assert_ptr_nonnull(rp);
    char head[512], tail[2048];
    int n = 0;
    const char *q = rp + 2;
    /* fields 3..13 */
    for (int f = 3; f <= 13; f++) {
        q = strchr(q, ' ');
        ck_assert_ptr_nonnull(q);
        q++;
    }
    snprintf(head, sizeof(head), "%.*s", (int)(q - st - 1), st);
    for (int f = 14; f <= 15; f++) {
        q = strchr(q, ' ');
        ck_assert_ptr_nonnull(q);
        q++;
    }
    snprintf(tail, sizeof(tail), "%s", q);
    n = (int)strlen(tail);
    while (n > 0 && tail[n - 1] == '\n')
        tail[--n] = '\0';
    free(st);
    /* head is "1720 (comm) S ... field13": write_pid_times wants the part
     * after the pid */
    const char *afterpid = strchr(head, ' ') + 1;
    write_stat(root, 2, 20000, 10000, 300000);
    write_pid_times(root, 1720, afterpid, 500, 100, tail);
    ck_assert_int_eq(pa_module_enable(c, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(c, "cpu-tdp", NULL), 0);
    ck_assert_int_eq(pa_watch_pid(c, 1720, 0), 0);
    ck_assert_int_eq(pa_tick_at(c, 5 * NS_PER_S), 0);
    /* 1 s: 2 CPUs = 2 s capacity; busy +120 ticks = 1.2 s; the pid +50
     * ticks = 0.5 s: 7 x 0.5/2 = 1.75 W; idle 7 x (1 - 1.2/2) = 2.8 W */
    write_stat(root, 2, 20080, 10040, 300080);
    write_pid_times(root, 1720, afterpid, 540, 110, tail);
    ck_assert_int_eq(pa_tick_at(c, 6 * NS_PER_S), 0);
    pa_power pw, sys;
    ck_assert_int_eq(pa_pid_power(c, 1720, &pw), 0);
    ck_assert_double_eq_tol(pw.cpu_w, 1.75, 1e-9);
    ck_assert_double_eq_tol(pw.cpu_j, 1.75, 1e-9);
    ck_assert_int_eq(pa_system_power(c, &sys), 0);
    ck_assert_double_eq_tol(sys.cpu_w, 7, 1e-9);
    ck_assert_double_eq_tol(sys.idle_w, 2.8, 1e-9);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(c, &r), 0);
    ck_assert_str_eq(r->cpu_source, "model");
    ck_assert_ptr_nonnull(strstr(r->assumed, "tdp=10W (default 5W x 2 CPUs for unknown "
                                             "CPU 'Intel(R) Xeon(R) Processor')"));
    ck_assert_ptr_nonnull(strstr(r->assumed, "f=2000MHz (no cpufreq: nominal)"));
    pa_report_free(r);
    /* tdp= set at runtime: 0.7 x 20 = 14 W, the pid 14 x 0.25 = 3.5 W */
    ck_assert_int_eq(pa_module_configure(c, "cpu-tdp", "tdp=20"), 0);
    write_stat(root, 2, 20160, 10080, 300160);
    write_pid_times(root, 1720, afterpid, 580, 120, tail);
    ck_assert_int_eq(pa_tick_at(c, 7 * NS_PER_S), 0);
    ck_assert_int_eq(pa_pid_power(c, 1720, &pw), 0);
    ck_assert_double_eq_tol(pw.cpu_w, 3.5, 1e-9);
    ck_assert_double_eq_tol(pw.cpu_j, 1.75 + 3.5, 1e-9);
    ck_assert_int_eq(pa_report_get(c, &r), 0);
    ck_assert_ptr_nonnull(strstr(r->assumed, "tdp=20W (option)"));
    pa_report_free(r);
    pa_ctx_free(c);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(test_e2e_bad_option_names_fix)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *c = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(c, "cpu-tdp", "tpd=95"), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "did you mean 'tdp'"));
    ck_assert_int_eq(pa_module_enable(c, "cpu-tdp", "tdp=lots"), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "tdp=95"));
    ck_assert_int_eq(pa_module_enable(c, "cpu-tdp", "tdp=95"), 0);
    ck_assert_int_eq(pa_module_configure(c, "cpu-tdp", "share=most"), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "share=active"));
    pa_ctx_free(c);
    pa_test_rmtree(root);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cpu-tdp");
    TCase *tc = tcase_create("formula");
    tcase_add_test(tc, test_cpufreq_voltage_table_capacity);
    tcase_add_test(tc, test_share_active);
    tcase_add_test(tc, test_clamped_above_table);
    tcase_add_test(tc, test_q6600_cpufreq_no_table);
    tcase_add_test(tc, test_no_cpufreq_known_cpu);
    tcase_add_test(tc, test_unknown_vm_default);
    tcase_add_test(tc, test_unknown_cpu_with_cpufreq);
    tcase_add_test(tc, test_option_overrides_and_volt);
    tcase_add_test(tc, test_vtdp_interpolated_from_table);
    tcase_add_test(tc, test_packages_and_vm_slices);
    tcase_add_test(tc, test_model_option_forces_record);
    tcase_add_test(tc, test_configure_at_runtime);
    tcase_add_test(tc, test_zero_divisions);
    tcase_add_loop_test(tc, test_bad_options, 0, (int)(sizeof(bad_opts) / sizeof(bad_opts[0])));
    tcase_add_test(tc, test_broken_hwdb_fails_start);
    tcase_add_test(tc, test_probe_and_ops);
    suite_add_tcase(s, tc);
    TCase *e2e = tcase_create("e2e");
    tcase_add_test(e2e, test_e2e_desktop_cpufreq);
    tcase_add_test(e2e, test_e2e_vm_nocpufreq);
    tcase_add_test(e2e, test_e2e_bad_option_names_fix);
    suite_add_tcase(s, e2e);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
