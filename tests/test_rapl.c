/*
 * test_rapl.c - the rapl sensor on fixture trees of real machines' layouts:
 * a 2-socket server (package + dram per socket, an intel-rapl-mmio
 * duplicate), a laptop (core, uncore, dram, psys), an AMD Ryzen, a counter
 * that wraps, a root-only energy_uj, MSR device files, and a perf power
 * PMU description.  The sensor is driven directly (start/sample on a
 * frame), so every reading is checked exactly.
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A started rapl sensor on a fixture copy. */
typedef struct rig {
    char *root;
    pa_ctx *ctx;
    pa_module m;
    pa_sysread sys;
    uint64_t tick;
    uint64_t time_ns;
    uint64_t step_ns; /* time to the next sample; 0: one second */
} rig;

static int rig_start(rig *r, const char *fixture, const char *opts)
{
    memset(r, 0, sizeof(*r));
    r->root = pa_test_fixture_copy(fixture);
    r->ctx = pa_test_ctx(r->root);
    r->m.ops = &pa__mod_rapl;
    r->m.ctx = r->ctx;
    pa_options *o = NULL;
    ck_assert_int_eq(pa__options_parse("rapl", opts, pa__mod_rapl.options, &o), 0);
    int rc = pa__mod_rapl.start(&r->m, o);
    pa__options_free(o);
    return rc;
}

static void rig_sample(rig *r)
{
    memset(&r->sys, 0, sizeof(r->sys));
    pa_frame f = {.ctx = r->ctx, .tick = ++r->tick, .time_ns = 0, .sys = &r->sys};
    /* one reading a second unless a test waits longer: the sensor counts
     * a step only if the domain could have drawn it in that time */
    r->time_ns += r->step_ns ? r->step_ns : 1000000000ull;
    r->step_ns = 0;
    f.time_ns = r->time_ns;
    int rc = pa__mod_rapl.sample(&r->m, &f);
    ck_assert_msg(rc == 0, "sample: %s", pa_last_error());
    ck_assert(r->sys.have & PA_HAVE_RAPL);
}

static void rig_end(rig *r)
{
    if (r->m.priv)
        pa__mod_rapl.stop(&r->m);
    pa_ctx_free(r->ctx);
    pa_test_rmtree(r->root);
}

static const pa_rapl_reading *dom(const rig *r, int socket, pa_rapl_kind k)
{
    for (unsigned i = 0; i < r->sys.nrapl; i++)
        if (r->sys.rapl[i].socket == socket && r->sys.rapl[i].kind == k)
            return &r->sys.rapl[i];
    ck_abort_msg("no domain socket %d kind %d", socket, (int)k);
    return NULL;
}

static void write_msr(const char *root, int cpu, off_t reg, uint64_t v)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/dev/cpu/%d/msr", root, cpu);
    int fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, &v, sizeof(v), reg), (ssize_t)sizeof(v));
    close(fd);
}

START_TEST(server_two_sockets_with_dram)
{
    rig r;
    ck_assert_int_eq(rig_start(&r, "rapl-server2s", NULL), 0);
    rig_sample(&r);
    /* package-0, dram-0, package-1, dram-1; the mmio package-0 dropped */
    ck_assert_uint_eq(r.sys.nrapl, 4);
    ck_assert_str_eq(r.sys.rapl_path, "powercap");
    ck_assert_int_eq(r.sys.rapl[0].socket, 0);
    ck_assert_int_eq(r.sys.rapl[0].kind, PA_RAPL_PKG);
    ck_assert_int_eq(r.sys.rapl[1].kind, PA_RAPL_DRAM);
    ck_assert_int_eq(r.sys.rapl[2].socket, 1);
    ck_assert_int_eq(r.sys.rapl[2].kind, PA_RAPL_PKG);
    ck_assert_int_eq(r.sys.rapl[3].socket, 1);
    ck_assert_int_eq(r.sys.rapl[3].kind, PA_RAPL_DRAM);
    /* cumulative since start */
    for (unsigned i = 0; i < 4; i++)
        ck_assert_uint_eq(r.sys.rapl[i].energy_uj, 0);
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:0/energy_uj", "160000000\n");  /* +60 J */
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:0:0/energy_uj", "28000000\n"); /* +8 J */
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:1/energy_uj", "240000000\n");  /* +40 J */
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:1:0/energy_uj", "37000000\n"); /* +7 J */
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 60000000);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_DRAM)->energy_uj, 8000000);
    ck_assert_uint_eq(dom(&r, 1, PA_RAPL_PKG)->energy_uj, 40000000);
    ck_assert_uint_eq(dom(&r, 1, PA_RAPL_DRAM)->energy_uj, 7000000);
    rig_end(&r);
}
END_TEST

