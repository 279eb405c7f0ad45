/*
 * options.c - the subcommands' option tables: parsing, bounds, errors and
 * --help from one declaration per option (perf's parse-options.h style).
 *
 * The options that build a context are declared once, in ctx_opts below,
 * and reach a command through CLI_OPT_CONTEXT in its table: `--interval 0`
 * is refused with the same line by monitor, daemon, top and serve, and
 * `--procfs DIR` means the same everywhere.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull
#define MAX_OPTS 64 /* leaf options of one command, shared ones included */
#define HELP_COL 28
/* getopt values of the hidden --man and --complete: no letter, below the
 * table's 256 + i */
#define OPT_MAN 200
#define OPT_COMPLETE 201 /* where the help text of an option starts */

/* ---- the shared context options ---- */

/* A root or the hwdb is checked while parsing, so that a wrong path is
 * told with the same line by every command, before anything else it
 * checks (a terminal, targets): exit 1, as when the library finds it. */
static int check_path(const char *cmd, const char *flag, const char *arg, bool dir)
{
    struct stat st;
    int err = stat(arg, &st) < 0              ? errno
              : dir && !S_ISDIR(st.st_mode)   ? ENOTDIR
              : !dir && S_ISDIR(st.st_mode)   ? EISDIR
              : !dir && access(arg, R_OK) < 0 ? errno
                                              : 0;
    if (err == 0)
        return 0;
    cli_error(cmd, "%s '%s': %s (give an existing %s)", flag, arg, strerror(err),
              dir ? "directory" : "readable file");
    return CLI_EXIT_FAIL;
}

static int set_procfs(void *v, const char *cmd, const char *arg)
{
    ((cli_ctx *)v)->copts.procfs = arg;
    return check_path(cmd, "--procfs", arg, true);
}

static int set_sysfs(void *v, const char *cmd, const char *arg)
{
    ((cli_ctx *)v)->copts.sysfs = arg;
    return check_path(cmd, "--sysfs", arg, true);
}

static int set_hwdb(void *v, const char *cmd, const char *arg)
{
    ((cli_ctx *)v)->copts.hwdb = arg;
    return check_path(cmd, "--hwdb", arg, false);
}

static int set_rootfs(void *v, const char *cmd, const char *arg)
{
    ((cli_ctx *)v)->copts.rootfs = arg;
    return check_path(cmd, "--rootfs", arg, true);
}

/* checked now, then given to the contexts the command makes
 * (pa_ctx_set_calibration: auto then picks cpu-curve with it) */
static int set_calibration(void *v, const char *cmd, const char *arg)
{
    pa_curve c;
    if (pa_calibration_read(arg, &c) < 0)
        return cli_usage_error(cmd, "--calibration: %s", pa_last_error());
    ((cli_ctx *)v)->calibration = arg;
    return 0;
}

static int set_sensor(void *v, const char *cmd, const char *arg)
{
    return cli_mods_option(&((cli_ctx *)v)->mods, cmd, 0, PA_SENSOR, arg);
}

static int set_formula(void *v, const char *cmd, const char *arg)
{
    return cli_mods_option(&((cli_ctx *)v)->mods, cmd, 0, PA_FORMULA, arg);
}

static int set_disable(void *v, const char *cmd, const char *arg)
{
    return cli_mods_option(&((cli_ctx *)v)->mods, cmd, 1, PA_SENSOR, arg);
}

static int set_interval(void *v, const char *cmd, const char *arg);

/* pa_carbon_intensity_parse's line names the forms */
static int set_carbon(void *v, const char *cmd, const char *arg)
{
    if (pa_carbon_intensity_parse(arg, &((cli_ctx *)v)->carbon_g_per_kwh) < 0)
        return cli_usage_error(cmd, "--carbon-intensity: %s", pa_last_error());
    return 0;
}

/* Every option that builds a context, in the order --help lists them.
 * The lowest --interval is 1 ms in every command: it is the floor of the
 * library's sampler (pa_start, which daemon and serve run), monitor and
 * top tick in their own loop and take the same floor so that one
 * spelling means one thing; below it a tick (a read of every
 * /proc/PID/stat) would outlast its window. */
