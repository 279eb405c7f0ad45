/*
 * module.c - the module lifecycle: registration (the ABI check), the
 * components formulas declare, enabling a formula with the sensors it
 * requires and disabling it with them, options, and the module listing.
 * Everything here runs with ctx->lock held (the public calls take it), so
 * a change lands between ticks.  Nothing here tests a module's name: the
 * pseudo-module "auto" (its choices, and pa_module_enable and
 * pa_module_disable, which route its name) is auto.c's.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Reading a module table of any abi                                   */
/* ------------------------------------------------------------------ */

/* requires and uses exist from abi 2 on, flags, component_name, auto_rank
 * and fits from abi 3: a table built against an older abi ends before
 * them and must not be read there. */
const char *const *pa__ops_requires(const pa_module_ops *o)
{
    return o->abi >= 2 && o->kind == PA_FORMULA ? o->requires : NULL;
}

static const char *const *ops_uses(const pa_module_ops *o)
{
    return o->abi >= 2 && o->kind == PA_FORMULA ? o->uses : NULL;
}

unsigned pa__ops_flags(const pa_module_ops *o)
{
    return o->abi >= 3 ? o->flags : 0;
}

int pa__ops_rank(const pa_module_ops *o)
{
    return o->abi >= 3 && o->kind == PA_FORMULA && o->auto_rank > 0 ? o->auto_rank : 0;
}

int pa__ops_fits(const pa_module_ops *o, const pa_env *env, char *why, size_t len)
{
    why[0] = '\0';
    if (o->abi < 3 || !o->fits)
        return 1;
    return o->fits(env, why, len) > 0;
}

/* ------------------------------------------------------------------ */
/* Components                                                          */
/* ------------------------------------------------------------------ */

static bool valid_comp_name(const char *s)
{
    size_t n = 0;
    for (; s && *s; s++, n++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return n > 0 && n < sizeof(((pa_ctx *)0)->comp_names[0]);
}

static pa_component comp_lookup(const pa_ctx *ctx, const char *name)
{
    for (size_t k = 0; k < ctx->ncomp; k++)
        if (!strcmp(ctx->comp_names[k], name))
            return (pa_component)(k + 1);
    return PA_COMP_NONE;
}

int pa__comp_intern(pa_ctx *ctx, const char *name, pa_component *out)
{
    pa_component c = comp_lookup(ctx, name);
    if (c == PA_COMP_NONE) {
        if (ctx->ncomp == PA_MAX_COMPONENTS)
            return pa__err(-ENOSPC,
                           "component '%s': a context holds at most %d "
                           "components",
                           name, PA_MAX_COMPONENTS);
        snprintf(ctx->comp_names[ctx->ncomp], sizeof(ctx->comp_names[0]), "%s", name);
        ctx->comp_ptrs[ctx->ncomp] = ctx->comp_names[ctx->ncomp];
        c = (pa_component)++ctx->ncomp;
    }
    if (out)
        *out = c;
    return 0;
}

const char *pa__ops_comp_name(const pa_module_ops *o)
{
    if (o->kind != PA_FORMULA)
        return NULL;
    if (o->abi >= 3 && o->component_name)
        return o->component_name;
    return o->component == PA_COMP_CPU ? "cpu" : o->component == PA_COMP_NIC ? "nic" : NULL;
}

pa_component pa__ops_component(const pa_ctx *ctx, const pa_module_ops *o)
{
    const char *name = pa__ops_comp_name(o);
    return name ? comp_lookup(ctx, name) : PA_COMP_NONE;
}

int pa__comp_init(pa_ctx *ctx)
{
    int rc = pa__comp_intern(ctx, "cpu", NULL);
    if (rc == 0)
        rc = pa__comp_intern(ctx, "nic", NULL);
    return rc;
}

const char *pa_component_name(pa_ctx *ctx, pa_component c)
{
    if (!ctx)
        return NULL;
    pthread_mutex_lock(&ctx->lock);
    const char *name = c >= 1 && (size_t)c <= ctx->ncomp ? ctx->comp_names[c - 1] : NULL;
    pthread_mutex_unlock(&ctx->lock);
    return name;
}

/* ------------------------------------------------------------------ */
/* Modules                                                             */
/* ------------------------------------------------------------------ */

const pa_module_ops *pa__ops_find(const pa_ctx *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->nregistered; i++)
        if (!strcmp(ctx->registered[i]->name, name))
            return ctx->registered[i];
    for (size_t i = 0; pa__builtin_modules[i]; i++)
        if (!strcmp(pa__builtin_modules[i]->name, name))
            return pa__builtin_modules[i];
    return NULL;
}

