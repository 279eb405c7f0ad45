/*
 * perf.c - the "perf" sensor: hardware and software event counts per
 * target, through perf_event_open(2), events named with libpfm4.
 *
 * Options
 *   events=A+B+C   event names (libpfm4 syntax, e.g. UNHALTED_CORE_CYCLES,
 *                  perf::TASK-CLOCK, INST_RETIRED:ANY_P:u).  Default: the
 *                  XeMPower set (cycles, instructions, reference cycles,
 *                  LLC references and misses, branches and branch misses).
 *   group=auto|on|off  count a target's events as one perf group, read
 *                  in one call with consistent times; all of a group is
 *                  scheduled or none, so it must fit the PMU's counters.
 *                  off: one counter per event, each multiplexed on its
 *                  own, so more events than counters still work (scaled).
 *                  auto (default): a group when at most 4 of the events
 *                  are hardware ones (every x86 PMU has 4 general
 *                  counters); one counter per event otherwise.  The clock
 *                  events (perf::CPU-CLOCK, perf::TASK-CLOCK) are always
 *                  counted apart: the kernel does not keep them in step
 *                  with a group (see state_new).  Reading a
 *                  group costs about one counter's read: ~480 ns per target
 *                  plus ~10 ns per event, against ~360 ns per event apart
 *                  (bench/bench_perf.c, this VM).
 *   system=auto|on|off  system-wide unhalted cycles (one counter per CPU,
 *                  root or CAP_PERFMON) for rapl-share's denominator.
 *
 * Targets are the context's processes (all threads: one counter set per
 * thread present at open, inherit + inherit_thread for threads created
 * later, not for child processes) and threads (that thread only).
 *
 * With cgroup records on (pa_report_cgroups, monitor --cgroups), every
 * interned cgroup v2 path that has a live process is also counted as a
 * whole: perf_event_open(pid = an fd of the cgroup's directory under the
 * cgroup2 mount found in <procfs>/self/mountinfo, PERF_FLAG_PID_CGROUP),
 * one counter set per online CPU, summed, so that processes that came and
 * went between ticks are in the cgroup's counts (pa_frame_cgroup_counters; the
 * engine falls back to the sum of the cgroup's processes where a cgroup
 * could not be opened).  CPU-wide events need root or CAP_PERFMON; the
 * descriptors (CPUs x events per cgroup) come out of the same budget, and
 * a cgroup left without processes is closed.  perf counts a cgroup with
 * its descendants, and a cgroup record is the processes directly in that
 * path: only leaf cgroups (containers, services, VM scopes) are counted
 * so (looked at on open and every 8 ticks); the root and slices keep the
 * sum of their own processes.
 *
 * Counts are cumulative and scaled per window for multiplexing:
 *     scaled += delta_count . delta_time_enabled / delta_time_running
 * and the task's multiplex is the lowest delta_running / delta_enabled of
 * its counters in the window (1 = never multiplexed).
 *
 * Where the PMU lacks an event (a VM without a virtual PMU: ENOENT) the
 * event is dropped, the probe says so, and an empty set becomes
 * perf::TASK-CLOCK.  Unprivileged users count user space only
 * (exclude_kernel, exclude_hv), as perf_event_paranoid 2 requires.
 *
 * Naming and encoding the events, and listing those of this machine
 * (powerapi events), are perf_events.c's.
 */
#include "perf_events.h"
#include "powerapi_module.h"
#include "util.h" /* growable arrays */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#define PERF_PATH_MAX 4096

#define FD_RESERVE 64     /* descriptors left for the rest of the program */
#define CG_LEAF_RECHECK 8 /* ticks between looks for child cgroups */

static const char *const default_events[] = {
    "UNHALTED_CORE_CYCLES",  "INSTRUCTIONS_RETIRED", "UNHALTED_REFERENCE_CYCLES",
    "LLC_REFERENCES",        "LLC_MISSES",           "BRANCH_INSTRUCTIONS_RETIRED",
    "BRANCH_MISSES_RETIRED",
};
#define NDEFAULT (sizeof(default_events) / sizeof(default_events[0]))

typedef struct perf_event {
    char name[64];
    struct perf_event_attr attr;
    bool solo; /* counted outside the group (a clock event) */
} perf_event;

/* Counters of one target: nthr threads x nev events. */
typedef struct perf_target {
    pa_target_type type;
    pid_t id;
    uint64_t start_ticks;
    uint64_t mark; /* last tick the task was alive */
    int err;       /* could not be opened (-errno); nothing counted */
    size_t nfd;    /* nthr * nev */
    int *fd;
    uint64_t (*last)[3]; /* per fd: value, enabled, running */
    double acc[PA_MAX_COUNTERS];
} perf_target;

/* Counters of one interned cgroup (PERF_FLAG_PID_CGROUP): one set per
 * online CPU, summed.  Indexed like pa_frame_cgroup_path. */
typedef struct perf_cg {
    int err; /* could not be opened (-errno): not retried while the
                cgroup keeps live processes */
    bool open;
    uint64_t mark; /* last tick a live process of it was seen */
    size_t nfd;    /* ncpus * nev */
    int *fd;
    uint64_t (*last)[3];
    double acc[PA_MAX_COUNTERS];
} perf_cg;

