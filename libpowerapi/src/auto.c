/*
 * auto.c - "auto": gives every component that no enabled formula computes
 * the best formula this machine can run, with its sensors.  Candidates are
 * the formulas (built-in or registered) that declare the component with an
 * auto rank above 0, highest rank first; each says through its fits
 * callback whether it suits this machine, and why.  Nothing here knows a
 * module by name.  Called with ctx->lock held.
 *
 * "auto" is a name to pa_module_enable and pa_module_disable, not a module:
 * they are here, so that the lifecycle (module.c) never tests a name and
 * never calls back into auto.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
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

static void add_candidate(const char *comp, const pa_module_ops *ops, const pa_module_ops **v,
                          size_t *n)
{
    const char *name = pa__ops_comp_name(ops);
    if (*n == PA_MAX_CANDIDATES || ops->kind != PA_FORMULA || pa__ops_rank(ops) <= 0 || !name ||
        strcmp(name, comp) != 0)
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

/* The candidates of component comp, best first. */
static size_t candidates(const pa_ctx *ctx, const char *comp, const pa_module_ops **v)
{
    size_t n = 0;
    for (size_t i = 0; pa__builtin_modules[i]; i++)
        add_candidate(comp, pa__builtin_modules[i], v, &n);
    for (size_t i = 0; i < ctx->nregistered; i++)
        add_candidate(comp, ctx->registered[i], v, &n);
    return n;
}

static bool covered(const pa_ctx *ctx, const char *comp)
{
    for (const pa_module *m = ctx->modules; m; m = m->next) {
        const char *name = pa__ops_comp_name(m->ops);
        if (m->ops->kind == PA_FORMULA && name && !strcmp(name, comp))
            return true;
    }
    return false;
}

/* The components auto fills: the context's, then those that built-in
 * formulas declare and none of whose formulas ran yet, in module order.
 * Returns how many names went to v. */
static size_t components(const pa_ctx *ctx, const char **v, size_t cap)
{
    size_t n = 0;
    for (size_t k = 0; k < ctx->ncomp && n < cap; k++)
        v[n++] = ctx->comp_names[k];
    for (size_t i = 0; pa__builtin_modules[i] && n < cap; i++) {
        const char *name = pa__ops_comp_name(pa__builtin_modules[i]);
        bool dup = !name || pa__ops_rank(pa__builtin_modules[i]) <= 0;
        for (size_t k = 0; k < n && !dup; k++)
            dup = !strcmp(v[k], name);
        if (!dup)
            v[n++] = name;
    }
    return n;
}

void pa__auto_fill(pa_ctx *ctx)
{
    ctx->auto_dirty = false;
    if (ctx->auto_off)
        return;
    const char *comps[2 * PA_MAX_COMPONENTS];
    size_t ncomps = components(ctx, comps, 2 * PA_MAX_COMPONENTS);
    for (size_t c = 0; c < ncomps; c++) {
        if (covered(ctx, comps[c]))
            continue;
        const pa_module_ops *v[PA_MAX_CANDIDATES];
        size_t n = candidates(ctx, comps[c], v);
        for (size_t i = 0; i < n; i++) {
            char why[256];
            if (!auto_may(ctx, v[i]) || !pa__ops_fits(v[i], &ctx->env, why, sizeof(why)) ||
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

/* ------------------------------------------------------------------ */
/* The public enable and disable, which know the name "auto"           */
/* ------------------------------------------------------------------ */

int pa_module_enable(pa_ctx *ctx, const char *name, const char *options)
{
    if (!ctx || !name)
        return pa__err(-EINVAL, "pa_module_enable: ctx and name are required");
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    if (!strcmp(name, "auto")) {
        ctx->auto_off = false;
        pa__auto_fill(ctx);
    } else {
        rc = pa__enable_locked(ctx, name, options, false);
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* Stops auto and disables what it had chosen, with the sensors enabled for
 * it. */
static void auto_stop(pa_ctx *ctx)
{
    ctx->auto_off = true;
    for (pa_module *m = ctx->modules; m;) {
        if (m->by_auto) {
            pa__mod_remove(ctx, m);
            m = ctx->modules; /* the list changed: start over */
        } else {
            m = m->next;
        }
    }
}

int pa_module_disable(pa_ctx *ctx, const char *name)
{
    if (!ctx || !name)
        return pa__err(-EINVAL, "pa_module_disable: ctx and name are required");
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    if (!strcmp(name, "auto"))
        auto_stop(ctx);
    else
        rc = pa__disable_locked(ctx, name);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}
