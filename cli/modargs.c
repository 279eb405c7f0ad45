/*
 * modargs.c - the --sensor, --formula and --disable arguments shared by
 * `monitor` and `daemon`: recorded while parsing, applied to a context
 * (every --sensor/--formula in order, then the --disables), each error one
 * line naming the flag and the fix.  The library's rule does the rest: a
 * formula brings the sensors it requires, and "auto" fills at the first
 * tick every component no --formula covers, leaving out what --disable
 * named (powerapi.h, pa_module_enable).
 */
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int cli_mods_add(cli_mods *m, const char *cmd, pa_module_kind kind, const char *arg)
{
    const char *flag = kind == PA_SENSOR ? "--sensor" : "--formula";
    if (!arg[0] || arg[0] == ':')
        return cli_usage_error(cmd, "%s: missing module name in '%s'", flag, arg);
    cli_mod_req *n = realloc(m->v, (m->n + 1) * sizeof(*n));
    if (!n)
        return -ENOMEM;
    m->v = n;
    char *name = strdup(arg);
    if (!name)
        return -ENOMEM;
    char *colon = strchr(name, ':');
    if (colon)
        *colon = '\0';
    m->v[m->n++] = (cli_mod_req){flag, kind, name, colon ? colon + 1 : NULL, arg};
    return 0;
}

int cli_mods_disable(cli_mods *m, const char *cmd, const char *name)
{
    if (!name[0] || strchr(name, ':'))
        return cli_usage_error(cmd, "--disable: bad module name '%s'", name);
    const char **n = realloc(m->disables, (m->ndisables + 1) * sizeof(*n));
    if (!n)
        return -ENOMEM;
    m->disables = n;
    m->disables[m->ndisables++] = name;
    return 0;
}

int cli_mods_option(cli_mods *m, const char *cmd, int disable, pa_module_kind kind, const char *arg)
{
    int rc = disable ? cli_mods_disable(m, cmd, arg) : cli_mods_add(m, cmd, kind, arg);
    if (rc == -ENOMEM) {
        cli_error(cmd, "out of memory");
        rc = CLI_EXIT_FAIL;
    }
    return rc;
}

void cli_mods_free(cli_mods *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].name);
    free(m->v);
    free(m->disables);
    memset(m, 0, sizeof(*m));
}

/* Prints "<flag> <arg>: <library message>" (without the message's own
 * "<name>: " prefix) and returns the exit status. */
static int module_error(const char *cmd, const char *flag, const char *arg, const char *name,
                        int err)
{
    char msg[1024];
    const char *lib = cli_errmsg(err);
    size_t nl = strlen(name);
    if (!strncmp(lib, name, nl) && lib[nl] == ':' && lib[nl + 1] == ' ')
        lib += nl + 2;
    snprintf(msg, sizeof(msg), "%s", lib);
    /* an unknown name: the library's message lists the known ones */
    cli_error(cmd, "%s %s: %s", flag, arg, msg);
    /* unknown names and bad options are the user's; the rest the
     * machine's */
    return (err == -ENOENT || err == -EINVAL) ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}

/* --disable of a sensor that a --formula requires: the two flags
 * contradict each other. */
static int busy_error(pa_ctx *ctx, const char *cmd, const cli_mods *m, const char *name)
{
    char flags[512] = "";
    size_t off = 0;
    pa_module_info info;
    const pa_module_info *mi = pa_module_get(ctx, name, &info) == 0 ? &info : NULL;
    for (size_t i = 0; mi && i < m->n && off < sizeof(flags); i++) {
        const cli_mod_req *r = &m->v[i];
        /* required_by is ","-separated: match whole names */
        size_t l = strlen(r->name);
        const char *p = mi->required_by;
        bool found = false;
        while ((p = strstr(p, r->name)) != NULL && !found) {
            found = (p == mi->required_by || p[-1] == ',') && (p[l] == ',' || p[l] == '\0');
            p += l;
        }
        if (found)
            off += (size_t)snprintf(flags + off, sizeof(flags) - off, "%s%s %s", off ? " and " : "",
                                    r->flag, r->arg);
    }
    if (!flags[0]) /* not from this command line: the library's words */
        return module_error(cmd, "--disable", name, name, -EBUSY);
    cli_error(cmd,
              "--disable %s: %s require%s this sensor; drop one of the "
              "two",
              name, flags, strstr(flags, " and ") ? "" : "s");
    return CLI_EXIT_USAGE;
}

int cli_mods_apply(pa_ctx *ctx, const char *cmd, const cli_mods *m)
{
    int err;
    for (size_t i = 0; i < m->n; i++) {
        const cli_mod_req *r = &m->v[i];
        /* an unknown name is left to pa_module_enable's message */
        pa_module_info info;
        const pa_module_info *mi = pa_module_get(ctx, r->name, &info) == 0 ? &info : NULL;
        if (mi && mi->kind != r->kind) {
            cli_error(cmd, "%s %s: %s is a %s (use %s)", r->flag, r->name, r->name,
                      mi->kind == PA_SENSOR ? "sensor" : "formula",
                      mi->kind == PA_SENSOR ? "--sensor" : "--formula");
            return CLI_EXIT_USAGE;
        }
        err = pa_module_enable(ctx, r->name, r->options);
        if (err < 0)
            return module_error(cmd, r->flag, r->arg, r->name, err);
    }
    for (size_t i = 0; i < m->ndisables; i++) {
        const char *name = m->disables[i];
        err = pa_module_disable(ctx, name);
        if (err == -EBUSY)
            return busy_error(ctx, cmd, m, name);
        if (err < 0)
            return module_error(cmd, "--disable", name, name, err);
    }
    return 0;
}
