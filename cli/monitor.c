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
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
    pa_ctx_opts copts;
    watched *pids;
    size_t npids;
    bool all, threads, cgroups;
    uint64_t interval_ns;
    bool interval_set;
    unsigned long count;  /* windows, 0 = no limit */
    uint64_t duration_ns; /* 0 = no limit */
    unsigned long top;
    bool top_set;
    pa_out_format fmt;
    pa_cli_mods mods;
    const char *output;
    uint64_t clock_step_ns;
    const char *states;
    char **cmd;       /* NULL-terminated, or NULL */
    const char *ring; /* --ring: read a daemon's ring (monitor_ring.c) */

    /* run time */
    pa_ctx *ctx;
    pa_out out;
    FILE *f;
    sigset_t sigs;
    pa_replay *replay;
    bool pid_failed; /* an unknown pid was given */
    bool epipe;      /* the output's reader went away */
} monitor;

static void monitor_help(FILE *f)
{
    fprintf(
        f,
        "Usage: %s monitor [OPTIONS]\n"
        "       %s monitor [OPTIONS] [--] COMMAND [ARGS...]\n"
        "\n"
        "Prints the power (W) and energy (J) of processes, threads and "
        "cgroups every\ninterval.  With a COMMAND, runs it, follows it and "
        "every child it starts, and\nprints its energy when it exits; the "
        "exit status is the command's own.\n(In table format, a command "
        "gets per-interval tables only with --interval,\nlike perf stat -I; "
        "JSON and CSV always have them.)\n"
        "With no target, every process is watched (--all).\n"
        "\nTargets:\n"
        "  -p, --pid PID[,PID...]    watch a process (repeatable)\n"
        "  -a, --all                 watch every process\n"
        "  -t, --threads             also report each thread of the "
        "watched pids\n"
        "      --cgroups             also report cgroup v2 totals\n"
        "  -r, --ring NAME           read the windows of a daemon's ring "
        "('%s daemon')\n"
        "                            instead of sampling\n"
        "\nSampling:\n"
        "      --calibration FILE   a `powerapi calibrate` file for the cpu-curve\n"
        "                           formula (also $POWERAPI_CALIBRATION)\n"
        "  -i, --interval DURATION   window length (default 1s; 500ms, 2s, "
        "1m...)\n"
        "  -n, --count N             stop after N windows\n"
        "  -d, --duration DURATION   stop after this long\n"
        "\nModules (see '%s modules'):\n"
        "      --sensor NAME[:OPTS]  enable or reconfigure a sensor "
        "(repeatable)\n"
        "      --formula NAME[:OPTS] enable or reconfigure a formula "
        "(repeatable);\n"
        "                            OPTS is key=value,key=value, e.g. "
        "cpu-tdp:tdp=65W\n"
        "      --disable NAME        keep a module out (repeatable; "
        "'auto': only those named)\n"
        "  (a formula brings the sensors it requires; 'auto' gives every "
        "component no\n   --formula covers the best formula for this "
        "machine)\n"
        "\nOutput:\n"
        "  -f, --format FORMAT       table (default), csv or json (JSON "
        "lines)\n"
        "      --top N               only the N most powerful processes\n"
        "  -o, --output FILE         write to FILE instead of stdout\n"
        "  JSON lines and CSV: per window one \"system\" record, then one "
        "per target:\n"
        "  \"process\", \"thread\" (--threads), \"tree\" (a COMMAND "
        "and its children),\n"
        "  \"cgroup\" (--cgroups); a COMMAND ends with a \"command\" "
        "record.\n"
        "\nEnvironment:\n"
        "      --procfs DIR          procfs root (default /proc)\n"
        "      --sysfs DIR           sysfs root (default /sys)\n"
        "      --hwdb FILE           hardware database (default: installed "
        "one)\n"
        "\nTesting (replay of fixture trees, exact results):\n"
        "      --clock-step DURATION tick with an explicit clock advancing "
        "by DURATION,\n"
        "                            without sleeping (not with a COMMAND)\n"
        "      --fixture-states DIR  before tick k (0 = the first), write "
        "the overlay\n"
        "                            DIR/k/proc/.. and DIR/k/sys/.. over "
        "copies of the\n"
        "                            --procfs/--sysfs trees and delete the "
        "paths listed\n"
        "                            in DIR/k/remove (\"proc/1234\"); needs "
        "--clock-step\n"
        "\n  -h, --help                show this help\n"
        "\nExamples:\n"
        "  %s monitor --all --top 10 --interval 1s --count 3\n"
        "  %s monitor --pid 4242 --threads --format json\n"
        "  %s monitor -- make -j2\n",
        pa_cli_prog, pa_cli_prog, pa_cli_prog, pa_cli_prog, pa_cli_prog,
        pa_cli_prog, pa_cli_prog);
}

