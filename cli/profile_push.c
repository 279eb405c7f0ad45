/*
 * profile_push.c - `powerapi profile --push pyroscope=URL` (profile_push.h).
 *
 * Each push is the delta pprof of profcore (pa_pprof_write_delta: what the
 * windows charged since the previous push), posted to
 * URL/ingest?name=SERVICE{labels}&from=&until=&format=pprof as Pyroscope's
 * HTTP API documents it, body application/octet-stream (gzip'd pprof, as
 * profile.pb.gz).  The bytes go through push.c with a spool folder, so a
 * profile that cannot be sent waits on disk (bounded) for the receiver or
 * the next run.
 */
#include "profile_push.h"
#include "push.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct pa_cli_ppush {
    pa_push *push;
    char url[2048]; /* base/ingest?name=...{...}& up to from */
    char tmp[4096]; /* where the delta is written */
    uint64_t every_ns, last_mono, period_ns;
    time_t last_unix;
    pa_pdelta delta;
    unsigned long pushes;
};

int pa_cli_ppush_target(void *value, const char *cmd, const char *arg)
{
    pa_cli_ppush_args *a = value;
    if (!strncmp(arg, "pyroscope=", 10) &&
        (!strncmp(arg + 10, "http://", 7) || !strncmp(arg + 10, "https://", 8))) {
        a->pyroscope = arg + 10;
        return 0;
    }
    if (!strncmp(arg, "otlp=", 5))
        return pa_cli_usage_error(cmd, "--push otlp=URL: OTLP profiles (an alpha signal) are not "
                                       "sent yet; use --push pyroscope=URL");
    return pa_cli_usage_error(cmd, "--push: expected pyroscope=http://HOST:PORT, got '%s'", arg);
}

int pa_cli_ppush_label(void *value, const char *cmd, const char *arg)
{
    pa_cli_ppush_args *a = value;
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || strcspn(arg, "{},") < strlen(arg))
        return pa_cli_usage_error(cmd, "--push-label: expected NAME=VALUE without {},, got '%s'",
                                  arg);
    if (a->nlabels == sizeof(a->labels) / sizeof(a->labels[0]))
        return pa_cli_usage_error(cmd, "--push-label: at most 16");
    a->labels[a->nlabels++] = arg;
    return 0;
}

/* s percent-encoded (RFC 3986 unreserved kept), with the characters that
 * Pyroscope's name syntax reserves ({}=, in a value) made '_' when value. */
static void put_enc(FILE *f, const char *s, int value)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if (value && (c == '{' || c == '}' || c == ',' || c == '=' || c < 0x20))
            c = '_';
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~')
            fputc(c, f);
        else
            fprintf(f, "%%%02X", c);
    }
}

static void put_label(FILE *f, int *first, const char *k, const char *v)
{
    if (!v || !*v)
        return;
    put_enc(f, *first ? "{" : ",", 0);
    *first = 0;
    put_enc(f, k, 1);
    put_enc(f, "=", 0);
    put_enc(f, v, 1);
}

/* The name parameter: SERVICE{host=...,pid=...,container...,labels}. */
static void put_name(FILE *f, const pa_cli_ppush_args *a, const char *service, pid_t pid,
                     const pa_cgroup_names *cg)
{
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    put_enc(f, service, 1);
    int first = 1;
    put_label(f, &first, "host", host);
    char pids[16];
    snprintf(pids, sizeof(pids), "%d", (int)pid);
    if (pid > 0)
        put_label(f, &first, "pid", pids);
    put_label(f, &first, "container_id", cg->container_id);
    put_label(f, &first, "container_name", cg->container_name);
    put_label(f, &first, "pod", cg->pod_name);
    put_label(f, &first, "namespace", cg->pod_namespace);
    put_label(f, &first, "unit", cg->unit);
    for (size_t i = 0; i < a->nlabels; i++) {
        char k[128];
        snprintf(k, sizeof(k), "%.*s", (int)(strchr(a->labels[i], '=') - a->labels[i]),
                 a->labels[i]);
        put_label(f, &first, k, strchr(a->labels[i], '=') + 1);
    }
    if (!first)
        put_enc(f, "}", 0);
}

