/*
 * daemon.c - `powerapi daemon`: sample the whole machine once and publish
 * each tumbling window into a shared-memory ring (pa_ring_*), read by any
 * number of unprivileged front ends (monitor/top/serve --ring, bindings).
 *
 * The sampler thread publishes from the report callback; the main thread
 * only waits for signals (sigtimedwait, all of them blocked before the
 * sampler starts so it inherits the mask) and beats the heartbeat, so a
 * long interval is not mistaken for a dead daemon.
 */
#include "cli.h"
#include "otlp_export.h"
#include "vm_vsock.h"
#include "vmexport.h"
#include "vmgroups.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CMD "daemon"

/* Below this window length, RAPL-derived figures are a side channel
 * (PLATYPUS, CVE-2020-8694: energy read every few ms reveals what other
 * code computes, which is why Linux made energy_uj root-only): a ring
 * that others may read gets them only with --allow-fine-rapl. */
#define FINE_RAPL_NS 100000000ull

typedef struct daemon_state {
    pa_ring_writer *w;
    unsigned long count;     /* stop after this many windows, 0 = never */
    unsigned long published; /* atomic */
    int last_err;            /* atomic: last publish error */
    bool guard_rapl;         /* refuse windows with RAPL-derived figures */
    int refused;             /* atomic: such a window was refused */
    rp_vmgroups *vmg;        /* --vms, --export-vms: the VMs of each window */
    bool vms;                /* --vms: their records published too */
    rp_vmexport *exp;        /* --export-vms: each VM's energy for its guest */
    cli_vsock *vsock;        /* --export-vsock: the same over AF_VSOCK */
    char exp_err[512];       /* the last export error, said by the main thread */
    int exp_failed;          /* atomic: exp_err holds a new error */
    cli_otlp_args otlp;      /* --otlp: each window pushed too */
    cli_otlp *pusher;
    rp_prom_opts page; /* the series pushed: every one, as serve's */
} daemon_state;

static const char daemon_about[] =
    "\n"
    "Samples the whole machine (every process, cgroup and the system) once "
    "per\ninterval and publishes each window into a POSIX shared-memory ring "
    "that\nseveral unprivileged readers share: '%s monitor|top|serve --ring "
    "NAME'.\nStops cleanly on SIGTERM or SIGINT and removes its ring.\n"
    "With the perf sensor (--sensor perf:events=perf::TASK-CLOCK) its "
    "counters go\ninto the ring.\n";

/* Does the window carry figures derived from RAPL energy counters: a
 * measured CPU power, DRAM or platform power, or perf counters of the
 * power PMU (power/energy-pkg/ ...)? */
static bool rapl_derived(const pa_report *r)
{
    if ((r->cpu_source && strcmp(r->cpu_source, "rapl") == 0) || r->dram_w != 0 || r->psys_w != 0 ||
        (r->system.flags & PA_POWER_MEASURED))
        return true;
    for (size_t i = 0; i < r->ncounters; i++)
        if (r->counter_names[i] && strstr(r->counter_names[i], "energy"))
            return true;
    return false;
}

/* --export-vms: the window's VM records into their folders; a failure is
 * kept for the main thread to say (once per new error). */
static void export_window(daemon_state *d, const pa_report *vr)
{
    char why[512];
    if (rp_vmexport_window(d->exp, vr, why, sizeof(why)) < 0 &&
        !__atomic_load_n(&d->exp_failed, __ATOMIC_ACQUIRE) && strcmp(why, d->exp_err) != 0) {
        snprintf(d->exp_err, sizeof(d->exp_err), "%s", why);
        __atomic_store_n(&d->exp_failed, 1, __ATOMIC_RELEASE);
    }
}

static void publish_cb(pa_ctx *ctx, const pa_report *r, void *user)
{
    daemon_state *d = user;
    if (d->guard_rapl && rapl_derived(r)) {
        /* never published; the main thread stops the daemon */
        __atomic_store_n(&d->refused, 1, __ATOMIC_RELEASE);
        return;
    }
    const pa_report *m = NULL;
    if (d->vmg && rp_vmgroups_scan(d->vmg, ctx) == 0) {
        if (d->vms && rp_vmgroups_merge(d->vmg, r, &m) == 0)
            r = m; /* else the window without its VM records */
        else if (!d->vms && d->exp)
            rp_vmgroups_report(d->vmg, r, &m);
        if (m && d->exp)
            export_window(d, m);
    }
    int rc = pa_ring_publish(d->w, r);
    cli_otlp_window(d->pusher, r, &d->page);
    if (rc < 0)
        __atomic_store_n(&d->last_err, rc, __ATOMIC_RELAXED);
    else
        __atomic_add_fetch(&d->published, 1, __ATOMIC_RELEASE);
}