static const cli_opt ctx_opts[] = {
    {.type = CLI_KIND_CALLBACK,
     .long_name = "procfs",
     .argh = "DIR",
     .help = "procfs root (default /proc)",
     .cb = set_procfs,
     .mask = CLI_CTXOPT_ROOTS},
    {.type = CLI_KIND_CALLBACK,
     .long_name = "sysfs",
     .argh = "DIR",
     .help = "sysfs root (default /sys)",
     .cb = set_sysfs,
     .mask = CLI_CTXOPT_ROOTS},
    {.type = CLI_KIND_CALLBACK,
     .long_name = "hwdb",
     .argh = "FILE",
     .help = "hardware database (default: $POWERAPI_HWDB, else the\n"
             "installed one)",
     .cb = set_hwdb,
     .mask = CLI_CTXOPT_ROOTS},
    {.type = CLI_KIND_CALLBACK,
     .long_name = "rootfs",
     .argh = "DIR",
     .help = "where the container runtimes' state is, for\n"
             "container and pod names (default /)",
     .cb = set_rootfs,
     .mask = CLI_CTXOPT_ROOTS},
    {.type = CLI_KIND_CALLBACK,
     .long_name = "calibration",
     .argh = "FILE",
     .help = "a '%s calibrate' file for the cpu-curve formula\n"
             "(also $POWERAPI_CALIBRATION)",
     .cb = set_calibration,
     .mask = CLI_CTXOPT_CALIBRATION},
    {.type = CLI_KIND_CALLBACK,
     .long_name = "sensor",
     .argh = "NAME[:OPTS]",
     .help = "enable or reconfigure a sensor (repeatable); OPTS\n"
             "is key=value,..., e.g. perf:events=perf::TASK-CLOCK",
     .cb = set_sensor,
     .mask = CLI_CTXOPT_MODULES},
    {.type = CLI_KIND_CALLBACK,
     .long_name = "formula",
     .argh = "NAME[:OPTS]",
     .help = "enable a formula and the sensors it requires\n"
             "(repeatable), e.g. cpu-tdp:tdp=65W; 'auto' gives\n"
             "every other component the best formula here",
     .cb = set_formula,
     .mask = CLI_CTXOPT_MODULES},
    {.type = CLI_KIND_CALLBACK,
     .long_name = "disable",
     .argh = "NAME",
     .help = "keep a module out (repeatable; 'auto': only those\nnamed)",
     .cb = set_disable,
     .mask = CLI_CTXOPT_MODULES},
    {.type = CLI_KIND_CALLBACK,
     .short_name = 'i',
     .long_name = "interval",
     .argh = "DURATION",
     .help = "window length (default 1s, at least 1ms; 500ms, 2s,\n1m...)",
     .min = CLI_MIN_INTERVAL_NS,
     .cb = set_interval,
     .mask = CLI_CTXOPT_INTERVAL},
    {.type = CLI_KIND_CALLBACK,
     .long_name = "carbon-intensity",
     .argh = "G",
     .help = "also give grams of CO2e, at G grams per kWh (0 < G\n"
             "<= 5000; your grid's figure, stated as an assumption\n"
             "in the output; none by default)",
     .cb = set_carbon,
     .mask = CLI_CTXOPT_CARBON},
    CLI_OPT_END,
};

static int set_interval(void *v, const char *cmd, const char *arg)
{
    cli_ctx *c = v;
    const cli_opt *o = ctx_opts;
    while (strcmp(o->long_name, "interval"))
        o++;
    int st = cli_opt_duration(cmd, o, arg, &c->interval_ns);
    if (st == 0)
        c->interval_set = 1;
    return st;
}

const cli_opt *cli_ctx_options(void)
{
    return ctx_opts;
}

void cli_ctx_init(cli_ctx *c)
{
    memset(c, 0, sizeof(*c));
    c->interval_ns = NS_PER_S;
}

void cli_ctx_fini(cli_ctx *c)
{
    cli_mods_free(&c->mods);
}

const char *cli_ctx_sampling_option(const cli_ctx *c)
{
    if (c->copts.procfs)
        return "--procfs";
    if (c->copts.sysfs)
        return "--sysfs";
    if (c->copts.hwdb)
        return "--hwdb";
    if (c->copts.rootfs)
        return "--rootfs";
    if (c->mods.n)
        return c->mods.v[0].flag;
    if (c->mods.ndisables)
        return "--disable";
    return NULL;
}

int cli_ctx_create(const cli_ctx *c, const char *cmd, pa_ctx **out)
{
    pa_ctx *ctx = NULL;
    int rc = pa_ctx_new(&ctx, &c->copts);
    if (rc < 0) {
        cli_error(cmd, "%s", cli_errmsg(rc));
        *out = NULL;
        return CLI_EXIT_FAIL;
    }
    if (c->calibration && (rc = pa_ctx_set_calibration(ctx, c->calibration)) < 0) {
        cli_error(cmd, "--calibration: %s", cli_errmsg(rc));
        pa_ctx_free(ctx);
        *out = NULL;
        return CLI_EXIT_FAIL;
    }
    if ((rc = cli_mods_apply(ctx, cmd, &c->mods)) != 0) {
        pa_ctx_free(ctx);
        *out = NULL;
        return rc;
    }
    *out = ctx;
    return 0;
}

