/*
 * test_host.c - the host's energy of a VM fed into its guest (issue 41;
 * DESIGN.md sections 18.1 and 18.2), on folders the test fills.
 *
 * The guest: the vm-nocpufreq fixture (a 2-vCPU KVM guest) with two
 * processes of the test's own, a (pid 100) and b (pid 200), busy 3:1 and
 * together every CPU-second of the window, so that every watt of the host's
 * figure is theirs and the expected watts are exact.  The host: the
 * powerapi-vm file the test writes under rootfs/run/powerapi-host, the
 * first usual mount point, so that auto picks host-share without a flag.
 * Each fault has its window and its words: the share gone (modelled, said
 * once), a host restart (new boot id) and a live migration (new host id)
 * counted as resets that add nothing, a stale file (refused after stale=
 * host windows, modelled), a counter wrap at max_energy_range_uj.  Then
 * the writer: rp_vmexport on reports of the test's own, its files exact.
 */
#include "internal.h"
#include "testutil.h"
#include "vmexport.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TOL 1e-9
#define DIR_REL "rootfs/run/powerapi-host"

typedef struct guest {
    char *root;
    pa_ctx *ctx;
    unsigned long busy, ua, ub; /* clock ticks (1/100 s) */
    uint64_t t_ns, seq, uj, range;
    bool gpu;        /* the export has gpu_energy_uj */
    uint64_t gpu_uj; /* its value */
    char boot[40], host[40];
    struct timespec t0;
} guest;

static void write_pid(const char *root, int pid, const char *comm, unsigned long ticks)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
    pa_test_write(root, rel,
                  "%d (%s) R 1 %d %d 0 -1 4194560 100 0 0 0 %lu 0 0 0 20 0 "
                  "1 0 %d 17530880 1043 18446744073709551615 0 0 0 0 0 0 0 "
                  "4096 0 0 0 0 17 0 0 0 0 0 0\n",
                  pid, comm, pid, pid, ticks, 40000 + pid);
}

/* The powerapi-vm file of the host's window seq (version 1), with the
 * GPU's key when g->gpu. */
static void write_export(guest *g)
{
    char gpu[64] = "";
    if (g->gpu)
        snprintf(gpu, sizeof(gpu), "gpu_energy_uj %llu\n", (unsigned long long)g->gpu_uj);
    pa_test_write(g->root, DIR_REL "/powerapi-vm",
                  "# written by test_host\nversion 1\nseq %llu\nboot_id %s\nhost_id %s\n"
                  "host h1\nvm web1\nuuid -\nhypervisor qemu\nsource measured\nformula "
                  "rapl-share\ncomponents package%s\ntime_ns %llu\ninterval_ns 1000000000\n"
                  "share 0.25\npower_w 4\npackage_energy_uj %llu\n%smax_energy_range_uj %llu\n",
                  (unsigned long long)g->seq, g->boot, g->host, g->gpu ? ",gpu" : "",
                  (unsigned long long)g->t_ns, (unsigned long long)g->uj, gpu,
                  (unsigned long long)g->range);
}

/* One window of 1 s: a and b busy 3:1 (the 2 vCPUs full), the host's
 * window seq + 1 adding joules j to the package counter and gpu_j to the
 * GPU's (when exported), wrapping at the range, when host. */
static void step_gpu(guest *g, double j, double gpu_j, bool host)
{
    g->busy += 200;
    g->ua += 150;
    g->ub += 50;
    pa_test_write(g->root, "proc/stat",
                  "cpu  %lu 0 0 1000 0 0 0 0 0 0\ncpu0 %lu 0 0 500 0 0 0 0 0 0\n"
                  "cpu1 %lu 0 0 500 0 0 0 0 0 0\nctxt 1\nbtime 1732190412\n",
                  g->busy, g->busy / 2, g->busy / 2);
    write_pid(g->root, 100, "a", g->ua);
    write_pid(g->root, 200, "b", g->ub);
    if (host) {
        g->seq++;
        g->uj = (g->uj + (uint64_t)llround(j * 1e6)) % g->range;
        g->gpu_uj = (g->gpu_uj + (uint64_t)llround(gpu_j * 1e6)) % g->range;
        write_export(g);
    }
    g->t_ns += 1000000000ull;
    int rc = pa_tick_at(g->ctx, g->t_ns);
    ck_assert_msg(rc == 0, "tick: %s", pa_last_error());
}

static void step(guest *g, double j, bool host)
{
    step_gpu(g, j, 0, host);
}

/* A guest whose host's export starts at package counter uj, and at GPU
 * counter gpu_uj when gpu (the key there from the start); with nvml, the
 * guest's own nvml sensor on the stand-in answering that timeline. */
