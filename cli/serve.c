/*
 * serve.c - `powerapi serve`: a Prometheus exporter (libmicrohttpd).
 *
 * The metrics page is formatted once per window, off the request path,
 * into one MHD response object that every scrape of that window shares
 * (MHD counts its references), so a scrape costs no formatting and no
 * copy, and memory stays bounded whatever the number of scrapes: one page
 * plus at most --max-connections connections of a bounded memory pool
 * each.  Windows come from our own sampler (pa_start callback) or from a
 * daemon's ring (the main loop aggregates every new window each interval).
 */
#include "cli.h"
#include "otlp_export.h"
#include "prometheus.h"
#include "vmgroups.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CMD "serve"
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* what the page holds (report/prometheus.h) */
typedef rp_prom_opts serve_opts;

typedef struct serve {
    serve_opts o;
    pthread_mutex_t lock;
    struct MHD_Response *page;        /* current /metrics, NULL before a window */
    struct MHD_Response *unavailable; /* 503 text when no data */
    char why[512];                    /* why there is no page (ring dead...) */
    unsigned long scrapes;            /* under lock */
    rp_vmgroups *vmg;                 /* --vms: the VM series */
    bool ring_vms;                    /* --vms --ring: from the ring's records */
    cli_otlp *otlp;                   /* --otlp: each window pushed too */
} serve;

static const char serve_about[] =
    "\n"
    "Serves the power of the processes, cgroups and the whole machine at "
    "/metrics\nin the Prometheus text format, for a Prometheus server to "
    "scrape.  --interval is\nthe sampling period, or with --ring how often a "
    "page is made from the ring's\nnew windows.\n";

static const char serve_footer[] = "Metrics: powerapi_process_power_watts{pid,comm}, "
                                   "powerapi_process_energy_joules_total{pid,comm},\n"
                                   "powerapi_cgroup_power_watts{cgroup}, "
                                   "powerapi_system_power_watts{component},\n"
                                   "powerapi_system_energy_joules_total, powerapi_window_seconds, "
                                   "powerapi_info{formula,cpu_source,assumed};\n"
                                   "with --carbon-intensity: "
                                   "powerapi_process_co2e_grams_total{pid,comm},\n"
                                   "powerapi_cgroup_co2e_grams_total{cgroup}, "
                                   "powerapi_system_co2e_grams_total,\n"
                                   "powerapi_carbon_intensity_grams_per_kwh (the figure "
                                   "assumed);\n"
                                   "with perf counters in the ring: "
                                   "powerapi_process_perf_events_per_second{pid,comm,event},\n"
                                   "powerapi_cgroup_perf_events_per_second{cgroup,event};\n"
                                   "with a GPU: powerapi_gpu_power_watts, "
                                   "powerapi_gpu_idle_power_watts and\n"
                                   "powerapi_gpu_energy_joules_total"
                                   "{index,uuid,name,vendor,bus,source},\n"
                                   "powerapi_process_gpu_power_watts{pid,comm}, "
                                   "powerapi_cgroup_gpu_power_watts{cgroup} and their\n"
                                   "_energy_joules_total;\n"
                                   "with --vms: powerapi_vm_power_watts, "
                                   "powerapi_vm_energy_joules_total,\n"
                                   "powerapi_vm_vcpu_power_watts and "
                                   "powerapi_vm_vcpu_energy_joules_total\n"
                                   "{vm_name,vm_uuid,hypervisor,node}.\n";

/* ------------------------------------------------------------------ */
/* HTTP                                                                */
/* ------------------------------------------------------------------ */

static struct MHD_Response *text_response(const char *text)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (resp)
        MHD_add_response_header(resp, "Content-Type", CONTENT_TYPE);
    return resp;
}

