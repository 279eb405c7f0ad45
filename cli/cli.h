/*
 * cli.h - the powerapi command: subcommands and shared helpers.
 *
 * Each subcommand is `int cli_<name>(int argc, char **argv)`, called
 * with argv[0] = "<name>" and returning the process exit status
 * (0 ok, 1 runtime failure, 2 usage error; `monitor -- COMMAND` returns
 * the command's own status).  main.c dispatches through a table of
 * {name, function, one-line help}: a new subcommand adds its entry there
 * and its declaration here.
 */
#ifndef CLI_H
#define CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "output.h"
#include "powerapi.h"

/* Exit statuses shared by the subcommands. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1,   /* runtime failure (unknown pid, module error...) */
    CLI_EXIT_USAGE = 2,  /* bad command line: one line naming the argument */
    CLI_EXIT_PIPE = 141, /* the reader of our output went away (EPIPE):
                           quiet, the status of a process killed by
                           SIGPIPE, as `| head` expects */
};

/* One subcommand (cli/commands.c): main.c dispatches through the table,
 * the manual and the completion list it. */
typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help; /* one line */
} cli_command;
/* Every subcommand, in the order `powerapi --help` lists them; the last
 * entry's name is NULL. */
extern const cli_command cli_commands[];
/* The entry of name, or NULL. */
const cli_command *cli_command_find(const char *name);

/* Subcommands. */
int cli_monitor(int argc, char **argv);
int cli_modules(int argc, char **argv);
int cli_daemon(int argc, char **argv); /* cli/daemon.c */
int cli_top(int argc, char **argv);    /* cli/top.c */
int cli_serve(int argc, char **argv);  /* cli/serve.c */
/* One HTTP exchange through serve's request handling (no listening
 * socket): the raw request req answered as serve would, with r's metrics
 * page as /metrics (r NULL: no window yet).  *resp (malloc'd, *resp_len
 * bytes) is what went back on the wire.  0 or -errno.  For the fuzz
 * target. */
int cli_serve_exchange(const pa_report *r, const void *req, size_t len, char **resp,
                       size_t *resp_len);
/* serve's /metrics page of r (malloc'd, *len bytes) with at most
 * max_cgroups cgroup series (0: all), that node label and, when
 * carbon_g_per_kwh > 0, the CO2e series at that intensity; for tests. */
char *cli_serve_page(const pa_report *r, size_t max_cgroups, const char *node,
                     double carbon_g_per_kwh, size_t *len);
int cli_calibrate(int argc, char **argv); /* cli/calibrate.c */

/* `monitor --ring NAME` (cli/monitor_ring.c): writes, every interval, the
 * ring's windows since the last output averaged into one report, keeping
 * the processes in pids (all when npids is 0) and, with cgroups, the
 * cgroup records (with vms, the VM records alone).  Ends after count outputs or duration_ns (0: no
 * limit) or on a stop signal among sigs (blocked by the caller).  Returns the exit status; errors
 * (no ring, daemon gone) are printed. */
struct rp_out;
typedef struct cli_ring_monitor {
    const char *ring;
    uint64_t interval_ns;
    unsigned long count;
    uint64_t duration_ns;
    const pid_t *pids;
    size_t npids;
    int cgroups;
    int vms; /* --vms: the VM records only (a daemon --vms's) */
    struct rp_out *out;
    const sigset_t *sigs;
} cli_ring_monitor;
int cli_monitor_ring(const cli_ring_monitor *rm);
int cli_events(int argc, char **argv);  /* cli/events.c */
int cli_profile(int argc, char **argv); /* cli/profile.c */
int cli_jalen(int argc, char **argv);   /* cli/jalen.c */
int cli_diff(int argc, char **argv);    /* cli/diff.c */

/* `powerapi profile --repeat N` and `powerapi jalen --repeat N`
 * (cli/profile_repeat.c): cmd profiled repeat times, by this program
 * (opts, the options as given, passed on) or under the agent, into
 * out/run-K, after warmup unprofiled runs; then out/repeat.csv and
 * out/summary.json.  Returns the exit status (a failed run's own). */
