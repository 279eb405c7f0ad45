/*
 * test_platform.c - the acpi-power sensor and the platform formula (issue
 * 46; DESIGN.md section 19) on the 2-socket server fixture (rapl-server2s)
 * with the ACPI power meter of tests/fixtures/hwmon-power-meter overlaid,
 * explicit clock: the known answer (a wall of 150 W with RAPL at 45 W
 * leaves 105 W to platform), each split rule with platform conserved
 * (processes + unaccounted + idle = platform, every window), the meter's
 * averaging and instants aligned to the windows, auto choosing
 * platform-acpi where a meter exists, the old driver layout, and the
 * model-vs-wall line.
 */
#include "../sensors/wall.h"
#include "prometheus.h"
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOL 1e-6
#define METER "sys/class/hwmon/hwmon1/"

typedef struct server {
    char *root;
    pa_ctx *ctx;
    unsigned long busy, idle, u100, u200;
    unsigned long long pkg0, pkg1;
    uint64_t t_ns;
} server;

static void write_pid_stat(const char *root, int pid, const char *comm, unsigned long utime,
                           int cpu)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
    pa_test_write(root, rel,
                  "%d (%s) R 1 %d %d 0 -1 4194560 100 0 0 0 %lu 0 0 0 20 0 "
                  "1 0 %d 17530880 1043 18446744073709551615 0 0 0 0 0 0 0 "
                  "4096 0 0 0 0 17 %d 0 0 0 0 0\n",
                  pid, comm, pid, pid, utime, 40000 + pid, cpu);
}

static void write_stat(const char *root, unsigned long busy, unsigned long idle)
{
    unsigned long b = busy / 4, i = idle / 4;
    pa_test_write(root, "proc/stat",
                  "cpu  %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu0 %lu 0 0 %lu 0 0 0 0 0 0\ncpu1 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu2 %lu 0 0 %lu 0 0 0 0 0 0\ncpu3 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "intr 0\nctxt 1000\nbtime 1732200000\nprocesses 500\n"
                  "procs_running 1\nprocs_blocked 0\n",
                  4 * b, 4 * i, b, i, b, i, b, i, b, i);
}

/* The server with the meter overlaid; modules: NULL leaves them to auto,
 * else procfs-cpu, rapl, rapl-share, acpi-power and platform with opts. */
static void server_open(server *s, const char *platform_opts, int use_auto)
{
    memset(s, 0, sizeof(*s));
    s->root = pa_test_fixture_copy("rapl-server2s");
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "cp -a '%s/hwmon-power-meter/sys/class/hwmon' '%s/sys/class/'",
             PA_FIXTURES, s->root);
    ck_assert_int_eq(pa_test_run(cmd, NULL), 0);
    s->ctx = pa_test_ctx(s->root);
    s->busy = 100000;
    s->idle = 300000;
    s->u100 = 1200;
    s->u200 = 600;
    s->pkg0 = 100000000;
    s->pkg1 = 200000000;
    if (!use_auto) {
        ck_assert_int_eq(pa_module_enable(s->ctx, "procfs-cpu", NULL), 0);
        ck_assert_int_eq(pa_module_enable(s->ctx, "rapl", NULL), 0);
        ck_assert_int_eq(pa_module_enable(s->ctx, "rapl-share", NULL), 0);
        ck_assert_int_eq(pa_module_enable(s->ctx, "acpi-power", NULL), 0);
        int rc = pa_module_enable(s->ctx, "platform", platform_opts);
        ck_assert_msg(rc == 0, "platform: %s", pa_last_error());
    }
    ck_assert_int_eq(pa_watch_all(s->ctx, 1), 0);
    write_stat(s->root, s->busy, s->idle);
    s->t_ns = NS_PER_S;
    ck_assert_int_eq(pa_tick_at(s->ctx, s->t_ns), 0);
}

/* One 1 s window: CPU ticks (1/100 s) and RAPL joules added, the meter's
 * power1_average set to wall_w. */
