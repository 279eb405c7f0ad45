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

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
} daemon_state;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: %s " CMD " [OPTIONS]\n"
            "\n"
            "Samples the whole machine (every process, cgroup and the "
            "system) once per\ninterval and publishes each window into a "
            "POSIX shared-memory ring that\nseveral unprivileged readers "
            "share: '%s monitor|top|serve --ring NAME'.\nStops cleanly on "
            "SIGTERM or SIGINT and removes its ring.\n"
            "\nOptions:\n"
            "  -r, --ring NAME          ring name (default %s: "
            "/dev/shm/%s)\n"
            "      --calibration FILE   a `powerapi calibrate` file for the cpu-curve\n"
            "                           formula (also $POWERAPI_CALIBRATION)\n"
            "  -i, --interval DURATION  window length (default 1s; 500ms, "
            "2s, ...)\n"
            "  -c, --capacity N         windows kept in the ring (default "
            "100)\n"
            "  -m, --max-targets N      targets kept per window, the most "
            "powerful (default 1024)\n"
            "  -g, --group GROUP        readable by this group only (mode "
            "0640; default 0644)\n"
            "  -n, --count N            stop after N windows\n"
            "      --sensor NAME[:OPTS] enable or reconfigure a sensor "
            "(repeatable), e.g.\n"
            "                           --sensor perf:events=perf::TASK-CLOCK "
            "(its counters go\n"
            "                           into the ring)\n"
            "      --formula NAME[:OPTS] enable a formula and the sensors it "
            "requires\n"
            "                           (repeatable); \"auto\" fills the "
            "other components\n"
            "      --disable NAME       keep a module out (repeatable; "
            "\"auto\": only those named)\n"
            "      --allow-fine-rapl    publish RAPL-measured energy in "
            "windows under 100 ms\n"
            "                           to a ring others can read (refused "
            "by default: fine-\n"
            "                           grained energy is a side channel, "
            "CVE-2020-8694)\n"
            "      --procfs DIR         procfs root (default /proc)\n"
            "      --sysfs DIR          sysfs root (default /sys)\n"
            "  -q, --quiet              no start/stop messages\n"
            "  -h, --help               show this help\n",
            pa_cli_prog, pa_cli_prog, PA_RING_DEFAULT_NAME,
            PA_RING_DEFAULT_NAME);
}

enum {
    OPT_SENSOR = 256,
    OPT_FORMULA,
    OPT_DISABLE,
    OPT_ALLOW_FINE_RAPL,
    OPT_PROCFS,
    OPT_SYSFS
};

/* Does the window carry figures derived from RAPL energy counters: a
 * measured CPU power, DRAM or platform power, or perf counters of the
 * power PMU (power/energy-pkg/ ...)? */
static bool rapl_derived(const pa_report *r)
{
    if ((r->cpu_source && strcmp(r->cpu_source, "rapl") == 0) ||
        r->dram_w != 0 || r->psys_w != 0 ||
        (r->system.flags & PA_POWER_MEASURED))
        return true;
    for (size_t i = 0; i < r->ncounters; i++)
        if (r->counter_names[i] && strstr(r->counter_names[i], "energy"))
            return true;
    return false;
}

static void publish_cb(pa_ctx *ctx, const pa_report *r, void *user)
{
    (void)ctx;
    daemon_state *d = user;
    if (d->guard_rapl && rapl_derived(r)) {
        /* never published; the main thread stops the daemon */
        __atomic_store_n(&d->refused, 1, __ATOMIC_RELEASE);
        return;
    }
    int rc = pa_ring_publish(d->w, r);
    if (rc < 0)
        __atomic_store_n(&d->last_err, rc, __ATOMIC_RELAXED);
    else
        __atomic_add_fetch(&d->published, 1, __ATOMIC_RELEASE);
}

static int parse_group(const char *s, gid_t *out)
{
    unsigned long v;
    if (pa_cli_parse_uint(s, (gid_t)-2, &v) == 0 || strcmp(s, "0") == 0) {
        *out = (gid_t)(strcmp(s, "0") == 0 ? 0 : v);
        return 0;
    }
    struct group *g = getgrnam(s);
    if (!g)
        return -ENOENT;
    *out = g->gr_gid;
    return 0;
}

