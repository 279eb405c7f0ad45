/*
 * test_cli.c - the powerapi command end to end on fixture trees.
 *
 * Each golden case runs the binary (CLI_PATH) with an explicit clock
 * (--clock-step) over a fixture tree whose files change between ticks
 * (--fixture-states, overlays in tests/golden/states-<fixture>/<k>/), and
 * compares its standard output with tests/golden/<case>.  With
 * PA_UPDATE_GOLDEN=1 in the environment the golden files are rewritten
 * instead (review the diff before committing them).
 *
 * The other cases check the contract of the command line itself: help,
 * version, usage errors (exit 2, one line naming the argument), unknown
 * pids and modules, and that no input crashes it.
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIX_VM "vm-nocpufreq"
#define FIX_DESK "desktop-cpufreq"

typedef pa_test_cli_run run;

static void cli(run *r, ...)
{
    char *args[64];
    size_t n = 0;
    va_list ap;
    va_start(ap, r);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 63)
        args[n++] = (char *)a;
    va_end(ap);
    args[n] = NULL;
    pa_test_cli(r, args);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static const char *fixture(const char *name, const char *sub)
{
    static char buf[4][4096];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s/%s", PA_FIXTURES, name, sub);
    return buf[k];
}

static const char *states(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf), "%s/states-%s", PA_GOLDEN_DIR, name);
    return buf;
}

/* Compares text with the golden file, or rewrites it when
 * PA_UPDATE_GOLDEN=1. */
static void golden(const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", PA_GOLDEN_DIR, name);
    const char *upd = getenv("PA_UPDATE_GOLDEN");
    if (upd && !strcmp(upd, "1")) {
        FILE *f = fopen(path, "w");
        ck_assert_msg(f != NULL, "cannot write %s", path);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
        return;
    }
    char *want = pa_test_slurp(path);
    ck_assert_msg(want != NULL, "golden file %s missing (run with PA_UPDATE_GOLDEN=1)", path);
    if (strcmp(want, text) != 0) {
        char *dir = pa_test_tmpdir();
        char got[4096], cmd[12288];
        snprintf(got, sizeof(got), "%s/got", dir);
        FILE *f = fopen(got, "w");
        ck_assert(f != NULL);
        fputs(text, f);
        fclose(f);
        snprintf(cmd, sizeof(cmd), "diff -u '%s' '%s'", path, got);
        char *diff = NULL;
        pa_test_run(cmd, &diff);
        fprintf(stderr, "golden %s differs:\n%s\n", name, diff ? diff : "");
        free(diff);
        pa_test_rmtree(dir);
        free(want);
        ck_abort_msg("output differs from golden %s (PA_UPDATE_GOLDEN=1 "
                     "rewrites it)",
                     name);
    }
    free(want);
}

/* ------------------------------------------------------------------ */
/* Help, version, usage errors                                         */
/* ------------------------------------------------------------------ */

START_TEST(test_help_version)
{
    run r;
    cli(&r, "--help", NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "monitor"));
    ck_assert_ptr_nonnull(strstr(r.out, "modules"));
    pa_test_cli_free(&r);

    cli(&r, "--version", NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, PA_VERSION_STRING));
    pa_test_cli_free(&r);

    cli(&r, "monitor", "--help", NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--interval"));
    ck_assert_ptr_nonnull(strstr(r.out, "--clock-step"));
    ck_assert_ptr_nonnull(strstr(r.out, "--fixture-states"));
    ck_assert_str_eq(r.err, "");
    pa_test_cli_free(&r);

    cli(&r, "modules", "--help", NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--procfs"));
    pa_test_cli_free(&r);

    cli(&r, NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "Usage"));
    pa_test_cli_free(&r);
}
END_TEST

