/* test_top.c - `powerapi top --ring` in a real terminal (tmux on a
 * private socket): rows sorted by power, the system line, sort keys, the
 * cgroup view, the filter, the interval, a daemon that stops, quit. */
#include "ring_fixture.h"
#include "testutil.h"

#include <stdarg.h>

/* A failing check ends the test without its teardown (kill-server): the
 * session must end by itself, top after 60 s, the pane 20 s later. */
#define TOP_BOUND "timeout --foreground 60"
/* How long a screen may take to show what a key asked for: top redraws at
 * once, but on a loaded machine tmux and the redraw may lag by seconds
 * (a unit run once missed a 3-s wait); the wait ends as soon as it shows */
#define TOP_WAIT_MS 15000

static ring_fixture rf;
static char *dir;
static char sock[4200];

static int tmux(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tmux(char **out, const char *fmt, ...)
{
    char args[2048], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof(cmd), "tmux -S '%s' %s 2>&1", sock, args);
    char *o = NULL;
    int st = pa_test_run(cmd, &o);
    if (out)
        *out = o;
    else
        free(o);
    return st;
}

static char *screen(void)
{
    char *o = NULL;
    tmux(&o, "capture-pane -p -t top");
    return o ? o : strdup("");
}

/* Waits until the screen shows text, drawn whole: the same in two
 * captures 50 ms apart (a capture in the middle of a redraw has the first
 * rows of the new frame and not the rest: "pve-web" missing under
 * "web-01" once); returns the screen (malloc'd). */
static char *wait_for(const char *text, int timeout_ms)
{
    uint64_t end = rf_now_ms() + (uint64_t)timeout_ms;
    char *s = screen();
    for (;;) {
        usleep(50000);
        char *next = screen();
        int same = strcmp(s, next) == 0;
        free(s);
        s = next;
        if ((same && strstr(s, text)) || rf_now_ms() >= end)
            break;
    }
    ck_assert_msg(strstr(s, text) != NULL, "screen never showed '%s':\n%s", text, s);
    return s;
}

static void keys(const char *k)
{
    ck_assert_int_eq(tmux(NULL, "send-keys -t top %s", k), 0);
}

/* The line of the screen that contains text ("" if none), in buf. */
static const char *line_with(const char *scr, const char *text, char *buf, size_t len)
{
    const char *p = strstr(scr, text);
    buf[0] = '\0';
    if (!p)
        return buf;
    const char *b = p;
    while (b > scr && b[-1] != '\n')
        b--;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - b) : strlen(b);
    if (n >= len)
        n = len - 1;
    memcpy(buf, b, n);
    buf[n] = '\0';
    return buf;
}

static void setup(void)
{
    dir = pa_test_tmpdir();
    snprintf(sock, sizeof(sock), "%s/tmux.sock", dir);
    rf_start(&rf, "top");
}

static void teardown(void)
{
    tmux(NULL, "kill-server");
    rf_stop(&rf);
    pa_test_rmtree(dir);
}

/* Issue 27: g goes from processes to containers, pods and units, each a
 * record of its cgroups summed (the ring's a.service: a unit, in no
 * container or pod). */
START_TEST(test_top_group_views)
{
    if (system("command -v tmux >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_top_group_views: SKIPPED: tmux absent\n");
        return;
    }
    ck_assert_int_eq(
        tmux(NULL,
             "new-session -d -s top -x 132 -y 30 \"TERM=screen " TOP_BOUND
             " %s top --ring %s --interval 200ms --group-by container; echo EXIT=\\$?; "
             "sleep 20\"",
             CLI_PATH, rf.name),
        0);
    char l[256];
    char *s = wait_for("[not in a container]", TOP_WAIT_MS);
    ck_assert_ptr_nonnull(strstr(s, "| 1 containers |"));
    ck_assert_ptr_nonnull(strstr(s, "CONTAINER "));
    free(s);
    keys("g");
    free(wait_for("[not in a pod]", TOP_WAIT_MS));
    keys("g");
    s = wait_for("a.service", TOP_WAIT_MS);
    line_with(s, "a.service", l, sizeof(l));
    ck_assert_msg(strstr(l, " 5.69 ") && strstr(s, "UNIT "), "unit row: %s\n%s", l, s);
    free(s);
    keys("g");
    free(wait_for(" java ", TOP_WAIT_MS)); /* back to the processes */
    keys("q");
    free(wait_for("EXIT=0", TOP_WAIT_MS));
}
END_TEST

