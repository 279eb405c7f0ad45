/* test_monitor_ring.c - `powerapi monitor --ring`: the known window of a
 * ring fed by this test, as JSON lines, filtered by --pid and --cgroups;
 * a daemon that stops ends the monitor with a clear message. */
#include "ring_fixture.h"
#include "testutil.h"

static ring_fixture rf;

static void setup(void)
{
    rf_start(&rf, "monring");
}

static void teardown(void)
{
    rf_stop(&rf);
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

START_TEST(test_json_lines)
{
    char cmd[512];
    char *out = NULL;
    snprintf(cmd, sizeof(cmd), "%s monitor --ring %s --count 2 --interval 200ms --format json",
             CLI_PATH, rf.name);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    /* Two outputs (the newest window, then the average of the next ones),
     * each a system record and the three processes; no cgroup record. */
    ck_assert_int_eq(count(out, "{\"type\":\"system\""), 2);
    ck_assert_int_eq(count(out, "{\"type\":\"process\""), 6);
    ck_assert_int_eq(count(out, "\"type\":\"cgroup\""), 0);
    ck_assert_int_eq(count(out, "\"pid\":4242,\"comm\":\"java\""), 2);
    ck_assert_int_eq(count(out, "\"power_w\":{\"cpu\":4,\"nic\":0.125,\"total\":4.125}"), 2);
    ck_assert_int_eq(count(out, "\"energy_j\":{\"cpu\":40.25,\"nic\":0,\"total\":40.25}"), 2);
    ck_assert_int_eq(count(out, "\"power_w\":{\"cpu\":10,\"nic\":1,\"total\":11,\"idle\":3}"), 2);
    ck_assert_int_eq(count(out, "\"formula\":\"cpu-tdp+nic-linear\""), 2);
    free(out);

    snprintf(cmd, sizeof(cmd), "%s monitor --ring %s --count 1 --pid 17 --cgroups --format json",
             CLI_PATH, rf.name);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    ck_assert_int_eq(count(out, "{\"type\":\"process\""), 1);
    ck_assert_int_eq(count(out, "\"pid\":17,"), 1);
    ck_assert_int_eq(count(out, "\"type\":\"cgroup\""), 1);
    ck_assert_int_eq(count(out, "\"cgroup\":\"/system.slice/a.service\""), 1);
    free(out);
}
END_TEST

START_TEST(test_daemon_stops)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "%s monitor --ring %s --interval 100ms --format json "
             "2>&1 > /dev/null",
             CLI_PATH, rf.name);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    usleep(400000); /* the monitor runs, then the writer stops */
    rf_stop(&rf);
    char buf[1024] = "";
    size_t n = fread(buf, 1, sizeof(buf) - 1, p);
    buf[n] = '\0';
    int st = pclose(p);
    ck_assert_int_eq(WEXITSTATUS(st), 1);
    ck_assert_msg(strstr(buf, "stopped") != NULL, "stderr: %s", buf);

    char *out = NULL;
    snprintf(cmd, sizeof(cmd), "%s monitor --ring %s -- true 2>&1", CLI_PATH, rf.name);
    ck_assert_int_eq(pa_test_run(cmd, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--ring"));
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("monitor_ring");
    TCase *tc = tcase_create("monitor_ring");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_json_lines);
    tcase_add_test(tc, test_daemon_stops);
    suite_add_tcase(s, tc);
    int rc = pa_test_main(s);
    rf_sweep();
    return rc;
}
