/*
 * profile.c - `powerapi profile`: per-function energy of any process.
 *
 * The command: options in, the profile out.  The perf_event engine
 * (engines/perf/) samples the targets' stacks and names their frames; the
 * profiling core (profcore/) splits each window's energy from libpowerapi
 * over processes, threads and samples (DESIGN.md section 13.2), keeps the
 * call tree and writes the files.  Here: the options, the targets (a
 * command started and released, pids, or every process), the windows'
 * loop, and the output folder.
 */
#include "cli.h"
#include "perf.h"
#include "profile_count.h"
#include "profile_push.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *CMD = "profile";

#define NS_PER_S 1000000000ull
#define DRAIN_NS (100 * 1000000ull) /* rings are read every 100 ms */

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
    cli_ctx co; /* roots, calibration, modules */
    bool interval_set;
    bool quiet;
    bool dwarf;                   /* --call-graph dwarf */
    bool cg_given;                /* --call-graph given (else the default of the target) */
    bool all;                     /* --all: every process, per CPU */
    unsigned long repeat, warmup; /* --repeat N, --warmup N (issue 44) */
    const char *count;            /* --count FUNC[,FUNC...] (issue 45) */
    bool count_time;              /* --count-time: return probes too */

    /* run time */
    pa_ctx *ctx;
    pf_engine *eng;
    pf_strace *scopes;      /* a command's C scopes (DESIGN.md 15.1) */
    const char *scopes_env; /* its environment entry, NAME=PATH */
    pc_tasks tasks;
    pc_prof *prof;
    pf_count *counts; /* --count's uprobes */
    uint64_t windows;
    uint64_t windows_empty; /* windows with energy and no stack sample */
    double process_j, nic_j, cpu_s;
    pc_cum tree;             /* a command's tree energy */
    double unseen_j;         /* --all: energy given to processes no report had */
    double conservation_err; /* worst window, relative */
    pid_t cmd_pid;
    int go, exfd; /* a command's release and exec-error pipes */
    sigset_t sigs, old_sigs;
    uint64_t t0;
    pc_source source;    /* the last report's formula, sensors... */
    cli_ppush_args push; /* --push: profiles sent as they are made */
    cli_ppush *pusher;
} profiler;

static const char profile_usage[] = "%s profile [OPTIONS] --pid PID [--pid PID...]\n"
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
    int err = cli_parse_pids(arg, &p->pids, &p->npids);
    if (err == -ENOMEM) {
        cli_error(cmd, "out of memory");
        return CLI_EXIT_FAIL;
    }
    if (err < 0)
        return cli_usage_error(cmd, "--pid: invalid pid '%s'", arg);
    return 0;
}

/* The sampling period: profile's own --interval (CPU time between two
 * samples, down to 10 us), not the context's window (--window). */
static int set_period(void *v, const char *cmd, const char *arg)
{
    static const cli_opt period = {.long_name = "interval", .min = 10000};
    profiler *p = v;
    p->interval_set = true;
    return cli_opt_duration(cmd, &period, arg, &p->period_ns);
}

static const char *const event_choices[] = {"cpu-clock", "task-clock", "cycles", NULL};
#if defined(__x86_64__)
static const char *const call_graph_choices[] = {"fp", "dwarf", NULL};
#else /* dwarf: x86-64 only in this version */
static const char *const call_graph_choices[] = {"fp", NULL};
#endif

static int set_event(void *v, const char *cmd, const char *arg)
{
    if (cli_choice(cmd, "event", event_choices, arg) < 0)
        return CLI_EXIT_USAGE;
    *(const char **)v = arg;
    return 0;
}

static int set_call_graph(void *v, const char *cmd, const char *arg)
{
    profiler *p = v;
    if (cli_choice(cmd, "call-graph", call_graph_choices, arg) < 0)
        return CLI_EXIT_USAGE;
    p->call_graph = arg;
    p->dwarf = !strcmp(arg, "dwarf");
    p->cg_given = true;
    return 0;
}

static int add_filter(void *v, const char *cmd, const char *arg)
{
    profiler *p = v;
    char **n = realloc(p->filters, (p->nfilters + 1) * sizeof(*n));
    if (!n) {
        cli_error(cmd, "out of memory");
        return CLI_EXIT_FAIL;
    }
    p->filters = n;
    p->filters[p->nfilters++] = (char *)arg;
    return 0;
}

