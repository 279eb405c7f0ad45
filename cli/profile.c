/*
 * profile.c - `powerapi profile`: per-function energy of any process.
 *
 * Sampling: perf_event_open with the CPU-clock software event (no PMU on
 * the machines this was built on; --event task-clock or cycles where one
 * exists), per thread, inherited by the threads and processes the sampled
 * ones start.  Each sample carries IP, TID, time, CPU, period and the call
 * chain the kernel walked with frame pointers (--call-graph fp).  MMAP2,
 * COMM (exec), FORK and EXIT records keep each process's maps, so that a
 * process that execs, loads a library or exits keeps its symbols; a
 * process is symbolised through the maps of the generation (exec) that
 * was running when the sample was taken.
 *
 * Energy, as jalen does it (DESIGN.md section 6.4), per window:
 *   E_thread = E_process_cpu . cputime_thread / cputime_process_threads
 *   E_sample = E_thread / samples_of_thread
 * from libpowerapi ticks (the same sensors and formulas as monitor, auto
 * by default).  A thread with energy but no sample keeps it as
 * [unsampled]; process energy no thread's CPU time explains, and the
 * energy of processes that lived and died between two ticks (with a
 * COMMAND the tree's energy minus its processes'; with --all their
 * samples' CPU time at the window's rate, see unseen_energy), goes to the
 * samples of the processes libpowerapi did not see, else to
 * [unattributed].  Nothing is
 * dropped: functions + [unsampled] + [unattributed] = threads = process,
 * every window (checked at the end; the summary gives the difference).
 */
#include "cli.h"
#include "profile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static const char *CMD = "profile";

#define NS_PER_S 1000000000ull
#define DRAIN_NS (100 * 1000000ull) /* rings are read every 100 ms */

typedef struct proc {
    pid_t pid;
    bool replaced; /* an exec made a newer generation */
    char comm[PA_COMM_MAX];
    pf_maps maps;
    bool maps_read;
    pf_unwinder *uw; /* --call-graph dwarf */
    /* energy bookkeeping (latest generation only) */
    double last_cpu_j;
    bool have_power;
    double w_j;      /* this window's CPU energy */
    bool w_seen;     /* in this window's report */
    double w_thr_cpu_s;
} proc;

typedef struct thr {
    pid_t pid, tid;
    char comm[PA_COMM_MAX];
    double w_cpu_s;   /* this window, from the report */
    uint64_t w_samples;
    double w_sampled_cpu_s; /* samples x period */
    bool w_exited;          /* an EXIT record in this window */
    bool w_first;           /* first report: its CPU time before the
                               first reading is in no report either */
    double w_j;
    bool w_reported;
} thr;

typedef struct ring {
    int fd;
    void *base;
    size_t pages;
} ring;

typedef struct profiler {
    /* options */
    pid_t *pids;
    size_t npids;
    char **cmd;
    uint64_t duration_ns, period_ns, window_ns;
    unsigned long freq;
    const char *out_dir;
    int out_made, out_written; /* the folder made by check_out_dir; written */
    char out_buf[64];
    const char *event;
    const char *call_graph;
    char **filters;
    size_t nfilters;
    pa_cli_ctx co; /* roots, calibration, modules */
    bool interval_set;
    bool quiet;
    bool dwarf; /* --call-graph dwarf */
    bool all;   /* --all: every process, per CPU */

    /* run time */
    pa_ctx *ctx;
    ring *rings;
    size_t nrings;
    int *fds; /* every event, mapped or not */
    size_t nfds;
    int ncpus;
    int *cpu_ring; /* ring index of each CPU, -1 none yet */
    bool kernel;
    proc *procs;
    size_t nprocs, capprocs;
    thr *thrs;
    size_t nthrs, capthrs;
    uint64_t *wbuf; /* window samples: proc, tid, period, n, ips[n] */
    size_t wn, wcap;
    char *rec; /* records of one drain, all rings */
    size_t recn, reccap;
    struct rec_ref *refs;
    size_t refcap;
    pf_prof *prof;
    pf_frame *pool; /* resolved frames */
    size_t npool, cappool;
    uint64_t *ckeys; /* cache: (proc << 1 | ret, ip) -> pool range */
    uint32_t *cvals;
    size_t ccap, cn;
    uint64_t samples, lost, windows, idle_samples;
    double process_j, nic_j, cpu_s, tree_last_j;
    bool tree_have;
    double unseen_j; /* --all: energy given to processes no report had */
    double conservation_err; /* worst window, relative */
    pid_t cmd_pid;
    sigset_t sigs;
    uint64_t t0;
    char formula[128], sensors[128], cpu_source[32], assumed[1024];
} profiler;

static const char profile_usage[] =
    "%s profile [OPTIONS] --pid PID [--pid PID...]\n"
    "       %s profile [OPTIONS] --all --duration DURATION\n"
    "       %s profile [OPTIONS] [--] COMMAND [ARGS...]\n";

static const char profile_about[] =
    "\n"
    "Per-function energy of native processes (C, C++, Rust, Go, JIT runtimes "
    "with\nperf maps): samples stacks with perf_event_open, gives each thread "
    "its energy\nfrom libpowerapi every window and splits it over the "
    "thread's samples.  With\na COMMAND, profiles it and every process it "
    "starts; the exit status is the\ncommand's own.  (Here --interval is "
    "the CPU time between two stack samples;\nthe context's window is "
    "--window.)\n";

static const char profile_footer[] =
    "Files: functions.csv, functions-filtered.csv, threads.csv, "
    "processes.csv\n(several processes), energy.collapsed, flamegraph.html, "
    "timeline.csv,\nprofile.pb.gz (pprof), summary.json.\n"
    "\nExamples:\n"
    "  %s profile --pid 4242 --duration 30s --output prof\n"
    "  %s profile --frequency 200 -- make -j2\n";

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static int add_pids(void *v, const char *cmd, const char *arg)
{
    profiler *p = v;
    int err = pa_cli_parse_pids(arg, &p->pids, &p->npids);
    if (err == -ENOMEM) {
        pa_cli_error(cmd, "out of memory");
        return PA_EXIT_FAIL;
    }
    if (err < 0)
        return pa_cli_usage_error(cmd, "--pid: invalid pid '%s'", arg);
    return 0;
}

/* The sampling period: profile's own --interval (CPU time between two
 * samples, down to 10 us), not the context's window (--window). */
static int set_period(void *v, const char *cmd, const char *arg)
{
    static const pa_cli_opt period = {.long_name = "interval", .min = 10000};
    profiler *p = v;
    p->interval_set = true;
    return pa_cli_opt_duration(cmd, &period, arg, &p->period_ns);
}

static int set_event(void *v, const char *cmd, const char *arg)
{
    if (strcmp(arg, "cpu-clock") && strcmp(arg, "task-clock") &&
        strcmp(arg, "cycles"))
        return pa_cli_usage_error(
            cmd, "--event: unknown event '%s' (cpu-clock, task-clock, cycles)",
            arg);
    *(const char **)v = arg;
    return 0;
}

static int set_call_graph(void *v, const char *cmd, const char *arg)
{
    profiler *p = v;
    if (strcmp(arg, "fp") && strcmp(arg, "dwarf"))
        return pa_cli_usage_error(
            cmd, "--call-graph: unknown mode '%s' (fp or dwarf)", arg);
#if !defined(__x86_64__)
    if (!strcmp(arg, "dwarf"))
        return pa_cli_usage_error(
            cmd, "--call-graph dwarf: x86-64 only in this version (use fp)");
#endif
    p->call_graph = arg;
    p->dwarf = !strcmp(arg, "dwarf");
    return 0;
}

static int add_filter(void *v, const char *cmd, const char *arg)
{
    profiler *p = v;
    char **n = realloc(p->filters, (p->nfilters + 1) * sizeof(*n));
    if (!n) {
        pa_cli_error(cmd, "out of memory");
        return PA_EXIT_FAIL;
    }
    p->filters = n;
    p->filters[p->nfilters++] = (char *)arg;
    return 0;
}

