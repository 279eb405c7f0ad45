/*
 * test_gpu_nvml.c - NVIDIA GPU power per process through NVML (issue 28:
 * sensors/nvml.c, formulas/gpu_share.c's nvml-share), on the stand-in
 * library (tests/nvml_standin.c) and a scripted timeline, one step a
 * window of 1 s (explicit clock), idle=20W:
 *
 *  - GPU 0 (H100, energy counter): +100 J a window; processes 4001 and
 *    4002 at 75 and 25 % SM give 60 and 20 W of its 80 W active.  The
 *    samples of the priming step (10 / 90 %) stay in the driver's buffer:
 *    read twice, they would change the split.
 *  - GPU 1 (no energy counter: power, 50 W, integrated): 4003 alone, 30 W.
 *  - GPU 2 (MIG, two partitions, 90 J a window): 70 W active unattributed,
 *    said; its process 4004 gets nothing.
 *  Then 4002 stops and 4005 starts (50 / 50 %: 40 and 40 W), GPU 0's
 *  counter resets (no reading that window), GPU 1 is lost (said) and comes
 *  back.  Every window: processes + idle + unattributed = the devices'.
 *  And the reader on each NVML error code, and the modules' lines.
 */
#include "../sensors/gpu.h"
#include "../sensors/nvml_api.h"
#include "cli.h"
#include "output.h"
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S 1000000000ull
#define TOL 1e-9

#define DEV0 "dev 0 uuid=GPU-0a0a bus=00000000:3B:00.0 name=NVIDIA_H100_80GB_HBM3 power=100000 "
#define DEV1 "dev 1 uuid=GPU-1b1b bus=00000000:5E:00.0 name=Tesla_P100 energy=none power=50000\n"
#define DEV2 "dev 2 uuid=GPU-2c2c bus=00000000:86:00.0 name=NVIDIA_A100 power=90000 mig=1 "
#define MIGS "mig 2 uuid=MIG-aaaa\nmig 2 uuid=MIG-bbbb\nproc 2 compute pid=4004 mem=4096\n"
#define PROCS1 "proc 1 graphics pid=4003 mem=3072\n"

/* The timeline: step k's GPU 0 energy, samples and processes. */
static const char *const timeline =
    "step\n" DEV0 "energy=1000000\n" DEV1 DEV2 "energy=2000000\n" MIGS PROCS1
    "util 0 pid=4001 ts=900000 sm=10\nutil 0 pid=4002 ts=900000 sm=90\n"
    "util 1 pid=4003 ts=900000 sm=40\n"
    "proc 0 compute pid=4001 mem=1024\nproc 0 compute pid=4002 mem=2048\n"
    /* 1: 75 / 25 */
    "step\n" DEV0 "energy=1100000\n" DEV1 DEV2 "energy=2090000\n" MIGS PROCS1
    "util 0 pid=4001 ts=1500000 sm=75\nutil 0 pid=4002 ts=1500000 sm=25\n"
    "util 0 pid=4001 ts=1900000 sm=75\nutil 0 pid=4002 ts=1900000 sm=25\n"
    "util 1 pid=4003 ts=1900000 sm=40\n"
    "proc 0 compute pid=4001 mem=1024\nproc 0 compute pid=4002 mem=2048\n"
    /* 2: 4002 gone, 4005 started, 50 / 50 */
    "step\n" DEV0 "energy=1200000\n" DEV1 DEV2 "energy=2180000\n" MIGS PROCS1
    "util 0 pid=4001 ts=2900000 sm=50\nutil 0 pid=4005 ts=2900000 sm=50\n"
    "util 1 pid=4003 ts=2900000 sm=40\n"
    "proc 0 compute pid=4001 mem=1024\nproc 0 compute pid=4005 mem=1024\n"
    /* 3: GPU 0's counter reset */
    "step\n" DEV0 "energy=5000\n" DEV1 DEV2 "energy=2270000\n" MIGS PROCS1
    "util 0 pid=4001 ts=3900000 sm=50\nutil 0 pid=4005 ts=3900000 sm=50\n"
    "util 1 pid=4003 ts=3900000 sm=40\n"
    /* 4: GPU 1 lost */
    "step\n" DEV0 "energy=105000\n" DEV1 DEV2 "energy=2360000\n" MIGS PROCS1
    "util 0 pid=4001 ts=4900000 sm=75\nutil 0 pid=4005 ts=4900000 sm=25\n"
    "fail * 1 15\n"
    /* 5: GPU 1 back */
    "step\n" DEV0 "energy=205000\n" DEV1 DEV2 "energy=2450000\n" MIGS PROCS1
    "util 0 pid=4001 ts=5900000 sm=75\nutil 0 pid=4005 ts=5900000 sm=25\n"
    "util 1 pid=4003 ts=5900000 sm=40\n";