/* Installs a new page (or a 503 reason when page_text is NULL). */
static void serve_publish(serve *s, char *page_text, size_t len, const char *why)
{
    struct MHD_Response *page = NULL, *unav = NULL;
    if (page_text) {
        page = MHD_create_response_from_buffer(len, page_text, MHD_RESPMEM_MUST_FREE);
        if (!page) {
            free(page_text);
            return;
        }
        MHD_add_response_header(page, "Content-Type", CONTENT_TYPE);
    } else {
        char msg[600];
        snprintf(msg, sizeof(msg), "%s\n", why ? why : "unavailable");
        unav = text_response(msg);
    }
    pthread_mutex_lock(&s->lock);
    struct MHD_Response *old_page = s->page, *old_unav = NULL;
    if (page) {
        s->page = page;
    } else {
        s->page = NULL;
        old_unav = s->unavailable;
        s->unavailable = unav;
        snprintf(s->why, sizeof(s->why), "%s", why);
    }
    pthread_mutex_unlock(&s->lock);
    /* Connections still sending the old page hold their own reference. */
    if (old_page)
        MHD_destroy_response(old_page);
    if (old_unav)
        MHD_destroy_response(old_unav);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    serve *s = cls;
    static const char root_page[] = "powerapi exporter: metrics at /metrics\n";
    (void)con_cls;
    /* Every request is answered at its first call, before any body: MHD
     * then discards the body and closes the connection if need be. */
    *upload_size = 0;
    enum MHD_Result ret;
    struct MHD_Response *resp;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        resp = text_response("only GET and HEAD are supported\n");
        if (!resp)
            return MHD_NO;
        MHD_add_response_header(resp, "Allow", "GET, HEAD");
        ret = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    if (strcmp(url, "/metrics") == 0) {
        pthread_mutex_lock(&s->lock);
        s->scrapes++;
        if (s->page) {
            ret = MHD_queue_response(c, MHD_HTTP_OK, s->page);
        } else if (s->unavailable) {
            ret = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, s->unavailable);
        } else {
            resp = text_response("no window yet; retry after one interval\n");
            ret = resp ? MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, resp) : MHD_NO;
            if (resp)
                MHD_destroy_response(resp);
        }
        pthread_mutex_unlock(&s->lock);
        return ret;
    }
    int found = strcmp(url, "/") == 0;
    resp = text_response(found ? root_page : "not found; metrics at /metrics\n");
    if (!resp)
        return MHD_NO;
    ret = MHD_queue_response(c, found ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND, resp);
    MHD_destroy_response(resp);
    return ret;
}

char *cli_serve_page(const pa_report *r, size_t max_cgroups, const char *node,
                     double carbon_g_per_kwh, size_t *len)
{
    serve_opts o;
    memset(&o, 0, sizeof(o));
    o.max_cgroups = max_cgroups;
    o.carbon_g_per_kwh = carbon_g_per_kwh;
    snprintf(o.node, sizeof(o.node), "%s", node ? node : "");
    return rp_prom_page(r, &o, len);
}

/* One HTTP exchange through serve's request handling, without a
 * listening socket: MHD parses the raw request from one end of a socket
 * pair and on_request answers it, with r's page (or none yet) as
 * /metrics.  For the fuzz target (tests/fuzz/fuzz_serve.c). */
int cli_serve_exchange(const pa_report *r, const void *req, size_t len, char **resp,
                       size_t *resp_len)
{
    serve s = {.o = {.top = 3}};
    pthread_mutex_init(&s.lock, NULL);
    int rc = -ENOMEM;
    if (r) {
        size_t plen;
        char *page = rp_prom_page(r, &s.o, &plen);
        if (!page)
            goto out;
        serve_publish(&s, page, plen, NULL);
    }
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, on_request, &s,
                                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
                                            MHD_OPTION_CONNECTION_TIMEOUT, 1u, MHD_OPTION_END);
    if (!d)
        goto out;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
        rc = -errno;
        MHD_stop_daemon(d);
        goto out;
    }
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (MHD_add_connection(d, sv[0], (struct sockaddr *)&peer, sizeof(peer)) != MHD_YES) {
        rc = -EIO;
        close(sv[0]);
        close(sv[1]);
        MHD_stop_daemon(d);
        goto out;
    }
    FILE *f = open_memstream(resp, resp_len);
    if (!f) {
        close(sv[1]);
        MHD_stop_daemon(d);
        goto out;
    }
    size_t sent = 0;
    bool eof = false;
    for (int idle = 0; !eof && idle < 64;) {
        bool moved = false;
        if (sent < len) {
            ssize_t w = send(sv[1], (const char *)req + sent, len - sent, MSG_NOSIGNAL);
            if (w > 0) {
                sent += (size_t)w;
                moved = true;
                if (sent == len)
                    shutdown(sv[1], SHUT_WR);
            }
        }
        if (len == 0 && sent == 0) {
            shutdown(sv[1], SHUT_WR);
            sent = 1; /* shut once */
        }
        MHD_run(d);
        char buf[4096];
        ssize_t n;
        while ((n = recv(sv[1], buf, sizeof(buf), 0)) > 0) {
            fwrite(buf, 1, (size_t)n, f);
            moved = true;
        }
        if (n == 0)
            eof = true;
        idle = moved ? 0 : idle + 1;
    }
    fclose(f);
    close(sv[1]);
    MHD_stop_daemon(d);
    rc = 0;