typedef struct cli_repeat {
    char **opts; /* the options of the command line, before COMMAND */
    int nopts;
    char **cmd; /* NULL-terminated */
    const char *out;
    unsigned long repeat, warmup;
    bool quiet;
    /* `powerapi jalen --repeat`: each run is cmd with
     * -agentpath:AGENT=out=out/run-K[,agent_opts] after cmd[0] instead of
     * a profile of it (NULL: a profile) */
    const char *agent, *agent_opts;
    const char *cmd_name; /* "profile" or "jalen", for messages */
} cli_repeat;
int cli_profile_repeat(const cli_repeat *r);

/* ---- helpers shared by subcommands (cli/main.c) ---- */

/* The program name used in messages ("powerapi"). */
extern const char *cli_prog;

/* Prints "powerapi <cmd>: <message>\n" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints a usage error as one line "powerapi <cmd>: <message> (see
 * 'powerapi <cmd> --help')" and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The library's detailed message of the last failure, or pa_strerror(err)
 * when there is none. */
const char *cli_errmsg(int err);

/* Parses a strictly positive decimal integer (no sign, no junk).
 * Returns 0 or -EINVAL / -ERANGE. */
int cli_parse_uint(const char *s, unsigned long max, unsigned long *out);

/* Parses a duration with pa_parse_duration_ns, refusing 0 (-EINVAL) and
 * a number without a unit (-EDOM: "5" could be seconds or ms). */
int cli_parse_duration(const char *s, uint64_t *out_ns);

/* Appends the pids of "PID[,PID...]" (each 1..4194304) to *pids
 * (*npids of them, realloc'd).  0, -EINVAL (bad or empty list; the pids
 * before the bad one stay appended) or -ENOMEM. */
int cli_parse_pids(const char *arg, pid_t **pids, size_t *npids);

/* The usage error of getopt_long's ':' (missing value) or '?' (unknown
 * option) return c, after it; returns CLI_EXIT_USAGE. */
int cli_getopt_error(const char *cmd, int c, char **argv);

/* The usage error of an operand a subcommand takes none of (argv[optind]
 * after its options); returns CLI_EXIT_USAGE. */
int cli_extra_arg(const char *cmd, const char *arg);

/* SIGINT, SIGTERM, SIGHUP, SIGQUIT: the signals that stop a subcommand. */
int cli_is_stop_signal(int s);
/* set: those four signals alone (cli_is_stop_signal's). */
void cli_stop_signals(sigset_t *set);

/* The one line of a failed pa_tick ("<cmd>: tick: <message>"). */
void cli_tick_error(const char *cmd, int err);

/* Forks argv[0] with every signal unblocked; the child waits for a byte
 * (or EOF) on *go_w before execvp, and on exec failure writes its errno
 * to *ex_r's pipe and exits 127.  *pid, *go_w (the parent's write end)
 * and *ex_r (read end of the exec-error pipe, close-on-exec) are the
 * caller's to close.  0, or CLI_EXIT_FAIL after printing one line (no fd
 * left open). */
int cli_spawn(const char *cmd, char **argv, pid_t *pid, int *go_w, int *ex_r);

/* The resolution of the process CPU times a context's reports use: one
 * clock tick (1/USER_HZ, 10 ms where USER_HZ is 100) when procfs-cpu is
 * enabled, since <procfs>/<pid>/stat counts utime and stime in ticks
 * (proc(5) fields 14 and 15); 0 when it is not enabled (call it after the
 * first tick, when "auto" has chosen). */
uint64_t cli_cpu_resolution_ns(pa_ctx *ctx);

/* One line on stderr when windows of window_ns are shorter than the
 * context's CPU-time resolution (most windows would read 0 W, some
 * several times the power).  Returns 1 when it warned, else 0. */
int cli_warn_resolution(const char *cmd, pa_ctx *ctx, uint64_t window_ns);

/* CLOCK_MONOTONIC and CLOCK_REALTIME now, ns. */
uint64_t cli_mono_ns(void);
uint64_t cli_real_ns(void);

/* ---- --sensor/--formula/--disable (cli/modargs.c), monitor and daemon ---- */