pa_module *pa__mod_find(const pa_ctx *ctx, const char *name)
{
    for (pa_module *m = ctx->modules; m; m = m->next)
        if (!strcmp(m->ops->name, name))
            return m;
    return NULL;
}

void pa__module_destroy(pa_module *m)
{
    if (m->ops->stop)
        m->ops->stop(m);
    pa__options_free(m->opts);
    free(m->opts_text);
    free(m);
}

static void all_names(const pa_ctx *ctx, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t u = 0;
    for (size_t i = 0; pa__builtin_modules[i]; i++) {
        u = strlen(buf);
        snprintf(buf + u, len - u, "%s%s", u ? ", " : "", pa__builtin_modules[i]->name);
    }
    for (size_t i = 0; i < ctx->nregistered; i++) {
        u = strlen(buf);
        snprintf(buf + u, len - u, ", %s", ctx->registered[i]->name);
    }
}

/* -ENOENT naming the known modules. */
static int unknown_err(const pa_ctx *ctx, const char *name)
{
    char list[512];
    all_names(ctx, list, sizeof(list));
    return pa__err(-ENOENT, "unknown module '%s' (modules: auto, %s)", name, list);
}

/* Sensors before formulas; a sensor that discovers tasks first: the
 * other sensors read the tasks it found.  Formulas by component id (cpu,
 * nic, then the others), so that the report names them in one order
 * whatever order they were enabled in. */
static void mod_insert(pa_ctx *ctx, pa_module *m)
{
    pa_module **pp = &ctx->modules;
    if (m->ops->kind == PA_SENSOR) {
        if (!(pa__ops_flags(m->ops) & PA_MOD_DISCOVERS_TASKS))
            while (*pp && (*pp)->ops->kind == PA_SENSOR)
                pp = &(*pp)->next;
    } else {
        while (*pp && ((*pp)->ops->kind == PA_SENSOR || (*pp)->comp <= m->comp))
            pp = &(*pp)->next;
    }
    m->next = *pp;
    *pp = m;
}

static void mod_unlink(pa_ctx *ctx, pa_module *m)
{
    for (pa_module **pp = &ctx->modules; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            return;
        }
}

int pa__probe(const pa_ctx *ctx, const pa_module_ops *ops, char *why, size_t len)
{
    why[0] = '\0';
    if (!ops->probe)
        return 0;
    int rc = ops->probe(&ctx->env, why, len);
    if (rc < 0 && !why[0])
        snprintf(why, len, "%s: %s", ops->name, pa_strerror(rc));
    return rc;
}

static int set_options(pa_module *m, pa_options *o)
{
    char buf[512];
    int n = pa__options_format(o, buf, sizeof(buf));
    char *text = strdup(n >= 0 ? buf : "");
    if (!text)
        return -ENOMEM;
    pa__options_free(m->opts);
    free(m->opts_text);
    m->opts = o;
    m->opts_text = text;
    return 0;
}