/* Issue 41: the VM view (--group-by vm, the key v) of top's own sampling
 * on the vms fixture: a row per VM named, the rest, back to processes. */
START_TEST(test_top_vm_view)
{
    if (system("command -v tmux >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_top_vm_view: SKIPPED: tmux absent\n");
        return;
    }
    ck_assert_int_eq(
        tmux(NULL,
             "new-session -d -s top -x 132 -y 30 \"TERM=screen " TOP_BOUND
             " %s top --interval 200ms --group-by vm --procfs %s/fixtures/vms/host/proc"
             " --sysfs %s/fixtures/vms/host/sys --rootfs %s/fixtures/vms/host/rootfs"
             "; echo EXIT=\\$?; sleep 20\"",
             CLI_PATH, PA_SOURCE_TESTS, PA_SOURCE_TESTS, PA_SOURCE_TESTS),
        0);
    char *s = wait_for("[not in a VM]", TOP_WAIT_MS);
    ck_assert_msg(strstr(s, "| 10 VMs |"), "%s", s);
    ck_assert_msg(strstr(s, "web-01 (qemu, libvirt"), "%s", s);
    ck_assert_msg(strstr(s, "pve-web (qemu, proxmox"), "%s", s);
    ck_assert_msg(strstr(s, "fc-batch-7 (firecracker"), "%s", s);
    free(s);
    keys("v");
    free(wait_for(" nginx ", TOP_WAIT_MS)); /* back to the processes */
    keys("v");
    free(wait_for("default/testvmi (qemu, kubevirt", TOP_WAIT_MS));
    keys("q");
    free(wait_for("EXIT=0", TOP_WAIT_MS));
}
END_TEST