/* The combinations parse_args refuses. */
static int check_args(profiler *p)
{
    if (p->freq && p->interval_set)
        return cli_usage_error(CMD, "--interval and --frequency exclude each other");
    if (p->freq)
        p->period_ns = 0;
    /* --all: frame pointers unless asked; 16 KiB of stack copied per sample
     * on every CPU would fill the rings and lose the records that name
     * processes */
    if (p->all && !p->cg_given) {
        p->call_graph = "fp";
        p->dwarf = false;
    }
    /* --all: 10 ms unless asked, for the same reason (every CPU's samples
     * share the rings with the records of every fork and exec) */
    if (p->all && !p->interval_set && !p->freq)
        p->period_ns = 10 * 1000000ull;
    if (!p->cmd && !p->npids && !p->all)
        return cli_usage_error(CMD, "nothing to profile: give --pid PID, --all or a COMMAND");
    if ((p->cmd != NULL) + (p->npids > 0) + p->all > 1)
        return cli_usage_error(CMD, "--pid, --all and a COMMAND exclude each other");
    if (p->count_time && !p->count)
        return cli_usage_error(CMD, "--count-time times the functions of --count FUNC");
    if (p->count && (p->all || p->npids > 1))
        return cli_usage_error(CMD, "--count counts in one process: a COMMAND or one --pid");
    if (p->repeat > 1 && !p->cmd)
        return cli_usage_error(CMD, "--repeat needs a COMMAND to run again");
    if (p->cmd && p->duration_ns)
        return cli_usage_error(CMD, "--duration cannot be used with a COMMAND (it runs until the "
                                    "command exits)");
    return 0;
}

static int parse_args(profiler *p, int argc, char **argv)
{
    const cli_opt opts[] = {
        CLI_OPT_GROUP("Targets:"),
        CLI_OPT_CALLBACK('p', "pid", p, "PID[,PID...]",
                         "profile a running process and the threads it\n"
                         "starts",
                         add_pids),
        CLI_OPT_FLAG('a', "all", &p->all,
                     "every process of the machine, per CPU (root or\n"
                     "CAP_PERFMON; until --duration or Ctrl-C)"),
        CLI_OPT_GROUP("Sampling:"),
        CLI_OPT_CALLBACK('i', "interval", p, "DURATION",
                         "CPU time between samples (default 2ms, 500 a\n"
                         "CPU-second; 10ms with --all; at least 10us)",
                         set_period),
        CLI_OPT_UINT('F', "frequency", &p->freq, "HZ", "or samples per second of CPU time", 1,
                     100000),
        CLI_OPT_CHOICE('e', "event", &p->event, "NAME",
                       "cpu-clock (default), task-clock, or cycles\n"
                       "(needs a PMU)",
                       set_event, event_choices),
        CLI_OPT_CHOICE('g', "call-graph", p, "MODE",
                       "dwarf (the default on x86-64: 16 KiB of user stack\n"
                       "per sample, unwound with libdwfl, right through\n"
                       "code without frame pointers such as Debian's) or\n"
                       "fp (frame pointers: cheaper, whole stacks only for\n"
                       "code built with them; the default with --all);\n"
                       "-g alone: the default",
                       set_call_graph, call_graph_choices),
        CLI_OPT_DURATION('w', "window", &p->window_ns, "energy window (default 1s)",
                         10 * 1000000ull, 0),
        CLI_OPT_DURATION('d', "duration", &p->duration_ns,
                         "stop after this long (default: until the targets\n"
                         "exit or Ctrl-C)",
                         0, 0),
        CLI_OPT_GROUP("Output:"),
        {.type = CLI_KIND_STRING,
         .short_name = 'o',
         .long_name = "output",
         .value = &p->out_dir,
         .argh = "DIR",
         .help = "output folder (default powerapi-profile-PID)",
         .alias = "out"},
        CLI_OPT_CALLBACK(0, "filter", p, "PREFIX",
                         "functions-filtered.csv charges each sample to its\n"
                         "innermost function (or module) starting with\n"
                         "PREFIX (repeatable)",
                         add_filter),
        CLI_OPT_FLAG('q', "quiet", &p->quiet, "no summary on stderr"),
        CLI_OPT_STRING(0, "count", &p->count, "FUNC[,FUNC...]",
                       "count every call of these functions (a symbol,\n"
                       "LIB:SYMBOL, wildcards) with uprobes: calls.csv"),
        CLI_OPT_FLAG(0, "count-time", &p->count_time,
                     "time each counted call too (a return probe):\n"
                     "calls.csv's wall_mean_ms"),
        CLI_OPT_GROUP("Repeats (a COMMAND):"),
        CLI_OPT_UINT(0, "repeat", &p->repeat, "N",
                     "profile COMMAND N times, into DIR/run-1..N, and\n"
                     "write each function's mean, spread and 95 %\n"
                     "interval (repeat.csv, summary.json): what\n"
                     "`powerapi diff` tests for significance",
                     1, 1000),
        CLI_OPT_UINT(0, "warmup", &p->warmup, "N", "run COMMAND N times unprofiled first", 0, 1000),
        CLI_OPT_PPUSH(&p->push),
        CLI_OPT_CONTEXT(&p->co, CLI_CTXOPT_ROOTS | CLI_CTXOPT_CALIBRATION | CLI_CTXOPT_MODULES |
                                    CLI_CTXOPT_CARBON),
        CLI_OPT_END,
    };
    const cli_cmd c = {.name = CMD,
                       .usage = profile_usage,
                       .about = profile_about,
                       .footer = profile_footer,
                       .opts = opts,
                       .operands = 1};
    p->period_ns = 2 * 1000000ull; /* a few hundred samples in a 1 s run */
    p->window_ns = NS_PER_S;
    p->event = "cpu-clock";
#if defined(__x86_64__)
    p->call_graph = "dwarf"; /* whole stacks on a stock system (issue 31) */
    p->dwarf = true;
#else
    p->call_graph = "fp";
#endif
    cli_ctx_init(&p->co);
    int first;
    int st = cli_parse(&c, argc, argv, &first);
    if (st)
        return st;
    if (first < argc)
        p->cmd = argv + first;
    return check_args(p);
}

