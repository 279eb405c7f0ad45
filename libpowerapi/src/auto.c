/*
 * auto.c - "auto": gives every component that no enabled formula computes
 * the best formula this machine can run, with its sensors.  Candidates are
 * the formulas (built-in or registered) that declare the component with an
 * auto rank above 0, highest rank first; each says through its fits
 * callback whether it suits this machine, and why.  Nothing here knows a
 * module by name.  Called with ctx->lock held.
 */
#include "internal.h"

#include <string.h>

#define PA_MAX_CANDIDATES 64

/* May auto enable formula ops: neither it nor a sensor it requires was
 * disabled by the user? */
static bool auto_may(const pa_ctx *ctx, const pa_module_ops *ops)
{
    if (pa__is_disabled(ctx, ops->name))
        return false;
    for (const char *const *r = pa__ops_requires(ops); r && *r; r++)
        if (!pa__mod_find(ctx, *r) && pa__is_disabled(ctx, *r))
            return false;
    return true;
}

static void add_candidate(const pa_ctx *ctx, pa_component comp,
                          const pa_module_ops *ops,
                          const pa_module_ops **v, size_t *n)
{
    if (*n == PA_MAX_CANDIDATES || ops->kind != PA_FORMULA ||
        pa__ops_rank(ops) <= 0 || pa__ops_component(ctx, ops) != comp)
        return;
    /* insertion by rank, highest first; equal ranks keep their order
     * (built-ins in build order, then registered ones) */
    size_t i = *n;
    while (i > 0 && pa__ops_rank(v[i - 1]) < pa__ops_rank(ops)) {
        v[i] = v[i - 1];
        i--;
    }
    v[i] = ops;
    (*n)++;
}

/* The candidates of comp, best first. */
static size_t candidates(const pa_ctx *ctx, pa_component comp,
                         const pa_module_ops **v)
{
    size_t n = 0;
    for (size_t i = 0; pa__builtin_modules[i]; i++)
        add_candidate(ctx, comp, pa__builtin_modules[i], v, &n);
    for (size_t i = 0; i < ctx->nregistered; i++)
        add_candidate(ctx, comp, ctx->registered[i], v, &n);
    return n;
}

static bool covered(const pa_ctx *ctx, pa_component comp)
{
    for (const pa_module *m = ctx->modules; m; m = m->next)
        if (m->ops->kind == PA_FORMULA && m->comp == comp)
            return true;
    return false;
}

void pa__auto_fill(pa_ctx *ctx)
{
    ctx->auto_dirty = false;
    if (ctx->auto_off)
        return;
    for (size_t k = 0; k < ctx->ncomp; k++) {
        pa_component comp = (pa_component)(k + 1);
        if (covered(ctx, comp))
            continue;
        const pa_module_ops *v[PA_MAX_CANDIDATES];
        size_t n = candidates(ctx, comp, v);
        for (size_t i = 0; i < n; i++) {
            char why[256];
            if (!auto_may(ctx, v[i]) ||
                !pa__ops_fits(v[i], &ctx->env, why, sizeof(why)) ||
                pa__enable_locked(ctx, v[i]->name, NULL, true) < 0)
                continue;
            pa_module *m = pa__mod_find(ctx, v[i]->name);
            if (m)
                snprintf(m->auto_why, sizeof(m->auto_why), "%s", why);
            break;
        }
    }
    /* enabling above marked the modules changed: auto is done with them */
    ctx->auto_dirty = false;
}
