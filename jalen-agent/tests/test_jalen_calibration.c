/*
 * test_jalen_calibration.c - the agent's calibration= option (real JVMs).
 *
 * A calibration file in the format `powerapi calibrate` writes
 * (libpowerapi/src/curve.c, pa__calib_write) is given with
 * calibration=FILE: auto then chooses cpu-curve with the file's curve
 * (this machine has no RAPL), and summary.json says so.  The file's
 * points lie on a line, P(u) = P0 + K u with K = 100 W for the whole
 * machine, so the process's CPU energy follows from its CPU time alone,
 * whatever else loads the machine: cpu-curve splits the dynamic part
 * K u by CPU time over the busy time, so E_cpu = K / N x CPU time (N the
 * online CPUs, the file's `cpus`).  The default per-vCPU curve would
 * give 2.76 J per CPU second instead.  A missing file: one `jalen:` line
 * naming it, and the JVM runs its program without the agent.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jtest.h"

#define SLOPE_W 100.0 /* the file's P(100 %) - P(0) */

/* The model name of this CPU (the file is then "made on this CPU"). */
static void cpu_model(char *out, size_t len)
{
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "model name", 10)) {
            char *v = strchr(line, ':');
            if (v) {
                v += 1 + (v[1] == ' ');
                v[strcspn(v, "\n")] = '\0';
                snprintf(out, len, "%s", v);
            }
            break;
        }
    if (f)
        fclose(f);
}

