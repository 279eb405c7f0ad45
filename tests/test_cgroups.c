/*
 * test_cgroups.c - per-cgroup power end to end, on the cgroups-server
 * fixture: a 4-CPU server with RAPL whose processes live in different
 * cgroup v2 paths (a systemd service with two processes, a docker
 * container, a QEMU VM scope, a login session, the root cgroup, and a
 * process with only cgroup v1 lines).  Each window: 3 of 4 CPU-seconds
 * busy, package 120 J, so rapl-share (idle=separate) gives an active
 * 90 W split by CPU time: 0.3 W per 1/100 s tick.  Through the library
 * (pa_report_cgroups, pa_cgroup_power, report records) and through the
 * CLI (`powerapi monitor --cgroups --format json` replaying the states).
 */
#include "cli.h"
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-9
#define FIX "cgroups-server"

static char *overlay_dst;
static size_t overlay_skip;

static int overlay_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (type != FTW_F)
        return 0;
    char *text = pa_test_slurp(path);
    ck_assert(text != NULL);
    pa_test_write(overlay_dst, path + overlay_skip, "%s", text);
    free(text);
    return 0;
}

/* Writes the fixture's states/<k> overlay over the copy at root. */
static void apply_state(const char *root, int k)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/%s/states/%d", PA_FIXTURES, FIX, k);
    overlay_dst = (char *)root;
    overlay_skip = strlen(dir) + 1;
    ck_assert_int_eq(nftw(dir, overlay_one, 16, FTW_PHYS), 0);
}

static const struct {
    const char *cgroup;
    double cpu_s, cpu_w;
} expected[] = {
    {"/system.slice/nginx.service", 0.75, 22.5}, /* 2 processes */
    {"/system.slice/docker-4f3a9c0e1b2d.scope", 1.0, 30},
    {"/machine.slice/machine-qemu\\x2d1\\x2dvm1.scope", 1.0, 30},
    {"/user.slice/user-1000.slice/session-2.scope", 0.1, 3},
    {"/", 0.05, 1.5},
};
#define NEXP (sizeof(expected) / sizeof(expected[0]))

START_TEST(library_cgroup_records)
{
    char *root = pa_test_fixture_copy(FIX);
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_report_cgroups(ctx, 1), 0);
    ck_assert_int_eq(pa_tick_at(ctx, NS_PER_S), 0);
    for (int k = 1; k <= 2; k++) {
        apply_state(root, k);
        int rc = pa_tick_at(ctx, (uint64_t)(k + 1) * NS_PER_S);
        ck_assert_msg(rc == 0, "tick %d: %s", k, pa_last_error());
        for (size_t i = 0; i < NEXP; i++) {
            pa_power p;
            rc = pa_cgroup_power(ctx, expected[i].cgroup, &p);
            ck_assert_msg(rc == 0, "%s: %s", expected[i].cgroup, pa_last_error());
            ck_assert_double_eq_tol(p.cpu_w, expected[i].cpu_w, TOL);
            ck_assert_double_eq_tol(p.cpu_time_s, expected[i].cpu_s, TOL);
            ck_assert_double_eq_tol(p.cpu_j, expected[i].cpu_w * k, TOL);
            ck_assert(p.flags & PA_POWER_MEASURED);
        }
    }
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    size_t ncg = 0;
    double cg_sum = 0, proc_sum = 0;
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *t = &r->targets[i];
        if (t->type == PA_TARGET_CGROUP) {
            ncg++;
            if (strstr(t->cgroup, "docker-")) { /* its container, by the path */
                ck_assert_ptr_nonnull(t->names);
                ck_assert_str_eq(t->names->runtime, "docker");
                ck_assert_str_eq(t->names->container_id, "4f3a9c0e1b2d");
            }
            cg_sum += t->power.cpu_w;
        } else if (t->type == PA_TARGET_PROCESS) {
            proc_sum += t->power.cpu_w;
            if (t->pid == 1002) {
                ck_assert_str_eq(t->cgroup, "/system.slice/nginx.service");
                ck_assert_ptr_nonnull(t->names); /* its unit (issue 27) */
                ck_assert_str_eq(t->names->unit, "nginx.service");
            }
            if (t->pid == 6001) /* cgroup v1 only: its v1 path (issue 27) */
                ck_assert_str_eq(t->cgroup, "/legacy");
        }
    }
    /* the five cgroups, and the v1-only process (3 W) in its v1 one */
    ck_assert_uint_eq(ncg, NEXP + 1);
    ck_assert_double_eq_tol(cg_sum, proc_sum, TOL);
    ck_assert_double_eq_tol(proc_sum + r->system.idle_w, r->system.cpu_w, TOL);
    ck_assert_double_eq_tol(r->system.cpu_w, 120, TOL);
    pa_report_free(r);
    /* a cgroup with no process */
    pa_power p;
    ck_assert_int_eq(pa_cgroup_power(ctx, "/nope.slice", &p), -ENOENT);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(no_cgroup_records_unless_asked)
{
    char *root = pa_test_fixture_copy(FIX);
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_tick_at(ctx, NS_PER_S), 0);
    apply_state(root, 1);
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    pa_power p;
    ck_assert_int_eq(pa_cgroup_power(ctx, "/system.slice/nginx.service", &p), -ENOENT);
    ck_assert_msg(strstr(pa_last_error(), "pa_report_cgroups"), "%s", pa_last_error());
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* The number after key in line, or -1. */
static double json_num(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (!p)
        return -1;
    return strtod(p + strlen(key), NULL);
}

