/* test_cpu_tdp.c - the cpu-tdp formula (DESIGN.md section 6), driven by
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
static void window(const char *model, unsigned ncpus, double interval_s,
                   double busy_s, size_t ntasks, const double *cpu_s)
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
    ck_assert_msg(strstr(tab.assumed, text) != NULL, "assumed '%s' lacks '%s'",
                  tab.assumed, text);
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
    double k = 0.7 * 24.5;         /* 17.15 W at the TDP point */
    double vtdp2 = 1.484 * 1.484;  /* V_tdp^2 */
    double v1100 = 1.164 + (1.276 - 1.164) * (1100 - 1000) / (1200 - 1000);
    /* v1100 = 1.22 V */
    double p600 = k * 600 * 0.956 * 0.956 / (1600 * vtdp2);    /* 2.66897 */
    double p1100 = k * 1100 * v1100 * v1100 / (1600 * vtdp2);  /* 7.96872 */
    double p1600 = k;                                           /* 17.15 */
    return (p600 * 0.5 + p1100 * 0.25 + p1600 * 0.25) / 1.0;   /* 7.61416 */
}

START_TEST(test_cpufreq_voltage_table_capacity)
{
    ck_assert_int_eq(start_with(NULL, PA_TEST_HWDB), 0);
    double p = pentium_m_window();
    ck_assert_double_eq_tol(p, 7.614164571466714, 1e-9);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, p, TOL);
    /* capacity = 1 s x 1 CPU: U = 0.5 and 0.25 */
    ck_assert_double_eq_tol(tasks[0].cpu_w, p * 0.5, TOL); /* 3.80708 W */
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
    ck_assert_double_eq_tol(tasks[0].cpu_w, p * 0.5 / 0.8, TOL); /* 4.75885 */
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
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 2.0, 2,
           cpu_s);
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
    ck_assert_double_eq_tol(tasks[0].cpu_w, 56 * 1.0 / 4.0, TOL); /* 14 W */
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
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 2.0, 1,
           cpu_s);
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
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 4.0, 1,
           cpu_s);
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
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 1.0, 1,
           cpu_s);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 73.5, TOL); /* 0.7 x 105 */
    /* the G0 stepping's 95 W: 0.7 x 95 = 66.5 W, task 66.5/4 */
    ck_assert_int_eq(configure_with("tdp=95"), 0);
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 1.0, 1,
           cpu_s);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 66.5, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 66.5 / 4, TOL);
    assumed_has("tdp=95W (option)");
    /* a bad configure leaves the module as it was */
    ck_assert_int_eq(configure_with("tdp=95,share=most"), -EINVAL);
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 1.0, 1,
           cpu_s);
    compute_ok();
    ck_assert_double_eq_tol(tab.cpu_w, 66.5, TOL);
    ck_assert_double_eq_tol(tasks[0].cpu_w, 66.5 / 4, TOL);
    /* back to the database when the option goes */
    ck_assert_int_eq(configure_with("share=active"), 0);
    window("Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", 4, 1.0, 1.0, 1,
           cpu_s);
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
    ck_assert_msg(strstr(pa_last_error(), bad_opts[_i].says) != NULL,
                  "%s: '%s' lacks '%s'", bad_opts[_i].options, pa_last_error(),
                  bad_opts[_i].says);
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
    tcase_add_loop_test(tc, test_bad_options, 0,
                        (int)(sizeof(bad_opts) / sizeof(bad_opts[0])));
    tcase_add_test(tc, test_broken_hwdb_fails_start);
    tcase_add_test(tc, test_probe_and_ops);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