/* The combinations parse_args refuses. */
static int check_args(profiler *p)
{
    if (p->freq && p->interval_set)
        return pa_cli_usage_error(CMD, "--interval and --frequency exclude each other");
    if (p->freq)
        p->period_ns = 0;
    if (!p->cmd && !p->npids && !p->all)
        return pa_cli_usage_error(
            CMD, "nothing to profile: give --pid PID, --all or a COMMAND");
    if ((p->cmd != NULL) + (p->npids > 0) + p->all > 1)
        return pa_cli_usage_error(CMD, "--pid, --all and a COMMAND exclude each other");
    if (p->cmd && p->duration_ns)
        return pa_cli_usage_error(
            CMD, "--duration cannot be used with a COMMAND (it runs until the "
                 "command exits)");
    return 0;
}

static int parse_args(profiler *p, int argc, char **argv)
{
    const pa_cli_opt opts[] = {
        PA_OPT_GROUP("Targets:"),
        PA_OPT_CALLBACK('p', "pid", p, "PID[,PID...]",
                        "profile a running process and the threads it\n"
                        "starts",
                        add_pids),
        PA_OPT_FLAG('a', "all", &p->all,
                    "every process of the machine, per CPU (root or\n"
                    "CAP_PERFMON; until --duration or Ctrl-C)"),
        PA_OPT_GROUP("Sampling:"),
        PA_OPT_CALLBACK('i', "interval", p, "DURATION",
                        "CPU time between samples (default 10ms, at\n"
                        "least 10us)",
                        set_period),
        PA_OPT_UINT('F', "frequency", &p->freq, "HZ",
                    "or samples per second of CPU time", 1, 100000),
        PA_OPT_CALLBACK('e', "event", &p->event, "NAME",
                        "cpu-clock (default), task-clock, or cycles\n"
                        "(needs a PMU)",
                        set_event),
        PA_OPT_CALLBACK('g', "call-graph", p, "MODE",
                        "fp (frame pointers; the default) or dwarf (8 KiB\n"
                        "of user stack per sample, unwound with libdwfl:\n"
                        "right through code without frame pointers; costs\n"
                        "more)",
                        set_call_graph),
        PA_OPT_DURATION('w', "window", &p->window_ns,
                        "energy window (default 1s)", 10 * 1000000ull, 0),
        PA_OPT_DURATION('d', "duration", &p->duration_ns,
                        "stop after this long (default: until the targets\n"
                        "exit or Ctrl-C)",
                        0, 0),
        PA_OPT_GROUP("Output:"),
        {.type = PA_CLI_OPT_STRING,
         .short_name = 'o',
         .long_name = "output",
         .value = &p->out_dir,
         .argh = "DIR",
         .help = "output folder (default powerapi-profile-PID)",
         .alias = "out"},
        PA_OPT_CALLBACK(0, "filter", p, "PREFIX",
                        "functions-filtered.csv charges each sample to its\n"
                        "innermost function (or module) starting with\n"
                        "PREFIX (repeatable)",
                        add_filter),
        PA_OPT_FLAG('q', "quiet", &p->quiet, "no summary on stderr"),
        PA_OPT_CONTEXT(&p->co, PA_CTXOPT_ROOTS | PA_CTXOPT_CALIBRATION |
                                   PA_CTXOPT_MODULES),
        PA_OPT_END,
    };
    const pa_cli_cmd c = {.name = CMD,
                          .usage = profile_usage,
                          .about = profile_about,
                          .footer = profile_footer,
                          .opts = opts,
                          .operands = 1};
    p->period_ns = 10 * 1000000ull;
    p->window_ns = NS_PER_S;
    p->event = "cpu-clock";
    p->call_graph = "fp";
    pa_cli_ctx_init(&p->co);
    int first;
    int st = pa_cli_parse(&c, argc, argv, &first);
    if (st)
        return st;
    if (first < argc)
        p->cmd = argv + first;
    return check_args(p);
}

/* ------------------------------------------------------------------ */
/* Processes and threads                                               */
/* ------------------------------------------------------------------ */

static const char *procfs_root(const profiler *p)
{
    return p->co.copts.procfs ? p->co.copts.procfs : "/proc";
}

/* The current generation of pid, or -1. */
static int proc_find(profiler *p, pid_t pid)
{
    for (size_t i = p->nprocs; i-- > 0;)
        if (p->procs[i].pid == pid && !p->procs[i].replaced)
            return (int)i;
    return -1;
}

static int proc_new(profiler *p, pid_t pid, int copy_from)
{
    if (PA__GROW(p->procs, p->capprocs, p->nprocs + 1, 16) < 0)
        return -ENOMEM;
    int old = proc_find(p, pid);
    proc *n = &p->procs[p->nprocs];
    memset(n, 0, sizeof(*n));
    n->pid = pid;
    if (old >= 0) {
        proc *o = &p->procs[old];
        o->replaced = true;
        /* energy bookkeeping moves to the new generation */
        n->last_cpu_j = o->last_cpu_j;
        n->have_power = o->have_power;
        memcpy(n->comm, o->comm, sizeof(n->comm));
    }
    if (copy_from >= 0) {
        proc *src = &p->procs[copy_from];
        memcpy(n->comm, src->comm, sizeof(n->comm));
        for (size_t i = 0; i < src->maps.n; i++)
            if (pf_maps_add(&n->maps, src->maps.v[i].start,
                            src->maps.v[i].end - src->maps.v[i].start,
                            src->maps.v[i].pgoff, src->maps.v[i].path) < 0)
                return -ENOMEM;
        n->maps_read = true;
    }
    return (int)p->nprocs++;
}

/* The current generation of pid, created (maps from procfs) if unknown. */
static int proc_get(profiler *p, pid_t pid)
{
    int i = proc_find(p, pid);
    if (i >= 0)
        return i;
    i = proc_new(p, pid, -1);
    if (i < 0)
        return i;
    proc *pr = &p->procs[i];
    pf_maps_read(&pr->maps, procfs_root(p), pid);
    pr->maps_read = true;
    char path[4200];
    snprintf(path, sizeof(path), "%s/%d/comm", procfs_root(p), (int)pid);
    FILE *f = fopen(path, "re");
    if (f) {
        if (fgets(pr->comm, sizeof(pr->comm), f))
            pr->comm[strcspn(pr->comm, "\n")] = '\0';
        fclose(f);
    }
    return i;
}

static thr *thr_get(profiler *p, pid_t pid, pid_t tid)
{
    for (size_t i = 0; i < p->nthrs; i++)
        if (p->thrs[i].tid == tid && p->thrs[i].pid == pid)
            return &p->thrs[i];
    if (PA__GROW(p->thrs, p->capthrs, p->nthrs + 1, 64) < 0)
        return NULL;
    thr *t = &p->thrs[p->nthrs++];
    memset(t, 0, sizeof(*t));
    t->pid = pid;
    t->tid = tid;
    return t;
}

/* ------------------------------------------------------------------ */
/* perf_event_open                                                     */
/* ------------------------------------------------------------------ */

static int read_paranoid(const profiler *p)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/sys/kernel/perf_event_paranoid", procfs_root(p));
    FILE *f = fopen(path, "re");
    int v = 2;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = 2;
        fclose(f);
    }
    return v;
}