static const char *procfs_root(const profiler *p)
{
    return p->co.copts.procfs ? p->co.copts.procfs : "/proc";
}

/* One line for a failed perf_event_open on pid (the target, or a thread
 * of it).  Returns the exit status. */
static int open_error(const profiler *p, pid_t pid, int err)
{
    int par = pf_paranoid(procfs_root(p));
    if (err == -ENOMEM)
        cli_error(CMD, "out of memory");
    else if (err == -ESRCH)
        cli_error(CMD, "pid %ld: no such process", (long)pid);
    else if (err == -ENOENT || err == -EOPNOTSUPP)
        cli_error(CMD,
                  "event %s: not supported here (no hardware PMU on this "
                  "machine?); use --event cpu-clock",
                  p->event);
    else if ((err == -EACCES || err == -EPERM) && par > 2)
        cli_error(CMD,
                  "pid %ld: perf_event_paranoid is %d (Debian's default), which "
                  "forbids sampling to users; run as root or with CAP_PERFMON, or "
                  "allow it until the next boot: sudo sysctl kernel.perf_event_paranoid=2",
                  (long)pid, par);
    else if (err == -EACCES || err == -EPERM)
        cli_error(CMD,
                  "pid %ld: permission denied (the process of another "
                  "user, or ptrace protection); run as root or with "
                  "CAP_PERFMON",
                  (long)pid);
    else
        cli_error(CMD, "pid %ld: perf_event_open: %s", (long)pid, strerror(-err));
    return CLI_EXIT_FAIL;
}

/* --all: one event and one ring per CPU for every task (root or
 * CAP_PERFMON). */
static int open_all(profiler *p)
{
    int cpu, err = pf_engine_open_all(p->eng, &cpu);
    if (!err)
        return 0;
    if (cpu >= 0)
        cli_error(CMD, "--all: mmap of CPU %d's ring: %s", cpu, strerror(-err));
    else if (err == -ENOMEM)
        return CLI_EXIT_FAIL;
    else if (err == -EACCES || err == -EPERM)
        cli_error(CMD,
                  "--all: sampling every process needs root or CAP_PERFMON "
                  "(perf_event_paranoid is %d)",
                  pf_paranoid(procfs_root(p)));
    else
        return open_error(p, -1, err);
    return CLI_EXIT_FAIL;
}