static void write_calibration(const char *path, long ncpus)
{
    char model[256];
    cpu_model(model, sizeof(model));
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "# powerapi calibration (written by `powerapi calibrate`, read by the "
            "cpu-curve formula)\n"
            "cpu \"%s\"\n"
            "kernel \"test\"\n"
            "date \"2026-11-23T17:00:00Z\"\n"
            "cpus %ld\n"
            "mhz 0\n"
            "# point LOAD%% WATTS RMS_RESIDUAL_W (RAPL package+DRAM power of the machine)\n",
            model, ncpus);
    for (int k = 0; k <= 4; k++)
        fprintf(f, "point %.2f %.4f %.4f\n", 25.0 * k, 20 + SLOPE_W * k / 4, 0.1);
    fprintf(f, "validation mean_pct=1.500 p95_pct=3.000 energy_pct=0.200\n");
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(calibration_file_drives_cpu_curve)
{
    char *dir = jt_tmpdir();
    char calib[4200], opts[8600], p[4200];
    snprintf(calib, sizeof(calib), "%s/calibration.txt", dir);
    long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    ck_assert_int_gt(ncpus, 0);
    write_calibration(calib, ncpus);
    /* carbon-intensity too (issue 29), in the same JVM: grams beside
     * joules, the intensity stated */
    snprintf(opts, sizeof(opts), "calibration=%s,window=500ms,carbon-intensity=400", calib);
    const char *args[] = {"SpinBench", NULL};
    char *sum = jt_run_quiet(dir, opts, args, 120);
    ck_assert_msg(strstr(sum, "\"formula\": \"cpu-curve"), "formula not cpu-curve: %s", sum);
    ck_assert_msg(strstr(sum, "\"cpu_source\": \"model\""), "cpu_source not model: %s", sum);
    char want[4300];
    snprintf(want, sizeof(want), "cpu-curve: calibration %s", calib);
    ck_assert_msg(strstr(sum, want), "assumed does not name the file (%s): %s", want, sum);
    ck_assert_msg(!strstr(sum, "default 0.74 W"), "the default curve was used: %s", sum);

    /* the figure follows the file: K / N joules per CPU second */
    jt_csv th;
    snprintf(p, sizeof(p), "%s/out/threads.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &th), 0);
    double cpu_s = jt_csv_sum(&th, 2);
    double e_cpu = jt_json_num(sum, "process_cpu_energy_j");
    double want_per_s = SLOPE_W / (double)ncpus;
    fprintf(stderr,
            "calibration: %.3f J over %.3f CPU s = %.2f J per CPU s (file: %.2f; default "
            "curve: 2.76)\n",
            e_cpu, cpu_s, e_cpu / cpu_s, want_per_s);
    ck_assert_msg(cpu_s >= 1.0, "only %.3f s of CPU: workload too short", cpu_s);
    ck_assert_msg(fabs(e_cpu / cpu_s - want_per_s) <= 0.15 * want_per_s,
                  "%.2f J per CPU s, the file's curve gives %.2f (+-15 %%)", e_cpu / cpu_s,
                  want_per_s);
    double e = jt_json_num(sum, "process_energy_j"), g = jt_json_num(sum, "process_co2e_g");
    ck_assert_msg(e > 0 && fabs(g - e * 400 / 3.6e6) <= 1e-9 + 1e-6 * g,
                  "process_co2e_g %.9f for %.9f J at 400 g/kWh", g, e);
    ck_assert_msg(jt_json_num(sum, "carbon_intensity_g_per_kwh") == 400, "%s", sum);
    ck_assert_msg(strstr(sum, "\"carbon intensity 400 gCO2e/kWh (given, not measured)\""),
                  "the intensity is not among the assumed: %s", sum);
    snprintf(p, sizeof(p), "%s/out/flamegraph.html", dir);
    char *html = jt_read(p);
    ck_assert_msg(html && strstr(html, "at an assumed 400 gCO2e/kWh"), "flame graph title");
    free(html);
    jt_csv_free(&th);
    free(sum);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

/* A calibration= file the agent refuses (content NULL: absent): one
 * jalen: line naming the file and cause, the program runs on, no profile. */
static void refused_calibration(const char *content, const char *cause)
{
    char *dir = jt_tmpdir();
    char calib[4200], opts[8600], errf[4200], line[256];
    snprintf(calib, sizeof(calib), "%s/calibration.txt", dir);
    if (content) {
        FILE *f = fopen(calib, "w");
        ck_assert_ptr_nonnull(f);
        fputs(content, f);
        fclose(f);
    }
    snprintf(opts, sizeof(opts), "out=%s/out,calibration=%s", dir, calib);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    const char *args[] = {"Hello", NULL};
    int fd;
    pid_t pid = jt_spawn(opts, JALEN_CLASSES, args, &fd, errf);
    ck_assert_int_gt(pid, 0);
    /* the program runs on */
    ck_assert_msg(jt_wait_line(fd, "hello", line, sizeof(line), 60) == 0, "no 'hello'");
    int st = jt_wait(pid, 60);
    close(fd);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "java failed (%d)", st);
    char *err = jt_read(errf);
    ck_assert_ptr_nonnull(err);
    fprintf(stderr, "agent's stderr: %s", err);
    ck_assert_msg(jt_lines(err) == 1, "not one line: %s", err);
    ck_assert_msg(!strncmp(err, "jalen: calibration=", 19), "not a jalen: line: %s", err);
    ck_assert_msg(strstr(err, calib) && strstr(err, cause) && strstr(err, "the JVM runs on"),
                  "the line does not name the file, the cause and what happens: %s", err);
    free(err);
    /* no profile was made */
    char p[4300];
    snprintf(p, sizeof(p), "%s/out/summary.json", dir);
    ck_assert_msg(access(p, F_OK) != 0, "summary.json written without the agent");
    jt_rmtree(dir);
    free(dir);
}

START_TEST(missing_calibration_file)
{
    refused_calibration(NULL, "No such file or directory");
}
END_TEST

/* A file that exists but is not a calibration is refused as the CLI's
 * --calibration refuses it, by the library's own reader (it was accepted
 * and silently replaced by the default curve). */
START_TEST(malformed_calibration_file)
{
    refused_calibration("cpu \"x\"\nnot a calibration\n", ":2: cannot parse");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen-calibration");
    TCase *tc = tcase_create("calibration");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, calibration_file_drives_cpu_curve);
    tcase_add_test(tc, missing_calibration_file);
    tcase_add_test(tc, malformed_calibration_file);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