static void guest_open_gpu(guest *g, const char *sensor_opts, uint64_t uj, bool gpu,
                           uint64_t gpu_uj, const char *nvml)
{
    memset(g, 0, sizeof(*g));
    g->gpu = gpu;
    g->gpu_uj = gpu_uj;
    clock_gettime(CLOCK_MONOTONIC, &g->t0);
    g->root = pa_test_fixture_copy("vm-nocpufreq");
    g->range = 262143328850ull;
    g->uj = uj;
    snprintf(g->boot, sizeof(g->boot), "boot-1");
    snprintf(g->host, sizeof(g->host), "host-1");
    char proc[4096], sys[4096], rootfs[4096];
    snprintf(proc, sizeof(proc), "%s/proc", g->root);
    snprintf(sys, sizeof(sys), "%s/sys", g->root);
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", g->root);
    write_export(g); /* seq 0: what the guest finds at start */
    pa_ctx_opts o = {.procfs = proc, .sysfs = sys, .rootfs = rootfs, .hwdb = PA_TEST_HWDB};
    ck_assert_int_eq(pa_ctx_new(&g->ctx, &o), 0);
    if (sensor_opts)
        ck_assert_int_eq(pa_module_enable(g->ctx, "host", sensor_opts), 0);
    if (nvml) {
        pa_test_write(g->root, "nvml.script", "%s", nvml);
        char script[4200];
        snprintf(script, sizeof(script), "%s/nvml.script", g->root);
        setenv("PA_NVML_SCRIPT", script, 1);
        int rc = pa_module_enable(g->ctx, "nvml", "library=" PA_NVML_STANDIN);
        ck_assert_msg(rc == 0, "nvml: %s", pa_last_error());
    }
    ck_assert_int_eq(pa_module_disable(g->ctx, "nic-linear"), 0);
    ck_assert_int_eq(pa_watch_all(g->ctx, 1), 0);
    g->t_ns = 1000000000ull;
    step(g, 0, false);
}

static void guest_open_at(guest *g, const char *sensor_opts, uint64_t uj)
{
    guest_open_gpu(g, sensor_opts, uj, false, 0, NULL);
}

static void guest_open(guest *g, const char *sensor_opts)
{
    guest_open_at(g, sensor_opts, 1000000);
}

static void guest_close(guest *g, const char *name)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "test_host %s: %.3f s\n", name,
            (double)(t1.tv_sec - g->t0.tv_sec) + (t1.tv_nsec - g->t0.tv_nsec) / 1e9);
    pa_ctx_free(g->ctx);
    pa_test_rmtree(g->root);
}

/* The last report, checked: a and b at 3:1 and the system's cpu watts w
 * (measured by the host or modelled), conserved; assumed holds want. */
static pa_report *check(guest *g, const char *source, double w, const char *want)
{
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(g->ctx, &r), 0);
    ck_assert_msg(!strcmp(r->cpu_source, source), "%s, not %s: %s", r->cpu_source, source,
                  r->assumed);
    if (w >= 0)
        ck_assert_double_eq_tol(r->system.cpu_w, w, TOL);
    const pa_target_info *a = pa_test_target(r, PA_TARGET_PROCESS, 100);
    const pa_target_info *b = pa_test_target(r, PA_TARGET_PROCESS, 200);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_double_eq_tol(a->power.cpu_w, 0.75 * r->system.cpu_w, TOL);
    ck_assert_double_eq_tol(b->power.cpu_w, 0.25 * r->system.cpu_w, TOL);
    if (want)
        ck_assert_msg(strstr(r->assumed, want) != NULL, "'%s' not in '%s'", want, r->assumed);
    return r;
}

static void check_free(guest *g, const char *source, double w, const char *want)
{
    pa_report_free(check(g, source, w, want));
}

/* No flag: auto finds the export at the first usual mount point and
 * splits the host's joules 3:1; the guest's total is the host's. */
START_TEST(auto_measured_by_host)
{
    guest g;
    guest_open(&g, NULL);
    double host_j = 0, guest_j = 0;
    for (int i = 0; i < 4; i++) {
        step(&g, 4.0 + i, true);
        char want[64];
        snprintf(want, sizeof(want), "host windows %d-%d", i + 1, i + 1);
        pa_report *r = check(&g, "host", 4.0 + i, want);
        ck_assert_ptr_nonnull(strstr(r->assumed, "host: measured (host): VM 'web1' as host "
                                                 "host-1 attributed it"));
        ck_assert_ptr_nonnull(strstr(r->formula, "host-share"));
        ck_assert(r->system.flags & PA_POWER_MEASURED);
        host_j += 4.0 + i;
        guest_j += r->system.cpu_w * r->interval_s;
        pa_report_free(r);
    }
    ck_assert_double_eq_tol(guest_j, host_j, TOL);
    /* a guest tick with no new host window adds nothing, and says so */
    step(&g, 0, false);
    check_free(&g, "host", 0, "no new host window (last 4)");
    guest_close(&g, "auto_measured_by_host");
}
END_TEST

/* The counter passes max_energy_range_uj: the step is the range's rest
 * plus the new value, said with the count. */
