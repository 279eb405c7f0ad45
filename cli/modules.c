/*
 * modules.c - `powerapi modules`: every sensor and formula, whether it
 * can run on this machine (and why not), what each formula requires and
 * uses, and what "auto" enables (sensors: for which formulas).
 */
#include "cli.h"
#include "output.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char *CMD = "modules";

static void modules_help(FILE *f)
{
    fprintf(f,
            "Usage: %s modules [OPTIONS]\n"
            "\n"
            "Lists the sensor and formula modules: kind, whether they can run "
            "on this\nmachine (and why not), and which ones 'auto' enables "
            "(the default of monitor).\n"
            "\nOptions:\n"
            "  --format table|csv|json  output format (default table)\n"
            "  --procfs DIR             procfs root (default /proc)\n"
            "  --sysfs DIR              sysfs root (default /sys)\n"
            "  --hwdb FILE              hardware database file\n"
            "  -h, --help               show this help\n",
            pa_cli_prog);
}

static const char *kind_name(pa_module_kind k)
{
    return k == PA_SENSOR ? "sensor" : k == PA_FORMULA ? "formula" : "?";
}

static const char *component_name(pa_component c)
{
    return c == PA_COMP_CPU ? "cpu" : c == PA_COMP_NIC ? "nic" : "";
}

static void json_bool(FILE *f, const char *key, int v)
{
    fprintf(f, ",\"%s\":%s", key, v ? "true" : "false");
}

/* ,"key":["a","b"] from a NULL-terminated list or a ","-separated text */
static void json_names(FILE *f, const char *key, const char *const *list,
                       const char *text)
{
    fprintf(f, ",\"%s\":[", key);
    int k = 0;
    for (; list && *list; list++, k++) {
        fputs(k ? "," : "", f);
        pa_out_json_string(f, *list);
    }
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", text ? text : "");
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save), k++) {
        fputs(k ? "," : "", f);
        pa_out_json_string(f, t);
    }
    fputc(']', f);
}

/* "a+b" from a NULL-terminated list ("" when empty) */
static const char *joined(const char *const *list, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t off = 0; list && *list && off < len; list++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "+" : "",
                                *list);
    return buf;
}

/* What enabled it: "yes" (by name), "auto" (a formula auto chose), "for"
 * (a sensor enabled for the formulas of required_by). */
static const char *enabled_how(const pa_module_info *x)
{
    if (!x->enabled)
        return "no";
    if (x->failing)
        return "failing";
    if (x->user)
        return "yes";
    return x->by_auto ? "auto" : "for";
}

static void print_modules(FILE *f, pa_out_format fmt, const pa_module_info *m,
                          size_t n)
{
    if (fmt == PA_OUT_TABLE)
        fprintf(f, "%-12s %-8s %-4s %-9s %-7s %s\n", "NAME", "KIND", "FOR",
                "AVAILABLE", "ENABLED", "DESCRIPTION / WHY NOT");
    else if (fmt == PA_OUT_CSV)
        fprintf(f, "name,kind,component,available,enabled,failing,options,"
                   "description,why,enabled_by,required_by,requires,uses\n");
    for (size_t i = 0; i < n; i++) {
        const pa_module_info *x = &m[i];
        const char *why = x->why;
        switch (fmt) {
        case PA_OUT_TABLE: {
            const char *text = (!x->available || x->failing) && why[0]
                                   ? why
                                   : (x->description ? x->description : "");
            fprintf(f, "%-12s %-8s %-4s %-9s %-7s %s%s\n", x->name,
                    kind_name(x->kind), component_name(x->component),
                    x->available ? "yes" : "no", enabled_how(x),
                    x->failing ? "failing: " : "", text);
            char req[256], use[256];
            joined(x->requires, req, sizeof(req));
            joined(x->uses, use, sizeof(use));
            if (req[0] || use[0])
                fprintf(f, "%-12s %-8s %-4s %-9s %-7s requires: %s%s%s\n", "",
                        "", "", "", "", req[0] ? req : "-",
                        use[0] ? "; uses: " : "", use);
            if (x->enabled && x->required_by[0])
                fprintf(f, "%-12s %-8s %-4s %-9s %-7s required by: %s\n", "",
                        "", "", "", "", x->required_by);
            if (x->enabled && x->options[0])
                fprintf(f, "%-12s %-8s %-4s %-9s %-7s options: %s\n", "", "",
                        "", "", "", x->options);
            if (x->enabled && x->auto_why[0])
                fprintf(f, "%-12s %-8s %-4s %-9s %-7s chosen by auto: %s\n",
                        "", "", "", "", "", x->auto_why);
            break;
        }
        case PA_OUT_CSV:
            fprintf(
                f, "%s,%s,%s,%s,%s,%s,", x->name, kind_name(x->kind),
                component_name(x->component), x->available ? "true" : "false",
                x->enabled ? "true" : "false", x->failing ? "true" : "false");
            /* options and texts may hold commas: quote them */
            for (int k = 0; k < 3; k++) {
                const char *s = k == 0 ? x->options
                                : k == 1
                                    ? (x->description ? x->description : "")
                                    : why;
                fputc('"', f);
                for (; *s; s++) {
                    if (*s == '"')
                        fputc('"', f);
                    fputc(*s, f);
                }
                fputc('"', f);
                fputc(',', f);
            }
            {
                char req[256], use[256], by[256];
                snprintf(by, sizeof(by), "%s", x->required_by);
                for (char *c = by; *c; c++)
                    if (*c == ',')
                        *c = '+';
                fprintf(f, "%s,%s,%s,%s\n",
                        x->enabled ? enabled_how(x) : "", by,
                        joined(x->requires, req, sizeof(req)),
                        joined(x->uses, use, sizeof(use)));
            }
            break;
        case PA_OUT_JSON:
            fputs("{\"name\":", f);
            pa_out_json_string(f, x->name);
            fputs(",\"kind\":", f);
            pa_out_json_string(f, kind_name(x->kind));
            fputs(",\"component\":", f);
            pa_out_json_string(f, component_name(x->component));
            json_bool(f, "available", x->available);
            json_bool(f, "enabled", x->enabled);
            json_bool(f, "failing", x->failing);
            fputs(",\"options\":", f);
            pa_out_json_string(f, x->options);
            fputs(",\"description\":", f);
            pa_out_json_string(f, x->description);
            fputs(",\"why\":", f);
            pa_out_json_string(f, why);
            fputs(",\"enabled_by\":", f);
            pa_out_json_string(f, x->enabled ? enabled_how(x) : "");
            json_names(f, "required_by", NULL, x->required_by);
            json_names(f, "requires", x->requires, NULL);
            json_names(f, "uses", x->uses, NULL);
            if (x->auto_why[0]) {
                fputs(",\"auto\":", f);
                pa_out_json_string(f, x->auto_why);
            }
            fputs("}\n", f);
            break;
        }
    }
}

