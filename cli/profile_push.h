/*
 * profile_push.h - `powerapi profile --push pyroscope=URL`: every N seconds
 * the pprof of what was charged since the last push (energy the default
 * sample type, CPU time and samples beside it) posted to Pyroscope's ingest
 * API or as OTLP profiles (report/otlp_profile.h), kept on disk until it
 * is sent (push.h's spool folder).
 */
#ifndef CLI_PROFILE_PUSH_H
#define CLI_PROFILE_PUSH_H

#include "cli.h"
#include "profcore.h"

#include <stdint.h>

typedef struct cli_ppush_args {
    const char *pyroscope;  /* base URL */
    const char *otlp;       /* OTLP/HTTP URL (profiles) */
    uint64_t every_ns;      /* --push-every (default 10 s) */
    const char *service;    /* --service-name */
    const char *spool;      /* --push-spool */
    const char *labels[16]; /* --push-label NAME=VALUE */
    size_t nlabels;
} cli_ppush_args;

int cli_ppush_target(void *value, const char *cmd, const char *arg);
int cli_ppush_label(void *value, const char *cmd, const char *arg);
/* clang-format off */
#define CLI_OPT_PPUSH(a)                                                        \
    CLI_OPT_GROUP("Pushing (continuous profiling):"),                           \
    CLI_OPT_CALLBACK(0, "push", (a), "pyroscope=URL|otlp=URL",                  \
                    "push the profile of every --push-every to\n"              \
                    "Pyroscope's ingest API (http://pyroscope:4040)\n"         \
                    "or as OTLP profiles (alpha; http://collector:4318);\n"    \
                    "kept on disk until sent (repeatable)",                    \
                    cli_ppush_target),                                      \
    CLI_OPT_DURATION(0, "push-every", &(a)->every_ns,                           \
                    "how often a profile is pushed (default 10s)",             \
                    1000000000ull, 0),                                         \
    CLI_OPT_STRING(0, "service-name", &(a)->service, "NAME",                    \
                  "the pushed profiles' application (default: the\n"           \
                  "process's name, its container's, or the host's\n"           \
                  "with --all)"),                                              \
    CLI_OPT_CALLBACK(0, "push-label", (a), "NAME=VALUE",                        \
                    "a label of every push (repeatable)",                      \
                    cli_ppush_label),                                       \
    CLI_OPT_STRING(0, "push-spool", &(a)->spool, "DIR",                         \
                  "where profiles wait to be sent (default\n"                  \
                  "~/.cache/powerapi/push)")
/* clang-format on */

typedef struct cli_ppush cli_ppush;

/* Starts pushing when --push was given (*out NULL otherwise); pid is the
 * first target (0: --all), comm its name or the command's.  0, or an exit
 * status after one line. */
int cli_ppush_start(const cli_ppush_args *a, const char *cmd, pid_t pid, const char *comm,
                    const char *procfs, uint64_t period_ns, cli_ppush **out);
/* At the end of each window: pushes when --push-every has passed. */
void cli_ppush_window(cli_ppush *x, pc_prof *prof);
/* The last profile, then stops (one second to send what waits; the rest
 * stays on disk) and frees.  NULL: nothing. */
void cli_ppush_end(cli_ppush *x, pc_prof *prof);

#endif