/* --vms: the VM table, scanned once before the first tick (the
 * hypervisors' threads watched from the start).  0 or the error, told. */
static int start_vms(rp_vmgroups **g, pa_ctx *ctx, const cli_ctx *co)
{
    int rc = rp_vmgroups_new(g, co->copts.procfs, co->copts.rootfs);
    if (rc == 0)
        rc = rp_vmgroups_scan(*g, ctx);
    if (rc < 0)
        cli_error(CMD, "--vms: %s", cli_errmsg(rc));
    return rc;
}

/* --export-vms DIR: the exporter, DIR made when missing.  0 or the
 * error, told. */
static int start_export(rp_vmexport **x, const char *dir, unsigned port, daemon_state *d,
                        const cli_ctx *co)
{
    char why[512];
    int rc = rp_vmexport_new(x, dir, co->copts.procfs, co->copts.rootfs, 0, why, sizeof(why));
    if (rc == 0 && port)
        rc = cli_vsock_start(*x, port, &d->vsock, why, sizeof(why));
    if (rc < 0)
        cli_error(CMD, "%s", why);
    return rc;
}

static int parse_group(const char *s, gid_t *out)
{
    unsigned long v;
    if (cli_parse_uint(s, (gid_t)-2, &v) == 0 || strcmp(s, "0") == 0) {
        *out = (gid_t)(strcmp(s, "0") == 0 ? 0 : v);
        return 0;
    }
    struct group *g = getgrnam(s);
    if (!g)
        return -ENOENT;
    *out = g->gr_gid;
    return 0;
}

static int set_group(void *v, const char *cmd, const char *arg)
{
    pa_ring_opts *ro = v;
    if (parse_group(arg, &ro->gid) < 0)
        return cli_usage_error(cmd, "--group: no group '%s'", arg);
    ro->set_gid = 1;
    ro->mode = 0640;
    return 0;
}

/* --otlp: every series of each window, as serve's page has them. */
static int otlp_begin(daemon_state *d)
{
    d->page.max_cgroups = 1000;
    if (gethostname(d->page.node, sizeof(d->page.node) - 1) < 0)
        snprintf(d->page.node, sizeof(d->page.node), "unknown");
    return cli_otlp_start(&d->otlp, CMD, &d->pusher);
}

/* What the command line gave beside the state. */
typedef struct daemon_args {
    const char *ring;
    pa_ring_opts ro;
    bool quiet, allow_fine_rapl;
    const char *export_dir;
    unsigned long vsock_port, capacity, max_targets;
} daemon_args;

/* The options into a and d.  0, an exit status, or -1 (--help given:
 * nothing to run). */