static void add_zone(const char *root, const char *dir, const char *name, unsigned long long uj)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "sys/class/powercap/%s/name", dir);
    pa_test_write(root, rel, "%s\n", name);
    snprintf(rel, sizeof(rel), "sys/class/powercap/%s/energy_uj", dir);
    pa_test_write(root, rel, "%llu\n", uj);
    snprintf(rel, sizeof(rel), "sys/class/powercap/%s/max_energy_range_uj", dir);
    pa_test_write(root, rel, "262143328850\n");
}

/* Granite Rapids and later: the TPMI driver's zones repeat the MSR
 * driver's (same socket and kind: read once), or are the only ones. */
START_TEST(tpmi_zones)
{
    rig r;
    memset(&r, 0, sizeof(r));
    r.root = pa_test_fixture_copy("rapl-server2s");
    add_zone(r.root, "intel-rapl-tpmi:0", "package-0", 5);
    add_zone(r.root, "intel-rapl-tpmi:1", "package-1", 6);
    add_zone(r.root, "intel-rapl-tpmi:1:0", "dram", 7);
    r.ctx = pa_test_ctx(r.root);
    r.m.ops = &pa__mod_rapl;
    r.m.ctx = r.ctx;
    ck_assert_int_eq(pa__mod_rapl.start(&r.m, NULL), 0);
    rig_sample(&r);
    ck_assert_uint_eq(r.sys.nrapl, 4);
    pa__mod_rapl.stop(&r.m);
    r.m.priv = NULL;
    /* only TPMI zones: they are used, with the sub-zone's socket */
    const char *msr_zones[] = {"intel-rapl:0", "intel-rapl:0:0", "intel-rapl:1", "intel-rapl:1:0",
                               "intel-rapl-mmio:0"};
    for (size_t i = 0; i < 5; i++) {
        char rel[128];
        snprintf(rel, sizeof(rel), "sys/class/powercap/%s", msr_zones[i]);
        pa_test_remove(r.root, rel);
    }
    ck_assert_int_eq(pa__mod_rapl.start(&r.m, NULL), 0);
    rig_sample(&r);
    ck_assert_uint_eq(r.sys.nrapl, 3);
    ck_assert_int_eq(dom(&r, 1, PA_RAPL_DRAM)->kind, PA_RAPL_DRAM);
    pa_test_write(r.root, "sys/class/powercap/intel-rapl-tpmi:1:0/energy_uj", "1000007\n");
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 1, PA_RAPL_DRAM)->energy_uj, 1000000);
    rig_end(&r);
}
END_TEST

START_TEST(laptop_core_uncore_dram_psys)
{
    rig r;
    ck_assert_int_eq(rig_start(&r, "rapl-laptop", "path=powercap"), 0);
    rig_sample(&r);
    ck_assert_uint_eq(r.sys.nrapl, 5);
    ck_assert_int_eq(r.sys.rapl[0].kind, PA_RAPL_PKG);
    ck_assert_int_eq(r.sys.rapl[1].kind, PA_RAPL_CORE);
    ck_assert_int_eq(r.sys.rapl[2].kind, PA_RAPL_UNCORE);
    ck_assert_int_eq(r.sys.rapl[3].kind, PA_RAPL_DRAM);
    ck_assert_int_eq(r.sys.rapl[4].kind, PA_RAPL_PSYS);
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:1/energy_uj",
                  "9012500000\n"); /* psys +12.5 J */
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:0:0/energy_uj",
                  "2003000000\n"); /* core +3 J */
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PSYS)->energy_uj, 12500000);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_CORE)->energy_uj, 3000000);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 0);
    rig_end(&r);
}
END_TEST

