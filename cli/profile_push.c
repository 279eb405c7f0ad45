/*
 * profile_push.c - `powerapi profile --push pyroscope=URL` (profile_push.h).
 *
 * Each push is the delta pprof of profcore (pc_prof_write_delta: what the
 * windows charged since the previous push), posted to
 * URL/ingest?name=SERVICE{labels}&from=&until=&format=pprof as Pyroscope's
 * HTTP API documents it, body application/octet-stream (gzip'd pprof, as
 * profile.pb.gz).  The bytes go through push.c with a spool folder, so a
 * profile that cannot be sent waits on disk (bounded) for the receiver or
 * the next run.
 */
#include "profile_push.h"
#include "otlp_profile.h"
#include "push.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct cli_ppush {
    pc_ush *push; /* Pyroscope, or NULL */
    pc_ush *otlp; /* OTLP profiles, or NULL */
    rp_otlp_profile_opts oo;
    pa_cgroup_names names;
    char service[256], host[256];
    char url[2048]; /* base/ingest?name=...{...}& up to from */
    char tmp[4096]; /* where the delta is written */
    uint64_t every_ns, last_mono, period_ns;
    time_t last_unix;
    pc_delta delta;
    unsigned long pushes;
};

int cli_ppush_target(void *value, const char *cmd, const char *arg)
{
    cli_ppush_args *a = value;
    if (!strncmp(arg, "pyroscope=", 10) &&
        (!strncmp(arg + 10, "http://", 7) || !strncmp(arg + 10, "https://", 8))) {
        a->pyroscope = arg + 10;
        return 0;
    }
    if (!strncmp(arg, "otlp=", 5) &&
        (!strncmp(arg + 5, "http://", 7) || !strncmp(arg + 5, "https://", 8))) {
        a->otlp = arg + 5;
        return 0;
    }
    return cli_usage_error(
        cmd, "--push: expected pyroscope=http://HOST:PORT or otlp=http://HOST:PORT, got '%s'", arg);
}

int cli_ppush_label(void *value, const char *cmd, const char *arg)
{
    cli_ppush_args *a = value;
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || strcspn(arg, "{},") < strlen(arg))
        return cli_usage_error(cmd, "--push-label: expected NAME=VALUE without {},, got '%s'", arg);
    if (a->nlabels == sizeof(a->labels) / sizeof(a->labels[0]))
        return cli_usage_error(cmd, "--push-label: at most 16");
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
static void put_name(FILE *f, const cli_ppush_args *a, const char *service, pid_t pid,
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

/* The application's name: --service-name, else the container's, the
 * process's (comm, or /proc/PID/comm), the host's. */
static void service_of(cli_ppush *x, const cli_ppush_args *a, pid_t pid, const char *comm,
                       const char *procfs)
{
    char own[64] = "";
    if (comm && strrchr(comm, '/'))
        comm = strrchr(comm, '/') + 1;
    if (!comm && pid > 0) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%d/comm", procfs, (int)pid);
        FILE *cf = fopen(path, "r");
        if (cf && fgets(own, sizeof(own), cf))
            own[strcspn(own, "\n")] = '\0';
        if (cf)
            fclose(cf);
        comm = own;
    }
    snprintf(x->host, sizeof(x->host), "host");
    gethostname(x->host, sizeof(x->host) - 1);
    snprintf(x->service, sizeof(x->service), "%s",
             a->service                   ? a->service
             : x->names.container_name[0] ? x->names.container_name
             : pid > 0 && comm && *comm   ? comm
                                          : x->host);
}

/* Starts the pusher of one receiver, its spool a folder of dir. */
static int start_one(const char *cmd, const char *name, const char *url, const char *ctype,
                     const char *dir, pc_ush **out)
{
    char spool[1200];
    snprintf(spool, sizeof(spool), "%s/%s", dir, name);
    pc_ush_cfg cfg = {.cmd = cmd,
                      .name = name,
                      .url = url,
                      .content_type = ctype,
                      .queue_max = 360,
                      .spool_dir = spool};
    return pc_ush_start(&cfg, out);
}

