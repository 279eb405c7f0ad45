/*
 * calibrate.c - `powerapi calibrate`: options in, the library's
 * calibration (pa_calibrate_*, powerapi.h: the load ladder, windows,
 * fitting and validation) out, as a table, a plot and the calibration
 * file the cpu-curve formula reads.
 */
#include "cli.h"
#include "profout.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *CMD = "calibrate";

static const char calibrate_about[] =
    "\n"
    "Measures this machine's load-power curve with RAPL, or with the whole\n"
    "machine's meter (--wall), on a ladder of duty-cycle loads (idle, 10 %% ..\n"
    "100 %% of all CPUs), validates it on a random walk of load, and writes the\n"
    "calibration file that the cpu-curve formula reads\n"
    "(monitor/top/serve/daemon/profile/modules --calibration FILE,\n"
    "$POWERAPI_CALIBRATION).\n";

typedef struct opts {
    const char *output, *windows, *frequencies, *wall;
    uint64_t step, settle, window, validate;
    unsigned long reps, levels;
} opts;

/* A SIGINT/SIGTERM/SIGHUP while cpufreq is set: the settings written
 * back, then the signal's death as it would have been. */
static void on_signal(int sig)
{
    pa_calibrate_restore_cpufreq();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void note(void *arg, const char *msg)
{
    fprintf(stderr, "%s %s: %s\n", cli_prog, CMD, msg);
}

/* The curve's table and plot, and each frequency's points. */
static void print_curve(const pa_calibrate_curve_result *r, const char *wall)
{
    const pa_curve *c = &r->curve;
    double wmax = c->watts[c->n - 1];
    for (size_t k = 0; k < c->n; k++)
        wmax = c->watts[k] > wmax ? c->watts[k] : wmax;
    if (wall)
        printf("calibration of '%s' (%u CPUs), the whole machine's power (--wall %s)\n\n", c->match,
               r->ncpus, wall);
    else
        printf("calibration of '%s' (%u CPUs), RAPL package%s power\n\n", c->match, r->ncpus,
               "+DRAM");
    printf("%7s %9s %9s  %s\n", "LOAD %", "WATTS", "RESID W", "PLOT");
    for (size_t k = 0; k < c->n; k++) {
        int bar = wmax > 0 ? (int)(40 * c->watts[k] / wmax + 0.5) : 0;
        printf("%7.1f %9.3f %9.3f  ", c->load[k] * 100, c->watts[k], r->residual_w[k]);
        for (int b = 0; b < bar; b++)
            putchar('#');
        putchar('\n');
    }
    for (size_t k = 0; k < c->nfreq; k++) {
        printf("\nat %.0f MHz (%s):\n%7s %9s %9s\n", c->fmhz[k], r->cpufreq_file, "LOAD %", "WATTS",
               "RESID W");
        for (size_t i = 0; i < c->fn[k]; i++)
            printf("%7.1f %9.3f %9.3f\n", c->fload[k][i] * 100, c->fwatts[k][i], c->fres[k][i]);
    }
}

/* Writes the calibration file (--output, else the standard place, its
 * folders made) and says where.  0, or -1 after printing the error. */
static int write_file(const opts *o, const pa_curve *c, const double *res, unsigned ncpus,
                      double vmean, double vp95, double venergy)
{
    int rc;
    char path[PATH_MAX];
    if (o->output) {
        snprintf(path, sizeof(path), "%s", o->output);
    } else {
        if ((rc = pa_calibration_standard_path(path, sizeof(path))) < 0) {
            cli_error(CMD, "%s", cli_errmsg(rc));
            return -1;
        }
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        /* a folder that cannot be made: pa_calibration_write says why */
        if (slash) {
            *slash = '\0';
            (void)pc_out_mkdirs(dir, 0755);
        }
    }
    rc = pa_calibration_write(path, c, res, ncpus, vmean, vp95, venergy);
    if (rc < 0) {
        cli_error(CMD, "%s", cli_errmsg(rc));
        return -1;
    }
    printf("\nwritten: %s (use it with --calibration %s or "
           "POWERAPI_CALIBRATION=%s)\n",
           path, path, path);
    return 0;
}

static int run(pa_ctx *ctx, const opts *o, const char *sysfs)
{
    pa_calibrate_params p = {.version = PA_CALIBRATE_VERSION,
                             .step_ns = o->step,
                             .settle_ns = o->settle,
                             .window_ns = o->window,
                             .validate_ns = o->validate,
                             .reps = (unsigned)o->reps,
                             .levels = (unsigned)o->levels,
                             .frequencies = o->frequencies,
                             .sysfs = sysfs,
                             .windows_csv = o->windows,
                             .note = note};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    pa_calibrate *cal = NULL;
    pa_calibrate_curve_result r;
    pa_calibrate_validation v;
    int rc;
    if ((rc = pa_calibrate_new(ctx, &p, &cal)) < 0 || (rc = pa_calibrate_curve(cal, &r)) < 0) {
        cli_error(CMD, "%s", cli_errmsg(rc));
        pa_calibrate_free(cal);
        return CLI_EXIT_FAIL;
    }
    print_curve(&r, o->wall);
    if ((rc = pa_calibrate_validate(cal, &r.curve, &v)) < 0) {
        cli_error(CMD, "%s", cli_errmsg(rc));
        pa_calibrate_free(cal);
        return CLI_EXIT_FAIL;
    }
    if (v.windows)
        printf("\nvalidation (random walk of load, %zu windows of 1 s): "
               "absolute error mean %.2f %%, p95 %.2f %%; energy %+.2f "
               "%% (model %.1f J, %s %.1f J)\n",
               v.windows, v.mean_pct, v.p95_pct, v.energy_pct, v.model_j, o->wall ? "wall" : "RAPL",
               v.measured_j);
    rc = write_file(o, &r.curve, r.residual_w, r.ncpus, v.mean_pct, v.p95_pct, v.energy_pct);
    pa_calibrate_free(cal);
    return rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static int set_frequencies(void *v, const char *cmd, const char *arg)
{
    if (pa_calibrate_check_frequencies(arg) < 0)
        return cli_usage_error(cmd, "%s", pa_last_error());
    *(const char **)v = arg;
    return 0;
}

static int set_validate(void *v, const char *cmd, const char *arg)
{
    static const cli_opt any = {.long_name = "validate"};
    if (!strcmp(arg, "0")) {
        *(uint64_t *)v = 0;
        return 0;
    }
    return cli_opt_duration(cmd, &any, arg, v);
}

/* What the curve is measured against: RAPL, or the whole machine's meter
 * (SENSOR[:OPTS]) with the platform formula that reads it. */
static int enable_truth(pa_ctx *ctx, const char *wall)
{
    int rc = pa_module_enable(ctx, "procfs-cpu", NULL);
    if (rc < 0 || !wall)
        return rc < 0 ? rc
               : (rc = pa_module_enable(ctx, "rapl", NULL)) < 0
                   ? rc
                   : pa_module_enable(ctx, "rapl-share", NULL);
    char name[64];
    const char *colon = strchr(wall, ':');
    snprintf(name, sizeof(name), "%.*s", (int)(colon ? colon - wall : (long)strlen(wall)), wall);
    if ((rc = pa_module_enable(ctx, name, colon ? colon + 1 : NULL)) < 0)
        return rc;
    /* the cpu component stays at 0 W (cpu-tdp's figure is not used):
     * platform is then the whole wall */
    if ((rc = pa_module_disable(ctx, "auto")) < 0)
        return rc;
    return pa_module_enable(ctx, "platform", "split=none");
}

int cli_calibrate(int argc, char **argv)
{
    opts o = {.step = 5000000000ull,
              .settle = 500000000ull,
              .window = 500000000ull,
              .validate = 30000000000ull,
              .reps = 3,
              .levels = 10};
    cli_ctx co;
    cli_ctx_init(&co);
    const cli_opt table[] = {
        CLI_OPT_GROUP("Options:"),
        {.type = CLI_KIND_STRING,
         .short_name = 'o',
         .long_name = "output",
         .value = &o.output,
         .argh = "FILE",
         .help = "where to write (default: /var/lib/powerapi/\n"
                 "calibration.txt as root, else\n"
                 "$XDG_DATA_HOME/powerapi/calibration.txt)"},
        {.type = CLI_KIND_DURATION,
         .long_name = "step",
         .value = &o.step,
         .argh = "DURATION",
         .help = "time at each load level (default 5s)",
         .alias = "duration"},
        CLI_OPT_DURATION(0, "settle", &o.settle,
                         "time left out at the start of each level\n"
                         "(default 500ms)",
                         0, 0),
        CLI_OPT_UINT(0, "reps", &o.reps, "N", "repetitions of the ladder (default 3)", 1, 50),
        CLI_OPT_UINT(0, "levels", &o.levels, "N",
                     "load levels above idle (default 10: 10 %% steps)", 1, 50),
        CLI_OPT_DURATION(0, "window", &o.window, "measurement window (default 500ms)", 0, 0),
        CLI_OPT_CALLBACK(0, "validate", &o.validate, "DURATION",
                         "random-walk validation (default 30s, 0: none)", set_validate),
        CLI_OPT_STRING(0, "windows", &o.windows, "FILE",
                       "also write the validation windows as CSV"),
        CLI_OPT_CALLBACK(0, "frequencies", &o.frequencies, "LIST",
                         "where cpufreq lets it set one (userspace\n"
                         "governor's scaling_setspeed, else\n"
                         "scaling_max_freq), the ladder again at each: min,\n"
                         "mid, max or MHz joined by ',' (default\n"
                         "min,mid,max; none: current frequency only);\n"
                         "restored after",
                         set_frequencies),
        CLI_OPT_STRING(0, "wall", &o.wall, "SENSOR[:OPTS]",
                       "measure against the whole machine's meter\n"
                       "instead of RAPL (acpi-power, ipmi, redfish:url=...,\n"
                       "http-meter:url=...): the curve is the machine's"),
        CLI_OPT_CONTEXT(&co, CLI_CTXOPT_ROOTS),
        CLI_OPT_END,
    };
    const cli_cmd c = {
        .name = CMD, .usage = "%s calibrate [OPTIONS]\n", .about = calibrate_about, .opts = table};
    int first;
    int st = cli_parse(&c, argc, argv, &first);
    if (st)
        return st < 0 ? CLI_EXIT_OK : st;
    if (o.settle >= o.step || o.window * 2 > o.step - o.settle)
        return cli_usage_error(CMD, "--step must leave at least two "
                                    "--window after --settle");

    pa_ctx *ctx = NULL;
    int rc = cli_ctx_create(&co, CMD, &ctx);
    if (rc != 0)
        return rc;
    if ((rc = enable_truth(ctx, o.wall)) < 0) {
        if (o.wall)
            cli_error(CMD, "--wall %s: %s", o.wall, cli_errmsg(rc));
        else
            cli_error(CMD, "needs RAPL to measure the curve (or a wall meter: --wall): %s",
                      cli_errmsg(rc));
        pa_ctx_free(ctx);
        return CLI_EXIT_FAIL;
    }
    int status = run(ctx, &o, co.copts.sysfs);
    pa_ctx_free(ctx);
    return status;
}