static void monitor_free(monitor *m)
{
    pa_cli_mods_free(&m->mods);
    free(m->pids);
    pa_out_fini(&m->out);
    if (m->f && m->f != stdout)
        fclose(m->f);
    pa_ctx_free(m->ctx);
    pa_replay_free(m->replay);
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static int add_pids(monitor *m, const char *arg)
{
    pid_t *v = NULL;
    size_t n = 0;
    int err = pa_cli_parse_pids(arg, &v, &n);
    if (err == 0) {
        watched *w = realloc(m->pids, (m->npids + n) * sizeof(*w));
        if (!w)
            err = -ENOMEM;
        else {
            m->pids = w;
            for (size_t i = 0; i < n; i++)
                m->pids[m->npids++] = (watched){.pid = v[i]};
        }
    }
    free(v);
    return err;
}

static int parse_args(monitor *m, int argc, char **argv)
{
    enum {
        OPT_SENSOR = 256,
        OPT_FORMULA,
        OPT_DISABLE,
        OPT_PROCFS,
        OPT_SYSFS,
        OPT_HWDB,
        OPT_TOP,
        OPT_CGROUPS,
        OPT_CLOCK_STEP,
        OPT_STATES,
        OPT_RING,
    };
    static const struct option longopts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"all", no_argument, NULL, 'a'},
        {"threads", no_argument, NULL, 't'},
        {"interval", required_argument, NULL, 'i'},
        {"count", required_argument, NULL, 'n'},
        {"duration", required_argument, NULL, 'd'},
        {"top", required_argument, NULL, OPT_TOP},
        {"format", required_argument, NULL, 'f'},
        {"sensor", required_argument, NULL, OPT_SENSOR},
        {"formula", required_argument, NULL, OPT_FORMULA},
        {"disable", required_argument, NULL, OPT_DISABLE},
        {"procfs", required_argument, NULL, OPT_PROCFS},
        {"calibration", required_argument, NULL, PA_CLI_OPT_CALIBRATION},
        {"sysfs", required_argument, NULL, OPT_SYSFS},
        {"hwdb", required_argument, NULL, OPT_HWDB},
        {"output", required_argument, NULL, 'o'},
        {"cgroups", no_argument, NULL, OPT_CGROUPS},
        {"clock-step", required_argument, NULL, OPT_CLOCK_STEP},
        {"fixture-states", required_argument, NULL, OPT_STATES},
        {"ring", required_argument, NULL, OPT_RING},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned long v;
    int c, err;

    m->interval_ns = NS_PER_S;
    opterr = 0;
    optind = 1;
    /* '+': the first non-option starts the COMMAND (as with perf stat). */
    while ((c = getopt_long(argc, argv, "+:p:ati:n:d:f:o:h", longopts, NULL)) !=
           -1) {
        switch (c) {
        case 'h':
            monitor_help(stdout);
            return -1;
        case 'p':
            if ((err = add_pids(m, optarg)) == -ENOMEM)
                goto nomem;
            if (err < 0)
                return pa_cli_usage_error(CMD, "--pid: invalid pid '%s'",
                                          optarg);
            break;
        case 'a':
            m->all = true;
            break;
        case 't':
            m->threads = true;
            break;
        case 'i':
            if (pa_cli_parse_duration(optarg, &m->interval_ns) < 0)
                return pa_cli_usage_error(
                    CMD, "--interval: invalid duration '%s' (e.g. 500ms, 2s)",
                    optarg);
            m->interval_set = true;
            break;
        case 'n':
            if (pa_cli_parse_uint(optarg, 1000000000ul, &m->count) < 0)
                return pa_cli_usage_error(
                    CMD, "--count: invalid count '%s' (a number >= 1)", optarg);
            break;
        case 'd':
            if (pa_cli_parse_duration(optarg, &m->duration_ns) < 0)
                return pa_cli_usage_error(
                    CMD, "--duration: invalid duration '%s' (e.g. 10s, 1m)",
                    optarg);
            break;
        case OPT_TOP:
            if (pa_cli_parse_uint(optarg, 1000000000ul, &v) < 0)
                return pa_cli_usage_error(
                    CMD, "--top: invalid number '%s' (a number >= 1)", optarg);
            m->top = v;
            m->top_set = true;
            break;
        case 'f':
            if (pa_out_parse_format(optarg, &m->fmt) < 0)
                return pa_cli_usage_error(
                    CMD, "--format: unknown format '%s' (table, csv, json)",
                    optarg);
            break;
        case OPT_SENSOR:
        case OPT_FORMULA:
        case OPT_DISABLE: {
            int rc = pa_cli_mods_option(
                &m->mods, CMD, c == OPT_DISABLE,
                c == OPT_SENSOR ? PA_SENSOR : PA_FORMULA, optarg);
            if (rc)
                return rc;
            break;
        }
        case PA_CLI_OPT_CALIBRATION: {
            int st = pa_cli_calibration(CMD, optarg);
            if (st)
                return st;
            break;
        }
        case OPT_PROCFS:
            m->copts.procfs = optarg;
            break;
        case OPT_SYSFS:
            m->copts.sysfs = optarg;
            break;
        case OPT_HWDB:
            m->copts.hwdb = optarg;
            break;
        case 'o':
            m->output = optarg;
            break;
        case OPT_CGROUPS:
            m->cgroups = true;
            break;
        case OPT_CLOCK_STEP:
            if (pa_cli_parse_duration(optarg, &m->clock_step_ns) < 0)
                return pa_cli_usage_error(
                    CMD, "--clock-step: invalid duration '%s' (e.g. 1s)",
                    optarg);
            break;
        case OPT_STATES:
            m->states = optarg;
            break;
        case OPT_RING:
            m->ring = optarg;
            break;
        default: /* ':' or '?' */
            return pa_cli_getopt_error(CMD, c, argv);
        }
    }
    if (optind < argc)
        m->cmd = argv + optind;

    if (m->cmd && m->clock_step_ns)
        return pa_cli_usage_error(CMD,
                                  "--clock-step cannot be used with a COMMAND");
    if (m->cmd && (m->count || m->duration_ns))
        return pa_cli_usage_error(
            CMD,
            "%s cannot be used with a COMMAND (it runs until the "
            "command exits)",
            m->count ? "--count" : "--duration");
    if (m->states && !m->clock_step_ns)
        return pa_cli_usage_error(CMD, "--fixture-states needs --clock-step");
    if (m->states && !m->copts.procfs)
        return pa_cli_usage_error(CMD, "--fixture-states needs --procfs");
    if (m->clock_step_ns && !m->count && !m->duration_ns)
        return pa_cli_usage_error(
            CMD, "--clock-step needs --count or --duration (it never sleeps)");
    if (m->threads && !m->npids && !m->cmd && !m->all)
        return pa_cli_usage_error(
            CMD, "--threads needs --pid, --all or a COMMAND (which threads?)");
    if (m->ring &&
        (m->cmd || m->threads || m->mods.n || m->mods.ndisables || m->copts.procfs ||
         m->copts.sysfs || m->copts.hwdb || m->clock_step_ns))
        return pa_cli_usage_error(
            CMD, "--ring reads what the daemon samples: no COMMAND, "
                 "--threads, modules, roots or --clock-step with it");
    if (!m->npids && !m->cmd)
        m->all = true;
    return 0;
nomem:
    pa_cli_error(CMD, "out of memory");
    return PA_EXIT_FAIL;
}

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

