/* test_live_daemon.c - `powerapi daemon` on this machine: it publishes
 * windows that name this very process and its CPU time, in a ring of the
 * right mode; a second daemon is refused; SIGTERM stops it cleanly and
 * removes the ring; a killed daemon is detected and replaced. */
#include "ring_fixture.h"
#include "testutil.h"

#include <sys/mman.h>
#include <sys/stat.h>

static char name[64];
static pid_t dpid;
static int dout = -1;

static void start_daemon(const char *extra1, const char *extra2)
{
    char *argv[16];
    int n = 0;
    argv[n++] = CLI_PATH;
    argv[n++] = "daemon";
    argv[n++] = "--ring";
    argv[n++] = name;
    argv[n++] = "--interval";
    argv[n++] = "100ms";
    argv[n++] = "--capacity";
    argv[n++] = "50";
    argv[n++] = "-q";
    if (extra1)
        argv[n++] = (char *)extra1;
    if (extra2)
        argv[n++] = (char *)extra2;
    argv[n] = NULL;
    dpid = rf_spawn(argv, &dout);
}

/* Opens the ring once the daemon has created it. */
static pa_ring_reader *open_ring(void)
{
    pa_ring_reader *r = NULL;
    int rc = -ENOENT;
    uint64_t end = rf_now_ms() + 10000;
    while (rf_now_ms() < end) {
        rc = pa_ring_open(name, &r);
        /* also a stale ring that the starting daemon has yet to replace */
        if (rc != -ENOENT && rc != -EAGAIN && rc != -EOWNERDEAD)
            break;
        usleep(20000);
    }
    ck_assert_msg(rc == 0, "open: %d %s", rc, pa_last_error());
    return r;
}

static const pa_report *next_window(pa_ring_reader *r, uint64_t *seq)
{
    const pa_report *g = NULL;
    int rc = -EAGAIN;
    uint64_t end = rf_now_ms() + 5000;
    while (rc == -EAGAIN && rf_now_ms() < end) {
        rc = pa_ring_read(r, seq, &g);
        if (rc == -EAGAIN)
            usleep(20000);
    }
    ck_assert_msg(rc == 0, "read: %d %s", rc, pa_last_error());
    return g;
}

static void setup(void)
{
    snprintf(name, sizeof(name), "pa-test-daemon-%d", (int)getpid());
    dpid = 0;
}

static void teardown(void)
{
    if (dpid > 0) {
        rf_stop_child(dpid, SIGKILL, 2000);
        dpid = 0;
    }
    if (dout >= 0)
        close(dout);
    dout = -1;
    char shm[80];
    snprintf(shm, sizeof(shm), "/%s", name);
    shm_unlink(shm);
}

/* Runs `monitor --ring` as user nobody (when we are root and setpriv
 * exists); returns its status, or -1 when that cannot be tried. */
static int monitor_as_nobody(char **out)
{
    if (geteuid() != 0 || system("command -v setpriv >/dev/null 2>&1") != 0)
        return -1;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "setpriv --reuid=65534 --regid=65534 --clear-groups %s monitor "
             "--ring %s --count 1 --format json 2>&1",
             CLI_PATH, name);
    int st = pa_test_run(cmd, out);
    if (st == 126 || st == 127) { /* the build tree is not ours to run */
        free(*out);
        *out = NULL;
        return -1;
    }
    return st;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

