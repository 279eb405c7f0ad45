/*
 * test_modhelp.c - the module-helper header (powerapi_module.h) from a
 * user program's view: a sensor of its own puts RAPL, CPU package, NIC,
 * socket, per-task network and cycles readings in the frames with the
 * pa_frame_* calls, and a formula of its own reads the window back with
 * the pa_delta_* calls, exactly; the calls' errors (an index out of
 * range, a reading absent, a limit passed, a module unknown).  Only
 * powerapi.h and powerapi_module.h are included, as a user's module would.
 */
#include "powerapi.h"
#include "powerapi_module.h"
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOL 1e-9

/* ---- the sensor: cumulative readings that grow by a known step ---- */

static uint64_t step_n;   /* ticks sampled */
static int sensor_errors; /* wrong answers of the pa_frame_* error paths */
static size_t tasks_seen;

static int probe_sample(pa_module *m, pa_frame *f)
{
    (void)m;
    uint64_t k = ++step_n;
    pa_rapl_reading r[2] = {
        {.socket = 0, .kind = PA_RAPL_PKG, .energy_uj = k * 10000000ull}, /* 10 J a tick */
        {.socket = 0, .kind = PA_RAPL_DRAM, .energy_uj = k * 2000000ull}, /* 2 J */
    };
    int rc = pa_frame_rapl_set(f, r, 2, "test");
    if (rc < 0)
        return rc;
    pa_rapl_reading many[PA_MAX_RAPL + 1];
    memset(many, 0, sizeof(many));
    sensor_errors += pa_frame_rapl_set(f, many, PA_MAX_RAPL + 1, "test") != -EINVAL;
    sensor_errors += pa_frame_rapl_set(f, r, 2, NULL) != -EINVAL;
    int16_t map[2] = {0, 0};
    if ((rc = pa_frame_cpu_packages_set(f, map, 2)) < 0)
        return rc;
    sensor_errors += pa_frame_cpu_packages_set(f, map, PA_MAX_CPUS + 1) != -EINVAL;
    pa_nic_reading nic = {.name = "eth0", .kind = PA_NIC_PHYSICAL, .speed_mbps = 1000};
    snprintf(nic.driver, sizeof(nic.driver), "e1000e");
    nic.rx_bytes = k * 1000;
    nic.tx_bytes = k * 500;
    if ((rc = pa_frame_nic_set(f, &nic, 1)) < 0)
        return rc;
    uint64_t sock[3] = {k * 1200, 0, k * 30};
    pa_frame_sock_bytes_set(f, sock);
    pa_frame_cycles_set(f, (double)k * 1e9);
    pa_frame_note(f, "probe-sensor: tick %llu", (unsigned long long)pa_frame_tick(f));

    /* the watched processes: their CPU time (which makes them seen at
     * this tick), then their network bytes */
    for (pid_t pid = 101; pid <= 102; pid++)
        if ((rc = pa_frame_set_cpu_ns(f, pid, 0, k * 500000000ull)) < 0)
            return rc;
    pa_frame_task_info ti;
    size_t n = pa_frame_task_count(f);
    sensor_errors += pa_frame_task(f, n, &ti) != -ERANGE;
    sensor_errors += pa_frame_task_net(f, n, 0, 0, NULL) != -ERANGE;
    for (size_t i = 0; i < n; i++) {
        if (pa_frame_task(f, i, &ti) < 0 || ti.type != PA_TARGET_PROCESS)
            continue;
        tasks_seen++;
        uint64_t kind[3] = {k * 100 * (uint64_t)ti.pid, 0, 0};
        if ((rc = pa_frame_task_net(f, i, kind[0] / 2, kind[0] / 2, kind)) < 0)
            return rc;
    }
    return 0;
}

static const pa_module_ops probe_sensor = {
    .abi = PA_MODULE_ABI,
    .name = "probe-sensor",
    .kind = PA_SENSOR,
    .description = "readings of known steps, through powerapi_module.h",
    .sample = probe_sample,
    .flags = PA_MOD_DISCOVERS_TASKS,
};

/* ---- the formula: what it read of the last window ---- */

static struct {
    int windows;
    unsigned have;
    size_t nrapl, nnic, nfreq;
    double pkg_j, dram_j;
    int pkg_socket;
    pa_nic_window nic;
    uint64_t sock[3];
    unsigned nmap;
    int16_t map0;
    double busy0;
    int last_cpu_99; /* pa_delta_last_cpu past the end */
    int net_rc[2];
    uint64_t net_kind0[2], net_rxtx[2];
    pa_share_w sw;
    int errors; /* wrong answers of the pa_delta_* error paths */
} seen;

