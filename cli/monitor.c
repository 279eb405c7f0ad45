/*
 * monitor.c - `powerapi monitor`: per-target power each interval, or the
 * energy of one command (like `perf stat`).
 *
 * Flow: parse options, create a context, enable modules (the
 * --sensor/--formula ones, then --disable; "auto" fills the rest at the
 * first tick), watch the targets, then tick
 * every interval and write each report.  With a command, the child is
 * forked stopped on a pipe, watched with PA_WATCH_CHILDREN, released, and
 * followed until it exits; waitid(WNOWAIT) leaves it a zombie for one last
 * tick (its stat is still readable) before it is reaped.
 *
 * Signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD) are blocked and taken
 * synchronously with sigtimedwait(), which is also the interval sleep.
 */
#include "cli.h"
#include "groups.h"
#include "output.h"
#include "vmgroups.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *CMD = "monitor";

#define NS_PER_S 1000000000ull

typedef struct watched {
    pid_t pid;
    bool ok;   /* pa_watch_pid succeeded */
    bool done; /* reported exited */
} watched;

typedef struct monitor {
    cli_ctx co; /* roots, modules, --interval */
    watched *pids;
    size_t npids;
    bool all, threads, cgroups;
    bool containers;      /* --containers: --group-by container */
    bool vms;             /* --vms: --group-by vm */
    rp_group group;       /* --group-by */
    unsigned long count;  /* windows, 0 = no limit */
    uint64_t duration_ns; /* 0 = no limit */
    unsigned long top;    /* 0: not given */
    bool exited_list;     /* --exited list */
    rp_out_format fmt;
    const char *output;
    uint64_t clock_step_ns;
    const char *states;
    char **cmd;       /* NULL-terminated, or NULL */
    const char *ring; /* --ring: read a daemon's ring (monitor_ring.c) */

    /* run time */
    pa_ctx *ctx;
    rp_out out;
    FILE *f;
    sigset_t sigs;
    cli_replay *replay;
    rp_vmgroups *vmg; /* --group-by vm */
    bool to_stderr;   /* m->f is a buffered stream of our stderr */
    bool pid_failed;  /* an unknown pid was given */
    bool epipe;       /* the output's reader went away */
} monitor;

static const char monitor_usage[] = "%s monitor [OPTIONS]\n"
                                    "       %s monitor [OPTIONS] [--] COMMAND [ARGS...]\n";

static const char monitor_about[] =
    "\n"
    "Prints the power (W) and energy (J) of processes, threads and cgroups "
    "every\ninterval.  With a COMMAND, runs it, follows it and every child "
    "it starts, and\nprints its energy when it exits; the exit status is the "
    "command's own.\nWith a COMMAND, what monitor writes goes to stderr (the "
    "command's stdout\nstays its own, as under perf stat) unless -o FILE, or "
    "-o - for stdout.\n(In table format, a command gets per-interval tables "
    "only with --interval,\nlike perf stat -I; JSON and CSV always have "
    "them.)\n"
    "With no target, every process is watched (--all).\n";

static const char monitor_footer[] =
    "JSON lines and CSV: per window one \"system\" record, then one per "
    "target:\n\"process\", \"thread\" (--threads), \"tree\" (a COMMAND "
    "and its children),\n\"cgroup\" (--cgroups); a COMMAND ends with a "
    "\"command\" record.\n"
    "\nExamples:\n"
    "  %s monitor --all --top 10 --interval 1s --count 3\n"
    "  %s monitor --pid 4242 --threads --format json\n"
    "  %s monitor -- make -j2\n";

