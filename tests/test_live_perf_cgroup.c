/*
 * test_live_perf_cgroup.c - the perf sensor counting per cgroup v2 path
 * (PERF_FLAG_PID_CGROUP) on this machine: a child moved into a fresh
 * cgroup burns 0.5 s, then starts a process that burns 0.3 s and exits
 * inside the window.  The cgroup record's perf::TASK-CLOCK is the whole
 * 0.8 s within 5% (the process records only ever saw the child's 0.5 s).
 * A parent cgroup's record stays its own processes' (perf would count
 * its child cgroups too).  Without privilege the module says so once and
 * the record is the processes' sum.
 * Skips, saying why, where no cgroup can be created (not root, no cgroup2
 * mount, a read-only cgroupfs).
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double proc_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void burn(double s)
{
    double t0 = proc_cpu_s();
    while (proc_cpu_s() - t0 < s)
        ;
}

/* The first cgroup2 mount point of mountinfo, or "" (why set). */
static void cgroup2_mount(char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        char mp[4096];
        const char *sep = strstr(line, " - ");
        if (sep && !strncmp(sep + 3, "cgroup2 ", 8) &&
            sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1) {
            snprintf(out, len, "%s", mp);
            break;
        }
    }
    fclose(f);
}

static int write_str(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    int rc = fputs(s, f) < 0 ? -EIO : 0;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

/* usage_usec of a cgroup's cpu.stat (always there in cgroup v2), -1. */
static double usage_s(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/cpu.stat", dir);
    char *text = pa_test_slurp(path);
    double v = -1;
    const char *p = text ? strstr(text, "usage_usec ") : NULL;
    if (p)
        v = strtod(p + 11, NULL) / 1e6;
    free(text);
    return v;
}

START_TEST(cgroup_task_clock_includes_short_lived)
{
    char mnt[4096];
    cgroup2_mount(mnt, sizeof(mnt));
    if (!mnt[0]) {
        printf("SKIP: no cgroup2 mount in /proc/self/mountinfo\n");
        return;
    }
    char dir[4200], rel[64];
    snprintf(rel, sizeof(rel), "/pa-test-perf-%d", (int)getpid());
    snprintf(dir, sizeof(dir), "%s%s", mnt, rel);
    if (mkdir(dir, 0755) != 0) {
        printf("SKIP: cannot create cgroup %s: %s (needs root or a "
               "delegated cgroup)\n",
               dir, strerror(errno));
        return;
    }
    int go[2], done[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(done), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test ends it too */
        close(go[1]);
        close(done[0]);
        char b;
        if (read(go[0], &b, 1) != 1)
            _exit(1);
        double t0 = proc_cpu_s();
        burn(0.5);
        pid_t g = fork(); /* short-lived: born and reaped in the window */
        if (g == 0) {
            burn(0.3);
            _exit(0);
        }
        if (g < 0 || waitpid(g, NULL, 0) != g)
            _exit(1);
        struct rusage ru;
        getrusage(RUSAGE_CHILDREN, &ru);
        double v[2] = {proc_cpu_s() - t0, (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                                              (double)ru.ru_stime.tv_sec +
                                              ru.ru_stime.tv_usec / 1e6};
        if (write(done[1], v, sizeof(v)) != (ssize_t)sizeof(v))
            _exit(1);
        pause();
        _exit(0);
    }
    close(go[0]);
    close(done[1]);
    char procs[4300], pidtext[32];
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
    snprintf(pidtext, sizeof(pidtext), "%d\n", (int)pid);
    int rc = write_str(procs, pidtext);
    if (rc < 0) {
        printf("SKIP: cannot move pid %d into %s: %s\n", (int)pid, dir, strerror(-rc));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        rmdir(dir);
        return;
    }
    /* the child's cgroup as procfs shows it (relative to our namespace) */
    char cgpath[256];
    snprintf(cgpath, sizeof(cgpath), "/proc/%d/cgroup", (int)pid);
    char *cgtext = pa_test_slurp(cgpath);
    ck_assert(cgtext != NULL);
    char *v2 = strstr(cgtext, "0::");
    ck_assert_msg(v2 != NULL, "no cgroup v2 line: %s", cgtext);
    char want[256];
    snprintf(want, sizeof(want), "%.*s", (int)strcspn(v2 + 3, "\n"), v2 + 3);
    free(cgtext);
    ck_assert_msg(strstr(want, rel) != NULL, "%s not in %s", rel, want);

    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    rc = pa_module_enable(ctx, "perf", "events=perf::TASK-CLOCK");
    ck_assert_msg(rc == 0, "perf: %s", pa_last_error());
    ck_assert_int_eq(pa_watch_pid(ctx, pid, 0), 0);
    ck_assert_int_eq(pa_report_cgroups(ctx, 1), 0);
    double u0 = usage_s(dir);
    rc = pa_tick(ctx);
    ck_assert_msg(rc == 0, "tick 1: %s", pa_last_error());
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    double v[2];
    ck_assert_int_eq(read(done[0], v, sizeof(v)), (ssize_t)sizeof(v));
    rc = pa_tick(ctx);
    ck_assert_msg(rc == 0, "tick 2: %s", pa_last_error());
    double u1 = usage_s(dir);

    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_uint_eq(r->ncounters, 1);
    ck_assert_str_eq(r->counter_names[0], "perf::TASK-CLOCK");
    const pa_target_info *cg = NULL;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_CGROUP && !strcmp(r->targets[i].cgroup, want))
            cg = &r->targets[i];
    ck_assert_msg(cg != NULL, "no cgroup record for %s", want);
    ck_assert(cg->counters != NULL);
    const pa_target_info *p = pa_test_target(r, PA_TARGET_PROCESS, pid);
    ck_assert(p != NULL && p->counters != NULL);
    double cg_s = cg->counters[0] / 1e9, proc_s = p->counters[0] / 1e9;
    double expect = v[0] + v[1];
    printf("cgroup %s: task-clock %.4f s; child %.4f s + short-lived "
           "%.4f s = %.4f s; cpu.stat usage %.4f s; the child's own "
           "record %.4f s\n",
           want, cg_s, v[0], v[1], expect, u1 - u0, proc_s);
    ck_assert_double_eq_tol(cg_s, expect, 0.05 * expect);
    ck_assert_double_eq_tol(cg_s, u1 - u0, 0.05 * (u1 - u0));
    /* the process record cannot have the short-lived one's time */
    ck_assert_double_eq_tol(proc_s, v[0], 0.05 * v[0]);
    ck_assert(cg_s > proc_s + 0.2);
    ck_assert_double_eq_tol(cg->multiplex, 1.0, 1e-9);
    pa_report_free(r);

    /* a third window: the cgroup idle, counted 0 (not its processes'
     * cumulative values) */
    usleep(20000);
    ck_assert_int_eq(pa_tick(ctx), 0);
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    cg = NULL;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_CGROUP && !strcmp(r->targets[i].cgroup, want))
            cg = &r->targets[i];
    ck_assert(cg != NULL && cg->counters != NULL);
    ck_assert_double_lt(cg->counters[0] / 1e9, 0.01);
    pa_report_free(r);

    pa_ctx_free(ctx);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(go[1]);
    close(done[0]);
    /* an emptied cgroup is removable once the kernel has let go of it */
    for (int i = 0; i < 100 && rmdir(dir) != 0; i++)
        usleep(10000);
    ck_assert_msg(access(dir, F_OK) != 0, "cgroup %s left behind", dir);
}
END_TEST