START_TEST(counter_wrap)
{
    guest g;
    guest_open_at(&g, NULL, 262143328850ull - 2500000);
    step(&g, 4.0, true); /* 262143328850 - 2.5 J + 4 J: 1.5 J after the wrap */
    ck_assert_uint_eq(g.uj, 1500000);
    check_free(&g, "host", 4.0,
               "host: counter wrapped at max_energy_range_uj 262143328850 (1 so far)");
    step(&g, 2.0, true);
    check_free(&g, "host", 2.0, "host windows 2-2");
    guest_close(&g, "counter_wrap");
}
END_TEST

/* A new boot id (the host restarted, its counters from 0) or a new host
 * id (a live migration: another host's counter) is a reset, not a jump:
 * that window adds nothing and says why; the next one counts again. */
static void reset_case(const char *name, bool migrate)
{
    guest g;
    guest_open(&g, NULL);
    step(&g, 4.0, true);
    check_free(&g, "host", 4.0, NULL);
    if (migrate) {
        snprintf(g.host, sizeof(g.host), "host-2");
        g.uj = 987654321000ull; /* another host's counter of this VM */
    } else {
        snprintf(g.boot, sizeof(g.boot), "boot-2");
        g.uj = 0;
        g.seq = 0;
    }
    step(&g, 0.5, true);
    pa_report *r = check(&g, "host", 0,
                         migrate ? "host: the VM moved to another host (new host id): counted "
                                   "from its new value, nothing added this window"
                                 : "host: the host restarted (new boot id): counted from its "
                                   "new value, nothing added this window");
    ck_assert(r->system.flags & PA_POWER_RAPL_RESET);
    pa_report_free(r);
    step(&g, 3.0, true);
    check_free(&g, "host", 3.0, migrate ? "as host host-2 attributed it" : "host windows 2-2");
    guest_close(&g, name);
}

START_TEST(host_restart)
{
    reset_case("host_restart", false);
}
END_TEST

START_TEST(live_migration)
{
    reset_case("live_migration", true);
}
END_TEST

/* The file not updated for stale=2 host windows: refused, the window
 * modelled (the default per-vCPU curve: 2 x (0.74 + 2.76 x 1) = 7 W at
 * full load), said once; counted again from the next window with two
 * readings. */
START_TEST(stale_file)
{
    guest g;
    guest_open(&g, "stale=2");
    step(&g, 4.0, true);
    check_free(&g, "host", 4.0, NULL);
    step(&g, 0, false);
    check_free(&g, "host", 0, "no new host window (last 1)");
    step(&g, 0, false);
    check_free(&g, "host", 0, "no new host window (last 1)");
    step(&g, 0, false);
    char want[4200];
    snprintf(want, sizeof(want),
             "host: %s/" DIR_REL " not updated for 2 host windows (seq 1): no reading of the "
             "host, the window is modelled (gone 0, stale 1 so far)",
             g.root);
    check_free(&g, "model", 7.0, want);
    step(&g, 0, false);
    pa_report *r = check(&g, "model", 7.0, "host-share: modelled: no reading of the host");
    ck_assert_ptr_null(strstr(r->assumed, "not updated")); /* said once */
    pa_report_free(r);
    step(&g, 4.0, true); /* read again; the window still has one reading */
    check_free(&g, "model", 7.0, "reads again (seq 2)");
    step(&g, 5.0, true);
    check_free(&g, "host", 5.0, "host windows 3-3");
    guest_close(&g, "stale_file");
}
END_TEST

/* The share goes away (unmounted, the VM's folder removed): modelled,
 * said once; back, measured again. */
START_TEST(share_gone)
{
    guest g;
    guest_open(&g, NULL);
    step(&g, 4.0, true);
    check_free(&g, "host", 4.0, NULL);
    pa_test_remove(g.root, DIR_REL "/powerapi-vm");
    step(&g, 0, false);
    check_free(&g, "model", 7.0,
               "powerapi-vm: No such file or directory: no reading of the host, the window is "
               "modelled (gone 1, stale 0 so far)");
    step(&g, 0, false);
    pa_report *r = check(&g, "model", 7.0, "host-share: modelled");
    ck_assert_ptr_null(strstr(r->assumed, "No such file")); /* said once */
    pa_report_free(r);
    step(&g, 4.0, true);
    check_free(&g, "model", 7.0, "reads again (seq 2)");
    step(&g, 6.0, true);
    check_free(&g, "host", 6.0, "host windows 3-3");
    guest_close(&g, "share_gone");
}
END_TEST

/* A file that does not parse, or of a later version, is no export: the
 * probe says why and auto models. */
