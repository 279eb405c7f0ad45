/*
 * ppush.c - a continuous profiler's pushes (ppush.h).
 */
#include "ppush.h"
#include "otlp_profile.h"
#include "push.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct rp_ppush {
    rp_push *push; /* Pyroscope, or NULL */
    rp_push *otlp; /* OTLP profiles, or NULL */
    rp_otlp_profile_opts oo;
    pa_cgroup_names names;
    char service[256], host[256];
    char url[2048]; /* base/ingest?name=...{...}& up to from */
    char dir[4096]; /* where the caller writes the delta */
    uint64_t every_ns, last_mono;
    time_t last_unix;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
static void put_name(FILE *f, const rp_ppush *x, const rp_ppush_cfg *c)
{
    put_enc(f, x->service, 1);
    int first = 1;
    put_label(f, &first, "host", x->host);
    char pids[16];
    snprintf(pids, sizeof(pids), "%d", (int)c->pid);
    if (c->pid > 0)
        put_label(f, &first, "pid", pids);
    put_label(f, &first, "container_id", x->names.container_id);
    put_label(f, &first, "container_name", x->names.container_name);
    put_label(f, &first, "pod", x->names.pod_name);
    put_label(f, &first, "namespace", x->names.pod_namespace);
    put_label(f, &first, "unit", x->names.unit);
    for (size_t i = 0; i < c->nlabels; i++) {
        const char *eq = strchr(c->labels[i], '=');
        if (!eq)
            continue;
        char k[128];
        snprintf(k, sizeof(k), "%.*s", (int)(eq - c->labels[i]), c->labels[i]);
        put_label(f, &first, k, eq + 1);
    }
    if (!first)
        put_enc(f, "}", 0);
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

void rp_ppush_service(char *out, size_t len, const pa_cgroup_names *names, const char *comm)
{
    char host[256] = "host";
    gethostname(host, sizeof(host) - 1);
    if (comm && strrchr(comm, '/'))
        comm = strrchr(comm, '/') + 1;
    snprintf(out, len, "%s",
             names && names->container_name[0] ? names->container_name
             : comm && *comm                   ? comm
                                               : host);
}

/* Starts the pusher of one receiver, its spool a folder of dir. */
static int start_one(const rp_ppush_cfg *c, const char *name, const char *url, const char *ctype,
                     const char *dir, rp_push **out)
{
    char spool[1200];
    snprintf(spool, sizeof(spool), "%s/%s", dir, name);
    rp_push_cfg cfg = {.prog = c->prog,
                       .cmd = c->cmd,
                       .name = name,
                       .url = url,
                       .content_type = ctype,
                       .queue_max = 360,
                       .spool_dir = spool};
    return rp_push_start(&cfg, out);
}

/* The Pyroscope URL up to from= in x->url, and the OTLP one in otlp. */
static void urls(rp_ppush *x, const rp_ppush_cfg *c, char *otlp, size_t len)
{
    FILE *f = fmemopen(x->url, sizeof(x->url) - 1, "w");
    if (f && c->pyroscope) {
        size_t n = strlen(c->pyroscope);
        fprintf(f, "%.*s/ingest?name=", (int)(n && c->pyroscope[n - 1] == '/' ? n - 1 : n),
                c->pyroscope);
        put_name(f, x, c);
        fputs("&format=pprof&spyName=powerapi", f);
    }
    if (f)
        fclose(f);
    if (c->otlp) { /* the path of OTLP/HTTP profiles added when URL has none */
        const char *scheme = strstr(c->otlp, "://");
        const char *path = strchr(scheme ? scheme + 3 : c->otlp, '/');
        snprintf(otlp, len, "%s%s", c->otlp,
                 !path      ? "/v1development/profiles"
                 : !path[1] ? "v1development/profiles"
                            : "");
    }
}

int rp_ppush_start(const rp_ppush_cfg *c, rp_ppush **out, char *why, size_t whylen)
{
    *out = NULL;
    rp_ppush *x = calloc(1, sizeof(*x));
    if (!x) {
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    if (c->names)
        x->names = *c->names;
    snprintf(x->host, sizeof(x->host), "host");
    gethostname(x->host, sizeof(x->host) - 1);
    snprintf(x->service, sizeof(x->service), "%s", c->service ? c->service : x->host);
    x->oo = (rp_otlp_profile_opts){
        .service_name = x->service, .host_name = x->host, .pid = c->pid, .names = &x->names};
    char spool[1024], otlp_url[2048];
    const char *dir = c->spool ? c->spool : spool_default(spool, sizeof(spool));
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        int e = errno;
        snprintf(why, whylen, "spool folder %s: %s", dir, strerror(e));
        free(x);
        return -e;
    }
    urls(x, c, otlp_url, sizeof(otlp_url));
    snprintf(x->dir, sizeof(x->dir), "%s/.delta-%d", dir, (int)getpid());
    x->every_ns = c->every_ns ? c->every_ns : 10000000000ull;
    x->last_mono = mono_ns();
    x->last_unix = time(NULL);
    int rc = 0;
    if (c->pyroscope)
        rc = start_one(c, "pyroscope", x->url, "application/octet-stream", dir, &x->push);
    if (rc == 0 && c->otlp)
        rc = start_one(c, "otlp", otlp_url, "application/x-protobuf", dir, &x->otlp);
    if (rc == 0 && mkdir(x->dir, 0700) < 0 && errno != EEXIST)
        rc = -errno;
    if (rc < 0) {
        snprintf(why, whylen, "%s", strerror(-rc));
        rp_push_stop(x->push, 0);
        rp_push_stop(x->otlp, 0);
        free(x);
        return rc;
    }
    *out = x;
    return 0;
}

int rp_ppush_due(const rp_ppush *x)
{
    return x && mono_ns() - x->last_mono >= x->every_ns;
}

double rp_ppush_since_s(const rp_ppush *x)
{
    return (double)(mono_ns() - x->last_mono) / 1e9;
}

const char *rp_ppush_dir(const rp_ppush *x)
{
    return x->dir;
}

/* dir/profile.pb.gz read whole (malloc'd, *len), then removed. */
static char *slurp(const char *dir, size_t *len)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/profile.pb.gz", dir);
    FILE *f = fopen(path, "rb");
    struct stat st;
    char *body = NULL;
    *len = 0;
    if (f && fstat(fileno(f), &st) == 0 && (body = malloc((size_t)st.st_size + 1)))
        *len = fread(body, 1, (size_t)st.st_size, f);
    if (f)
        fclose(f);
    unlink(path);
    return body;
}