/* ------------------------------------------------------------------ */
/* Windows                                                             */
/* ------------------------------------------------------------------ */

static bool is_target_pid(void *user, pid_t pid)
{
    const profiler *p = user;
    if (p->cmd || p->all)
        return true; /* the context watches only the targets */
    for (size_t i = 0; i < p->npids; i++)
        if (p->pids[i] == pid)
            return true;
    return false;
}

static void on_report_proc(void *user, pid_t pid)
{
    pf_engine_touch(((profiler *)user)->eng, pid);
}

/* The energy of processes that lived and died between two ticks: with a
 * COMMAND, what the tree's energy has beyond the processes seen; with
 * --all, from their samples (pc_tasks_unseen). */
static double extra_energy(void *user, const pa_report *rep, pc_win *w)
{
    profiler *p = user;
    double extra = 0;
    pa_power tp;
    if (p->cmd && p->cmd_pid > 0 && pa_tree_power(p->ctx, p->cmd_pid, &tp) == 0) {
        double d = pc_cum_delta(&p->tree, tp.cpu_j);
        if (d > w->procs_j)
            extra = d - w->procs_j;
    }
    if (p->all && rep)
        extra = pc_tasks_unseen(&p->tasks, rep, w);
    if (p->all)
        p->unseen_j += extra;
    return extra;
}

/* Ticks libpowerapi and charges this window's energy to the samples. */
static int window(profiler *p, double start_s, double len_s)
{
    pf_engine_drain(p->eng);
    pf_count_poll(p->counts);
    bool stacks = pf_engine_window_has_stacks(p->eng);
    int rc = pa_tick(p->ctx);
    pa_report *rep = NULL;
    if (rc >= 0 && pa_report_get(p->ctx, &rep) < 0)
        rep = NULL;
    if (rep)
        pc_source_from_report(&p->source, rep);
    pc_win w;
    pc_engine e = pf_engine_stacks(p->eng);
    p->tasks.fallback_pid = p->cmd ? p->cmd_pid : p->npids ? p->pids[0] : 0;
    pc_tasks_window(&p->tasks, p->prof, &e, rep, &w);
    p->process_j += w.window_j;
    p->nic_j += w.nic_j;
    p->cpu_s += w.cpu_s;
    if (w.error > p->conservation_err)
        p->conservation_err = w.error;
    if (!stacks && w.window_j > 0)
        p->windows_empty++; /* its energy is [unsampled] */
    pa_report_free(rep);
    if (rc >= 0 || rc == -ENODATA)
        p->windows++;
    pc_prof_window_end(p->prof, start_s, len_s);
    cli_ppush_window(p->pusher, p->prof);
    if (rc < 0 && rc != -ENODATA) {
        cli_tick_error(CMD, rc);
        return CLI_EXIT_FAIL;
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
        uint64_t now = cli_mono_ns();
        /* dwarf: 32 KiB a sample, and a new program's stack is made
         * present at the first drain after its exec (engines/perf/
         * unwind.c): drained every 5 ms */
        uint64_t wake = now + (p->dwarf ? DRAIN_NS / 20 : DRAIN_NS);
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
            if (s > 0 && cli_is_stop_signal(s)) {
                if (p->cmd_pid > 0 && si.si_code != SI_KERNEL)
                    kill(p->cmd_pid, s); /* forwarded; its exit ends us */
                else if (p->cmd_pid <= 0)
                    stop = true;
            }
            if (s == SIGCHLD && p->cmd_pid > 0) {
                siginfo_t wi;
                memset(&wi, 0, sizeof(wi));
                if (waitid(P_PID, (id_t)p->cmd_pid, &wi, WEXITED | WNOWAIT | WNOHANG) == 0 &&
                    wi.si_pid == p->cmd_pid) {
                    *exited = true;
                    last = true;
                }
            }
        }
        now = cli_mono_ns();
        if (end && now >= end)
            last = true;
        if (!p->cmd && p->npids && targets_gone(p))
            last = true;
        if (now >= next_window || last || stop) {
            int rc = window(p, (double)(wstart - p->t0) / 1e9, (double)(now - wstart) / 1e9);
            if (rc)
                return rc;
            wstart = now;
            while (next_window <= now)
                next_window += p->window_ns;
        } else {
            pf_engine_drain(p->eng);
            pf_count_poll(p->counts);
        }
        if (last || stop)
            return 0;
    }
}