static void monitor_free(monitor *m)
{
    cli_ctx_fini(&m->co);
    free(m->pids);
    rp_out_fini(&m->out);
    if (m->f && m->f != stdout)
        fclose(m->f);
    pa_ctx_free(m->ctx);
    cli_replay_free(m->replay);
    rp_vmgroups_free(m->vmg);
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static int add_pids(void *v, const char *cmd, const char *arg)
{
    monitor *m = v;
    pid_t *p = NULL;
    size_t n = 0;
    int err = cli_parse_pids(arg, &p, &n);
    if (err == 0) {
        watched *w = realloc(m->pids, (m->npids + n) * sizeof(*w));
        if (!w)
            err = -ENOMEM;
        else {
            m->pids = w;
            for (size_t i = 0; i < n; i++)
                m->pids[m->npids++] = (watched){.pid = p[i]};
        }
    }
    free(p);
    if (err == -ENOMEM) {
        cli_error(cmd, "out of memory");
        return CLI_EXIT_FAIL;
    }
    if (err < 0)
        return cli_usage_error(cmd, "--pid: invalid pid '%s'", arg);
    return 0;
}

/* The combinations parse_args refuses. */
static int check_args(monitor *m)
{
    if (m->containers && m->group && m->group != RP_GROUP_CONTAINER)
        return cli_usage_error(CMD, "--containers is --group-by container, not --group-by %s",
                               rp_group_name(m->group));
    if (m->vms && m->group && m->group != RP_GROUP_VM)
        return cli_usage_error(CMD, "--vms is --group-by vm, not --group-by %s",
                               rp_group_name(m->group));
    if (m->containers)
        m->group = RP_GROUP_CONTAINER;
    if (m->vms)
        m->group = RP_GROUP_VM;
    if (m->group == RP_GROUP_VM && (m->npids || m->cmd))
        return cli_usage_error(CMD, "--group-by vm groups every process of this host: "
                                    "no --pid or COMMAND with it (with --ring, the VM "
                                    "records of a 'daemon --vms')");
    if (m->group)
        m->cgroups = true; /* groups are made of the cgroup records */
    if (m->cmd && m->clock_step_ns)
        return cli_usage_error(CMD, "--clock-step cannot be used with a COMMAND");
    if (m->cmd && (m->count || m->duration_ns))
        return cli_usage_error(CMD,
                               "%s cannot be used with a COMMAND (it runs until the "
                               "command exits)",
                               m->count ? "--count" : "--duration");
    if (m->states && !m->clock_step_ns)
        return cli_usage_error(CMD, "--fixture-states needs --clock-step");
    if (m->states && !m->co.copts.procfs)
        return cli_usage_error(CMD, "--fixture-states needs --procfs");
    if (m->clock_step_ns && !m->count && !m->duration_ns)
        return cli_usage_error(CMD, "--clock-step needs --count or --duration (it never sleeps)");
    if (m->threads && !m->npids && !m->cmd && !m->all)
        return cli_usage_error(CMD, "--threads needs --pid, --all or a COMMAND (which threads?)");
    if (m->ring && (m->cmd || m->threads || m->clock_step_ns || cli_ctx_sampling_option(&m->co)))
        return cli_usage_error(CMD, "--ring reads what the daemon samples: no COMMAND, "
                                    "--threads, modules, roots or --clock-step with it");
    if (!m->npids && !m->cmd)
        m->all = true;
    return 0;
}

static const char *const group_choices[] = {"container", "pod", "unit", "cgroup", "vm", NULL};

static int group_option(void *v, const char *cmd, const char *arg)
{
    if (rp_group_parse(arg, v) < 0)
        return cli_usage_error(cmd,
                               "--group-by: unknown kind '%s' (container, pod, unit, "
                               "cgroup or vm)",
                               arg);
    return 0;
}

static const char *const exited_choices[] = {"fold", "list", NULL};

static int exited_option(void *v, const char *cmd, const char *arg)
{
    int i = cli_choice(cmd, "exited", exited_choices, arg);
    if (i < 0)
        return CLI_EXIT_USAGE;
    *(bool *)v = i == 1;
    return 0;
}

static int parse_args(monitor *m, int argc, char **argv)
{
    const cli_opt opts[] = {
        CLI_OPT_GROUP("Targets:"),
        CLI_OPT_CALLBACK('p', "pid", m, "PID[,PID...]", "watch a process (repeatable)", add_pids),
        CLI_OPT_FLAG('a', "all", &m->all, "watch every process"),
        CLI_OPT_FLAG('t', "threads", &m->threads, "also report each thread of the watched pids"),
        CLI_OPT_FLAG(0, "cgroups", &m->cgroups,
                     "also report cgroup totals, named by container,\n"
                     "pod and systemd unit where they are one"),
        CLI_OPT_FLAG(0, "containers", &m->containers,
                     "one record per container (--group-by container)"),
        CLI_OPT_FLAG(0, "vms", &m->vms,
                     "one record per virtual machine, its vCPUs'\n"
                     "part apart (--group-by vm)"),
        CLI_OPT_CHOICE(0, "group-by", &m->group, "KIND",
                       "one record per container, pod, unit, cgroup or vm,\n"
                       "summed over its processes (those that ended too)",
                       group_option, group_choices),
        CLI_OPT_STRING('r', "ring", &m->ring, "NAME",
                       "read the windows of a daemon's ring ('%s daemon')\n"
                       "instead of sampling"),
        CLI_OPT_GROUP("Sampling:"),
        CLI_OPT_UINT('n', "count", &m->count, "N", "stop after N windows", 1, 1000000000),
        CLI_OPT_DURATION('d', "duration", &m->duration_ns, "stop after this long", 0, 0),
        CLI_OPT_CONTEXT(&m->co, CLI_CTXOPT_ALL | CLI_CTXOPT_CARBON),
        CLI_OPT_GROUP("Output:"),
        CLI_OPT_CHOICE('f', "format", &m->fmt, "FORMAT",
                       "table (default), csv or json (JSON lines)", cli_format_option,
                       cli_format_choices),
        CLI_OPT_UINT(0, "top", &m->top, "N", "only the N most powerful processes", 1, 1000000000),
        CLI_OPT_CHOICE(0, "exited", &m->exited_list, "fold|list",
                       "with --all: the processes born and gone in a\n"
                       "window as one [exited] record (fold, the\n"
                       "default) or one record each (list; JSON, CSV)",
                       exited_option, exited_choices),
        CLI_OPT_STRING('o', "output", &m->output, "FILE",
                       "write to FILE instead of stdout ('-': stdout;\n"
                       "with a COMMAND the default is stderr)"),
        CLI_OPT_GROUP("Testing (replay of fixture trees, exact results):"),
        CLI_OPT_DURATION(0, "clock-step", &m->clock_step_ns,
                         "tick with an explicit clock advancing by\n"
                         "DURATION, without sleeping (not with a COMMAND)",
                         0, 0),
        CLI_OPT_STRING(0, "fixture-states", &m->states, "DIR",
                       "before tick k (0 = the first), write the\n"
                       "overlay DIR/k/proc/.. and DIR/k/sys/.. over\n"
                       "copies of the --procfs/--sysfs trees and delete\n"
                       "the paths listed in DIR/k/remove (\"proc/1234\");\n"
                       "needs --clock-step"),
        CLI_OPT_END,
    };
    const cli_cmd c = {.name = CMD,
                       .usage = monitor_usage,
                       .about = monitor_about,
                       .footer = monitor_footer,
                       .opts = opts,
                       .operands = 1};
    int first;
    cli_ctx_init(&m->co);
    int st = cli_parse(&c, argc, argv, &first);
    if (st)
        return st;
    if (first < argc)
        m->cmd = argv + first;
    return check_args(m);
}

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

/* Lists the VMs again and watches their threads (vCPUs apart). */
static int scan_vms(monitor *m)
{
    int err = rp_vmgroups_scan(m->vmg, m->ctx);
    if (err < 0)
        cli_error(CMD, "--group-by vm: %s", cli_errmsg(err));
    return err;
}

static int setup_targets(monitor *m)
{
    int err;
    if (m->group == RP_GROUP_VM &&
        ((err = rp_vmgroups_new(&m->vmg, m->co.copts.procfs, m->co.copts.rootfs)) < 0 ||
         (err = scan_vms(m)) < 0)) {
        if (err == -ENOMEM)
            cli_error(CMD, "out of memory");
        return CLI_EXIT_FAIL;
    }
    if (m->cgroups && (err = pa_report_cgroups(m->ctx, 1)) < 0) {
        cli_error(CMD, "--cgroups: %s", cli_errmsg(err));
        return CLI_EXIT_FAIL;
    }
    if (m->all && (err = pa_watch_all(m->ctx, m->threads ? 1 | PA_WATCH_ALL_THREADS : 1)) < 0) {
        cli_error(CMD, "--all: %s", cli_errmsg(err));
        return CLI_EXIT_FAIL;
    }
    size_t ok = 0;
    for (size_t i = 0; i < m->npids; i++) {
        watched *w = &m->pids[i];
        err = pa_watch_pid(m->ctx, w->pid, m->threads ? PA_WATCH_THREADS : 0);
        if (err < 0) {
            if (err == -ESRCH && strstr(cli_errmsg(err), "hidepid"))
                cli_error(CMD, "%s", cli_errmsg(err));
            else if (err == -ESRCH)
                cli_error(CMD, "pid %ld: no such process", (long)w->pid);
            else
                cli_error(CMD, "pid %ld: %s", (long)w->pid, cli_errmsg(err));
            m->pid_failed = true;
            continue;
        }
        w->ok = true;
        ok++;
    }
    if (m->npids && !ok && !m->all && !m->cmd)
        return CLI_EXIT_FAIL; /* nothing left to watch */
    return 0;
}

/* Marks watched pids that the report says have exited, or that the
 * context no longer knows.  Returns true when every watched pid is done. */
static bool pids_done(monitor *m, const pa_report *r)
{
    size_t live = 0;
    for (size_t i = 0; i < m->npids; i++) {
        watched *w = &m->pids[i];
        if (!w->ok || w->done)
            continue;
        for (size_t k = 0; r && k < r->ntargets; k++) {
            const pa_target_info *t = &r->targets[k];
            if (t->type == PA_TARGET_PROCESS && t->pid == w->pid &&
                (t->power.flags & PA_POWER_EXITED))
                w->done = true;
        }
        pa_power p;
        if (!w->done && pa_pid_power(m->ctx, w->pid, &p) == -ESRCH && r != NULL)
            w->done = true;
        if (!w->done)
            live++;
    }
    return live == 0;
}

/* ------------------------------------------------------------------ */
/* Ticks                                                               */
/* ------------------------------------------------------------------ */

/* The output's name in messages. */
static const char *out_name(const monitor *m)
{
    if (m->to_stderr)
        return "stderr";
    return m->output && strcmp(m->output, "-") ? m->output : "stdout";
}

/* Writes the last report if there is one (the first tick only primes).
 * Returns 1 when there was a report, 0 when none, -1 on failure (message
 * printed). */
static int emit_report(monitor *m, bool print, pa_report **keep)
{
    pa_report *r = NULL;
    int err = pa_report_get(m->ctx, &r);
    if (err == -ENODATA)
        return 0;
    if (err < 0) {
        cli_error(CMD, "report: %s", cli_errmsg(err));
        return -1;
    }
    pa_report *g = NULL;
    const pa_report *vr = NULL;
    if (print && m->vmg && (scan_vms(m) < 0 || rp_vmgroups_report(m->vmg, r, &vr) < 0)) {
        pa_report_free(r);
        return -1;
    }
    if (print && m->group && !m->vmg && (err = rp_group_report(r, m->group, &g)) < 0) {
        cli_error(CMD, "out of memory");
        pa_report_free(r);
        return -1;
    }
    if (print)
        err = rp_out_report(&m->out, vr ? vr : g ? g : r);
    rp_group_free(g);
    if (print && err < 0) {
        if (err == -EPIPE)
            m->epipe = true; /* `| head`: stop without a word */
        else
            cli_error(CMD, "%s: write failed: %s", out_name(m), strerror(-err));
        pa_report_free(r);
        return -1;
    }
    if (keep)
        *keep = r;
    else
        pa_report_free(r);
    return 1;
}

static int do_tick(monitor *m, unsigned k, uint64_t clock_ns)
{
    int err;
    if (m->replay && (err = cli_replay_apply(m->replay, k)) < 0)
        return CLI_EXIT_FAIL;
    err = m->clock_step_ns ? pa_tick_at(m->ctx, clock_ns) : pa_tick(m->ctx);
    if (err < 0 && !(err == -ENODATA && k == 0)) {
        cli_tick_error(CMD, err);
        return CLI_EXIT_FAIL;
    }
    return 0;
}

/* Sleeps until the monotonic deadline or a signal.  Returns the signal
 * number (0 at the deadline), and its siginfo. */
static int wait_until(monitor *m, uint64_t deadline_ns, siginfo_t *si)
{
    for (;;) {
        uint64_t now = cli_mono_ns();
        if (now >= deadline_ns) {
            /* collect a signal that is already pending, without waiting */
            struct timespec zero = {0, 0};
            int s = sigtimedwait(&m->sigs, si, &zero);
            return s > 0 ? s : 0;
        }
        uint64_t left = deadline_ns - now;
        struct timespec ts = {(time_t)(left / NS_PER_S), (long)(left % NS_PER_S)};
        int s = sigtimedwait(&m->sigs, si, &ts);
        if (s > 0)
            return s;
        if (errno == EAGAIN)
            return 0;
        /* EINTR: retry */
    }
}

/* Monitoring without a command: until --count, --duration, a signal, or
 * the exit of every watched pid. */
static int run_targets(monitor *m)
{
    uint64_t step = m->co.interval_ns;
    uint64_t end_ns = m->duration_ns; /* relative to the first tick */
    unsigned long windows = 0;
    int err;

    if (m->clock_step_ns)
        step = m->clock_step_ns;
    /* the explicit clock starts at 0: report times are 1, 2, 3 steps */
    uint64_t t0 = m->clock_step_ns ? 0 : cli_mono_ns();
    if ((err = do_tick(m, 0, t0)) != 0)
        return err;
    cli_warn_resolution(CMD, m->ctx, step);
    for (unsigned k = 1;; k++) {
        uint64_t rel = (uint64_t)k * step;
        if (end_ns && rel > end_ns)
            rel = end_ns;
        if (!m->clock_step_ns) {
            siginfo_t si;
            uint64_t now = cli_mono_ns();
            /* after an overrun (a suspended VM), skip missed windows */
            while (t0 + rel + step < now && (!end_ns || rel < end_ns)) {
                k++;
                rel = (uint64_t)k * step;
                if (end_ns && rel > end_ns)
                    rel = end_ns;
            }
            int s = wait_until(m, t0 + rel, &si);
            if (cli_is_stop_signal(s))
                return 0;
        }
        if ((err = do_tick(m, k, t0 + rel)) != 0)
            return err;
        pa_report *r = NULL;
        err = emit_report(m, true, &r);
        if (err < 0)
            return m->epipe ? CLI_EXIT_PIPE : CLI_EXIT_FAIL;
        if (err == 1)
            windows++;
        bool done = m->npids && !m->all && pids_done(m, r);
        pa_report_free(r);
        if (done)
            return 0;
        if (m->count && windows >= m->count)
            return 0;
        if (end_ns && rel >= end_ns)
            return 0;
    }
}

/* ------------------------------------------------------------------ */
/* Command                                                             */
/* ------------------------------------------------------------------ */

static void add_window_cpu(monitor *m, pid_t pid, double *cpu_s)
{
    pa_power p;
    if (pa_tree_power(m->ctx, pid, &p) == 0)
        *cpu_s += p.cpu_time_s;
}

/* Waits for the end of a window (deadline) of command pid: true when it
 * exited meanwhile (its zombie left for the last tick).  A signal typed at
 * the terminal reaches the child by itself (same process group); one sent
 * to powerapi is forwarded. */
static bool wait_window(monitor *m, pid_t pid, uint64_t deadline)
{
    for (;;) {
        siginfo_t si, wi;
        int s = wait_until(m, deadline, &si);
        if (s == 0)
            return false;
        if (s == SIGCHLD) {
            memset(&wi, 0, sizeof(wi));
            if (waitid(P_PID, (id_t)pid, &wi, WEXITED | WNOWAIT | WNOHANG) == 0 && wi.si_pid == pid)
                return true;
            continue;
        }
        if (si.si_code != SI_KERNEL)
            kill(pid, s);
    }
}

/* Command pid's windows from t0 until it exits: its CPU time added to
 * *cpu_s, the last report kept in *last (free it); 0, or the status of a
 * tick or a write that failed. */
static int command_windows(monitor *m, pid_t pid, uint64_t t0, double *cpu_s, pa_report **last)
{
    bool print_windows = m->fmt != RP_OUT_TABLE || m->co.interval_set;
    bool exited = false;
    for (unsigned k = 1; !exited; k++) {
        /* after an overrun (a suspended VM), skip the missed windows */
        uint64_t now = cli_mono_ns();
        if (now > t0 + (uint64_t)(k + 1) * m->co.interval_ns)
            k = (unsigned)((now - t0) / m->co.interval_ns);
        exited = wait_window(m, pid, t0 + (uint64_t)k * m->co.interval_ns);
        /* the last window ends at the exit; the zombie's stat is still
         * readable, so this tick sees the command's final CPU time */
        int rc = do_tick(m, k, 0);
        if (rc != 0)
            return rc;
        add_window_cpu(m, pid, cpu_s);
        pa_report *r = NULL;
        if (emit_report(m, print_windows, &r) < 0)
            return CLI_EXIT_FAIL;
        if (r) {
            pa_report_free(*last);
            *last = r;
        }
    }
    return 0;
}

/* The end of command pid, which exited: its energy, its status reaped,
 * the closing record; the status monitor exits with (the command's). */
static int command_end(monitor *m, pid_t pid, uint64_t t0, double cpu_s, const pa_report *last)
{
    double duration_s = (double)(cli_mono_ns() - t0) / 1e9;
    rp_out_command cr = {
        .pid = pid, .cpu_time_s = cpu_s, .argv = m->cmd, .duration_s = duration_s, .last = last};
    if (pa_tree_power(m->ctx, pid, &cr.energy) < 0 && pa_pid_power(m->ctx, pid, &cr.energy) < 0)
        cli_error(CMD, "energy of pid %ld: %s", (long)pid, cli_errmsg(-ENODATA));
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(wstatus)) {
        cr.signal = WTERMSIG(wstatus);
        cr.exit_status = 128 + cr.signal;
    } else {
        cr.exit_status = WEXITSTATUS(wstatus);
    }
    int err = rp_out_command_end(&m->out, &cr);
    if (err < 0) {
        if (err != -EPIPE)
            cli_error(CMD, "%s: write failed: %s", out_name(m), strerror(-err));
        return err == -EPIPE ? CLI_EXIT_PIPE : CLI_EXIT_FAIL;
    }
    return cr.exit_status;
}