static int setup_targets(monitor *m)
{
    int err;
    if (m->cgroups && (err = pa_report_cgroups(m->ctx, 1)) < 0) {
        pa_cli_error(CMD, "--cgroups: %s", pa_cli_errmsg(err));
        return PA_EXIT_FAIL;
    }
    if (m->all && (err = pa_watch_all(m->ctx, m->threads
                                                   ? 1 | PA_WATCH_ALL_THREADS
                                                   : 1)) < 0) {
        pa_cli_error(CMD, "--all: %s", pa_cli_errmsg(err));
        return PA_EXIT_FAIL;
    }
    size_t ok = 0;
    for (size_t i = 0; i < m->npids; i++) {
        watched *w = &m->pids[i];
        err = pa_watch_pid(m->ctx, w->pid, m->threads ? PA_WATCH_THREADS : 0);
        if (err < 0) {
            if (err == -ESRCH && strstr(pa_cli_errmsg(err), "hidepid"))
                pa_cli_error(CMD, "%s", pa_cli_errmsg(err));
            else if (err == -ESRCH)
                pa_cli_error(CMD, "pid %ld: no such process", (long)w->pid);
            else
                pa_cli_error(CMD, "pid %ld: %s", (long)w->pid,
                             pa_cli_errmsg(err));
            m->pid_failed = true;
            continue;
        }
        w->ok = true;
        ok++;
    }
    if (m->npids && !ok && !m->all && !m->cmd)
        return PA_EXIT_FAIL; /* nothing left to watch */
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
        pa_cli_error(CMD, "report: %s", pa_cli_errmsg(err));
        return -1;
    }
    if (print && (err = pa_out_report(&m->out, r)) < 0) {
        if (err == -EPIPE)
            m->epipe = true; /* `| head`: stop without a word */
        else
            pa_cli_error(CMD, "%s: write failed: %s",
                         m->output ? m->output : "stdout", strerror(-err));
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
    if (m->replay && (err = pa_replay_apply(m->replay, k)) < 0)
        return PA_EXIT_FAIL;
    err = m->clock_step_ns ? pa_tick_at(m->ctx, clock_ns) : pa_tick(m->ctx);
    if (err < 0 && !(err == -ENODATA && k == 0)) {
        pa_cli_tick_error(CMD, err);
        return PA_EXIT_FAIL;
    }
    return 0;
}