/* The container, pod or unit of pid, from its cgroup v2 line. */
static void names_of(const char *procfs, pid_t pid, pa_cgroup_names *out)
{
    memset(out, 0, sizeof(*out));
    char path[512], line[1024];
    snprintf(path, sizeof(path), "%s/%d/cgroup", procfs, (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *cg = strchr(line, ':') ? strchr(strchr(line, ':') + 1, ':') : NULL;
        if (cg && pa_cgroup_parse(cg + 1, out) == 0 && (out->container_id[0] || out->pod_uid[0]))
            break;
    }
    if (f)
        fclose(f);
}

static char *spool_default(char *buf, size_t len)
{
    const char *home = getenv("HOME");
    if (home && *home) {
        snprintf(buf, len, "%s/.cache", home);
        mkdir(buf, 0700);
        snprintf(buf, len, "%s/.cache/powerapi", home);
        mkdir(buf, 0700);
        snprintf(buf, len, "%s/.cache/powerapi/push", home);
    } else {
        snprintf(buf, len, "/var/tmp/powerapi-push-%d", (int)getuid());
    }
    return buf;
}

int pa_cli_ppush_start(const pa_cli_ppush_args *a, const char *cmd, pid_t pid, const char *comm,
                       const char *procfs, uint64_t period_ns, pa_cli_ppush **out)
{
    *out = NULL;
    if (!a->pyroscope)
        return 0;
    pa_cli_ppush *x = calloc(1, sizeof(*x));
    if (!x) {
        pa_cli_error(cmd, "out of memory");
        return PA_EXIT_FAIL;
    }
    pa_cgroup_names cg;
    names_of(procfs ? procfs : "/proc", pid, &cg);
    char own[64] = "";
    if (comm && strrchr(comm, '/'))
        comm = strrchr(comm, '/') + 1;
    if (!comm && pid > 0) { /* the process's name, /proc/PID/comm */
        char path[512];
        snprintf(path, sizeof(path), "%s/%d/comm", procfs ? procfs : "/proc", (int)pid);
        FILE *cf = fopen(path, "r");
        if (cf && fgets(own, sizeof(own), cf))
            own[strcspn(own, "\n")] = '\0';
        if (cf)
            fclose(cf);
        comm = own;
    }
    char host[256] = "host";
    gethostname(host, sizeof(host) - 1);
    const char *service = a->service                 ? a->service
                          : cg.container_name[0]     ? cg.container_name
                          : pid > 0 && comm && *comm ? comm
                                                     : host;
    FILE *f = fmemopen(x->url, sizeof(x->url) - 1, "w");
    if (f) {
        size_t n = strlen(a->pyroscope);
        fprintf(f, "%.*s/ingest?name=", (int)(n && a->pyroscope[n - 1] == '/' ? n - 1 : n),
                a->pyroscope);
        put_name(f, a, service, pid, &cg);
        fputs("&format=pprof&spyName=powerapi", f);
        fclose(f);
    }
    char spool[1024];
    const char *dir = a->spool ? a->spool : spool_default(spool, sizeof(spool));
    snprintf(x->tmp, sizeof(x->tmp), "%s/.delta-%d", dir, (int)getpid());
    x->every_ns = a->every_ns ? a->every_ns : 10000000000ull;
    x->period_ns = period_ns;
    x->last_mono = pa_cli_mono_ns();
    x->last_unix = time(NULL);
    pa_push_cfg cfg = {.cmd = cmd,
                       .name = "pyroscope",
                       .url = x->url,
                       .content_type = "application/octet-stream",
                       .queue_max = 360,
                       .spool_dir = dir};
    int rc = pa_push_start(&cfg, &x->push);
    if (rc < 0 || (mkdir(x->tmp, 0700) < 0 && errno != EEXIST)) {
        pa_cli_error(cmd, "--push: %s", strerror(rc < 0 ? -rc : errno));
        pa_push_stop(x->push, 0);
        free(x);
        return PA_EXIT_FAIL;
    }
    *out = x;
    return 0;
}

/* Writes the delta since the last push and queues it for [last, now]. */
static void push_now(pa_cli_ppush *x, pa_pprof *prof)
{
    uint64_t mono = pa_cli_mono_ns();
    time_t now = time(NULL);
    int rc = pa_pprof_write_delta(prof, x->tmp, x->period_ns, (double)(mono - x->last_mono) / 1e9,
                                  &x->delta);
    char path[4200], url[2200];
    snprintf(path, sizeof(path), "%s/profile.pb.gz", x->tmp);
    FILE *f = rc == 0 ? fopen(path, "rb") : NULL;
    struct stat st;
    char *body = NULL;
    size_t len = 0;
    if (f && fstat(fileno(f), &st) == 0 && (body = malloc((size_t)st.st_size + 1)))
        len = fread(body, 1, (size_t)st.st_size, f);
    if (f)
        fclose(f);
    unlink(path);
    /* Pyroscope's times are whole seconds: until > from */
    time_t until = now > x->last_unix ? now : x->last_unix + 1;
    snprintf(url, sizeof(url), "%s&from=%lld&until=%lld", x->url, (long long)x->last_unix,
             (long long)until);
    if (body && len)
        pa_push_submit(x->push, body, len, url);
    else
        free(body);
    x->pushes++;
    x->last_mono = mono;
    x->last_unix = until;
}

void pa_cli_ppush_window(pa_cli_ppush *x, pa_pprof *prof)
{
    if (x && pa_cli_mono_ns() - x->last_mono >= x->every_ns)
        push_now(x, prof);
}

void pa_cli_ppush_end(pa_cli_ppush *x, pa_pprof *prof)
{
    if (!x)
        return;
    push_now(x, prof);
    pa_push_stop(x->push, 1000000000ull);
    rmdir(x->tmp);
    free(x->delta.last);
    free(x);
}
