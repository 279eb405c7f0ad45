/*
 * test_components.c - a component the core does not know, brought by a
 * user program through the public API only: a sensor that discovers the
 * tasks (PA_MOD_DISCOVERS_TASKS) and three "gpu" formulas of module ABI 3
 * with auto ranks and fits callbacks.  Auto must pick the best one that
 * fits; the reports, `powerapi modules`' listing and monitor's JSON and
 * CSV records must carry the component by name.  Also the ABI check and
 * the component limit at registration.
 *
 * The gpu sensor hands its readings to the gpu formulas with
 * pa_frame_put / pa_delta_get (cumulative joules per process and for the
 * device), as a GPU sensor and formula would, with no change to the
 * library.  Exact arithmetic: per 1 s window pid 101 uses 0.5 s of CPU
 * and 5 J of GPU, pid 102 1 s and 10 J, the device 30 J.
 */
#include "cli.h"
#include "output.h"
#include "powerapi.h"
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOL 1e-9

static uint64_t cpu_ns[2]; /* pids 101, 102 */

static int fake_sample(pa_module *m, pa_frame *f)
{
    (void)m;
    for (int i = 0; i < 2; i++) {
        int rc = pa_frame_set_cpu_ns(f, 101 + i, 0, cpu_ns[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static const pa_module_ops fake_sensor = {
    .abi = PA_MODULE_ABI,
    .name = "fake-cpu",
    .kind = PA_SENSOR,
    .description = "scripted CPU times",
    .sample = fake_sample,
    .flags = PA_MOD_DISCOVERS_TASKS,
};

/* The gpu sensor's readings: cumulative joules of the device and of
 * each process using it. */
typedef struct gpu_reading {
    double device_j;
    int32_t pid[2];
    double j[2];
} gpu_reading;

static double gpu_j[2], gpu_device_j;

static int gpu_sample(pa_module *m, pa_frame *f)
{
    (void)m;
    gpu_reading g = {gpu_device_j, {101, 102}, {gpu_j[0], gpu_j[1]}};
    return pa_frame_put(f, "gpu", &g, sizeof(g));
}

static const pa_module_ops gpu_sensor = {
    .abi = PA_MODULE_ABI,
    .name = "fake-gpu",
    .kind = PA_SENSOR,
    .description = "scripted GPU energy counters",
    .sample = gpu_sample,
};

/* Watts from the difference of two readings, by pid. */
static int gpu_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *out)
{
    (void)m;
    size_t n = 0, pn = 0;
    const void *prev = NULL;
    const gpu_reading *cur = pa_delta_get(d, "gpu", &n, &prev, &pn);
    const gpu_reading *old = prev;
    if (!cur || !old || n != sizeof(*cur) || pn != sizeof(*old))
        return 0; /* first window of the sensor */
    double s = pa_delta_interval_s(d);
    for (size_t i = 0; i < pa_delta_count(d); i++)
        for (int k = 0; k < 2; k++)
            if (pa_delta_type(d, i) == PA_TARGET_PROCESS && pa_delta_pid(d, i) == cur->pid[k])
                pa_table_set_target_w(out, i, (cur->j[k] - old->j[k]) / s);
    pa_table_set_system_w(out, (cur->device_j - old->device_j) / s, 0);
    return 0;
}

static const char *const gpu_requires[] = {"fake-gpu", NULL};

static int gpu_absent(const pa_env *env, char *why, size_t len)
{
    (void)env;
    snprintf(why, len, "test: no such GPU here");
    return 0;
}

static int gpu_present(const pa_env *env, char *why, size_t len)
{
    (void)env;
    snprintf(why, len, "test: a GPU is present");
    return 1;
}

/* Three formulas of the gpu component: gpu-measured is ranked first but
 * does not fit here, gpu-model fits, gpu-floor fits too but ranks last. */
#define GPU_FORMULA(nm, rank, fit)                                                                 \
    {                                                                                              \
        .abi = PA_MODULE_ABI, .name = nm, .kind = PA_FORMULA,                                      \
        .description = "a gpu formula of the test", .compute = gpu_compute,                        \
        .requires = gpu_requires, .component_name = "gpu", .auto_rank = rank, .fits = fit,         \
    }
static const pa_module_ops gpu_measured = GPU_FORMULA("gpu-measured", 20, gpu_absent);
static const pa_module_ops gpu_model = GPU_FORMULA("gpu-model", 10, gpu_present);
static const pa_module_ops gpu_floor = GPU_FORMULA("gpu-floor", 5, NULL);

/* A procfs with pids 101 and 102, an empty sysfs; the built-in sensors
 * disabled, so that auto's only candidates are the gpu formulas. */
static pa_ctx *gpu_ctx(char *root)
{
    char procfs[4200], sysfs[4200];
    pa_test_write(root, "proc/101/stat", "101 (render) S 1\n");
    pa_test_write(root, "proc/102/stat", "102 (train) S 1\n");
    snprintf(procfs, sizeof(procfs), "%s/proc", root);
    snprintf(sysfs, sizeof(sysfs), "%s/sys", root);
    mkdir(sysfs, 0755);
    pa_ctx_opts o = {.procfs = procfs, .sysfs = sysfs};
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, &o), 0);
    ck_assert_int_eq(pa_module_disable(ctx, "procfs-cpu"), 0);
    ck_assert_int_eq(pa_module_disable(ctx, "nic"), 0);
    ck_assert_int_eq(pa_module_register(ctx, &fake_sensor), 0);
    ck_assert_int_eq(pa_module_register(ctx, &gpu_sensor), 0);
    ck_assert_int_eq(pa_module_register(ctx, &gpu_measured), 0);
    ck_assert_int_eq(pa_module_register(ctx, &gpu_model), 0);
    ck_assert_int_eq(pa_module_register(ctx, &gpu_floor), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "fake-cpu", NULL), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, 101, 0), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, 102, 0), 0);
    return ctx;
}