typedef struct cli_mod_req {
    const char *flag; /* "--sensor", "--formula" */
    pa_module_kind kind;
    char *name;          /* owned */
    const char *options; /* inside name's allocation, or NULL */
    const char *arg;     /* as given, for messages */
} cli_mod_req;

typedef struct cli_mods {
    cli_mod_req *v;
    size_t n;
    const char **disables;
    size_t ndisables;
} cli_mods;

/* Records "NAME[:OPTS]" of a --sensor (PA_SENSOR) or --formula
 * (PA_FORMULA).  0, CLI_EXIT_USAGE (printed) or -ENOMEM. */
int cli_mods_add(cli_mods *m, const char *cmd, pa_module_kind kind, const char *arg);
/* Records a --disable NAME.  0, CLI_EXIT_USAGE (printed) or -ENOMEM. */
int cli_mods_disable(cli_mods *m, const char *cmd, const char *name);
/* Enables "auto", then the recorded modules in order, then disables;
 * nothing when none were given (the first tick enables "auto").  Returns
 * 0 or the exit status, the error printed as one line. */
int cli_mods_apply(pa_ctx *ctx, const char *cmd, const cli_mods *m);
/* One --sensor/--formula (kind) or, with disable, --disable option of
 * getopt: cli_mods_add or cli_mods_disable.  0, or the exit status
 * after printing one line (CLI_EXIT_USAGE; CLI_EXIT_FAIL out of memory). */
int cli_mods_option(cli_mods *m, const char *cmd, int disable, pa_module_kind kind,
                    const char *arg);
void cli_mods_free(cli_mods *m);

/* ---- option tables (cli/options.c) ----
 *
 * Each subcommand declares its options once, in a table of cli_opt
 * entries (perf's parse-options.h style), from which cli_parse builds
 * getopt_long's tables, parses, checks bounds, and prints --help.  The
 * options that build a context (roots, hwdb, calibration, modules,
 * interval) are one shared table, included in a command's table by
 * CLI_OPT_CONTEXT: same names, bounds and error lines in every command. */

typedef enum cli_opt_type {
    CLI_KIND_END = 0,
    CLI_KIND_GROUP,    /* a heading of --help (help), not an option */
    CLI_KIND_FLAG,     /* sets *(bool *)value */
    CLI_KIND_STRING,   /* *(const char **)value = the argument */
    CLI_KIND_UINT,     /* *(unsigned long *)value, from min to max */
    CLI_KIND_DURATION, /* *(uint64_t *)value in ns, min to max (0: none) */
    CLI_KIND_CALLBACK, /* cb(value, cmd, arg) */
    CLI_KIND_CONTEXT,  /* the shared context options of mask, value is a
                            cli_ctx */
} cli_opt_type;

typedef struct cli_opt {
    cli_opt_type type;
    int short_name;        /* a letter, or 0 */
    const char *long_name; /* without "--" */
    void *value;
    const char *argh; /* the argument's name in --help; NULL: a flag */
    const char *help; /* '\n' starts a continuation line */
    uint64_t min, max;
    /* CALLBACK: 0, or the exit status after printing one line */
    int (*cb)(void *value, const char *cmd, const char *arg);
    const char *alias; /* an older long name, still accepted */
    unsigned mask;     /* CONTEXT: which shared options (CLI_CTXOPT_*) */
    /* CALLBACK: the values it accepts, NULL-terminated, when it has a
     * fixed set (its callback checks them with cli_choice): what
     * --complete offers, so completion offers what the command takes */
    const char *const *choices;
} cli_opt;

/* Index of arg in choices (NULL-terminated), or -1 after printing one line
 * naming the option and the choices ("--event: unknown value 'x'
 * (cpu-clock, task-clock, cycles)"). */
int cli_choice(const char *cmd, const char *opt, const char *const *choices, const char *arg);
/* The choices of --format (table, csv, json). */
extern const char *const cli_format_choices[];