START_TEST(test_daemon_publishes)
{
    start_daemon(NULL, NULL);
    pa_ring_reader *r = open_ring();
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);
    pa_ring_info info;
    ck_assert_int_eq(pa_ring_get_info(r, &info), 0);
    ck_assert_int_eq(info.writer_pid, dpid);
    ck_assert_uint_eq(info.capacity, 50);
    ck_assert_uint_eq(info.interval_ns, 100000000ull);

    uint64_t seq = 0;
    const pa_report *g = next_window(r, &seq);
    ck_assert_double_gt(g->interval_s, 0.02);
    ck_assert_double_lt(g->interval_s, 1.0);
    ck_assert_ptr_nonnull(g->cpu_source);
    ck_assert(strcmp(g->cpu_source, "model") == 0 || strcmp(g->cpu_source, "rapl") == 0);
    ck_assert_double_gt(g->system.cpu_w, 0);
    size_t ncg = 0;
    for (size_t i = 0; i < g->ntargets; i++)
        ncg += g->targets[i].type == PA_TARGET_CGROUP;
    ck_assert_uint_gt(ncg, 0);

    /* Burn 0.3 s of CPU; the windows covering it must say so. */
    double c0 = cpu_s();
    uint64_t wall_end = rf_now_ms() + 3000;
    volatile double x = 1;
    while (cpu_s() - c0 < 0.3 && rf_now_ms() < wall_end)
        for (int i = 0; i < 100000; i++)
            x = x * 1.0000001 + 1e-9;
    double burnt = cpu_s() - c0;
    /* The windows after the burn, as they come (a loaded machine may
     * publish late): their CPU time adds up to what was burnt. */
    double seen = 0, cpu_w = 0, total_j = 0;
    uint64_t until = rf_now_ms() + 4000;
    while (seen < 0.9 * burnt && rf_now_ms() < until) {
        usleep(150000);
        const pa_report *a = NULL;
        int arc = pa_ring_aggregate(r, &seq, 0, &a);
        if (arc == -EAGAIN)
            continue;
        ck_assert_msg(arc == 0, "aggregate: %s", pa_last_error());
        const pa_target_info *me = pa_test_target(a, PA_TARGET_PROCESS, getpid());
        ck_assert_ptr_nonnull(me);
        ck_assert_str_eq(me->comm, "test_live_daemo");
        seen += me->power.cpu_time_s;
        if (me->power.cpu_w > cpu_w)
            cpu_w = me->power.cpu_w;
        total_j = me->power.total_j;
    }
    ck_assert_msg(seen > 0.8 * burnt && seen < burnt + 0.3, "cpu time %.3f s, burnt %.3f s", seen,
                  burnt);
    ck_assert_double_gt(cpu_w, 0);
    ck_assert_double_gt(total_j, 0);

    /* An unprivileged reader reads it too. */
    char *nb = NULL;
    int nst = monitor_as_nobody(&nb);
    if (nst < 0) {
        fprintf(stderr, "unprivileged reader: SKIPPED (not root, no setpriv, "
                        "or build tree not executable by nobody)\n");
    } else {
        ck_assert_msg(nst == 0, "as nobody: %d %s", nst, nb);
        ck_assert_ptr_nonnull(strstr(nb, "{\"type\":\"system\""));
    }
    free(nb);

    /* A second daemon on the same ring is refused. */
    char cmd[512];
    char *out = NULL;
    snprintf(cmd, sizeof(cmd), "%s daemon --ring %s 2>&1", CLI_PATH, name);
    ck_assert_int_eq(pa_test_run(cmd, &out), 1);
    ck_assert_ptr_nonnull(strstr(out, "running writer"));
    free(out);

    /* SIGTERM: exit 0, ring removed, readers told. */
    int ws = rf_stop_child(dpid, SIGTERM, 5000);
    dpid = 0;
    ck_assert_msg(ws >= 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "status %d", ws);
    ck_assert_int_eq(stat(path, &st), -1);
    int rc;
    while ((rc = pa_ring_read(r, &seq, &g)) == 0)
        ;
    ck_assert_int_eq(rc, -EOWNERDEAD);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "stopped"));
    pa_ring_close(r);
}
END_TEST

/* --sensor/--formula/--disable as in `monitor`: unknown modules and the
 * wrong kind are usage errors naming the argument, and leave no ring. */
START_TEST(test_daemon_modules)
{
    char cmd[512];
    char *out = NULL;
    snprintf(cmd, sizeof(cmd), "%s daemon --ring %s --sensor nosuch 2>&1", CLI_PATH, name);
    ck_assert_int_eq(pa_test_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "--sensor nosuch"), "%s", out);
    free(out);
    snprintf(cmd, sizeof(cmd), "%s daemon --ring %s --formula procfs-cpu 2>&1", CLI_PATH, name);
    ck_assert_int_eq(pa_test_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "procfs-cpu is a sensor (use --sensor)"), "%s", out);
    free(out);
    /* an unknown --disable is an error too (the modules are listed) */
    snprintf(cmd, sizeof(cmd), "%s daemon --ring %s --disable nosuch 2>&1", CLI_PATH, name);
    ck_assert_int_eq(pa_test_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "--disable nosuch: unknown module"), "%s", out);
    free(out);
    /* the module rule of the library: a sensor a --formula requires
     * cannot be disabled */
    snprintf(cmd, sizeof(cmd), "%s daemon --ring %s --disable procfs-cpu --formula cpu-tdp 2>&1",
             CLI_PATH, name);
    ck_assert_int_eq(pa_test_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "--disable procfs-cpu: --formula cpu-tdp requires "
                              "this sensor") &&
                      strchr(out, '\n') == out + strlen(out) - 1,
                  "not one line naming both flags: %s", out);
    free(out);
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), -1);
}
END_TEST

START_TEST(test_daemon_group_and_count)
{
    char gid[32];
    snprintf(gid, sizeof(gid), "%u", (unsigned)getgid());
    start_daemon("--group", gid);
    pa_ring_reader *r = open_ring();
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    ck_assert_uint_eq(st.st_gid, getgid());
    pa_ring_close(r);
    /* Others than the group are refused, with the reason. */
    char *nb = NULL;
    int nst = monitor_as_nobody(&nb);
    if (nst >= 0 && getgid() != 65534) {
        ck_assert_int_eq(nst, 1);
        ck_assert_ptr_nonnull(strstr(nb, "Permission denied"));
        ck_assert_ptr_nonnull(strstr(nb, "--group"));
    }
    free(nb);
    ck_assert_int_eq(rf_stop_child(dpid, SIGINT, 5000), 0);
    dpid = 0;

    /* --count: stops by itself after that many windows. */
    start_daemon("--count", "3");
    int ws = rf_stop_child(dpid, 0, 5000);
    dpid = 0;
    ck_assert_int_eq(ws, 0);
    ck_assert_int_eq(stat(path, &st), -1);
}
END_TEST