/* The output folder, named now (the default from the target) and checked
 * before anything runs: created when missing, a folder, writable (a probe
 * file made and removed), so that a profile is never lost at its end.
 * 0, or CLI_EXIT_FAIL after one line. */
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
    cli_error(CMD, "--output %s: cannot write the profile there: %s (nothing was run)", p->out_dir,
              strerror(e));
    return CLI_EXIT_FAIL;
}

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

/* The signals that stop the profile are taken by sigtimedwait; the
 * context, the engine and the profile. */
static int setup(profiler *p)
{
    cli_stop_signals(&p->sigs);
    sigaddset(&p->sigs, SIGCHLD);
    sigprocmask(SIG_BLOCK, &p->sigs, &p->old_sigs);
    p->tasks.period_is_time = strcmp(p->event, "cycles") != 0;
    p->tasks.is_target = is_target_pid;
    p->tasks.on_proc = on_report_proc;
    p->tasks.extra = extra_energy;
    p->tasks.user = p;
    /* a command that uses C scopes (pa_scope_begin) tells its scopes
     * through a trace its environment names: [scope NAME] root frames; a
     * trace that cannot be made leaves the stacks without them */
    if (p->cmd && pf_strace_new(&p->scopes, &p->scopes_env) == 0)
        putenv((char *)p->scopes_env);
    const pf_engine_cfg cfg = {.procfs = procfs_root(p),
                               .scopes = p->scopes,
                               .event = p->event,
                               .period_ns = p->period_ns,
                               .freq = p->freq,
                               .dwarf = p->dwarf,
                               .all = p->all,
                               .tasks = &p->tasks};
    if (pf_engine_new(&p->eng, &cfg) < 0) {
        cli_error(CMD, "out of memory");
        return CLI_EXIT_FAIL;
    }
    int status = cli_ctx_create(&p->co, CMD, &p->ctx);
    if (status)
        return status;
    if (pc_prof_new(&p->prof, (const char *const *)p->filters, p->nfilters) < 0) {
        cli_error(CMD, "out of memory");
        return CLI_EXIT_FAIL;
    }
    return 0;
}

/* Starts the command (waiting to be released), its events (enabled at
 * its exec) and its watch.  0 or the exit status; *kill: the child must
 * be killed. */
static int start_command(profiler *p, bool *kill_it)
{
    int status = cli_spawn(CMD, p->cmd, &p->cmd_pid, &p->go, &p->exfd);
    if (status)
        return status;
    *kill_it = true;
    int err = pf_engine_open_task(p->eng, p->cmd_pid, true);
    if (err < 0)
        return open_error(p, p->cmd_pid, err);
    if (p->count && (status = cli_count_start(p->count, p->count_time, p->co.copts.sysfs,
                                              procfs_root(p), p->cmd_pid, p->cmd, &p->counts)) != 0)
        return status;
    err = pa_watch_pid(p->ctx, p->cmd_pid, PA_WATCH_CHILDREN | PA_WATCH_THREADS);
    if (err < 0) {
        cli_error(CMD, "watch %s (pid %ld): %s", p->cmd[0], (long)p->cmd_pid, cli_errmsg(err));
        return CLI_EXIT_FAIL;
    }
    return 0;
}

static int open_targets(profiler *p, bool *kill_it)
{
    int err;
    if (p->cmd)
        return start_command(p, kill_it);
    if (p->all) {
        int status = open_all(p);
        if (status)
            return status;
        err = pa_watch_all(p->ctx, 1 | PA_WATCH_ALL_THREADS);
        if (err < 0) {
            cli_error(CMD, "--all: %s", cli_errmsg(err));
            return CLI_EXIT_FAIL;
        }
        return 0;
    }
    for (size_t i = 0; i < p->npids; i++) {
        err = pf_engine_open_pid(p->eng, p->pids[i]);
        if (err < 0)
            return open_error(p, p->pids[i], err);
        int status = p->count && !p->counts
                         ? cli_count_start(p->count, p->count_time, p->co.copts.sysfs,
                                           procfs_root(p), p->pids[i], NULL, &p->counts)
                         : 0;
        if (status)
            return status;
        err = pa_watch_pid(p->ctx, p->pids[i], PA_WATCH_THREADS);
        if (err < 0) {
            cli_error(CMD, "pid %ld: %s", (long)p->pids[i],
                      err == -ESRCH ? "no such process" : cli_errmsg(err));
            return CLI_EXIT_FAIL;
        }
    }
    return 0;
}