static void server_step(server *s, unsigned long busy, unsigned long d100, unsigned long d200,
                        double j0, double j1, double wall_w)
{
    s->busy += busy;
    s->idle += 400 - busy;
    s->u100 += d100;
    s->u200 += d200;
    s->pkg0 += (unsigned long long)(j0 * 1e6);
    s->pkg1 += (unsigned long long)(j1 * 1e6);
    write_stat(s->root, s->busy, s->idle);
    write_pid_stat(s->root, 100, "web", s->u100, 1);
    write_pid_stat(s->root, 200, "db", s->u200, 2);
    pa_test_write(s->root, "sys/class/powercap/intel-rapl:0/energy_uj", "%llu\n", s->pkg0);
    pa_test_write(s->root, "sys/class/powercap/intel-rapl:1/energy_uj", "%llu\n", s->pkg1);
    pa_test_write(s->root, METER "power1_average", "%llu\n",
                  (unsigned long long)llround(wall_w * 1e6));
    s->t_ns += NS_PER_S;
    int rc = pa_tick_at(s->ctx, s->t_ns);
    ck_assert_msg(rc == 0, "tick: %s", pa_last_error());
}

static void server_close(server *s)
{
    pa_ctx_free(s->ctx);
    pa_test_rmtree(s->root);
}

/* The index of component name in r, or -1. */
static int comp_of(const pa_report *r, const char *name)
{
    for (size_t k = 0; k < r->ncomponents; k++)
        if (!strcmp(r->component_names[k], name))
            return (int)k;
    return -1;
}

/* Target (type, pid)'s watts of component k. */
static double target_w(const pa_report *r, pa_target_type type, pid_t pid, int k)
{
    const pa_target_info *t = pa_test_target(r, type, pid);
    ck_assert_msg(t != NULL, "no target %d", (int)pid);
    return r->target_component_w[(size_t)(t - r->targets) * r->ncomponents + (size_t)k];
}

/* The platform device's record of r. */
static const pa_device_info *device_of(const pa_report *r, const char *component)
{
    for (size_t i = 0; i < r->ndevices; i++)
        if (!strcmp(r->devices[i].component, component))
            return &r->devices[i];
    ck_abort_msg("no %s device in the report", component);
    return NULL;
}

/* Processes + exited + unaccounted = platform, the unaccounted record
 * holding the idle part (as it holds a GPU's, whose idle no process
 * causes) and what no process explains; returns platform. */
static double assert_conserved(const pa_report *r)
{
    int k = comp_of(r, "platform");
    ck_assert_int_ge(k, 0);
    double sum = 0, unacc = 0;
    for (size_t i = 0; i < r->ntargets; i++) {
        pa_target_type ty = r->targets[i].type;
        double w = r->target_component_w[i * r->ncomponents + (size_t)k];
        ck_assert(w >= -TOL);
        if (ty == PA_TARGET_PROCESS || ty == PA_TARGET_EXITED || ty == PA_TARGET_UNACCOUNTED)
            sum += w;
        if (ty == PA_TARGET_UNACCOUNTED)
            unacc = w;
    }
    double plat = r->system_component_w[k];
    ck_assert_double_eq_tol(sum, plat, TOL);
    ck_assert(unacc >= device_of(r, "platform")->idle_w - TOL);
    return plat;
}

/* Window: 2 of 4 CPU-s busy (web 1.2 s, db 0.6 s), packages 25 + 20 J:
 * RAPL 45 W; the meter 150 W: platform 105 W.  split=cpu: by CPU time
 * over the busy time, web 105 x 1.2 / 2 = 63 W, db 31.5 W, the 0.2 s no
 * process explains 10.5 W unaccounted; the CPUs never quiet: no idle. */
START_TEST(known_answer_split_cpu)
{
    server s;
    server_open(&s, "split=cpu", 0);
    server_step(&s, 200, 120, 60, 25, 20, 150);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    int k = comp_of(r, "platform");
    ck_assert_double_eq_tol(r->system.cpu_w, 45, TOL);
    ck_assert_double_eq_tol(r->system_component_w[k], 105, TOL);
    ck_assert_double_eq_tol(target_w(r, PA_TARGET_PROCESS, 100, k), 63, TOL);
    ck_assert_double_eq_tol(target_w(r, PA_TARGET_PROCESS, 200, k), 31.5, TOL);
    ck_assert_double_eq_tol(assert_conserved(r), 105, TOL);
    ck_assert_double_eq_tol(device_of(r, "wall")->power_w, 150, TOL);
    /* the machine's total is the wall's */
    ck_assert_double_eq_tol(r->system.total_w, 150, TOL);
    ck_assert_ptr_nonnull(strstr(r->assumed, "platform = wall 150.00 W (acpi-power"));
    ck_assert_ptr_nonnull(strstr(r->assumed, "cpu 45.00 W measured"));
    ck_assert_ptr_nonnull(strstr(r->assumed, "split by CPU time"));
    /* serve's page: the wall's series, the platform component, no GPU */
    rp_prom_opts po;
    memset(&po, 0, sizeof(po));
    size_t len = 0;
    char *page = rp_prom_page(r, &po, &len);
    ck_assert_ptr_nonnull(page);
    ck_assert_ptr_nonnull(strstr(
        page,
        "powerapi_wall_power_watts{sensor=\"acpi-power\",meter=\"hwmon1 (power_meter)\"} 150"));
    ck_assert_ptr_nonnull(strstr(page, "powerapi_system_power_watts{component=\"platform\"} 105"));
    ck_assert_ptr_null(strstr(page, "powerapi_gpu_power_watts"));
    free(page);
    pa_report_free(r);
    server_close(&s);
}
END_TEST