START_TEST(cli_cgroup_records)
{
    char *root = pa_test_fixture_copy(FIX);
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "'%s' monitor --all --cgroups --format json --procfs '%s/proc' "
             "--sysfs '%s/sys' --hwdb '%s' --clock-step 1s --count 2 "
             "--fixture-states '%s/states' 2>&1",
             CLI_PATH, root, root, PA_TEST_HWDB, root);
    char *out = NULL;
    int st = pa_test_run(cmd, &out);
    ck_assert_msg(st == 0, "exit %d: %s", st, out ? out : "");
    ck_assert(out != NULL);
    size_t found = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"type\":\"system\"")) {
            ck_assert_msg(strstr(line, "\"formula\":\"rapl-share\""), "%s", line);
            ck_assert_msg(strstr(line, "\"cpu\":\"rapl\""), "%s", line);
            ck_assert_double_eq_tol(json_num(line, "\"idle\":"), 30, TOL);
            continue;
        }
        if (!strstr(line, "\"type\":\"cgroup\"") || json_num(line, "\"time\":") != 2)
            continue;
        for (size_t i = 0; i < NEXP; i++) {
            char key[256];
            snprintf(key, sizeof(key), "\"cgroup\":\"%s\"", expected[i].cgroup);
            /* the JSON string escapes the backslash of \x2d */
            char esc[256];
            size_t k = 0;
            for (const char *c = key; *c && k + 2 < sizeof(esc); c++) {
                if (*c == '\\')
                    esc[k++] = '\\';
                esc[k++] = *c;
            }
            esc[k] = '\0';
            if (!strstr(line, esc))
                continue;
            found++;
            ck_assert_double_eq_tol(json_num(line, "\"power_w\":{\"cpu\":"), expected[i].cpu_w,
                                    1e-6);
            ck_assert_double_eq_tol(json_num(line, "\"energy_j\":{\"cpu\":"), 2 * expected[i].cpu_w,
                                    1e-6);
        }
    }
    ck_assert_uint_eq(found, NEXP);
    free(out);
    pa_test_rmtree(root);
}
END_TEST

/* Runs monitor on the fixture with extra options (the second window's
 * records); its output (malloc'd). */
static char *run_monitor(const char *root, const char *extra)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "'%s' monitor --all %s --procfs '%s/proc' --sysfs '%s/sys' --hwdb '%s' "
             "--rootfs '%s/containers/root' --clock-step 1s --count 2 "
             "--fixture-states '%s/states' 2>&1",
             CLI_PATH, extra, root, root, PA_TEST_HWDB, PA_FIXTURES, root);
    char *out = NULL;
    int st = pa_test_run(cmd, &out);
    ck_assert_msg(st == 0, "exit %d: %s", st, out ? out : "");
    return out;
}

/* --group-by unit and --containers (issue 27): one record per unit or
 * container, the sum of its cgroups; the groups and the "[not in a ...]"
 * record add up to every process's power (the system's busy part). */