/* Lets the command exec; 0, or its exec failure's exit status (127 for
 * a command not found, else 126). */
static int release_command(profiler *p)
{
    close(p->go);
    p->go = -1;
    int child_errno = 0;
    ssize_t n;
    while ((n = read(p->exfd, &child_errno, sizeof(child_errno))) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof(child_errno))
        return 0;
    waitpid(p->cmd_pid, NULL, 0);
    p->cmd_pid = -1;
    cli_error(CMD, "cannot run '%s': %s", p->cmd[0], strerror(child_errno));
    return child_errno == ENOENT ? 127 : 126;
}

/* The command's exit status (128 + signal when killed), terminated first
 * when the profile failed; -1 without a command. */
static int reap_command(profiler *p, int status)
{
    if (p->cmd_pid <= 0)
        return -1;
    if (status != 0)
        kill(p->cmd_pid, SIGTERM);
    int ws = 0;
    while (waitpid(p->cmd_pid, &ws, 0) < 0 && errno == EINTR)
        ;
    p->cmd_pid = -1;
    return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
}

static void kill_command(profiler *p)
{
    if (p->cmd_pid <= 0)
        return;
    kill(p->cmd_pid, SIGKILL);
    if (p->go >= 0)
        close(p->go);
    p->go = -1;
    while (waitpid(p->cmd_pid, NULL, 0) < 0 && errno == EINTR)
        ;
    p->cmd_pid = -1;
}

/* ------------------------------------------------------------------ */
/* The profile's files                                                 */
/* ------------------------------------------------------------------ */

/* "command: make -j2", "all processes", "pid 1,2". */
static void describe_target(const profiler *p, char *target, size_t len)
{
    if (p->cmd) {
        size_t k = (size_t)snprintf(target, len, "command:");
        for (char **a = p->cmd; *a && k < len; a++)
            k += (size_t)snprintf(target + k, len - k, " %s", *a);
    } else if (p->all) {
        snprintf(target, len, "all processes");
    } else {
        size_t k = (size_t)snprintf(target, len, "pid");
        for (size_t i = 0; i < p->npids && k < len; i++)
            k += (size_t)snprintf(target + k, len - k, "%s%d", i ? "," : " ", (int)p->pids[i]);
    }
}

/* Why a run has no sample, or windows without one (issue 31 item 1). */
static void samples_note(const profiler *p, pc_meta *m)
{
    double period_s = p->freq ? 1.0 / (double)p->freq : (double)p->period_ns * 1e-9;
    char *s = m->samples_note;
    size_t len = sizeof(m->samples_note);
    if (!m->samples && m->process_cpu_s < 1e-3 && m->duration_s >= 0.5)
        snprintf(s, len,
                 "no stack sample: the targets were idle (%.3f s of CPU time): samples come "
                 "with CPU time, so profile them while they work",
                 m->process_cpu_s);
    else if (!m->samples && m->process_cpu_s < period_s)
        snprintf(s, len,
                 "no stack sample: the targets used %.3f s of CPU time, less than one "
                 "sampling interval (%g ms): their energy is under [unsampled]; "
                 "sample more often (-F 1000) or profile a longer run",
                 m->process_cpu_s, period_s * 1e3);
    else if (!m->samples)
        snprintf(s, len, "no stack sample (%llu lost): their energy is under [unsampled]",
                 (unsigned long long)m->samples_lost);
    else if (m->windows_without_samples)
        snprintf(s, len,
                 "%llu of %llu windows had no stack sample: their energy is under "
                 "[unsampled] (windows shorter than a few sampling intervals, or "
                 "idle targets)",
                 (unsigned long long)m->windows_without_samples, (unsigned long long)m->windows);
}

static void rename_late(void *user, const char *name, const char *module, const pf_frame *now)
{
    pc_prof_rename(user, name, module, now);
}

