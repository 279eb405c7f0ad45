/*
 * modules.c - `powerapi modules`: every sensor and formula, whether it
 * can run on this machine (and why not), what each formula requires and
 * uses, and what "auto" enables (sensors: for which formulas).
 */
#include "cli.h"
#include "output.h"
#include "profout.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char *CMD = "modules";

static const char modules_about[] =
    "\n"
    "Lists the sensor and formula modules: kind, whether they can run on "
    "this\nmachine (and why not), and which ones 'auto' enables (the default "
    "of monitor);\nwith --sensor, --formula, --disable or --calibration, "
    "what a monitor run\ngiven the same options would run.\n";

static const char *kind_name(pa_module_kind k)
{
    return k == PA_SENSOR ? "sensor" : k == PA_FORMULA ? "formula" : "?";
}

/* "cpu", "nic", or a registered formula's component ("gpu"). */
static const char *component_name(pa_ctx *ctx, pa_component c)
{
    const char *name = pa_component_name(ctx, c);
    return name ? name : "";
}

static void json_bool(FILE *f, const char *key, int v)
{
    fprintf(f, ",\"%s\":%s", key, v ? "true" : "false");
}

/* ,"key":["a","b"] from a NULL-terminated list or a ","-separated text */
static void json_names(FILE *f, const char *key, const char *const *list, const char *text)
{
    fprintf(f, ",\"%s\":[", key);
    int k = 0;
    for (; list && *list; list++, k++) {
        fputs(k ? "," : "", f);
        pc_out_json_str(f, *list);
    }
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", text ? text : "");
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), k++) {
        fputs(k ? "," : "", f);
        pc_out_json_str(f, t);
    }
    fputc(']', f);
}

/* "a+b" from a NULL-terminated list ("" when empty) */
static const char *joined(const char *const *list, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t off = 0; list && *list && off < len; list++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "+" : "", *list);
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

static void print_modules(pa_ctx *ctx, FILE *f, rp_out_format fmt, const pa_module_info *m,
                          size_t n)
{
    if (fmt == RP_OUT_TABLE)
        fprintf(f, "%-12s %-8s %-4s %-9s %-7s %s\n", "NAME", "KIND", "FOR", "AVAILABLE", "ENABLED",
                "DESCRIPTION / WHY NOT");
    else if (fmt == RP_OUT_CSV)
        fprintf(f, "name,kind,component,available,enabled,failing,options,"
                   "description,why,enabled_by,required_by,requires,uses\n");
    for (size_t i = 0; i < n; i++) {
        const pa_module_info *x = &m[i];
        const char *why = x->why;
        switch (fmt) {
        case RP_OUT_TABLE: {
            const char *text = (!x->available || x->failing) && why[0]
                                   ? why
                                   : (x->description ? x->description : "");
            fprintf(f, "%-12s %-8s %-4s %-9s %-7s %s%s\n", x->name, kind_name(x->kind),
                    component_name(ctx, x->component), x->available ? "yes" : "no", enabled_how(x),
                    x->failing ? "failing: " : "", text);
            char req[256], use[256];
            joined(x->requires, req, sizeof(req));
            joined(x->uses, use, sizeof(use));
            if (req[0] || use[0])
                fprintf(f, "%-12s %-8s %-4s %-9s %-7s requires: %s%s%s\n", "", "", "", "", "",
                        req[0] ? req : "-", use[0] ? "; uses: " : "", use);
            if (x->enabled && x->required_by[0])
                fprintf(f, "%-12s %-8s %-4s %-9s %-7s required by: %s\n", "", "", "", "", "",
                        x->required_by);
            if (x->enabled && x->options[0])
                fprintf(f, "%-12s %-8s %-4s %-9s %-7s options: %s\n", "", "", "", "", "",
                        x->options);
            if (x->enabled && x->auto_why[0])
                fprintf(f, "%-12s %-8s %-4s %-9s %-7s chosen by auto: %s\n", "", "", "", "", "",
                        x->auto_why);
            break;
        }
        case RP_OUT_CSV:
            fprintf(f, "%s,%s,%s,%s,%s,%s,", x->name, kind_name(x->kind),
                    component_name(ctx, x->component), x->available ? "true" : "false",
                    x->enabled ? "true" : "false", x->failing ? "true" : "false");
            /* options and texts may hold commas: quoted where they do */
            pc_out_csv_field(f, x->options);
            fputc(',', f);
            pc_out_csv_field(f, x->description);
            fputc(',', f);
            pc_out_csv_field(f, why);
            fputc(',', f);
            {
                char req[256], use[256], by[256];
                snprintf(by, sizeof(by), "%s", x->required_by);
                for (char *c = by; *c; c++)
                    if (*c == ',')
                        *c = '+';
                fprintf(f, "%s,%s,%s,%s\n", x->enabled ? enabled_how(x) : "", by,
                        joined(x->requires, req, sizeof(req)), joined(x->uses, use, sizeof(use)));
            }
            break;
        case RP_OUT_JSON:
            fputs("{\"name\":", f);
            pc_out_json_str(f, x->name);
            fputs(",\"kind\":", f);
            pc_out_json_str(f, kind_name(x->kind));
            fputs(",\"component\":", f);
            pc_out_json_str(f, component_name(ctx, x->component));
            json_bool(f, "available", x->available);
            json_bool(f, "enabled", x->enabled);
            json_bool(f, "failing", x->failing);
            fputs(",\"options\":", f);
            pc_out_json_str(f, x->options);
            fputs(",\"description\":", f);
            pc_out_json_str(f, x->description);
            fputs(",\"why\":", f);
            pc_out_json_str(f, why);
            fputs(",\"enabled_by\":", f);
            pc_out_json_str(f, x->enabled ? enabled_how(x) : "");
            json_names(f, "required_by", NULL, x->required_by);
            json_names(f, "requires", x->requires, NULL);
            json_names(f, "uses", x->uses, NULL);
            if (x->auto_why[0]) {
                fputs(",\"auto\":", f);
                pc_out_json_str(f, x->auto_why);
            }
            fputs("}\n", f);
            break;
        }
    }
}