static int run_command(monitor *m)
{
    int go[2] = {-1, -1}, ex[2] = {-1, -1};
    int status = CLI_EXIT_FAIL;
    pid_t pid = -1;
    pa_report *last = NULL; /* for the summary's formula and assumptions */

    if (cli_spawn(CMD, m->cmd, &pid, &go[1], &ex[0]) != 0)
        goto out;

    int err = pa_watch_pid(m->ctx, pid, PA_WATCH_CHILDREN | (m->threads ? PA_WATCH_THREADS : 0));
    if (err < 0)
        cli_error(CMD, "watch %s (pid %ld): %s", m->cmd[0], (long)pid, cli_errmsg(err));
    uint64_t t0 = cli_mono_ns();
    int rc = do_tick(m, 0, t0);
    /* release the child even if the first tick failed, then report */
    close(go[1]);
    go[1] = -1;
    int child_errno = 0;
    ssize_t n;
    while ((n = read(ex[0], &child_errno, sizeof(child_errno))) < 0 && errno == EINTR)
        ;
    if (n == (ssize_t)sizeof(child_errno)) {
        waitpid(pid, NULL, 0);
        pid = -1;
        cli_error(CMD, "cannot run '%s': %s", m->cmd[0], strerror(child_errno));
        status = child_errno == ENOENT ? 127 : 126;
        goto out;
    }
    if (rc != 0)
        goto kill_child;
    cli_warn_resolution(CMD, m->ctx, m->co.interval_ns);

    double cpu_s = 0;
    if ((rc = command_windows(m, pid, t0, &cpu_s, &last)) != 0)
        goto kill_child;
    status = command_end(m, pid, t0, cpu_s, last);
    pid = -1;
    goto out;

kill_child:
    status = m->epipe ? CLI_EXIT_PIPE : rc > 0 ? rc : CLI_EXIT_FAIL;
    kill(pid, SIGTERM);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    pid = -1;
out:
    pa_report_free(last);
    for (int i = 0; i < 2; i++) {
        if (go[i] >= 0)
            close(go[i]);
        if (ex[i] >= 0)
            close(ex[i]);
    }
    return status;
}