static int write_profile(profiler *p, double duration_s, int cmd_status)
{
    /* JIT frames whose perf map appeared after they were sampled (a JVM
     * with -XX:+DumpPerfMapAtExit writes it at exit): named now */
    pf_sym_late_jit(rename_late, p->prof);
    char target[512], title[800], co2[160];
    describe_target(p, target, sizeof(target));
    pc_source_carbon_text(&p->source, p->process_j, co2, sizeof(co2));
    snprintf(title, sizeof(title), "powerapi profile energy flame graph (%s)%s%s", target,
             co2[0] ? ", " : "", co2);
    uint64_t samples, lost, truncated;
    pf_engine_counts(p->eng, &samples, &lost, &truncated);
    pc_meta meta = {
        .title = title,
        .target = target,
        .event = p->event,
        .call_graph = p->call_graph,
        .period_ns = p->period_ns,
        .frequency = p->freq,
        .window_s = (double)p->window_ns / 1e9,
        .filters = (const char *const *)p->filters,
        .nfilters = p->nfilters,
        .source = &p->source,
        .kernel_state = pf_sym_kernel_state(),
        .demangled = 1,
        .samples = samples,
        .samples_lost = lost,
        .windows = p->windows,
        .duration_s = duration_s,
        .process_j = p->process_j,
        .process_nic_j = p->nic_j,
        .process_cpu_s = p->cpu_s,
        .exit_status = cmd_status,
        .tree_j = p->cmd ? p->tree.last : -1,
        .unseen_j = p->all ? p->unseen_j : -1,
        .conservation_err = p->conservation_err,
        .symbols_memory = pf_sym_memory(),
        .windows_without_samples = p->windows_empty,
        .stacks_truncated = truncated,
    };
    samples_note(p, &meta);
    char *counted = NULL;
    if (p->counts && cli_count_write(p->counts, p->prof, p->out_dir, &counted) < 0)
        cli_error(CMD, "--output %s: cannot write calls.csv", p->out_dir);
    meta.extra_json = counted;
    const char *unnamed = "";
    double share = pc_prof_unnamed(p->prof, &unnamed);
    cli_symbols_note(unnamed, share, meta.symbols_note, sizeof(meta.symbols_note));
    int err = pc_prof_write(p->prof, p->out_dir, &meta);
    free(counted);
    if (err < 0) {
        cli_error(CMD, "--output %s: cannot write: %s", p->out_dir, strerror(-err));
        return CLI_EXIT_FAIL;
    }
    p->out_written = 1;
    if (!p->quiet)
        pc_prof_print_top(p->prof, stderr, p->out_dir, &meta, 10);
    pid_t jvms[4];
    size_t nj = pf_sym_unnamed_jvms(jvms, 4);
    for (size_t i = 0; i < nj && !p->quiet; i++)
        fprintf(stderr,
                "profile: pid %d is a JVM without a perf map (/tmp/perf-%d.map): its "
                "JIT-compiled frames are [unknown] [anon]; start it with "
                "-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit for names, or use jalen "
                "for per-method energy (-agentpath:.../libjalen.so, or powerapi jalen PID start "
                "on a running JVM)\n",
                (int)jvms[i], (int)jvms[i]);
    return cmd_status >= 0 ? cmd_status : CLI_EXIT_OK;
}

/* Opens the targets, primes the readings, releases a command and runs
 * the windows until the end; then the files.  The exit status. */
static int run(profiler *p)
{
    bool kill_it = false;
    int status = open_targets(p, &kill_it);
    if (status)
        goto fail;
    cli_debuginfod_check("profile", p->quiet);
    pf_sym_init(procfs_root(p), pf_engine_kernel(p->eng));
    int err = pa_tick(p->ctx); /* primes the readings */
    if (err < 0 && err != -ENODATA) {
        cli_error(CMD, "tick: %s", cli_errmsg(err));
        kill_it = true;
        status = CLI_EXIT_FAIL;
        goto fail;
    }
    p->t0 = cli_mono_ns();
    if (p->cmd && (status = release_command(p)) != 0)
        return status;
    bool exited = false;
    pid_t first = p->cmd ? p->cmd_pid : p->npids ? p->pids[0] : 0;
    status = cli_ppush_start(&p->push, CMD, first, p->cmd ? p->cmd[0] : NULL, procfs_root(p),
                             p->period_ns ? p->period_ns
                             : p->freq    ? NS_PER_S / p->freq
                                          : 0,
                             &p->pusher);
    if (status == 0)
        status = run_loop(p, &exited);
    cli_ppush_end(p->pusher, p->prof);
    double duration_s = (double)(cli_mono_ns() - p->t0) / 1e9;
    int cmd_status = reap_command(p, status);
    if (status != 0)
        return status;
    return write_profile(p, duration_s, cmd_status);
fail:
    if (kill_it) {
        kill_command(p);
        if (!status)
            status = CLI_EXIT_FAIL;
    }
    return status;
}