static int daemon_parse(int argc, char **argv, cli_ctx *co, daemon_args *a, daemon_state *d)
{
    *a = (daemon_args){.ring = PA_RING_DEFAULT_NAME,
                       .ro = {.capacity = 100, .max_targets = 1024, .mode = 0644},
                       .capacity = 100,
                       .max_targets = 1024};
    const cli_opt opts[] = {
        CLI_OPT_GROUP("Options:"),
        CLI_OPT_STRING('r', "ring", &a->ring, "NAME",
                       "ring name (default " PA_RING_DEFAULT_NAME ": /dev/shm/" PA_RING_DEFAULT_NAME
                       ")"),
        CLI_OPT_UINT('c', "capacity", &a->capacity, "N", "windows kept in the ring (default 100)",
                     2, 100000),
        CLI_OPT_UINT('m', "max-targets", &a->max_targets, "N",
                     "targets kept per window, the most powerful\n"
                     "(default 1024)",
                     1, 1u << 20),
        CLI_OPT_CALLBACK('g', "group", &a->ro, "GROUP",
                         "readable by this group only (mode 0640; default\n"
                         "0644)",
                         set_group),
        CLI_OPT_UINT('n', "count", &d->count, "N", "stop after N windows", 1, ~0ul),
        CLI_OPT_FLAG(0, "allow-fine-rapl", &a->allow_fine_rapl,
                     "publish RAPL-measured energy in windows under\n"
                     "100 ms to a ring others can read (refused by\n"
                     "default: fine-grained energy is a side channel,\n"
                     "CVE-2020-8694)"),
        CLI_OPT_STRING(0, "export-vms", &a->export_dir, "DIR",
                       "write each VM's energy for its guest into\n"
                       "DIR/NAME/ (a powercap tree and powerapi-vm,\n"
                       "each window; share DIR/NAME into the guest,\n"
                       "whose 'host' sensor reads it)"),
        CLI_OPT_UINT(0, "export-vsock", &a->vsock_port, "PORT",
                     "also answer each guest connecting over\n"
                     "AF_VSOCK to this port with its powerapi-vm\n"
                     "(needs --export-vms; the guest's CID from its\n"
                     "vhost-vsock device)",
                     1, 0xfffffffeul),
        CLI_OPT_FLAG(0, "vms", &d->vms,
                     "also publish a record per VM of this host (its\n"
                     "name, its vCPUs' part: '--group-by vm' of the\n"
                     "readers)"),
        CLI_OPT_FLAG('q', "quiet", &a->quiet, "no start/stop messages"),
        CLI_OPT_CONTEXT(co, CLI_CTXOPT_ALL),
        CLI_OPT_OTLP(&d->otlp),
        CLI_OPT_END,
    };
    const cli_cmd c = {
        .name = CMD, .usage = "%s " CMD " [OPTIONS]\n", .about = daemon_about, .opts = opts};
    int first;
    cli_ctx_init(co);
    int st = cli_parse(&c, argc, argv, &first);
    if (st)
        return st < 0 ? -1 : st;
    a->ro.capacity = (uint32_t)a->capacity;
    a->ro.max_targets = (uint32_t)a->max_targets;
    a->ro.interval_ns = co->interval_ns;
    /* Readers other than the daemon's user: the group (--group) or all. */
    d->guard_rapl =
        !a->allow_fine_rapl && a->ro.interval_ns < FINE_RAPL_NS && (a->ro.mode & 0077) != 0;
    if (a->vsock_port && !a->export_dir)
        return cli_usage_error(CMD, "--export-vsock needs --export-vms DIR (the windows it "
                                    "serves are those written there)");
    return 0;
}

/* The ring, the context, the VMs' export and the sampler.  0, or an exit
 * status after one line. */
static int daemon_start(daemon_state *d, const daemon_args *a, cli_ctx *co, pa_ctx **ctx)
{
    int rc = pa_ring_create(a->ring, &a->ro, &d->w);
    if (rc < 0) {
        cli_error(CMD, "%s", cli_errmsg(rc));
        return CLI_EXIT_FAIL;
    }
    if ((rc = otlp_begin(d)) != 0 || (rc = cli_ctx_create(co, CMD, ctx)) != 0)
        return rc;
    if ((rc = pa_watch_all(*ctx, 1)) < 0 || (rc = pa_report_cgroups(*ctx, 1)) < 0) {
        cli_error(CMD, "%s", cli_errmsg(rc));
        return CLI_EXIT_FAIL;
    }
    if ((d->vms || a->export_dir) && start_vms(&d->vmg, *ctx, co) < 0)
        return CLI_EXIT_FAIL;
    if (a->export_dir && start_export(&d->exp, a->export_dir, (unsigned)a->vsock_port, d, co) < 0)
        return CLI_EXIT_FAIL;
    /* The sampler's first tick primes the readings: the first window is
     * published one interval after start. */
    if ((rc = pa_start(*ctx, a->ro.interval_ns, publish_cb, d)) < 0) {
        cli_error(CMD, "%s", cli_errmsg(rc));
        return CLI_EXIT_FAIL;
    }
    if (!a->quiet)
        fprintf(stderr,
                "%s " CMD ": publishing ring '%s' (/dev/shm/%s): %u windows "
                "of %.3f s, up to %u targets each, mode %04o\n",
                cli_prog, a->ring[0] == '/' ? a->ring + 1 : a->ring,
                a->ring[0] == '/' ? a->ring + 1 : a->ring, a->ro.capacity,
                (double)a->ro.interval_ns / 1e9, a->ro.max_targets, a->ro.mode);
    return 0;
}