/* one entry per line, as perf writes them */
/* clang-format off */
#define CLI_OPT_END {.type = CLI_KIND_END}
#define CLI_OPT_GROUP(h) {.type = CLI_KIND_GROUP, .help = (h)}
#define CLI_OPT_FLAG(s, l, v, h)                                                \
    {.type = CLI_KIND_FLAG, .short_name = (s), .long_name = (l),             \
     .value = (v), .help = (h)}
#define CLI_OPT_STRING(s, l, v, a, h)                                           \
    {.type = CLI_KIND_STRING, .short_name = (s), .long_name = (l),           \
     .value = (v), .argh = (a), .help = (h)}
#define CLI_OPT_UINT(s, l, v, a, h, lo, hi)                                     \
    {.type = CLI_KIND_UINT, .short_name = (s), .long_name = (l),             \
     .value = (v), .argh = (a), .help = (h), .min = (lo), .max = (hi)}
#define CLI_OPT_DURATION(s, l, v, h, lo, hi)                                    \
    {.type = CLI_KIND_DURATION, .short_name = (s), .long_name = (l),         \
     .value = (v), .argh = "DURATION", .help = (h), .min = (lo), .max = (hi)}
#define CLI_OPT_CALLBACK(s, l, v, a, h, f)                                      \
    {.type = CLI_KIND_CALLBACK, .short_name = (s), .long_name = (l),         \
     .value = (v), .argh = (a), .help = (h), .cb = (f)}
#define CLI_OPT_CHOICE(s, l, v, a, h, f, c)                                     \
    {.type = CLI_KIND_CALLBACK, .short_name = (s), .long_name = (l),         \
     .value = (v), .argh = (a), .help = (h), .cb = (f), .choices = (c)}
#define CLI_OPT_CONTEXT(c, m)                                                   \
    {.type = CLI_KIND_CONTEXT, .value = (c), .mask = (m)}
/* clang-format on */

/* The shared context options, by group (CLI_OPT_CONTEXT's mask). */
enum {
    CLI_CTXOPT_ROOTS = 1,       /* --procfs DIR, --sysfs DIR, --hwdb FILE, --rootfs DIR */
    CLI_CTXOPT_CALIBRATION = 2, /* --calibration FILE */
    CLI_CTXOPT_MODULES = 4,     /* --sensor, --formula, --disable */
    CLI_CTXOPT_INTERVAL = 8,    /* -i, --interval DURATION */
    CLI_CTXOPT_ALL = 15,
    /* --carbon-intensity G: not of the context but of the outputs, in
     * the shared table so that every command that reports energy spells,
     * bounds and refuses it alike; not in ALL (daemon reports nothing) */
    CLI_CTXOPT_CARBON = 16,
};

/* The lowest --interval of every command (see cli/options.c). */
#define CLI_MIN_INTERVAL_NS 1000000ull

/* What the context options set. */
typedef struct cli_ctx {
    pa_ctx_opts copts;    /* --procfs, --sysfs, --hwdb */
    cli_mods mods;        /* --sensor, --formula, --disable */
    uint64_t interval_ns; /* --interval, 1 s by default */
    int interval_set;
    const char *calibration; /* --calibration, checked while parsing */
    double carbon_g_per_kwh; /* --carbon-intensity, 0: none given */
} cli_ctx;

/* One subcommand's command line and --help. */
typedef struct cli_cmd {
    const char *name;   /* "monitor" */
    const char *usage;  /* lines after "Usage: " ('%s': the program) */
    const char *about;  /* text between the usage and the options */
    const char *footer; /* text after the options, or NULL */
    const cli_opt *opts;
    int operands; /* takes a COMMAND after its options (else refused) */
} cli_cmd;

/* Parses argv (argv[0] the command's name) with c's table: each option's
 * setter in order, --help printed from the table.  Returns 0 with *first
 * the index of the first operand (argc if none), -1 after printing the
 * help (exit 0), or the exit status after printing one line (usage errors:
 * CLI_EXIT_USAGE). */
int cli_parse(const cli_cmd *c, int argc, char **argv, int *first);
/* Prints c's --help: usage, about, each option of the table, footer. */
void cli_help(FILE *f, const cli_cmd *c);
/* Prints c's manual page, powerapi-NAME(1), in man(7) roff from the same
 * table as --help (the hidden option --man of every command): NAME from
 * the commands' table, SYNOPSIS from the usage, DESCRIPTION from the
 * about text, OPTIONS (groups as subsections), NOTES from the footer. */