START_TEST(bad_file_refused)
{
    guest g;
    guest_open(&g, NULL);
    pa_ctx_free(g.ctx);
    g.ctx = NULL;
    pa_test_write(g.root, DIR_REL "/powerapi-vm", "version 2\nseq 1\n");
    char proc[4096], sys[4096], rootfs[4096];
    snprintf(proc, sizeof(proc), "%s/proc", g.root);
    snprintf(sys, sizeof(sys), "%s/sys", g.root);
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", g.root);
    pa_ctx_opts o = {.procfs = proc, .sysfs = sys, .rootfs = rootfs, .hwdb = PA_TEST_HWDB};
    ck_assert_int_eq(pa_ctx_new(&g.ctx, &o), 0);
    ck_assert_int_lt(pa_module_enable(g.ctx, "host", NULL), 0);
    ck_assert_msg(strstr(pa_last_error(), "host: no export of the host at") != NULL, "%s",
                  pa_last_error());
    char path[4200];
    snprintf(path, sizeof(path), "path=%s/" DIR_REL, g.root);
    ck_assert_int_eq(pa_module_enable(g.ctx, "host", path), -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), "a required key is missing") != NULL, "%s",
                  pa_last_error());
    pa_test_write(g.root, DIR_REL "/powerapi-vm",
                  "version 2\nseq 1\nboot_id b\nhost_id h\ninterval_ns 1\n"
                  "package_energy_uj 1\nmax_energy_range_uj 10\n");
    ck_assert_int_eq(pa_module_enable(g.ctx, "host", path), -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), "version 2, this reader knows 1") != NULL, "%s",
                  pa_last_error());
    guest_close(&g, "bad_file_refused");
}
END_TEST

/* The gpu watts of target t of r (the system's when t is NULL). */
static double gpu_w(const pa_report *r, const pa_target_info *t)
{
    for (size_t k = 0; k < r->ncomponents; k++)
        if (!strcmp(r->component_names[k], "gpu"))
            return t ? r->target_component_w[(size_t)(t - r->targets) * r->ncomponents + k]
                     : r->system_component_w[k];
    ck_abort_msg("no gpu component: %s", r->formula);
    return NAN;
}

/* The window's GPU: the system's gpu watts w, measured (host) said by
 * its device record and assumed (with want), a and b given a_w and b_w.
 * Returns the window's GPU joules as the report gives them. */
static double check_gpu(guest *g, double w, double a_w, double b_w, const char *want)
{
    pa_report *r = check(g, "host", -1, want);
    ck_assert_msg(strstr(r->formula, "host-gpu-share") != NULL, "%s", r->formula);
    ck_assert_double_eq_tol(gpu_w(r, NULL), w, TOL);
    ck_assert_double_eq_tol(gpu_w(r, pa_test_target(r, PA_TARGET_PROCESS, 100)), a_w, TOL);
    ck_assert_double_eq_tol(gpu_w(r, pa_test_target(r, PA_TARGET_PROCESS, 200)), b_w, TOL);
    if (w > 0 || strstr(r->assumed, "gpu: measured (host)")) {
        ck_assert_uint_eq(r->ndevices, 1);
        ck_assert_str_eq(r->devices[0].source, "measured (host)");
        ck_assert_str_eq(r->devices[0].name, "host GPU share of VM web1");
        ck_assert_double_eq_tol(r->devices[0].power_w, w, TOL);
        ck_assert_int_eq(r->devices[0].split, a_w + b_w > 0);
    }
    double j = gpu_w(r, NULL) * r->interval_s;
    pa_report_free(r);
    return j;
}

/* The host exports the VM's GPU energy, the guest sees no per-process GPU
 * use: its GPU energy per window is the host's, unattributed, said; the
 * counter wraps; the key goes (no GPU reading, said) and comes back (a
 * new baseline: what the counter gained meanwhile is not counted). */
START_TEST(gpu_unattributed_key_and_wrap)
{
    guest g;
    guest_open_gpu(&g, NULL, 1000000, true, 262143328850ull - 1500000, NULL);
    step_gpu(&g, 4.0, 2.5, true); /* 1.5 J to the wrap, 1 J after it */
    ck_assert_uint_eq(g.gpu_uj, 1000000);
    double guest_j = check_gpu(&g, 2.5, 0, 0,
                               "gpu: unattributed: no process of this VM seen busy on a GPU (no "
                               "drm-gpu or nvml sensor with per-process use here)");
    check_free(&g, "host", 4.0, "host: counter wrapped at max_energy_range_uj 262143328850");
    step_gpu(&g, 4.0, 3.0, true);
    guest_j += check_gpu(&g, 3.0, 0, 0,
                         "gpu: measured (host): VM 'web1' GPU energy as host host-1 attributed it "
                         "(host formulas rapl-share)");
    ck_assert_double_eq_tol(guest_j, 2.5 + 3.0, TOL); /* the host's joules of windows 1-2 */
    g.gpu = false;                                    /* the host's GPU formula stopped */
    step_gpu(&g, 4.0, 0, true);
    check_gpu(&g, 0, 0, 0,
              "host: gpu_energy_uj gone from the host's export (no GPU formula on the host now)");
    check_free(&g, "host", 4.0,
               "host-gpu-share: no GPU reading of the host in this window (the host sensor "
               "says why): 0 W");
    g.gpu = true;
    g.gpu_uj += 7000000; /* gained while the key was gone: not this window's */
    step_gpu(&g, 4.0, 1.0, true);
    check_gpu(&g, 0, 0, 0,
              "host: gpu_energy_uj appeared in the host's export: the VM's GPU energy counted "
              "from the next host window");
    step_gpu(&g, 4.0, 2.0, true);
    check_gpu(&g, 2.0, 0, 0, "host windows 5-5");
    guest_close(&g, "gpu_unattributed_key_and_wrap");
}
END_TEST