/* What the sampler's thread left for this one to say, once. */
static void daemon_say(daemon_state *d, pa_ctx *ctx, const daemon_args *a, bool *res_checked,
                       int *last_reported)
{
    /* once "auto" has chosen (a window was published): windows under
     * the CPU times' resolution are said, as monitor says them */
    if (!*res_checked && __atomic_load_n(&d->published, __ATOMIC_ACQUIRE)) {
        cli_warn_resolution(CMD, ctx, a->ro.interval_ns);
        *res_checked = true;
    }
    if (__atomic_load_n(&d->exp_failed, __ATOMIC_ACQUIRE)) {
        cli_error(CMD, "%s (the other VMs are still written)", d->exp_err);
        __atomic_store_n(&d->exp_failed, 0, __ATOMIC_RELEASE);
    }
    int e = __atomic_load_n(&d->last_err, __ATOMIC_RELAXED);
    if (e && e != *last_reported) {
        cli_error(CMD, "publishing a window failed: %s", pa_strerror(e));
        *last_reported = e;
    }
}

/* Until a signal, --count windows, or a refusal: the exit status. */
static int daemon_loop(daemon_state *d, pa_ctx *ctx, const daemon_args *a, const sigset_t *sigs)
{
    int last_reported = 0;
    bool res_checked = false;
    for (;;) {
        /* Wake at least every 500 ms for the heartbeat and --count. */
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 500000000};
        if (a->ro.interval_ns < 500000000ull)
            ts.tv_nsec = (long)a->ro.interval_ns;
        siginfo_t si;
        int s = sigtimedwait(sigs, &si, &ts);
        if (s > 0) {
            if (!a->quiet)
                fprintf(stderr, "%s " CMD ": %s, stopping\n", cli_prog, strsignal(s));
            return CLI_EXIT_OK;
        }
        if (__atomic_load_n(&d->refused, __ATOMIC_ACQUIRE)) {
            cli_error(CMD,
                      "refusing to publish RAPL-measured energy in windows of "
                      "%.0f ms to a ring others can read (mode %04o): energy read "
                      "this often is a side channel (PLATYPUS, CVE-2020-8694); use "
                      "--interval 100ms or more, or --allow-fine-rapl if every "
                      "reader of the ring may see it",
                      (double)a->ro.interval_ns / 1e6, a->ro.mode);
            return CLI_EXIT_FAIL;
        }
        pa_ring_heartbeat(d->w);
        daemon_say(d, ctx, a, &res_checked, &last_reported);
        if (d->count && __atomic_load_n(&d->published, __ATOMIC_ACQUIRE) >= d->count)
            return CLI_EXIT_OK;
    }
}

static int daemon_main(int argc, char **argv, cli_ctx *co)
{
    daemon_args a;
    daemon_state d = {0};
    int status = daemon_parse(argc, argv, co, &a, &d);
    if (status)
        return status < 0 ? CLI_EXIT_OK : status;
    /* Every signal we wait for is blocked before any thread starts. */
    sigset_t sigs, old;
    cli_stop_signals(&sigs);
    sigprocmask(SIG_BLOCK, &sigs, &old);
    pa_ctx *ctx = NULL;
    status = daemon_start(&d, &a, co, &ctx);
    if (status == 0) {
        status = daemon_loop(&d, ctx, &a, &sigs);
        pa_stop(ctx);
    }
    cli_otlp_stop(d.pusher);
    pa_ctx_free(ctx);
    rp_vmgroups_free(d.vmg);
    cli_vsock_stop(d.vsock);
    rp_vmexport_free(d.exp);
    pa_ring_destroy(d.w); /* unlinks: readers hear the daemon stopped */
    sigprocmask(SIG_SETMASK, &old, NULL);
    return status;
}

int cli_daemon(int argc, char **argv)
{
    cli_ctx co;
    int status = daemon_main(argc, argv, &co);
    cli_ctx_fini(&co);
    return status;
}