START_TEST(test_top_screen)
{
    if (system("command -v tmux >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_top_screen: SKIPPED: tmux absent\n");
        return;
    }
    int st = tmux(NULL,
                  "new-session -d -s top -x 132 -y 30 \"TERM=screen " TOP_BOUND
                  " %s top --ring %s --interval 200ms --carbon-intensity 385; echo EXIT=\\$?; "
                  "sleep 20\"",
                  CLI_PATH, rf.name);
    ck_assert_int_eq(st, 0);
    char l[256];
    char *s = wait_for(" java ", TOP_WAIT_MS);
    /* Sorted by power: java (4.125 W), we"ird\name (1.5), then the rest. */
    const char *java = strstr(s, " java ");
    const char *weird = strstr(s, "we\"ird\\name");
    ck_assert_ptr_nonnull(weird);
    ck_assert(java < weird);
    /* pid, CPU% (0.0625 s of 0.125 s), CPU W, NIC W, total W, J, cgroup */
    line_with(s, " java ", l, sizeof(l));
    ck_assert_msg(strstr(l, "4242 java") && strstr(l, " 50.0 ") && strstr(l, " 4.00 ") &&
                      strstr(l, " 0.12 ") && strstr(l, " 4.12 ") && strstr(l, " 40.2 ") &&
                      strstr(l, "/system.slice/a.service"),
                  "java row: %s", l);
    /* --carbon-intensity: the row's grams (its joules x 385 / 3.6e6), the
     * column, the intensity among the assumptions */
    double j = strtod(strstr(l, " 40.2") + 1, NULL);
    char g[32];
    snprintf(g, sizeof(g), " %.4f ", j * 385 / 3.6e6);
    ck_assert_msg(strstr(l, g), "java row without%s: %s", g, l);
    ck_assert_ptr_nonnull(strstr(s, "ENERGY J     CO2E G  CGROUP"));
    ck_assert_ptr_nonnull(strstr(s, "System    11.00 W  cpu 10.00 W (modelled)  "
                                    "nic 1.00 W  idle 3.00 W"));
    /* the carbon intensity first among the assumptions (never cut off) */
    ck_assert_ptr_nonnull(strstr(s, "Assumed carbon intensity 385 gCO2e/kWh (given, not measured); "
                                    "tdp=10W (default: unknown CPU \"x\")"));
    ck_assert_ptr_nonnull(strstr(s, "Formula cpu-tdp+nic-linear"));
    ck_assert_ptr_nonnull(strstr(s, "3 processes | sort: power"));
    free(s);

    /* Sort keys: power -> cpu -> nic -> energy -> pid (ascending). */
    keys("s");
    free(wait_for("sort: cpu", TOP_WAIT_MS));
    keys("s s s");
    s = wait_for("sort: pid", TOP_WAIT_MS);
    ck_assert(strstr(s, "we\"ird\\name") < strstr(s, " java "));
    free(s);

    /* The cgroup view. */
    keys("c");
    s = wait_for("1 cgroups", TOP_WAIT_MS);
    line_with(s, "/system.slice/a.service", l, sizeof(l));
    ck_assert_msg(strstr(l, " 5.56 ") && strstr(l, " 5.69 ") && strstr(l, " 55.8"),
                  "cgroup row: %s", l);
    free(s);
    keys("c");
    free(wait_for("3 processes", TOP_WAIT_MS));

    /* Filter: / java Enter. */
    keys("/");
    free(wait_for("filter:", TOP_WAIT_MS));
    keys("j a v a Enter");
    s = wait_for("1 processes", TOP_WAIT_MS);
    ck_assert_ptr_nonnull(strstr(s, "filter: java"));
    ck_assert_ptr_null(strstr(s, "we\"ird"));
    free(s);

    /* Interval: + doubles it. */
    keys("+");
    free(wait_for("every 0.4 s", TOP_WAIT_MS));

    /* The daemon stops: top says so and keeps running. */
    rf_stop(&rf);
    s = wait_for("ring '", TOP_WAIT_MS);
    ck_assert_msg(strstr(s, "stopped") || strstr(s, "no such ring"), "screen:\n%s", s);
    free(s);

    keys("q");
    free(wait_for("EXIT=0", TOP_WAIT_MS));
}
END_TEST

/* Without --ring, top samples the machine itself: it sees itself. */
START_TEST(test_top_own_sampling)
{
    if (system("command -v tmux >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_top_own_sampling: SKIPPED: tmux absent\n");
        return;
    }
    ck_assert_int_eq(tmux(NULL,
                          "new-session -d -s top -x 132 -y 40 \"TERM=screen " TOP_BOUND
                          " %s top --interval 200ms -f powerapi; "
                          "echo EXIT=\\$?; sleep 20\"",
                          CLI_PATH),
                     0);
    char *s = wait_for(" powerapi ", TOP_WAIT_MS);
    ck_assert_ptr_nonnull(strstr(s, "own sampling"));
    ck_assert_ptr_nonnull(strstr(s, "filter: powerapi"));
    ck_assert_ptr_nonnull(strstr(s, "System "));
    ck_assert_ptr_nonnull(strstr(s, "Formula "));
    free(s);
    keys("q");
    free(wait_for("EXIT=0", TOP_WAIT_MS));
}
END_TEST

/* Issue 28: a GPU column where a GPU is present (the stand-in NVML of
 * the test suite, its README timeline: top itself at 75 % SM of GPU 0). */