START_TEST(amd_package_and_core)
{
    rig r;
    ck_assert_int_eq(rig_start(&r, "rapl-amd", NULL), 0);
    rig_sample(&r);
    ck_assert_uint_eq(r.sys.nrapl, 2);
    ck_assert_int_eq(r.sys.rapl[0].kind, PA_RAPL_PKG);
    ck_assert_int_eq(r.sys.rapl[1].kind, PA_RAPL_CORE);
    /* AMD's range is 65532610987 uJ: wrap at that value (64 kJ: a
     * plausible wrap after 1000 s at 64 W) */
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:0/energy_uj", "10\n");
    r.step_ns = 1000 * 1000000000ull;
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 65532610987ull - 1234567890ull + 10);
    rig_end(&r);
}
END_TEST

/* A counter 1 J below its wrap: two wrap-free windows, a wrap inside a
 * window, then more wrap-free windows; the accumulator never goes back. */
START_TEST(wraparound_unfolded)
{
    const uint64_t range = 262143328850ull;
    rig r;
    ck_assert_int_eq(rig_start(&r, "rapl-wrap", NULL), 0);
    rig_sample(&r);
    const char *f = "sys/class/powercap/intel-rapl:0/energy_uj";
    pa_test_write(r.root, f, "%llu\n", (unsigned long long)(range - 700000)); /* +0.3 J */
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 300000);
    pa_test_write(r.root, f, "%llu\n", (unsigned long long)(range - 200000)); /* +0.5 J */
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 800000);
    /* wraps: 0.2 J up to the range, then 3 J from zero */
    pa_test_write(r.root, f, "3000000\n");
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 4000000);
    pa_test_write(r.root, f, "7000000\n");
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 8000000);
    /* an unchanged counter adds nothing (not a wrap) */
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 8000000);
    rig_end(&r);
}
END_TEST

START_TEST(msr_device_files)
{
    rig r;
    ck_assert_int_eq(rig_start(&r, "rapl-msr", "path=msr"), 0);
    rig_sample(&r);
    ck_assert_str_eq(r.sys.rapl_path, "msr");
    /* PKG and DRAM per socket; PP0, PP1 and psys read 0: not there */
    ck_assert_uint_eq(r.sys.nrapl, 4);
    ck_assert_int_eq(r.sys.rapl[0].kind, PA_RAPL_PKG);
    ck_assert_int_eq(r.sys.rapl[1].kind, PA_RAPL_DRAM);
    ck_assert_int_eq(r.sys.rapl[2].socket, 1);
    /* ESU 14: 2^-14 J = 61.03515625 uJ.  Socket 0's package (read on CPU
     * 0) +16384 units = 1 J; reserved bits 63:32 change and are masked. */
    write_msr(r.root, 0, 0x611, 0xBEEF000000000000ull | (16384ull * 1000 + 16384));
    /* socket 1 (CPU 2): +2.5 J */
    write_msr(r.root, 2, 0x611, 16384ull * 2000 + 40960);
    /* DRAM of model 85 counts in 15.3 uJ: +1000 units = 15300 uJ */
    write_msr(r.root, 0, 0x619, 1000000 + 1000);
    /* CPU 1 is socket 0 too but is not the one read: ignored */
    write_msr(r.root, 1, 0x611, 1);
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 1000000);
    ck_assert_uint_eq(dom(&r, 1, PA_RAPL_PKG)->energy_uj, 2500000);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_DRAM)->energy_uj, 15300);
    ck_assert_uint_eq(dom(&r, 1, PA_RAPL_DRAM)->energy_uj, 0);
    /* 32-bit wrap: 16384 units to 2^32, then 32768 more = 3 J (the
     * climb to the top, 262 kJ, over 1000 s: 262 W) */
    write_msr(r.root, 0, 0x611, 0xffffffffull - 16383);
    r.step_ns = 1000 * 1000000000ull;
    rig_sample(&r);
    write_msr(r.root, 0, 0x611, 32768);
    rig_sample(&r);
    /* units: 16384, then up to 2^32 - 16384, then 49152 across the wrap */
    double units = 4294967296.0 - 16384.0 * 1001 + 49152;
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, (uint64_t)llround(units * 61.03515625));
    rig_end(&r);
}
END_TEST