/* A child that waits for a byte on go, burns s seconds, writes a byte to
 * done and pauses; moved into the cgroup dir.  0 on success, else the
 * child is gone and -errno says why it could not be moved. */
static int spawn_in(const char *dir, double s, pid_t *pid, int *go, int *done)
{
    int g[2], d[2];
    ck_assert_int_eq(pipe(g), 0);
    ck_assert_int_eq(pipe(d), 0);
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(g[1]);
        close(d[0]);
        char b;
        if (read(g[0], &b, 1) != 1)
            _exit(1);
        burn(s);
        if (write(d[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(g[0]);
    close(d[1]);
    char procs[4300], pidtext[32];
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
    snprintf(pidtext, sizeof(pidtext), "%d\n", (int)p);
    int rc = write_str(procs, pidtext);
    if (rc < 0) {
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
        close(g[1]);
        close(d[0]);
        return rc;
    }
    *pid = p;
    *go = g[1];
    *done = d[0];
    return 0;
}

static void rmdir_wait(const char *dir)
{
    for (int i = 0; i < 100 && rmdir(dir) != 0; i++)
        usleep(10000);
    ck_assert_msg(access(dir, F_OK) != 0, "cgroup %s left behind", dir);
}

/* perf counts a cgroup with its descendants; a cgroup record is the
 * processes directly in it.  A parent cgroup holding an idle watched
 * process and a child cgroup with a busy one: the parent's record is its
 * own process's (about 0), not the 0.3 s of the child cgroup. */
START_TEST(parent_cgroup_is_its_own_processes)
{
    char mnt[4096];
    cgroup2_mount(mnt, sizeof(mnt));
    if (!mnt[0]) {
        printf("SKIP: no cgroup2 mount in /proc/self/mountinfo\n");
        return;
    }
    char dir[4200], sub[4300], rel[64];
    snprintf(rel, sizeof(rel), "/pa-test-perf-parent-%d", (int)getpid());
    snprintf(dir, sizeof(dir), "%s%s", mnt, rel);
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    if (mkdir(dir, 0755) != 0 || mkdir(sub, 0755) != 0) {
        printf("SKIP: cannot create cgroups %s: %s\n", sub, strerror(errno));
        rmdir(dir);
        return;
    }
    pid_t a, b;
    int ago, adone, bgo, bdone;
    int rc = spawn_in(dir, 0.0, &a, &ago, &adone);
    if (rc == 0 && (rc = spawn_in(sub, 0.3, &b, &bgo, &bdone)) < 0) {
        kill(a, SIGKILL);
        waitpid(a, NULL, 0);
    }
    if (rc < 0) {
        printf("SKIP: cannot move processes into %s: %s\n", dir, strerror(-rc));
        rmdir(sub);
        rmdir(dir);
        return;
    }
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    rc = pa_module_enable(ctx, "perf", "events=perf::TASK-CLOCK");
    ck_assert_msg(rc == 0, "perf: %s", pa_last_error());
    ck_assert_int_eq(pa_watch_pid(ctx, a, 0), 0);
    ck_assert_int_eq(pa_report_cgroups(ctx, 1), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    char byte;
    ck_assert_int_eq(write(bgo, "g", 1), 1);
    ck_assert_int_eq(read(bdone, &byte, 1), 1);
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    const pa_target_info *cg = NULL;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_CGROUP && strstr(r->targets[i].cgroup, rel) &&
            !strstr(r->targets[i].cgroup, "/sub"))
            cg = &r->targets[i];
    ck_assert_msg(cg != NULL && cg->counters != NULL, "no record for %s", rel);
    printf("parent cgroup %s: task-clock %.4f s (child cgroup burnt 0.3 s)\n", cg->cgroup,
           cg->counters[0] / 1e9);
    ck_assert_double_lt(cg->counters[0] / 1e9, 0.05);
    pa_report_free(r);
    pa_ctx_free(ctx);
    pid_t kids[2] = {a, b};
    int fds[4] = {ago, adone, bgo, bdone};
    for (int i = 0; i < 2; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    for (int i = 0; i < 4; i++)
        close(fds[i]);
    rmdir_wait(sub);
    rmdir_wait(dir);
}
END_TEST

/* Without root or CAP_PERFMON (nobody, perf_event_paranoid >= 1) the
 * cgroup cannot be counted as a whole: the perf module says so once, and
 * the cgroup record is its processes' sum. */
START_TEST(unprivileged_falls_back_to_sums)
{
    if (geteuid() != 0) {
        printf("SKIP: needs root to make the cgroup and become nobody\n");
        return;
    }
    char mnt[4096];
    cgroup2_mount(mnt, sizeof(mnt));
    if (!mnt[0]) {
        printf("SKIP: no cgroup2 mount in /proc/self/mountinfo\n");
        return;
    }
    char dir[4200], rel[64];
    snprintf(rel, sizeof(rel), "/pa-test-perf-nobody-%d", (int)getpid());
    snprintf(dir, sizeof(dir), "%s%s", mnt, rel);
    if (mkdir(dir, 0755) != 0) {
        printf("SKIP: cannot create cgroup %s: %s\n", dir, strerror(errno));
        return;
    }
    /* the counted process runs as nobody too (perf counts own processes) */
    int go[2], done[2], res[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(done), 0);
    ck_assert_int_eq(pipe(res), 0);
    pid_t a = fork();
    ck_assert_int_ge(a, 0);
    if (a == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        prctl(PR_SET_DUMPABLE, 1); /* lost with setuid; perf needs it */
        char b;
        if (read(go[0], &b, 1) != 1)
            _exit(1);
        burn(0.3);
        if (write(done[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char procs[4300], pidtext[32];
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
    snprintf(pidtext, sizeof(pidtext), "%d\n", (int)a);
    int rc = write_str(procs, pidtext);
    if (rc < 0) {
        printf("SKIP: cannot move pid %d into %s: %s\n", (int)a, dir, strerror(-rc));
        kill(a, SIGKILL);
        waitpid(a, NULL, 0);
        rmdir(dir);
        return;
    }
    pid_t mon = fork();
    ck_assert_int_ge(mon, 0);
    if (mon == 0) {
        /* result: [0] cgroup counter, [1] process counter, [2] message
         * seen (1/0), [3] 1 when run */
        double v[4] = {-1, -1, 0, 0};
        pa_ctx *ctx = NULL;
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (pa_ctx_new(&ctx, NULL) < 0 || pa_module_enable(ctx, "procfs-cpu", NULL) < 0 ||
            pa_module_enable(ctx, "perf", "events=perf::TASK-CLOCK") < 0 ||
            pa_watch_pid(ctx, a, 0) < 0 || pa_report_cgroups(ctx, 1) < 0)
            _exit(3);
        /* tick 1 reports the refusal; the module is retried at tick 3 */
        for (int i = 0; i < 4; i++) {
            if (pa_tick(ctx) < 0)
                _exit(4);
            pa_module_info info[16];
            int n = pa_module_list(ctx, info, 16);
            for (int k = 0; k < n && k < 16; k++)
                if (!strcmp(info[k].name, "perf") &&
                    strstr(info[k].why, "needs root or CAP_PERFMON") &&
                    strstr(info[k].why, "PERF_FLAG_PID_CGROUP"))
                    v[2] = 1;
        }
        if (write(go[1], "g", 1) != 1)
            _exit(5);
        char b;
        if (read(done[0], &b, 1) != 1 || pa_tick(ctx) < 0)
            _exit(6);
        pa_report *r = NULL;
        if (pa_report_get(ctx, &r) == 0) {
            for (size_t i = 0; i < r->ntargets; i++) {
                const pa_target_info *t = &r->targets[i];
                if (!t->counters)
                    continue;
                if (t->type == PA_TARGET_CGROUP && strstr(t->cgroup, rel))
                    v[0] = t->counters[0];
                if (t->type == PA_TARGET_PROCESS && t->pid == a)
                    v[1] = t->counters[0];
            }
            pa_report_free(r);
        }
        v[3] = 1;
        pa_ctx_free(ctx);
        _exit(write(res[1], v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : 7);
    }
    close(res[1]);
    double v[4] = {-1, -1, 0, 0};
    ssize_t n = read(res[0], v, sizeof(v));
    int st;
    ck_assert_int_eq(waitpid(mon, &st, 0), mon);
    kill(a, SIGKILL);
    waitpid(a, NULL, 0);
    close(go[0]);
    close(go[1]);
    close(done[0]);
    close(done[1]);
    close(res[0]);
    rmdir_wait(dir);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "monitor: %d", st);
    ck_assert_int_eq(n, (ssize_t)sizeof(v));
    printf("as nobody: cgroup task-clock %.4f s = its process's %.4f s "
           "(burnt 0.3 s); message %s\n",
           v[0] / 1e9, v[1] / 1e9, v[2] ? "given" : "missing");
    ck_assert(v[2] == 1);
    ck_assert_double_eq_tol(v[1] / 1e9, 0.3, 0.3 * 0.1);
    ck_assert_double_eq_tol(v[0], v[1], 1e-6);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("live-perf-cgroup");
    TCase *tc = tcase_create("cgroup");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, cgroup_task_clock_includes_short_lived);
    tcase_add_test(tc, parent_cgroup_is_its_own_processes);
    tcase_add_test(tc, unprivileged_falls_back_to_sums);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
