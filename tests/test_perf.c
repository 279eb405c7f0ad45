/*
 * test_perf.c - the perf sensor: event names, the fallback to software
 * events where the PMU lacks an event, option errors, counting the test's
 * own process, group reads, the descriptor budget, EACCES for another
 * user's process.  Runs on the real /proc with software events; the
 * hardware-event case is in its own "hardware" test case and prints why
 * it skips where no PMU exists (VMs like the development machines).
 */
#include "../sensors/perf_events.h"
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Does this machine open hardware cycles for its own thread? */
static int hw_cycles_errno(void)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_CPU_CYCLES;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0)
        return errno;
    close((int)fd);
    return 0;
}

static pa_ctx *live_ctx(void)
{
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, NULL), 0);
    return ctx;
}

static void burn_cpu_s(double s)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < s);
}

static const pa_target_info *self_target(const pa_report *r)
{
    const pa_target_info *t = pa_test_target(r, PA_TARGET_PROCESS, getpid());
    ck_assert_msg(t != NULL, "own process not in the report");
    return t;
}

static int counter_index(const pa_report *r, const char *name)
{
    for (size_t i = 0; i < r->ncounters; i++)
        if (!strcmp(r->counter_names[i], name))
            return (int)i;
    return -1;
}

START_TEST(default_set_or_fallback)
{
    pa_ctx *ctx = live_ctx();
    ck_assert_int_eq(pa_module_enable(ctx, "perf", NULL), 0);
    char why[256];
    ck_assert_int_eq(pa__mod_perf.probe(&ctx->env, why, sizeof(why)), 0);
    if (hw_cycles_errno() == 0) {
        /* a PMU: the XeMPower names that it has are declared */
        ck_assert_uint_ge(ctx->ncounters, 1);
        ck_assert_str_eq(ctx->counter_names[0], "UNHALTED_CORE_CYCLES");
    } else {
        /* no PMU (ENOENT in a VM): say so, count task-clock */
        ck_assert_uint_eq(ctx->ncounters, 1);
        ck_assert_str_eq(ctx->counter_names[0], "perf::TASK-CLOCK");
        ck_assert_msg(strstr(why, "no hardware PMU"), "%s", why);
        ck_assert_msg(strstr(why, "perf::TASK-CLOCK"), "%s", why);
    }
    /* disabling withdraws the counters */
    ck_assert_int_eq(pa_module_disable(ctx, "perf"), 0);
    ck_assert_uint_eq(ctx->ncounters, 0);
    pa_ctx_free(ctx);
}
END_TEST

START_TEST(unknown_event_named)
{
    pa_ctx *ctx = live_ctx();
    int rc = pa_module_enable(ctx, "perf", "events=perf::TASK-CLOCK+NO_SUCH_EVT");
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(pa_last_error(), "NO_SUCH_EVT"), "%s", pa_last_error());
    ck_assert_msg(strstr(pa_last_error(), "powerapi events"), "%s", pa_last_error());
    ck_assert_uint_eq(ctx->ncounters, 0);
    /* a known event with a modifier libpfm4 refuses */
    rc = pa_module_enable(ctx, "perf", "events=perf::TASK-CLOCK:nosuchmod=1");
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(pa_last_error(), "perf::TASK-CLOCK:nosuchmod=1"), "%s", pa_last_error());
    ck_assert_msg(strstr(pa_last_error(), "powerapi events"), "%s", pa_last_error());
    pa_ctx_free(ctx);
}
END_TEST

/* On a fixture procfs the pids are not live ones: refused. */
START_TEST(fixture_procfs_refused)
{
    char *root = pa_test_fixture_copy("vm-nocpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "perf", NULL), -ENODEV);
    ck_assert_msg(strstr(pa_last_error(), "is not a procfs"), "%s", pa_last_error());
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

START_TEST(option_errors)
{
    pa_ctx *ctx = live_ctx();
    ck_assert_int_eq(pa_module_enable(ctx, "perf", "events=perf::TASK-CLOCK+perf::TASK-CLOCK"),
                     -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), "twice"), "%s", pa_last_error());
    ck_assert_int_eq(pa_module_enable(ctx, "perf", "group=maybe"), -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), "on or off"), "%s", pa_last_error());
    char many[2048] = "events=";
    for (int i = 0; i <= PA_MAX_COUNTERS; i++)
        strcat(many, i ? "+perf::TASK-CLOCK" : "perf::TASK-CLOCK");
    ck_assert_int_eq(pa_module_enable(ctx, "perf", many), -EINVAL);
    ck_assert_int_eq(pa_module_enable(ctx, "perf", "evnts=x"), -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), "events"), "%s", pa_last_error());
    pa_ctx_free(ctx);
}
END_TEST

