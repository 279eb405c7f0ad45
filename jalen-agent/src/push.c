/*
 * push.c - push=pyroscope=URL and push=otlp=URL: every push-every (10 s by
 * default) the pprof of what the JVM's methods were charged since the
 * last push (per method and line, as profile.pb.gz) goes to Pyroscope's
 * ingest API or as OTLP profiles, kept in a spool folder until it is sent
 * (report/ppush.h: the same session as `powerapi profile --push`).  Runs
 * on the agent thread at the end of each window; the sending is on
 * push.h's own threads, so a slow receiver never delays a window.
 */
#include "jalen.h"
#include "ppush.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rp_ppush *jl_push_session;
static pc_delta jl_push_delta;

/* The application's name: the main class (the last argument before the
 * program's own that is not an option or an option's value), or the
 * jar's name without ".jar". */
static void jl_push_main(char *out, size_t len)
{
    char buf[8192];
    FILE *f = fopen("/proc/self/cmdline", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    static const char *const with_value[] = {
        "-cp", "-classpath", "--class-path", "-p", "--module-path", "--add-modules", NULL};
    out[0] = '\0';
    int skip = 1, jar = 0; /* argv[0]: the launcher */
    for (size_t at = 0; at < n; at += strlen(buf + at) + 1) {
        const char *a = buf + at;
        if (skip) {
            skip = 0;
            continue;
        }
        if (jar || a[0] != '-') {
            const char *base = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
            size_t bl = strlen(base);
            int cut = jar && bl > 4 && !strcmp(base + bl - 4, ".jar");
            snprintf(out, len, "%.*s", (int)(cut ? bl - 4 : bl), base);
            return;
        }
        jar = !strcmp(a, "-jar");
        for (int i = 0; with_value[i]; i++)
            skip |= !strcmp(a, with_value[i]);
    }
}

/* The container or pod of this process, from its cgroup v2 line. */
static void jl_push_names(pa_cgroup_names *out)
{
    memset(out, 0, sizeof(*out));
    char line[1024];
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *cg = strchr(line, ':') ? strchr(strchr(line, ':') + 1, ':') : NULL;
        if (cg && pa_cgroup_parse(cg + 1, out) == 0 && (out->container_id[0] || out->pod_uid[0]))
            break;
    }
    if (f)
        fclose(f);
}

int jl_push_start(const jl_opts *o)
{
    if (jl_push_session || (!o->push_pyroscope && !o->push_otlp))
        return 0;
    pa_cgroup_names names;
    jl_push_names(&names);
    char main[256], service[256];
    jl_push_main(main, sizeof(main));
    rp_ppush_service(service, sizeof(service), &names, main[0] ? main : "java");
    rp_ppush_cfg c = {.prog = "jalen",
                      .cmd = "push",
                      .pyroscope = o->push_pyroscope,
                      .otlp = o->push_otlp,
                      .every_ns = o->push_every_ns,
                      .service = o->service_name ? o->service_name : service,
                      .spool = o->push_spool,
                      .labels = (const char *const *)o->push_labels,
                      .nlabels = o->npush_labels,
                      .pid = getpid(),
                      .names = &names};
    char why[512];
    int rc = rp_ppush_start(&c, &jl_push_session, why, sizeof(why));
    if (rc < 0)
        fprintf(stderr, "jalen: push: %s; the profile is not pushed\n", why);
    return rc;
}

void jl_push_window(int final)
{
    if (!jl_push_session || (!final && !rp_ppush_due(jl_push_session)))
        return;
    if (jl_write_pprof_delta(rp_ppush_dir(jl_push_session), &jl_push_delta,
                             rp_ppush_since_s(jl_push_session)) == 0)
        rp_ppush_send(jl_push_session);
    if (final) {
        rp_ppush_end(jl_push_session, 1000000000ull);
        jl_push_session = NULL;
        free(jl_push_delta.last);
        memset(&jl_push_delta, 0, sizeof(jl_push_delta));
    }
}