typedef struct perf_state {
    size_t nev;
    perf_event ev[PA_MAX_COUNTERS];
    const char *names[PA_MAX_COUNTERS];
    bool user_only; /* exclude_kernel + exclude_hv */
    bool group;
    size_t lead;         /* the group's leader (the first event not solo) */
    bool inherit_thread; /* kernel >= 5.13 */
    int system;          /* -1 auto, 0 off, 1 on */
    perf_target **tg;
    size_t ntg, tgcap;
    size_t nfds; /* open target descriptors */
    size_t fd_budget;
    /* system-wide cycles */
    int cyc; /* index of the cycles event, -1 none */
    int *sysfd;
    size_t nsys;
    uint64_t (*syslast)[3];
    double cycles_acc;
    /* per cgroup */
    perf_cg *cg;
    size_t ncg;
    int cg_root_err;             /* 0 not looked for, 1 found, -errno */
    bool cg_denied;              /* EACCES once: not tried again */
    char cg_root[PERF_PATH_MAX]; /* the cgroup2 mount (under sysfs) */
    int cg_ncpus;
    int cg_cpus[PA_MAX_CPUS];
    unsigned reported; /* refusal kinds already reported */
    bool starved;      /* a group enabled 100 ms has never run */
} perf_state;

enum {
    REP_EACCES = 1,
    REP_BUDGET = 2,
    REP_OTHER = 4,
    REP_STARVED = 8,
    REP_CGROUP = 16, /* per-cgroup counting refused or impossible */
};

static bool pmu_lacks(int err)
{
    return err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV || err == -EINVAL;
}

static int paranoid_level(const pa_env *env)
{
    char buf[16];
    if (!env ||
        pa_file_read(pa_env_procfs(env), "sys/kernel/perf_event_paranoid", buf, sizeof(buf)) <= 0)
        return 99;
    return atoi(buf);
}

/* Builds the event set from the "events" option.  Unknown names fail;
 * events the PMU lacks are dropped (named in note); an empty result is
 * perf::TASK-CLOCK. */
/* The event names of events= (A+B+C, split in copy[1024]), or the
 * defaults; *n of them. */