/* The guest sees its processes' GPU use (its nvml, a vGPU: the stand-in,
 * a at 75 % and b at 25 % of the SMs): the host's GPU energy of the VM is
 * split 3:1, all of it (the host kept its GPUs' idle). */
START_TEST(gpu_split_by_guest_use)
{
    static const char timeline[] =
        "step\n"
        "dev 0 uuid=GPU-guest bus=00000000:05:00.0 name=vGPU energy=1000 denergy=1000 power=1000\n"
        "util 0 pid=100 ts=1000000 sm=75 mem=1\nutil 0 pid=200 ts=1000000 sm=25 mem=1\n"
        "proc 0 compute pid=100 mem=1048576\nproc 0 compute pid=200 mem=1048576\n";
    guest g;
    guest_open_gpu(&g, NULL, 1000000, true, 5000000, timeline);
    double host_j = 0, guest_j = 0;
    for (int i = 0; i < 3; i++) {
        step_gpu(&g, 4.0, 8.0 + i, true);
        guest_j += check_gpu(&g, 8.0 + i, 0.75 * (8.0 + i), 0.25 * (8.0 + i),
                             "gpu: split by this VM's processes' busy time on its 1 GPU(s)");
        host_j += 8.0 + i;
    }
    ck_assert_double_eq_tol(guest_j, host_j, TOL);
    guest_close(&g, "gpu_split_by_guest_use");
}
END_TEST

/* The writer: two VMs of a window (one named "ns/vmi", as KubeVirt's),
 * their folders' files exact; the next window adds to the counters, a
 * DRAM zone where the host has DRAM power, and the VM gone loses its
 * folder.  No temporary file is left. */