/* AMD (family 17h+): MSR 0xc0010299 unit, 0xc001029b package counter.
 * The registers sit past 3 GiB, so the device file is made sparse in the
 * copy rather than committed. */
START_TEST(amd_msr)
{
    char *root = pa_test_fixture_copy("rapl-amd");
    pa_test_write(root, "dev/cpu/0/msr", "%s", "");
    /* ESU 16: 2^-16 J = 15.2587890625 uJ */
    write_msr(root, 0, 0xc0010299, 0x000A1003);
    write_msr(root, 0, 0xc001029b, 0xffff000000000000ull | 65536);
    rig r;
    memset(&r, 0, sizeof(r));
    r.root = root;
    r.ctx = pa_test_ctx(root);
    r.m.ops = &pa__mod_rapl;
    r.m.ctx = r.ctx;
    pa_options *o = NULL;
    ck_assert_int_eq(pa__options_parse("rapl", "path=msr", pa__mod_rapl.options, &o), 0);
    int rc = pa__mod_rapl.start(&r.m, o);
    pa__options_free(o);
    ck_assert_msg(rc == 0, "%s", pa_last_error());
    rig_sample(&r);
    ck_assert_uint_eq(r.sys.nrapl, 1);
    ck_assert_int_eq(r.sys.rapl[0].kind, PA_RAPL_PKG);
    write_msr(root, 0, 0xc001029b, 65536 * 4); /* +3 J */
    rig_sample(&r);
    ck_assert_uint_eq(r.sys.rapl[0].energy_uj, 3000000);
    rig_end(&r);
}
END_TEST

START_TEST(auto_prefers_msr_over_powercap)
{
    /* the MSR fixture plus a powercap tree: auto takes the cheaper MSR */
    rig r;
    memset(&r, 0, sizeof(r));
    r.root = pa_test_fixture_copy("rapl-msr");
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:0/name", "package-0\n");
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:0/energy_uj", "5\n");
    r.ctx = pa_test_ctx(r.root);
    char why[256];
    ck_assert_int_eq(pa__mod_rapl.probe(&r.ctx->env, why, sizeof(why)), 0);
    ck_assert_msg(strstr(why, "msr") != NULL, "%s", why);
    rig_end(&r);
}
END_TEST

START_TEST(no_rapl_in_vm)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    char why[256];
    int rc = pa__mod_rapl.probe(&ctx->env, why, sizeof(why));
    ck_assert_int_eq(rc, -ENODEV);
    ck_assert_msg(strstr(why, "powercap not present (no RAPL in this VM)"), "%s", why);
    ck_assert_msg(strstr(why, "no perf power PMU"), "%s", why);
    ck_assert_msg(strstr(why, "msr"), "%s", why);
    /* enabling it says the same */
    ck_assert_int_eq(pa_module_enable(ctx, "rapl", NULL), -ENODEV);
    ck_assert_msg(strstr(pa_last_error(), "no RAPL in this VM"), "%s", pa_last_error());
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(bad_path_option)
{
    rig r;
    ck_assert_int_eq(rig_start(&r, "rapl-laptop", "path=sysfs"), -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), "auto, perf, msr or powercap"), "%s", pa_last_error());
    rig_end(&r);
}
END_TEST

START_TEST(forced_path_absent)
{
    rig r;
    ck_assert_int_eq(rig_start(&r, "rapl-laptop", "path=msr"), -ENODEV);
    ck_assert_msg(strstr(pa_last_error(), "msr"), "%s", pa_last_error());
    rig_end(&r);
}
END_TEST

/* The perf power PMU as sysfs describes it; its type is no PMU of this
 * kernel, so the open fails and the message says where. */
