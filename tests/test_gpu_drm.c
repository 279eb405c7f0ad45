/*
 * test_gpu_drm.c - GPU power per process for AMD and Intel through hwmon
 * and DRM fdinfo (issue 28: sensors/drm_gpu.c, formulas/gpu_share.c), on
 * trees laid out as amdgpu and i915 machines lay them out.
 *
 * card0 (amdgpu, power1_average 30 W) and card1 (i915, energy1_input +10 J
 * a second); a connector (card0-DP-1) that is no device.  Process 4001 has
 * one client on card0, busy 0.75 s in the window; process 4002 one client
 * on card0 (0.25 s) held by two descriptors, and one on card1 (0.5 s).
 * With idle=6W: card0's 24 W of active power splits 18 / 6, card1's 4 W
 * goes to 4002 alone; the processes and the idle parts sum to the devices'
 * 40 W exactly.  Then: nobody busy (all of it the system's, said), an
 * energy counter that goes back (no reading that window), the fdinfo
 * parser on the keys of the kernel's document, and the modules' lines
 * where there is no GPU.
 */
#include "../sensors/gpu.h"
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOL 1e-9
#define S 1000000000ull

static void proc_client(const char *root, int pid, int fd, const char *pdev, int client,
                        double busy_s, const char *driver)
{
    char rel[256], link[4300], dir[4200];
    snprintf(rel, sizeof(rel), "proc/%d/fdinfo/%d", pid, fd);
    pa_test_write(root, rel,
                  "pos:\t0\nflags:\t02100002\nmnt_id:\t24\ndrm-driver:\t%s\ndrm-pdev:\t%s\n"
                  "drm-client-id:\t%d\ndrm-engine-gfx:\t%llu ns\ndrm-engine-compute:\t0 ns\n"
                  "drm-engine-capacity-gfx:\t2\ndrm-memory-vram:\t1024 KiB\n",
                  driver, pdev, client, (unsigned long long)(busy_s * 1e9));
    snprintf(dir, sizeof(dir), "%s/proc/%d/fd", root, pid);
    mkdir(dir, 0755);
    snprintf(link, sizeof(link), "%s/%d", dir, fd);
    unlink(link);
    ck_assert_int_eq(symlink("/dev/dri/renderD128", link), 0);
}

static void proc_stat(const char *root, int pid, const char *comm, int ticks)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
    pa_test_write(root, rel,
                  "%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 %d 0 0 0 20 0 1 0 5000 1000000 100 "
                  "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
                  pid, comm, pid, pid, ticks);
}

/* The machine at window k (0, 1): busy times grow, card1's energy too. */
static void machine(const char *root, int k)
{
    pa_test_write(root, "sys/class/drm/card0/device/uevent",
                  "DRIVER=amdgpu\nPCI_CLASS=30000\nPCI_SLOT_NAME=0000:03:00.0\n");
    pa_test_write(root, "sys/class/drm/card0/device/hwmon/hwmon2/power1_average", "30000000\n");
    pa_test_write(root, "sys/class/drm/card0-DP-1/status", "connected\n");
    pa_test_write(root, "sys/class/drm/card1/device/uevent",
                  "DRIVER=i915\nPCI_SLOT_NAME=0000:00:02.0\n");
    pa_test_write(root, "sys/class/drm/card1/device/hwmon/hwmon5/energy1_input", "%llu\n",
                  100000000ull + (unsigned long long)k * 10000000ull);
    proc_stat(root, 4001, "render", 10 + 50 * k);
    proc_stat(root, 4002, "encode", 10 + 30 * k);
    proc_client(root, 4001, 3, "0000:03:00.0", 7, 1.0 + 0.75 * k, "amdgpu");
    proc_client(root, 4002, 3, "0000:03:00.0", 9, 2.0 + 0.25 * k, "amdgpu");
    proc_client(root, 4002, 4, "0000:03:00.0", 9, 2.0 + 0.25 * k, "amdgpu"); /* same client */
    proc_client(root, 4002, 5, "0000:00:02.0", 3, 0.5 + 0.5 * k, "i915");
}

/* The gpu component's index in r, -1 when absent. */
static int gpu_k(const pa_report *r)
{
    for (size_t k = 0; k < r->ncomponents; k++)
        if (!strcmp(r->component_names[k], "gpu"))
            return (int)k;
    return -1;
}

static double target_gpu_w(const pa_report *r, pid_t pid)
{
    int k = gpu_k(r);
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_PROCESS && r->targets[i].pid == pid)
            return r->target_component_w[i * r->ncomponents + (size_t)k];
    return -1;
}