/* Each bad command line exits 2 with one line naming the bad argument. */
static const struct {
    const char *args[6];
    const char *named;
} bad_usage[] = {
    {{"frobnicate"}, "frobnicate"},
    {{"--frobnicate"}, "--frobnicate"},
    {{"monitor", "--interval", "abc"}, "abc"},
    {{"monitor", "--interval", "0s"}, "0s"},
    {{"monitor", "--interval"}, "--interval"},
    {{"monitor", "--duration", "1parsec"}, "1parsec"},
    {{"monitor", "--count", "0"}, "--count"},
    {{"monitor", "--count", "3x"}, "3x"},
    {{"monitor", "--top", "-1"}, "-1"},
    {{"monitor", "--pid", "abc"}, "abc"},
    {{"monitor", "--pid", "-5"}, "-5"},
    {{"monitor", "--pid", ","}, "--pid"},
    {{"monitor", "--format", "xml"}, "xml"},
    {{"monitor", "--bogus"}, "--bogus"},
    {{"monitor", "-z"}, "-z"},
    {{"monitor", "--threads"}, "--threads"},
    {{"monitor", "--sensor", ":x=1"}, "--sensor"},
    {{"monitor", "--fixture-states", "/nonexistent"}, "--clock-step"},
    {{"monitor", "--clock-step", "1s", "--", "true"}, "--clock-step"},
    {{"monitor", "--count", "2", "--", "true"}, "--count"},
    {{"modules", "--format", "yaml"}, "yaml"},
    {{"modules", "extra"}, "extra"},
    /* every subcommand's option errors: one helper, one wording */
    {{"modules", "--bogus"}, "unknown option '--bogus'"},
    {{"daemon", "-z"}, "unknown option '-z'"},
    {{"daemon", "--ring"}, "option '--ring' needs a value"},
    {{"daemon", "extra"}, "unexpected argument 'extra'"},
    {{"serve", "--bogus"}, "unknown option '--bogus'"},
    {{"serve", "--listen"}, "option '--listen' needs a value"},
    {{"serve", "extra"}, "unexpected argument 'extra'"},
    {{"top", "--bogus"}, "unknown option '--bogus'"},
    {{"top", "--ring"}, "option '--ring' needs a value"},
    {{"top", "extra"}, "unexpected argument 'extra'"},
    {{"calibrate", "--bogus"}, "unknown option '--bogus'"},
    {{"calibrate", "--output"}, "option '--output' needs a value"},
    {{"calibrate", "extra"}, "unexpected argument 'extra'"},
    {{"profile", "--bogus"}, "unknown option '--bogus'"},
    {{"profile", "--out"}, "option '--out' needs a value"},
};

START_TEST(test_usage_errors)
{
    run r;
    pa_test_cli(&r, (char *const *)bad_usage[_i].args);
    ck_assert_msg(r.status == 2, "%s %s: status %d, stderr %s", bad_usage[_i].args[0],
                  bad_usage[_i].args[1], r.status, r.err);
    ck_assert_msg(count_lines(r.err) == 1, "not one line: %s", r.err);
    ck_assert_msg(strstr(r.err, bad_usage[_i].named) != NULL, "'%s' not named in: %s",
                  bad_usage[_i].named, r.err);
    ck_assert_str_eq(r.out, "");
    pa_test_cli_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Fixture runs                                                        */
/* ------------------------------------------------------------------ */

#define FIXTURE_ARGS(name)                                                                         \
    "--procfs", fixture(name, "proc"), "--sysfs", fixture(name, "sys"), "--hwdb", PA_TEST_HWDB

START_TEST(test_unknown_module)
{
    run r;
    cli(&r, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "1", "--sensor",
        "nosuch", NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_int_eq(count_lines(r.err), 1);
    ck_assert_ptr_nonnull(strstr(r.err, "nosuch"));
    ck_assert_ptr_nonnull(strstr(r.err, "procfs-cpu")); /* valid ones */
    pa_test_cli_free(&r);

    cli(&r, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "1", "--formula",
        "cpu-tdp:tpd=30", NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "tpd"));
    ck_assert_ptr_nonnull(strstr(r.err, "tdp")); /* the suggestion */
    pa_test_cli_free(&r);

    cli(&r, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "1", "--sensor",
        "cpu-tdp", NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "formula"));
    pa_test_cli_free(&r);

    cli(&r, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "1", "--disable",
        "nosuch", NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "nosuch"));
    pa_test_cli_free(&r);
}
END_TEST