START_TEST(perf_pmu_described_but_unopenable)
{
    rig r;
    int rc = rig_start(&r, "rapl-perfpmu", "path=perf");
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(pa_last_error(), "perf power PMU"), "%s", pa_last_error());
    rig_end(&r);
}
END_TEST

/* The perf path end to end (sysfs description, one counter per socket
 * from cpumask and topology, scale and unit, 64-bit reads) on the
 * software PMU dressed as the power PMU: cpu-clock per CPU, 1e-9 "J" per
 * ns, so each socket gains 1 J per second of wall time.  Per-CPU counting
 * needs root or perf_event_paranoid <= 0, like the real power PMU. */
START_TEST(perf_path_mechanics)
{
    /* the wall clock from before the counters open: they count no longer
     * than this (read after the open, a loaded machine's delay between the
     * open and the first reading put 304,897 uJ over 300,286 us) */
    struct timespec t0, t1, d = {0, 300000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rig r;
    int rc = rig_start(&r, "rapl-perfsw", "path=perf");
    if (rc == -EACCES) {
        printf("SKIP perf_path_mechanics: %s\n", pa_last_error());
        rig_end(&r);
        return;
    }
    ck_assert_msg(rc == 0, "%s", pa_last_error());
    rig_sample(&r);
    ck_assert_str_eq(r.sys.rapl_path, "perf");
    ck_assert_uint_eq(r.sys.nrapl, 2);
    ck_assert_int_eq(r.sys.rapl[0].socket, 0);
    ck_assert_int_eq(r.sys.rapl[1].socket, 1);
    ck_assert_int_eq(r.sys.rapl[1].kind, PA_RAPL_PKG);
    nanosleep(&d, NULL);
    rig_sample(&r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall_uj =
        (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    for (int s = 0; s < 2; s++) {
        double uj = (double)r.sys.rapl[s].energy_uj;
        ck_assert_msg(uj > 0.9 * 300000 && uj <= wall_uj * 1.01, "socket %d: %.0f uJ over %.0f us",
                      s, uj, wall_uj);
    }
    rig_end(&r);
}
END_TEST

/* A power PMU with only energy-psys (the development VMs): no package
 * counter, so no CPU power: the path is refused and auto says why. */
START_TEST(psys_only_pmu_refused)
{
    char *root = pa_test_fixture_copy("rapl-psysonly");
    pa_ctx *ctx = pa_test_ctx(root);
    char why[256];
    int rc = pa__mod_rapl.probe(&ctx->env, why, sizeof(why));
    ck_assert_int_lt(rc, 0);
    if (geteuid() == 0)
        ck_assert_msg(strstr(why, "gives no package counter"), "%s", why);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* energy_uj mode 0400 root (Linux >= 5.10): as an unprivileged user the
 * probe fails with EACCES and names the remedies.  Root reads anything,
 * so the check runs in a child that drops to nobody. */
START_TEST(root_only_energy_uj)
{
    char *root = pa_test_fixture_copy("rapl-laptop");
    const char *zones[] = {"intel-rapl:0",   "intel-rapl:0:0", "intel-rapl:0:1",
                           "intel-rapl:0:2", "intel-rapl:1",   "intel-rapl-mmio:0"};
    char path[4096];
    for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
        snprintf(path, sizeof(path), "%s/sys/class/powercap/%s/energy_uj", root, zones[i]);
        ck_assert_int_eq(chmod(path, 0400), 0);
    }
    chmod(root, 0755);
    pa_ctx *ctx = pa_test_ctx(root);
    if (geteuid() != 0) {
        /* already unprivileged: the files must not be ours to read */
        char why[512];
        int rc = pa__mod_rapl.probe(&ctx->env, why, sizeof(why));
        if (access(path, R_OK) < 0) {
            ck_assert_int_eq(rc, -EACCES);
            ck_assert_msg(strstr(why, "root only since Linux 5.10"), "%s", why);
        }
    } else {
        int fds[2];
        ck_assert_int_eq(pipe(fds), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            close(fds[0]);
            if (setgid(65534) < 0 || setuid(65534) < 0)
                _exit(3);
            char why[512];
            int rc = pa__mod_rapl.probe(&ctx->env, why, sizeof(why));
            ssize_t w = write(fds[1], why, strlen(why) + 1);
            (void)w;
            _exit(rc == -EACCES ? 0 : 1);
        }
        close(fds[1]);
        char why[512] = "";
        ssize_t n = read(fds[0], why, sizeof(why) - 1);
        why[n > 0 ? n : 0] = '\0';
        close(fds[0]);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d: %s", st, why);
        ck_assert_msg(strstr(why, "root only since Linux 5.10"), "%s", why);
        ck_assert_msg(strstr(why, "CAP_PERFMON"), "%s", why);
        ck_assert_msg(strstr(why, "join the group powerapi"), "%s", why);
    }
    /* root itself still reads them */
    if (geteuid() == 0) {
        char why[512];
        ck_assert_int_eq(pa__mod_rapl.probe(&ctx->env, why, sizeof(why)), 0);
    }
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(reconfigure_keeps_energy)
{
    rig r;
    ck_assert_int_eq(rig_start(&r, "rapl-server2s", NULL), 0);
    rig_sample(&r);
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:0/energy_uj", "110000000\n");
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 10000000);
    pa_options *o = NULL;
    ck_assert_int_eq(pa__options_parse("rapl", "path=powercap", pa__mod_rapl.options, &o), 0);
    ck_assert_int_eq(pa__mod_rapl.configure(&r.m, o), 0);
    pa__options_free(o);
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:0/energy_uj", "111000000\n");
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 11000000);
    rig_end(&r);
}
END_TEST

/* A counter that goes back without wrapping (reset) or jumps forward by
 * more than a domain can draw (a package plugged in again) is not
 * unfolded: that window adds nothing for the domain, the frame counts
 * the reset and a note names the domain; the next steps count again. */
START_TEST(reset_is_not_a_wrap)
{
    rig r;
    ck_assert_int_eq(rig_start(&r, "rapl-wrap", NULL), 0);
    rig_sample(&r);
    const char *f = "sys/class/powercap/intel-rapl:0/energy_uj";
    char *start = pa_test_slurp(PA_FIXTURES "/rapl-wrap/sys/class/powercap/intel-rapl:0/"
                                            "energy_uj");
    ck_assert_ptr_nonnull(start);
    unsigned long long v0 = strtoull(start, NULL, 10);
    free(start);
    /* +20 J in a second: counted */
    pa_test_write(r.root, f, "%llu\n", v0 + 20000000ull);
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 20000000);
    ck_assert_uint_eq(r.sys.rapl_resets, 0);
    ck_assert_str_eq(r.sys.notes, "");
    /* reset to 0.5 J: as a wrap it would be ~262 kJ in 1 s */
    pa_test_write(r.root, f, "500000\n");
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 20000000);
    ck_assert_uint_eq(r.sys.rapl_resets, 1);
    ck_assert_msg(strstr(r.sys.notes, "intel-rapl:0") && strstr(r.sys.notes, "without wrapping"),
                  "%s", r.sys.notes);
    /* counts again from the reset value */
    pa_test_write(r.root, f, "3500000\n");
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 23000000);
    ck_assert_uint_eq(r.sys.rapl_resets, 0);
    /* a jump forward of 50 kJ in a second (another counter): not energy */
    pa_test_write(r.root, f, "%llu\n", 3500000ull + 50000000000ull);
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 23000000);
    ck_assert_uint_eq(r.sys.rapl_resets, 1);
    /* the same 50 kJ over an hour (14 W) would have been energy */
    pa_test_write(r.root, f, "%llu\n", 3500000ull + 100000000000ull);
    r.step_ns = 3600 * 1000000000ull;
    rig_sample(&r);
    ck_assert_uint_eq(dom(&r, 0, PA_RAPL_PKG)->energy_uj, 50023000000ull);
    ck_assert_uint_eq(r.sys.rapl_resets, 0);
    rig_end(&r);
}
END_TEST