static pa_ctx *gpu_ctx(const char *root)
{
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", NULL), 0);
    int rc = pa_module_enable(ctx, "gpu-share", "idle=6W");
    ck_assert_msg(rc == 0, "gpu-share: %s", pa_last_error());
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    return ctx;
}

START_TEST(split_by_engine_time)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    machine(root, 0);
    pa_ctx *ctx = gpu_ctx(root);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * S), 0);
    machine(root, 1);
    ck_assert_int_eq(pa_tick_at(ctx, 2 * S), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    int k = gpu_k(r);
    ck_assert_msg(k >= 0, "no gpu component");
    double w1 = target_gpu_w(r, 4001), w2 = target_gpu_w(r, 4002);
    fprintf(stderr, "gpu: 4001 %.3f W, 4002 %.3f W, system %.3f W (idle %.3f W)\n", w1, w2,
            r->system_component_w[k], 12.0);
    ck_assert_double_eq_tol(w1, 18, TOL);    /* 24 W x 0.75 / 1.0 */
    ck_assert_double_eq_tol(w2, 6 + 4, TOL); /* card0 0.25, card1 alone */
    ck_assert_double_eq_tol(r->system_component_w[k], 40, TOL);
    double sum = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_PROCESS)
            sum += r->target_component_w[i * r->ncomponents + (size_t)k];
    ck_assert_double_eq_tol(sum + 12, 40, TOL); /* processes + idle = devices */
    ck_assert_msg(strstr(r->assumed, "0000:03:00.0 (amdgpu): power1_average") &&
                      strstr(r->assumed, "0000:00:02.0 (i915): energy1_input (measured)") &&
                      strstr(r->assumed, "idle 6.00 W a device (idle= option)"),
                  "%s", r->assumed);
    pa_report_free(r);
    /* nobody busy: the active power stays the system's, said */
    machine(root, 1);
    pa_test_write(root, "sys/class/drm/card1/device/hwmon/hwmon5/energy1_input", "%llu\n",
                  120000000ull);
    ck_assert_int_eq(pa_tick_at(ctx, 3 * S), 0);
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_double_eq_tol(target_gpu_w(r, 4001) + target_gpu_w(r, 4002), 0, TOL);
    ck_assert_double_eq_tol(r->system_component_w[k], 40, TOL);
    ck_assert_msg(strstr(r->assumed, "no process busy"), "%s", r->assumed);
    pa_report_free(r);
    /* the energy counter goes back (a reset): no card1 reading that window */
    pa_test_write(root, "sys/class/drm/card1/device/hwmon/hwmon5/energy1_input", "5\n");
    ck_assert_int_eq(pa_tick_at(ctx, 4 * S), 0);
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_double_eq_tol(r->system_component_w[k], 30, TOL); /* card0 alone */
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(fdinfo_keys)
{
    pa_gpu_client c;
    /* xe with cycles, two engines, a capacity (not time) */
    ck_assert_int_eq(pa_gpu_fdinfo_parse("drm-driver:\txe\ndrm-pdev:\t0000:00:02.0\n"
                                         "drm-client-id:\t42\ndrm-engine-rcs:\t1000 ns\n"
                                         "drm-engine-vcs:\t500 ns\ndrm-engine-capacity-vcs:\t2\n"
                                         "drm-cycles-rcs:\t123\ndrm-total-cycles-rcs:\t456\n",
                                         &c),
                     0);
    ck_assert_str_eq(c.driver, "xe");
    ck_assert_str_eq(c.pdev, "0000:00:02.0");
    ck_assert_uint_eq(c.client_id, 42);
    ck_assert_uint_eq(c.busy_ns, 1500);
    /* not a DRM client; a truncated one; garbage values */
    ck_assert_int_eq(pa_gpu_fdinfo_parse("pos:\t0\nflags:\t02\n", &c), -ENOENT);
    ck_assert_int_eq(pa_gpu_fdinfo_parse("drm-driver:\tamdgpu\n", &c), -ENOENT);
    ck_assert_int_eq(pa_gpu_fdinfo_parse("drm-driver: i915\ndrm-client-id: 1\n"
                                         "drm-engine-render: lots\n",
                                         &c),
                     0);
    ck_assert_uint_eq(c.busy_ns, 0);
}
END_TEST

START_TEST(no_gpu_said)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "gpu-share", NULL), -ENODEV);
    ck_assert_msg(strstr(pa_last_error(), "no DRM device with a hwmon power or energy reading"),
                  "%s", pa_last_error());
    /* auto leaves the gpu out: no component in the report */
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * S), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 2 * S), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_int_lt(gpu_k(r), 0);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpu_drm");
    TCase *tc = tcase_create("drm");
    tcase_add_test(tc, split_by_engine_time);
    tcase_add_test(tc, fdinfo_keys);
    tcase_add_test(tc, no_gpu_said);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