static void fill_attr(const profiler *p, struct perf_event_attr *a, bool cmd)
{
    memset(a, 0, sizeof(*a));
    a->size = sizeof(*a);
    if (!strcmp(p->event, "cycles")) {
        a->type = PERF_TYPE_HARDWARE;
        a->config = PERF_COUNT_HW_CPU_CYCLES;
    } else {
        a->type = PERF_TYPE_SOFTWARE;
        a->config = !strcmp(p->event, "task-clock") ? PERF_COUNT_SW_TASK_CLOCK
                                                    : PERF_COUNT_SW_CPU_CLOCK;
    }
    if (p->freq) {
        a->freq = 1;
        a->sample_freq = p->freq;
    } else {
        a->sample_period = p->period_ns;
        if (a->type == PERF_TYPE_HARDWARE) /* cycles: ns at ~2 GHz */
            a->sample_period = p->period_ns * 2;
    }
    a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
    a->mmap = 1; /* exec mappings; mmap2 selects the MMAP2 format */
    a->mmap2 = 1;
    a->comm = 1;
    a->comm_exec = 1;
    a->task = 1;
    a->sample_id_all = 1;
    a->inherit = 1;
    a->exclude_hv = 1;
    a->exclude_kernel = !p->kernel;
    a->exclude_callchain_kernel = !p->kernel;
    if (p->dwarf) {
        /* the kernel's call chain for kernel frames; the user stack from
         * a copy, unwound here */
        a->exclude_callchain_user = 1;
        a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a->sample_regs_user = PF_UNWIND_REGS_MASK;
        a->sample_stack_user = PF_UNWIND_STACK;
    }
    a->disabled = cmd;
    a->enable_on_exec = cmd;
    a->wakeup_events = 0;
}

static int event_open(profiler *p, pid_t tid, int cpu, bool cmd)
{
    struct perf_event_attr a;
    fill_attr(p, &a, cmd);
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && (errno == EACCES || errno == EPERM) && p->kernel) {
        /* kernel samples not allowed: user space only, and say so */
        p->kernel = false;
        fill_attr(p, &a, cmd);
        fd = (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    }
    return fd < 0 ? -errno : fd;
}

/* Samples thread tid (and, inherited, what it starts) on every CPU: the
 * kernel refuses to map the ring of an inherited per-task event, so there
 * is one event per CPU, and one ring per CPU that the events of the other
 * threads on that CPU write into (PERF_EVENT_IOC_SET_OUTPUT). */
static int ring_open(profiler *p, pid_t tid, bool cmd, size_t pages)
{
    int opened = 0, first_err = 0;
    for (int cpu = 0; cpu < p->ncpus; cpu++) {
        int fd = event_open(p, tid, cpu, cmd);
        if (fd < 0) {
            if (fd != -ENODEV && !first_err) /* ENODEV: CPU offline */
                first_err = fd;
            continue;
        }
        int *nf = realloc(p->fds, (p->nfds + 1) * sizeof(*nf));
        if (!nf) {
            close(fd);
            return -ENOMEM;
        }
        p->fds = nf;
        p->fds[p->nfds++] = fd;
        if (p->cpu_ring[cpu] >= 0) {
            if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, p->rings[p->cpu_ring[cpu]].fd) < 0)
                return -errno;
            opened++;
            continue;
        }
        /* a smaller ring when the locked-memory limit of unprivileged
         * users (perf_event_mlock_kb) refuses this one */
        size_t len = 0, np = pages;
        void *base = MAP_FAILED;
        for (; np >= 8; np /= 2) {
            len = (1 + np) * (size_t)sysconf(_SC_PAGESIZE);
            base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (base != MAP_FAILED || errno != EPERM)
                break;
        }
        if (base == MAP_FAILED)
            return -errno;
        ring *nv = realloc(p->rings, (p->nrings + 1) * sizeof(*nv));
        if (!nv) {
            munmap(base, len);
            return -ENOMEM;
        }
        p->rings = nv;
        p->cpu_ring[cpu] = (int)p->nrings;
        p->rings[p->nrings++] = (ring){fd, base, np};
        opened++;
    }
    return opened ? 0 : first_err ? first_err : -ENODEV;
}

/* One line for a failed perf_event_open on pid (the target, or a thread
 * of it).  Returns the exit status. */
static int open_error(const profiler *p, pid_t pid, int err)
{
    int par = read_paranoid(p);
    if (err == -ESRCH)
        pa_cli_error(CMD, "pid %ld: no such process", (long)pid);
    else if (err == -ENOENT || err == -EOPNOTSUPP)
        pa_cli_error(CMD,
                     "event %s: not supported here (no hardware PMU on this "
                     "machine?); use --event cpu-clock",
                     p->event);
    else if ((err == -EACCES || err == -EPERM) && par > 2)
        pa_cli_error(CMD,
                     "pid %ld: perf_event_paranoid is %d, which forbids "
                     "sampling to users; run as root or with CAP_PERFMON, or "
                     "set kernel.perf_event_paranoid to 2 or lower",
                     (long)pid, par);
    else if (err == -EACCES || err == -EPERM)
        pa_cli_error(CMD,
                     "pid %ld: permission denied (the process of another "
                     "user, or ptrace protection); run as root or with "
                     "CAP_PERFMON",
                     (long)pid);
    else
        pa_cli_error(CMD, "pid %ld: perf_event_open: %s", (long)pid,
                     strerror(-err));
    return PA_EXIT_FAIL;
}

/* Opens one ring per existing thread of pid (each inherited by the
 * threads and processes it starts). */
static int open_pid(profiler *p, pid_t pid)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%d/task", procfs_root(p), (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return open_error(p, pid, errno == ENOENT ? -ESRCH : -errno);
    struct dirent *e;
    int opened = 0, first_err = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        pid_t tid = (pid_t)atoi(e->d_name);
        int rc = ring_open(p, tid, false, p->dwarf ? 512 : 64);
        if (rc == 0)
            opened++;
        else if (rc != -ESRCH && !first_err)
            first_err = rc; /* a thread that just exited is fine */
    }
    closedir(d);
    if (!opened)
        return open_error(p, pid, first_err ? first_err : -ESRCH);
    int pi = proc_get(p, pid);
    return pi < 0 ? PA_EXIT_FAIL : 0;
}

/* --all: one event and one ring per CPU for every task (root or
 * CAP_PERFMON). */
static int open_all(profiler *p)
{
    int opened = 0, first_err = 0;
    for (int cpu = 0; cpu < p->ncpus; cpu++) {
        struct perf_event_attr a;
        fill_attr(p, &a, false);
        a.inherit = 0; /* per CPU: every task already */
        int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            if (errno != ENODEV && !first_err)
                first_err = -errno;
            continue;
        }
        int *nf = realloc(p->fds, (p->nfds + 1) * sizeof(*nf));
        if (!nf) {
            close(fd);
            return PA_EXIT_FAIL;
        }
        p->fds = nf;
        p->fds[p->nfds++] = fd;
        size_t pages = p->dwarf ? 512 : 128;
        size_t len = (1 + pages) * (size_t)sysconf(_SC_PAGESIZE);
        void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) {
            pa_cli_error(CMD, "--all: mmap of CPU %d's ring: %s", cpu, strerror(errno));
            return PA_EXIT_FAIL;
        }
        ring *nv = realloc(p->rings, (p->nrings + 1) * sizeof(*nv));
        if (!nv) {
            munmap(base, len);
            return PA_EXIT_FAIL;
        }
        p->rings = nv;
        p->cpu_ring[cpu] = (int)p->nrings;
        p->rings[p->nrings++] = (ring){fd, base, pages};
        opened++;
    }
    if (opened)
        return 0;
    if (first_err == -EACCES || first_err == -EPERM) {
        pa_cli_error(CMD,
                     "--all: sampling every process needs root or CAP_PERFMON "
                     "(perf_event_paranoid is %d)",
                     read_paranoid(p));
        return PA_EXIT_FAIL;
    }
    return open_error(p, -1, first_err ? first_err : -ENODEV);
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

static int wbuf_push(profiler *p, const uint64_t *v, size_t n)
{
    if (PA__GROW(p->wbuf, p->wcap, p->wn + n, 65536) < 0)
        return -ENOMEM;
    memcpy(p->wbuf + p->wn, v, n * sizeof(*v));
    p->wn += n;
    return 0;
}

