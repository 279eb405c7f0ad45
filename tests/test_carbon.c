/*
 * test_carbon.c - grams of CO2e at a carbon intensity the user gives
 * (issue 29): the library's parser and conversion, and every output of
 * the commands that take --carbon-intensity (monitor's JSON, CSV and
 * table on a fixture, serve's page, profile's files), whose grams must be
 * the joules they print x the intensity / 3.6e6, with the intensity
 * stated; without the option, no carbon figure at all.
 */
#include "cli.h"
#include "profcore.h"
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX_VM "vm-nocpufreq"
#define FORMS "385, 56.5 or 385g/kWh"

/* ------------------------------------------------------------------ */
/* The library                                                         */
/* ------------------------------------------------------------------ */

static const struct {
    const char *s;
    int rc;
    double want;
} parse_cases[] = {
    {"385", 0, 385},           {"56.5", 0, 56.5},     {"385g/kWh", 0, 385}, {"12gCO2e/kWh", 0, 12},
    {"5000", 0, 5000},         {"0.5", 0, 0.5},       {"0", -ERANGE, 0},    {"-3", -ERANGE, 0},
    {"5000.5", -ERANGE, 0},    {"1e400", -ERANGE, 0}, {"abc", -EINVAL, 0},  {"", -EINVAL, 0},
    {"nan", -EINVAL, 0},       {"inf", -EINVAL, 0},   {"0x10", -EINVAL, 0}, {"12kg", -EINVAL, 0},
    {"385 g/kWh", -EINVAL, 0},
};

START_TEST(intensity_parse)
{
    double v = -1;
    int rc = pa_carbon_intensity_parse(parse_cases[_i].s, &v);
    ck_assert_msg(rc == parse_cases[_i].rc, "'%s': %d (%s)", parse_cases[_i].s, rc,
                  pa_last_error());
    if (rc == 0) {
        ck_assert_double_eq(v, parse_cases[_i].want);
    } else {
        ck_assert_double_eq(v, -1); /* untouched */
        ck_assert_msg(strstr(pa_last_error(), FORMS), "forms not named: %s", pa_last_error());
        ck_assert_ptr_nonnull(strstr(pa_last_error(), parse_cases[_i].s));
    }
}
END_TEST