/* system=on asks for system-wide cycles (rapl-share's denominator): it
 * needs a cycles event that opens, and root or CAP_PERFMON. */
START_TEST(system_cycles)
{
    pa_ctx *ctx = live_ctx();
    int rc = pa_module_enable(ctx, "perf", "system=on");
    if (hw_cycles_errno() != 0) {
        ck_assert_int_eq(rc, -ENOENT);
        ck_assert_msg(strstr(pa_last_error(), "no cycles event opens here"), "%s", pa_last_error());
        ck_assert_msg(strstr(pa_last_error(), "UNHALTED_CORE_CYCLES"), "%s", pa_last_error());
    } else if (rc == 0) {
        ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
        ck_assert_int_eq(pa_tick(ctx), 0);
        ck_assert(ctx->sys[!ctx->sys_cur].have & PA_HAVE_CYCLES);
    } else {
        ck_assert_int_eq(rc, -EACCES);
        ck_assert_msg(strstr(pa_last_error(), "CAP_PERFMON"), "%s", pa_last_error());
    }
    /* auto without cycles: enabled, counting without cycles_all */
    pa_ctx_free(ctx);
    ctx = live_ctx();
    ck_assert_int_eq(pa_module_enable(ctx, "perf", "system=auto"), 0);
    pa_ctx_free(ctx);
}
END_TEST

/* The test's own process: task-clock and page faults, one counter per
 * event, then as a group; reconfiguring changes the declared set.  Every
 * fault event of the set must see the 16384 faults (a software event in
 * a group led by task-clock saw 0 of them on Linux 6.18: clock events
 * are now counted apart from the group). */
static void count_self(const char *opts, size_t nev)
{
    pa_ctx *ctx = live_ctx();
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "perf", opts), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, getpid(), 0), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    burn_cpu_s(0.2);
    char *p = malloc(64 << 20);
    ck_assert(p != NULL);
    for (size_t i = 0; i < (64u << 20); i += 4096)
        p[i] = 1; /* 16384 new pages: minor faults */
    free(p);
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_uint_eq(r->ncounters, nev);
    const pa_target_info *t = self_target(r);
    ck_assert(t->counters != NULL);
    int tc = counter_index(r, "perf::TASK-CLOCK");
    int pf = counter_index(r, "perf::PAGE-FAULTS");
    ck_assert_int_ge(tc, 0);
    ck_assert_int_ge(pf, 0);
    /* at least the 0.2 s burnt, at most the window's CPU time + slack */
    ck_assert_msg(t->counters[tc] >= 0.19e9, "task-clock %.0f", t->counters[tc]);
    ck_assert_msg(t->counters[tc] <= t->power.cpu_time_s * 1e9 + 0.05e9,
                  "task-clock %.0f vs cpu %.3f", t->counters[tc], t->power.cpu_time_s);
    for (size_t i = 0; i < r->ncounters; i++)
        if (strstr(r->counter_names[i], "FAULTS"))
            ck_assert_msg(t->counters[i] >= 16000, "%s %.0f (%s)", r->counter_names[i],
                          t->counters[i], opts);
    ck_assert_double_eq_tol(t->multiplex, 1.0, 1e-12);
    pa_report_free(r);
    /* another set, same context */
    ck_assert_int_eq(pa_module_configure(ctx, "perf", "events=perf::CONTEXT-SWITCHES"), 0);
    ck_assert_uint_eq(ctx->ncounters, 1);
    ck_assert_str_eq(ctx->counter_names[0], "perf::CONTEXT-SWITCHES");
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_ctx_free(ctx);
}

START_TEST(count_self_separate)
{
    count_self("events=perf::TASK-CLOCK+perf::PAGE-FAULTS,group=off", 2);
}
END_TEST

START_TEST(count_self_group)
{
    /* the group's leader is PAGE-FAULTS, after task-clock (apart) */
    count_self("events=perf::TASK-CLOCK+perf::PAGE-FAULTS+perf::MINOR-FAULTS,"
               "group=on",
               3);
    /* the leader first, a clock event between members */
    count_self("events=perf::PAGE-FAULTS+perf::TASK-CLOCK+perf::MINOR-FAULTS+"
               "perf::CPU-CLOCK",
               4);
}
END_TEST