/* The readings of the next 1 s window. */
static void step(void)
{
    cpu_ns[0] += 500000000ull;
    cpu_ns[1] += 1000000000ull;
    gpu_j[0] += 5;
    gpu_j[1] += 10;
    gpu_device_j += 30;
}

static void readings_reset(void)
{
    cpu_ns[0] = cpu_ns[1] = 0;
    gpu_j[0] = gpu_j[1] = gpu_device_j = 0;
}

/* Two windows of 1 s. */
static void run_two_windows(pa_ctx *ctx)
{
    readings_reset();
    ck_assert_int_eq(pa_tick_at(ctx, 1000000000ull), 0);
    for (int w = 1; w <= 2; w++) {
        step();
        ck_assert_int_eq(pa_tick_at(ctx, (uint64_t)(w + 1) * 1000000000ull), 0);
    }
}

static size_t target_index(const pa_report *r, pid_t pid)
{
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_PROCESS && r->targets[i].pid == pid)
            return i;
    ck_abort_msg("pid %d not in the report", (int)pid);
    return 0;
}

START_TEST(auto_picks_by_rank_and_fits)
{
    char *root = pa_test_tmpdir();
    pa_ctx *ctx = gpu_ctx(root);
    run_two_windows(ctx);
    pa_module_info mi;
    ck_assert_int_eq(pa_module_get(ctx, "gpu-model", &mi), 0);
    ck_assert(mi.enabled && mi.by_auto && !mi.user);
    ck_assert_str_eq(mi.auto_why, "test: a GPU is present");
    ck_assert_int_eq(mi.component, 3);
    ck_assert_str_eq(pa_component_name(ctx, mi.component), "gpu");
    ck_assert_str_eq(pa_component_name(ctx, PA_COMP_CPU), "cpu");
    ck_assert_str_eq(pa_component_name(ctx, PA_COMP_NIC), "nic");
    ck_assert_ptr_null(pa_component_name(ctx, 4));
    /* its sensor came with it, for it */
    ck_assert_int_eq(pa_module_get(ctx, "fake-gpu", &mi), 0);
    ck_assert(mi.enabled && !mi.user);
    ck_assert_str_eq(mi.required_by, "gpu-model");
    ck_assert_int_eq(pa_module_get(ctx, "gpu-measured", &mi), 0);
    ck_assert(!mi.enabled);
    ck_assert_int_eq(pa_module_get(ctx, "gpu-floor", &mi), 0);
    ck_assert(!mi.enabled);
    /* one formula per component: enabling another by name replaces
     * auto's, and a second one of the user's is refused naming "gpu" */
    ck_assert_int_eq(pa_module_enable(ctx, "gpu-floor", NULL), 0);
    ck_assert_int_eq(pa_module_get(ctx, "gpu-model", &mi), 0);
    ck_assert(!mi.enabled);
    ck_assert_int_eq(pa_module_enable(ctx, "gpu-model", NULL), -EBUSY);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "the gpu power is already "
                                                  "computed by gpu-floor"));
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(report_carries_the_component)
{
    char *root = pa_test_tmpdir();
    pa_ctx *ctx = gpu_ctx(root);
    run_two_windows(ctx);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_str_eq(r->formula, "gpu-model");
    ck_assert_uint_eq(r->ncomponents, 3);
    ck_assert_str_eq(r->component_names[0], "cpu");
    ck_assert_str_eq(r->component_names[1], "nic");
    ck_assert_str_eq(r->component_names[2], "gpu");
    ck_assert_double_eq_tol(r->system_component_w[2], 30, TOL);
    ck_assert_double_eq_tol(r->system_component_j[2], 60, TOL);
    ck_assert_double_eq_tol(r->system_component_w[0], 0, TOL);
    /* totals sum every component */
    ck_assert_double_eq_tol(r->system.total_w, 30, TOL);
    ck_assert_double_eq_tol(r->system.total_j, 60, TOL);
    ck_assert_double_eq_tol(r->system.cpu_w, 0, TOL);
    size_t i = target_index(r, 102), j = target_index(r, 101);
    ck_assert_double_eq_tol(r->target_component_w[i * 3 + 2], 10, TOL);
    ck_assert_double_eq_tol(r->target_component_j[i * 3 + 2], 20, TOL);
    ck_assert_double_eq_tol(r->target_component_w[j * 3 + 2], 5, TOL);
    ck_assert_double_eq_tol(r->target_component_j[j * 3 + 2], 10, TOL);
    ck_assert_double_eq_tol(r->targets[i].power.total_w, 10, TOL);
    ck_assert_double_eq_tol(r->targets[i].power.total_j, 20, TOL);
    ck_assert_double_eq_tol(r->targets[i].power.cpu_w, 0, TOL);
    pa_power p;
    ck_assert_int_eq(pa_pid_power(ctx, 101, &p), 0);
    ck_assert_double_eq_tol(p.total_w, 5, TOL);
    ck_assert_double_eq_tol(p.total_j, 10, TOL);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* monitor's records and `powerapi modules` (the CLI's writers) */