void cli_rapl_hint(pa_ctx *ctx, const char *cmd)
{
    pa_module_info mi;
    if (pa_module_get(ctx, "rapl", &mi) < 0 || mi.available ||
        !strstr(mi.why, "readable by root only"))
        return;
    fprintf(stderr,
            "%s %s: power is modelled: RAPL's energy counters are readable "
            "by root only; for measured power join the group powerapi "
            "(sudo adduser $USER powerapi, then log in again) or run as "
            "root\n",
            cli_prog, cmd);
}

/* ---- values and their errors ---- */

/* "1ms", "10us", "2s": ns in the largest unit that divides it. */
static void fmt_ns(uint64_t ns, char *buf, size_t len)
{
    static const struct {
        uint64_t ns;
        const char *unit;
    } units[] = {{3600 * NS_PER_S, "h"}, {60 * NS_PER_S, "m"}, {NS_PER_S, "s"},
                 {1000000, "ms"},        {1000, "us"},         {1, "ns"}};
    size_t i = 0;
    while (ns && ns % units[i].ns)
        i++;
    snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].unit);
}

int cli_opt_duration(const char *cmd, const cli_opt *o, const char *arg, uint64_t *out_ns)
{
    uint64_t v;
    int rc = cli_parse_duration(arg, &v), bad = rc < 0;
    if (rc == -EDOM)
        return cli_usage_error(cmd,
                               "--%s: '%s' has no unit (write it as 5s, "
                               "100ms, 1m, 250us...; units ns, us, ms, s, "
                               "m, h)",
                               o->long_name, arg);
    if (!bad && (v < o->min || (o->max && v > o->max)))
        bad = 1;
    if (!bad) {
        *out_ns = v;
        return 0;
    }
    char lo[32], hi[32], range[80];
    fmt_ns(o->min ? o->min : 1, lo, sizeof(lo));
    fmt_ns(o->max, hi, sizeof(hi));
    if (o->max)
        snprintf(range, sizeof(range), "%s to %s", lo, hi);
    else if (o->min > 1)
        snprintf(range, sizeof(range), "at least %s", lo);
    else
        snprintf(range, sizeof(range), "more than 0");
    return cli_usage_error(cmd,
                           "--%s: invalid duration '%s' (%s; e.g. 500ms, "
                           "2s, 1m)",
                           o->long_name, arg, range);
}

static int opt_uint(const char *cmd, const cli_opt *o, const char *arg, unsigned long *out)
{
    unsigned long v;
    if (cli_parse_uint(arg, (unsigned long)o->max, &v) == 0 && v >= o->min) {
        *out = v;
        return 0;
    }
    return cli_usage_error(cmd, "--%s: invalid number '%s' (%llu to %llu)", o->long_name, arg,
                           (unsigned long long)(o->min ? o->min : 1), (unsigned long long)o->max);
}

/* ---- parsing ---- */

typedef struct leaf {
    const cli_opt *o;
    void *value; /* the command's, or its cli_ctx for a shared one */
} leaf;

/* The options of c's table in order, the shared ones expanded, *count of
 * them: 0, or CLI_EXIT_FAIL after printing why the table is wrong (too
 * long, or a name or letter given twice: a command's option must not
 * shadow a shared one). */
static int flatten(const char *cmd, const cli_opt *opts, leaf *v, size_t *count)
{
    size_t n = 0;
    for (const cli_opt *o = opts; o->type != CLI_KIND_END; o++) {
        for (const cli_opt *s = ctx_opts; o->type == CLI_KIND_CONTEXT && s->type; s++)
            if ((s->mask & o->mask) && n < MAX_OPTS)
                v[n++] = (leaf){s, o->value};
        if (o->type != CLI_KIND_CONTEXT && o->type != CLI_KIND_GROUP && n < MAX_OPTS)
            v[n++] = (leaf){o, o->value};
        if (n == MAX_OPTS) {
            cli_error(cmd, "internal: more than %d options", MAX_OPTS);
            return CLI_EXIT_FAIL;
        }
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(v[i].o->long_name, v[j].o->long_name) ||
                (v[i].o->short_name && v[i].o->short_name == v[j].o->short_name)) {
                cli_error(cmd, "internal: option --%s declared twice", v[i].o->long_name);
                return CLI_EXIT_FAIL;
            }
    *count = n;
    return 0;
}

static int set(const char *cmd, const leaf *l, const char *arg)
{
    const cli_opt *o = l->o;
    switch (o->type) {
    case CLI_KIND_FLAG:
        *(bool *)l->value = true;
        return 0;
    case CLI_KIND_STRING:
        *(const char **)l->value = arg;
        return 0;
    case CLI_KIND_UINT:
        return opt_uint(cmd, o, arg, l->value);
    case CLI_KIND_DURATION:
        return cli_opt_duration(cmd, o, arg, l->value);
    case CLI_KIND_CALLBACK:
        return o->cb(l->value, cmd, arg);
    default:
        return 0;
    }
}