out:
    if (s.page)
        MHD_destroy_response(s.page);
    if (s.unavailable)
        MHD_destroy_response(s.unavailable);
    pthread_mutex_destroy(&s.lock);
    return rc;
}

/* "ADDR:PORT", "[V6]:PORT", ":PORT" (loopback) or "PORT" (loopback). */
/* Why the server could not listen on ss, in one line: a bind of our own
 * gives the reason libmicrohttpd does not pass on. */
static void listen_error(const char *listen, const struct sockaddr_storage *ss, socklen_t sslen,
                         int mhd_errno)
{
    int e = mhd_errno, one = 1;
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (const struct sockaddr *)ss, sslen) < 0)
            e = errno;
        close(fd);
    }
    unsigned port = ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
                                                    : ((const struct sockaddr_in *)ss)->sin_port);
    const char *why = e == EADDRINUSE      ? "another process listens there; ss -ltnp shows which"
                      : e == EADDRNOTAVAIL ? "not an address of this machine"
                      : e == EACCES && port < 1024
                          ? "ports below 1024 need root or CAP_NET_BIND_SERVICE; use a port "
                            "of 1024 or above"
                          : "address in use, or not an address of this machine?";
    cli_error(CMD, "cannot listen on %s: %s (%s)", listen, strerror(e), why);
}

static int parse_listen(const char *arg, struct sockaddr_storage *ss, socklen_t *sslen)
{
    char host[128] = "127.0.0.1";
    const char *port;
    const char *colon = strrchr(arg, ':');
    if (arg[0] == '[') {
        const char *end = strchr(arg, ']');
        if (!end || end[1] != ':' || (size_t)(end - arg - 1) >= sizeof(host))
            return -EINVAL;
        memcpy(host, arg + 1, (size_t)(end - arg - 1));
        host[end - arg - 1] = '\0';
        port = end + 2;
    } else if (colon) {
        if ((size_t)(colon - arg) >= sizeof(host))
            return -EINVAL;
        if (colon != arg) {
            memcpy(host, arg, (size_t)(colon - arg));
            host[colon - arg] = '\0';
        }
        port = colon + 1;
    } else {
        port = arg;
    }
    char *end;
    errno = 0;
    unsigned long p = strtoul(port, &end, 10);
    if (!*port || *end || *port < '0' || *port > '9')
        return -EINVAL;
    if (errno || p > 65535)
        return -ERANGE;
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)p);
        *sslen = sizeof(*in4);
    } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)p);
        *sslen = sizeof(*in6);
    } else if (strcmp(host, "localhost") == 0) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)p);
        in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *sslen = sizeof(*in4);
    } else {
        return -EINVAL;
    }
    return 0;
}

/* --vms: the VM table, scanned once before the first tick (the
 * hypervisors' threads watched from the start).  0 or the error. */
static int start_vms(serve *s, pa_ctx *ctx, const cli_ctx *co)
{
    int rc = rp_vmgroups_new(&s->vmg, co->copts.procfs, co->copts.rootfs);
    return rc < 0 ? rc : rp_vmgroups_scan(s->vmg, ctx);
}

static void sampler_cb(pa_ctx *ctx, const pa_report *r, void *user)
{
    serve *s = user;
    size_t len = 0;
    const pa_report *vr = NULL;
    s->o.vms = NULL;
    if (s->vmg && rp_vmgroups_scan(s->vmg, ctx) == 0 && rp_vmgroups_report(s->vmg, r, &vr) == 0)
        s->o.vms = vr; /* a failed scan or grouping: a page without VMs */
    char *text = rp_prom_page(r, &s->o, &len);
    if (text)
        serve_publish(s, text, len, NULL);
    cli_otlp_window(s->otlp, r, &s->o);
}

/* Ring mode: one page per interval from every window since the last, or
 * from the windows of the last span_ns. */
typedef struct ring_src {
    const char *name;
    uint64_t span_ns;
    pa_ring_reader *r;
    uint64_t seq;
    int last_err;
} ring_src;

/* The span view: -EAGAIN when no window is new (or -EOWNERDEAD when the
 * writer is gone), else the last span_ns of windows. */