static void on_sample(profiler *p, const char *r, size_t len)
{
    /* PERF_SAMPLE_IP, TID, TIME, CPU, PERIOD, CALLCHAIN in this order */
    if (len < 8 * 6)
        return;
    uint64_t ip, time, period, nr;
    uint32_t pid, tid;
    memcpy(&ip, r, 8);
    memcpy(&pid, r + 8, 4);
    memcpy(&tid, r + 12, 4);
    memcpy(&time, r + 16, 8);
    memcpy(&period, r + 32, 8);
    memcpy(&nr, r + 40, 8);
    (void)time;
    if (48 + nr * 8 > len)
        nr = (len - 48) / 8;
    if (pid == 0) { /* --all: an idle CPU (the swapper), no process */
        p->idle_samples++;
        return;
    }
    int pi = proc_get(p, (pid_t)pid);
    if (pi < 0)
        return;
    uint64_t chain[PF_MAX_DEPTH + 4];
    size_t n = 0;
    const char *ips = r + 48;
    for (uint64_t i = 0; i < nr && n < PF_MAX_DEPTH; i++) {
        uint64_t a;
        memcpy(&a, ips + i * 8, 8);
        if (a >= (uint64_t)-4095) { /* PERF_CONTEXT_* marker */
            if (a == PERF_CONTEXT_USER || a == PERF_CONTEXT_KERNEL)
                continue;
            break; /* guest, hv: not walked */
        }
        chain[n++] = a;
    }
    if (p->dwarf) {
        /* after the call chain: REGS_USER {abi, regs[17]}, STACK_USER
         * {size, data[size], dyn_size} */
        size_t o = 48 + nr * 8;
        uint64_t abi = 0, regs[17], ssize = 0, dyn = 0;
        if (o + 8 <= len)
            memcpy(&abi, r + o, 8);
        o += 8;
        if (abi && o + sizeof(regs) <= len) {
            memcpy(regs, r + o, sizeof(regs));
            o += sizeof(regs);
        } else {
            abi = 0; /* a kernel thread: no user registers */
        }
        if (o + 8 <= len)
            memcpy(&ssize, r + o, 8);
        o += 8;
        if (ssize && o + ssize + 8 <= len)
            memcpy(&dyn, r + o + ssize, 8);
        if (abi && n < PF_MAX_DEPTH) {
            int got = pf_unwind(&p->procs[pi].uw, (pid_t)pid, (pid_t)tid,
                                &p->procs[pi].maps, regs, r + o,
                                dyn < ssize ? dyn : ssize, chain + n,
                                (int)(PF_MAX_DEPTH - n));
            if (got > 0)
                n += (size_t)got;
            else
                chain[n++] = regs[8]; /* IP alone */
        }
    }
    uint64_t head[4] = {(uint64_t)pi, tid, period, n};
    if (wbuf_push(p, head, 4) < 0 || wbuf_push(p, chain, n) < 0) {
        p->lost++;
        return;
    }
    p->samples++;
}

static void on_record(profiler *p, const struct perf_event_header *h)
{
    const char *r = (const char *)(h + 1);
    size_t len = h->size - sizeof(*h);
    switch (h->type) {
    case PERF_RECORD_SAMPLE:
        on_sample(p, r, len);
        break;
    case PERF_RECORD_MMAP2: {
        /* pid, tid, addr, len, pgoff, maj, min, ino, ino_generation (or
         * build id), prot, flags, filename */
        if (len < 8 + 8 * 3 + 4 * 2 + 8 * 2 + 4 * 2 + 1)
            return;
        uint32_t pid, prot;
        uint64_t addr, mlen, pgoff;
        memcpy(&pid, r, 4);
        memcpy(&addr, r + 8, 8);
        memcpy(&mlen, r + 16, 8);
        memcpy(&pgoff, r + 24, 8);
        memcpy(&prot, r + 56, 4);
        const char *name = r + 64;
        if (!memchr(name, '\0', len - 64))
            return;
        if (!(prot & PROT_EXEC))
            return;
        int pi = proc_find(p, (pid_t)pid);
        if (pi < 0) {
            pi = proc_new(p, (pid_t)pid, -1);
            if (pi < 0)
                return;
            p->procs[pi].maps_read = true; /* records describe it */
        }
        pf_maps_add(&p->procs[pi].maps, addr, mlen, pgoff, name);
        break;
    }
    case PERF_RECORD_COMM: {
        uint32_t pid, tid;
        if (len < 9)
            return;
        memcpy(&pid, r, 4);
        memcpy(&tid, r + 4, 4);
        const char *comm = r + 8;
        if (h->misc & PERF_RECORD_MISC_COMM_EXEC) {
            /* exec: a new generation, maps from the MMAP2 records that
             * follow */
            int pi = proc_new(p, (pid_t)pid, -1);
            if (pi < 0)
                return;
            p->procs[pi].maps_read = true;
            snprintf(p->procs[pi].comm, sizeof(p->procs[pi].comm), "%.15s", comm);
        } else if (pid == tid) {
            int pi = proc_find(p, (pid_t)pid);
            if (pi >= 0)
                snprintf(p->procs[pi].comm, sizeof(p->procs[pi].comm), "%.15s", comm);
        }
        thr *t = thr_get(p, (pid_t)pid, (pid_t)tid);
        if (t)
            snprintf(t->comm, sizeof(t->comm), "%.15s", comm);
        break;
    }
    case PERF_RECORD_FORK: {
        uint32_t pid, ppid;
        if (len < 16)
            return;
        memcpy(&pid, r, 4);
        memcpy(&ppid, r + 4, 4);
        if (pid != ppid && proc_find(p, (pid_t)pid) < 0) {
            int parent = proc_find(p, (pid_t)ppid);
            /* --all: a parent never sampled (one that waits for its
             * children) is read now, so that children gone before their
             * first sample is read still get its name and maps */
            if (parent < 0 && p->all) {
                parent = proc_get(p, (pid_t)ppid);
                if (parent >= 0 && !p->procs[parent].maps.n)
                    parent = -1; /* gone too */
            }
            proc_new(p, (pid_t)pid, parent); /* fork copies the maps */
        }
        break;
    }
    case PERF_RECORD_LOST: {
        uint64_t lost;
        if (len >= 16) {
            memcpy(&lost, r + 8, 8);
            p->lost += lost;
        }
        break;
    }
    case PERF_RECORD_EXIT: {
        /* pid, ppid, tid, ptid, time: the thread stays known for its
         * samples; its CPU time since the last tick is in no report */
        uint32_t pid, tid;
        if (len < 16)
            return;
        memcpy(&pid, r, 4);
        memcpy(&tid, r + 8, 4);
        thr *t = thr_get(p, (pid_t)pid, (pid_t)tid);
        if (t)
            t->w_exited = true;
        break;
    }
    default:
        break;
    }
}

/* Copies the records of a ring into p->rec (the ring is freed at once). */
static void drain_ring(profiler *p, ring *rg)
{
    struct perf_event_mmap_page *mp = rg->base;
    size_t psz = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = rg->pages * psz;
    const char *data = (const char *)rg->base + psz;
    uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = mp->data_tail;
    while (tail + sizeof(struct perf_event_header) <= head) {
        size_t off = tail % size;
        struct perf_event_header hdr;
        if (off + sizeof(hdr) <= size) {
            memcpy(&hdr, data + off, sizeof(hdr));
        } else {
            size_t a = size - off;
            memcpy(&hdr, data + off, a);
            memcpy((char *)&hdr + a, data, sizeof(hdr) - a);
        }
        if (hdr.size < sizeof(hdr) || tail + hdr.size > head)
            break;
        /* 8-byte aligned copies: records are multiples of 8 */
        if (PA__GROW(p->rec, p->reccap, p->recn + hdr.size, 1u << 20) < 0)
            break;
        if (off + hdr.size <= size) {
            memcpy(p->rec + p->recn, data + off, hdr.size);
        } else {
            size_t a = size - off;
            memcpy(p->rec + p->recn, data + off, a);
            memcpy(p->rec + p->recn + a, data, hdr.size - a);
        }
        p->recn += hdr.size;
        tail += hdr.size;
    }
    __atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
}