int cli_parse(const cli_cmd *c, int argc, char **argv, int *first)
{
    leaf v[MAX_OPTS];
    struct option lo[2 * MAX_OPTS + 4];
    char so[3 * MAX_OPTS + 4] = "+:h";
    size_t n, nl = 0, ns = strlen(so);
    if (flatten(c->name, c->opts, v, &n) != 0)
        return CLI_EXIT_FAIL;
    for (size_t i = 0; i < n; i++) {
        const cli_opt *o = v[i].o;
        int has = o->type == CLI_KIND_FLAG ? no_argument : required_argument;
        lo[nl++] = (struct option){o->long_name, has, NULL, 256 + (int)i};
        if (o->alias)
            lo[nl++] = (struct option){o->alias, has, NULL, 256 + (int)i};
        if (o->short_name) {
            so[ns++] = (char)o->short_name;
            if (has == required_argument)
                so[ns++] = ':';
        }
    }
    lo[nl++] = (struct option){"help", no_argument, NULL, 'h'};
    /* hidden: the manual page and the completion list of the table */
    lo[nl++] = (struct option){"man", no_argument, NULL, OPT_MAN};
    lo[nl++] = (struct option){"complete", no_argument, NULL, OPT_COMPLETE};
    lo[nl] = (struct option){NULL, 0, NULL, 0};
    so[ns] = '\0';

    int ch;
    opterr = 0;
    optind = 1;
    /* '+': the first operand starts a COMMAND (as with perf stat) */
    while ((ch = getopt_long(argc, argv, so, lo, NULL)) != -1) {
        if (ch == 'h' || ch == OPT_MAN || ch == OPT_COMPLETE) {
            (ch == 'h' ? cli_help : ch == OPT_MAN ? cli_man : cli_complete)(stdout, c);
            return -1;
        }
        const leaf *l = NULL;
        if (ch >= 256 && (size_t)(ch - 256) < n)
            l = &v[ch - 256];
        for (size_t i = 0; !l && ch != ':' && ch != '?' && i < n; i++)
            if (v[i].o->short_name == ch)
                l = &v[i];
        if (!l)
            return cli_getopt_error(c->name, ch, argv);
        int st = set(c->name, l, optarg);
        if (st)
            return st;
    }
    if (optind < argc && !c->operands)
        return cli_extra_arg(c->name, argv[optind]);
    *first = optind;
    return 0;
}

/* ---- --help ---- */

/* Writes text with each "%s" as the program's name and "%%" as '%'. */
static void put_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (s[0] == '%' && s[1] == 's') {
            fputs(cli_prog, f);
            s++;
        } else if (s[0] == '%' && s[1] == '%') {
            fputc('%', f);
            s++;
        } else {
            fputc(*s, f);
        }
    }
}

/* "  -i, --interval DURATION   window length ...", continuation lines of
 * the help indented to HELP_COL. */
static void put_option(FILE *f, const cli_opt *o)
{
    char left[128];
    int w = snprintf(left, sizeof(left), "  %c%c%s--%s%s%s", o->short_name ? '-' : ' ',
                     o->short_name ? o->short_name : ' ', o->short_name ? ", " : "  ", o->long_name,
                     o->argh ? " " : "", o->argh ? o->argh : "");
    fputs(left, f);
    if (w < HELP_COL)
        fprintf(f, "%*s", HELP_COL - w, "");
    else
        fprintf(f, "\n%*s", HELP_COL, "");
    for (const char *h = o->help; *h; h++) {
        if (*h == '\n') {
            fprintf(f, "\n%*s", HELP_COL, "");
        } else if (h[0] == '%' && (h[1] == 's' || h[1] == '%')) {
            fputs(h[1] == 's' ? cli_prog : "%", f);
            h++;
        } else {
            fputc(*h, f);
        }
    }
    if (o->alias)
        fprintf(f, "\n%*s(also --%s, its older spelling)", HELP_COL, "", o->alias);
    fputc('\n', f);
}

void cli_help(FILE *f, const cli_cmd *c)
{
    fputs("Usage: ", f);
    put_text(f, c->usage);
    put_text(f, c->about);
    for (const cli_opt *o = c->opts; o->type != CLI_KIND_END; o++) {
        if (o->type == CLI_KIND_GROUP) {
            fputc('\n', f);
            put_text(f, o->help);
            fputc('\n', f);
        } else if (o->type == CLI_KIND_CONTEXT) {
            fputs("\nContext (the same options in every command that "
                  "takes them):\n",
                  f);
            for (const cli_opt *s = ctx_opts; s->type; s++)
                if (s->mask & o->mask)
                    put_option(f, s);
        } else {
            put_option(f, o);
        }
    }
    fputs("\n  -h, --help                show this help\n", f);
    if (c->footer) {
        fputc('\n', f);
        put_text(f, c->footer);
    }
}