static int ring_span(ring_src *rs, const pa_report **rep)
{
    pa_ring_info info;
    int rc = pa_ring_get_info(rs->r, &info);
    if (rc < 0)
        return rc;
    if (info.newest == rs->seq) {
        if (!info.alive)
            return -EOWNERDEAD; /* the message is set */
        return -EAGAIN;
    }
    uint64_t seq = 0;
    rc = pa_ring_aggregate(rs->r, &seq, rs->span_ns, rep);
    if (rc == 0)
        rs->seq = seq;
    return rc;
}

static void ring_refresh(serve *s, ring_src *rs)
{
    int rc = 0;
    if (!rs->r) {
        rc = pa_ring_open(rs->name, &rs->r);
        if (rc == 0) {
            rs->seq = 0;
            /* Start with the newest window alone (or the span). */
            const pa_report *rep;
            if ((rs->span_ns ? ring_span(rs, &rep) : pa_ring_read(rs->r, &rs->seq, &rep)) == 0) {
                size_t len = 0;
                s->o.vms = s->ring_vms ? rep : NULL;
                char *text = rp_prom_page(rep, &s->o, &len);
                if (text)
                    serve_publish(s, text, len, NULL);
                cli_otlp_window(s->otlp, rep, &s->o);
            }
        }
    } else {
        const pa_report *rep;
        rc = rs->span_ns ? ring_span(rs, &rep) : pa_ring_aggregate(rs->r, &rs->seq, 0, &rep);
        if (rc == 0) {
            size_t len = 0;
            s->o.vms = s->ring_vms ? rep : NULL;
            char *text = rp_prom_page(rep, &s->o, &len);
            if (text)
                serve_publish(s, text, len, NULL);
            cli_otlp_window(s->otlp, rep, &s->o);
        } else if (rc == -EAGAIN) {
            rc = 0; /* keep the last page */
        } else if (rc == -EOWNERDEAD) {
            pa_ring_close(rs->r);
            rs->r = NULL;
        }
    }
    if (rc < 0) {
        const char *msg = cli_errmsg(rc);
        if (rc != rs->last_err)
            cli_error(CMD, "%s", msg);
        serve_publish(s, NULL, 0, msg);
    } else if (rs->last_err) {
        fprintf(stderr, "%s " CMD ": ring '%s' is back\n", cli_prog, rs->name);
    }
    rs->last_err = rc;
}