/* Process pid, a child of 4001 when it is 4002 (the tree case). */
static void proc_stat(const char *root, int pid)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
    pa_test_write(root, rel,
                  "%d (cuda%d) S %d %d %d 0 -1 4194560 100 0 0 0 10 0 0 0 20 0 1 0 5000 1000000 "
                  "100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
                  pid, pid, pid == 4002 ? 4001 : 1, pid, pid);
}

static void script(const char *root, const char *text)
{
    pa_test_write(root, "nvml.script", "%s", text);
    char path[4200];
    snprintf(path, sizeof(path), "%s/nvml.script", root);
    setenv("PA_NVML_SCRIPT", path, 1);
}

static void step(int k)
{
    char v[16];
    snprintf(v, sizeof(v), "%d", k);
    setenv("PA_NVML_STEP", v, 1);
}

static int gpu_k(const pa_report *r)
{
    for (size_t k = 0; k < r->ncomponents; k++)
        if (!strcmp(r->component_names[k], "gpu"))
            return (int)k;
    return -1;
}

static double gpu_w(const pa_report *r, pid_t pid)
{
    const pa_target_info *t = pa_test_target(r, PA_TARGET_PROCESS, pid);
    return t ? r->target_component_w[(size_t)(t - r->targets) * r->ncomponents + (size_t)gpu_k(r)]
             : 0;
}

/* One window: the processes' watts, and conservation against the known
 * idle (20 W a device read) and unattributed parts. */
static pa_report *window(pa_ctx *ctx, int k, double devices_w, double idle_unattr_w)
{
    step(k);
    ck_assert_int_eq(pa_tick_at(ctx, (uint64_t)(k + 1) * S), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    int g = gpu_k(r);
    ck_assert_msg(g >= 0, "window %d: no gpu component", k);
    double sum = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_PROCESS)
            sum += r->target_component_w[i * r->ncomponents + (size_t)g];
    fprintf(stderr, "window %d: devices %.3f W, processes %.3f W, idle+unattributed %.3f W\n", k,
            r->system_component_w[g], sum, idle_unattr_w);
    ck_assert_double_eq_tol(r->system_component_w[g], devices_w, TOL);
    ck_assert_double_eq_tol(sum + idle_unattr_w, devices_w, TOL); /* exact */
    return r;
}

/* A context on the timeline, primed (its first tick at step 0), watching
 * every process, or the tree of 4001 when tree. */
static pa_ctx *timeline_ctx(char **root, int tree)
{
    *root = pa_test_fixture_copy("vm-nocpufreq");
    for (int pid = 4001; pid <= 4005; pid++)
        proc_stat(*root, pid);
    script(*root, timeline);
    setenv("POWERAPI_NVML_LIBRARY", PA_NVML_STANDIN, 1);
    step(0);
    pa_ctx *ctx = pa_test_ctx(*root);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", NULL), 0);
    int rc = pa_module_enable(ctx, "nvml-share", "idle=20W");
    ck_assert_msg(rc == 0, "nvml-share: %s", pa_last_error());
    if (tree)
        ck_assert_int_eq(pa_watch_pid(ctx, 4001, PA_WATCH_CHILDREN), 0);
    else
        ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * S), 0);
    return ctx;
}