START_TEST(test_daemon_killed)
{
    start_daemon(NULL, NULL);
    pa_ring_reader *r = open_ring();
    pa_ring_close(r);
    rf_stop_child(dpid, SIGKILL, 5000);
    dpid = 0;
    ck_assert_int_eq(pa_ring_open(name, &r), -EOWNERDEAD);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "no longer running"));
    /* The CLI's readers say the same, and a new daemon takes over. */
    char cmd[512];
    char *out = NULL;
    snprintf(cmd, sizeof(cmd), "%s serve --ring %s --listen 127.0.0.1:0 2>&1", CLI_PATH, name);
    ck_assert_int_eq(pa_test_run(cmd, &out), 1);
    ck_assert_ptr_nonnull(strstr(out, "no longer running"));
    free(out);
    start_daemon(NULL, NULL);
    r = open_ring();
    uint64_t seq = 0;
    next_window(r, &seq);
    pa_ring_close(r);
}
END_TEST

/* RAPL-derived energy in windows under 100 ms is a side channel
 * (CVE-2020-8694): a ring others can read does not get it unless the
 * operator passes --allow-fine-rapl.  RAPL is the rapl-laptop fixture's
 * powercap tree. */
START_TEST(test_daemon_fine_rapl)
{
    char cmd[1024];
    char *out = NULL;
    const char *sys = PA_FIXTURES "/rapl-laptop/sys";
    snprintf(cmd, sizeof(cmd), "%s daemon --ring %s --interval 10ms --count 5 -q --sysfs %s 2>&1",
             CLI_PATH, name, sys);
    ck_assert_int_eq(pa_test_run(cmd, &out), 1);
    ck_assert_msg(strstr(out, "refusing to publish RAPL-measured energy") &&
                      strstr(out, "CVE-2020-8694") && strstr(out, "--allow-fine-rapl"),
                  "%s", out);
    free(out);
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), -1);

    /* 100 ms windows of the same RAPL are published. */
    start_daemon("--sysfs", sys);
    pa_ring_reader *r = open_ring();
    uint64_t seq = 0;
    const pa_report *g = next_window(r, &seq);
    ck_assert_str_eq(g->cpu_source, "rapl");
    pa_ring_close(r);
    ck_assert_int_eq(rf_stop_child(dpid, SIGTERM, 5000), 0);
    dpid = 0;

    /* The operator's explicit flag publishes 10 ms RAPL windows. */
    snprintf(cmd, sizeof(cmd),
             "%s daemon --ring %s --interval 10ms --count 5 -q --sysfs %s "
             "--allow-fine-rapl 2>&1",
             CLI_PATH, name, sys);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    ck_assert_str_eq(out, "");
    free(out);
    /* 10 ms windows without RAPL (this machine's own /sys) are published. */
    snprintf(cmd, sizeof(cmd), "%s daemon --ring %s --interval 10ms --count 5 -q 2>&1", CLI_PATH,
             name);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    free(out);
}
END_TEST

/* Windows shorter than procfs-cpu's tick are published, with one line
 * saying what they are worth (issue 31 item 5); a tick or more: none. */
START_TEST(test_daemon_short_windows)
{
    long hz = sysconf(_SC_CLK_TCK);
    ck_assert_int_gt(hz, 0);
    char cmd[1024];
    char *out = NULL;
    snprintf(cmd, sizeof(cmd), "%s daemon --ring %s --interval %ldus --count 5 -q 2>&1", CLI_PATH,
             name, 1000000 / hz / 4);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    const char *nl = strchr(out, '\n');
    ck_assert_msg(strstr(out, "resolution of process CPU times") && strstr(out, "USER_HZ") && nl &&
                      nl[1] == '\0',
                  "want one line: %s", out);
    free(out);
    snprintf(cmd, sizeof(cmd), "%s daemon --ring %s --interval %ldus --count 3 -q 2>&1", CLI_PATH,
             name, 1000000 / hz);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    ck_assert_str_eq(out, "");
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("daemon");
    TCase *tc = tcase_create("daemon");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_daemon_publishes);
    tcase_add_test(tc, test_daemon_modules);
    tcase_add_test(tc, test_daemon_group_and_count);
    tcase_add_test(tc, test_daemon_killed);
    tcase_add_test(tc, test_daemon_fine_rapl);
    tcase_add_test(tc, test_daemon_short_windows);
    suite_add_tcase(s, tc);
    int rc = pa_test_main(s);
    rf_sweep();
    return rc;
}