/* A context that counts events but watches nothing yet ticks cleanly
 * (no target table: nothing to sort, UBSan checks it). */
START_TEST(tick_without_targets)
{
    pa_ctx *ctx = live_ctx();
    ck_assert_int_eq(pa_module_enable(ctx, "perf", "events=perf::TASK-CLOCK"), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_uint_eq(r->ncounters, 1);
    ck_assert_uint_eq(r->ntargets, 0);
    pa_report_free(r);
    pa_ctx_free(ctx);
}
END_TEST

static void *idle_thread(void *arg)
{
    (void)arg;
    pause();
    return NULL;
}

/* A low RLIMIT_NOFILE: watching a process needs threads x events
 * descriptors; beyond the budget the sensor refuses with a message that
 * names the limit and the fix.  (Check runs each test in its own
 * process, so the lowered limit stays here.) */
START_TEST(descriptor_budget)
{
    struct rlimit rl = {100, 100};
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, idle_thread, NULL), 0);
    pa_ctx *ctx = live_ctx();
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    /* 9 threads x 8 events = 72 > budget 100/2 */
    ck_assert_int_eq(pa_module_enable(ctx, "perf",
                                      "events=perf::TASK-CLOCK+perf::CPU-CLOCK+"
                                      "perf::CONTEXT-SWITCHES+perf::CPU-MIGRATIONS+"
                                      "perf::PAGE-FAULTS+perf::MINOR-FAULTS+"
                                      "perf::MAJOR-FAULTS+perf::CYCLES"),
                     0);
    ck_assert_int_eq(pa_watch_pid(ctx, getpid(), 0), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_module_info info[16];
    int n = pa_module_list(ctx, info, 16);
    bool seen = false;
    for (int i = 0; i < n && i < 16; i++)
        if (!strcmp(info[i].name, "perf")) {
            seen = true;
            ck_assert_int_eq(info[i].failing, 1);
            ck_assert_msg(strstr(info[i].why, "RLIMIT_NOFILE"), "%s", info[i].why);
        }
    ck_assert(seen);
    pa_ctx_free(ctx);
}
END_TEST

/* An unprivileged user counting a root process: EACCES, explained. */
START_TEST(another_users_process)
{
    if (geteuid() != 0) {
        printf("SKIP another_users_process: needs root to set up two users\n");
        return;
    }
    pid_t target = getpid();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (setgid(65534) < 0 || setuid(65534) < 0)
            _exit(3);
        pa_ctx *ctx = NULL;
        if (pa_ctx_new(&ctx, NULL) < 0 || pa_module_enable(ctx, "procfs-cpu", NULL) < 0 ||
            pa_module_enable(ctx, "perf", "events=perf::TASK-CLOCK") < 0 ||
            pa_watch_pid(ctx, target, 0) < 0)
            _exit(4);
        pa_tick(ctx);
        pa_module_info info[16];
        int n = pa_module_list(ctx, info, 16);
        for (int i = 0; i < n && i < 16; i++)
            if (!strcmp(info[i].name, "perf") && info[i].failing && strstr(info[i].why, "EACCES") &&
                strstr(info[i].why, "another user"))
                _exit(0);
        _exit(5);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %d", st);
}
END_TEST

typedef struct listing {
    int task_clock, cycles_status, n;
} listing;

static int on_event(const char *name, const char *desc, int status, void *u)
{
    listing *l = u;
    l->n++;
    ck_assert(desc != NULL);
    if (!strcmp(name, "perf::TASK-CLOCK") || !strcmp(name, "perf::PERF_COUNT_SW_TASK_CLOCK"))
        l->task_clock = status == 0 ? 1 : l->task_clock;
    if (!strcmp(name, "UNHALTED_CORE_CYCLES"))
        l->cycles_status = status;
    return 0;
}

START_TEST(events_listing)
{
    listing l = {0, 1, 0};
    int n = pa__perf_events_list(on_event, &l);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(n, l.n);
    ck_assert_int_eq(l.task_clock, 1);
    ck_assert_int_eq(l.cycles_status == 0, hw_cycles_errno() == 0);
}
END_TEST