int rp_ppush_send(rp_ppush *x)
{
    uint64_t mono = mono_ns();
    time_t now = time(NULL);
    size_t len;
    char *body = slurp(x->dir, &len);
    /* Pyroscope's times are whole seconds: until > from */
    time_t until = now > x->last_unix ? now : x->last_unix + 1;
    char url[2200];
    snprintf(url, sizeof(url), "%s&from=%lld&until=%lld", x->url, (long long)x->last_unix,
             (long long)until);
    int rc = body && len ? 0 : -ENOENT;
    if (rc == 0 && x->otlp) {
        uint8_t *req;
        size_t rlen;
        x->oo.time_unix_ns = (uint64_t)x->last_unix * 1000000000ull;
        if (rp_otlp_profile_encode(body, len, &x->oo, &req, &rlen) == 0)
            rp_push_submit(x->otlp, req, rlen, NULL);
    }
    if (rc == 0 && x->push)
        rp_push_submit(x->push, body, len, url);
    else
        free(body);
    x->last_mono = mono;
    x->last_unix = until;
    return rc;
}

void rp_ppush_end(rp_ppush *x, uint64_t flush_ns)
{
    if (!x)
        return;
    rp_push_stop(x->push, flush_ns);
    rp_push_stop(x->otlp, flush_ns);
    rmdir(x->dir);
    free(x);
}