typedef struct rec_ref {
    uint64_t time;
    size_t off;
} rec_ref;

static int rec_cmp(const void *a, const void *b)
{
    const rec_ref *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* The time of a record: in the sample itself, or (sample_id_all) in the
 * trailer {pid, tid, time, cpu, res} of the others. */
static uint64_t rec_time(const struct perf_event_header *h)
{
    uint64_t t = 0;
    const char *r = (const char *)h;
    if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 24)
        memcpy(&t, r + sizeof(*h) + 16, 8);
    else if (h->size >= sizeof(*h) + 24)
        memcpy(&t, r + h->size - 16, 8);
    return t;
}

/* Reads every ring and handles the records in time order: the rings are
 * per CPU, and a process's exec (COMM), maps (MMAP2) and samples may sit
 * in different rings. */
static void drain_all(profiler *p)
{
    p->recn = 0;
    for (size_t i = 0; i < p->nrings; i++)
        drain_ring(p, &p->rings[i]);
    size_t n = 0;
    for (size_t o = 0; o < p->recn;) {
        const struct perf_event_header *h = (const void *)(p->rec + o);
        if (PA__GROW(p->refs, p->refcap, n + 1, 4096) < 0)
            break;
        p->refs[n++] = (rec_ref){rec_time(h), o};
        o += h->size;
    }
    qsort(p->refs, n, sizeof(*p->refs), rec_cmp);
    for (size_t i = 0; i < n; i++)
        on_record(p, (const void *)(p->rec + p->refs[i].off));
}

/* ------------------------------------------------------------------ */
/* Symbols (cached per process generation and address)                 */
/* ------------------------------------------------------------------ */

static int resolve_cached(profiler *p, int pi, uint64_t ip, int ret,
                          const pf_frame **out)
{
    uint64_t k1 = ((uint64_t)pi << 1) | (uint64_t)ret;
    if ((p->cn + 1) * 2 > p->ccap) {
        size_t ncap = p->ccap ? p->ccap * 2 : 8192;
        uint64_t *nk = calloc(ncap * 2, sizeof(*nk));
        uint32_t *nv = calloc(ncap, sizeof(*nv) * 2);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return -ENOMEM;
        }
        for (size_t i = 0; i < p->ccap; i++) {
            if (!p->cvals[2 * i + 1])
                continue;
            uint64_t h = pa__hash_pair(p->ckeys[2 * i], p->ckeys[2 * i + 1]);
            size_t q = h & (ncap - 1);
            while (nv[2 * q + 1])
                q = (q + 1) & (ncap - 1);
            nk[2 * q] = p->ckeys[2 * i];
            nk[2 * q + 1] = p->ckeys[2 * i + 1];
            nv[2 * q] = p->cvals[2 * i];
            nv[2 * q + 1] = p->cvals[2 * i + 1];
        }
        free(p->ckeys);
        free(p->cvals);
        p->ckeys = nk;
        p->cvals = nv;
        p->ccap = ncap;
    }
    size_t q = pa__hash_pair(k1, ip) & (p->ccap - 1);
    while (p->cvals[2 * q + 1]) {
        if (p->ckeys[2 * q] == k1 && p->ckeys[2 * q + 1] == ip) {
            *out = &p->pool[p->cvals[2 * q]];
            return (int)p->cvals[2 * q + 1];
        }
        q = (q + 1) & (p->ccap - 1);
    }
    pf_frame tmp[16];
    proc *pr = &p->procs[pi];
    int n = pf_sym_resolve(pr->pid, &pr->maps, ip, ret, tmp, 16);
    if (PA__GROW(p->pool, p->cappool, p->npool + (size_t)n, 4096) < 0)
        return -ENOMEM;
    memcpy(&p->pool[p->npool], tmp, (size_t)n * sizeof(*tmp));
    p->ckeys[2 * q] = k1;
    p->ckeys[2 * q + 1] = ip;
    p->cvals[2 * q] = (uint32_t)p->npool;
    p->cvals[2 * q + 1] = (uint32_t)n;
    p->npool += (size_t)n;
    p->cn++;
    *out = &p->pool[p->cvals[2 * q]];
    return n;
}

/* ------------------------------------------------------------------ */
/* Windows                                                             */
/* ------------------------------------------------------------------ */

static bool is_target_pid(const profiler *p, pid_t pid)
{
    if (p->cmd || p->all)
        return true; /* the context watches only the targets */
    for (size_t i = 0; i < p->npids; i++)
        if (p->pids[i] == pid)
            return true;
    return false;
}

static const char *comm_of_thr(profiler *p, const thr *t)
{
    if (t->comm[0])
        return t->comm;
    int pi = proc_find(p, t->pid);
    return pi >= 0 ? p->procs[pi].comm : "";
}

static void add_pseudo(profiler *p, const char *name, double j, pid_t pid,
                       pid_t tid, const char *pcomm, const char *tcomm)
{
    pf_frame f = pf_sym_pseudo(name);
    pf_prof_add(p->prof, &f, 1, j, 0, 0, pid, tid, pcomm, tcomm);
}

/* --all: the energy of the processes that lived and died between two
 * ticks, which no report has but whose samples say how much CPU time they
 * used (u, samples x period; 0 with --event cycles, whose period is no
 * time).  s is the CPU time of the processes the report has, E their
 * energy, R the active energy (the report's CPU power minus its idle
 * power, over the window) that no process got.  A formula that leaves
 * the time of unseen tasks out of its split (cpu-tdp) has that energy in
 * R, at the processes' rate: u . E / s is taken from R.  One that
 * spreads it over the processes seen, so that processes + idle = P
 * (rapl-share, cpu-curve with every process watched), has R = 0 and the
 * processes seen too much: the unseen get (E + R) . u / (s + u), R first
 * and the rest taken from the processes seen in proportion (their w_j is
 * lowered, and *procs_j with them).  The two agree where R is just
 * enough.  Returns the energy for the unseen processes' samples. */
static double unseen_energy(profiler *p, const pa_report *rep, double *procs_j,
                            double s)
{
    double e = *procs_j;
    if (!strcmp(p->event, "cycles") || !(s > 0) || !(e > 0))
        return 0;
    double u = 0;
    for (size_t i = 0; i < p->nthrs; i++) {
        int pi = proc_find(p, p->thrs[i].pid);
        if (pi >= 0 && !p->procs[pi].w_seen)
            u += p->thrs[i].w_sampled_cpu_s;
    }
    if (!(u > 0))
        return 0;
    double r = (rep->system.cpu_w - rep->system.idle_w) * rep->system.interval_s - e;
    if (!(r > 0))
        r = 0;
    double at_rate = e * u / s;
    if (r >= at_rate)
        return at_rate;
    double x = (e + r) * u / (s + u);
    double take = x - r; /* from the processes seen */
    for (size_t i = 0; i < p->nprocs; i++)
        if (p->procs[i].w_seen)
            p->procs[i].w_j *= 1 - take / e;
    *procs_j = e - take;
    return x;
}

