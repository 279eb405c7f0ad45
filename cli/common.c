/*
 * common.c - helpers the subcommands share: messages, number and duration
 * arguments, clocks.  Apart from main.c so that the subcommands can be
 * linked without main() (the fuzz targets of tests/fuzz/).
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *cli_prog = "powerapi";

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    if (cmd)
        fprintf(stderr, "%s %s: ", cli_prog, cmd);
    else
        fprintf(stderr, "%s: ", cli_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    if (cmd)
        fprintf(stderr, "%s %s: ", cli_prog, cmd);
    else
        fprintf(stderr, "%s: ", cli_prog);
    vfprintf(stderr, fmt, ap);
    if (cmd)
        fprintf(stderr, " (see '%s %s --help')\n", cli_prog, cmd);
    else
        fprintf(stderr, " (see '%s --help')\n", cli_prog);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

const char *cli_errmsg(int err)
{
    const char *m = pa_last_error();
    return (m && *m) ? m : pa_strerror(err);
}

int cli_parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*end)
        return -EINVAL;
    if (errno == ERANGE || v > max)
        return -ERANGE;
    if (v == 0)
        return -EINVAL;
    *out = v;
    return 0;
}

int cli_parse_duration(const char *s, uint64_t *out_ns)
{
    uint64_t v;
    if (!s || !*s)
        return -EINVAL;
    /* a unit is required: `--interval 5` is as likely meant as 5 ms */
    int rc = pa_parse_duration_unit_ns(s, &v);
    if (rc < 0)
        return rc == -EDOM ? -EDOM : -EINVAL;
    if (v == 0)
        return -EINVAL;
    *out_ns = v;
    return 0;
}

int cli_parse_pids(const char *arg, pid_t **pids, size_t *npids)
{
    char *copy = strdup(arg);
    if (!copy)
        return -ENOMEM;
    int err = 0;
    size_t added = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned long v;
        if (cli_parse_uint(tok, 4194304, &v) < 0) {
            err = -EINVAL;
            break;
        }
        pid_t *n = realloc(*pids, (*npids + 1) * sizeof(*n));
        if (!n) {
            err = -ENOMEM;
            break;
        }
        *pids = n;
        (*pids)[(*npids)++] = (pid_t)v;
        added++;
    }
    free(copy);
    return err ? err : added ? 0 : -EINVAL;
}

int cli_getopt_error(const char *cmd, int c, char **argv)
{
    if (c == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    if (optopt && optopt < 256)
        return cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

int cli_extra_arg(const char *cmd, const char *arg)
{
    return cli_usage_error(cmd, "unexpected argument '%s'", arg);
}

int cli_is_stop_signal(int s)
{
    return s == SIGINT || s == SIGTERM || s == SIGHUP || s == SIGQUIT;
}

void cli_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
}

void cli_tick_error(const char *cmd, int err)
{
    const char *msg = cli_errmsg(err);
    cli_error(cmd, "%s%s", strncmp(msg, "tick:", 5) ? "tick: " : "", msg);
}

int cli_spawn(const char *cmd, char **argv, pid_t *pid, int *go_w, int *ex_r)
{
    int go[2] = {-1, -1}, ex[2] = {-1, -1};
    if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ex, O_CLOEXEC) < 0) {
        cli_error(cmd, "pipe: %s", strerror(errno));
        goto fail;
    }
    fflush(NULL);
    pid_t p = fork();
    if (p < 0) {
        cli_error(cmd, "fork: %s", strerror(errno));
        goto fail;
    }
    if (p == 0) {
        /* child: wait until watched, then exec */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        close(go[1]);
        close(ex[0]);
        char b;
        while (read(go[0], &b, 1) < 0 && errno == EINTR)
            ;
        execvp(argv[0], argv);
        int e = errno;
        ssize_t w = write(ex[1], &e, sizeof(e));
        (void)w;
        _exit(127);
    }
    close(go[0]);
    close(ex[1]);
    *pid = p;
    *go_w = go[1];
    *ex_r = ex[0];
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (go[i] >= 0)
            close(go[i]);
        if (ex[i] >= 0)
            close(ex[i]);
    }
    return CLI_EXIT_FAIL;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t cli_mono_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

uint64_t cli_real_ns(void)
{
    return clock_ns(CLOCK_REALTIME);
}

uint64_t cli_cpu_resolution_ns(pa_ctx *ctx)
{
    pa_module_info mi;
    if (!ctx || pa_module_get(ctx, "procfs-cpu", &mi) < 0 || !mi.enabled)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? 1000000000ull / (uint64_t)hz : 0;
}

int cli_warn_resolution(const char *cmd, pa_ctx *ctx, uint64_t window_ns)
{
    uint64_t res = cli_cpu_resolution_ns(ctx);
    if (!res || window_ns >= res)
        return 0;
    cli_error(cmd,
              "windows of %.3g ms are shorter than the %.3g ms resolution "
              "of process CPU times (procfs-cpu: /proc/PID/stat counts "
              "clock ticks, USER_HZ %ld): most windows will read 0 W and "
              "some %.0f times the power; use --interval %.0fms or more "
              "(each window then within 10 %%)",
              (double)window_ns / 1e6, (double)res / 1e6, sysconf(_SC_CLK_TCK),
              (double)res / (double)window_ns, 10 * (double)res / 1e6);
    return 1;
}

const char *const cli_format_choices[] = {"table", "csv", "json", NULL};

int cli_choice(const char *cmd, const char *opt, const char *const *choices, const char *arg)
{
    char list[256] = "";
    for (int i = 0; choices[i]; i++) {
        if (!strcmp(arg, choices[i]))
            return i;
        size_t u = strlen(list);
        snprintf(list + u, sizeof(list) - u, "%s%s", i ? ", " : "", choices[i]);
    }
    cli_usage_error(cmd, "--%s: unknown value '%s' (%s)", opt, arg, list);
    return -1;
}

int cli_format_option(void *v, const char *cmd, const char *arg)
{
    if (cli_choice(cmd, "format", cli_format_choices, arg) < 0)
        return CLI_EXIT_USAGE;
    return rp_out_parse_format(arg, v) < 0 ? CLI_EXIT_USAGE : 0;
}