START_TEST(outputs_name_the_component)
{
    char *root = pa_test_tmpdir();
    pa_ctx *ctx = gpu_ctx(root);
    run_two_windows(ctx);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    const rp_out_format fmts[3] = {RP_OUT_JSON, RP_OUT_CSV, RP_OUT_TABLE};
    char *out[3];
    for (int k = 0; k < 3; k++)
        ck_assert_ptr_nonnull(out[k] = rp_out_report_text(r, fmts[k]));
    ck_assert_msg(strstr(out[0], "\"power_w\":{\"cpu\":0,\"nic\":0,\"gpu\":30,"
                                 "\"total\":30,\"idle\":0}"),
                  "%s", out[0]);
    ck_assert_msg(strstr(out[0], "\"energy_j\":{\"cpu\":0,\"nic\":0,\"gpu\":60,"
                                 "\"total\":60}"),
                  "%s", out[0]);
    ck_assert_msg(strstr(out[0], "\"pid\":102,\"comm\":\"\",\"cpu_time_s\":1,"
                                 "\"power_w\":{\"cpu\":0,\"nic\":0,\"gpu\":10,"
                                 "\"total\":10},\"energy_j\":{\"cpu\":0,"
                                 "\"nic\":0,\"gpu\":20,\"total\":20}"),
                  "%s", out[0]);
    /* after the fixed columns (the last: the cgroup names' unit) */
    ck_assert_msg(strstr(out[1], ",unit,processes,exits,power_w.gpu,energy_j.gpu\n"), "%s", out[1]);
    ck_assert_msg(strstr(out[1], "\nprocess,3,1,102,,,,1,0,0,10,,0,0,20,,,,,,,,,"
                                 ",,,,,,,,,10,20\n"),
                  "%s", out[1]);
    ck_assert_msg(strstr(out[1], "\nsystem,3,1,,,,,0,0,0,30,0,0,0,60,gpu-model,"
                                 "model,,fake-cpu+fake-gpu,,,,,,,,,,,,,none,30,60\n"),
                  "%s", out[1]);
    /* serve's metrics page */
    static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    char *page = NULL;
    size_t plen = 0;
    ck_assert_int_eq(cli_serve_exchange(r, get, sizeof(get) - 1, &page, &plen), 0);
    char *text = strndup(page, plen);
    ck_assert_msg(strstr(text, "powerapi_system_power_watts{component=\"gpu\"}"
                               " 30\n"),
                  "%s", text);
    free(text);
    free(page);
    /* the table's system line names it; TOTAL W includes it */
    ck_assert_msg(strstr(out[2], "system    30.00 W  (cpu 0.00 W, of which "
                                 "idle 0.00 W; gpu 30.00 W)"),
                  "%s", out[2]);
    free(out[0]);
    free(out[1]);
    free(out[2]);

    char *list = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&list, &len);
    ck_assert_int_eq(cli_modules_print(ctx, f, RP_OUT_TABLE), 0);
    fclose(f);
    ck_assert_msg(strstr(list, "gpu-model    formula  gpu  yes       auto"), "%s", list);
    ck_assert_msg(strstr(list, "chosen by auto: test: a GPU is present"), "%s", list);
    free(list);
    f = open_memstream(&list, &len);
    ck_assert_int_eq(cli_modules_print(ctx, f, RP_OUT_JSON), 0);
    fclose(f);
    ck_assert_msg(strstr(list, "\"name\":\"gpu-floor\",\"kind\":\"formula\","
                               "\"component\":\"gpu\""),
                  "%s", list);
    free(list);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* The daemon's ring carries the component: reads and aggregates of its
 * windows name it and give its watts and joules. */
