/*
 * otlp.c - `--otlp URL`: the window's series encoded (report/otlp.c) on the
 * sampling thread, handed to the sending thread (push.c).  The start time
 * of every cumulative sum is the moment pushing began, the same in every
 * batch, so that a receiver back after an absence continues the sums.
 */
#include "otlp_export.h"
#include "otlp.h"
#include "push.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cli_otlp {
    rp_push *push;
    uint64_t start_unix_ns;
    char service[128];
};

int cli_otlp_header(void *value, const char *cmd, const char *arg)
{
    cli_otlp_args *a = value;
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg || strchr(arg, '\n') || strchr(arg, '\r'))
        return cli_usage_error(cmd, "--otlp-header: expected 'NAME: VALUE', got '%s'", arg);
    if (a->nheaders == sizeof(a->headers) / sizeof(a->headers[0]))
        return cli_usage_error(cmd, "--otlp-header: at most 16 headers");
    a->headers[a->nheaders++] = arg;
    return 0;
}

/* s[0..n) without the blanks around it, percent-decoded, into out;
 * the bytes written. */
static size_t put_trimmed(char *out, const char *s, size_t n)
{
    while (n && *s == ' ') {
        s++;
        n--;
    }
    while (n && s[n - 1] == ' ')
        n--;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned hex;
        if (s[i] == '%' && i + 2 < n && sscanf(s + i + 1, "%2x", &hex) == 1) {
            out[w++] = (char)hex;
            i += 2;
        } else {
            out[w++] = s[i];
        }
    }
    return w;
}

/* OTEL_EXPORTER_OTLP_HEADERS ("k1=v1,k2=v2", percent-encoded, as
 * OpenTelemetry's SDKs read it) as "k1: v1" lines in buf, their pointers
 * after those of --otlp-header in v; the count of v.  A secret there stays
 * out of the command line that ps shows. */
static size_t env_headers(const cli_otlp_args *a, const char **v, size_t max, char *buf, size_t len)
{
    size_t n = 0;
    for (; n < a->nheaders && n < max; n++)
        v[n] = a->headers[n];
    const char *env = getenv("OTEL_EXPORTER_OTLP_HEADERS");
    size_t used = 0;
    while (env && *env && n < max) {
        size_t item = strcspn(env, ","), eq = strcspn(env, "=");
        if (eq < item && used + item + 3 < len) {
            char *out = buf + used;
            size_t w = put_trimmed(out, env, eq);
            memcpy(out + w, ": ", 2);
            w += 2;
            w += put_trimmed(out + w, env + eq + 1, item - eq - 1);
            out[w] = '\0';
            used += w + 1;
            if (out[0] != ':' && !strpbrk(out, "\r\n"))
                v[n++] = out;
        }
        env += item + (env[item] == ',');
    }
    return n;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cli_otlp_start(const cli_otlp_args *a, const char *cmd, cli_otlp **out)
{
    *out = NULL;
    if (!a->url)
        return 0;
    if (strncmp(a->url, "http://", 7) != 0 && strncmp(a->url, "https://", 8) != 0)
        return cli_usage_error(cmd, "--otlp: expected an http:// or https:// URL, got '%s'",
                               a->url);
    char url[2048];
    const char *path = strchr(a->url + (a->url[4] == 's' ? 8 : 7), '/');
    snprintf(url, sizeof(url), "%s%s", a->url,
             !path || !path[1] ? (path ? "v1/metrics" : "/v1/metrics") : "");
    cli_otlp *x = calloc(1, sizeof(*x));
    if (!x) {
        cli_error(cmd, "%s", strerror(ENOMEM));
        return CLI_EXIT_FAIL;
    }
    snprintf(x->service, sizeof(x->service), "%s", a->service ? a->service : "powerapi");
    x->start_unix_ns = clock_ns(CLOCK_REALTIME);
    const char *headers[32];
    char envbuf[4096];
    rp_push_cfg cfg = {.cmd = cmd,
                       .name = "otlp",
                       .url = url,
                       .content_type = "application/x-protobuf",
                       .headers = headers,
                       .nheaders = env_headers(a, headers, 32, envbuf, sizeof(envbuf)),
                       .gzip = a->gzip,
                       .queue_max = a->queue ? a->queue : 600,
                       .timeout_ns = a->timeout_ns};
    int rc = rp_push_start(&cfg, &x->push);
    if (rc < 0) {
        free(x);
        cli_error(cmd, "--otlp: %s", strerror(-rc));
        return CLI_EXIT_FAIL;
    }
    *out = x;
    return 0;
}

void cli_otlp_window(cli_otlp *x, const pa_report *r, const rp_prom_opts *o)
{
    if (!x)
        return;
    rp_push_stats st;
    rp_push_get_stats(x->push, &st);
    /* the window's end in Unix time: the report's clock is monotonic */
    uint64_t mono = clock_ns(CLOCK_MONOTONIC), real = clock_ns(CLOCK_REALTIME);
    uint64_t age = r->time_ns && r->time_ns <= mono ? mono - r->time_ns : 0;
    rp_otlp_opts eo = {.prom = *o,
                       .start_unix_ns = x->start_unix_ns,
                       .time_unix_ns = real - age,
                       .service_name = x->service,
                       .version = PA_VERSION_STRING,
                       .dropped_batches = st.dropped};
    uint8_t *buf;
    size_t len;
    if (rp_otlp_encode(r, &eo, &buf, &len) == 0)
        rp_push_submit(x->push, buf, len, NULL);
}

void cli_otlp_stop(cli_otlp *x)
{
    if (!x)
        return;
    rp_push_stop(x->push, 1000000000ull);
    free(x);
}