/* The same through a context and rapl-share: the window of the reset has
 * no negative (nor huge) power, is flagged PA_POWER_RAPL_RESET and says
 * why in its assumed list; the windows around it are measured as usual. */
START_TEST(reset_window_marked)
{
    char *root = pa_test_fixture_copy("rapl-wrap");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "rapl", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "rapl-share", NULL), 0);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    const char *f = "sys/class/powercap/intel-rapl:0/energy_uj";
    char *start = pa_test_slurp(PA_FIXTURES "/rapl-wrap/sys/class/powercap/intel-rapl:0/"
                                            "energy_uj");
    unsigned long long v = strtoull(start, NULL, 10);
    free(start);
    uint64_t t = NS_PER_S;
    ck_assert_int_eq(pa_tick_at(ctx, t), 0);
    double want[4] = {15, -1, 12, 30}; /* W; -1: the reset window */
    unsigned long long next[4] = {v + 15000000ull, 2000000ull, 14000000ull, 44000000ull};
    for (int k = 0; k < 4; k++) {
        pa_test_write(root, f, "%llu\n", next[k]);
        t += NS_PER_S;
        ck_assert_int_eq(pa_tick_at(ctx, t), 0);
        pa_report *rep = NULL;
        ck_assert_int_eq(pa_report_get(ctx, &rep), 0);
        ck_assert_str_eq(rep->cpu_source, "rapl");
        ck_assert_double_ge(rep->system.cpu_w, 0);
        if (want[k] < 0) {
            ck_assert(rep->system.flags & PA_POWER_RAPL_RESET);
            ck_assert_double_lt(rep->system.cpu_w, 1e-9);
            ck_assert_msg(strstr(rep->assumed, "went back or jumped"), "%s", rep->assumed);
        } else {
            ck_assert(!(rep->system.flags & PA_POWER_RAPL_RESET));
            ck_assert_double_eq_tol(rep->system.cpu_w, want[k], 1e-6);
            ck_assert_ptr_null(strstr(rep->assumed, "went back"));
        }
        pa_report_free(rep);
    }
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* A domain that disappears (driver unloaded) fails the sample with a
 * message naming it; the engine then retries. */