static int probe_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *t)
{
    (void)m;
    seen.windows++;
    seen.have = pa_delta_have(d);
    seen.nrapl = pa_delta_rapl_count(d);
    pa_rapl_window w;
    for (size_t i = 0; pa_delta_rapl(d, i, &w) == 0; i++) {
        if (w.kind == PA_RAPL_PKG) {
            seen.pkg_j = w.energy_j;
            seen.pkg_socket = w.socket;
        } else if (w.kind == PA_RAPL_DRAM) {
            seen.dram_j = w.energy_j;
        }
    }
    seen.errors += pa_delta_rapl(d, seen.nrapl, &w) != -ERANGE;
    seen.nnic = pa_delta_nic_count(d);
    if (pa_delta_nic(d, 0, &seen.nic) < 0)
        seen.errors++;
    seen.errors += pa_delta_nic(d, seen.nnic, &seen.nic) != -ERANGE;
    if (pa_delta_sock_bytes(d, seen.sock) < 0)
        seen.errors++;
    seen.nfreq = pa_delta_freq_count(d);
    pa_freq_time ft;
    seen.errors += pa_delta_freq(d, 0, &ft) != -ERANGE; /* no frequencies: none */
    const int16_t *map = NULL;
    seen.nmap = pa_delta_cpu_packages(d, &map);
    seen.map0 = seen.nmap ? map[0] : -2;
    seen.busy0 = pa_delta_package_busy(d, 0);
    seen.last_cpu_99 = pa_delta_last_cpu(d, 99);
    size_t n = pa_delta_count(d);
    for (size_t i = 0; i < n; i++) {
        pid_t pid = pa_delta_pid(d, i);
        if (pid < 101 || pid > 102)
            continue;
        uint64_t kind[3] = {0}, rxtx = 0;
        int k = pid - 101;
        seen.net_rc[k] = pa_delta_net_bytes(d, i, kind, &rxtx);
        seen.net_kind0[k] = kind[0];
        seen.net_rxtx[k] = rxtx;
        pa_table_set_target_w(t, i, (double)pid);
    }
    pa_delta_share_weights(d, &seen.sw);
    pa_table_set_system_w(t, 1.5, 0);
    return 0;
}

static const pa_module_ops probe_formula = {
    .abi = PA_MODULE_ABI,
    .name = "probe-formula",
    .kind = PA_FORMULA,
    .description = "reads the window through powerapi_module.h",
    .compute = probe_compute,
    .component_name = "probe",
};

/* A procfs with pids 101 and 102 and an empty sysfs; only the probe
 * modules run (auto is off). */
static pa_ctx *probe_ctx(char *root)
{
    char procfs[4200], sysfs[4200];
    pa_test_write(root, "proc/101/stat", "101 (a) S 1\n");
    pa_test_write(root, "proc/102/stat", "102 (b) S 1\n");
    snprintf(procfs, sizeof(procfs), "%s/proc", root);
    snprintf(sysfs, sizeof(sysfs), "%s/sys", root);
    mkdir(sysfs, 0755);
    pa_ctx_opts o = {.procfs = procfs, .sysfs = sysfs};
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, &o), 0);
    ck_assert_int_eq(pa_module_disable(ctx, "auto"), 0);
    ck_assert_int_eq(pa_module_register(ctx, &probe_sensor), 0);
    ck_assert_int_eq(pa_module_register(ctx, &probe_formula), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "probe-sensor", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "probe-formula", NULL), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, 101, 0), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, 102, 0), 0);
    return ctx;
}

START_TEST(test_window_through_the_helpers)
{
    memset(&seen, 0, sizeof(seen));
    step_n = 0;
    sensor_errors = 0;
    tasks_seen = 0;
    char *root = pa_test_tmpdir();
    pa_ctx *ctx = probe_ctx(root);
    for (int k = 1; k <= 3; k++)
        ck_assert_int_eq(pa_tick_at(ctx, (uint64_t)k * 1000000000ull), 0);
    ck_assert_int_eq(sensor_errors, 0);
    ck_assert_int_eq(seen.errors, 0);
    ck_assert_int_eq(seen.windows, 2);
    ck_assert_uint_gt(tasks_seen, 0);
    /* what both frames hold */
    unsigned want = PA_HAVE_RAPL | PA_HAVE_NIC | PA_HAVE_SOCK | PA_HAVE_CYCLES;
    ck_assert_uint_eq(seen.have & want, want);
    ck_assert_uint_eq(seen.have & PA_HAVE_FREQ, 0);
    ck_assert_uint_eq(seen.nfreq, 0);
    /* RAPL: 10 J and 2 J a 1 s window */
    ck_assert_uint_eq(seen.nrapl, 2);
    ck_assert_double_eq_tol(seen.pkg_j, 10, TOL);
    ck_assert_double_eq_tol(seen.dram_j, 2, TOL);
    ck_assert_int_eq(seen.pkg_socket, 0);
    /* NIC: the interface's window, and the sockets' */
    ck_assert_uint_eq(seen.nnic, 1);
    ck_assert_str_eq(seen.nic.name, "eth0");
    ck_assert_str_eq(seen.nic.driver, "e1000e");
    ck_assert_int_eq(seen.nic.kind, PA_NIC_PHYSICAL);
    ck_assert_uint_eq(seen.nic.speed_mbps, 1000);
    ck_assert_uint_eq(seen.nic.rx_bytes, 1000);
    ck_assert_uint_eq(seen.nic.tx_bytes, 500);
    ck_assert_uint_eq(seen.sock[0], 1200);
    ck_assert_uint_eq(seen.sock[1], 0);
    ck_assert_uint_eq(seen.sock[2], 30);
    /* packages: the map given, no per-CPU times (busy unknown) */
    ck_assert_uint_eq(seen.nmap, 2);
    ck_assert_int_eq(seen.map0, 0);
    ck_assert_double_eq_tol(seen.busy0, -1, TOL);
    ck_assert_int_eq(seen.last_cpu_99, -1);
    /* per-process network bytes over the window: 100 x pid */
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(seen.net_rc[k], 0);
        ck_assert_uint_eq(seen.net_kind0[k], 100 * (uint64_t)(101 + k));
        ck_assert_uint_eq(seen.net_rxtx[k], 100 * (uint64_t)(101 + k));
    }
    /* no cycles counter declared: the split weighs CPU time */
    ck_assert_int_eq(seen.sw.ci, -1);
    ck_assert(!seen.sw.cycles);
    /* the formula's watts reach the reports */
    pa_power p;
    ck_assert_int_eq(pa_pid_power(ctx, 102, &p), 0);
    ck_assert_double_eq_tol(p.total_w, 102, TOL);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* The calls that need no window: errors, probes by name, file helpers. */
