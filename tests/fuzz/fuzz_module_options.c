/* fuzz_module_options.c - module options strings as users give them: a
 * command line's --sensor/--formula "NAME[:OPTS]" (cli/modargs.c, then the
 * library enables the module and its start parses the options), a later
 * pa_module_configure of the same module, and the option parser itself
 * (pa__options_parse, merge, format, typed getters).  On a fixture tree
 * (rapl-laptop), two ticks.  Pieces: the NAME[:OPTS] argument, the
 * configure string, a raw options string.
 *
 * A sockfile= naming a path ("/dev/zero", "../../proc/kmsg") is skipped:
 * it is a file the user chose to read, not input from outside. */
#include "fuzz.h"

#include "cli.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const allowed[] = {"events", "path", "tdp", "volt", "idle", "sockfile", NULL};

static void raw_options(const char *s)
{
    pa_options *o = NULL, *o2 = NULL, *m = NULL;
    if (pa__options_parse("fuzz", s, allowed, &o) < 0) {
        if (!*pa_last_error())
            fz_fail("options: error without a message");
        return;
    }
    if (pa__options_parse("fuzz", "tdp=15,path=msr", allowed, &o2) == 0 &&
        pa__options_merge(o2, o, &m) == 0) {
        char buf[64];
        int need = pa__options_format(m, buf, sizeof(buf));
        if (need >= 0) {
            char *big = malloc((size_t)need + 1);
            if (big && pa__options_format(m, big, (size_t)need + 1) != need)
                fz_fail("options: format gave two lengths");
            free(big);
        }
    }
    double d;
    uint64_t ns;
    for (size_t i = 0; allowed[i]; i++) {
        (void)pa_options_get(o, allowed[i]);
        (void)pa_options_get_double(o, allowed[i], 1.0, &d);
        (void)pa_options_get_duration_ns(o, allowed[i], 1, &ns);
    }
    pa__options_free(m);
    pa__options_free(o2);
    pa__options_free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_piece pc[3];
    size_t n = fz_split(data, size, pc, 3);
    char *arg = fz_strdup(&pc[0]);
    char *conf = n > 1 ? fz_strdup(&pc[1]) : NULL;
    if (n > 2) {
        char *raw = fz_strdup(&pc[2]);
        raw_options(raw);
        free(raw);
    }
    const char *sf;
    if (((sf = strstr(arg, "sockfile=")) && strchr(sf, '/')) ||
        (conf && (sf = strstr(conf, "sockfile=")) && strchr(sf, '/')))
        goto out;

    const char *root = fz_root("rapl-laptop");
    pa_ctx *ctx = fz_ctx(root);
    cli_mods mods = {0};
    /* the built-in formulas' names; anything else goes as --sensor */
    pa_module_kind kind = strstr(arg, "tdp") || strstr(arg, "share") || strstr(arg, "linear")
                              ? PA_FORMULA
                              : PA_SENSOR;
    if (cli_mods_add(&mods, "fuzz", kind, arg) == 0 && cli_mods_apply(ctx, "fuzz", &mods) == 0) {
        pa_watch_all(ctx, 1);
        pa_tick_at(ctx, 1000000000ull);
        if (conf && mods.n) {
            int rc = pa_module_configure(ctx, mods.v[0].name, conf);
            if (rc < 0 && !*pa_last_error())
                fz_fail("configure: error %d without a message", rc);
        }
        pa_tick_at(ctx, 2000000000ull);
        pa_report *r = NULL;
        if (pa_report_get(ctx, &r) == 0)
            pa_report_free(r);
        if (mods.n)
            pa_module_disable(ctx, mods.v[0].name);
        pa_tick_at(ctx, 3000000000ull);
    }
    cli_mods_free(&mods);
    pa_ctx_free(ctx);
out:
    free(arg);
    free(conf);
    return 0;
}