static int events_names(const perf_state *st, const char *spec, char *copy, const char **names,
                        size_t *nout)
{
    size_t n = 0;
    if (!spec || !*spec) {
        for (size_t i = 0; i < NDEFAULT; i++)
            names[n++] = default_events[i];
        *nout = n;
        return 0;
    }
    if (strlen(spec) >= 1024)
        return pa_error_set(-EINVAL, "perf: events list too long");
    snprintf(copy, 1024, "%s", spec);
    char *save = NULL;
    for (char *t = strtok_r(copy, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
        if (n == PA_MAX_COUNTERS)
            return pa_error_set(-EINVAL,
                                "perf: at most %d events per "
                                "context",
                                PA_MAX_COUNTERS);
        for (size_t j = 0; j < n; j++)
            if (!strcmp(names[j], t))
                return pa_error_set(-EINVAL, "perf: event '%s' given twice", t);
        if (strlen(t) >= sizeof(st->ev[0].name))
            return pa_error_set(-EINVAL,
                                "perf: event name '%.40s...' too "
                                "long",
                                t);
        names[n++] = t;
    }
    if (n == 0)
        return pa_error_set(-EINVAL, "perf: events= is empty (give "
                                     "A+B+C; 'powerapi events' lists them)");
    *nout = n;
    return 0;
}

/* Privilege: kernel+user counting first, user only (st->user_only) when
 * that is refused. */
static int events_privilege(perf_state *st, const pa_env *env)
{
    char why[512];
    struct perf_event_attr a;
    st->user_only = false;
    pa__perf_event_encode("perf::TASK-CLOCK", false, &a, why, sizeof(why));
    int rc = pa__perf_event_try(&a);
    if (rc == -EACCES || rc == -EPERM) {
        st->user_only = true;
        pa__perf_event_encode("perf::TASK-CLOCK", true, &a, why, sizeof(why));
        rc = pa__perf_event_try(&a);
    }
    if (rc == -EACCES || rc == -EPERM)
        return pa_error_set(-EACCES,
                            "perf: perf_event_open refused even for "
                            "perf::TASK-CLOCK of this process (EACCES, "
                            "kernel.perf_event_paranoid=%d); run as root, "
                            "grant CAP_PERFMON, or set "
                            "kernel.perf_event_paranoid=2",
                            paranoid_level(env));
    if (rc < 0)
        return pa_error_set(rc,
                            "perf: perf_event_open failed: %s (kernel "
                            "without perf events?)",
                            strerror(-rc));
    return 0;
}

/* The events this process can open, in st->ev; those the PMU lacks are
 * dropped and named in note, and perf::TASK-CLOCK counts when none is
 * left. */
static int events_open(perf_state *st, const char **names, size_t n, char *note, size_t nl)
{
    char why[512];
    st->nev = 0;
    size_t used = 0;
    int lack_err = 0;
    for (size_t i = 0; i < n; i++) {
        perf_event *e = &st->ev[st->nev];
        int rc = pa__perf_event_encode(names[i], st->user_only, &e->attr, why, sizeof(why));
        if (rc < 0)
            return pa_error_set(rc, "%s", why);
        rc = pa__perf_event_try(&e->attr);
        if (rc < 0 && pmu_lacks(rc)) {
            lack_err = -rc;
            int w = snprintf(note + used, nl - used, "%s%s", used ? ", " : "", names[i]);
            if (w > 0 && (size_t)w < nl - used)
                used += (size_t)w;
            continue;
        }
        if (rc < 0)
            return pa_error_set(rc, "perf: cannot open event '%s': %s", names[i], strerror(-rc));
        snprintf(e->name, sizeof(e->name), "%s", names[i]);
        st->nev++;
    }
    if (used) {
        char dropped[512];
        snprintf(dropped, sizeof(dropped), "%s", note);
        snprintf(note, nl,
                 "perf: this machine's PMU lacks %s (%s: no "
                 "hardware PMU, e.g. a VM without a virtual PMU)%s",
                 dropped, strerror(lack_err), st->nev ? "" : "; counting perf::TASK-CLOCK instead");
    }
    if (st->nev == 0) {
        perf_event *e = &st->ev[0];
        pa__perf_event_encode("perf::TASK-CLOCK", st->user_only, &e->attr, why, sizeof(why));
        snprintf(e->name, sizeof(e->name), "perf::TASK-CLOCK");
        st->nev = 1;
    }
    return 0;
}

static int events_setup(perf_state *st, const pa_env *env, const char *spec, char *note, size_t nl)
{
    const char *names[PA_MAX_COUNTERS];
    char copy[1024];
    size_t n = 0;
    note[0] = '\0';
    int rc = events_names(st, spec, copy, names, &n);
    if (rc < 0)
        return rc;
    if ((rc = events_privilege(st, env)) < 0 || (rc = events_open(st, names, n, note, nl)) < 0)
        return rc;
    st->cyc = -1;
    for (size_t i = 0; i < st->nev; i++) {
        st->names[i] = st->ev[i].name;
        const struct perf_event_attr *a = &st->ev[i].attr;
        if (st->cyc < 0 && a->type == PERF_TYPE_HARDWARE && a->config == PERF_COUNT_HW_CPU_CYCLES)
            st->cyc = (int)i;
        if (st->cyc < 0 && (!strcasecmp(st->ev[i].name, "UNHALTED_CORE_CYCLES") ||
                            !strncasecmp(st->ev[i].name, "CPU_CLK_UNHALTED", 16)))
            st->cyc = (int)i;
    }
    return 0;
}

/* ---------------------------------------------------------------- */
/* Targets                                                           */
/* ---------------------------------------------------------------- */

static void target_close(perf_state *st, perf_target *g)
{
    for (size_t i = 0; i < g->nfd; i++)
        if (g->fd[i] >= 0)
            close(g->fd[i]);
    st->nfds -= g->nfd;
    free(g->fd);
    free(g->last);
    free(g);
}

/* Targets [0, n) are sorted by (type, id): binary search. */
static perf_target *target_find(perf_state *st, size_t n, pa_target_type type, pid_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        perf_target *g = st->tg[mid];
        if (g->type == type && g->id == id)
            return g;
        if (g->type < type || (g->type == type && g->id < id))
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int target_cmp(const void *a, const void *b)
{
    const perf_target *x = *(perf_target *const *)a;
    const perf_target *y = *(perf_target *const *)b;
    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Lists the thread ids of pid (procfs <pid>/task). */
static int list_threads(const pa_env *env, pid_t pid, pid_t **out, size_t *n)
{
    char path[PERF_PATH_MAX];
    int rc = pa_path_join(path, sizeof(path), pa_env_procfs(env), "%d/task", (int)pid);
    if (rc < 0)
        return rc;
    DIR *d = opendir(path);
    if (!d)
        return -errno;
    size_t cap = 8, k = 0;
    pid_t *v = malloc(cap * sizeof(*v));
    struct dirent *de;
    while (v && (de = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        if (PA__GROW(v, cap, k + 1, 8) < 0) {
            free(v);
            v = NULL;
            break;
        }
        v[k++] = (pid_t)atoi(de->d_name);
    }
    closedir(d);
    if (!v)
        return -ENOMEM;
    *out = v;
    *n = k;
    return 0;
}

/* Opens the counters of pid (a thread id, or a cgroup fd with
 * PERF_FLAG_PID_CGROUP) on cpu (-1 any) into fd[0..nev). */
static int open_set(perf_state *st, pid_t tid, int cpu, unsigned long flags, bool inherit, int *fd)
{
    for (size_t j = 0; j < st->nev; j++)
        fd[j] = -1;
    /* the leader first: the others join it in index order, which is the
     * order of their values in a group read */
    for (size_t o = 0; o < st->nev; o++) {
        size_t j = o == 0 ? st->lead : o <= st->lead ? o - 1 : o;
        struct perf_event_attr a = st->ev[j].attr;
        a.size = sizeof(a);
        a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        bool member = st->group && !st->ev[j].solo;
        if (member && j == st->lead)
            a.read_format |= PERF_FORMAT_GROUP;
        a.inherit = inherit;
        a.inherit_thread = inherit && st->inherit_thread;
        int group_fd = member && j != st->lead ? fd[st->lead] : -1;
        long r = pa__perf_event_open(&a, tid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC | flags);
        if (r < 0 && errno == EINVAL && a.inherit_thread) {
            /* before Linux 5.13: children processes are counted too */
            st->inherit_thread = false;
            a.inherit_thread = 0;
            r = pa__perf_event_open(&a, tid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC | flags);
        }
        if (r < 0) {
            int e = -errno;
            for (size_t k = 0; k < st->nev; k++) {
                if (fd[k] >= 0)
                    close(fd[k]);
                fd[k] = -1;
            }
            return e;
        }
        fd[j] = (int)r;
    }
    return 0;
}

static int budget_check(perf_state *st, size_t need)
{
    if (st->nfds + need <= st->fd_budget)
        return 0;
    return -EMFILE;
}

/* Opens a target's counters; on failure the target is kept with err set
 * so it is not retried every tick. */
static perf_target *target_open(perf_state *st, const pa_env *env, const pa_frame_task_info *t)
{
    perf_target *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->type = t->type;
    g->id = t->type == PA_TARGET_THREAD ? t->tid : t->pid;
    g->start_ticks = t->start_ticks;
    pid_t *tids = NULL;
    size_t nt = 0;
    if (t->type == PA_TARGET_PROCESS) {
        if (list_threads(env, t->pid, &tids, &nt) < 0 || nt == 0) {
            free(tids);
            tids = malloc(sizeof(*tids));
            if (!tids)
                goto nomem;
            tids[0] = t->pid;
            nt = 1;
        }
    } else {
        tids = malloc(sizeof(*tids));
        if (!tids)
            goto nomem;
        tids[0] = t->tid;
        nt = 1;
    }
    size_t need = nt * st->nev;
    if (budget_check(st, need) < 0) {
        g->err = -EMFILE;
        free(tids);
        return g;
    }
    g->fd = malloc(need * sizeof(int));
    g->last = calloc(need, sizeof(*g->last));
    if (!g->fd || !g->last)
        goto nomem;
    size_t k = 0;
    int err = 0;
    for (size_t i = 0; i < nt; i++) {
        int rc = open_set(st, tids[i], -1, 0, t->type == PA_TARGET_PROCESS, g->fd + k * st->nev);
        if (rc == -ESRCH)
            continue; /* the thread ended meanwhile */
        if (rc < 0) {
            err = rc;
            continue;
        }
        k++;
    }
    free(tids);
    tids = NULL;
    g->nfd = k * st->nev;
    st->nfds += g->nfd;
    if (k == 0)
        g->err = err ? err : -ESRCH;
    return g;
nomem:
    free(tids);
    free(g->fd);
    free(g->last);
    free(g);
    return NULL;
}

/* Reads one counter set; adds the scaled window to acc, lowers *mux. */
static int read_set(perf_state *st, const int *fd, uint64_t (*last)[3], double *acc, double *mux)
{
    if (st->group) {
        uint64_t buf[3 + PA_MAX_COUNTERS];
        size_t nmem = 0;
        for (size_t j = 0; j < st->nev; j++)
            nmem += !st->ev[j].solo;
        ssize_t n = read(fd[st->lead], buf, sizeof(buf));
        if (n < (ssize_t)((3 + nmem) * sizeof(uint64_t)))
            return n < 0 ? -errno : -EIO;
        /* nr, time_enabled, time_running, then the leader's value and
         * the members' in index order; times are kept on the leader */
        size_t L = st->lead;
        uint64_t de = buf[1] - last[L][1], dr = buf[2] - last[L][2];
        size_t k = 3;
        for (size_t o = 0; o < st->nev; o++) {
            size_t j = o == 0 ? L : o <= L ? o - 1 : o;
            if (st->ev[j].solo)
                continue;
            uint64_t dv = buf[k] - last[j][0];
            if (dr > 0)
                acc[j] += (double)dv * ((double)de / (double)dr);
            last[j][0] = buf[k++];
        }
        last[L][1] = buf[1];
        last[L][2] = buf[2];
        /* a group larger than the PMU's counters is never scheduled */
        if (buf[2] == 0 && buf[1] > 100000000ull)
            st->starved = true;
        if (de > 0 && (double)dr / (double)de < *mux)
            *mux = (double)dr / (double)de;
    }
    for (size_t j = 0; j < st->nev; j++) {
        if (st->group && !st->ev[j].solo)
            continue;
        uint64_t v[3];
        ssize_t n = read(fd[j], v, sizeof(v));
        if (n != (ssize_t)sizeof(v))
            return n < 0 ? -errno : -EIO;
        uint64_t dv = v[0] - last[j][0], de = v[1] - last[j][1], dr = v[2] - last[j][2];
        if (dr > 0)
            acc[j] += (double)dv * ((double)de / (double)dr);
        if (de > 0 && (double)dr / (double)de < *mux)
            *mux = (double)dr / (double)de;
        memcpy(last[j], v, sizeof(v));
    }
    return 0;
}

/* ---------------------------------------------------------------- */
/* System-wide cycles                                                */
/* ---------------------------------------------------------------- */

static void system_close(perf_state *st)
{
    for (size_t i = 0; i < st->nsys; i++)
        close(st->sysfd[i]);
    free(st->sysfd);
    free(st->syslast);
    st->sysfd = NULL;
    st->syslast = NULL;
    st->nsys = 0;
}

static int online_cpus(const pa_env *env, int *cpus, int cap)
{
    char buf[512];
    int n = 0;
    if (pa_file_read(pa_env_sysfs(env), "devices/system/cpu/online", buf, sizeof(buf)) > 0)
        n = pa_cpulist_parse(buf, cpus, cap);
    if (n == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        for (long i = 0; i < c && n < cap; i++)
            cpus[n++] = (int)i;
    }
    return n;
}

/* Opens the cycles event on every CPU.  0, or -errno with a message. */
static int system_open(perf_state *st, const pa_env *env)
{
    if (st->cyc < 0)
        return pa_error_set(-ENOENT, "perf: system-wide cycles need a cycles "
                                     "event in events=");
    int cpus[1024];
    int n = online_cpus(env, cpus, 1024);
    st->sysfd = malloc((size_t)n * sizeof(int));
    st->syslast = calloc((size_t)n, sizeof(*st->syslast));
    if (!st->sysfd || !st->syslast) {
        system_close(st);
        return pa_error_set(-ENOMEM, "perf: out of memory");
    }
    for (int i = 0; i < n; i++) {
        struct perf_event_attr a = st->ev[st->cyc].attr;
        a.size = sizeof(a);
        a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        long fd = pa__perf_event_open(&a, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            system_close(st);
            if (e == EACCES || e == EPERM)
                return pa_error_set(-EACCES,
                                    "perf: counting cycles on every CPU "
                                    "needs root or CAP_PERFMON "
                                    "(kernel.perf_event_paranoid=%d)",
                                    paranoid_level(env));
            return pa_error_set(-e, "perf: system-wide cycles on CPU %d: %s", cpus[i], strerror(e));
        }
        st->sysfd[st->nsys++] = (int)fd;
    }
    return 0;
}

/* ---------------------------------------------------------------- */
/* Per cgroup (PERF_FLAG_PID_CGROUP)                                 */
/* ---------------------------------------------------------------- */

static void cg_close(perf_state *st, perf_cg *c)
{
    for (size_t i = 0; i < c->nfd; i++)
        if (c->fd[i] >= 0)
            close(c->fd[i]);
    st->nfds -= c->nfd;
    free(c->fd);
    free(c->last);
    c->fd = NULL;
    c->last = NULL;
    c->nfd = 0;
    c->open = false;
    memset(c->acc, 0, sizeof(c->acc));
}

static void cg_close_all(perf_state *st)
{
    for (size_t i = 0; i < st->ncg; i++)
        cg_close(st, &st->cg[i]);
    free(st->cg);
    st->cg = NULL;
    st->ncg = 0;
}

/* The cgroup v2 mount: the first cgroup2 line of <procfs>/self/mountinfo
 * (a mount point under /sys is taken under the sysfs root), else
 * <sysfs>/fs/cgroup, or <sysfs>/fs/cgroup/unified on hybrid hosts. */
static int cg_find_root(const pa_env *env, char *out, size_t len)
{
    size_t cap = 256 * 1024;
    char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    ssize_t n = pa_file_read(pa_env_procfs(env), "self/mountinfo", buf, cap);
    int rc = -ENOENT;
    for (char *l = n > 0 ? buf : NULL; l && *l && rc == -ENOENT;) {
        char *eol = strchr(l, '\n');
        if (eol)
            *eol = '\0';
        /* id parent maj:min root mountpoint opts [tags] - fstype ... */
        char *sep = strstr(l, " - ");
        char mp[PERF_PATH_MAX];
        if (sep && !strncmp(sep + 3, "cgroup2 ", 8) &&
            sscanf(l, "%*s %*s %*s %*s %4095s", mp) == 1) {
            if (!strcmp(mp, "/sys") || !strncmp(mp, "/sys/", 5))
                rc = pa_path_join(out, len, pa_env_sysfs(env), "%s", mp + 4);
            else
                rc = snprintf(out, len, "%s", mp) < (int)len ? 0 : -ENAMETOOLONG;
        }
        l = eol ? eol + 1 : NULL;
    }
    free(buf);
    if (rc != -ENOENT)
        return rc;
    static const char *const tries[] = {"fs/cgroup", "fs/cgroup/unified"};
    for (size_t i = 0; i < 2; i++) {
        char probe[PERF_PATH_MAX];
        if (pa_path_join(probe, sizeof(probe), pa_env_sysfs(env), "%s/cgroup.controllers",
                         tries[i]) == 0 &&
            access(probe, F_OK) == 0)
            return pa_path_join(out, len, pa_env_sysfs(env), "%s", tries[i]);
    }
    return -ENOENT;
}

/* 1 if the cgroup at path has no child cgroup, 0 if it has, -errno. */
static int cg_is_leaf(const perf_state *st, const char *path)
{
    char full[PERF_PATH_MAX];
    int rc = pa_path_join(full, sizeof(full), st->cg_root, "%s", path[0] == '/' ? path + 1 : path);
    if (rc < 0)
        return rc;
    DIR *d = opendir(full);
    if (!d)
        return -errno;
    int leaf = 1;
    struct dirent *de;
    while (leaf && (de = readdir(d)) != NULL)
        if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            leaf = 0;
    closedir(d);
    return leaf;
}

/* Opens the events of the cgroup at path on every online CPU. */
static int cg_open(perf_state *st, const char *path, perf_cg *c)
{
    size_t need = (size_t)st->cg_ncpus * st->nev;
    if (budget_check(st, need) < 0)
        return -EMFILE;
    char full[PERF_PATH_MAX];
    int rc = pa_path_join(full, sizeof(full), st->cg_root, "%s", path[0] == '/' ? path + 1 : path);
    if (rc < 0)
        return rc;
    int cgfd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cgfd < 0)
        return -errno;
    c->fd = malloc(need * sizeof(int));
    c->last = calloc(need, sizeof(*c->last));
    if (!c->fd || !c->last) {
        close(cgfd);
        free(c->fd);
        free(c->last);
        c->fd = NULL;
        c->last = NULL;
        return -ENOMEM;
    }
    for (size_t i = 0; i < need; i++)
        c->fd[i] = -1;
    c->nfd = need;
    st->nfds += need;
    c->open = true;
    memset(c->acc, 0, sizeof(c->acc));
    for (int i = 0; i < st->cg_ncpus && rc == 0; i++)
        rc = open_set(st, cgfd, st->cg_cpus[i], PERF_FLAG_PID_CGROUP, false,
                      c->fd + (size_t)i * st->nev);
    close(cgfd); /* the events hold the cgroup */
    if (rc < 0)
        cg_close(st, c);
    return rc;
}

/* Counts each interned cgroup that has a live process this tick and
 * gives the engine its cumulative counts (pa_frame_cgroup_counters); closes the
 * counters of cgroups left without processes.  Returns 0, or the error
 * of the first refusal (-EACCES...) to report once. */
static int cg_sample(perf_state *st, const pa_env *env, pa_frame *f, int *report_err)
{
    if (st->cg_root_err == 0) {
        int rc = cg_find_root(env, st->cg_root, sizeof(st->cg_root));
        st->cg_root_err = rc == 0 ? 1 : rc;
        if (rc == 0)
            st->cg_ncpus = online_cpus(env, st->cg_cpus, PA_MAX_CPUS);
        else
            *report_err = rc;
    }
    if (st->cg_root_err < 0 || st->cg_denied)
        return 0;
    uint64_t tick = pa_frame_tick(f);
    size_t ncgroups = pa_frame_cgroup_count(f);
    if (ncgroups > st->ncg) {
        perf_cg *v = realloc(st->cg, ncgroups * sizeof(*v));
        if (!v)
            return -ENOMEM;
        memset(v + st->ncg, 0, (ncgroups - st->ncg) * sizeof(*v));
        st->cg = v;
        st->ncg = ncgroups;
    }
    pa_frame_task_info ti;
    for (size_t i = 0; i < pa_frame_task_count(f); i++)
        if (pa_frame_task(f, i, &ti) == 0 && ti.type == PA_TARGET_PROCESS && ti.cgroup >= 0 &&
            (size_t)ti.cgroup < st->ncg)
            st->cg[ti.cgroup].mark = tick;
    for (size_t g = 0; g < st->ncg; g++) {
        perf_cg *c = &st->cg[g];
        if (c->mark != tick) {
            if (c->open)
                cg_close(st, c);
            c->err = 0; /* retried when processes come back */
            continue;
        }
        if (c->err)
            continue;
        /* a cgroup with child cgroups: perf would count its descendants,
         * and its record is its own processes (the sum of theirs) */
        if (!c->open || tick % CG_LEAF_RECHECK == 0) {
            int leaf = cg_is_leaf(st, pa_frame_cgroup_path(f, g));
            if (leaf <= 0) {
                if (c->open)
                    cg_close(st, c);
                if (leaf < 0) {
                    c->err = leaf;
                    if (!*report_err)
                        *report_err = leaf;
                }
                continue;
            }
        }
        bool fresh = false;
        if (!c->open) {
            int rc = cg_open(st, pa_frame_cgroup_path(f, g), c);
            if (rc == -EACCES || rc == -EPERM)
                st->cg_denied = true; /* no cgroup will open */
            if (rc < 0) {
                c->err = rc;
                if (!*report_err)
                    *report_err = rc;
                if (st->cg_denied)
                    break;
                continue;
            }
            fresh = true;
        }
        double mux = 1.0;
        int rc = 0;
        for (size_t i = 0; i + st->nev <= c->nfd && rc == 0; i += st->nev)
            rc = read_set(st, c->fd + i, c->last + i, c->acc, &mux);
        if (rc == 0)
            rc = pa_frame_cgroup_counters(f, g, c->acc, st->nev, mux, fresh);
        if (rc < 0) {
            cg_close(st, c);
            c->err = rc;
            continue;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- */
/* Module                                                            */
/* ---------------------------------------------------------------- */

static const char *const perf_options[] = {"events", "group", "system", NULL};

static int parse_bool(const char *key, const char *v, int auto_val, int *out)
{
    if (!v || !strcmp(v, "auto"))
        *out = auto_val;
    else if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "yes"))
        *out = 1;
    else if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"))
        *out = 0;
    else
        return pa_error_set(-EINVAL, "perf: %s must be on or off, not '%s'", key, v);
    return 0;
}

static void state_free(perf_state *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->ntg; i++)
        target_close(st, st->tg[i]);
    free(st->tg);
    system_close(st);
    cg_close_all(st);
    free(st);
}

/* snprintf for messages, where truncation is acceptable. */
static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* perf_event_open counts live pids: a procfs root that is a copy (test
 * fixtures) would name other processes than the ones counted. */
static int live_procfs(const pa_env *env, char *why, size_t wl)
{
    struct statfs sb;
    if (statfs(pa_env_procfs(env), &sb) == 0 && sb.f_type == 0x9fa0)
        return 0;
    say(why, wl,
        "perf: counts live processes, and the procfs root '%s' is not a "
        "procfs",
        pa_env_procfs(env));
    return -ENODEV;
}

static int state_new(pa_module *m, const pa_options *opts, perf_state **out)
{
    const pa_env *env = pa_module_env(m);
    int group, sys;
    int rc = parse_bool("group", pa_options_get(opts, "group"), -1, &group);
    if (rc == 0)
        rc = parse_bool("system", pa_options_get(opts, "system"), -1, &sys);
    if (rc < 0)
        return rc;
    char why[256];
    rc = live_procfs(env, why, sizeof(why));
    if (rc < 0)
        return pa_error_set(rc, "%s", why);
    perf_state *st = calloc(1, sizeof(*st));
    if (!st)
        return pa_error_set(-ENOMEM, "perf: out of memory");
    st->system = sys;
    st->inherit_thread = true;
    char note[768];
    rc = events_setup(st, env, pa_options_get(opts, "events"), note, sizeof(note));
    if (rc < 0) {
        free(st);
        return rc;
    }
    /* The clock events (cpu-clock, task-clock: hrtimer based) stay out
     * of a group: as a member their value is refreshed only when the task
     * is scheduled out (a 0.23 s task-clock read 0.19 s), and as the
     * leader the members' software counts are dropped (page faults read
     * 0 of 16384; tests/test_perf.c, Linux 6.18). */
    size_t nmem = 0, nhw = 0;
    for (size_t i = 0; i < st->nev; i++) {
        const struct perf_event_attr *a = &st->ev[i].attr;
        st->ev[i].solo = a->type == PERF_TYPE_SOFTWARE && (a->config == PERF_COUNT_SW_CPU_CLOCK ||
                                                           a->config == PERF_COUNT_SW_TASK_CLOCK);
        nmem += !st->ev[i].solo;
        nhw += a->type != PERF_TYPE_SOFTWARE;
    }
    if (group < 0)
        group = nhw <= 4;          /* all of a group must fit the PMU */
    st->group = group && nmem > 1; /* one member: plain reads */
    st->lead = 0;
    while (st->group && st->ev[st->lead].solo)
        st->lead++;
    /* descriptor budget: raise the soft limit to the hard one */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            struct rlimit up = {rl.rlim_max, rl.rlim_max};
            if (setrlimit(RLIMIT_NOFILE, &up) == 0)
                rl.rlim_cur = rl.rlim_max;
        }
        rlim_t lim = rl.rlim_cur == RLIM_INFINITY ? 1u << 20 : rl.rlim_cur;
        st->fd_budget = lim > 2 * FD_RESERVE ? (size_t)(lim - FD_RESERVE) : (size_t)lim / 2;
    } else {
        st->fd_budget = 1024 - FD_RESERVE;
    }
    if (st->system != 0 && st->cyc >= 0) {
        rc = system_open(st, env);
        if (rc < 0 && st->system == 1) {
            state_free(st);
            return rc;
        }
    } else if (st->system == 1) {
        state_free(st);
        return pa_error_set(-ENOENT,
                            "perf: system=on counts unhalted cycles, "
                            "and no cycles event opens here%s%s",
                            note[0] ? ": " : "", note);
    }
    *out = st;
    return 0;
}

static int perf_start(pa_module *m, const pa_options *opts)
{
    perf_state *st;
    int rc = state_new(m, opts, &st);
    if (rc < 0)
        return rc;
    rc = pa_module_counters_declare(m, st->names, st->nev);
    if (rc < 0) {
        state_free(st);
        return pa_error_set(rc, "perf: out of memory declaring counters");
    }
    pa_module_set_priv(m, st);
    return 0;
}

static int perf_configure(pa_module *m, const pa_options *opts)
{
    perf_state *st;
    int rc = state_new(m, opts, &st);
    if (rc < 0)
        return rc; /* old set kept */
    rc = pa_module_counters_declare(m, st->names, st->nev);
    if (rc < 0) {
        state_free(st);
        return pa_error_set(rc, "perf: out of memory declaring counters");
    }
    state_free(pa_module_priv(m));
    pa_module_set_priv(m, st);
    return 0;
}

static void perf_stop(pa_module *m)
{
    state_free(pa_module_priv(m));
    pa_module_set_priv(m, NULL);
}

static int perf_target_sample(perf_state *st, perf_target *g, pa_frame *f, size_t i)
{
    double mux = 1.0;
    for (size_t k = 0; k + st->nev <= g->nfd; k += st->nev) {
        int rc = read_set(st, g->fd + k, g->last + k, g->acc, &mux);
        if (rc < 0)
            return rc;
    }
    return pa_frame_task_counters(f, i, g->acc, st->nev, mux);
}

/* The first refusal of each kind in a tick, reported once (REP_*). */
typedef struct refusals {
    int report; /* REP_* met in this tick and not reported before */
    int err;    /* REP_OTHER's error */
    pid_t id;   /* the target it concerns */
} refusals;

static void refusal_note(const perf_state *st, int err, pid_t id, refusals *r)
{
    if (err == -EACCES || err == -EPERM) {
        if (!(st->reported & REP_EACCES)) {
            r->report |= REP_EACCES;
            r->id = id;
        }
    } else if (err == -EMFILE) {
        if (!(st->reported & REP_BUDGET)) {
            r->report |= REP_BUDGET;
            r->id = id;
        }
    } else if (err && err != -ESRCH && !(st->reported & REP_OTHER)) {
        r->report |= REP_OTHER;
        r->err = err;
        r->id = id;
    }
}

/* Opens the counters of the processes and threads seen in this tick that
 * have none yet, and reads every target's; marks them with the tick. */
static int sample_targets(perf_state *st, const pa_env *env, pa_frame *f, refusals *r)
{
    size_t added = 0;
    uint64_t tick = pa_frame_tick(f);
    pa_frame_task_info t;
    for (size_t i = 0; i < pa_frame_task_count(f); i++) {
        if (pa_frame_task(f, i, &t) < 0)
            continue;
        pid_t id = t.type == PA_TARGET_THREAD ? t.tid : t.pid;
        perf_target *g = target_find(st, st->ntg - added, t.type, id);
        if (!g)
            for (size_t a = st->ntg - added; a < st->ntg; a++)
                if (st->tg[a]->type == t.type && st->tg[a]->id == id)
                    g = st->tg[a];
        if (g && g->start_ticks != t.start_ticks) {
            g->mark = 0; /* pid reused: closed below, reopened next */
            g = NULL;
            continue;
        }
        if (!g) {
            if (PA__GROW(st->tg, st->tgcap, st->ntg + 1, 64) < 0)
                return pa_error_set(-ENOMEM, "perf: out of memory");
            g = target_open(st, env, &t);
            if (!g)
                return pa_error_set(-ENOMEM, "perf: out of memory");
            st->tg[st->ntg++] = g;
            added++;
            refusal_note(st, g->err, id, r);
        }
        g->mark = tick;
        if (g->err)
            continue;
        int rc = perf_target_sample(st, g, f, i);
        if (rc < 0)
            g->err = rc; /* keep the others going */
    }
    return 0;
}

/* Closes the targets not marked in this tick; keeps the table sorted. */
static void targets_prune(perf_state *st, uint64_t tick)
{
    size_t w = 0;
    for (size_t i = 0; i < st->ntg; i++) {
        if (st->tg[i]->mark == tick)
            st->tg[w++] = st->tg[i];
        else
            target_close(st, st->tg[i]);
    }
    st->ntg = w;
    if (st->ntg > 1)
        qsort(st->tg, st->ntg, sizeof(st->tg[0]), target_cmp);
}

/* The system-wide cycles, scaled by each counter's multiplexing. */
static int sample_system(perf_state *st, pa_frame *f)
{
    if (!st->nsys)
        return 0;
    double mux = 1.0;
    for (size_t i = 0; i < st->nsys; i++) {
        uint64_t v[3];
        if (read(st->sysfd[i], v, sizeof(v)) != (ssize_t)sizeof(v))
            return pa_error_set(-EIO, "perf: reading system-wide cycles "
                                      "failed");
        uint64_t dv = v[0] - st->syslast[i][0], de = v[1] - st->syslast[i][1],
                 dr = v[2] - st->syslast[i][2];
        if (dr > 0)
            st->cycles_acc += (double)dv * ((double)de / (double)dr);
        if (de > 0 && (double)dr / (double)de < mux)
            mux = (double)dr / (double)de;
        memcpy(st->syslast[i], v, sizeof(v));
    }
    pa_frame_cycles_set(f, st->cycles_acc);
    return 0;
}

/* The per-cgroup refusal of this tick, once (a cgroup removed meanwhile
 * is none). */
static int report_cgroup(perf_state *st, const pa_env *env, int cg_err)
{
    if (!cg_err || (cg_err == -ENOENT && st->cg_root_err >= 0) || (st->reported & REP_CGROUP))
        return 0;
    st->reported |= REP_CGROUP;
    if (cg_err == -EACCES || cg_err == -EPERM)
        return pa_error_set(-EACCES,
                            "perf: counting per cgroup (PERF_FLAG_PID_CGROUP, "
                            "one counter per CPU) needs root or CAP_PERFMON "
                            "(kernel.perf_event_paranoid=%d); cgroup records "
                            "sum their processes' counters",
                            paranoid_level(env));
    if (cg_err == -EMFILE)
        return pa_error_set(-EMFILE,
                            "perf: not counting a cgroup: %d CPUs x %zu "
                            "events exceed the RLIMIT_NOFILE budget (%zu, "
                            "%zu in use); its record sums its processes' "
                            "counters",
                            st->cg_ncpus, st->nev, st->fd_budget, st->nfds);
    if (st->cg_root_err < 0)
        return pa_error_set(-ENOENT,
                            "perf: no cgroup v2 mount (mountinfo, "
                            "%s/fs/cgroup); cgroup records sum their "
                            "processes' counters",
                            pa_env_sysfs(env));
    return pa_error_set(cg_err,
                        "perf: cannot count per cgroup: %s; cgroup records "
                        "sum their processes' counters",
                        strerror(-cg_err));
}

/* Refusals are reported once per kind: the failure is recorded by the
 * engine, the other targets' counts of this tick are kept. */
static int report_refusals(perf_state *st, const pa_env *env, const refusals *r, int cg_err)
{
    st->reported |= (unsigned)r->report;
    if (r->report & REP_BUDGET)
        return pa_error_set(-EMFILE,
                            "perf: not counting pid %d: %zu targets x "
                            "%zu events already use %zu file descriptors of the "
                            "RLIMIT_NOFILE budget (%zu); raise the hard limit "
                            "(ulimit -Hn, LimitNOFILE=), or watch fewer targets "
                            "or events",
                            (int)r->id, st->ntg, st->nev, st->nfds, st->fd_budget);
    if (r->report & REP_EACCES)
        return pa_error_set(-EACCES,
                            "perf: not counting pid %d: perf_event_open "
                            "refused (EACCES): counting another user's process "
                            "needs root or CAP_PERFMON (kernel."
                            "perf_event_paranoid=%d)",
                            (int)r->id, paranoid_level(env));
    if (st->starved && !(st->reported & REP_STARVED)) {
        st->reported |= REP_STARVED;
        return pa_error_set(-ENOSPC,
                            "perf: the group of %zu events never got "
                            "the PMU (time_running 0): more hardware events than "
                            "counters; use group=off (one counter per event, "
                            "multiplexed and scaled)",
                            st->nev);
    }
    if ((r->report & REP_OTHER) && st->group && r->err == -EINVAL)
        /* x86 refuses at open a group that can never be scheduled */
        return pa_error_set(r->err,
                            "perf: not counting pid %d: the group of %zu events "
                            "does not fit the PMU's counters (EINVAL); use "
                            "group=off (one counter per event, multiplexed and "
                            "scaled)",
                            (int)r->id, st->nev);
    if (r->report & REP_OTHER)
        return pa_error_set(r->err, "perf: not counting pid %d: %s", (int)r->id, strerror(-r->err));
    return report_cgroup(st, env, cg_err);
}

static int perf_sample(pa_module *m, pa_frame *f)
{
    perf_state *st = pa_module_priv(m);
    const pa_env *env = pa_module_env(m);
    refusals r = {0};
    int rc = sample_targets(st, env, f, &r);
    if (rc < 0)
        return rc;
    targets_prune(st, pa_frame_tick(f));
    rc = sample_system(st, f);
    if (rc < 0)
        return rc;
    /* cgroups as a whole, so that processes that came and went between
     * ticks are in their cgroup's counts */
    int cg_err = 0;
    if (pa_frame_cgroups_on(f)) {
        rc = cg_sample(st, env, f, &cg_err);
        if (rc < 0)
            return pa_error_set(rc, "perf: out of memory");
    } else if (st->ncg) {
        cg_close_all(st);
    }
    return report_refusals(st, env, &r, cg_err);
}

#define UNPRIV_NOTE                                                                                \
    ", user space only (not root: context switches and migrations, which "                         \
    "happen in the kernel, count 0)"

static int perf_probe(const pa_env *env, char *why, size_t wl)
{
    int lr = live_procfs(env, why, wl);
    if (lr < 0)
        return lr;
    perf_state *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    char note[768];
    pa_error_set(0, "%s", "");
    int rc = events_setup(st, env, NULL, note, sizeof(note));
    if (rc < 0) {
        snprintf(why, wl, "%s", pa_last_error());
    } else if (note[0]) {
        snprintf(why, wl,
                 "perf: no hardware PMU here (default events "
                 "open with %s); software events only: "
                 "perf::TASK-CLOCK%s",
                 "ENOENT", st->user_only ? UNPRIV_NOTE : "");
    } else {
        snprintf(why, wl, "perf: %zu default events open%s", st->nev,
                 st->user_only ? UNPRIV_NOTE : "");
    }
    free(st);
    return rc;
}

const pa_module_ops pa__mod_perf = {
    .abi = PA_MODULE_ABI,
    .name = "perf",
    .kind = PA_SENSOR,
    .component = PA_COMP_NONE,
    .description = "hardware/software event counts per process and thread "
                   "(perf_event_open, libpfm4 names)",
    .options = perf_options,
    .probe = perf_probe,
    .start = perf_start,
    .sample = perf_sample,
    .configure = perf_configure,
    .stop = perf_stop,
    .flags = PA_MOD_TASK_COUNTERS,
};