/* split=components: each process by its other components' watts (here
 * its cpu watts from rapl-share), over the processes' sum: every process
 * is watched, so all 105 W go to them. */
START_TEST(known_answer_split_components)
{
    server s;
    server_open(&s, "split=components", 0);
    server_step(&s, 200, 120, 60, 25, 20, 150);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    int k = comp_of(r, "platform");
    double web = pa_test_target(r, PA_TARGET_PROCESS, 100)->power.cpu_w;
    double db = pa_test_target(r, PA_TARGET_PROCESS, 200)->power.cpu_w;
    ck_assert(web > 0 && db > 0 && fabs(web - db) > 1);
    ck_assert_double_eq_tol(target_w(r, PA_TARGET_PROCESS, 100, k), 105 * web / (web + db), TOL);
    ck_assert_double_eq_tol(target_w(r, PA_TARGET_PROCESS, 200, k), 105 * db / (web + db), TOL);
    ck_assert_double_eq_tol(assert_conserved(r), 105, TOL);
    ck_assert_ptr_nonnull(strstr(r->assumed, "split=components"));
    pa_report_free(r);
    server_close(&s);
}
END_TEST

/* split=none: nothing to processes, 105 W unattributed (85 W active, 20 W
 * idle=); idle=20 is said and conserved. */
START_TEST(known_answer_split_none_idle)
{
    server s;
    server_open(&s, "split=none,idle=20", 0);
    server_step(&s, 200, 120, 60, 25, 20, 150);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    int k = comp_of(r, "platform");
    ck_assert_double_eq_tol(target_w(r, PA_TARGET_PROCESS, 100, k), 0, TOL);
    ck_assert_double_eq_tol(target_w(r, PA_TARGET_UNACCOUNTED, 0, k), 105, TOL);
    ck_assert_double_eq_tol(device_of(r, "platform")->idle_w, 20, TOL);
    ck_assert_double_eq_tol(assert_conserved(r), 105, TOL);
    ck_assert_ptr_nonnull(strstr(r->assumed, "idle 20.00 W (idle= option)"));
    ck_assert_ptr_nonnull(strstr(r->assumed, "unattributed"));
    pa_report_free(r);
    server_close(&s);
}
END_TEST

/* The idle part is the lowest platform power over quiet windows: a quiet
 * window (1 % busy) at 120 W wall and 10 W RAPL sets it at 110 W... then
 * a busy window at 150 W and 45 W gives 105 W, all idle (never above the
 * window's); the model-vs-wall line follows the running mean. */
START_TEST(idle_from_quiet_windows)
{
    server s;
    server_open(&s, "split=cpu", 0);
    server_step(&s, 4, 2, 1, 5, 5, 100);        /* quiet: platform 90 W, idle 90 */
    server_step(&s, 200, 120, 60, 25, 20, 150); /* busy: 105 W, idle 90, 15 W split */
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    int k = comp_of(r, "platform");
    ck_assert_double_eq_tol(device_of(r, "platform")->idle_w, 90, TOL);
    ck_assert_double_eq_tol(target_w(r, PA_TARGET_PROCESS, 100, k), 15 * 1.2 / 2, TOL);
    ck_assert_double_eq_tol(assert_conserved(r), 105, TOL);
    /* model (the components) vs wall: -90 %, then -70 %: mean -80 % */
    ck_assert_ptr_nonnull(strstr(r->assumed, "error -70.0 % (mean -80.0 %"));
    ck_assert_ptr_nonnull(strstr(r->assumed, "over 2 windows"));
    /* the energy of the meter and the platform accumulate */
    ck_assert_double_eq_tol(device_of(r, "wall")->energy_j, 250, TOL);
    ck_assert_double_eq_tol(device_of(r, "platform")->energy_j, 195, TOL);
    pa_report_free(r);
    server_close(&s);
}
END_TEST