/* Every module of ctx (pa_module_list): the count, with *out malloc'd
 * (the caller frees it), or -errno. */
static int list_modules(pa_ctx *ctx, pa_module_info **out)
{
    int n = pa_module_list(ctx, NULL, 0);
    if (n < 0)
        return n;
    pa_module_info *mods = calloc(n ? (size_t)n : 1, sizeof(*mods));
    if (!mods)
        return -ENOMEM;
    int got = pa_module_list(ctx, mods, (size_t)n);
    if (got < 0) {
        free(mods);
        return got;
    }
    *out = mods;
    return got < n ? got : n;
}

int cli_modules_print(pa_ctx *ctx, FILE *f, rp_out_format fmt)
{
    pa_module_info *mods = NULL;
    int n = list_modules(ctx, &mods);
    if (n < 0)
        return n;
    print_modules(ctx, f, fmt, mods, (size_t)n);
    free(mods);
    return 0;
}

/* --names: "KIND NAME KEY..." a line, each module and the keys of its
 * options (for the shell completion: what exists, whatever this machine
 * can run), then "formula auto".  0 or -errno. */
static int print_names(pa_ctx *ctx)
{
    pa_module_info *mods = NULL;
    int n = list_modules(ctx, &mods), rc = 0;
    if (n < 0)
        return n;
    for (int i = 0; i < n; i++) {
        const char *const *keys = NULL;
        if ((rc = pa_module_option_keys(ctx, mods[i].name, &keys)) < 0)
            break;
        printf("%s %s", kind_name(mods[i].kind), mods[i].name);
        for (; keys && *keys; keys++)
            printf(" %s", *keys);
        putchar('\n');
    }
    free(mods);
    if (rc == 0)
        printf("formula auto\n");
    return rc;
}

int cli_modules(int argc, char **argv)
{
    rp_out_format fmt = RP_OUT_TABLE;
    bool names = false;
    cli_ctx co;
    cli_ctx_init(&co);
    const cli_opt opts[] = {
        CLI_OPT_GROUP("Options:"),
        CLI_OPT_CHOICE('f', "format", &fmt, "FORMAT", "table (default), csv or json",
                       cli_format_option, cli_format_choices),
        CLI_OPT_FLAG(0, "names", &names,
                     "only the names of the modules and their option keys,\n"
                     "\"KIND NAME KEY...\" a line (for shell completion)"),
        CLI_OPT_CONTEXT(&co, CLI_CTXOPT_ROOTS | CLI_CTXOPT_CALIBRATION | CLI_CTXOPT_MODULES),
        CLI_OPT_END,
    };
    const cli_cmd c = {
        .name = CMD, .usage = "%s modules [OPTIONS]\n", .about = modules_about, .opts = opts};
    int first;
    int status = cli_parse(&c, argc, argv, &first);
    pa_ctx *ctx = NULL;
    pa_module_info *mods = NULL;
    if (status) {
        status = status < 0 ? CLI_EXIT_OK : status;
        goto out;
    }
    if ((status = cli_ctx_create(&co, CMD, &ctx)) != 0)
        goto out;
    if (names) {
        int rc = print_names(ctx);
        if (rc < 0)
            cli_error(CMD, "%s", cli_errmsg(rc));
        status = rc < 0 || fflush(stdout) != 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
        goto out;
    }
    /* Show what a monitor run would use: "auto" enables its choice.  A
     * failure here is not fatal: the list says why each module cannot
     * run. */
    if (pa_module_enable(ctx, "auto", NULL) < 0)
        cli_error(CMD, "auto: %s", cli_errmsg(-EINVAL));

    status = CLI_EXIT_FAIL;
    int n = pa_module_list(ctx, NULL, 0);
    if (n < 0) {
        cli_error(CMD, "%s", cli_errmsg(n));
        goto out;
    }
    mods = calloc(n ? (size_t)n : 1, sizeof(*mods));
    if (!mods) {
        cli_error(CMD, "out of memory");
        goto out;
    }
    int got = pa_module_list(ctx, mods, (size_t)n);
    if (got < 0) {
        cli_error(CMD, "%s", cli_errmsg(got));
        goto out;
    }
    if (got > n)
        got = n;
    print_modules(ctx, stdout, fmt, mods, (size_t)got);
    if (fmt == RP_OUT_TABLE)
        printf("\nENABLED: what 'auto', the default of '%s monitor', picks "
               "here (auto: its formulas;\nfor: sensors enabled for the "
               "formulas that require them).  A --formula brings\nthe sensors "
               "it requires, auto fills the components no --formula covers, "
               "and\n--disable keeps a module out.\n",
               cli_prog);
    status = fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
out:
    free(mods);
    pa_ctx_free(ctx);
    cli_ctx_fini(&co);
    return status;
}