static int configure_locked(pa_ctx *ctx, pa_module *m, const char *options)
{
    (void)ctx;
    pa_options *upd = NULL, *merged = NULL;
    int rc = pa__options_parse(m->ops->name, options, m->ops->options, &upd);
    if (rc < 0)
        return rc;
    rc = pa__options_merge(m->opts, upd, &merged);
    pa__options_free(upd);
    if (rc < 0)
        return pa__err(rc, "%s: out of memory", m->ops->name);
    if (m->ops->configure) {
        rc = m->ops->configure(m, merged);
    } else {
        /* no configure: restart with the new options, keep old on failure */
        void *old = m->priv;
        m->priv = NULL;
        rc = m->ops->start ? m->ops->start(m, merged) : 0;
        if (rc < 0) {
            m->priv = old;
        } else {
            void *fresh = m->priv;
            m->priv = old;
            if (m->ops->stop)
                m->ops->stop(m);
            m->priv = fresh;
        }
    }
    if (rc < 0) {
        pa__options_free(merged);
        if (!pa_last_error()[0])
            pa__err(rc, "%s: options '%s' refused", m->ops->name, options);
        return rc;
    }
    rc = set_options(m, merged);
    if (rc < 0) {
        pa__options_free(merged);
        return pa__err(rc, "%s: out of memory", m->ops->name);
    }
    m->fail_count = 0;
    m->retry_tick = 0;
    m->err[0] = '\0';
    return 0;
}

/* ---- what formulas need (pa_module_ops.requires / .uses) ---- */

static bool names_have(const char *const *l, const char *name)
{
    for (; l && *l; l++)
        if (!strcmp(*l, name))
            return true;
    return false;
}

bool pa__is_disabled(const pa_ctx *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->ndisabled; i++)
        if (!strcmp(ctx->disabled[i], name))
            return true;
    return false;
}