/* Sleeps until the monotonic deadline or a signal.  Returns the signal
 * number (0 at the deadline), and its siginfo. */
static int wait_until(monitor *m, uint64_t deadline_ns, siginfo_t *si)
{
    for (;;) {
        uint64_t now = pa_cli_mono_ns();
        if (now >= deadline_ns) {
            /* collect a signal that is already pending, without waiting */
            struct timespec zero = {0, 0};
            int s = sigtimedwait(&m->sigs, si, &zero);
            return s > 0 ? s : 0;
        }
        uint64_t left = deadline_ns - now;
        struct timespec ts = {(time_t)(left / NS_PER_S),
                              (long)(left % NS_PER_S)};
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
    uint64_t step = m->interval_ns;
    uint64_t end_ns = m->duration_ns; /* relative to the first tick */
    unsigned long windows = 0;
    int err;

    if (m->clock_step_ns)
        step = m->clock_step_ns;
    /* the explicit clock starts at 0: report times are 1, 2, 3 steps */
    uint64_t t0 = m->clock_step_ns ? 0 : pa_cli_mono_ns();
    if ((err = do_tick(m, 0, t0)) != 0)
        return err;
    for (unsigned k = 1;; k++) {
        uint64_t rel = (uint64_t)k * step;
        if (end_ns && rel > end_ns)
            rel = end_ns;
        if (!m->clock_step_ns) {
            siginfo_t si;
            uint64_t now = pa_cli_mono_ns();
            /* after an overrun (a suspended VM), skip missed windows */
            while (t0 + rel + step < now && (!end_ns || rel < end_ns)) {
                k++;
                rel = (uint64_t)k * step;
                if (end_ns && rel > end_ns)
                    rel = end_ns;
            }
            int s = wait_until(m, t0 + rel, &si);
            if (pa_cli_is_stop_signal(s))
                return 0;
        }
        if ((err = do_tick(m, k, t0 + rel)) != 0)
            return err;
        pa_report *r = NULL;
        err = emit_report(m, true, &r);
        if (err < 0)
            return m->epipe ? PA_EXIT_PIPE : PA_EXIT_FAIL;
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

static int run_command(monitor *m)
{
    int go[2] = {-1, -1}, ex[2] = {-1, -1};
    int status = PA_EXIT_FAIL;
    pid_t pid = -1;
    pa_report *last = NULL; /* for the summary's formula and assumptions */
    bool print_windows = m->fmt != PA_OUT_TABLE || m->interval_set;

    if (pa_cli_spawn(CMD, m->cmd, &pid, &go[1], &ex[0]) != 0)
        goto out;

    int err = pa_watch_pid(
        m->ctx, pid, PA_WATCH_CHILDREN | (m->threads ? PA_WATCH_THREADS : 0));
    if (err < 0)
        pa_cli_error(CMD, "watch %s (pid %ld): %s", m->cmd[0], (long)pid,
                     pa_cli_errmsg(err));
    uint64_t t0 = pa_cli_mono_ns();
    int rc = do_tick(m, 0, t0);
    /* release the child even if the first tick failed, then report */
    close(go[1]);
    go[1] = -1;
    int child_errno = 0;
    ssize_t n;
    while ((n = read(ex[0], &child_errno, sizeof(child_errno))) < 0 &&
           errno == EINTR)
        ;
    if (n == (ssize_t)sizeof(child_errno)) {
        waitpid(pid, NULL, 0);
        pid = -1;
        pa_cli_error(CMD, "cannot run '%s': %s", m->cmd[0],
                     strerror(child_errno));
        status = child_errno == ENOENT ? 127 : 126;
        goto out;
    }
    if (rc != 0)
        goto kill_child;

    double cpu_s = 0;
    bool exited = false;
    for (unsigned k = 1; !exited; k++) {
        /* after an overrun (a suspended VM), skip the missed windows */
        uint64_t now = pa_cli_mono_ns();
        if (now > t0 + (uint64_t)(k + 1) * m->interval_ns)
            k = (unsigned)((now - t0) / m->interval_ns);
        uint64_t deadline = t0 + (uint64_t)k * m->interval_ns;
        for (;;) {
            siginfo_t si, wi;
            int s = wait_until(m, deadline, &si);
            if (s == 0)
                break;
            if (s == SIGCHLD) {
                memset(&wi, 0, sizeof(wi));
                if (waitid(P_PID, (id_t)pid, &wi,
                           WEXITED | WNOWAIT | WNOHANG) == 0 &&
                    wi.si_pid == pid) {
                    exited = true;
                    break;
                }
                continue;
            }
            /* A signal typed at the terminal reaches the child by itself
             * (same process group); one sent to powerapi is forwarded. */
            if (si.si_code != SI_KERNEL)
                kill(pid, s);
        }
        /* the last window ends at the exit; the zombie's stat is still
         * readable, so this tick sees the command's final CPU time */
        if ((rc = do_tick(m, k, 0)) != 0)
            goto kill_child;
        add_window_cpu(m, pid, &cpu_s);
        pa_report *r = NULL;
        if (emit_report(m, print_windows, &r) < 0) {
            rc = PA_EXIT_FAIL;
            goto kill_child;
        }
        if (r) {
            pa_report_free(last);
            last = r;
        }
    }
    double duration_s = (double)(pa_cli_mono_ns() - t0) / 1e9;

    pa_out_command cr = {.pid = pid,
                         .cpu_time_s = cpu_s,
                         .argv = m->cmd,
                         .duration_s = duration_s,
                         .last = last};
    if (pa_tree_power(m->ctx, pid, &cr.energy) < 0 &&
        pa_pid_power(m->ctx, pid, &cr.energy) < 0)
        pa_cli_error(CMD, "energy of pid %ld: %s", (long)pid,
                     pa_cli_errmsg(-ENODATA));

    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    pid = -1;
    if (WIFSIGNALED(wstatus)) {
        cr.signal = WTERMSIG(wstatus);
        cr.exit_status = 128 + cr.signal;
    } else {
        cr.exit_status = WEXITSTATUS(wstatus);
    }
    if ((err = pa_out_command_end(&m->out, &cr)) < 0) {
        if (err != -EPIPE)
            pa_cli_error(CMD, "%s: write failed: %s",
                         m->output ? m->output : "stdout", strerror(-err));
        status = err == -EPIPE ? PA_EXIT_PIPE : PA_EXIT_FAIL;
        goto out;
    }
    status = cr.exit_status;
    goto out;

kill_child:
    status = m->epipe ? PA_EXIT_PIPE : rc > 0 ? rc : PA_EXIT_FAIL;
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

int pa_cli_monitor(int argc, char **argv)
{
    monitor m;
    memset(&m, 0, sizeof(m));
    int status = parse_args(&m, argc, argv);
    if (status != 0) {
        status = status < 0 ? PA_EXIT_OK : status; /* -1: --help */
        goto out;
    }

    if (m.states) {
        const char *p = NULL, *s = NULL;
        if (pa_replay_new(&m.replay, m.states, m.copts.procfs, m.copts.sysfs,
                          &p, &s) < 0) {
            status = PA_EXIT_FAIL;
            goto out;
        }
        m.copts.procfs = p;
        m.copts.sysfs = s;
    }

    int err = m.ring ? 0 : pa_ctx_new(&m.ctx, &m.copts);
    if (err < 0) {
        pa_cli_error(CMD, "%s", pa_cli_errmsg(err));
        status = PA_EXIT_FAIL;
        goto out;
    }
    if (!m.ring && (status = pa_cli_mods_apply(m.ctx, CMD, &m.mods)) != 0)
        goto out;
    if (!m.ring && (status = setup_targets(&m)) != 0)
        goto out;

    m.f = stdout;
    if (m.output && !(m.f = fopen(m.output, "we"))) {
        pa_cli_error(CMD, "--output %s: %s", m.output, strerror(errno));
        status = PA_EXIT_FAIL;
        goto out;
    }
    pa_out_init(&m.out, m.f, m.fmt);
    if (!m.clock_step_ns)
        m.out.time_base_s = pa_out_live_time_base();
    m.out.command_columns = m.cmd != NULL;
    bool tty = isatty(fileno(m.f));
    m.out.clear = m.fmt == PA_OUT_TABLE && tty && !m.cmd && !m.clock_step_ns;
    if (m.top_set)
        m.out.top = m.top;
    else if (m.out.clear)
        m.out.fit_fd = fileno(m.f); /* as many as the screen holds */

    sigemptyset(&m.sigs);
    sigaddset(&m.sigs, SIGINT);
    sigaddset(&m.sigs, SIGTERM);
    sigaddset(&m.sigs, SIGHUP);
    sigaddset(&m.sigs, SIGQUIT);
    sigaddset(&m.sigs, SIGCHLD);
    sigset_t old, blocked = m.sigs;
    /* A closed pipe on stdout (`| head -1`) is a write error (EPIPE) that
     * ends monitoring quietly (and a command's run), not a signal that
     * kills us half-way; the command unblocks it before its exec. */
    sigaddset(&blocked, SIGPIPE);
    sigprocmask(SIG_BLOCK, &blocked, &old);

    if (m.ring) {
        pid_t *pids = calloc(m.npids + 1, sizeof(*pids));
        for (size_t i = 0; pids && i < m.npids; i++)
            pids[i] = m.pids[i].pid;
        pa_ring_monitor rm = {.ring = m.ring,
                              .interval_ns = m.interval_ns,
                              .count = m.count,
                              .duration_ns = m.duration_ns,
                              .pids = pids,
                              .npids = pids ? m.npids : 0,
                              .cgroups = m.cgroups,
                              .out = &m.out,
                              .sigs = &m.sigs};
        status = pa_cli_monitor_ring(&rm);
        free(pids);
    } else {
        status = m.cmd ? run_command(&m) : run_targets(&m);
    }
    if (status == PA_EXIT_OK && m.pid_failed)
        status = PA_EXIT_FAIL;

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