int pa_cli_modules(int argc, char **argv)
{
    enum { OPT_PROCFS = 256, OPT_SYSFS, OPT_HWDB, OPT_FORMAT };
    static const struct option longopts[] = {
        {"procfs", required_argument, NULL, OPT_PROCFS},
        {"sysfs", required_argument, NULL, OPT_SYSFS},
        {"hwdb", required_argument, NULL, OPT_HWDB},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    pa_ctx_opts copts = {0};
    pa_out_format fmt = PA_OUT_TABLE;
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            modules_help(stdout);
            return PA_EXIT_OK;
        case OPT_PROCFS:
            copts.procfs = optarg;
            break;
        case OPT_SYSFS:
            copts.sysfs = optarg;
            break;
        case OPT_HWDB:
            copts.hwdb = optarg;
            break;
        case OPT_FORMAT:
            if (pa_out_parse_format(optarg, &fmt) < 0)
                return pa_cli_usage_error(
                    CMD, "--format: unknown format '%s' (table, csv, json)",
                    optarg);
            break;
        default: /* ':' or an unknown option */
            return pa_cli_getopt_error(CMD, c, argv);
        }
    }
    if (optind < argc)
        return pa_cli_extra_arg(CMD, argv[optind]);

    pa_ctx *ctx = NULL;
    int err = pa_ctx_new(&ctx, &copts);
    if (err < 0) {
        pa_cli_error(CMD, "%s", pa_cli_errmsg(err));
        return PA_EXIT_FAIL;
    }
    /* Show what a monitor run would use: "auto" enables its choice.  A
     * failure here is not fatal: the list says why each module cannot
     * run. */
    if (pa_module_enable(ctx, "auto", NULL) < 0)
        pa_cli_error(CMD, "auto: %s", pa_cli_errmsg(-EINVAL));

    int status = PA_EXIT_FAIL;
    pa_module_info *mods = NULL;
    int n = pa_module_list(ctx, NULL, 0);
    if (n < 0) {
        pa_cli_error(CMD, "%s", pa_cli_errmsg(n));
        goto out;
    }
    mods = calloc(n ? (size_t)n : 1, sizeof(*mods));
    if (!mods) {
        pa_cli_error(CMD, "out of memory");
        goto out;
    }
    int got = pa_module_list(ctx, mods, (size_t)n);
    if (got < 0) {
        pa_cli_error(CMD, "%s", pa_cli_errmsg(got));
        goto out;
    }
    if (got > n)
        got = n;
    print_modules(stdout, fmt, mods, (size_t)got);
    if (fmt == PA_OUT_TABLE)
        printf("\nENABLED: what 'auto', the default of '%s monitor', picks "
               "here (auto: its formulas;\nfor: sensors enabled for the "
               "formulas that require them).  A --formula brings\nthe sensors "
               "it requires, auto fills the components no --formula covers, "
               "and\n--disable keeps a module out.\n",
               pa_cli_prog);
    status = fflush(stdout) == 0 ? PA_EXIT_OK : PA_EXIT_FAIL;
out:
    free(mods);
    pa_ctx_free(ctx);
    return status;
}