START_TEST(split_by_sm_utilisation)
{
    char *root;
    pa_ctx *ctx = timeline_ctx(&root, 0);
    /* 1: 100 + 50 + 90 W; idle 3 x 20, MIG's 70 unattributed */
    pa_report *r = window(ctx, 1, 240, 60 + 70);
    ck_assert_double_eq_tol(gpu_w(r, 4001), 60, 0.6); /* within 1 % */
    ck_assert_double_eq_tol(gpu_w(r, 4002), 20, 0.2);
    ck_assert_double_eq_tol(gpu_w(r, 4003), 30, 0.3);
    ck_assert_double_eq_tol(gpu_w(r, 4004), 0, TOL);
    ck_assert_msg(strstr(r->assumed, "gpu 00000000:3B:00.0 (nvidia): "
                                     "nvmlDeviceGetTotalEnergyConsumption (measured)") &&
                      strstr(r->assumed, "nvmlDeviceGetPowerUsage (1 s average, integrated)") &&
                      strstr(r->assumed, "gpu 00000000:86:00.0: active power unattributed: MIG "
                                         "mode, 2 partition(s) MIG-aaaa MIG-bbbb: power is known "
                                         "for the whole board only") &&
                      strstr(r->assumed, "gpu: idle 20.00 W a device (idle= option)"),
                  "%s", r->assumed);
    pa_report_free(r);
    /* 2: 4002 gone, 4005 new at 50 / 50 */
    r = window(ctx, 2, 240, 130);
    ck_assert_double_eq_tol(gpu_w(r, 4001), 40, 0.4);
    ck_assert_double_eq_tol(gpu_w(r, 4005), 40, 0.4);
    ck_assert_double_eq_tol(gpu_w(r, 4002), 0, TOL);
    pa_report_free(r);
    /* 3: GPU 0's counter went back: no reading from it (its idle 0 W) */
    r = window(ctx, 3, 140, 40 + 70);
    ck_assert_double_eq_tol(gpu_w(r, 4001), 0, TOL);
    pa_report_free(r);
    /* 4: GPU 1 lost, said */
    r = window(ctx, 4, 190, 40 + 70);
    ck_assert_double_eq_tol(gpu_w(r, 4001), 60, 0.6);
    ck_assert_double_eq_tol(gpu_w(r, 4005), 20, 0.2);
    ck_assert_msg(strstr(r->assumed, "gpu 1 left out: NVML_ERROR_GPU_IS_LOST"), "%s", r->assumed);
    pa_report_free(r);
    /* 5: back, its process with this window's samples only */
    r = window(ctx, 5, 240, 130);
    ck_assert_double_eq_tol(gpu_w(r, 4003), 30, 0.3);
    ck_assert_msg(!strstr(r->assumed, "left out"), "%s", r->assumed);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* A tree (monitor -- COMMAND, --pid) gets its processes' sum: 4001 and
 * its child 4002, 60 + 20 W. */
START_TEST(tree_sums_members)
{
    char *root;
    pa_ctx *ctx = timeline_ctx(&root, 1);
    step(1);
    ck_assert_int_eq(pa_tick_at(ctx, 2 * S), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    const pa_target_info *t = pa_test_target(r, PA_TARGET_TREE, 4001);
    ck_assert_ptr_nonnull(t);
    double w = r->target_component_w[(size_t)(t - r->targets) * r->ncomponents + (size_t)gpu_k(r)];
    ck_assert_double_eq_tol(w, 80, 0.8);
    /* monitor -- COMMAND's last record names the GPU's joules too (on a
     * real H200 it gave cpu and nic, and a total 6,178 J larger) */
    double gj = r->target_component_j[(size_t)(t - r->targets) * r->ncomponents + (size_t)gpu_k(r)];
    const rp_out_format fmts[3] = {RP_OUT_JSON, RP_OUT_TABLE, RP_OUT_CSV};
    for (int k = 0; k < 3; k++) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        ck_assert_ptr_nonnull(f);
        rp_out o;
        rp_out_init(&o, f, fmts[k]);
        o.command_columns = 1;
        rp_out_command c = {.pid = 4001, .duration_s = 1, .cpu_time_s = -1, .last = r};
        ck_assert_int_eq(pa_tree_power(ctx, 4001, &c.energy), 0);
        if (k == 2)
            ck_assert_int_eq(rp_out_report(&o, r), 0); /* the header */
        ck_assert_int_eq(rp_out_command_end(&o, &c), 0);
        rp_out_fini(&o);
        fclose(f);
        double got = -1;
        if (k == 0) {
            static const char key[] = "\"nic\":0,\"gpu\":";
            const char *at = strstr(text, key);
            got = at ? strtod(at + sizeof(key) - 1, NULL) : -1;
        } else if (k == 1) {
            char want[64];
            snprintf(want, sizeof(want), "%16.2f J  gpu\n", gj);
            got = strstr(text, want) ? gj : -1;
        } else { /* the command row's field under the header's energy_j.gpu */
            int col = 0;
            for (const char *h = text; *h && *h != '\n'; h++)
                if (*h == ',')
                    col++;
                else if (!strncmp(h, "energy_j.gpu", 12) && h[-1] == ',')
                    break;
            const char *row = strstr(text, "\ncommand,");
            for (int c2 = 0; row && c2 < col; c2++)
                row = strchr(row + 1, ',');
            got = row ? strtod(row + 1, NULL) : -1;
        }
        ck_assert_msg(gj > 79 && fabs(got - gj) < 1e-3, "gpu %.6f J, not %.6f, in:\n%s", got, gj,
                      text);
        free(text);
    }
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* Started under load (issue 28, seen on a real H200: a monitor started
 * while a job ran took the job's 690 W for the idle and gave the job
 * nothing): GPU 0 at 100 W with 4001 and 4002 busy (75 / 25 %) from the
 * first window, 30 W with nobody busy, then 100 W again. */
static const char *const loaded =
    "step\n" DEV0 "energy=1000000\n"
    "util 0 pid=4001 ts=900000 sm=75\nutil 0 pid=4002 ts=900000 sm=25\n"
    "proc 0 compute pid=4001 mem=1024\nproc 0 compute pid=4002 mem=2048\n"
    "step\n" DEV0 "energy=1100000\n"
    "util 0 pid=4001 ts=1900000 sm=75\nutil 0 pid=4002 ts=1900000 sm=25\n"
    "proc 0 compute pid=4001 mem=1024\nproc 0 compute pid=4002 mem=2048\n"
    "step\n" DEV0 "energy=1200000\n"
    "util 0 pid=4001 ts=2900000 sm=75\nutil 0 pid=4002 ts=2900000 sm=25\n"
    "proc 0 compute pid=4001 mem=1024\nproc 0 compute pid=4002 mem=2048\n"
    "step\n" DEV0 "energy=1230000\n"
    "proc 0 compute pid=4001 mem=1024\nproc 0 compute pid=4002 mem=2048\n"
    "step\n" DEV0 "energy=1330000\n"
    "util 0 pid=4001 ts=4900000 sm=75\nutil 0 pid=4002 ts=4900000 sm=25\n"
    "proc 0 compute pid=4001 mem=1024\nproc 0 compute pid=4002 mem=2048\n";

START_TEST(idle_not_seen_under_load)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    for (int pid = 4001; pid <= 4002; pid++)
        proc_stat(root, pid);
    script(root, loaded);
    setenv("POWERAPI_NVML_LIBRARY", PA_NVML_STANDIN, 1);
    step(0);
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "nvml-share", NULL), 0);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * S), 0);
    /* 1, 2: busy in every window so far: the whole 100 W split */
    for (int k = 1; k <= 2; k++) {
        pa_report *r = window(ctx, k, 100, 0);
        ck_assert_double_eq_tol(gpu_w(r, 4001), 75, 0.75);
        ck_assert_double_eq_tol(gpu_w(r, 4002), 25, 0.25);
        ck_assert_msg(strstr(r->assumed, "gpu 00000000:3B:00.0: idle not seen yet (a process "
                                         "busy on it in every window): its whole power split"),
                      "%s", r->assumed);
        ck_assert_double_eq_tol(r->devices[0].idle_w, 0, TOL);
        pa_report_free(r);
    }
    /* 3: nobody busy (both still hold it): 30 W, all idle */
    pa_report *r = window(ctx, 3, 30, 30);
    ck_assert_double_eq_tol(gpu_w(r, 4001), 0, TOL);
    pa_report_free(r);
    /* 4: 100 W again: 70 W active, 52.5 / 17.5 */
    r = window(ctx, 4, 100, 30);
    ck_assert_double_eq_tol(gpu_w(r, 4001), 52.5, 0.525);
    ck_assert_double_eq_tol(gpu_w(r, 4002), 17.5, 0.175);
    ck_assert_double_eq_tol(r->devices[0].idle_w, 30, TOL);
    ck_assert_msg(!strstr(r->assumed, "idle not seen yet"), "%s", r->assumed);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* The devices in the report, monitor's JSON and table, the exporter. */