START_TEST(test_bad_roots)
{
    run r;
    cli(&r, "monitor", "--procfs", "/nonexistent/proc", "--clock-step", "1s", "--count", "1", NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent/proc"));
    pa_test_cli_free(&r);

    cli(&r, "modules", "--procfs", "/nonexistent/proc", NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent/proc"));
    pa_test_cli_free(&r);
}
END_TEST

/* --calibration FILE is given to the context (pa_ctx_set_calibration), not
 * to the environment: auto picks cpu-curve with it and says so. */
START_TEST(test_modules_calibration)
{
    char *dir = pa_test_tmpdir();
    char path[4200];
    snprintf(path, sizeof(path), "%s/cal.txt", dir);
    pa_curve c;
    memset(&c, 0, sizeof(c));
    snprintf(c.match, sizeof(c.match), "a CPU of another machine");
    c.n = 2;
    c.load[1] = 1;
    c.watts[0] = 20;
    c.watts[1] = 80;
    c.packages = 1;
    c.error = -1;
    ck_assert_int_eq(pa_calibration_write(path, &c, NULL, 4, -1, -1, -1), 0);
    unsetenv("POWERAPI_CALIBRATION");
    run r;
    cli(&r, "modules", FIXTURE_ARGS(FIX_VM), "--calibration", path, "--format", "json", NULL);
    ck_assert_int_eq(r.status, 0);
    char want[4400];
    snprintf(want, sizeof(want), "\"auto\":\"no RAPL; calibration %s (given)", path);
    ck_assert_msg(strstr(r.out, want) != NULL, "%s", r.out);
    pa_test_cli_free(&r);
    pa_test_rmtree(dir);
}
END_TEST

START_TEST(test_modules_fixture)
{
    run r;
    cli(&r, "modules", FIXTURE_ARGS(FIX_VM), "--format", "json", NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out,
                                 "{\"name\":\"procfs-cpu\",\"kind\":\"sensor\",\"component\":"
                                 "\"\",\"available\":true,\"enabled\":true"));
    /* a VM without a curve for its CPU: auto picks cpu-curve (its default
     * per-vCPU curve follows the load) and says why */
    ck_assert_ptr_nonnull(strstr(r.out, "{\"name\":\"cpu-curve\",\"kind\":\"formula\","
                                        "\"component\":\"cpu\",\"available\":true,"
                                        "\"enabled\":true"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"auto\":\"no RAPL; virtual machine "
                                        "(cpuinfo flag hypervisor)"));
    ck_assert_ptr_nonnull(strstr(r.out, "{\"name\":\"cpu-tdp\",\"kind\":\"formula\","
                                        "\"component\":\"cpu\",\"available\":true,"
                                        "\"enabled\":false"));
    pa_test_cli_free(&r);

    cli(&r, "modules", FIXTURE_ARGS(FIX_VM), NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "NAME"));
    ck_assert_ptr_nonnull(strstr(r.out, "procfs-cpu"));
    pa_test_cli_free(&r);
}
END_TEST

/* A --formula alone brings its sensor: the same output as with the sensor
 * named, on the fixture; on this machine's /proc it ticks and prints
 * watts. */
START_TEST(test_formula_alone)
{
    run a, b;
    cli(&a, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "2", "--format",
        "json", "--all", "--fixture-states", states(FIX_VM), "--formula", "cpu-tdp:tdp=45", NULL);
    ck_assert_msg(a.status == 0, "status %d: %s", a.status, a.err);
    ck_assert_str_eq(a.err, "");
    cli(&b, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "2", "--format",
        "json", "--all", "--fixture-states", states(FIX_VM), "--sensor", "procfs-cpu", "--formula",
        "cpu-tdp:tdp=45", NULL);
    ck_assert_int_eq(b.status, 0);
    ck_assert_str_eq(a.out, b.out);
    ck_assert_ptr_nonnull(strstr(a.out, "\"formula\":\"cpu-tdp\""));
    ck_assert_ptr_nonnull(strstr(a.out, "\"sensors\":\"procfs-cpu\""));
    ck_assert_ptr_nonnull(strstr(a.out, "tdp=45W (option)"));
    pa_test_cli_free(&a);
    pa_test_cli_free(&b);

    cli(&a, "monitor", "--formula", "cpu-tdp:tdp=45", "--count", "2", "--interval", "100ms",
        "--format", "json", NULL);
    ck_assert_msg(a.status == 0, "status %d: %s", a.status, a.err);
    size_t systems = 0;
    for (const char *p = a.out; (p = strstr(p, "{\"type\":\"system\"")); p++) {
        systems++;
        /* every window says it used cpu-tdp and gives the CPU watts */
        const char *end = strchr(p, '\n');
        const char *f = strstr(p, "\"formula\":\"cpu-tdp");
        const char *w = strstr(p, "\"power_w\":{\"cpu\":");
        ck_assert_msg(f && f < end && w && w < end, "record: %.*s", (int)(end - p), p);
        ck_assert_msg(strtod(w + strlen("\"power_w\":{\"cpu\":"), NULL) > 0, "no CPU watts: %.*s",
                      (int)(end - p), p);
    }
    ck_assert_uint_eq(systems, 2);
    pa_test_cli_free(&a);
}
END_TEST