/* Alignment: a 2 s average read each second covers [t-2, t]: the window
 * [2, 3] is the reading taken at 3 (its interval overlaps the window by
 * 1 s; the one taken at 2 ends where the window starts); an instant
 * (interval 0) is a point: the window is the mean of the line between its
 * ends, 140 -> 160 W gives 150 W. */
START_TEST(readings_aligned_to_windows)
{
    server s;
    server_open(&s, "split=cpu", 0);
    pa_test_write(s.root, METER "power1_average_interval", "0\n");
    server_step(&s, 200, 120, 60, 25, 20, 140);
    server_step(&s, 200, 120, 60, 25, 20, 160);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    ck_assert_double_eq_tol(device_of(r, "wall")->power_w, 150, TOL);
    ck_assert_double_eq_tol(assert_conserved(r), 105, TOL);
    pa_report_free(r);
    pa_test_write(s.root, METER "power1_average_interval", "2000\n");
    server_step(&s, 200, 120, 60, 25, 20, 170);
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    ck_assert_double_eq_tol(device_of(r, "wall")->power_w, 170, TOL);
    ck_assert_ptr_nonnull(strstr(r->assumed, "power1_average, 2.000 s average"));
    pa_report_free(r);
    server_close(&s);
}
END_TEST

/* auto: where an ACPI power meter exists, platform-acpi fills the
 * platform component with its sensor; the total is the wall. */
START_TEST(auto_chooses_platform_acpi)
{
    server s;
    server_open(&s, NULL, 1);
    server_step(&s, 200, 120, 60, 25, 20, 150);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    ck_assert_ptr_nonnull(strstr(r->formula, "platform-acpi"));
    ck_assert_ptr_nonnull(strstr(r->sensors, "acpi-power"));
    ck_assert_double_eq_tol(r->system.total_w, 150, TOL);
    ck_assert_double_eq_tol(assert_conserved(r), 150 - r->system.cpu_w - r->system.nic_w, TOL);
    pa_report_free(r);
    server_close(&s);
}
END_TEST

/* The driver's files in hwmonN/device (the driver's older registration), a 300 s
 * average; a tree without a meter: none, and without hwmon: why. */
START_TEST(old_layout_and_none)
{
    char *root = pa_test_fixture_copy("hwmon-power-meter/old");
    char sys[4096], why[512] = "";
    pa_wall_reading r;
    memset(&r, 0, sizeof(r));
    snprintf(sys, sizeof(sys), "%s/sys", root);
    ck_assert_int_eq(pa_wall_acpi_read(sys, &r, why, sizeof(why)), 1);
    ck_assert_double_eq_tol(r.power_w, 212.5, TOL);
    ck_assert_double_eq_tol(r.avg_s, 300, TOL);
    ck_assert_str_eq(r.meter, "hwmon2 (power_meter)");
    pa_test_remove(root, "sys/class/hwmon/hwmon2/device/name");
    ck_assert_int_eq(pa_wall_acpi_read(sys, &r, why, sizeof(why)), 0);
    pa_test_remove(root, "sys/class/hwmon");
    ck_assert_int_eq(pa_wall_acpi_read(sys, &r, why, sizeof(why)), -ENOENT);
    ck_assert_ptr_nonnull(strstr(why, "no hwmon here"));
    pa_test_rmtree(root);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("platform");
    TCase *tc = tcase_create("platform");
    tcase_add_test(tc, known_answer_split_cpu);
    tcase_add_test(tc, known_answer_split_components);
    tcase_add_test(tc, known_answer_split_none_idle);
    tcase_add_test(tc, idle_from_quiet_windows);
    tcase_add_test(tc, readings_aligned_to_windows);
    tcase_add_test(tc, auto_chooses_platform_acpi);
    tcase_add_test(tc, old_layout_and_none);
    suite_add_tcase(s, tc);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = pa_test_main(s);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("test_platform: %.2f s\n",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return rc;
}