/* Ticks libpowerapi and charges this window's energy to the samples. */
static int window(profiler *p, double start_s, double len_s)
{
    drain_all(p);
    int rc = pa_tick(p->ctx);
    pa_report *rep = NULL;
    if (rc >= 0 && pa_report_get(p->ctx, &rep) < 0)
        rep = NULL;
    for (size_t i = 0; i < p->nprocs; i++) {
        p->procs[i].w_j = 0;
        p->procs[i].w_seen = false;
        p->procs[i].w_thr_cpu_s = 0;
    }
    for (size_t i = 0; i < p->nthrs; i++) {
        p->thrs[i].w_cpu_s = 0;
        p->thrs[i].w_samples = 0;
        p->thrs[i].w_sampled_cpu_s = 0;
        p->thrs[i].w_first = false; /* w_exited: set by the drains since
                                       the last window, cleared after it */
        p->thrs[i].w_j = 0;
        p->thrs[i].w_reported = false;
    }
    double procs_j = 0, nic_j = 0, seen_cpu_s = 0;
    if (rep) {
        snprintf(p->formula, sizeof(p->formula), "%s", rep->formula ? rep->formula : "");
        snprintf(p->sensors, sizeof(p->sensors), "%s", rep->sensors ? rep->sensors : "");
        snprintf(p->cpu_source, sizeof(p->cpu_source), "%s",
                 rep->cpu_source ? rep->cpu_source : "");
        snprintf(p->assumed, sizeof(p->assumed), "%s", rep->assumed ? rep->assumed : "");
        for (size_t i = 0; i < rep->ntargets; i++) {
            const pa_target_info *ti = &rep->targets[i];
            if (ti->type == PA_TARGET_PROCESS && is_target_pid(p, ti->pid)) {
                int pi = proc_get(p, ti->pid);
                if (pi < 0)
                    continue;
                proc *pr = &p->procs[pi];
                if (!pr->comm[0])
                    snprintf(pr->comm, sizeof(pr->comm), "%s", ti->comm);
                /* gone since its last reading: the time its samples show
                 * since then is in no report, as an unseen process's */
                if ((ti->power.flags & PA_POWER_EXITED) && !(ti->power.cpu_time_s > 0))
                    continue;
                double d = pr->have_power ? ti->power.cpu_j - pr->last_cpu_j
                                          : ti->power.cpu_j;
                pr->last_cpu_j = ti->power.cpu_j;
                pr->have_power = true;
                pr->w_j = d > 0 ? d : 0;
                pr->w_seen = true;
                procs_j += pr->w_j;
                nic_j += ti->power.interval_s * ti->power.nic_w;
                p->cpu_s += ti->power.cpu_time_s;
                seen_cpu_s += ti->power.cpu_time_s;
            } else if (ti->type == PA_TARGET_THREAD && is_target_pid(p, ti->pid)) {
                thr *t = thr_get(p, ti->pid, ti->tid);
                if (!t)
                    continue;
                if (ti->comm[0])
                    snprintf(t->comm, sizeof(t->comm), "%s", ti->comm);
                t->w_cpu_s = ti->power.cpu_time_s > 0 ? ti->power.cpu_time_s : 0;
                t->w_reported = true;
                t->w_first = (ti->power.flags & PA_POWER_FIRST) != 0;
            }
        }
    }
    /* samples per thread */
    for (size_t o = 0; o < p->wn;) {
        int pi = (int)p->wbuf[o];
        pid_t tid = (pid_t)p->wbuf[o + 1];
        size_t n = (size_t)p->wbuf[o + 3];
        thr *t = thr_get(p, p->procs[pi].pid, tid);
        if (t) {
            t->w_samples++;
            t->w_sampled_cpu_s += (double)p->wbuf[o + 2] * 1e-9;
        }
        o += 4 + n;
    }
    /* with a COMMAND: the tree's energy covers processes that lived
     * between two ticks; what the processes seen do not explain */
    double extra_j = 0;
    if (p->cmd && p->cmd_pid > 0) {
        pa_power tp;
        if (pa_tree_power(p->ctx, p->cmd_pid, &tp) == 0) {
            double d = p->tree_have ? tp.cpu_j - p->tree_last_j : tp.cpu_j;
            p->tree_last_j = tp.cpu_j;
            p->tree_have = true;
            if (d > procs_j)
                extra_j = d - procs_j;
        }
    }
    if (p->all && rep)
        extra_j = unseen_energy(p, rep, &procs_j, seen_cpu_s);
    if (p->all)
        p->unseen_j += extra_j;
    double window_j = procs_j + extra_j;
    double f0, t0;
    pf_prof_sums(p->prof, &f0, &t0);
    p->process_j += window_j;
    p->nic_j += nic_j;

    /* a thread that exited in the window is not in the report (nor the
     * CPU time it used since the last tick, though its process's total
     * has it): its samples x period stand for its CPU time */
    for (size_t i = 0; i < p->nthrs; i++) {
        thr *t = &p->thrs[i];
        if (!strcmp(p->event, "cycles") || t->w_sampled_cpu_s <= t->w_cpu_s)
            continue;
        /* and where the report is short of the samples by more than their
         * noise (3 sigma of the count, plus two 10 ms clock ticks of the
         * report's own rounding): a reading libpowerapi missed */
        double period = t->w_samples ? t->w_sampled_cpu_s / (double)t->w_samples : 0;
        double noise = 3.0 * sqrt((double)t->w_samples) * period + 0.02;
        if (!t->w_reported || t->w_exited || t->w_first ||
            t->w_sampled_cpu_s - t->w_cpu_s > noise)
            t->w_cpu_s = t->w_sampled_cpu_s;
    }
    /* E_thread = E_process . cpu_thread / cpu_threads */
    for (size_t i = 0; i < p->nthrs; i++) {
        thr *t = &p->thrs[i];
        int pi = proc_find(p, t->pid);
        if (pi >= 0)
            p->procs[pi].w_thr_cpu_s += t->w_cpu_s;
    }
    double unplaced_samples = 0; /* samples of processes without energy */
    for (size_t i = 0; i < p->nthrs; i++) {
        thr *t = &p->thrs[i];
        int pi = proc_find(p, t->pid);
        if (pi < 0)
            continue;
        proc *pr = &p->procs[pi];
        if (pr->w_seen && pr->w_thr_cpu_s > 0)
            t->w_j = pr->w_j * t->w_cpu_s / pr->w_thr_cpu_s;
        else if (!pr->w_seen)
            unplaced_samples += (double)t->w_samples;
    }
    /* process energy no thread's CPU time explains: the process's samples,
     * else [unattributed] */
    double unattributed = 0;
    for (size_t i = 0; i < p->nprocs; i++) {
        proc *pr = &p->procs[i];
        if (pr->replaced || !pr->w_seen || pr->w_j <= 0 || pr->w_thr_cpu_s > 0)
            continue;
        uint64_t s = 0;
        for (size_t k = 0; k < p->nthrs; k++)
            if (p->thrs[k].pid == pr->pid)
                s += p->thrs[k].w_samples;
        if (!s) {
            add_pseudo(p, "[unattributed]", pr->w_j, pr->pid, 0, pr->comm, "[process]");
            continue;
        }
        for (size_t k = 0; k < p->nthrs; k++)
            if (p->thrs[k].pid == pr->pid)
                p->thrs[k].w_j += pr->w_j * (double)p->thrs[k].w_samples / (double)s;
    }
    /* the tree's extra energy: samples of processes libpowerapi did not
     * see (short-lived), else [unattributed] */
    for (size_t i = 0; i < p->nthrs && extra_j > 0; i++) {
        thr *t = &p->thrs[i];
        int pi = proc_find(p, t->pid);
        if (pi >= 0 && !p->procs[pi].w_seen && unplaced_samples > 0)
            t->w_j += extra_j * (double)t->w_samples / unplaced_samples;
    }
    if (extra_j > 0 && unplaced_samples <= 0)
        unattributed += extra_j;
    if (unattributed > 0)
        add_pseudo(p, "[unattributed]", unattributed,
                   p->cmd ? p->cmd_pid : p->npids ? p->pids[0] : 0,
                   0, "", "[process]");
    /* E_sample = E_thread / samples_of_thread */
    double per_ns = 1e-9;
    for (size_t o = 0; o < p->wn;) {
        int pi = (int)p->wbuf[o];
        pid_t tid = (pid_t)p->wbuf[o + 1];
        uint64_t period = p->wbuf[o + 2];
        size_t n = (size_t)p->wbuf[o + 3];
        const uint64_t *ips = &p->wbuf[o + 4];
        o += 4 + n;
        proc *pr = &p->procs[pi];
        thr *t = thr_get(p, pr->pid, tid);
        double e = t && t->w_samples ? t->w_j / (double)t->w_samples : 0;
        pf_frame fr[PF_MAX_DEPTH];
        int nf = 0;
        for (size_t k = 0; k < n && nf < PF_MAX_DEPTH; k++) {
            const pf_frame *got;
            if (pf_sym_kernel_dropped(ips[k]))
                continue; /* no kernel symbols: summary.json says so */
            int m = resolve_cached(p, pi, ips[k], k > 0, &got);
            for (int j = 0; j < m && nf < PF_MAX_DEPTH; j++)
                fr[nf++] = got[j];
        }
        if (nf == 0 && n > 0)
            fr[nf++] = pf_sym_pseudo("[kernel]"); /* a kernel thread's, all
                                                    frames dropped */
        double cpu = strcmp(p->event, "cycles") ? (double)period * per_ns : 0;
        pf_prof_add(p->prof, fr, nf, e, cpu, 1, pr->pid, tid, pr->comm,
                    t ? comm_of_thr(p, t) : "");
    }
    /* threads with energy and no sample */
    for (size_t i = 0; i < p->nthrs; i++) {
        thr *t = &p->thrs[i];
        if (t->w_cpu_s > 0)
        {
            int pi = proc_find(p, t->pid);
            pf_prof_thread_cpu(p->prof, t->pid, t->tid,
                               pi >= 0 ? p->procs[pi].comm : "",
                               comm_of_thr(p, t), t->w_cpu_s);
        }
        if (t->w_j > 0 && !t->w_samples) {
            int pi = proc_find(p, t->pid);
            add_pseudo(p, "[unsampled]", t->w_j, t->pid, t->tid,
                       pi >= 0 ? p->procs[pi].comm : "", comm_of_thr(p, t));
        }
    }
    /* conservation, this window: functions (pseudo-frames included) =
     * threads = the targets' energy */
    double f1, t1;
    pf_prof_sums(p->prof, &f1, &t1);
    double scale = window_j > 1e-9 ? window_j : 1e-9;
    double e1 = fabs((f1 - f0) - window_j) / scale;
    double e2 = fabs((t1 - t0) - window_j) / scale;
    if (window_j > 1e-9 && (e1 > p->conservation_err || e2 > p->conservation_err))
        p->conservation_err = e1 > e2 ? e1 : e2;
    for (size_t i = 0; i < p->nthrs; i++)
        p->thrs[i].w_exited = false;
    p->wn = 0;
    pa_report_free(rep);
    if (rc >= 0 || rc == -ENODATA)
        p->windows++;
    pf_prof_window_end(p->prof, start_s, len_s);
    if (rc < 0 && rc != -ENODATA) {
        pa_cli_tick_error(CMD, rc);
        return PA_EXIT_FAIL;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Main loop                                                           */
/* ------------------------------------------------------------------ */

static bool targets_gone(profiler *p)
{
    for (size_t i = 0; i < p->npids; i++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%d/stat", procfs_root(p), (int)p->pids[i]);
        if (access(path, F_OK) == 0)
            return false;
    }
    return true;
}

/* Runs windows until the deadline, a signal, the targets' exit, or the
 * command's exit (then *exited). */
static int run_loop(profiler *p, bool *exited)
{
    uint64_t next_window = p->t0 + p->window_ns;
    uint64_t end = p->duration_ns ? p->t0 + p->duration_ns : 0;
    uint64_t wstart = p->t0;
    for (;;) {
        uint64_t now = pa_cli_mono_ns();
        /* dwarf: 8 KiB a sample, drained more often */
        uint64_t wake = now + (p->dwarf ? DRAIN_NS / 4 : DRAIN_NS);
        if (wake > next_window)
            wake = next_window;
        if (end && wake > end)
            wake = end;
        bool stop = false, last = false;
        if (wake > now) {
            uint64_t left = wake - now;
            struct timespec ts = {(time_t)(left / NS_PER_S), (long)(left % NS_PER_S)};
            siginfo_t si;
            int s = sigtimedwait(&p->sigs, &si, &ts);
            if (s > 0 && pa_cli_is_stop_signal(s)) {
                if (p->cmd_pid > 0 && si.si_code != SI_KERNEL)
                    kill(p->cmd_pid, s); /* forwarded; its exit ends us */
                else if (p->cmd_pid <= 0)
                    stop = true;
            }
            if (s == SIGCHLD && p->cmd_pid > 0) {
                siginfo_t wi;
                memset(&wi, 0, sizeof(wi));
                if (waitid(P_PID, (id_t)p->cmd_pid, &wi,
                           WEXITED | WNOWAIT | WNOHANG) == 0 &&
                    wi.si_pid == p->cmd_pid) {
                    *exited = true;
                    last = true;
                }
            }
        }
        now = pa_cli_mono_ns();
        if (end && now >= end)
            last = true;
        if (!p->cmd && p->npids && targets_gone(p))
            last = true;
        if (now >= next_window || last || stop) {
            int rc = window(p, (double)(wstart - p->t0) / 1e9,
                            (double)(now - wstart) / 1e9);
            if (rc)
                return rc;
            wstart = now;
            while (next_window <= now)
                next_window += p->window_ns;
        } else {
            drain_all(p);
        }
        if (last || stop)
            return 0;
    }
}

/* The output folder, named now (the default from the target) and checked
 * before anything runs: created when missing, a folder, writable (a probe
 * file made and removed), so that a profile is never lost at its end.
 * 0, or PA_EXIT_FAIL after one line. */
static int check_out_dir(profiler *p)
{
    if (!p->out_dir) {
        if (p->all)
            snprintf(p->out_buf, sizeof(p->out_buf), "powerapi-profile-all");
        else
            snprintf(p->out_buf, sizeof(p->out_buf), "powerapi-profile-%d",
                     p->cmd ? (int)getpid() : (int)p->pids[0]);
        p->out_dir = p->out_buf;
    }
    struct stat st;
    int e = 0;
    if (stat(p->out_dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            e = ENOTDIR;
    } else if (errno != ENOENT || mkdir(p->out_dir, 0777) < 0) {
        e = errno;
    } else {
        p->out_made = 1; /* removed again if the run fails before writing */
    }
    if (!e) {
        char probe[4200];
        snprintf(probe, sizeof(probe), "%s/.powerapi-probe-%d", p->out_dir, (int)getpid());
        int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, "", 0) < 0)
            e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(probe);
        }
    }
    if (!e)
        return 0;
    pa_cli_error(CMD, "--output %s: cannot write the profile there: %s (nothing was run)",
                 p->out_dir, strerror(e));
    return PA_EXIT_FAIL;
}