/* Lets --max-connections sockets open when the soft limit is lower. */
static void raise_nofile(unsigned long want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want + 64) {
        rl.rlim_cur = rl.rlim_max < want + 64 ? rl.rlim_max : want + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int set_min_watts(void *v, const char *cmd, const char *arg)
{
    char *end;
    errno = 0;
    double w = strtod(arg, &end);
    if (end == arg || *end || errno || !(w >= 0) || isinf(w))
        return cli_usage_error(cmd, "--min-watts: expected watts >= 0, got '%s'", arg);
    *(double *)v = w;
    return 0;
}

/* Process series of a page by default: the 50 most powerful, the rest in
 * one series (a platform team scrapes every machine: a bounded page). */
#define PA_SERVE_MAX_PROCESSES 50

typedef struct serve_args {
    const char *listen, *ring, *node;
    uint64_t timeout, span;
    unsigned long top, maxconn, max_cgroups, max_processes;
    bool vms;
    cli_otlp_args otlp;
} serve_args;

/* Parses the options into a, s->o and co.  0, -1 (help printed) or the
 * exit status. */
static int parse_args(serve_args *a, serve *s, cli_ctx *co, int argc, char **argv)
{
    const cli_opt opts[] = {
        CLI_OPT_GROUP("Options:"),
        CLI_OPT_STRING('l', "listen", &a->listen, "ADDR:PORT",
                       "address to listen on (default 127.0.0.1:9464;\n"
                       "[::1]:9464 for IPv6; other addresses than\n"
                       "loopback only when given)"),
        CLI_OPT_STRING('r', "ring", &a->ring, "NAME",
                       "read windows from a daemon's ring instead of\n"
                       "sampling"),
        CLI_OPT_DURATION(0, "window", &a->span,
                         "with --ring: each page averages the windows of\n"
                         "the last DURATION (a 10s view), not those since\n"
                         "the last page",
                         0, 0),
        CLI_OPT_UINT('t', "top", &a->top, "N",
                     "at most N process and N cgroup series, the most\n"
                     "powerful (the other processes in pid=\"[other]\")",
                     1, 1000000),
        CLI_OPT_UINT(0, "max-processes", &a->max_processes, "N",
                     "at most N process series (default 50); the others\n"
                     "are summed in one series, pid=\"[other]\"",
                     1, 10000000),
        CLI_OPT_CALLBACK('w', "min-watts", &s->o.min_watts, "W",
                         "no process or cgroup series below W watts", set_min_watts),
        CLI_OPT_UINT(0, "max-cgroups", &a->max_cgroups, "N",
                     "at most N cgroup series (default 1000); the others\n"
                     "are summed in one series, cgroup=\"[other]\"",
                     1, 10000000),
        CLI_OPT_FLAG(0, "vms", &a->vms,
                     "also a series per VM of this host (vm_name,\n"
                     "vm_uuid, hypervisor; its vCPUs' part apart), at\n"
                     "most --max-cgroups of them"),
        CLI_OPT_STRING(0, "node", &a->node, "NAME",
                       "the node label of the cgroup series (default:\n"
                       "this machine's host name)"),
        CLI_OPT_UINT(0, "max-connections", &a->maxconn, "N",
                     "concurrent connections (default 1000)", 1, 100000),
        CLI_OPT_DURATION(0, "connection-timeout", &a->timeout,
                         "idle connections are closed after (default 10s)", 1000000000ull, 0),
        CLI_OPT_CONTEXT(co, CLI_CTXOPT_ALL | CLI_CTXOPT_CARBON),
        CLI_OPT_OTLP(&a->otlp),
        CLI_OPT_END,
    };
    const cli_cmd c = {.name = CMD,
                       .usage = "%s " CMD " [OPTIONS]\n",
                       .about = serve_about,
                       .footer = serve_footer,
                       .opts = opts};
    int first;
    int st = cli_parse(&c, argc, argv, &first);
    if (st)
        return st;
    s->o.top = a->top;
    s->o.carbon_g_per_kwh = co->carbon_g_per_kwh;
    s->o.max_cgroups = a->max_cgroups ? a->max_cgroups : 1000;
    s->o.max_processes = a->max_processes ? a->max_processes : PA_SERVE_MAX_PROCESSES;
    if (a->node)
        snprintf(s->o.node, sizeof(s->o.node), "%s", a->node);
    else if (gethostname(s->o.node, sizeof(s->o.node) - 1) < 0)
        snprintf(s->o.node, sizeof(s->o.node), "unknown");
    const char *given = cli_ctx_sampling_option(co);
    if (a->ring && given)
        return cli_usage_error(CMD,
                               "--ring reads what the daemon samples: no "
                               "%s with it (modules and roots are the "
                               "daemon's)",
                               given);
    s->ring_vms = a->vms && a->ring; /* the VM records of a 'daemon --vms' */
    if (a->span && !a->ring)
        return cli_usage_error(CMD, "--window needs --ring (a daemon's "
                                    "windows to average)");
    return 0;
}

/* Starts the HTTP server on ss (one epoll thread) and says where, on
 * stdout (one line, for scripts that asked for port 0) and, beyond
 * loopback, a warning on stderr; NULL after saying why. */
static struct MHD_Daemon *http_start(const serve_args *a, serve *s,
                                     const struct sockaddr_storage *ss, socklen_t sslen)
{
    raise_nofile(a->maxconn);
    /* One polling thread, not a pool: libmicrohttpd splits
     * MHD_OPTION_CONNECTION_LIMIT among a pool's workers, so a worker that
     * wins more than its share of accepts closes connections while the
     * total is still under --max-connections.  One epoll thread makes the
     * limit exact.  (Two loaded CI runs lost scrapes of a 1000-connection
     * burst, one with the pool, one with this thread: the cause is still
     * open; test_serve prints how they end.) */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO;
    if (ss->ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *httpd = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)a->maxconn, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)(a->timeout / 1000000000ull), MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
    if (!httpd) {
        listen_error(a->listen, ss, sslen, errno);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(httpd, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = di ? di->port : 0;
    char addr[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, addr, sizeof(addr));
    else
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, addr, sizeof(addr));
    bool loopback = ss->ss_family == AF_INET
                        ? (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127
                        : IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    if (!loopback)
        fprintf(stderr,
                "%s " CMD ": listening beyond loopback (%s): whoever reaches "
                "this port can read the metrics\n",
                cli_prog, addr);
    printf("%s " CMD ": listening on http://%s%s%s:%u/metrics%s%s\n", cli_prog,
           ss->ss_family == AF_INET6 ? "[" : "", addr, ss->ss_family == AF_INET6 ? "]" : "", port,
           a->ring ? " from ring " : "", a->ring ? a->ring : "");
    fflush(stdout);
    return httpd;
}

/* Waits for a stop signal in sigs (SIGPIPE ignored), refreshing the ring's
 * page every interval when there is one. */
static void serve_wait(serve *s, ring_src *rs, const sigset_t *sigs, uint64_t interval)
{
    uint64_t next = cli_mono_ns() + interval;
    for (;;) {
        uint64_t now = cli_mono_ns();
        uint64_t wait = next > now ? next - now : 0;
        struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000ull),
                              .tv_nsec = (long)(wait % 1000000000ull)};
        siginfo_t si;
        int sig = sigtimedwait(sigs, &si, &ts);
        if (sig == SIGPIPE)
            continue;
        if (sig > 0)
            return;
        if (cli_mono_ns() < next)
            continue;
        next += interval;
        if (next < cli_mono_ns())
            next = cli_mono_ns() + interval;
        if (rs->name)
            ring_refresh(s, rs);
    }
}