/* --disable of a sensor a --formula requires: one clear line. */
START_TEST(test_disable_required_sensor)
{
    run r;
    cli(&r, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "1", "--disable",
        "procfs-cpu", "--formula", "cpu-tdp", NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.out, "");
    ck_assert_int_eq(count_lines(r.err), 1);
    ck_assert_msg(strstr(r.err, "--disable procfs-cpu") &&
                      strstr(r.err, "--formula cpu-tdp requires this sensor"),
                  "%s", r.err);
    pa_test_cli_free(&r);

    /* disabled alone, it keeps auto's cpu-tdp out too: nothing is left
     * on this fixture (no network), and the one line says so */
    cli(&r, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "1", "--format",
        "json", "--disable", "procfs-cpu", NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_int_eq(count_lines(r.err), 1);
    ck_assert_msg(strstr(r.err, "no module is enabled"), "%s", r.err);
    pa_test_cli_free(&r);
}
END_TEST

/* One golden case: monitor on a fixture with states, 3 windows. */
static void golden_monitor(const char *gold, const char *fix, const char *format,
                           const char *extra1, const char *extra2, const char *extra3)
{
    char *args[32];
    size_t n = 0;
    const char *base[] = {"monitor",
                          "--procfs",
                          fixture(fix, "proc"),
                          "--sysfs",
                          fixture(fix, "sys"),
                          "--hwdb",
                          PA_TEST_HWDB,
                          "--clock-step",
                          "1s",
                          "--count",
                          "3",
                          "--format",
                          format,
                          "--fixture-states",
                          states(fix)};
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        args[n++] = (char *)base[i];
    if (extra1)
        args[n++] = (char *)extra1;
    if (extra2)
        args[n++] = (char *)extra2;
    if (extra3)
        args[n++] = (char *)extra3;
    args[n] = NULL;
    run r;
    pa_test_cli(&r, args);
    ck_assert_msg(r.status == 0, "%s: status %d: %s", gold, r.status, r.err);
    ck_assert_str_eq(r.err, "");
    golden(gold, r.out);
    pa_test_cli_free(&r);
}

START_TEST(test_golden_vm_json)
{
    golden_monitor("monitor-vm-all.jsonl", FIX_VM, "json", "--all", NULL, NULL);
}
END_TEST

START_TEST(test_golden_vm_csv)
{
    golden_monitor("monitor-vm-all.csv", FIX_VM, "csv", "--all", NULL, NULL);
}
END_TEST

START_TEST(test_golden_vm_table)
{
    golden_monitor("monitor-vm-top3.txt", FIX_VM, "table", "--all", "--top", "3");
}
END_TEST

START_TEST(test_golden_vm_cgroups)
{
    golden_monitor("monitor-vm-cgroups.jsonl", FIX_VM, "json", "--all", "--cgroups", NULL);
}
END_TEST

/* Table with threads under their process and the cgroup section. */
START_TEST(test_golden_vm_threads_table)
{
    golden_monitor("monitor-vm-java-threads.txt", FIX_VM, "table", "--pid=1801", "--threads",
                   "--cgroups");
}
END_TEST

START_TEST(test_golden_desktop_json)
{
    golden_monitor("monitor-desktop-all.jsonl", FIX_DESK, "json", "--all", NULL, NULL);
}
END_TEST

START_TEST(test_golden_desktop_table)
{
    golden_monitor("monitor-desktop-all.txt", FIX_DESK, "table", "--all", NULL, NULL);
}
END_TEST

/* Run json on a fixture with its states; returns stdout (malloc'd). */
static char *fixture_json(const char *fix, const char *extra1, const char *extra2,
                          const char *extra3, const char *extra4, int want_status)
{
    run r;
    cli(&r, "monitor", FIXTURE_ARGS(fix), "--clock-step", "1s", "--count", "3", "--format", "json",
        "--fixture-states", states(fix), extra1, extra2, extra3, extra4, NULL);
    ck_assert_msg(r.status == want_status, "status %d: %s", r.status, r.err);
    char *out = r.out;
    r.out = NULL;
    pa_test_cli_free(&r);
    return out;
}

/* The watts of the golden files, computed by hand from the fixtures and
 * the cpu-tdp model (DESIGN.md section 6). */
START_TEST(test_hand_values)
{
    /* vm-nocpufreq: unknown CPU, default TDP 10 W (5 W x 2 CPUs), no
     * cpufreq so f = f_tdp: P_cpu = 0.7 x 10 = 7 W.  Capacity 2 CPU-s per
     * 1 s window.  Window 1: java used 90 ticks = 0.9 s -> 7 x 0.9 / 2 =
     * 3.15 W; window 2: 1.5 s -> 5.25 W (8.4 J so far), and "my (odd) app"
     * born in the window 0.25 s -> 0.875 W; window 3: it has exited (0 W,
     * its 0.875 J kept), pid 1729 now is "cron" (0.04 s -> 0.14 W). */
    char *out = fixture_json(FIX_VM, "--all", "--formula", "cpu-tdp", NULL, 0);
    ck_assert_ptr_nonnull(strstr(out,
                                 "{\"type\":\"system\",\"time\":1,\"interval_s\":1,"
                                 "\"formula\":\"cpu-tdp\",\"sources\":{\"cpu\":\"model\"},"
                                 "\"power_w\":{\"cpu\":7,\"nic\":0,\"total\":7,\"idle\":3.5}"));
    ck_assert_ptr_nonnull(strstr(out, "\"time\":1,\"interval_s\":1,\"pid\":1801,\"comm\":\"java\","
                                      "\"cpu_time_s\":0.9,\"power_w\":{\"cpu\":3.15,"));
    ck_assert_ptr_nonnull(strstr(out, "\"pid\":1801,\"comm\":\"java\",\"cpu_time_s\":1.5,"
                                      "\"power_w\":{\"cpu\":5.25,\"nic\":0,\"total\":5.25},"
                                      "\"energy_j\":{\"cpu\":8.4,"));
    ck_assert_ptr_nonnull(strstr(out, "\"pid\":1900,\"comm\":\"my (odd) app\","
                                      "\"cpu_time_s\":0.25,\"power_w\":{\"cpu\":0.875,"));
    ck_assert_ptr_nonnull(strstr(out, "\"pid\":1900,\"comm\":\"my (odd) app\",\"cpu_time_s\":0,"
                                      "\"power_w\":{\"cpu\":0,\"nic\":0,\"total\":0},"
                                      "\"energy_j\":{\"cpu\":0.875,\"nic\":0,\"total\":0.875},"
                                      "\"exited\":true}"));
    ck_assert_ptr_nonnull(strstr(out, "\"pid\":1729,\"comm\":\"cron\","
                                      "\"cpu_time_s\":0.04,\"power_w\":{"
                                      "\"cpu\":0.14,"));
    free(out);

    /* options reconfigure auto's formula: tdp=20W doubles everything
     * (0.9 / 2 x 0.7 x 20 = 6.3 W); share=active divides by the busy time
     * (1.0 s) instead of the capacity: 0.9 / 1.0 x 7 = 6.3 W too */
    out = fixture_json(FIX_VM, "--pid", "1801", "--formula", "cpu-tdp:tdp=20W", 0);
    ck_assert_ptr_nonnull(strstr(out, "\"power_w\":{\"cpu\":14,"));
    ck_assert_ptr_nonnull(strstr(out, "\"assumed\":[\"tdp=20W (option)\""));
    ck_assert_ptr_nonnull(strstr(out, "\"time\":1,\"interval_s\":1,\"pid\":1801,\"comm\":"
                                      "\"java\",\"cpu_time_s\":0.9,\"power_w\":{\"cpu\":6.3,"));
    free(out);
    out = fixture_json(FIX_VM, "--pid", "1801", "--formula", "cpu-tdp:share=active", 0);
    ck_assert_ptr_nonnull(strstr(out, "\"time\":1,\"interval_s\":1,\"pid\":1801,\"comm\":"
                                      "\"java\",\"cpu_time_s\":0.9,\"power_w\":{\"cpu\":6.3,"));
    /* window 2: java 1.5 s of 1.85 s busy: 7 x 1.5 / 1.85 = 5.675676 W */
    ck_assert_ptr_nonnull(strstr(out, "\"cpu_time_s\":1.5,\"power_w\":{\"cpu\":5.675676,"));
    free(out);

    /* desktop-cpufreq: i5-6500, TDP 65 W at 3200 MHz, no voltage table
     * (P ~ f).  Window 3: CPUs 0 and 1 at 3201 MHz, 2 and 3 at 800 MHz:
     * P_cpu = 0.7 x 65 x (2 x 3201/3200 + 2 x 800/3200) / 4 = 28.444609 W;
     * "my prog) (x" used 1 s of the 4 CPU-s: 7.111152 W. */
    out = fixture_json(FIX_DESK, "--pid", "3021", NULL, NULL, 0);
    ck_assert_ptr_nonnull(strstr(out, "\"time\":3,\"interval_s\":1,"
                                      "\"formula\":\"cpu-tdp\",\"sources\":"
                                      "{\"cpu\":\"model\"},\"power_w\":{"
                                      "\"cpu\":28.444609,"));
    ck_assert_ptr_nonnull(strstr(out, "\"pid\":3021,\"comm\":\"my prog) "
                                      "(x\",\"cpu_time_s\":1,\"power_w\":{"
                                      "\"cpu\":7.111152,"));
    /* only the watched pid */
    ck_assert_ptr_null(strstr(out, "\"pid\":3100"));
    free(out);
}
END_TEST

/* An unknown pid is named and fails the run; the other targets go on. */
START_TEST(test_unknown_pid_fixture)
{
    run r;
    cli(&r, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "3", "--format",
        "json", "--fixture-states", states(FIX_VM), "--pid", "4242", "--pid", "1801", "--threads",
        NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "powerapi monitor: pid 4242: no such process\n");
    golden("monitor-vm-java-threads.jsonl", r.out);
    pa_test_cli_free(&r);

    cli(&r, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "3", "--pid", "4242",
        NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "4242"));
    ck_assert_str_eq(r.out, "");
    pa_test_cli_free(&r);
}
END_TEST