START_TEST(test_top_gpu_column)
{
    if (system("command -v tmux >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_top_gpu_column: SKIPPED: tmux absent\n");
        return;
    }
    ck_assert_int_eq(
        tmux(NULL,
             "new-session -d -s top -x 132 -y 40 \"TERM=screen "
             "POWERAPI_NVML_LIBRARY=%s PA_NVML_SCRIPT=%s/fixtures/nvml/two-gpus.txt " TOP_BOUND
             " %s top --interval 1s -f powerapi; echo EXIT=\\$?; sleep 20\"",
             PA_NVML_STANDIN, PA_SOURCE_TESTS, CLI_PATH),
        0);
    char *s = wait_for(" W (2 device(s))", TOP_WAIT_MS);
    free(s);
    s = wait_for("GPU W", TOP_WAIT_MS);
    char buf[256];
    ck_assert_msg(strstr(line_with(s, "PID", buf, sizeof(buf)), "NIC W    GPU W    TOTAL W"), "%s",
                  s);
    /* the first row (sorted by power), from the second window on: top
     * itself, 75 % of GPU 0's active 70 W (windows of about 1 s: the 100 J
     * a step give about 100 W) */
    int pid = 0;
    char comm[32] = "";
    double pct, cpu_w, nic_w, gpu_w = 0;
    for (uint64_t end = rf_now_ms() + 6000; rf_now_ms() < end && gpu_w <= 0; usleep(100000)) {
        free(s);
        s = screen();
        const char *row = strstr(s, "CGROUP\n");
        if (!row || sscanf(row + 7, "%d %31s %lf %lf %lf %lf", &pid, comm, &pct, &cpu_w, &nic_w,
                           &gpu_w) != 6)
            gpu_w = 0;
    }
    ck_assert_msg(!strcmp(comm, "powerapi") && gpu_w > 45 && gpu_w < 60,
                  "top's own row, about 52.5 W of GPU:\n%s", s);
    free(s);
    keys("q");
    free(wait_for("EXIT=0", TOP_WAIT_MS));
}
END_TEST

/* A ring of our own whose window has a long assumption list and a real
 * single-threaded process (a child) that read 13 ticks in a 0.125 s
 * window (the 104 % of /proc's clock ticks). */
#define WRAP_ASSUMED                                                                               \
    "cpu-curve: default 0.74 W idle to 3.5 W at full load per vCPU x 2 "                           \
    "CPUs for unknown CPU 'Intel(R) Xeon(R) Processor' (Cloud Carbon "                             \
    "Footprint methodology, AWS average min/max watts per vCPU (from "                             \
    "SPECpower_ssj2008));nic per process: TCP only (no per-socket UDP "                            \
    "counters)"

typedef struct wrap_ring {
    pa_ring_writer *w;
    pid_t busy;
    pthread_t th;
    int stop;
} wrap_ring;

static void *wrap_publish(void *arg)
{
    wrap_ring *wr = arg;
    for (uint64_t tick = 1; !__atomic_load_n(&wr->stop, __ATOMIC_ACQUIRE); tick++) {
        pa_report r;
        pa_target_info t[2];
        memset(&r, 0, sizeof(r));
        memset(t, 0, sizeof(t));
        r.tick = tick;
        r.time_ns = tick * 125000000ull;
        r.interval_s = r.system.interval_s = 0.125;
        r.system.cpu_w = r.system.total_w = 3;
        r.formula = "cpu-curve";
        r.sensors = "procfs-cpu";
        r.cpu_source = "model";
        r.assumed = WRAP_ASSUMED;
        const pid_t pids[2] = {wr->busy, 4243};
        const double cpu_s[2] = {0.13, 0.0625};
        for (int i = 0; i < 2; i++) {
            t[i].type = PA_TARGET_PROCESS;
            t[i].pid = pids[i];
            snprintf(t[i].comm, sizeof(t[i].comm), "%s", i ? "half" : "busy");
            t[i].cgroup = "";
            t[i].power.cpu_w = t[i].power.total_w = 2 - i;
            t[i].power.interval_s = 0.125;
            t[i].power.cpu_time_s = cpu_s[i];
            t[i].multiplex = 1;
        }
        r.ntargets = 2;
        r.targets = t;
        ck_assert_int_eq(pa_ring_publish(wr->w, &r), 0);
        usleep(50000);
    }
    return NULL;
}

/* Issue 31 items 5 and 9: no process shows more than 100 % a thread (the
 * cap is marked and said), and the Assumed line wraps at words (at 80x40:
 * 5 rows of it; 2 at 80x24, issue 43). */