START_TEST(conversion)
{
    double g = -1;
    ck_assert_int_eq(pa_carbon_g(3.6e6, 400, &g), 0); /* one kWh */
    ck_assert_double_eq(g, 400);
    ck_assert_int_eq(pa_carbon_g(1000, 385, &g), 0);
    ck_assert_double_eq_tol(g, 1000 * 385 / 3.6e6, 1e-15);
    ck_assert_int_eq(pa_carbon_g(0, 56.5, &g), 0);
    ck_assert_double_eq(g, 0);
    g = -1;
    ck_assert_int_eq(pa_carbon_g(10, 0, &g), -ERANGE);
    ck_assert_int_eq(pa_carbon_g(10, 5001, &g), -ERANGE);
    ck_assert_int_eq(pa_carbon_g(10, NAN, &g), -ERANGE);
    ck_assert_int_eq(pa_carbon_g(NAN, 385, &g), -EDOM);
    ck_assert_int_eq(pa_carbon_g(INFINITY, 385, &g), -EDOM);
    ck_assert_double_eq(g, -1);
    ck_assert_int_eq(pa_carbon_g(10, 385, NULL), -EINVAL);

    char buf[128];
    int n = pa_carbon_assumption(56.5, buf, sizeof(buf));
    ck_assert_str_eq(buf, "carbon intensity 56.5 gCO2e/kWh (given, not measured)");
    ck_assert_int_eq(n, (int)strlen(buf));
    ck_assert_int_eq(pa_carbon_assumption(56.5, NULL, 0), n);
    ck_assert_int_eq(pa_carbon_assumption(-1, buf, sizeof(buf)), -ERANGE);
    ck_assert_int_eq(pa_carbon_assumption(385, NULL, 4), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* monitor on a fixture                                                */
/* ------------------------------------------------------------------ */

static char *fixture_path(const char *sub)
{
    static char buf[4][4096];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/" FIX_VM "/%s", PA_FIXTURES, sub);
    return buf[k];
}

/* monitor on the VM fixture, 3 windows of 1 s, every process, in fmt,
 * with intensity (NULL: without the option).  Returns stdout. */
static char *monitor(const char *fmt, const char *intensity)
{
    char states[4096];
    snprintf(states, sizeof(states), "%s/states-" FIX_VM, PA_GOLDEN_DIR);
    char *args[] = {"monitor",
                    "--all",
                    "--hwdb",
                    PA_TEST_HWDB,
                    "--count",
                    "3",
                    "--procfs",
                    fixture_path("proc"),
                    "--clock-step",
                    "1s",
                    "--sysfs",
                    fixture_path("sys"),
                    "--fixture-states",
                    states,
                    "-f",
                    (char *)fmt,
                    intensity ? "--carbon-intensity" : NULL,
                    (char *)intensity,
                    NULL};
    pa_test_cli_run r;
    pa_test_cli(&r, args);
    ck_assert_msg(r.status == 0, "monitor %s: %d %s", fmt, r.status, r.err);
    char *out = r.out;
    r.out = NULL;
    pa_test_cli_free(&r);
    return out;
}

static double num_after(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    ck_assert_msg(p != NULL, "no %s in %s", key, s);
    return strtod(p + strlen(key), NULL);
}

/* Every JSON record: co2e_g = energy_j.total x 400 / 3.6e6 (6 decimals
 * as printed), the intensity in the record and in the system's assumed. */
START_TEST(monitor_json)
{
    char *out = monitor("json", "400");
    int records = 0, systems = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        double j = num_after(strstr(line, "\"energy_j\":{"), "\"total\":");
        double g = num_after(line, "\"co2e_g\":");
        ck_assert_msg(fabs(g - j * 400 / 3.6e6) <= 5e-7, "%.6f g for %.6f J: %s", g, j, line);
        ck_assert_double_eq(num_after(line, "\"carbon_intensity_g_per_kwh\":"), 400);
        if (strstr(line, "\"type\":\"system\"")) {
            ck_assert_ptr_nonnull(
                strstr(line, "\"carbon intensity 400 gCO2e/kWh (given, not measured)\"]"));
            ck_assert(j > 1); /* real figures, not zeros */
            systems++;
        }
        records++;
    }
    ck_assert_int_eq(systems, 3);
    ck_assert_int_gt(records, 6);
    free(out);
}
END_TEST

/* CSV: the header's two columns at the end, each row's grams of its
 * energy_j.total (column 15), the intensity in the system's assumed. */
START_TEST(monitor_csv)
{
    char *out = monitor("csv", "56.5");
    char *save = NULL;
    char *line = strtok_r(out, "\n", &save);
    size_t len = strlen(line);
    const char *tail = ",co2e_g,carbon_intensity_g_per_kwh";
    ck_assert_msg(len > strlen(tail) && !strcmp(line + len - strlen(tail), tail), "%s", line);
    int rows = 0;
    while ((line = strtok_r(NULL, "\n", &save))) {
        /* energy_j.total: the 15th field (no quoted field before it) */
        const char *p = line;
        for (int k = 0; k < 14; k++)
            p = strchr(p, ',') + 1;
        double j = strtod(p, NULL);
        const char *last = strrchr(line, ',');
        const char *before = last - 1;
        while (*before != ',')
            before--;
        double g = strtod(before + 1, NULL);
        ck_assert_double_eq(strtod(last + 1, NULL), 56.5);
        ck_assert_msg(fabs(g - j * 56.5 / 3.6e6) <= 5e-7, "%.6f g for %.6f J: %s", g, j, line);
        if (!strncmp(line, "system,", 7))
            ck_assert_ptr_nonnull(strstr(line, ";carbon intensity 56.5 gCO2e/kWh (given"));
        rows++;
    }
    ck_assert_int_gt(rows, 6);
    free(out);
}
END_TEST

/* The table: a CO2e column, the system line's grams, the assumption. */
START_TEST(monitor_table)
{
    char *out = monitor("table", "385");
    ck_assert_ptr_nonnull(strstr(out, "ENERGY J     CO2e g\n"));
    ck_assert_ptr_nonnull(strstr(out, "  assumed: carbon intensity 385 gCO2e/kWh (given, not "
                                      "measured)\n"));
    /* the last system line: its joules and grams */
    const char *sys = out, *p;
    while ((p = strstr(sys + 1, "\nsystem ")))
        sys = p;
    double j = num_after(sys, "energy "), g = num_after(sys, "CO2e ");
    ck_assert_msg(fabs(g - j * 385 / 3.6e6) <= 1e-6 + 0.005 * 385 / 3.6e6, "%s", sys);
    free(out);
}
END_TEST

/* Without the option: nothing of carbon in any format (the golden files
 * of test_cli hold the rest identical). */
START_TEST(monitor_without)
{
    static const char *const fmts[] = {"json", "csv", "table"};
    for (int i = 0; i < 3; i++) {
        char *out = monitor(fmts[i], NULL);
        ck_assert_msg(!strstr(out, "co2e") && !strstr(out, "CO2e") && !strstr(out, "carbon"), "%s",
                      out);
        free(out);
    }
}
END_TEST

/* A bad value: one line that names the forms (test_cli_options checks
 * that every command that takes the option prints the same line, and
 * that the others refuse it). */
START_TEST(usage_errors)
{
    static const char *const bad[] = {"-3", "abc", "9000"};
    for (int b = 0; b < 3; b++) {
        char *args[] = {"monitor", "--carbon-intensity", (char *)bad[b], NULL};
        pa_test_cli_run r;
        pa_test_cli(&r, args);
        ck_assert_msg(r.status == 2, "%s: %d %s", bad[b], r.status, r.err);
        ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "%s", r.err);
        ck_assert_msg(strstr(r.err, "--carbon-intensity: carbon intensity") &&
                          strstr(r.err, bad[b]) && strstr(r.err, FORMS),
                      "%s", r.err);
        pa_test_cli_free(&r);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* serve's page                                                        */
/* ------------------------------------------------------------------ */

/* The value of the series that starts with prefix (a whole line). */
static double series(const char *page, const char *prefix)
{
    char want[512];
    snprintf(want, sizeof(want), "\n%s", prefix);
    const char *p = strstr(page, want);
    ck_assert_msg(p != NULL, "no %s in\n%s", prefix, page);
    return strtod(strchr(p + 1, ' ') + 1, NULL);
}

START_TEST(serve_page)
{
    char *root = pa_test_fixture_copy(FIX_VM);
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1000000000ull), 0);
    /* java: 100 more ticks of CPU time (1 s) in the window */
    pa_test_write(root, "proc/1801/stat",
                  "1801 (java) S 1734 1801 1734 34816 1801 4194560 2801 0 0 0 4500 401 0 0 20 0 6 "
                  "0 70011 17862656 1124 18446744073709551615 0 0 0 0 0 0 0 4096 1256 0 0 0 17 0 "
                  "0 0 0 0 0\n");
    pa_test_write(root, "proc/stat",
                  "cpu  10232 12 8151 1698521 2203 0 411 1530 0 0\n"
                  "cpu0 5361 5 4240 848831 1190 0 289 771 0 0\n"
                  "cpu1 4871 7 3911 849690 1013 0 122 759 0 0\n"
                  "intr 0\nctxt 0\nbtime 1732191396\nprocesses 1\n");
    ck_assert_int_eq(pa_tick_at(ctx, 2000000000ull), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    size_t len;
    char *page = cli_serve_page(r, 0, "n1", 0, &len);
    ck_assert_msg(!strstr(page, "co2e") && !strstr(page, "carbon"), "%s", page);
    free(page);
    page = cli_serve_page(r, 0, "n1", 385, &len);
    double j = series(page, "powerapi_system_energy_joules_total ");
    double g = series(page, "powerapi_system_co2e_grams_total ");
    ck_assert(j > 0);
    ck_assert_msg(fabs(g - j * 385 / 3.6e6) <= 1e-9 + 1e-6 * g, "%g g for %g J", g, j);
    j = series(page, "powerapi_process_energy_joules_total{pid=\"1801\",comm=\"java\"} ");
    g = series(page, "powerapi_process_co2e_grams_total{pid=\"1801\",comm=\"java\"} ");
    ck_assert(j > 0);
    ck_assert_msg(fabs(g - j * 385 / 3.6e6) <= 1e-9 + 1e-6 * g, "%g g for %g J", g, j);
    ck_assert_double_eq(series(page, "powerapi_carbon_intensity_grams_per_kwh "), 385);
    ck_assert_ptr_nonnull(strstr(page, "# HELP powerapi_process_co2e_grams_total Grams of CO2e "
                                       "of a process's energy since powerapi first saw it at an "
                                       "assumed carbon intensity of 385 gCO2e/kWh"));
    ck_assert_ptr_nonnull(strstr(page, "# TYPE powerapi_system_co2e_grams_total counter\n"));
    ck_assert_ptr_nonnull(
        strstr(page, "carbon intensity 385 gCO2e/kWh (given, not measured)\"} 1"));
    free(page);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* ------------------------------------------------------------------ */
/* profile's and jalen's files (profcore)                              */
/* ------------------------------------------------------------------ */

START_TEST(profile_files)
{
    pc_prof *p;
    ck_assert_int_eq(pc_prof_new(&p, NULL, 0), 0);
    pc_frame f = pc_frame_pseudo("work");
    ck_assert_int_eq(pc_prof_add(p, &f, 1, 7.2, 0.5, 50, 100, 100, "app", "app"), 0);
    pc_source src = {.formula = "cpu-tdp", .assumed = "tdp=15W", .carbon_g_per_kwh = 250};
    pc_meta m = {0};
    m.title = m.event = m.call_graph = "t";
    m.target = "pid 100";
    m.kernel_state = "";
    m.source = &src;
    m.exit_status = -1;
    m.tree_j = m.unseen_j = -1;
    m.process_j = 7.2;
    char *dir = pa_test_tmpdir();
    ck_assert_int_eq(pc_prof_write(p, dir, &m), 0);
    char path[4200];
    snprintf(path, sizeof(path), "%s/summary.json", dir);
    char *sum = pa_test_slurp(path);
    ck_assert_ptr_nonnull(sum);
    ck_assert_double_eq_tol(num_after(sum, "\"process_co2e_g\": "), 7.2 * 250 / 3.6e6, 1e-9);
    ck_assert_double_eq(num_after(sum, "\"carbon_intensity_g_per_kwh\": "), 250);
    ck_assert_ptr_nonnull(strstr(sum, "\"assumed\": [\"tdp=15W\", \"carbon intensity 250 "
                                      "gCO2e/kWh (given, not measured)\"]"));
    free(sum);
    /* the summary on stderr */
    char *text = NULL;
    size_t tlen = 0;
    FILE *mf = open_memstream(&text, &tlen);
    pc_prof_print_top(p, mf, dir, &m, 3);
    fclose(mf);
    ck_assert_msg(strstr(text, "profile: CO2e 0.000500 g at an assumed 250 gCO2e/kWh"), "%s", text);
    free(text);
    /* a CSV writer's columns (jalen's scopes.csv) */
    mf = open_memstream(&text, &tlen);
    pc_source_carbon_csv_header(mf, &src);
    pc_source_carbon_csv_row(mf, &src, 36);
    pc_source_carbon_csv_row(mf, &src, NAN);
    fclose(mf);
    ck_assert_str_eq(text, ",co2e_g,carbon_intensity_g_per_kwh,0.002500000,250,,250");
    free(text);
    /* and none of it without an intensity */
    src.carbon_g_per_kwh = 0;
    ck_assert_int_eq(pc_prof_write(p, dir, &m), 0);
    sum = pa_test_slurp(path);
    ck_assert_msg(!strstr(sum, "co2e") && !strstr(sum, "carbon"), "%s", sum);
    free(sum);
    char buf[64] = "x";
    pc_source_carbon_text(&src, 1, buf, sizeof(buf));
    ck_assert_str_eq(buf, "");
    pa_test_rmtree(dir);
    pc_prof_free(p);
    pc_intern_free();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("carbon");
    TCase *tc = tcase_create("carbon");
    tcase_add_loop_test(tc, intensity_parse, 0, sizeof(parse_cases) / sizeof(parse_cases[0]));
    tcase_add_test(tc, conversion);
    tcase_add_test(tc, monitor_json);
    tcase_add_test(tc, monitor_csv);
    tcase_add_test(tc, monitor_table);
    tcase_add_test(tc, monitor_without);
    tcase_add_test(tc, usage_errors);
    tcase_add_test(tc, serve_page);
    tcase_add_test(tc, profile_files);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