static int disabled_add(pa_ctx *ctx, const char *name)
{
    if (pa__is_disabled(ctx, name))
        return 0;
    char **v = realloc(ctx->disabled, (ctx->ndisabled + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    ctx->disabled = v;
    if (!(v[ctx->ndisabled] = strdup(name)))
        return -ENOMEM;
    ctx->ndisabled++;
    return 0;
}

static void disabled_remove(pa_ctx *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->ndisabled; i++)
        if (!strcmp(ctx->disabled[i], name)) {
            free(ctx->disabled[i]);
            ctx->disabled[i] = ctx->disabled[--ctx->ndisabled];
            return;
        }
}

/* The first enabled formula that requires sensor `name` (only among those
 * the user enabled when user_only), or NULL. */
static pa_module *requirer(const pa_ctx *ctx, const char *name, bool user_only)
{
    for (pa_module *f = ctx->modules; f; f = f->next)
        if (f->ops->kind == PA_FORMULA && (!user_only || f->by_user) &&
            names_have(pa__ops_requires(f->ops), name))
            return f;
    return NULL;
}

/* Unlinks and stops m; a formula takes along the sensors that were
 * enabled only for it. */
void pa__mod_remove(pa_ctx *ctx, pa_module *m)
{
    const pa_module_ops *ops = m->ops;
    mod_unlink(ctx, m);
    pa__module_destroy(m);
    if (pa__ops_flags(ops) & PA_MOD_TASK_COUNTERS)
        pa__counters_declare(ctx, NULL, 0);
    ctx->auto_dirty = true;
    for (const char *const *r = pa__ops_requires(ops); r && *r; r++) {
        pa_module *s = pa__mod_find(ctx, *r);
        if (s && s->ops->kind == PA_SENSOR && !s->by_user && !requirer(ctx, *r, false))
            pa__mod_remove(ctx, s);
    }
}

/* Parses the options and starts a module of ops (probed by the caller);
 * not linked yet. */
static int mod_start(pa_ctx *ctx, const pa_module_ops *ops, const char *options, pa_module **out)
{
    pa_options *opts = NULL;
    int rc = pa__options_parse(ops->name, options, ops->options, &opts);
    if (rc < 0)
        return rc;
    pa_module *m = calloc(1, sizeof(*m));
    if (!m) {
        pa__options_free(opts);
        return pa__err(-ENOMEM, "%s: out of memory", ops->name);
    }
    m->ops = ops;
    m->ctx = ctx;
    m->comp = pa__ops_component(ctx, ops);
    pa__err(0, "%s", "");
    rc = ops->start ? ops->start(m, opts) : 0;
    if (rc < 0) {
        pa__options_free(opts);
        free(m);
        if (!pa_last_error()[0])
            pa__err(rc, "%s: failed to start: %s", ops->name, pa_strerror(rc));
        return rc;
    }
    rc = set_options(m, opts);
    if (rc < 0) {
        m->opts = NULL;
        pa__options_free(opts);
        pa__module_destroy(m);
        return pa__err(-ENOMEM, "%s: out of memory", ops->name);
    }
    *out = m;
    return 0;
}

/* A requirement's failure, said as the formula's: "cpu-tdp requires the
 * sensor procfs-cpu, which cannot run here: <why>". */
static int require_err(int rc, const char *formula, const char *sensor, const char *what)
{
    char why[512];
    snprintf(why, sizeof(why), "%s", pa_last_error());
    return pa__err(rc, "%s requires the sensor %s, which %s: %s", formula, sensor, what, why);
}

#define PA_MAX_REQUIRES 16

/* Checks that every sensor ops requires is a known sensor. */
static int check_requires(const pa_ctx *ctx, const pa_module_ops *ops)
{
    size_t n = 0;
    for (const char *const *r = pa__ops_requires(ops); r && *r; r++, n++) {
        const pa_module_ops *s = pa__ops_find(ctx, *r);
        if (!s)
            return pa__err(-ENOENT,
                           "%s requires the sensor '%s', which is not a "
                           "known module (register it before enabling %s)",
                           ops->name, *r, ops->name);
        if (s->kind != PA_SENSOR)
            return pa__err(-EINVAL,
                           "%s requires '%s', which is a formula, not a "
                           "sensor (fix the module's requires list)",
                           ops->name, *r);
        if (n == PA_MAX_REQUIRES)
            return pa__err(-EINVAL, "%s requires more than %d sensors", ops->name, PA_MAX_REQUIRES);
    }
    return 0;
}

int pa__enable_locked(pa_ctx *ctx, const char *name, const char *options, bool by_auto)
{
    const pa_module_ops *ops = pa__ops_find(ctx, name);
    if (!ops)
        return unknown_err(ctx, name);
    pa_module *m = pa__mod_find(ctx, name);
    if (m) {
        if (!by_auto) {
            m->by_user = true;
            m->by_auto = false;
            disabled_remove(ctx, name);
        }
        if (!options || !*options)
            return 0;
        return configure_locked(ctx, m, options);
    }
    pa_module *replaced = NULL;
    pa_component comp = pa__ops_component(ctx, ops);
    if (comp != PA_COMP_NONE) {
        for (pa_module *o = ctx->modules; o; o = o->next) {
            if (o->ops->kind != PA_FORMULA || o->comp != comp)
                continue;
            if (!o->by_auto || by_auto)
                return pa__err(-EBUSY,
                               "%s: the %s power is already computed by %s; "
                               "disable it first",
                               name, ctx->comp_names[comp - 1], o->ops->name);
            replaced = o;
        }
    }
    int rc = check_requires(ctx, ops);
    if (rc < 0)
        return rc;
    char why[256];
    /* a sensor given options is tried with them: its probe answers for
     * the machine as it is (nvml: the default library), which the options
     * may change (nvml:library=PATH); its start then says why not */
    if (pa__probe(ctx, ops, why, sizeof(why)) < 0 &&
        !(ops->kind == PA_SENSOR && options && *options))
        return pa__err(-ENODEV, "%s", why);

    /* the sensors it requires that are not enabled yet, started first */
    pa_module *fresh[PA_MAX_REQUIRES];
    size_t nfresh = 0;
    for (const char *const *r = pa__ops_requires(ops); r && *r; r++) {
        if (pa__mod_find(ctx, *r))
            continue;
        const pa_module_ops *sops = pa__ops_find(ctx, *r);
        pa_module *s = NULL;
        if (pa__probe(ctx, sops, why, sizeof(why)) < 0) {
            pa__err(-ENODEV, "%s", why);
            rc = require_err(-ENODEV, name, *r, "cannot run here");
            goto undo;
        }
        rc = mod_start(ctx, sops, NULL, &s);
        if (rc < 0) {
            rc = require_err(rc, name, *r, "failed to start");
            goto undo;
        }
        mod_insert(ctx, s);
        fresh[nfresh++] = s;
    }
    rc = mod_start(ctx, ops, options, &m);
    if (rc < 0)
        goto undo;
    /* a built-in formula's component joins the context when one of its
     * formulas first runs (a machine without a GPU reports no gpu) */
    const char *cname = pa__ops_comp_name(ops);
    if (cname && m->comp == PA_COMP_NONE && (rc = pa__comp_intern(ctx, cname, &m->comp)) < 0) {
        pa__module_destroy(m);
        goto undo;
    }
    m->by_auto = by_auto;
    m->by_user = !by_auto;
    mod_insert(ctx, m);
    /* a formula replacing one that "auto" chose (its sensors that the new
     * one does not require go with it) */
    if (replaced)
        pa__mod_remove(ctx, replaced);
    if (!by_auto) {
        /* the latest explicit request wins over an earlier disable */
        disabled_remove(ctx, name);
        for (const char *const *r = pa__ops_requires(ops); r && *r; r++)
            disabled_remove(ctx, *r);
    }
    ctx->auto_dirty = true;
    return 0;
undo:
    while (nfresh > 0)
        pa__mod_remove(ctx, fresh[--nfresh]);
    return rc;
}

/* "procfs-cpu: cpu-tdp requires it (disable cpu-tdp first)" */
static int busy_err(const pa_ctx *ctx, const char *name)
{
    char list[256] = "";
    size_t n = 0;
    for (const pa_module *f = ctx->modules; f; f = f->next)
        if (f->ops->kind == PA_FORMULA && f->by_user &&
            names_have(pa__ops_requires(f->ops), name)) {
            size_t u = strlen(list);
            snprintf(list + u, sizeof(list) - u, "%s%s", n ? " and " : "", f->ops->name);
            n++;
        }
    return pa__err(-EBUSY, "%s: %s require%s it (disable %s first)", name, list, n > 1 ? "" : "s",
                   n > 1 ? "them" : list);
}

int pa__disable_locked(pa_ctx *ctx, const char *name)
{
    const pa_module_ops *ops = pa__ops_find(ctx, name);
    if (!ops)
        return unknown_err(ctx, name);
    if (ops->kind == PA_SENSOR && requirer(ctx, name, true))
        return busy_err(ctx, name);
    if (disabled_add(ctx, name) < 0)
        return pa__err(-ENOMEM, "%s: out of memory", name);
    /* the formulas auto chose that need this sensor go with it */
    if (ops->kind == PA_SENSOR)
        for (pa_module *f; (f = requirer(ctx, name, false));)
            pa__mod_remove(ctx, f);
    pa_module *m = pa__mod_find(ctx, name);
    if (m)
        pa__mod_remove(ctx, m);
    ctx->auto_dirty = true;
    return 0;
}

int pa_module_configure(pa_ctx *ctx, const char *name, const char *options)
{
    if (!ctx || !name)
        return pa__err(-EINVAL, "pa_module_configure: ctx and name are required");
    pthread_mutex_lock(&ctx->lock);
    int rc;
    pa_module *m = pa__mod_find(ctx, name);
    if (!m)
        rc = pa__ops_find(ctx, name)
                 ? pa__err(-ENOENT, "module '%s' is not enabled (enable it first)", name)
                 : pa__err(-ENOENT, "unknown module '%s'", name);
    else
        rc = configure_locked(ctx, m, options);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

static bool valid_name(const char *s)
{
    if (!s || !*s || strlen(s) > 63)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
            return false;
    return true;
}

/* A requires/uses list of a table being registered: valid names only. */
static int check_names(const pa_module_ops *ops, const char *field, const char *const *l)
{
    size_t n = 0;
    for (; l && *l; l++, n++) {
        if (!valid_name(*l))
            return pa__err(-EINVAL,
                           "module '%s': %s entry '%s' is not a "
                           "module name ([a-z0-9-_]+)",
                           ops->name, field, *l);
        if (n == PA_MAX_REQUIRES)
            return pa__err(-EINVAL, "module '%s': more than %d %s entries", ops->name,
                           PA_MAX_REQUIRES, field);
    }
    return 0;
}

/* What abi 3 added: flags of sensors, components, ranks and fits of
 * formulas, each on its own kind of module. */
static int check_abi3(const pa_module_ops *ops)
{
    if (ops->abi < 3)
        return 0;
    if (ops->flags &
        ~(unsigned)(PA_MOD_DISCOVERS_TASKS | PA_MOD_TASK_COUNTERS | PA_MOD_AFTER_FORMULAS))
        return pa__err(-EINVAL, "module '%s': unknown flags 0x%x", ops->name, ops->flags);
    if (ops->kind == PA_SENSOR && (ops->flags & PA_MOD_AFTER_FORMULAS))
        return pa__err(-EINVAL,
                       "module '%s': PA_MOD_AFTER_FORMULAS is for formulas (leave it "
                       "out of a sensor)",
                       ops->name);
    if (ops->kind == PA_SENSOR && (ops->component_name || ops->auto_rank || ops->fits))
        return pa__err(-EINVAL,
                       "module '%s': only formulas declare a component, an "
                       "auto rank and fits (set them to 0 in a sensor)",
                       ops->name);
    if (ops->kind == PA_FORMULA && (ops->flags & ~(unsigned)PA_MOD_AFTER_FORMULAS))
        return pa__err(-EINVAL,
                       "module '%s': these flags are for sensors (a formula may "
                       "set PA_MOD_AFTER_FORMULAS only)",
                       ops->name);
    if (ops->component_name && !valid_comp_name(ops->component_name))
        return pa__err(-EINVAL,
                       "module '%s': component '%s' must be [a-z0-9_]+, at "
                       "most 15 characters",
                       ops->name, ops->component_name);
    return 0;
}

/* The table's abi: one this library speaks, or a clear refusal. */
static int check_abi(const pa_module_ops *ops)
{
    if (ops->abi >= 1 && ops->abi <= PA_MODULE_ABI)
        return 0;
    return pa__err(-EINVAL,
                   "module '%s': module table abi %u, this library (%s) "
                   "speaks abi 1 to %u (rebuild the module against this "
                   "powerapi.h)",
                   ops->name ? ops->name : "(null)", ops->abi, PA_VERSION_STRING, PA_MODULE_ABI);
}

int pa_module_register(pa_ctx *ctx, const pa_module_ops *ops)
{
    if (!ctx || !ops)
        return pa__err(-EINVAL, "pa_module_register: ctx and ops are required");
    int rc = check_abi(ops);
    if (rc < 0)
        return rc;
    if (!valid_name(ops->name))
        return pa__err(-EINVAL, "module name '%s' must be [a-z0-9-_]+",
                       ops->name ? ops->name : "(null)");
    if ((ops->kind == PA_SENSOR && !ops->sample) || (ops->kind == PA_FORMULA && !ops->compute) ||
        (ops->kind != PA_SENSOR && ops->kind != PA_FORMULA))
        return pa__err(-EINVAL,
                       "module '%s': a sensor needs sample(), a formula "
                       "compute()",
                       ops->name);
    if (ops->abi >= 2 && ops->kind == PA_SENSOR && (ops->requires || ops->uses))
        return pa__err(-EINVAL,
                       "module '%s': only formulas declare requires and uses "
                       "(set them to NULL in a sensor)",
                       ops->name);
    rc = check_names(ops, "requires", pa__ops_requires(ops));
    if (rc == 0)
        rc = check_names(ops, "uses", ops_uses(ops));
    if (rc == 0)
        rc = check_abi3(ops);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&ctx->lock);
    const char *comp = pa__ops_comp_name(ops);
    if (pa__ops_find(ctx, ops->name)) {
        rc = pa__err(-EEXIST, "module '%s' already exists", ops->name);
    } else if (comp && (rc = pa__comp_intern(ctx, comp, NULL)) < 0) {
        /* the message names the component and the limit */
    } else {
        const pa_module_ops **r = realloc(ctx->registered, (ctx->nregistered + 1) * sizeof(*r));
        if (!r) {
            rc = pa__err(-ENOMEM, "out of memory");
        } else {
            r[ctx->nregistered++] = ops;
            ctx->registered = r;
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

static void fill_info(const pa_ctx *ctx, const pa_module_ops *ops, pa_module_info *mi)
{
    memset(mi, 0, sizeof(*mi));
    mi->name = ops->name;
    mi->description = ops->description ? ops->description : "";
    mi->kind = ops->kind;
    mi->component = pa__ops_component(ctx, ops);
    mi->requires = pa__ops_requires(ops);
    mi->uses = ops_uses(ops);
    mi->available = pa__probe(ctx, ops, mi->why, sizeof(mi->why)) == 0;
    const pa_module *m = pa__mod_find(ctx, ops->name);
    if (m) {
        mi->enabled = 1;
        mi->user = m->by_user;
        mi->by_auto = m->by_auto;
        mi->failing = m->fail_count > 0;
        if (m->fail_count)
            snprintf(mi->why, sizeof(mi->why), "%s", m->err);
        if (m->by_auto)
            snprintf(mi->auto_why, sizeof(mi->auto_why), "%s", m->auto_why);
        snprintf(mi->options, sizeof(mi->options), "%s", m->opts_text ? m->opts_text : "");
        if (ops->kind == PA_SENSOR)
            for (const pa_module *f = ctx->modules; f; f = f->next)
                if (f->ops->kind == PA_FORMULA && names_have(pa__ops_requires(f->ops), ops->name)) {
                    size_t u = strlen(mi->required_by);
                    snprintf(mi->required_by + u, sizeof(mi->required_by) - u, "%s%s", u ? "," : "",
                             f->ops->name);
                }
    }
}

int pa_module_list(pa_ctx *ctx, pa_module_info *out, size_t cap)
{
    if (!ctx || (!out && cap))
        return pa__err(-EINVAL, "pa_module_list: bad arguments");
    pthread_mutex_lock(&ctx->lock);
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        pa_module_kind kind = pass == 0 ? PA_SENSOR : PA_FORMULA;
        for (size_t i = 0; pa__builtin_modules[i]; i++)
            if (pa__builtin_modules[i]->kind == kind) {
                if (n < cap)
                    fill_info(ctx, pa__builtin_modules[i], &out[n]);
                n++;
            }
        for (size_t i = 0; i < ctx->nregistered; i++)
            if (ctx->registered[i]->kind == kind) {
                if (n < cap)
                    fill_info(ctx, ctx->registered[i], &out[n]);
                n++;
            }
    }
    pthread_mutex_unlock(&ctx->lock);
    return (int)n;
}

int pa_module_get(pa_ctx *ctx, const char *name, pa_module_info *out)
{
    if (!ctx || !name || !out)
        return pa__err(-EINVAL, "pa_module_get: ctx, name and out are required");
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    const pa_module_ops *ops = pa__ops_find(ctx, name);
    if (ops) {
        fill_info(ctx, ops, out);
    } else {
        rc = unknown_err(ctx, name);
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_module_option_keys(pa_ctx *ctx, const char *name, const char *const **out)
{
    if (!ctx || !name || !out)
        return pa__err(-EINVAL, "pa_module_option_keys: ctx, name and out are "
                                "required");
    pthread_mutex_lock(&ctx->lock);
    const pa_module_ops *ops = pa__ops_find(ctx, name);
    int rc = ops ? 0 : unknown_err(ctx, name);
    if (ops)
        *out = ops->options;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}