START_TEST(writer_files)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *root = pa_test_tmpdir(), dir[4200], proc[4400], why[256], host[64] = "";
    pa_test_write(root, "proc/sys/kernel/random/boot_id", "b00t-1d\n");
    pa_test_write(root, "rootfs/etc/machine-id", "0123abcd\n");
    snprintf(dir, sizeof(dir), "%s/export", root);
    snprintf(proc, sizeof(proc), "%s/proc", root);
    char rootfs[4200];
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", root);
    gethostname(host, sizeof(host) - 1);
    rp_vmexport *x = NULL;
    ck_assert_int_eq(rp_vmexport_new(&x, dir, proc, rootfs, 10000000, why, sizeof(why)), 0);
    pa_vm_info v1 = {.name = "web1", .uuid = "u-1", .hypervisor = "qemu", .pid = 10};
    pa_vm_info v2 = {.name = "ns/vmi", .hypervisor = "qemu", .pid = 20};
    pa_target_info t[3] = {
        {.type = PA_TARGET_VM, .vm = &v1, .power = {.cpu_w = 2.0, .total_w = 2.5}},
        {.type = PA_TARGET_VM, .vm = &v2, .power = {.cpu_w = 1.0, .total_w = 1.0}},
        {.type = PA_TARGET_VM, .vm = NULL, .power = {.cpu_w = 3.0, .total_w = 3.0}}};
    pa_report r = {.time_ns = 5000000000ull,
                   .interval_s = 1.0,
                   .formula = "cpu-tdp",
                   .cpu_source = "model",
                   .ntargets = 3,
                   .targets = t,
                   .system = {.cpu_w = 8, .idle_w = 2, .total_w = 10}};
    ck_assert_int_eq(rp_vmexport_window(x, &r, why, sizeof(why)), 0);
    char want[1024], *got;
    snprintf(want, sizeof(want),
             "# powerapi-vm: this VM's energy as its host attributed it (DESIGN.md 18.1)\n"
             "version 1\nseq 1\nboot_id b00t-1d\nhost_id 0123abcd\nhost %s\nvm web1\n"
             "uuid u-1\nhypervisor qemu\nsource modelled\nformula cpu-tdp\n"
             "components package\ntime_ns 5000000000\ninterval_ns 1000000000\n"
             "share 0.250000\npower_w 2.000000\npackage_energy_uj 2000000\n"
             "max_energy_range_uj 10000000\n",
             host);
    snprintf(proc, sizeof(proc), "%s/web1/powerapi-vm", dir);
    ck_assert_str_eq((got = pa_test_slurp(proc)), want);
    free(got);
    snprintf(proc, sizeof(proc), "%s/ns_vmi/intel-rapl:0/energy_uj", dir);
    ck_assert_str_eq((got = pa_test_slurp(proc)), "1000000\n");
    free(got);
    snprintf(proc, sizeof(proc), "%s/web1/intel-rapl:0/name", dir);
    ck_assert_str_eq((got = pa_test_slurp(proc)), "package-0\n");
    free(got);
    snprintf(proc, sizeof(proc), "%s/web1/intel-rapl:0/max_energy_range_uj", dir);
    ck_assert_str_eq((got = pa_test_slurp(proc)), "10000000\n");
    free(got);

    /* window 2: web1 alone, 4.5 W for 2 s (wraps at 10 J), DRAM 1.2 W of
     * which web1's part is 4.5 / 6 of the host's active CPU power */
    t[0].power.cpu_w = 4.5;
    r.ntargets = 1;
    r.interval_s = 2.0;
    r.dram_w = 1.2;
    r.cpu_source = "rapl";
    ck_assert_int_eq(rp_vmexport_window(x, &r, why, sizeof(why)), 0);
    snprintf(proc, sizeof(proc), "%s/web1/intel-rapl:0/energy_uj", dir);
    ck_assert_str_eq((got = pa_test_slurp(proc)), "1000000\n"); /* 2 + 9 J - 10 J */
    free(got);
    snprintf(proc, sizeof(proc), "%s/web1/intel-rapl:0:0/energy_uj", dir);
    ck_assert_str_eq((got = pa_test_slurp(proc)), "1800000\n"); /* 1.2 x 0.75 x 2 s */
    free(got);
    snprintf(proc, sizeof(proc), "%s/web1/powerapi-vm", dir);
    got = pa_test_slurp(proc);
    ck_assert_ptr_nonnull(strstr(got, "\nseq 2\n"));
    ck_assert_ptr_nonnull(strstr(got, "\nsource measured\n"));
    ck_assert_ptr_nonnull(strstr(got, "\ncomponents package,dram\n"));
    ck_assert_ptr_nonnull(strstr(got, "\npackage_energy_uj 1000000\ndram_energy_uj 1800000\n"));
    free(got);
    snprintf(proc, sizeof(proc), "%s/ns_vmi", dir);
    struct stat sb;
    ck_assert_int_lt(stat(proc, &sb), 0); /* gone with its VM */

    /* windows 3-5: the host's GPU formula gives web1 0.75 W, then 4.5 W
     * (the GPU counter wraps at 10 J), then stops (no gpu component) */
    static const char *const comps[] = {"cpu", "nic", "gpu"};
    double cw[3] = {4.5, 0, 0.75}, cj[3] = {0, 0, 0};
    r.ncomponents = 3;
    r.component_names = comps;
    r.target_component_w = cw;
    r.target_component_j = cj;
    ck_assert_int_eq(rp_vmexport_window(x, &r, why, sizeof(why)), 0);
    snprintf(proc, sizeof(proc), "%s/web1/intel-rapl:0:1/name", dir);
    ck_assert_str_eq((got = pa_test_slurp(proc)), "gpu\n");
    free(got);
    snprintf(proc, sizeof(proc), "%s/web1/intel-rapl:0:1/energy_uj", dir);
    ck_assert_str_eq((got = pa_test_slurp(proc)), "1500000\n"); /* 0.75 W x 2 s */
    free(got);
    snprintf(proc, sizeof(proc), "%s/web1/powerapi-vm", dir);
    got = pa_test_slurp(proc);
    ck_assert_ptr_nonnull(strstr(got, "\ncomponents package,dram,gpu\n"));
    ck_assert_ptr_nonnull(strstr(got, "\ndram_energy_uj 3600000\ngpu_energy_uj 1500000\n"));
    ck_assert_ptr_nonnull(strstr(got, "\nversion 1\n")); /* a key more: still version 1 */
    free(got);
    cw[2] = 4.5;
    ck_assert_int_eq(rp_vmexport_window(x, &r, why, sizeof(why)), 0);
    snprintf(proc, sizeof(proc), "%s/web1/intel-rapl:0:1/energy_uj", dir);
    ck_assert_str_eq((got = pa_test_slurp(proc)), "500000\n"); /* 1.5 + 9 J - 10 J */
    free(got);
    r.ncomponents = 0;
    r.component_names = NULL;
    r.target_component_w = r.target_component_j = NULL;
    ck_assert_int_eq(rp_vmexport_window(x, &r, why, sizeof(why)), 0);
    snprintf(proc, sizeof(proc), "%s/web1/intel-rapl:0:1", dir);
    ck_assert_int_lt(stat(proc, &sb), 0); /* gone with the host's GPU formula */
    snprintf(proc, sizeof(proc), "%s/web1/powerapi-vm", dir);
    got = pa_test_slurp(proc);
    ck_assert_ptr_null(strstr(got, "gpu_energy_uj"));
    ck_assert_ptr_nonnull(strstr(got, "\ncomponents package,dram\nt"));
    ck_assert_ptr_nonnull(strstr(got, "\nseq 5\n"));
    free(got);
    char cmd[4400], *out = NULL;
    snprintf(cmd, sizeof(cmd), "find '%s' -name '.*.tmp' | wc -l", dir);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    ck_assert_str_eq(out, "0\n");
    free(out);
    rp_vmexport_free(x);
    pa_test_rmtree(root);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "test_host writer_files: %.3f s\n",
            (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
}
END_TEST