void cli_man(FILE *f, const cli_cmd *c);
/* Prints powerapi(1): the commands, the global options, SEE ALSO. */
void cli_man_main(FILE *f);
/* For the shell completion (the hidden option --complete of every
 * command): one line per option, "--LONG -S ARGH" ("-" for a letter or an
 * argument the option has not), --help included. */
void cli_complete(FILE *f, const cli_cmd *c);
/* The check of a CLI_KIND_DURATION option o, for callbacks: 0 with
 * *out_ns, or CLI_EXIT_USAGE after printing the line every command prints
 * for it. */
int cli_opt_duration(const char *cmd, const cli_opt *o, const char *arg, uint64_t *out_ns);
/* The shared context options (CLI_OPT_CONTEXT expands the entries whose
 * mask it names), ended by CLI_OPT_END. */
const cli_opt *cli_ctx_options(void);
/* A cli_ctx with the defaults (interval 1 s). */
void cli_ctx_init(cli_ctx *c);
void cli_ctx_fini(cli_ctx *c);
/* The first context option given that sampling needs (roots, hwdb,
 * modules), as "--procfs", or NULL: for commands that read a ring. */
const char *cli_ctx_sampling_option(const cli_ctx *c);
/* pa_ctx_new with c's roots, then c's modules (cli_mods_apply).  0, or
 * the exit status after printing one line (*out then NULL). */
int cli_ctx_create(const cli_ctx *c, const char *cmd, pa_ctx **out);
/* One line on stderr when RAPL's energy files exist but this user may not
 * read them (Linux >= 5.10 without the group powerapi of the Debian
 * package, packaging/60-powerapi-rapl.rules): the power is modelled, and
 * how to get it measured.  Nothing otherwise. */
void cli_rapl_hint(pa_ctx *ctx, const char *cmd);

/* ---- fixture replay (cli/replay.c), a testing aid of `monitor` ---- */

typedef struct cli_replay cli_replay;

/* Copies the procfs and sysfs trees (either may be NULL) into a private
 * temporary directory and remembers the states folder: states/<k>/proc/..
 * and states/<k>/sys/.. are overlays written over the copies before tick
 * k (k = 0, 1, ...); a file states/<k>/remove lists paths ("proc/1234")
 * to delete before that tick.  *procfs_out and *sysfs_out receive the
 * copies' paths (owned by the replay).  Returns 0 or -errno (message
 * printed). */
int cli_replay_new(cli_replay **out, const char *states, const char *procfs, const char *sysfs,
                   const char **procfs_out, const char **sysfs_out);
/* Applies the state of tick k (no-op if the folder has none). */
int cli_replay_apply(cli_replay *r, unsigned k);
/* Removes the temporary copies and frees.  NULL is a no-op. */
void cli_replay_free(cli_replay *r);

/* The setter of a -f/--format option (a cli_opt callback, v a
 * rp_out_format *): 0, or CLI_EXIT_USAGE after printing the line. */
int cli_format_option(void *v, const char *cmd, const char *arg);

/* `powerapi modules`' listing of ctx's modules (built-in and registered,
 * with their components) in fmt (cli/modules.c).  0 or -errno. */
int cli_modules_print(pa_ctx *ctx, FILE *f, rp_out_format fmt);

/* `powerapi profile`'s words on symbols (profsyms.c).  A note for the
 * closing lines and summary.json when share (>= 0.5) of the energy is on
 * unnamed frames of path: the package of its debug symbols (the owner of
 * path, "-dbgsym") and DEBUGINFOD_URLS; "" otherwise. */
void cli_symbols_note(const char *path, double share, char *out, size_t len);
/* Each server of $DEBUGINFOD_URLS that does not answer within 2 s is left
 * out of this run, said once on stderr (unless quiet); DEBUGINFOD_TIMEOUT
 * is 10 s unless set. */
void cli_debuginfod_check(const char *cmd, bool quiet);

#endif /* CLI_H */