START_TEST(outputs)
{
    char *root;
    pa_ctx *ctx = timeline_ctx(&root, 0);
    pa_report *r = window(ctx, 1, 240, 130);
    ck_assert_int_eq((int)r->ndevices, 3);
    const pa_device_info *d = &r->devices[0];
    ck_assert_str_eq(d->vendor, "nvidia");
    ck_assert_str_eq(d->uuid, "GPU-0a0a");
    ck_assert_str_eq(d->source, "measured");
    ck_assert_str_eq(r->devices[1].source, "integrated");
    ck_assert_double_eq_tol(d->power_w, 100, TOL);
    ck_assert_double_eq_tol(d->idle_w, 20, TOL);
    ck_assert_double_eq_tol(d->energy_j, 100, TOL);
    ck_assert_int_eq(r->devices[2].split, 0); /* MIG */
    char *out[2];
    const rp_out_format fmts[2] = {RP_OUT_JSON, RP_OUT_TABLE};
    for (int k = 0; k < 2; k++)
        ck_assert_ptr_nonnull(out[k] = rp_out_report_text(r, fmts[k]));
    ck_assert_msg(strstr(out[0], "\"devices\":[{\"index\":0,\"component\":\"gpu\",\"vendor\":"
                                 "\"nvidia\",\"name\":\"NVIDIA H100 80GB HBM3\",\"uuid\":"
                                 "\"GPU-0a0a\",\"bus\":\"00000000:3B:00.0\",\"source\":"
                                 "\"measured\",\"power_w\":100,\"idle_w\":20,\"energy_j\":100,"
                                 "\"split\":true}"),
                  "%s", out[0]);
    ck_assert_msg(strstr(out[1], "gpu       100.00 W  (idle 20.00 W)  energy 100.00 J  nvidia 0 "
                                 "NVIDIA H100 80GB HBM3 GPU-0a0a  00000000:3B:00.0  measured") &&
                      strstr(out[1], "gpu       90.00 W  (idle 20.00 W, the rest unattributed)"),
                  "%s", out[1]);
    size_t len = 0;
    char *page = cli_serve_page(r, 0, "n1", 0, &len);
    ck_assert_msg(
        strstr(page, "powerapi_gpu_power_watts{index=\"1\",uuid=\"GPU-1b1b\",name=\"Tesla P100\","
                     "vendor=\"nvidia\",bus=\"00000000:5E:00.0\",source=\"integrated\"} 50\n") &&
            strstr(page, "powerapi_gpu_energy_joules_total{index=\"0\"") &&
            strstr(page, "powerapi_process_gpu_power_watts{pid=\"4001\",comm=\"cuda4001\"} 60\n") &&
            !strstr(page, "powerapi_process_gpu_power_watts{pid=\"4004\""),
        "%s", page);
    free(page);
    free(out[0]);
    free(out[1]);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

static pa_nvml *open_standin(const char *root, const char *text)
{
    script(root, text);
    step(0);
    char why[512] = "";
    pa_nvml *s = NULL;
    int rc = pa_nvml_open(PA_NVML_STANDIN, &s, why, sizeof(why));
    ck_assert_msg(rc == 0, "%s", why);
    return s;
}

/* Step k read: its return code, the reading and why. */
static int read_step(pa_nvml *s, int k, pa_gpu_reading *r, char *why)
{
    step(k);
    why[0] = '\0';
    return pa_nvml_read(s, r, why, 512);
}

#define TWO DEV0 "energy=1000\n" DEV1 "util 0 pid=7 ts=10 sm=30\nproc 1 compute pid=8 mem=5\n"

START_TEST(error_codes)
{
    char *root = pa_test_tmpdir();
    pa_nvml *s = open_standin(
        root, "step\n" TWO "fail nvmlDeviceGetTotalEnergyConsumption 0 3\n"           /* 0 */
              "step\n" TWO "fail nvmlDeviceGetProcessUtilization 0 4\n"               /* 1 */
              "step\n" TWO "fail nvmlDeviceGetComputeRunningProcesses_v3 1 4\n"       /* 2 */
              "step\n" TWO "fail nvmlDeviceGetPowerUsage 1 3\n"                       /* 3 */
              "step\n" TWO "fail nvmlDeviceGetCount_v2 -1 1\n"                        /* 4 */
              "step\n" TWO                                                            /* 5 */
              "step\n" TWO "fail nvmlDeviceGetCount_v2 -1 9\nfail nvmlInit_v2 -1 9\n" /* 6 */
              "step\n" TWO "fail * -1 15\n"                                           /* 7 */
              "step\n" TWO "fail nvmlDeviceGetUUID 0 999\n");                         /* 8 */
    pa_gpu_reading *r = calloc(1, sizeof(*r));
    char why[512];
    /* no energy counter: its power, integrated */
    ck_assert_int_eq(read_step(s, 0, r, why), 0);
    ck_assert_int_eq(r->ndev, 2);
    ck_assert_int_eq(r->dev[0].source, PA_GPU_POWER_AVG);
    ck_assert_double_eq_tol(r->dev[0].power_w, 100, TOL);
    ck_assert_str_eq(r->dev[0].uuid, "GPU-0a0a");
    ck_assert_str_eq(r->dev[0].pdev, "00000000:3B:00.0");
    ck_assert_int_eq(r->nproc, 2); /* 7 sampled on 0, 8 running on 1 */
    ck_assert_uint_eq(r->proc[1].mem_bytes, 5);
    /* utilisation not permitted: the device's active power unattributed */
    ck_assert_int_eq(read_step(s, 1, r, why), 0);
    ck_assert_msg(strstr(r->dev[0].nosplit, "NVML_ERROR_NO_PERMISSION"), "%s", r->dev[0].nosplit);
    ck_assert_int_eq(read_step(s, 2, r, why), 0);
    ck_assert_msg(strstr(r->note, "gpu 1: running processes not listed: NVML_ERROR_NO_PERMISSION"),
                  "%s", r->note);
    /* a device with neither counter nor power: left out, said */
    ck_assert_int_eq(read_step(s, 3, r, why), 0);
    ck_assert_int_eq(r->ndev, 1);
    ck_assert_msg(strstr(r->note, "gpu 1 left out: NVML_ERROR_NOT_SUPPORTED"), "%s", r->note);
    /* uninitialised: this window fails, named; the next initialises again */
    ck_assert_int_eq(read_step(s, 4, r, why), -EAGAIN);
    ck_assert_msg(strstr(why, "nvmlDeviceGetCount_v2: NVML_ERROR_UNINITIALIZED"), "%s", why);
    ck_assert_int_eq(read_step(s, 5, r, why), 0);
    ck_assert_int_eq(r->ndev, 2);
    /* the driver unloaded, then init fails until it is back */
    ck_assert_int_lt(read_step(s, 6, r, why), 0);
    ck_assert_int_lt(read_step(s, 6, r, why), 0);
    ck_assert_msg(strstr(why, "nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED (the NVIDIA kernel "
                              "driver is not loaded"),
                  "%s", why);
    ck_assert_int_eq(read_step(s, 5, r, why), 0);
    /* every GPU lost: the window fails, naming it; an unknown error */
    ck_assert_int_eq(read_step(s, 7, r, why), -ENODEV);
    ck_assert_msg(strstr(why, "NVML_ERROR_GPU_IS_LOST"), "%s", why);
    ck_assert_int_eq(read_step(s, 8, r, why), 0);
    ck_assert_msg(strstr(r->note, "gpu 0 left out: NVML_ERROR_UNKNOWN"), "%s", r->note);
    pa_nvml_close(s);
    /* the library absent */
    ck_assert_int_eq(pa_nvml_open("/nonexistent/libnvidia-ml.so.1", &s, why, sizeof(why)), -ENODEV);
    ck_assert_msg(strstr(why, "nvml: /nonexistent/libnvidia-ml.so.1 not loaded"), "%s", why);
    /* every code the reader tells apart has its name and cause */
    static const int codes[] = {1,  2,  3,  4,  6,  7,  8,  9,  10, 11, 12, 13,
                                14, 15, 16, 17, 18, 20, 21, 23, 27, 28, 999};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        ck_assert_msg(!strncmp(pa_nvml_cause(codes[i]), "NVML_ERROR_", 11) &&
                          strchr(pa_nvml_cause(codes[i]), '('),
                      "%d: %s", codes[i], pa_nvml_cause(codes[i]));
    free(r);
    pa_test_rmtree(root);
}
END_TEST

/* A list larger than the first buffer: grown on INSUFFICIENT_SIZE. */
START_TEST(long_lists)
{
    char *root = pa_test_tmpdir();
    char *text = malloc(64 * 1024);
    size_t n = (size_t)snprintf(text, 64 * 1024, "step\n%s", DEV0 "energy=1\n");
    for (int pid = 100; pid < 300; pid++)
        n +=
            (size_t)snprintf(text + n, 64 * 1024 - n, "util 0 pid=%d ts=5 sm=%d\n", pid, pid % 100);
    pa_nvml *s = open_standin(root, text);
    pa_gpu_reading *r = calloc(1, sizeof(*r));
    char why[512];
    ck_assert_int_eq(read_step(s, 0, r, why), 0);
    ck_assert_int_eq(r->nproc, 200);
    ck_assert_double_eq_tol(r->proc[199].busy_s, 0.99, TOL); /* pid 299 at 99 % */
    /* the same samples again: already seen */
    ck_assert_int_eq(read_step(s, 0, r, why), 0);
    ck_assert_int_eq(r->nproc, 0);
    pa_nvml_close(s);
    free(r);
    free(text);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(modules_say_why)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    /* on a fixture tree, NVML only when named */
    unsetenv("POWERAPI_NVML_LIBRARY");
    ck_assert_int_eq(pa_module_enable(ctx, "nvml-share", NULL), -ENODEV);
    ck_assert_msg(strstr(pa_last_error(), "not this machine's /sys: NVML is used only there"), "%s",
                  pa_last_error());
    /* library= named by the user is tried where the probe found nothing
     * (the README's nvml:library=PATH on a machine without the driver) */
    script(root, "step\n" TWO);
    step(0);
    ck_assert_msg(pa_module_enable(ctx, "nvml", "library=" PA_NVML_STANDIN) == 0, "%s",
                  pa_last_error());
    ck_assert_int_eq(pa_module_disable(ctx, "nvml"), 0);
    setenv("POWERAPI_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    ck_assert_int_eq(pa_module_enable(ctx, "nvml", NULL), -ENODEV);
    ck_assert_msg(strstr(pa_last_error(), "/nonexistent/libnvidia-ml.so.1 not loaded"), "%s",
                  pa_last_error());
    /* library= loads another one (the probe's is the stand-in) */
    setenv("POWERAPI_NVML_LIBRARY", PA_NVML_STANDIN, 1);
    script(root, "step\n" TWO);
    step(0);
    ck_assert_int_eq(pa_module_enable(ctx, "nvml", "library=/nonexistent/x.so"), -ENODEV);
    ck_assert_msg(strstr(pa_last_error(), "/nonexistent/x.so not loaded") &&
                      strstr(pa_last_error(), "check library="),
                  "%s", pa_last_error());
    ck_assert_int_eq(pa_module_enable(ctx, "nvml", "library=" PA_NVML_STANDIN), 0);
    /* reconfigured at run time: a bad library is refused and the sensor
     * keeps running on the old one; disabled and enabled again */
    ck_assert_int_eq(pa_module_enable(ctx, "nvml", "library=/nonexistent/y.so"), -ENODEV);
    pa_module_info mi;
    ck_assert_int_eq(pa_module_get(ctx, "nvml", &mi), 0);
    ck_assert(mi.enabled);
    ck_assert_int_eq(pa_module_disable(ctx, "nvml"), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "nvml", NULL), 0);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpu_nvml");
    TCase *tc = tcase_create("nvml");
    tcase_add_test(tc, split_by_sm_utilisation);
    tcase_add_test(tc, outputs);
    tcase_add_test(tc, tree_sums_members);
    tcase_add_test(tc, idle_not_seen_under_load);
    tcase_add_test(tc, error_codes);
    tcase_add_test(tc, long_lists);
    tcase_add_test(tc, modules_say_why);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