/* ------------------------------------------------------------------ */

/* Where the records go (m->f): a command's stdout stays its own, as
 * under perf stat, so what we write about it goes to stderr unless -o
 * names a file, or "-" for stdout; 0 or the exit status. */
static int open_stream(monitor *m)
{
    m->f = stdout;
    m->to_stderr = m->cmd && !m->output;
    if (m->to_stderr) {
        /* a stream of its own: a record is written whole, in one flush,
         * where stderr would write each piece */
        int fd2 = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        if (fd2 < 0 || !(m->f = fdopen(fd2, "w"))) {
            if (fd2 >= 0)
                close(fd2);
            m->f = NULL;
            cli_error(CMD, "stderr: %s", strerror(errno));
            return CLI_EXIT_FAIL;
        }
    } else if (m->output && !strcmp(m->output, "-")) {
        m->f = stdout;
    } else if (m->output && !(m->f = fopen(m->output, "we"))) {
        cli_error(CMD, "--output %s: %s", m->output, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    return 0;
}

/* The writer of the records on m->f, set from the options. */
static void out_setup(monitor *m)
{
    rp_out_init(&m->out, m->f, m->fmt);
    m->out.procfs = m->co.copts.procfs;
    m->out.carbon_g_per_kwh = m->co.carbon_g_per_kwh;
    if (!m->clock_step_ns)
        m->out.time_base_s = rp_out_live_time_base();
    m->out.command_columns = m->cmd != NULL;
    if (m->group && m->group != RP_GROUP_VM) /* VMs: a type of their own */
        m->out.group_type = rp_group_name(m->group);
    bool tty = isatty(fileno(m->f));
    m->out.clear = m->fmt == RP_OUT_TABLE && tty && !m->cmd && !m->clock_step_ns;
    m->out.exited_list = m->exited_list;
    if (m->top)
        m->out.top = m->top;
    else if (m->out.clear)
        m->out.fit_fd = fileno(m->f); /* as many as the screen holds */
}

/* --ring: the daemon's windows, read until the count, the duration or a
 * stop signal; the exit status. */
static int run_ring(monitor *m)
{
    pid_t *pids = calloc(m->npids + 1, sizeof(*pids));
    for (size_t i = 0; pids && i < m->npids; i++)
        pids[i] = m->pids[i].pid;
    cli_ring_monitor rm = {.ring = m->ring,
                           .interval_ns = m->co.interval_ns,
                           .count = m->count,
                           .duration_ns = m->duration_ns,
                           .pids = pids,
                           .npids = pids ? m->npids : 0,
                           .cgroups = m->cgroups && m->group != RP_GROUP_VM,
                           .vms = m->group == RP_GROUP_VM,
                           .out = &m->out,
                           .sigs = &m->sigs};
    int status = cli_monitor_ring(&rm);
    free(pids);
    return status;
}

int cli_monitor(int argc, char **argv)
{
    monitor m;
    memset(&m, 0, sizeof(m));
    int status = parse_args(&m, argc, argv);
    if (status != 0) {
        status = status < 0 ? CLI_EXIT_OK : status; /* -1: --help */
        goto out;
    }

    if (m.states) {
        const char *p = NULL, *s = NULL;
        if (cli_replay_new(&m.replay, m.states, m.co.copts.procfs, m.co.copts.sysfs, &p, &s) < 0) {
            status = CLI_EXIT_FAIL;
            goto out;
        }
        m.co.copts.procfs = p;
        m.co.copts.sysfs = s;
    }

    if (!m.ring && (status = cli_ctx_create(&m.co, CMD, &m.ctx)) != 0)
        goto out;
    /* "auto" chooses: say why the power is modelled where RAPL is closed */
    if (!m.ring && m.co.mods.n == 0)
        cli_rapl_hint(m.ctx, CMD);
    if (!m.ring && (status = setup_targets(&m)) != 0)
        goto out;

    if ((status = open_stream(&m)) != 0)
        goto out;
    out_setup(&m);

    cli_stop_signals(&m.sigs);
    sigaddset(&m.sigs, SIGCHLD);
    sigset_t old, blocked = m.sigs;
    /* A closed pipe on stdout (`| head -1`) is a write error (EPIPE) that
     * ends monitoring quietly (and a command's run), not a signal that
     * kills us half-way; the command unblocks it before its exec. */
    sigaddset(&blocked, SIGPIPE);
    sigprocmask(SIG_BLOCK, &blocked, &old);

    status = m.ring ? run_ring(&m) : m.cmd ? run_command(&m) : run_targets(&m);
    if (status == CLI_EXIT_OK && m.pid_failed)
        status = CLI_EXIT_FAIL;

    /* the SIGPIPE of a write that failed with EPIPE stays pending: take
     * it before the mask is restored */
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
        ;
    sigprocmask(SIG_SETMASK, &old, NULL);
out:
    monitor_free(&m);
    return status;
}