START_TEST(ring_carries_the_component)
{
    char *root = pa_test_tmpdir();
    pa_ctx *ctx = gpu_ctx(root);
    char name[64];
    snprintf(name, sizeof(name), "pa-test-comp-%d", (int)getpid());
    pa_ring_writer *w = NULL;
    ck_assert_int_eq(pa_ring_create(name, NULL, &w), 0);
    readings_reset();
    ck_assert_int_eq(pa_tick_at(ctx, 1000000000ull), 0);
    for (int k = 1; k <= 2; k++) {
        step();
        ck_assert_int_eq(pa_tick_at(ctx, (uint64_t)(k + 1) * 1000000000ull), 0);
        pa_report *r = NULL;
        ck_assert_int_eq(pa_report_get(ctx, &r), 0);
        ck_assert_int_eq(pa_ring_publish(w, r), 0);
        pa_report_free(r);
    }
    pa_ring_reader *rd = NULL;
    ck_assert_int_eq(pa_ring_open(name, &rd), 0);
    uint64_t seq = 0;
    const pa_report *r = NULL;
    ck_assert_int_eq(pa_ring_aggregate(rd, &seq, 0, &r), 0); /* both */
    ck_assert_uint_eq(r->ncomponents, 3);
    ck_assert_str_eq(r->component_names[2], "gpu");
    ck_assert_double_eq_tol(r->system_component_w[2], 30, TOL);
    ck_assert_double_eq_tol(r->system_component_j[2], 60, TOL);
    ck_assert_double_eq_tol(r->system.total_w, 30, TOL);
    size_t i = target_index(r, 102);
    ck_assert_double_eq_tol(r->target_component_w[i * 3 + 2], 10, TOL);
    ck_assert_double_eq_tol(r->target_component_j[i * 3 + 2], 20, TOL);
    ck_assert_double_eq_tol(r->target_component_w[i * 3 + 0], 0, TOL);
    seq = 1; /* the second window alone */
    ck_assert_int_eq(pa_ring_read(rd, &seq, &r), 0);
    ck_assert_uint_eq(seq, 2);
    ck_assert_uint_eq(r->ncomponents, 3);
    i = target_index(r, 101);
    ck_assert_double_eq_tol(r->target_component_w[i * 3 + 2], 5, TOL);
    ck_assert_double_eq_tol(r->target_component_j[i * 3 + 2], 10, TOL);
    ck_assert_double_eq_tol(r->system_component_j[2], 60, TOL);
    pa_ring_close(rd);
    pa_ring_destroy(w);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(registration_checks)
{
    char *root = pa_test_tmpdir();
    pa_ctx *ctx = gpu_ctx(root);
    pa_module_ops t = gpu_floor;
    t.name = "from-the-future";
    t.abi = PA_MODULE_ABI + 1;
    ck_assert_int_eq(pa_module_register(ctx, &t), -EINVAL);
    ck_assert_msg(strstr(pa_last_error(),
                         "module 'from-the-future': module "
                         "table abi 4, this library (" PA_VERSION_STRING ") speaks abi 1 "
                         "to 3 (rebuild the module"),
                  "%s", pa_last_error());
    t.abi = 0;
    ck_assert_int_eq(pa_module_register(ctx, &t), -EINVAL);
    t = gpu_floor;
    t.name = "bad-comp";
    t.component_name = "GPU!";
    ck_assert_int_eq(pa_module_register(ctx, &t), -EINVAL);
    t.component_name = "gpu";
    t.flags = PA_MOD_DISCOVERS_TASKS; /* flags are for sensors */
    ck_assert_int_eq(pa_module_register(ctx, &t), -EINVAL);
    t = fake_sensor;
    t.name = "bad-flags";
    t.flags = 0x80;
    ck_assert_int_eq(pa_module_register(ctx, &t), -EINVAL);
    t.flags = 0;
    t.component_name = "gpu"; /* a component is for formulas */
    ck_assert_int_eq(pa_module_register(ctx, &t), -EINVAL);
    /* cpu, nic, gpu, then five more: the ninth component is refused */
    static pa_module_ops more[6];
    static char names[6][2][16];
    for (int i = 0; i < 6; i++) {
        more[i] = gpu_floor;
        snprintf(names[i][0], sizeof(names[i][0]), "extra-%d", i);
        snprintf(names[i][1], sizeof(names[i][1]), "comp%d", i);
        more[i].name = names[i][0];
        more[i].component_name = names[i][1];
        ck_assert_int_eq(pa_module_register(ctx, &more[i]), i < 5 ? 0 : -ENOSPC);
    }
    ck_assert_str_eq(pa_component_name(ctx, PA_MAX_COMPONENTS), "comp4");
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("components");
    TCase *tc = tcase_create("user");
    tcase_add_test(tc, auto_picks_by_rank_and_fits);
    tcase_add_test(tc, report_carries_the_component);
    tcase_add_test(tc, outputs_name_the_component);
    tcase_add_test(tc, ring_carries_the_component);
    tcase_add_test(tc, registration_checks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
