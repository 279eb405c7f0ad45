/* fuzz_serve.c - the exporter's request handling (cli/serve.c): a raw
 * HTTP request (method, path, query string, headers, body) parsed by
 * libmicrohttpd and answered by serve's handler, with a metrics page made
 * from a report whose process names, cgroup paths and assumed constants
 * come from the input (a process chooses its own name).  A 200 page must
 * be valid Prometheus text: every label value quoted, escaped and UTF-8.
 * Pieces: the request, a comm, a cgroup path, the assumed string. */
#include "fuzz.h"

#include "cli.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Length of the UTF-8 sequence at p (RFC 3629), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n = c < 0x80                 ? 1
               : c >= 0xc2 && c <= 0xdf ? 2
               : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4
                                        : 0;
    if (!n || (size_t)(end - p) < n)
        return 0;
    for (size_t k = 1; k < n; k++)
        if ((p[k] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0) || (c == 0xf0 && p[1] < 0x90) ||
        (c == 0xf4 && p[1] >= 0x90))
        return 0;
    return n;
}

/* One sample line: name{label="value",...} value */
static void check_line(const unsigned char *l, const unsigned char *end)
{
    const unsigned char *p = l;
    while (p < end && ((*p >= 'a' && *p <= 'z') || *p == '_'))
        p++;
    if (p == l)
        fz_fail("serve: a line without a metric name: %.*s", (int)(end - l), l);
    if (p < end && *p == '{') {
        p++;
        for (;;) {
            while (p < end && ((*p >= 'a' && *p <= 'z') || *p == '_'))
                p++;
            if (p + 1 >= end || p[0] != '=' || p[1] != '"')
                fz_fail("serve: a label without =\": %.*s", (int)(end - l), l);
            p += 2;
            while (p < end && *p != '"') {
                if (*p == '\\') {
                    if (p + 1 >= end || (p[1] != '\\' && p[1] != '"' && p[1] != 'n'))
                        fz_fail("serve: a bad escape: %.*s", (int)(end - l), l);
                    p += 2;
                    continue;
                }
                size_t n = utf8_len(p, end);
                if (!n)
                    fz_fail("serve: a label value not UTF-8: %.*s", (int)(end - l), l);
                p += n;
            }
            if (p >= end)
                fz_fail("serve: an unterminated label: %.*s", (int)(end - l), l);
            p++;
            if (p < end && *p == ',') {
                p++;
                continue;
            }
            if (p < end && *p == '}') {
                p++;
                break;
            }
            fz_fail("serve: labels not closed: %.*s", (int)(end - l), l);
        }
    }
    if (p >= end || *p != ' ' || p + 1 >= end)
        fz_fail("serve: a sample without a value: %.*s", (int)(end - l), l);
}

static void check_page(const char *resp, size_t len)
{
    const char *body = memmem(resp, len, "\r\n\r\n", 4);
    if (!body || strncmp(resp, "HTTP/1.1 200", 12) != 0)
        return;
    body += 4;
    const unsigned char *p = (const unsigned char *)body, *end = (const unsigned char *)resp + len;
    if ((size_t)(end - p) < 7 || memcmp(p, "# HELP ", 7) != 0)
        return; /* HEAD, or the root page */
    while (p < end) {
        const unsigned char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            fz_fail("serve: the page does not end with a newline");
        if (*p != '#')
            check_line(p, eol);
        p = eol + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_piece pc[4];
    size_t n = fz_split(data, size, pc, 4);
    char *comm = n > 1 ? fz_strdup(&pc[1]) : strdup("java");
    char *cgroup = n > 2 ? fz_strdup(&pc[2]) : strdup("/system.slice/x.service");
    char *assumed = n > 3 ? fz_strdup(&pc[3]) : strdup("tdp=15W");
    pa_target_info t[3];
    memset(t, 0, sizeof(t));
    for (int i = 0; i < 3; i++) {
        t[i].type = i == 2 ? PA_TARGET_CGROUP : PA_TARGET_PROCESS;
        t[i].pid = i == 2 ? 0 : 100 + i;
        snprintf(t[i].comm, sizeof(t[i].comm), "%s", i == 0 ? comm : "bash");
        t[i].cgroup = cgroup;
        t[i].power.total_w = t[i].power.cpu_w = 1.5 * (i + 1);
        t[i].power.total_j = 10.0 * (i + 1);
        t[i].multiplex = 1.0;
    }
    pa_report r = {.tick = 2,
                   .time_ns = 2000000000ull,
                   .interval_s = 1.0,
                   .formula = "cpu-tdp",
                   .sensors = "procfs-cpu",
                   .cpu_source = "model",
                   .assumed = assumed,
                   .ntargets = 3,
                   .targets = t};
    r.system.total_w = r.system.cpu_w = 9.0;
    char *resp = NULL;
    size_t rlen = 0;
    if (cli_serve_exchange(&r, pc[0].p, pc[0].n, &resp, &rlen) == 0)
        check_page(resp, rlen);
    free(resp);
    free(comm);
    free(cgroup);
    free(assumed);
    return 0;
}
