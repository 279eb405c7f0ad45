/*
 * common.c - helpers the subcommands share: messages, number and duration
 * arguments, clocks.  Apart from main.c so that the subcommands can be
 * linked without main() (the fuzz targets of tests/fuzz/).
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

const char *pa_cli_prog = "powerapi";

void pa_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    if (cmd)
        fprintf(stderr, "%s %s: ", pa_cli_prog, cmd);
    else
        fprintf(stderr, "%s: ", pa_cli_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int pa_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    if (cmd)
        fprintf(stderr, "%s %s: ", pa_cli_prog, cmd);
    else
        fprintf(stderr, "%s: ", pa_cli_prog);
    vfprintf(stderr, fmt, ap);
    if (cmd)
        fprintf(stderr, " (see '%s %s --help')\n", pa_cli_prog, cmd);
    else
        fprintf(stderr, " (see '%s --help')\n", pa_cli_prog);
    va_end(ap);
    return PA_EXIT_USAGE;
}

const char *pa_cli_errmsg(int err)
{
    const char *m = pa_last_error();
    return (m && *m) ? m : pa_strerror(err);
}

int pa_cli_parse_uint(const char *s, unsigned long max, unsigned long *out)
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

int pa_cli_parse_duration(const char *s, uint64_t *out_ns)
{
    uint64_t v;
    if (!s || !*s || pa_parse_duration_ns(s, &v) < 0 || v == 0)
        return -EINVAL;
    *out_ns = v;
    return 0;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t pa_cli_mono_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

uint64_t pa_cli_real_ns(void)
{
    return clock_ns(CLOCK_REALTIME);
}