/* Listens and serves until a stop signal in sigs (blocked by the caller). */
static int serve_run(const serve_args *a, serve *s, const cli_ctx *co, const sigset_t *sigs)
{
    const char *listen = a->listen, *ring = a->ring;
    uint64_t interval = co->interval_ns, span = a->span;
    struct sockaddr_storage ss;
    socklen_t sslen;
    int lrc = parse_listen(listen, &ss, &sslen);
    if (lrc == -ERANGE)
        return cli_usage_error(CMD, "--listen %s: the port is out of range (0 to 65535)", listen);
    if (lrc < 0)
        return cli_usage_error(CMD, "--listen: expected ADDR:PORT ([::1]:9464 for IPv6), got '%s'",
                               listen);

    pthread_mutex_init(&s->lock, NULL);

    int status = CLI_EXIT_FAIL;
    pa_ctx *ctx = NULL;
    ring_src rs = {.name = ring, .span_ns = span};
    struct MHD_Daemon *httpd = NULL;
    int rc;
    if (ring) {
        ring_refresh(s, &rs);
        if (!rs.r) /* a wrong name is better told at once */
            goto out;
    } else {
        if ((rc = cli_ctx_create(co, CMD, &ctx)) != 0) {
            status = rc;
            goto out;
        }
        if ((a->vms && (rc = start_vms(s, ctx, co)) < 0) || (rc = pa_watch_all(ctx, 1)) < 0 ||
            (rc = pa_report_cgroups(ctx, 1)) < 0 ||
            (rc = pa_start(ctx, interval, sampler_cb, s)) < 0) {
            cli_error(CMD, "%s", cli_errmsg(rc));
            goto out;
        }
    }

    httpd = http_start(a, s, &ss, sslen);
    if (!httpd)
        goto out;
    serve_wait(s, &rs, sigs, interval);
    status = CLI_EXIT_OK;

out:
    if (ctx)
        pa_stop(ctx);
    if (httpd)
        MHD_stop_daemon(httpd);
    pa_ctx_free(ctx);
    rp_vmgroups_free(s->vmg);
    pa_ring_close(rs.r);
    if (s->page)
        MHD_destroy_response(s->page);
    if (s->unavailable)
        MHD_destroy_response(s->unavailable);
    pthread_mutex_destroy(&s->lock);
    return status;
}

int cli_serve(int argc, char **argv)
{
    serve_args a = {.listen = "127.0.0.1:9464", .timeout = 10000000000ull, .maxconn = 1000};
    serve s;
    memset(&s, 0, sizeof(s));
    cli_ctx co;
    cli_ctx_init(&co);
    int status = parse_args(&a, &s, &co, argc, argv);
    /* Every signal we wait for is blocked before any thread starts: one
     * started before (the pusher's, once) takes a SIGTERM sent to the
     * process whenever the main thread is not in sigtimedwait, and dies of
     * it with its batches. */
    sigset_t sigs, old;
    cli_stop_signals(&sigs);
    sigaddset(&sigs, SIGPIPE);
    sigprocmask(SIG_BLOCK, &sigs, &old);
    if (status == 0) /* pushing stops after the sampler (serve_run) */
        status = cli_otlp_start(&a.otlp, CMD, &s.otlp);
    if (status == 0)
        status = serve_run(&a, &s, &co, &sigs);
    cli_otlp_stop(s.otlp);
    cli_ctx_fini(&co);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return status < 0 ? CLI_EXIT_OK : status;
}