/* A watched pid that exits ends the run after its last record. */
START_TEST(test_watched_pid_exits)
{
    char *out = fixture_json(FIX_VM, "--pid", "1900", NULL, NULL, 1);
    ck_assert_str_eq(out, ""); /* 1900 is born at tick 2: unknown at start */
    free(out);

    run r;
    cli(&r, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "10", "--format",
        "json", "--fixture-states", states(FIX_VM), "--pid", "1729", NULL);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    /* (sd-pam) idles in windows 1 and 2 and is gone (its pid reused) in
     * window 3: the run stops there instead of going on to 10 */
    ck_assert_ptr_nonnull(strstr(r.out, "\"exited\":true}"));
    ck_assert_ptr_null(strstr(r.out, "\"time\":4"));
    pa_test_cli_free(&r);
}
END_TEST

/* --output writes the same records to a file, nothing to stdout. */
START_TEST(test_output_file)
{
    char *dir = pa_test_tmpdir();
    char path[4096];
    snprintf(path, sizeof(path), "%s/out.csv", dir);
    run r;
    cli(&r, "monitor", FIXTURE_ARGS(FIX_VM), "--clock-step", "1s", "--count", "3", "--format",
        "csv", "--fixture-states", states(FIX_VM), "--all", "--output", path, NULL);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    ck_assert_str_eq(r.out, "");
    char *text = pa_test_slurp(path);
    ck_assert_ptr_nonnull(text);
    golden("monitor-vm-all.csv", text);
    free(text);
    pa_test_cli_free(&r);
    pa_test_rmtree(dir);
}
END_TEST