/* `powerapi events`: what opens here, one line each; bad usage. */
START_TEST(cli_events)
{
    char *out = NULL;
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "'%s' events 2>&1", CLI_PATH);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    ck_assert(out != NULL);
    ck_assert_msg(strstr(out, "perf::TASK-CLOCK "), "%s", out);
    ck_assert_msg(strstr(out, "CPU time of the task"), "%s", out);
    if (hw_cycles_errno() != 0)
        ck_assert_msg(!strstr(out, "UNHALTED_CORE_CYCLES"), "%s", out);
    free(out);
    snprintf(cmd, sizeof(cmd), "'%s' events --all 2>&1", CLI_PATH);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "UNHALTED_CORE_CYCLES"), "%s", out);
    if (hw_cycles_errno() != 0)
        ck_assert_msg(strstr(out, "no hardware PMU"), "%s", out);
    free(out);
    snprintf(cmd, sizeof(cmd), "'%s' events --bogus 2>&1", CLI_PATH);
    ck_assert_int_eq(pa_test_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "unknown option '--bogus'"), "%s", out);
    free(out);
}
END_TEST

/* Hardware events: more events than counters, multiplexed and scaled. */
START_TEST(hardware_multiplexing)
{
    int e = hw_cycles_errno();
    if (e) {
        printf("SKIP hardware_multiplexing: no hardware PMU here "
               "(cycles: %s; a VM without a virtual PMU)\n",
               strerror(e));
        return;
    }
    pa_ctx *ctx = live_ctx();
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    /* 16 generic hardware events: more than any PMU has counters */
    ck_assert_int_eq(
        pa_module_enable(ctx, "perf",
                         "events=UNHALTED_CORE_CYCLES+INSTRUCTIONS_RETIRED+perf::CYCLES+"
                         "perf::INSTRUCTIONS+LLC_REFERENCES+LLC_MISSES+"
                         "BRANCH_INSTRUCTIONS_RETIRED+BRANCH_MISSES_RETIRED+"
                         "UNHALTED_REFERENCE_CYCLES"),
        0);
    ck_assert_int_eq(pa_watch_pid(ctx, getpid(), 0), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    burn_cpu_s(0.3);
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    const pa_target_info *t = self_target(r);
    ck_assert(t->multiplex > 0 && t->multiplex <= 1);
    int a = counter_index(r, "UNHALTED_CORE_CYCLES");
    int b = counter_index(r, "perf::CYCLES");
    /* the same event counted twice, each scaled: within 20% */
    ck_assert(t->counters[a] > 0);
    ck_assert_double_eq_tol(t->counters[b] / t->counters[a], 1.0, 0.2);
    pa_report_free(r);
    pa_ctx_free(ctx);
    /* the same set as one group does not fit: said once, clearly */
    ctx = live_ctx();
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "perf",
                                      "group=on,events=UNHALTED_CORE_CYCLES+"
                                      "INSTRUCTIONS_RETIRED+perf::CYCLES+perf::INSTRUCTIONS+"
                                      "LLC_REFERENCES+LLC_MISSES+BRANCH_INSTRUCTIONS_RETIRED+"
                                      "BRANCH_MISSES_RETIRED+UNHALTED_REFERENCE_CYCLES"),
                     0);
    ck_assert_int_eq(pa_watch_pid(ctx, getpid(), 0), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    burn_cpu_s(0.3);
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_module_info info[16];
    int n = pa_module_list(ctx, info, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (!strcmp(info[i].name, "perf"))
            ck_assert_msg(info[i].failing && strstr(info[i].why, "group=off"), "%s", info[i].why);
    pa_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("perf");
    TCase *tc = tcase_create("software");
    tcase_add_test(tc, default_set_or_fallback);
    tcase_add_test(tc, unknown_event_named);
    tcase_add_test(tc, option_errors);
    tcase_add_test(tc, fixture_procfs_refused);
    tcase_add_test(tc, system_cycles);
    tcase_add_test(tc, count_self_separate);
    tcase_add_test(tc, count_self_group);
    tcase_add_test(tc, tick_without_targets);
    tcase_add_test(tc, descriptor_budget);
    tcase_add_test(tc, another_users_process);
    tcase_add_test(tc, events_listing);
    tcase_add_test(tc, cli_events);
    suite_add_tcase(s, tc);
    TCase *th = tcase_create("hardware");
    tcase_add_test(th, hardware_multiplexing);
    suite_add_tcase(s, th);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