START_TEST(read_failure_named)
{
    rig r;
    ck_assert_int_eq(rig_start(&r, "rapl-wrap", NULL), 0);
    rig_sample(&r);
    pa_test_write(r.root, "sys/class/powercap/intel-rapl:0/energy_uj", "garbage\n");
    memset(&r.sys, 0, sizeof(r.sys));
    pa_frame f = {.ctx = r.ctx, .tick = 9, .time_ns = 9000000000ull, .sys = &r.sys};
    ck_assert_int_lt(pa__mod_rapl.sample(&r.m, &f), 0);
    ck_assert_msg(strstr(pa_last_error(), "intel-rapl:0"), "%s", pa_last_error());
    rig_end(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("rapl");
    TCase *tc = tcase_create("fixtures");
    tcase_add_test(tc, server_two_sockets_with_dram);
    tcase_add_test(tc, tpmi_zones);
    tcase_add_test(tc, laptop_core_uncore_dram_psys);
    tcase_add_test(tc, amd_package_and_core);
    tcase_add_test(tc, wraparound_unfolded);
    tcase_add_test(tc, msr_device_files);
    tcase_add_test(tc, amd_msr);
    tcase_add_test(tc, auto_prefers_msr_over_powercap);
    tcase_add_test(tc, no_rapl_in_vm);
    tcase_add_test(tc, bad_path_option);
    tcase_add_test(tc, forced_path_absent);
    tcase_add_test(tc, perf_pmu_described_but_unopenable);
    tcase_add_test(tc, perf_path_mechanics);
    tcase_add_test(tc, psys_only_pmu_refused);
    tcase_add_test(tc, root_only_energy_uj);
    tcase_add_test(tc, reconfigure_keeps_energy);
    tcase_add_test(tc, read_failure_named);
    tcase_add_test(tc, reset_is_not_a_wrap);
    tcase_add_test(tc, reset_window_marked);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