START_TEST(test_helpers_outside_a_window)
{
    ck_assert_int_eq(pa_error_set(-EINVAL, "probe: bad %s", "value"), -EINVAL);
    ck_assert_str_eq(pa_last_error(), "probe: bad value");

    char *root = pa_test_tmpdir();
    pa_test_write(root, "sys/x/value", " 42 rest\n");
    char sysfs[4200];
    snprintf(sysfs, sizeof(sysfs), "%s/sys", root);

    char path[64];
    ck_assert_int_eq(pa_path_join(path, sizeof(path), "/r", "a/%d", 7), 0);
    ck_assert_str_eq(path, "/r/a/7");
    ck_assert_int_eq(pa_path_join(path, 4, "/r", "a/%d", 7), -ENAMETOOLONG);
    char buf[64];
    ck_assert_int_eq(pa_file_read(sysfs, "x/value", buf, sizeof(buf)), 9);
    const char *q = buf;
    uint64_t v = 0;
    ck_assert_int_eq(pa_u64_parse(&q, &v), 0);
    ck_assert_uint_eq(v, 42);
    ck_assert_str_eq(q, " rest\n");
    ck_assert_int_eq(pa_u64_parse(&q, &v), -EINVAL);
    ck_assert_int_lt(pa_file_read(sysfs, "x/none", buf, sizeof(buf)), 0);
    int cpus[8];
    ck_assert_int_eq(pa_cpulist_parse("0-2,5", cpus, 8), 4);
    ck_assert_int_eq(cpus[3], 5);

    /* the database of the build tree: a driver it has no record of */
    pa_hwdb_nic nic;
    ck_assert_int_eq(pa_hwdb_nic_find(NULL, "no-such-driver-x", &nic), -ENOENT);
    pa_hwdb_cpu cpu;
    ck_assert_int_eq(pa_hwdb_volt_parse("800:0.75+3200:1.1", &cpu, buf, sizeof(buf)), 0);
    ck_assert_uint_eq(cpu.nvolt, 2);
    ck_assert_double_eq_tol(cpu.volt[1].volt, 1.1, TOL);
    ck_assert_int_eq(pa_hwdb_volt_parse("x", &cpu, buf, sizeof(buf)), -EINVAL);
    pa_test_rmtree(root);
}
END_TEST

/* pa_env_probe from a formula's probe: the sensor's answer by name, and
 * -ENOENT for a name no module has. */
static int probed_rc = 1, unknown_rc = 1;
static char probed_why[128], unknown_why[128];

static int env_probe_probe(const pa_env *env, char *why, size_t len)
{
    probed_rc = pa_env_probe(env, "probe-sensor", probed_why, sizeof(probed_why));
    unknown_rc = pa_env_probe(env, "no-such-module", unknown_why, sizeof(unknown_why));
    snprintf(why, len, "probed");
    return 0;
}

static const pa_module_ops env_prober = {
    .abi = PA_MODULE_ABI,
    .name = "env-prober",
    .kind = PA_FORMULA,
    .description = "probes others by name",
    .probe = env_probe_probe,
    .compute = probe_compute,
    .component_name = "probe2",
};

START_TEST(test_env_probe_by_name)
{
    char *root = pa_test_tmpdir();
    pa_ctx *ctx = probe_ctx(root);
    ck_assert_int_eq(pa_module_register(ctx, &env_prober), 0);
    pa_module_info mi;
    ck_assert_int_eq(pa_module_get(ctx, "env-prober", &mi), 0);
    ck_assert_int_eq(probed_rc, 0); /* no probe callback: it runs */
    ck_assert_str_eq(probed_why, "");
    ck_assert_int_eq(unknown_rc, -ENOENT);
    ck_assert_ptr_nonnull(strstr(unknown_why, "no-such-module"));
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("modhelp");
    TCase *tc = tcase_create("modhelp");
    tcase_add_test(tc, test_window_through_the_helpers);
    tcase_add_test(tc, test_helpers_outside_a_window);
    tcase_add_test(tc, test_env_probe_by_name);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