/* One VM of hypervisor pid 10 or 20 (its command line cl, n bytes, under
 * root/proc) exported for a window of cpu_w watts; the export (free it). */
static rp_vmexport *export_vm(const char *root, pa_vm_info *v, const char *cl, size_t n,
                              double cpu_w)
{
    char dir[4200], proc[4200], why[256], path[4400];
    snprintf(path, sizeof(path), "%s/proc/%d/cmdline", root, (int)v->pid);
    pa_test_write(root, path + strlen(root) + 1, "%s", ""); /* its folders */
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(cl, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(dir, sizeof(dir), "%s/export", root);
    snprintf(proc, sizeof(proc), "%s/proc", root);
    rp_vmexport *x = NULL;
    ck_assert_int_eq(rp_vmexport_new(&x, dir, proc, root, 0, why, sizeof(why)), 0);
    pa_target_info t = {.type = PA_TARGET_VM, .vm = v, .power = {.cpu_w = cpu_w, .total_w = cpu_w}};
    pa_report r = {.time_ns = 1,
                   .interval_s = 1.0,
                   .formula = "cpu-tdp",
                   .cpu_source = "model",
                   .ntargets = 1,
                   .targets = &t,
                   .system = {.cpu_w = 2 * cpu_w, .total_w = 2 * cpu_w}};
    ck_assert_int_eq(rp_vmexport_window(x, &r, why, sizeof(why)), 0);
    return x;
}

/* What the daemon answers a connection from guest cid, as a socket pair
 * sees it: its rp_vmexport_send status, the text into got. */
static int answer(rp_vmexport *x, unsigned cid, char *got, size_t len)
{
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int rc = rp_vmexport_send(x, sv[0], cid);
    close(sv[0]);
    ssize_t n = 0, k;
    while ((k = read(sv[1], got + n, len - 1 - (size_t)n)) > 0)
        n += k;
    got[n] = 0;
    close(sv[1]);
    return rc;
}

/* vsock (no /dev/vhost-vsock here: the protocol over a socket pair): the
 * guest CID from QEMU's command lines, and the daemon's answer to a
 * connection, the VM's powerapi-vm text byte for byte, nothing for a CID
 * no VM has. */
START_TEST(vsock_protocol)
{
    static const char cl[] = "qemu-system-x86_64\0-name\0guest=web1\0-device\0"
                             "vhost-vsock-pci,id=vhost-vsock-pci0,guest-cid=7\0-m\0512";
    ck_assert_uint_eq(rp_vmexport_cid_parse(cl, sizeof(cl)), 7);
    static const char mv[] = "qemu-system-x86_64\0-M\0microvm\0-device\0"
                             "vhost-vsock-device,guest-cid=42";
    ck_assert_uint_eq(rp_vmexport_cid_parse(mv, sizeof(mv)), 42);
    static const char none[] = "qemu-system-x86_64\0-device\0virtio-net-pci,guest-cid=9\0"
                               "-device\0vhost-vsock-pci,guest-cid=2\0-device\0"
                               "vhost-vsock-pci,guest-cid=5x";
    ck_assert_uint_eq(rp_vmexport_cid_parse(none, sizeof(none)), 0); /* not vsock, reserved, bad */

    char *root = pa_test_tmpdir(), path[4400], got[4096];
    pa_vm_info v1 = {.name = "web1", .hypervisor = "qemu", .pid = 10};
    rp_vmexport *x = export_vm(root, &v1, cl, sizeof(cl), 2.0);
    ck_assert_int_eq(answer(x, 8, got, sizeof(got)), -ENOENT);
    ck_assert_str_eq(got, "");
    ck_assert_int_eq(answer(x, 7, got, sizeof(got)), 0);
    snprintf(path, sizeof(path), "%s/export/web1/powerapi-vm", root);
    char *want = pa_test_slurp(path);
    ck_assert_str_eq(got, want);
    ck_assert_ptr_nonnull(strstr(got, "\npackage_energy_uj 2000000\n"));
    free(want);
    rp_vmexport_free(x);
    pa_test_rmtree(root);
}
END_TEST

/* The guest CIDs of the other hypervisors with vsock: cloud-hypervisor's
 * --vsock cid=N,socket=PATH (its README's form, and --vsock=...), and
 * Firecracker's, whose CID is only in the configuration file it names
 * (--config-file, its getting-started guide's "vsock": {"guest_cid",
 * "uds_path"}), read through the process's root: the daemon answers that
 * guest. */
START_TEST(vsock_cids_of_other_hypervisors)
{
    static const char ch[] = "cloud-hypervisor\0--kernel\0./hypervisor-fw\0--cpus\0boot=2\0"
                             "--vsock\0cid=3,socket=/tmp/ch.vsock\0--api-socket\0path=/tmp/ch.sock";
    ck_assert_uint_eq(rp_vmexport_cid_parse(ch, sizeof(ch)), 3);
    static const char ch2[] = "cloud-hypervisor\0--vsock=socket=/tmp/v.sock,cid=12,iommu=off";
    ck_assert_uint_eq(rp_vmexport_cid_parse(ch2, sizeof(ch2)), 12);
    static const char ch3[] = "cloud-hypervisor\0--vsock\0socket=/tmp/v.sock\0--cpus\0cid=5";
    ck_assert_uint_eq(rp_vmexport_cid_parse(ch3, sizeof(ch3)), 0); /* no cid=, not --vsock's */
    static const char fc_json[] =
        "{\n  \"boot-source\": {\"kernel_image_path\": \"vmlinux.bin\",\n"
        "    \"boot_args\": \"console=ttyS0 reboot=k panic=1 pci=off\"},\n"
        "  \"machine-config\": {\"vcpu_count\": 2, \"mem_size_mib\": 1024},\n"
        "  \"vsock\": {\n    \"guest_cid\": 9,\n    \"uds_path\": \"./v.sock\"\n  }\n}\n";
    ck_assert_uint_eq(rp_vmexport_cid_config(fc_json), 9);
    ck_assert_uint_eq(rp_vmexport_cid_config("{\"vsock\": {\"guest_cid\": 2}}"), 0); /* host's */
    ck_assert_uint_eq(rp_vmexport_cid_config("{\"guest_cid\": 4}"), 0); /* not vsock's */
    ck_assert_uint_eq(rp_vmexport_cid_config("{\"vsock\": {\"guest_cid\": \"4\"}}"), 0);

    /* the jailer's chroot: the path is the process's, under its root */
    char *root = pa_test_tmpdir(), got[4096];
    pa_test_write(root, "proc/20/root/vm/config.json", "%s", fc_json);
    static const char fc[] = "/firecracker\0--id\0fc1\0--config-file\0/vm/config.json";
    pa_vm_info v = {.name = "fc1", .hypervisor = "firecracker", .pid = 20};
    rp_vmexport *x = export_vm(root, &v, fc, sizeof(fc), 1.5);
    ck_assert_int_eq(answer(x, 3, got, sizeof(got)), -ENOENT);
    ck_assert_int_eq(answer(x, 9, got, sizeof(got)), 0);
    ck_assert_ptr_nonnull(strstr(got, "\npackage_energy_uj 1500000\n"));
    rp_vmexport_free(x);
    pa_test_rmtree(root);
}
END_TEST

/* The daemon's options: --export-vsock without --export-vms is a usage
 * error; a folder that cannot be made says which and the fix. */
START_TEST(daemon_option_errors)
{
    char cmd[512], *out = NULL;
    snprintf(cmd, sizeof(cmd), "'%s' daemon --ring pa-host-%d --export-vsock 5000 --count 1 2>&1",
             CLI_PATH, (int)getpid());
    ck_assert_int_eq(pa_test_run(cmd, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "powerapi daemon: --export-vsock needs --export-vms DIR"));
    free(out);
    snprintf(cmd, sizeof(cmd),
             "'%s' daemon --ring pa-host-%d --export-vms /proc/no/such/folder --count 1 2>&1",
             CLI_PATH, (int)getpid());
    ck_assert_int_eq(pa_test_run(cmd, &out), 1);
    ck_assert_msg(strstr(out, "powerapi daemon: --export-vms /proc/no/such/folder: No such file "
                              "or directory (give a folder this user may write)") != NULL,
                  "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("host");
    TCase *tc = tcase_create("host");
    tcase_add_test(tc, auto_measured_by_host);
    tcase_add_test(tc, counter_wrap);
    tcase_add_test(tc, host_restart);
    tcase_add_test(tc, live_migration);
    tcase_add_test(tc, stale_file);
    tcase_add_test(tc, share_gone);
    tcase_add_test(tc, bad_file_refused);
    tcase_add_test(tc, gpu_unattributed_key_and_wrap);
    tcase_add_test(tc, gpu_split_by_guest_use);
    tcase_add_test(tc, vsock_cids_of_other_hypervisors);
    tcase_add_test(tc, writer_files);
    tcase_add_test(tc, vsock_protocol);
    tcase_add_test(tc, daemon_option_errors);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