START_TEST(cli_group_by)
{
    char *root = pa_test_fixture_copy(FIX);
    static const struct {
        const char *opt, *type, *name;
        double w;
    } cases[] = {
        {"--group-by unit", "unit", "\"unit\":\"nginx.service\"", 22.5},
        {"--group-by unit", "unit", "\"unit\":\"session-2.scope\"", 3},
        {"--containers", "container", "\"container_id\":\"4f3a9c0e1b2d\"", 30},
        {"--group-by cgroup", "cgroup", "\"cgroup\":\"/legacy\"", 3},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char extra[128];
        snprintf(extra, sizeof(extra), "%s --format json", cases[c].opt);
        char *out = run_monitor(root, extra);
        char type[64];
        snprintf(type, sizeof(type), "\"type\":\"%s\"", cases[c].type);
        double sum = 0, busy = 0, named = -1;
        int procs = 0;
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
            if (json_num(line, "\"time\":") != 2)
                continue;
            if (strstr(line, "\"type\":\"system\""))
                busy = json_num(line, "\"power_w\":{\"cpu\":") - json_num(line, "\"idle\":");
            procs += strstr(line, "\"type\":\"process\"") != NULL;
            if (!strstr(line, type))
                continue;
            sum += json_num(line, "\"power_w\":{\"cpu\":");
            if (strstr(line, cases[c].name))
                named = json_num(line, "\"power_w\":{\"cpu\":");
        }
        ck_assert_msg(procs == 0, "%s: process records in a grouped output", cases[c].opt);
        ck_assert_msg(fabs(named - cases[c].w) < 1e-6, "%s: %s at %g W, want %g", cases[c].opt,
                      cases[c].name, named, cases[c].w);
        ck_assert_msg(fabs(sum - busy) < 1e-6, "%s: groups %g W, busy %g W", cases[c].opt, sum,
                      busy);
        free(out);
    }
    /* CSV: the names' columns */
    char *out = run_monitor(root, "--containers --format csv");
    ck_assert_msg(strstr(out, ",exited,container_id,container_name,runtime,pod_name,"
                              "pod_namespace,pod_uid,unit"),
                  "%s", out);
    ck_assert_msg(strstr(out, ",4f3a9c0e1b2d,,docker,,,,"), "%s", out);
    free(out);
    /* a bad kind */
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "'%s' monitor --group-by team 2>&1", CLI_PATH);
    int st = pa_test_run(cmd, &out);
    ck_assert_msg(st == 2 && strstr(out, "--group-by: unknown kind 'team' (container, pod, "
                                         "unit, cgroup or vm)"),
                  "%d %s", st, out);
    free(out);
    pa_test_rmtree(root);
}
END_TEST

/* The exporter's cgroup series (issue 27): the container's labels, the
 * node, and at most --max-cgroups series, the rest summed in
 * cgroup="[other]" with the count folded. */
START_TEST(serve_cgroup_labels)
{
    char *root = pa_test_fixture_copy(FIX);
    char procfs[4200], sysfs[4200];
    snprintf(procfs, sizeof(procfs), "%s/proc", root);
    snprintf(sysfs, sizeof(sysfs), "%s/sys", root);
    pa_ctx_opts o = {.procfs = procfs,
                     .sysfs = sysfs,
                     .hwdb = PA_TEST_HWDB,
                     .rootfs = PA_FIXTURES "/containers/root"};
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, &o), 0);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_report_cgroups(ctx, 1), 0);
    ck_assert_int_eq(pa_tick_at(ctx, NS_PER_S), 0);
    apply_state(root, 1);
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    size_t len = 0;
    char *page = cli_serve_page(r, 0, "n1", 0, &len);
    ck_assert_msg(strstr(page, "powerapi_cgroup_power_watts{cgroup=\"/system.slice/docker-"
                               "4f3a9c0e1b2d.scope\",container_id=\"4f3a9c0e1b2d\","
                               "runtime=\"docker\",node=\"n1\"} 30\n"),
                  "%s", page);
    ck_assert_msg(strstr(page, "unit=\"nginx.service\",node=\"n1\"} 22.5\n"), "%s", page);
    ck_assert_msg(strstr(page, "powerapi_cgroup_series_folded 0\n"), "%s", page);
    free(page);
    /* six cgroups, two kept: the four least powerful summed */
    page = cli_serve_page(r, 2, "n1", 0, &len);
    ck_assert_msg(strstr(page, "powerapi_cgroup_series_folded 4\n"), "%s", page);
    ck_assert_msg(strstr(page, "powerapi_cgroup_power_watts{cgroup=\"[other]\",node=\"n1\"} "
                               "30\n"),
                  "%s", page);
    free(page);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cgroups");
    TCase *tc = tcase_create("fixture");
    tcase_add_test(tc, library_cgroup_records);
    tcase_add_test(tc, no_cgroup_records_unless_asked);
    tcase_add_test(tc, cli_cgroup_records);
    tcase_add_test(tc, cli_group_by);
    tcase_add_test(tc, serve_cgroup_labels);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