static void cleanup(profiler *p)
{
    if (p->go >= 0)
        close(p->go);
    if (p->exfd >= 0)
        close(p->exfd);
    pf_engine_free(p->eng);
    pf_count_free(p->counts);
    p->counts = NULL;
    if (p->scopes) { /* the environment's entry goes with the trace */
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)strcspn(p->scopes_env, "="), p->scopes_env);
        unsetenv(name);
        pf_strace_free(p->scopes);
    }
    pc_tasks_free(&p->tasks);
    pc_prof_free(p->prof);
    pf_sym_fini();
    pc_intern_free();
    pa_ctx_free(p->ctx);
}

/* perf's habit: -g alone (not followed by a mode) is the default call
 * graph.  A copy of argv where such a -g is dropped (the default is the
 * default already); NULL when out of memory. */
static char **drop_bare_g(int argc, char **argv, int *nargc)
{
    char **v = calloc((size_t)argc + 1, sizeof(*v));
    if (!v)
        return NULL;
    int n = 0;
    bool operands = false;
    for (int i = 0; i < argc; i++) {
        bool mode = i + 1 < argc && (!strcmp(argv[i + 1], "fp") || !strcmp(argv[i + 1], "dwarf"));
        if (i > 0 && !operands && !strcmp(argv[i], "-g") && !mode)
            continue;
        if (i > 0 && !strcmp(argv[i], "--"))
            operands = true;
        v[n++] = argv[i];
    }
    *nargc = n;
    return v;
}

/* --repeat: the options before COMMAND go to each run (cli/profile_repeat.c) */
static int profile_repeat(profiler *p, char **args)
{
    int nopts = (int)(p->cmd - args) - 1;
    if (nopts > 0 && !strcmp(args[nopts], "--"))
        nopts--;
    cli_repeat r = {.opts = args + 1,
                    .nopts = nopts,
                    .cmd = p->cmd,
                    .out = p->out_dir,
                    .repeat = p->repeat,
                    .warmup = p->warmup,
                    .quiet = p->quiet};
    int st = cli_profile_repeat(&r);
    p->out_written = 1;
    return st;
}

int cli_profile(int argc, char **argv)
{
    profiler p;
    memset(&p, 0, sizeof(p));
    p.go = p.exfd = -1;
    int nargc = 0;
    char **args = drop_bare_g(argc, argv, &nargc);
    if (!args) {
        cli_error(CMD, "out of memory");
        return CLI_EXIT_FAIL;
    }
    int status = parse_args(&p, nargc, args);
    p.source.carbon_g_per_kwh = p.co.carbon_g_per_kwh; /* summary.json, flame graph */
    if (status != 0) {
        status = status < 0 ? CLI_EXIT_OK : status;
        goto out_args;
    }
    /* preflight: unprivileged sampling forbidden outright */
    if (geteuid() != 0 && pf_paranoid(procfs_root(&p)) > 2) {
        status = open_error(&p, p.npids ? p.pids[0] : getpid(), -EACCES);
        goto out_args;
    }
    status = check_out_dir(&p);
    if (status != 0)
        goto out_args;
    if (p.repeat > 1) {
        status = profile_repeat(&p, args);
        goto out_args;
    }
    status = setup(&p);
    if (status == 0)
        status = run(&p);
    sigprocmask(SIG_SETMASK, &p.old_sigs, NULL);
    cleanup(&p);
out_args:
    if (p.out_made && !p.out_written)
        rmdir(p.out_dir); /* empty: nothing of this run is lost */
    cli_ctx_fini(&p.co);
    free(p.pids);
    free(p.filters);
    free(args);
    return status;
}