int pa_cli_profile(int argc, char **argv)
{
    profiler p;
    memset(&p, 0, sizeof(p));
    int status = parse_args(&p, argc, argv);
    int go = -1, exfd = -1;
    if (status != 0) {
        status = status < 0 ? PA_EXIT_OK : status;
        goto out_args;
    }
    /* preflight: unprivileged sampling forbidden outright */
    if (geteuid() != 0 && read_paranoid(&p) > 2) {
        status = open_error(&p, p.npids ? p.pids[0] : getpid(), -EACCES);
        goto out_args;
    }
    status = check_out_dir(&p);
    if (status != 0)
        goto out_args;
    sigemptyset(&p.sigs);
    sigaddset(&p.sigs, SIGINT);
    sigaddset(&p.sigs, SIGTERM);
    sigaddset(&p.sigs, SIGHUP);
    sigaddset(&p.sigs, SIGQUIT);
    sigaddset(&p.sigs, SIGCHLD);
    sigset_t old;
    sigprocmask(SIG_BLOCK, &p.sigs, &old);

    p.kernel = true;
    p.ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
    if (p.ncpus < 1)
        p.ncpus = 1;
    p.cpu_ring = malloc((size_t)p.ncpus * sizeof(int));
    if (!p.cpu_ring) {
        pa_cli_error(CMD, "out of memory");
        status = PA_EXIT_FAIL;
        goto out;
    }
    for (int i = 0; i < p.ncpus; i++)
        p.cpu_ring[i] = -1;
    int err;
    if ((status = pa_cli_ctx_create(&p.co, CMD, &p.ctx)) != 0)
        goto out;
    if (pf_prof_new(&p.prof, (const char *const *)p.filters, p.nfilters) < 0) {
        pa_cli_error(CMD, "out of memory");
        status = PA_EXIT_FAIL;
        goto out;
    }
    if (p.cmd) {
        if ((status = pa_cli_spawn(CMD, p.cmd, &p.cmd_pid, &go, &exfd)) != 0)
            goto out;
        err = ring_open(&p, p.cmd_pid, true, p.dwarf ? 512 : 64);
        if (err < 0) {
            status = open_error(&p, p.cmd_pid, err);
            goto kill_child;
        }
        err = pa_watch_pid(p.ctx, p.cmd_pid, PA_WATCH_CHILDREN | PA_WATCH_THREADS);
        if (err < 0) {
            pa_cli_error(CMD, "watch %s (pid %ld): %s", p.cmd[0], (long)p.cmd_pid,
                         pa_cli_errmsg(err));
            status = PA_EXIT_FAIL;
            goto kill_child;
        }
    } else if (p.all) {
        if ((status = open_all(&p)) != 0)
            goto out;
        err = pa_watch_all(p.ctx, 1 | PA_WATCH_ALL_THREADS);
        if (err < 0) {
            pa_cli_error(CMD, "--all: %s", pa_cli_errmsg(err));
            status = PA_EXIT_FAIL;
            goto out;
        }
    } else {
        for (size_t i = 0; i < p.npids; i++) {
            if ((status = open_pid(&p, p.pids[i])) != 0)
                goto out;
            err = pa_watch_pid(p.ctx, p.pids[i], PA_WATCH_THREADS);
            if (err < 0) {
                pa_cli_error(CMD, "pid %ld: %s", (long)p.pids[i],
                             err == -ESRCH ? "no such process" : pa_cli_errmsg(err));
                status = PA_EXIT_FAIL;
                goto out;
            }
        }
    }
    pf_sym_init(procfs_root(&p), p.kernel);
    err = pa_tick(p.ctx); /* primes the readings */
    if (err < 0 && err != -ENODATA) {
        pa_cli_error(CMD, "tick: %s", pa_cli_errmsg(err));
        status = PA_EXIT_FAIL;
        goto kill_child;
    }
    p.t0 = pa_cli_mono_ns();
    int cmd_status = -1;
    if (p.cmd) {
        close(go);
        go = -1;
        int child_errno = 0;
        ssize_t n;
        while ((n = read(exfd, &child_errno, sizeof(child_errno))) < 0 && errno == EINTR)
            ;
        if (n == (ssize_t)sizeof(child_errno)) {
            waitpid(p.cmd_pid, NULL, 0);
            p.cmd_pid = -1;
            pa_cli_error(CMD, "cannot run '%s': %s", p.cmd[0], strerror(child_errno));
            status = child_errno == ENOENT ? 127 : 126;
            goto out;
        }
    }
    bool exited = false;
    status = run_loop(&p, &exited);
    double duration_s = (double)(pa_cli_mono_ns() - p.t0) / 1e9;
    if (p.cmd_pid > 0) {
        if (status != 0)
            kill(p.cmd_pid, SIGTERM);
        int ws = 0;
        while (waitpid(p.cmd_pid, &ws, 0) < 0 && errno == EINTR)
            ;
        cmd_status = WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
        p.cmd_pid = -1;
    }
    if (status != 0)
        goto out;

    char target[512];
    char title[600];
    if (p.cmd) {
        size_t k = (size_t)snprintf(target, sizeof(target), "command:");
        for (char **a = p.cmd; *a && k < sizeof(target); a++)
            k += (size_t)snprintf(target + k, sizeof(target) - k, " %s", *a);
    } else if (p.all) {
        snprintf(target, sizeof(target), "all processes");
    } else {
        size_t k = (size_t)snprintf(target, sizeof(target), "pid");
        for (size_t i = 0; i < p.npids && k < sizeof(target); i++)
            k += (size_t)snprintf(target + k, sizeof(target) - k, "%s%d",
                                  i ? "," : " ", (int)p.pids[i]);
    }
    snprintf(title, sizeof(title), "powerapi profile energy flame graph (%s)", target);
    pf_meta meta = {
        .title = title,
        .target = target,
        .event = p.event,
        .call_graph = p.call_graph,
        .period_ns = p.period_ns,
        .frequency = p.freq,
        .window_s = (double)p.window_ns / 1e9,
        .filters = (const char *const *)p.filters,
        .nfilters = p.nfilters,
        .formula = p.formula,
        .sensors = p.sensors,
        .cpu_source = p.cpu_source,
        .assumed = p.assumed,
        .kernel_state = pf_sym_kernel_state(),
        .demangled = 1,
        .samples = p.samples,
        .samples_lost = p.lost,
        .windows = p.windows,
        .duration_s = duration_s,
        .process_j = p.process_j,
        .process_nic_j = p.nic_j,
        .process_cpu_s = p.cpu_s,
        .exit_status = cmd_status,
        .tree_j = p.cmd ? p.tree_last_j : -1,
        .unseen_j = p.all ? p.unseen_j : -1,
        .conservation_err = p.conservation_err,
    };
    err = pf_prof_write(p.prof, p.out_dir, &meta);
    if (err < 0) {
        pa_cli_error(CMD, "--output %s: cannot write: %s", p.out_dir, strerror(-err));
        status = PA_EXIT_FAIL;
        goto out;
    }
    p.out_written = 1;
    if (!p.quiet)
        pf_prof_print_top(p.prof, p.out_dir, &meta, 10);
    status = cmd_status >= 0 ? cmd_status : PA_EXIT_OK;
    goto out;

kill_child:
    if (p.cmd_pid > 0) {
        kill(p.cmd_pid, SIGKILL);
        if (go >= 0)
            close(go);
        go = -1;
        while (waitpid(p.cmd_pid, NULL, 0) < 0 && errno == EINTR)
            ;
        p.cmd_pid = -1;
    }
    if (!status)
        status = PA_EXIT_FAIL;
out:
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (go >= 0)
        close(go);
    if (exfd >= 0)
        close(exfd);
    for (size_t i = 0; i < p.nrings; i++)
        munmap(p.rings[i].base, (1 + p.rings[i].pages) * (size_t)sysconf(_SC_PAGESIZE));
    for (size_t i = 0; i < p.nfds; i++)
        close(p.fds[i]);
    free(p.rings);
    free(p.fds);
    free(p.cpu_ring);
    for (size_t i = 0; i < p.nprocs; i++) {
        pf_maps_free(&p.procs[i].maps);
        pf_unwinder_free(p.procs[i].uw);
    }
    free(p.procs);
    free(p.thrs);
    free(p.wbuf);
    free(p.rec);
    free(p.refs);
    free(p.pool);
    free(p.ckeys);
    free(p.cvals);
    pf_prof_free(p.prof);
    pf_sym_fini();
    pa_ctx_free(p.ctx);
out_args:
    if (p.out_made && !p.out_written)
        rmdir(p.out_dir); /* empty: nothing of this run is lost */
    pa_cli_ctx_fini(&p.co);
    free(p.pids);
    free(p.filters);
    return status;
}