START_TEST(test_top_wrap_and_cap)
{
    if (system("command -v tmux >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_top_wrap_and_cap: SKIPPED: tmux absent\n");
        return;
    }
    wrap_ring wr = {0};
    wr.busy = fork();
    ck_assert_int_ge(wr.busy, 0);
    if (wr.busy == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;)
            pause();
    }
    char name[64];
    snprintf(name, sizeof(name), "pa-test-topwrap-%d", (int)getpid());
    pa_ring_opts o = {.capacity = 16, .max_targets = 16, .interval_ns = 125000000ull};
    ck_assert_int_eq(pa_ring_create(name, &o, &wr.w), 0);
    ck_assert_int_eq(pthread_create(&wr.th, NULL, wrap_publish, &wr), 0);
    ck_assert_int_eq(tmux(NULL,
                          "new-session -d -s top -x 80 -y 40 \"TERM=screen " TOP_BOUND
                          " %s top --ring %s --interval 200ms; echo EXIT=\\$?; sleep 20\"",
                          CLI_PATH, name),
                     0);
    char l[256];
    char *s = wait_for(" busy ", TOP_WAIT_MS);
    line_with(s, " busy ", l, sizeof(l));
    ck_assert_msg(strstr(l, "100.0*") && !strstr(l, "104"), "busy row: %s\n%s", l, s);
    line_with(s, " half ", l, sizeof(l));
    ck_assert_msg(strstr(l, " 50.0 "), "half row: %s", l);
    ck_assert_msg(strstr(s, "* CPU% capped at 100 % a thread"), "%s", s);
    /* every word of the assumptions whole on the screen, the last too */
    char words[] = WRAP_ASSUMED;
    char *save = NULL;
    for (char *w = strtok_r(words, " ;", &save); w; w = strtok_r(NULL, " ;", &save))
        ck_assert_msg(strstr(s, w), "'%s' is not whole on the screen:\n%s", w, s);
    ck_assert_ptr_nonnull(strstr(s, "ssj2008)); nic per process"));
    free(s);
    keys("q");
    free(wait_for("EXIT=0", TOP_WAIT_MS));
    __atomic_store_n(&wr.stop, 1, __ATOMIC_RELEASE);
    pthread_join(wr.th, NULL);
    pa_ring_destroy(wr.w);
    kill(wr.busy, SIGKILL);
    waitpid(wr.busy, NULL, 0);
}
END_TEST

/* Own sampling refuses windows under 10 ticks of procfs-cpu, before the
 * screen is taken. */
START_TEST(test_top_interval_floor)
{
    if (system("command -v tmux >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_top_interval_floor: SKIPPED: tmux absent\n");
        return;
    }
    ck_assert_int_eq(tmux(NULL,
                          "new-session -d -s top -x 200 -y 20 \"TERM=screen " TOP_BOUND
                          " %s top --interval 20ms; echo EXIT=\\$?; sleep 20\"",
                          CLI_PATH),
                     0);
    char *s = wait_for("EXIT=", TOP_WAIT_MS);
    ck_assert_msg(strstr(s, "EXIT=2") && strstr(s, "clock ticks") && strstr(s, "USER_HZ") &&
                      strstr(s, "or more"),
                  "%s", s);
    free(s);
}
END_TEST

START_TEST(test_top_needs_tty)
{
    char cmd[512];
    char *out = NULL;
    snprintf(cmd, sizeof(cmd), "%s top --ring %s < /dev/null 2>&1 | cat", CLI_PATH, rf.name);
    pa_test_run(cmd, &out);
    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(strstr(out, "needs a terminal"));
    free(out);
    snprintf(cmd, sizeof(cmd), "%s top --sort watts 2>&1", CLI_PATH);
    ck_assert_int_eq(pa_test_run(cmd, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--sort"));
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("top");
    TCase *tc = tcase_create("top");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_top_screen);
    tcase_add_test(tc, test_top_group_views);
    tcase_add_test(tc, test_top_vm_view);
    tcase_add_test(tc, test_top_own_sampling);
    tcase_add_test(tc, test_top_gpu_column);
    tcase_add_test(tc, test_top_needs_tty);
    tcase_add_test(tc, test_top_wrap_and_cap);
    tcase_add_test(tc, test_top_interval_floor);
    suite_add_tcase(s, tc);
    int rc = pa_test_main(s);
    rf_sweep();
    return rc;
}