int cli_ppush_start(const cli_ppush_args *a, const char *cmd, pid_t pid, const char *comm,
                    const char *procfs, uint64_t period_ns, cli_ppush **out)
{
    *out = NULL;
    if (!a->pyroscope && !a->otlp)
        return 0;
    cli_ppush *x = calloc(1, sizeof(*x));
    if (!x) {
        cli_error(cmd, "out of memory");
        return CLI_EXIT_FAIL;
    }
    procfs = procfs ? procfs : "/proc";
    names_of(procfs, pid, &x->names);
    service_of(x, a, pid, comm, procfs);
    x->oo = (rp_otlp_profile_opts){
        .service_name = x->service, .host_name = x->host, .pid = pid, .names = &x->names};
    char spool[1024], otlp_url[2048];
    const char *dir = a->spool ? a->spool : spool_default(spool, sizeof(spool));
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        cli_error(cmd, "--push-spool %s: %s", dir, strerror(errno));
        free(x);
        return CLI_EXIT_FAIL;
    }
    FILE *f = fmemopen(x->url, sizeof(x->url) - 1, "w");
    if (f && a->pyroscope) {
        size_t n = strlen(a->pyroscope);
        fprintf(f, "%.*s/ingest?name=", (int)(n && a->pyroscope[n - 1] == '/' ? n - 1 : n),
                a->pyroscope);
        put_name(f, a, x->service, pid, &x->names);
        fputs("&format=pprof&spyName=powerapi", f);
    }
    if (f)
        fclose(f);
    if (a->otlp) { /* the path of OTLP/HTTP profiles added when URL has none */
        const char *path = strchr(a->otlp + (a->otlp[4] == 's' ? 8 : 7), '/');
        snprintf(otlp_url, sizeof(otlp_url), "%s%s", a->otlp,
                 !path      ? "/v1development/profiles"
                 : !path[1] ? "v1development/profiles"
                            : "");
    }
    snprintf(x->tmp, sizeof(x->tmp), "%s/.delta-%d", dir, (int)getpid());
    x->every_ns = a->every_ns ? a->every_ns : 10000000000ull;
    x->period_ns = period_ns;
    x->last_mono = cli_mono_ns();
    x->last_unix = time(NULL);
    int rc = 0;
    if (a->pyroscope)
        rc = start_one(cmd, "pyroscope", x->url, "application/octet-stream", dir, &x->push);
    if (rc == 0 && a->otlp)
        rc = start_one(cmd, "otlp", otlp_url, "application/x-protobuf", dir, &x->otlp);
    if (rc < 0 || (mkdir(x->tmp, 0700) < 0 && errno != EEXIST)) {
        cli_error(cmd, "--push: %s", strerror(rc < 0 ? -rc : errno));
        pc_ush_stop(x->push, 0);
        pc_ush_stop(x->otlp, 0);
        free(x);
        return CLI_EXIT_FAIL;
    }
    *out = x;
    return 0;
}

/* Writes the delta since the last push and queues it for [last, now]. */
static void push_now(cli_ppush *x, pc_prof *prof)
{
    uint64_t mono = cli_mono_ns();
    time_t now = time(NULL);
    int rc = pc_prof_write_delta(prof, x->tmp, x->period_ns, (double)(mono - x->last_mono) / 1e9,
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
    if (body && len && x->otlp) {
        uint8_t *req;
        size_t rlen;
        x->oo.time_unix_ns = (uint64_t)x->last_unix * 1000000000ull;
        if (rp_otlp_profile_encode(body, len, &x->oo, &req, &rlen) == 0)
            pc_ush_submit(x->otlp, req, rlen, NULL);
    }
    if (body && len && x->push)
        pc_ush_submit(x->push, body, len, url);
    else
        free(body);
    x->pushes++;
    x->last_mono = mono;
    x->last_unix = until;
}

void cli_ppush_window(cli_ppush *x, pc_prof *prof)
{
    if (x && cli_mono_ns() - x->last_mono >= x->every_ns)
        push_now(x, prof);
}

void cli_ppush_end(cli_ppush *x, pc_prof *prof)
{
    if (!x)
        return;
    push_now(x, prof);
    pc_ush_stop(x->push, 1000000000ull);
    pc_ush_stop(x->otlp, 1000000000ull);
    rmdir(x->tmp);
    free(x->delta.last);
    free(x);
}
