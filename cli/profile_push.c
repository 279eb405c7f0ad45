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
#include "ppush.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct cli_ppush {
    rp_ppush *session;
    uint64_t period_ns;
    pc_delta delta;
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
    pa_cgroup_names names;
    names_of(procfs, pid, &names);
    char own[64] = "", service[256];
    if (!comm && pid > 0) { /* the process's name, /proc/PID/comm */
        char path[512];
        snprintf(path, sizeof(path), "%s/%d/comm", procfs, (int)pid);
        FILE *cf = fopen(path, "r");
        if (cf && fgets(own, sizeof(own), cf))
            own[strcspn(own, "\n")] = '\0';
        if (cf)
            fclose(cf);
        comm = own;
    }
    rp_ppush_service(service, sizeof(service), &names, pid > 0 ? comm : NULL);
    rp_ppush_cfg c = {.prog = cli_prog,
                      .cmd = cmd,
                      .pyroscope = a->pyroscope,
                      .otlp = a->otlp,
                      .every_ns = a->every_ns,
                      .service = a->service ? a->service : service,
                      .spool = a->spool,
                      .labels = a->labels,
                      .nlabels = a->nlabels,
                      .pid = pid,
                      .names = &names};
    char why[512];
    if (rp_ppush_start(&c, &x->session, why, sizeof(why)) < 0) {
        cli_error(cmd, "--push: %s", why);
        free(x);
        return CLI_EXIT_FAIL;
    }
    x->period_ns = period_ns;
    *out = x;
    return 0;
}

/* Writes the delta since the last push and queues it. */
static void push_now(cli_ppush *x, pc_prof *prof, double since_s)
{
    if (pc_prof_write_delta(prof, rp_ppush_dir(x->session), x->period_ns, since_s, &x->delta) == 0)
        rp_ppush_send(x->session);
}

void cli_ppush_window(cli_ppush *x, pc_prof *prof)
{
    if (x && rp_ppush_due(x->session))
        push_now(x, prof, rp_ppush_since_s(x->session));
}

void cli_ppush_end(cli_ppush *x, pc_prof *prof)
{
    if (!x)
        return;
    push_now(x, prof, rp_ppush_since_s(x->session));
    rp_ppush_end(x->session, 1000000000ull);
    free(x->delta.last);
    free(x);
}
