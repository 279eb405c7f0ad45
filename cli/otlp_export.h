/*
 * otlp.h - `--otlp URL` of `serve` and `daemon`: each window's series
 * (report/otlp.h) pushed as OTLP/HTTP protobuf by a rp_push (push.h).
 */
#ifndef CLI_OTLP_EXPORT_H
#define CLI_OTLP_EXPORT_H

#include "cli.h"
#include "prometheus.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct cli_otlp_args {
    const char *url;
    const char *headers[16];
    size_t nheaders;
    bool gzip;
    unsigned long queue;
    uint64_t timeout_ns;
    const char *service;
} cli_otlp_args;

/* The options, declared once for every command that pushes. */
int cli_otlp_header(void *value, const char *cmd, const char *arg);
/* clang-format off */
#define CLI_OPT_OTLP(a)                                                         \
    CLI_OPT_GROUP("OpenTelemetry (OTLP/HTTP protobuf):"),                       \
    CLI_OPT_STRING(0, "otlp", &(a)->url, "URL",                                 \
                  "push every window's series to an OTLP/HTTP\n"               \
                  "receiver (http://collector:4318; the path\n"                \
                  "/v1/metrics is added when URL has none)"),                  \
    CLI_OPT_CALLBACK(0, "otlp-header", (a), "'NAME:VALUE'",                    \
                    "a header of every push, for authentication\n"             \
                    "(repeatable, at most 16; those of\n"                      \
                    "OTEL_EXPORTER_OTLP_HEADERS are added)",                   \
                    cli_otlp_header),                                       \
    CLI_OPT_FLAG(0, "otlp-gzip", &(a)->gzip, "compress the pushes (gzip)"),     \
    CLI_OPT_UINT(0, "otlp-queue", &(a)->queue, "N",                             \
                "windows held while the receiver is away\n"                    \
                "(default 600); beyond, the oldest are dropped\n"              \
                "and counted", 1, 1000000),                                    \
    CLI_OPT_DURATION(0, "otlp-timeout", &(a)->timeout_ns,                       \
                    "one push's limit (default 10s)", 1000000ull, 0),          \
    CLI_OPT_STRING(0, "otlp-service", &(a)->service, "NAME",                    \
                  "service.name of the resource (default powerapi)")
/* clang-format on */

typedef struct cli_otlp cli_otlp;

/* Starts pushing when a->url is set (*out NULL otherwise).  0, or an exit
 * status after one line on stderr. */
int cli_otlp_start(const cli_otlp_args *a, const char *cmd, cli_otlp **out);
/* Encodes r (the page's selection o) and queues it; never waits on the
 * network.  Called from the sampling thread.  NULL: nothing. */
void cli_otlp_window(cli_otlp *x, const pa_report *r, const rp_prom_opts *o);
/* Flushes for at most a second, stops, frees.  NULL: nothing. */
void cli_otlp_stop(cli_otlp *x);

#endif