static int daemon_main(int argc, char **argv, pa_cli_mods *mods)
{
    static const struct option longopts[] = {
        {"ring", required_argument, NULL, 'r'},
        {"calibration", required_argument, NULL, PA_CLI_OPT_CALIBRATION},
        {"interval", required_argument, NULL, 'i'},
        {"capacity", required_argument, NULL, 'c'},
        {"max-targets", required_argument, NULL, 'm'},
        {"group", required_argument, NULL, 'g'},
        {"count", required_argument, NULL, 'n'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"sensor", required_argument, NULL, OPT_SENSOR},
        {"formula", required_argument, NULL, OPT_FORMULA},
        {"disable", required_argument, NULL, OPT_DISABLE},
        {"allow-fine-rapl", no_argument, NULL, OPT_ALLOW_FINE_RAPL},
        {"procfs", required_argument, NULL, OPT_PROCFS},
        {"sysfs", required_argument, NULL, OPT_SYSFS},
        {NULL, 0, NULL, 0},
    };
    const char *ring = PA_RING_DEFAULT_NAME;
    pa_ring_opts ro = {.capacity = 100,
                       .max_targets = 1024,
                       .mode = 0644,
                       .interval_ns = 1000000000ull};
    daemon_state d = {0};
    pa_ctx_opts copts = {0};
    bool quiet = false, allow_fine_rapl = false;
    unsigned long v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:r:i:c:m:g:n:qh", longopts, NULL)) !=
           -1) {
        switch (c) {
        case PA_CLI_OPT_CALIBRATION: {
            int st = pa_cli_calibration(CMD, optarg);
            if (st)
                return st;
            break;
        }
        case 'r':
            ring = optarg;
            break;
        case 'i':
            if (pa_cli_parse_duration(optarg, &ro.interval_ns) < 0 ||
                ro.interval_ns < 1000000)
                return pa_cli_usage_error(
                    CMD,
                    "--interval: invalid duration '%s' (at least 1ms; "
                    "e.g. 500ms, 2s)",
                    optarg);
            break;
        case 'c':
            if (pa_cli_parse_uint(optarg, 100000, &v) < 0 || v < 2)
                return pa_cli_usage_error(
                    CMD, "--capacity: expected 2 to 100000 windows, got '%s'",
                    optarg);
            ro.capacity = (uint32_t)v;
            break;
        case 'm':
            if (pa_cli_parse_uint(optarg, 1u << 20, &v) < 0)
                return pa_cli_usage_error(
                    CMD, "--max-targets: expected 1 to 1048576, got '%s'",
                    optarg);
            ro.max_targets = (uint32_t)v;
            break;
        case 'g':
            if (parse_group(optarg, &ro.gid) < 0)
                return pa_cli_usage_error(CMD, "--group: no group '%s'",
                                          optarg);
            ro.set_gid = 1;
            ro.mode = 0640;
            break;
        case 'n':
            if (pa_cli_parse_uint(optarg, ~0ul, &d.count) < 0)
                return pa_cli_usage_error(
                    CMD, "--count: expected a positive integer, got '%s'",
                    optarg);
            break;
        case 'q':
            quiet = true;
            break;
        case OPT_SENSOR:
        case OPT_FORMULA:
        case OPT_DISABLE: {
            int rc = pa_cli_mods_option(
                mods, CMD, c == OPT_DISABLE,
                c == OPT_SENSOR ? PA_SENSOR : PA_FORMULA, optarg);
            if (rc)
                return rc;
            break;
        }
        case OPT_ALLOW_FINE_RAPL:
            allow_fine_rapl = true;
            break;
        case OPT_PROCFS:
            copts.procfs = optarg;
            break;
        case OPT_SYSFS:
            copts.sysfs = optarg;
            break;
        case 'h':
            usage(stdout);
            return PA_EXIT_OK;
        default: /* ':' or an unknown option */
            return pa_cli_getopt_error(CMD, c, argv);
        }
    }
    if (optind < argc)
        return pa_cli_extra_arg(CMD, argv[optind]);
    /* Readers other than the daemon's user: the group (--group) or all. */
    d.guard_rapl = !allow_fine_rapl && ro.interval_ns < FINE_RAPL_NS &&
                   (ro.mode & 0077) != 0;

    /* Every signal we wait for is blocked before any thread starts. */
    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGQUIT);
    sigprocmask(SIG_BLOCK, &sigs, &old);

    int status = PA_EXIT_FAIL;
    pa_ctx *ctx = NULL;
    int rc = pa_ring_create(ring, &ro, &d.w);
    if (rc < 0) {
        pa_cli_error(CMD, "%s", pa_cli_errmsg(rc));
        goto out;
    }
    if ((rc = pa_ctx_new(&ctx, &copts)) < 0 || (rc = pa_watch_all(ctx, 1)) < 0 ||
        (rc = pa_report_cgroups(ctx, 1)) < 0) {
        pa_cli_error(CMD, "%s", pa_cli_errmsg(rc));
        goto out;
    }
    if ((rc = pa_cli_mods_apply(ctx, CMD, mods)) != 0) {
        status = rc;
        goto out;
    }
    /* The sampler's first tick primes the readings: the first window is
     * published one interval after start. */
    if ((rc = pa_start(ctx, ro.interval_ns, publish_cb, &d)) < 0) {
        pa_cli_error(CMD, "%s", pa_cli_errmsg(rc));
        goto out;
    }
    if (!quiet)
        fprintf(stderr,
                "%s " CMD ": publishing ring '%s' (/dev/shm/%s): %u windows "
                "of %.3f s, up to %u targets each, mode %04o\n",
                pa_cli_prog, ring[0] == '/' ? ring + 1 : ring,
                ring[0] == '/' ? ring + 1 : ring, ro.capacity,
                (double)ro.interval_ns / 1e9, ro.max_targets, ro.mode);

    int last_reported = 0;
    for (;;) {
        /* Wake at least every 500 ms for the heartbeat and --count. */
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 500000000};
        if (ro.interval_ns < 500000000ull)
            ts.tv_nsec = (long)ro.interval_ns;
        siginfo_t si;
        int s = sigtimedwait(&sigs, &si, &ts);
        if (s > 0) {
            if (!quiet)
                fprintf(stderr, "%s " CMD ": %s, stopping\n", pa_cli_prog,
                        strsignal(s));
            status = PA_EXIT_OK;
            break;
        }
        if (__atomic_load_n(&d.refused, __ATOMIC_ACQUIRE)) {
            pa_cli_error(
                CMD,
                "refusing to publish RAPL-measured energy in windows of "
                "%.0f ms to a ring others can read (mode %04o): energy read "
                "this often is a side channel (PLATYPUS, CVE-2020-8694); use "
                "--interval 100ms or more, or --allow-fine-rapl if every "
                "reader of the ring may see it",
                (double)ro.interval_ns / 1e6, ro.mode);
            break;
        }
        pa_ring_heartbeat(d.w);
        int e = __atomic_load_n(&d.last_err, __ATOMIC_RELAXED);
        if (e && e != last_reported) {
            pa_cli_error(CMD, "publishing a window failed: %s", pa_strerror(e));
            last_reported = e;
        }
        if (d.count &&
            __atomic_load_n(&d.published, __ATOMIC_ACQUIRE) >= d.count) {
            status = PA_EXIT_OK;
            break;
        }
    }
    pa_stop(ctx);

out:
    pa_ctx_free(ctx);
    pa_ring_destroy(d.w); /* unlinks: readers hear the daemon stopped */
    sigprocmask(SIG_SETMASK, &old, NULL);
    return status;
}

int pa_cli_daemon(int argc, char **argv)
{
    pa_cli_mods mods = {0};
    int status = daemon_main(argc, argv, &mods);
    pa_cli_mods_free(&mods);
    return status;
}