/* Inputs that must not crash: every outcome is an exit status. */
START_TEST(test_no_crash)
{
    static const char *const cases[][8] = {
        {"monitor", "--pid", "99999999999999999999"},
        {"monitor", "--interval", "-1s"},
        {"monitor", "--interval", "99999999999999999h"},
        {"monitor", "--sensor", "::::"},
        {"monitor", "--formula", "cpu-tdp:=,=,,=="},
        {"monitor", "--top", "99999999999999999999999"},
        {"monitor", "--output", "/nonexistent/dir/file"},
        {"monitor", "--", ""},
        {"modules", "--hwdb", "/nonexistent"},
        {"help", "nosuch"},
        {"\xff\xfe"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run r;
        char *args[10] = {0};
        size_t n = 0;
        for (; n < 8 && cases[i][n]; n++)
            args[n] = (char *)cases[i][n];
        /* keep runs short and off the live /proc where it matters */
        if (!strcmp(cases[i][0], "monitor") && n + 2 <= 8 && strcmp(cases[i][1], "--")) {
            args[n++] = "--count";
            args[n++] = "1";
        }
        pa_test_cli(&r, args);
        ck_assert_msg(!r.signaled, "case %zu crashed (status %d): %s", i, r.status, r.err);
        ck_assert_msg(r.status != 0, "case %zu accepted", i);
        pa_test_cli_free(&r);
    }
}
END_TEST

/* RAPL's energy_uj root-only (0400 root, as Linux >= 5.10 makes it): a
 * user who may not read it gets modelled power and one line saying how to
 * get measured power (the group powerapi); root, or a user who chose a
 * formula, gets no such line.  Runs the binary as nobody through setpriv,
 * so it needs root. */
START_TEST(test_rapl_root_only_hint)
{
    if (geteuid() != 0) {
        fprintf(stderr, "test_rapl_root_only_hint: skipped: becoming "
                        "another user (setpriv) needs root\n");
        return;
    }
    char *root = pa_test_fixture_copy("rapl-wrap");
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "chmod -R a+rX '%s' && chmod 0400 "
             "'%s/sys/class/powercap/intel-rapl:0/energy_uj'",
             root, root);
    ck_assert_int_eq(pa_test_run(cmd, NULL), 0);
    static const struct {
        const char *as;     /* setpriv prefix, or "" for root */
        const char *extra;  /* more options */
        const char *source; /* in the header line */
        int hints;          /* lines saying how to get measured power */
    } cases[] = {
        {"setpriv --reuid=65534 --regid=65534 --clear-groups ", "", "(modelled)", 1},
        {"", "", "(measured)", 0},
        {"setpriv --reuid=65534 --regid=65534 --clear-groups ", "--formula cpu-tdp:tdp=45",
         "(modelled)", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(cmd, sizeof(cmd),
                 "cd / && %s'%s' monitor --procfs '%s/proc' --sysfs '%s/sys' "
                 "--hwdb '%s' --count 1 --interval 100ms %s 2>&1",
                 cases[i].as, CLI_PATH, root, root, PA_TEST_HWDB, cases[i].extra);
        ck_assert_msg(pa_test_run(cmd, &out) == 0, "case %zu: %s", i, out);
        ck_assert_msg(strstr(out, cases[i].source), "case %zu: %s", i, out);
        int n = 0;
        for (const char *p = out; (p = strstr(p, "for measured power join the group powerapi"));
             p++)
            n++;
        ck_assert_msg(n == cases[i].hints, "case %zu: %d hints: %s", i, n, out);
        if (n)
            ck_assert_ptr_nonnull(strstr(out, "powerapi monitor: power is modelled: RAPL's energy "
                                              "counters are readable by root only"));
        free(out);
        out = NULL;
    }
    pa_test_rmtree(root);
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("args");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_help_version);
    tcase_add_loop_test(tc, test_usage_errors, 0, sizeof(bad_usage) / sizeof(bad_usage[0]));
    tcase_add_test(tc, test_no_crash);
    suite_add_tcase(s, tc);

    tc = tcase_create("fixtures");
    /* several runs of the binary per test: slow under the sanitizers */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_unknown_module);
    tcase_add_test(tc, test_bad_roots);
    tcase_add_test(tc, test_modules_fixture);
    tcase_add_test(tc, test_modules_calibration);
    tcase_add_test(tc, test_formula_alone);
    tcase_add_test(tc, test_disable_required_sensor);
    tcase_add_test(tc, test_golden_vm_json);
    tcase_add_test(tc, test_golden_vm_csv);
    tcase_add_test(tc, test_golden_vm_table);
    tcase_add_test(tc, test_golden_vm_cgroups);
    tcase_add_test(tc, test_golden_vm_threads_table);
    tcase_add_test(tc, test_golden_desktop_json);
    tcase_add_test(tc, test_golden_desktop_table);
    tcase_add_test(tc, test_hand_values);
    tcase_add_test(tc, test_unknown_pid_fixture);
    tcase_add_test(tc, test_watched_pid_exits);
    tcase_add_test(tc, test_output_file);
    tcase_add_test(tc, test_rapl_root_only_hint);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(cli_suite());
}
