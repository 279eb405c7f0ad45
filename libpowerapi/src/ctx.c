/*
 * ctx.c - contexts, the module lifecycle, targets, the sampler thread and
 * the result getters.  Every public function takes ctx->lock; a tick holds
 * it throughout, so lifecycle changes land between ticks and nothing is
 * freed under a running callback.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Context                                                             */
/* ------------------------------------------------------------------ */

static int check_dir(const char *what, const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return pa__err(-errno, "%s root '%s': %s (give an existing directory)", what,
                       path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return pa__err(-ENOTDIR, "%s root '%s' is not a directory", what, path);
    return 0;
}

int pa_ctx_new(pa_ctx **out, const pa_ctx_opts *opts)
{
    if (!out)
        return pa__err(-EINVAL, "pa_ctx_new: out is NULL");
    const char *procfs = opts && opts->procfs ? opts->procfs : "/proc";
    const char *sysfs = opts && opts->sysfs ? opts->sysfs : "/sys";
    const char *devfs = opts && opts->devfs ? opts->devfs : "/dev";
    const char *hwdb = opts && opts->hwdb ? opts->hwdb : getenv("POWERAPI_HWDB");
    int rc = check_dir("procfs", procfs);
    if (rc == 0)
        rc = check_dir("sysfs", sysfs);
    if (rc < 0)
        return rc;
    if (hwdb && *hwdb && access(hwdb, R_OK) < 0)
        return pa__err(-errno, "hardware database '%s': %s", hwdb,
                       strerror(errno));
    pa_ctx *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return pa__err(-ENOMEM, "pa_ctx_new: out of memory");
    ctx->procfs = strdup(procfs);
    ctx->sysfs = strdup(sysfs);
    ctx->devfs = strdup(devfs);
    ctx->hwdb = hwdb && *hwdb ? strdup(hwdb) : NULL;
    ctx->cgcache = pa__cgcache_new(opts ? opts->rootfs : NULL);
    if (!ctx->procfs || !ctx->sysfs || !ctx->devfs || !ctx->cgcache ||
        (hwdb && *hwdb && !ctx->hwdb))
        goto fail;
    ctx->env.procfs = ctx->procfs;
    ctx->env.sysfs = ctx->sysfs;
    ctx->env.devfs = ctx->devfs;
    ctx->env.hwdb = ctx->hwdb;
    ctx->env.ctx = ctx;
    ctx->auto_dirty = true; /* auto fills in at the first tick */
    ctx->clk_tck = sysconf(_SC_CLK_TCK);
    if (ctx->clk_tck <= 0)
        ctx->clk_tck = 100;
    pthread_mutex_init(&ctx->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ctx->cond, &ca);
    pthread_condattr_destroy(&ca);
    *out = ctx;
    return 0;
fail:
    pa__cgcache_free(ctx->cgcache);
    free(ctx->procfs);
    free(ctx->sysfs);
    free(ctx->devfs);
    free(ctx->hwdb);
    free(ctx);
    return pa__err(-ENOMEM, "pa_ctx_new: out of memory");
}

static void module_destroy(pa_module *m)
{
    if (m->ops->stop)
        m->ops->stop(m);
    pa__options_free(m->opts);
    free(m->opts_text);
    free(m);
}

void pa_ctx_free(pa_ctx *ctx)
{
    if (!ctx)
        return;
    pa_stop(ctx);
    pa_module *m = ctx->modules;
    while (m) {
        pa_module *n = m->next;
        module_destroy(m);
        m = n;
    }
    pa__tasktab_free(&ctx->procs);
    pa__tasktab_free(&ctx->threads);
    pa__tasktab_free(&ctx->trees);
    for (size_t i = 0; i < ctx->ngone; i++)
        pa__task_free(ctx->gone[i]);
    free(ctx->gone);
    for (size_t i = 0; i < ctx->ncgroups; i++)
        free(ctx->cgroups[i]);
    free(ctx->cgroups);
    free(ctx->cgroup_cpu_j);
    free(ctx->cgroup_nic_j);
    free(ctx->cgroup_ctr);
    pa__cgcache_free(ctx->cgcache);
    for (size_t i = 0; i < ctx->ncounters; i++)
        free(ctx->counter_names[i]);
    free(ctx->watches);
    free(ctx->registered);
    for (size_t i = 0; i < ctx->ndisabled; i++)
        free(ctx->disabled[i]);
    free(ctx->disabled);
    free(ctx->rtargets);
    free(ctx->rcounters);
    free(ctx->win);
    free(ctx->cg_scratch);
    pthread_mutex_destroy(&ctx->lock);
    pthread_cond_destroy(&ctx->cond);
    free(ctx->procfs);
    free(ctx->sysfs);
    free(ctx->devfs);
    free(ctx->hwdb);
    free(ctx);
}

/* ------------------------------------------------------------------ */
/* Modules                                                             */
/* ------------------------------------------------------------------ */

static const pa_module_ops *ops_find(const pa_ctx *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->nregistered; i++)
        if (!strcmp(ctx->registered[i]->name, name))
            return ctx->registered[i];
    for (size_t i = 0; pa__builtin_modules[i]; i++)
        if (!strcmp(pa__builtin_modules[i]->name, name))
            return pa__builtin_modules[i];
    return NULL;
}

static pa_module *mod_find(const pa_ctx *ctx, const char *name)
{
    for (pa_module *m = ctx->modules; m; m = m->next)
        if (!strcmp(m->ops->name, name))
            return m;
    return NULL;
}

static void all_names(const pa_ctx *ctx, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t u = 0;
    for (size_t i = 0; pa__builtin_modules[i]; i++) {
        u = strlen(buf);
        snprintf(buf + u, len - u, "%s%s", u ? ", " : "",
                 pa__builtin_modules[i]->name);
    }
    for (size_t i = 0; i < ctx->nregistered; i++) {
        u = strlen(buf);
        snprintf(buf + u, len - u, ", %s", ctx->registered[i]->name);
    }
}

/* Sensors before formulas; procfs-cpu first: it discovers the tasks the
 * other sensors read.  Formulas by component (cpu, then nic), so that the
 * report names them in one order whatever order they were enabled in. */
static void mod_insert(pa_ctx *ctx, pa_module *m)
{
    pa_module **pp = &ctx->modules;
    if (m->ops->kind == PA_SENSOR) {
        if (strcmp(m->ops->name, "procfs-cpu") != 0)
            while (*pp && (*pp)->ops->kind == PA_SENSOR)
                pp = &(*pp)->next;
    } else {
        while (*pp && ((*pp)->ops->kind == PA_SENSOR ||
                       (*pp)->ops->component <= m->ops->component))
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

static int probe(const pa_ctx *ctx, const pa_module_ops *ops, char *why,
                 size_t len)
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

/* Both fields exist from abi 2 on: a table built against abi 1 ends
 * before them and must not be read there. */
static const char *const *ops_requires(const pa_module_ops *o)
{
    return o->abi >= 2 && o->kind == PA_FORMULA ? o->requires : NULL;
}

static const char *const *ops_uses(const pa_module_ops *o)
{
    return o->abi >= 2 && o->kind == PA_FORMULA ? o->uses : NULL;
}

static bool names_have(const char *const *l, const char *name)
{
    for (; l && *l; l++)
        if (!strcmp(*l, name))
            return true;
    return false;
}

static bool is_disabled(const pa_ctx *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->ndisabled; i++)
        if (!strcmp(ctx->disabled[i], name))
            return true;
    return false;
}

static int disabled_add(pa_ctx *ctx, const char *name)
{
    if (is_disabled(ctx, name))
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
            names_have(ops_requires(f->ops), name))
            return f;
    return NULL;
}

/* Unlinks and stops m; a formula takes along the sensors that were
 * enabled only for it. */
static void mod_remove(pa_ctx *ctx, pa_module *m)
{
    const pa_module_ops *ops = m->ops;
    mod_unlink(ctx, m);
    module_destroy(m);
    if (!strcmp(ops->name, "perf"))
        pa__counters_declare(ctx, NULL, 0);
    ctx->auto_dirty = true;
    for (const char *const *r = ops_requires(ops); r && *r; r++) {
        pa_module *s = mod_find(ctx, *r);
        if (s && s->ops->kind == PA_SENSOR && !s->by_user &&
            !requirer(ctx, *r, false))
            mod_remove(ctx, s);
    }
}

/* Parses the options and starts a module of ops (probed by the caller);
 * not linked yet. */
static int mod_start(pa_ctx *ctx, const pa_module_ops *ops,
                     const char *options, pa_module **out)
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
        module_destroy(m);
        return pa__err(-ENOMEM, "%s: out of memory", ops->name);
    }
    *out = m;
    return 0;
}

/* A requirement's failure, said as the formula's: "cpu-tdp requires the
 * sensor procfs-cpu, which cannot run here: <why>". */
static int require_err(int rc, const char *formula, const char *sensor,
                       const char *what)
{
    char why[512];
    snprintf(why, sizeof(why), "%s", pa_last_error());
    return pa__err(rc, "%s requires the sensor %s, which %s: %s", formula,
                   sensor, what, why);
}

#define PA_MAX_REQUIRES 16

/* Checks that every sensor ops requires is a known sensor. */
static int check_requires(const pa_ctx *ctx, const pa_module_ops *ops)
{
    size_t n = 0;
    for (const char *const *r = ops_requires(ops); r && *r; r++, n++) {
        const pa_module_ops *s = ops_find(ctx, *r);
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
            return pa__err(-EINVAL, "%s requires more than %d sensors",
                           ops->name, PA_MAX_REQUIRES);
    }
    return 0;
}

static int enable_locked(pa_ctx *ctx, const char *name, const char *options,
                         bool by_auto)
{
    if (!strcmp(name, "auto")) {
        ctx->auto_off = false;
        pa__auto_fill(ctx);
        return 0;
    }
    const pa_module_ops *ops = ops_find(ctx, name);
    if (!ops) {
        char list[512];
        all_names(ctx, list, sizeof(list));
        return pa__err(-ENOENT, "unknown module '%s' (modules: auto, %s)",
                       name, list);
    }
    pa_module *m = mod_find(ctx, name);
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
    if (ops->kind == PA_FORMULA && ops->component != PA_COMP_NONE) {
        for (pa_module *o = ctx->modules; o; o = o->next) {
            if (o->ops->kind != PA_FORMULA ||
                o->ops->component != ops->component)
                continue;
            if (!o->by_auto || by_auto)
                return pa__err(-EBUSY,
                               "%s: the %s power is already computed by %s; "
                               "disable it first",
                               name,
                               ops->component == PA_COMP_CPU ? "cpu" : "nic",
                               o->ops->name);
            replaced = o;
        }
    }
    int rc = check_requires(ctx, ops);
    if (rc < 0)
        return rc;
    char why[256];
    if (probe(ctx, ops, why, sizeof(why)) < 0)
        return pa__err(-ENODEV, "%s", why);

    /* the sensors it requires that are not enabled yet, started first */
    pa_module *fresh[PA_MAX_REQUIRES];
    size_t nfresh = 0;
    for (const char *const *r = ops_requires(ops); r && *r; r++) {
        if (mod_find(ctx, *r))
            continue;
        const pa_module_ops *sops = ops_find(ctx, *r);
        pa_module *s = NULL;
        if (probe(ctx, sops, why, sizeof(why)) < 0) {
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
    m->by_auto = by_auto;
    m->by_user = !by_auto;
    mod_insert(ctx, m);
    /* a formula replacing one that "auto" chose (its sensors that the new
     * one does not require go with it) */
    if (replaced)
        mod_remove(ctx, replaced);
    if (!by_auto) {
        /* the latest explicit request wins over an earlier disable */
        disabled_remove(ctx, name);
        for (const char *const *r = ops_requires(ops); r && *r; r++)
            disabled_remove(ctx, *r);
    }
    ctx->auto_dirty = true;
    return 0;
undo:
    while (nfresh > 0)
        mod_remove(ctx, fresh[--nfresh]);
    return rc;
}

/* Auto's choices per component, best first. */
static const char *const auto_cpu[] = {"rapl-share", "cpu-curve", "cpu-tdp",
                                       NULL};
static const char *const auto_nic[] = {"nic-linear", NULL};

/* May auto enable formula `name`: known, and neither it nor a sensor it
 * requires was disabled by the user? */
static bool auto_may(const pa_ctx *ctx, const char *name)
{
    const pa_module_ops *ops = ops_find(ctx, name);
    if (!ops || ops->kind != PA_FORMULA || is_disabled(ctx, name))
        return false;
    for (const char *const *r = ops_requires(ops); r && *r; r++)
        if (!mod_find(ctx, *r) && is_disabled(ctx, *r))
            return false;
    return true;
}

/* Whether auto takes choice `name` here, and why (kept on the module for
 * `powerapi modules`): rapl-share wherever its sensor runs; cpu-curve
 * where a load-power curve or a calibration matches this CPU, or on a
 * virtual machine (its default per-vCPU curve follows the load, a TDP
 * guess does not); cpu-tdp otherwise. */
static bool auto_wants(pa_ctx *ctx, const char *name, char *why, size_t len)
{
    char curve[200] = "";
    if (!strcmp(name, "rapl-share")) {
        snprintf(why, len, "RAPL is readable: measured power");
        return true;
    }
    if (strcmp(name, "cpu-curve") && strcmp(name, "cpu-tdp")) {
        why[0] = '\0';
        return true;
    }
    int match = pa__cpu_curve_match(&ctx->env, curve, sizeof(curve));
    snprintf(why, len, "no RAPL; %s%s", curve,
             !strcmp(name, "cpu-tdp") ? ": TDP model" : "");
    return strcmp(name, "cpu-curve") || match > 0;
}

void pa__auto_fill(pa_ctx *ctx)
{
    ctx->auto_dirty = false;
    if (ctx->auto_off)
        return;
    static const struct {
        pa_component comp;
        const char *const *choices;
    } comps[] = {{PA_COMP_CPU, auto_cpu}, {PA_COMP_NIC, auto_nic}};
    for (size_t c = 0; c < sizeof(comps) / sizeof(comps[0]); c++) {
        bool covered = false;
        for (const pa_module *m = ctx->modules; m && !covered; m = m->next)
            covered = m->ops->kind == PA_FORMULA &&
                      m->ops->component == comps[c].comp;
        for (const char *const *f = comps[c].choices; !covered && *f; f++) {
            char why[256];
            covered = auto_may(ctx, *f) &&
                      auto_wants(ctx, *f, why, sizeof(why)) &&
                      enable_locked(ctx, *f, NULL, true) == 0;
            pa_module *m = covered ? mod_find(ctx, *f) : NULL;
            if (m)
                snprintf(m->auto_why, sizeof(m->auto_why), "%s", why);
        }
    }
    /* enabling above marked the modules changed: auto is done with them */
    ctx->auto_dirty = false;
}

int pa_module_enable(pa_ctx *ctx, const char *name, const char *options)
{
    if (!ctx || !name)
        return pa__err(-EINVAL, "pa_module_enable: ctx and name are required");
    pthread_mutex_lock(&ctx->lock);
    int rc = enable_locked(ctx, name, options, false);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* "procfs-cpu: cpu-tdp requires it (disable cpu-tdp first)" */
static int busy_err(const pa_ctx *ctx, const char *name)
{
    char list[256] = "";
    size_t n = 0;
    for (const pa_module *f = ctx->modules; f; f = f->next)
        if (f->ops->kind == PA_FORMULA && f->by_user &&
            names_have(ops_requires(f->ops), name)) {
            size_t u = strlen(list);
            snprintf(list + u, sizeof(list) - u, "%s%s", n ? " and " : "",
                     f->ops->name);
            n++;
        }
    return pa__err(-EBUSY, "%s: %s require%s it (disable %s first)", name,
                   list, n > 1 ? "" : "s", n > 1 ? "them" : list);
}

static int disable_locked(pa_ctx *ctx, const char *name)
{
    if (!strcmp(name, "auto")) {
        ctx->auto_off = true;
        for (pa_module *m = ctx->modules; m;) {
            if (m->by_auto) {
                mod_remove(ctx, m);
                m = ctx->modules; /* the list changed: start over */
            } else {
                m = m->next;
            }
        }
        return 0;
    }
    const pa_module_ops *ops = ops_find(ctx, name);
    if (!ops) {
        char list[512];
        all_names(ctx, list, sizeof(list));
        return pa__err(-ENOENT, "unknown module '%s' (modules: auto, %s)",
                       name, list);
    }
    if (ops->kind == PA_SENSOR && requirer(ctx, name, true))
        return busy_err(ctx, name);
    if (disabled_add(ctx, name) < 0)
        return pa__err(-ENOMEM, "%s: out of memory", name);
    /* the formulas auto chose that need this sensor go with it */
    if (ops->kind == PA_SENSOR)
        for (pa_module *f; (f = requirer(ctx, name, false));)
            mod_remove(ctx, f);
    pa_module *m = mod_find(ctx, name);
    if (m)
        mod_remove(ctx, m);
    ctx->auto_dirty = true;
    return 0;
}

int pa_module_disable(pa_ctx *ctx, const char *name)
{
    if (!ctx || !name)
        return pa__err(-EINVAL, "pa_module_disable: ctx and name are required");
    pthread_mutex_lock(&ctx->lock);
    int rc = disable_locked(ctx, name);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_module_configure(pa_ctx *ctx, const char *name, const char *options)
{
    if (!ctx || !name)
        return pa__err(-EINVAL,
                       "pa_module_configure: ctx and name are required");
    pthread_mutex_lock(&ctx->lock);
    int rc;
    pa_module *m = mod_find(ctx, name);
    if (!m)
        rc = ops_find(ctx, name)
                 ? pa__err(-ENOENT,
                           "module '%s' is not enabled (enable it first)", name)
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
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_'))
            return false;
    return true;
}

/* A requires/uses list of a table being registered: valid names only. */
static int check_names(const pa_module_ops *ops, const char *field,
                       const char *const *l)
{
    size_t n = 0;
    for (; l && *l; l++, n++) {
        if (!valid_name(*l))
            return pa__err(-EINVAL, "module '%s': %s entry '%s' is not a "
                                    "module name ([a-z0-9-_]+)",
                           ops->name, field, *l);
        if (n == PA_MAX_REQUIRES)
            return pa__err(-EINVAL, "module '%s': more than %d %s entries",
                           ops->name, PA_MAX_REQUIRES, field);
    }
    return 0;
}

int pa_module_register(pa_ctx *ctx, const pa_module_ops *ops)
{
    if (!ctx || !ops)
        return pa__err(-EINVAL, "pa_module_register: ctx and ops are required");
    if (ops->abi != 1 && ops->abi != PA_MODULE_ABI)
        return pa__err(-EINVAL,
                       "module table abi %u, this library speaks 1 and %u "
                       "(rebuild the module against this powerapi.h)",
                       ops->abi, PA_MODULE_ABI);
    if (!valid_name(ops->name))
        return pa__err(-EINVAL, "module name '%s' must be [a-z0-9-_]+",
                       ops->name ? ops->name : "(null)");
    if ((ops->kind == PA_SENSOR && !ops->sample) ||
        (ops->kind == PA_FORMULA && !ops->compute) ||
        (ops->kind != PA_SENSOR && ops->kind != PA_FORMULA))
        return pa__err(-EINVAL,
                       "module '%s': a sensor needs sample(), a formula "
                       "compute()",
                       ops->name);
    if (ops->abi >= 2 && ops->kind == PA_SENSOR &&
        (ops->requires || ops->uses))
        return pa__err(-EINVAL,
                       "module '%s': only formulas declare requires and uses "
                       "(set them to NULL in a sensor)",
                       ops->name);
    int rc = check_names(ops, "requires", ops_requires(ops));
    if (rc == 0)
        rc = check_names(ops, "uses", ops_uses(ops));
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&ctx->lock);
    if (ops_find(ctx, ops->name)) {
        rc = pa__err(-EEXIST, "module '%s' already exists", ops->name);
    } else {
        const pa_module_ops **r =
            realloc(ctx->registered, (ctx->nregistered + 1) * sizeof(*r));
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

static void fill_info(const pa_ctx *ctx, const pa_module_ops *ops,
                      pa_module_info *mi)
{
    memset(mi, 0, sizeof(*mi));
    mi->name = ops->name;
    mi->description = ops->description ? ops->description : "";
    mi->kind = ops->kind;
    mi->component = ops->component;
    mi->requires = ops_requires(ops);
    mi->uses = ops_uses(ops);
    mi->available = probe(ctx, ops, mi->why, sizeof(mi->why)) == 0;
    const pa_module *m = mod_find(ctx, ops->name);
    if (m) {
        mi->enabled = 1;
        mi->user = m->by_user;
        mi->by_auto = m->by_auto;
        mi->failing = m->fail_count > 0;
        if (m->fail_count)
            snprintf(mi->why, sizeof(mi->why), "%s", m->err);
        if (m->by_auto)
            snprintf(mi->auto_why, sizeof(mi->auto_why), "%s", m->auto_why);
        snprintf(mi->options, sizeof(mi->options), "%s",
                 m->opts_text ? m->opts_text : "");
        if (ops->kind == PA_SENSOR)
            for (const pa_module *f = ctx->modules; f; f = f->next)
                if (f->ops->kind == PA_FORMULA &&
                    names_have(ops_requires(f->ops), ops->name)) {
                    size_t u = strlen(mi->required_by);
                    snprintf(mi->required_by + u, sizeof(mi->required_by) - u,
                             "%s%s", u ? "," : "", f->ops->name);
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
        return pa__err(-EINVAL,
                       "pa_module_get: ctx, name and out are required");
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    const pa_module_ops *ops = ops_find(ctx, name);
    if (ops) {
        fill_info(ctx, ops, out);
    } else {
        char list[512];
        all_names(ctx, list, sizeof(list));
        rc = pa__err(-ENOENT, "unknown module '%s' (modules: auto, %s)", name,
                     list);
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

int pa_watch_pid(pa_ctx *ctx, pid_t pid, unsigned flags)
{
    if (!ctx || pid <= 0)
        return pa__err(-EINVAL, "pid %d: not a process id", (int)pid);
    if (flags & ~(unsigned)(PA_WATCH_THREADS | PA_WATCH_CHILDREN))
        return pa__err(-EINVAL, "pid %d: unknown watch flags 0x%x", (int)pid,
                       flags);
    char path[PA_PATH_MAX];
    if (pa__path(path, sizeof(path), ctx->procfs, "%d/stat", (int)pid) < 0 ||
        access(path, F_OK) < 0) {
        char hp[40];
        if (pa__procfs_hidepid(ctx->procfs, hp, sizeof(hp)))
            return pa__err(-ESRCH,
                           "pid %d: no such process, or one of another user "
                           "that %s hides (mounted with %s); run as root or "
                           "as a member of the mount's gid= group",
                           (int)pid, ctx->procfs, hp);
        return pa__err(-ESRCH, "pid %d: no such process (%s not found)",
                       (int)pid, path);
    }
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    size_t i;
    for (i = 0; i < ctx->nwatches; i++)
        if (ctx->watches[i].pid == pid)
            break;
    if (i == ctx->nwatches) {
        size_t need = ctx->nwatches + 1;
        if (PA__GROW(ctx->watches, ctx->watches_cap, need, 8) < 0) {
            rc = pa__err(-ENOMEM, "out of memory");
            goto out;
        }
        ctx->nwatches++;
    }
    ctx->watches[i].pid = pid;
    ctx->watches[i].flags = flags;
out:
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_unwatch_pid(pa_ctx *ctx, pid_t pid)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_unwatch_pid: ctx is NULL");
    pthread_mutex_lock(&ctx->lock);
    int rc = pa__err(-ESRCH, "pid %d is not watched", (int)pid);
    for (size_t i = 0; i < ctx->nwatches; i++)
        if (ctx->watches[i].pid == pid) {
            ctx->watches[i] = ctx->watches[--ctx->nwatches];
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_watch_all(pa_ctx *ctx, int on)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_watch_all: ctx is NULL");
    pthread_mutex_lock(&ctx->lock);
    ctx->watch_all = on != 0;
    ctx->watch_all_threads = (on & PA_WATCH_ALL_THREADS) != 0;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

int pa_report_cgroups(pa_ctx *ctx, int on)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_report_cgroups: ctx is NULL");
    pthread_mutex_lock(&ctx->lock);
    ctx->cgroups_on = on != 0;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Ticks and the sampler                                               */
/* ------------------------------------------------------------------ */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool in_callback(pa_ctx *ctx)
{
    return ctx->in_cb && pthread_equal(ctx->cb_thread, pthread_self());
}

int pa_tick_at(pa_ctx *ctx, uint64_t time_ns)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_tick: ctx is NULL");
    pthread_mutex_lock(&ctx->lock);
    int rc;
    if (in_callback(ctx))
        rc = pa__err(-EBUSY, "pa_tick: not allowed inside a report callback");
    else
        rc = pa__tick_locked(ctx, time_ns);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_tick(pa_ctx *ctx)
{
    return pa_tick_at(ctx, now_ns());
}

static void *sampler_main(void *arg)
{
    pa_ctx *ctx = arg;
    pthread_mutex_lock(&ctx->lock);
    uint64_t next = now_ns();
    while (!ctx->stopping) {
        uint64_t t = now_ns();
        if (t < next) {
            struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
                                  .tv_nsec = (long)(next % 1000000000u)};
            pthread_cond_timedwait(&ctx->cond, &ctx->lock, &ts);
            continue;
        }
        uint64_t when = now_ns();
        if (when <= ctx->last_time_ns)
            when = ctx->last_time_ns + 1;
        int rc = pa__tick_locked(ctx, when);
        /* a tick that ran late does not make the next ones bunch up */
        next += ctx->period_ns;
        if (next < t)
            next = t + ctx->period_ns;
        pa_report *copy = NULL;
        if (rc == 0 && ctx->have_report && ctx->cb &&
            ctx->report.time_ns == ctx->last_time_ns &&
            pa__report_copy(&ctx->report, &copy) == 0) {
            pa_report_cb cb = ctx->cb;
            void *user = ctx->cb_user;
            ctx->in_cb = true;
            ctx->cb_thread = pthread_self();
            pthread_mutex_unlock(&ctx->lock);
            cb(ctx, copy, user);
            pa_report_free(copy);
            pthread_mutex_lock(&ctx->lock);
            ctx->in_cb = false;
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return NULL;
}

int pa_start(pa_ctx *ctx, uint64_t period_ns, pa_report_cb cb, void *user)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_start: ctx is NULL");
    if (period_ns < 1000000)
        return pa__err(-EINVAL, "pa_start: period %llu ns is below 1 ms",
                       (unsigned long long)period_ns);
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    if (ctx->running) {
        rc = pa__err(-EALREADY, "pa_start: the sampler is already running");
        goto out;
    }
    ctx->period_ns = period_ns;
    ctx->cb = cb;
    ctx->cb_user = user;
    ctx->stopping = false;
    rc = -pthread_create(&ctx->sampler, NULL, sampler_main, ctx);
    if (rc < 0) {
        pa__err(rc, "pa_start: cannot create the sampler thread: %s",
                strerror(-rc));
        goto out;
    }
    ctx->running = true;
out:
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_stop(pa_ctx *ctx)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_stop: ctx is NULL");
    pthread_mutex_lock(&ctx->lock);
    if (!ctx->running) {
        pthread_mutex_unlock(&ctx->lock);
        return pa__err(-ENOENT, "pa_stop: the sampler is not running");
    }
    if (pthread_equal(ctx->sampler, pthread_self())) {
        pthread_mutex_unlock(&ctx->lock);
        return pa__err(-EDEADLK, "pa_stop: not allowed from a report callback");
    }
    ctx->stopping = true;
    pthread_cond_broadcast(&ctx->cond);
    pthread_t th = ctx->sampler;
    pthread_mutex_unlock(&ctx->lock);
    pthread_join(th, NULL);
    pthread_mutex_lock(&ctx->lock);
    ctx->running = false;
    ctx->stopping = false;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

static void task_power(const pa_ctx *ctx, const pa_task *t, pa_power *out)
{
    memset(out, 0, sizeof(*out));
    out->cpu_w = t->gone ? 0 : t->cpu_w;
    out->nic_w = t->gone ? 0 : t->nic_w;
    out->total_w = out->cpu_w + out->nic_w;
    out->cpu_j = t->cpu_j;
    out->nic_j = t->nic_j;
    out->total_j = t->cpu_j + t->nic_j;
    out->interval_s = ctx->sys_power.interval_s;
    out->cpu_time_s = t->gone ? 0 : t->d_cpu_s;
    out->time_ns = ctx->last_time_ns;
    out->flags = (t->gone ? PA_POWER_EXITED : t->flags) |
                 (ctx->sys_power.flags & PA_POWER_MEASURED);
}

static int target_power(pa_ctx *ctx, pa_target_type type, pid_t id,
                        pa_power *out)
{
    if (!ctx || !out)
        return pa__err(-EINVAL, "power getter: ctx and out are required");
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    pa_task *t = pa__task_find(ctx, type, id);
    if (!t)
        for (size_t i = 0; i < ctx->ngone; i++)
            if (ctx->gone[i]->type == type &&
                (type == PA_TARGET_THREAD ? ctx->gone[i]->tid
                                          : ctx->gone[i]->pid) == id)
                t = ctx->gone[i];
    const char *what = type == PA_TARGET_THREAD ? "thread" : "pid";
    if (!t)
        rc = pa__err(-ESRCH, "%s %d: not a target of this context (watch it "
                             "first, or it exited)",
                     what, (int)id);
    else if (!ctx->have_report || (!t->in_window && !t->gone))
        rc = pa__err(-ENODATA, "%s %d: no complete window yet (tick again)",
                     what, (int)id);
    else
        task_power(ctx, t, out);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_pid_power(pa_ctx *ctx, pid_t pid, pa_power *out)
{
    return target_power(ctx, PA_TARGET_PROCESS, pid, out);
}

int pa_tid_power(pa_ctx *ctx, pid_t tid, pa_power *out)
{
    return target_power(ctx, PA_TARGET_THREAD, tid, out);
}

int pa_tree_power(pa_ctx *ctx, pid_t pid, pa_power *out)
{
    return target_power(ctx, PA_TARGET_TREE, pid, out);
}

int pa_cgroup_power(pa_ctx *ctx, const char *cgroup, pa_power *out)
{
    if (!ctx || !cgroup || !out)
        return pa__err(-EINVAL, "pa_cgroup_power: bad arguments");
    pthread_mutex_lock(&ctx->lock);
    int rc = pa__err(-ENOENT,
                     "cgroup '%s': no process of it seen in the last window%s",
                     cgroup, ctx->cgroups_on ? "" : " (call pa_report_cgroups)");
    if (ctx->have_report)
        for (size_t i = 0; i < ctx->report.ntargets; i++) {
            const pa_target_info *ti = &ctx->report.targets[i];
            if (ti->type == PA_TARGET_CGROUP && !strcmp(ti->cgroup, cgroup)) {
                *out = ti->power;
                rc = 0;
                break;
            }
        }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_system_power(pa_ctx *ctx, pa_power *out)
{
    if (!ctx || !out)
        return pa__err(-EINVAL, "pa_system_power: bad arguments");
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    if (!ctx->have_report)
        rc = pa__err(-ENODATA, "no complete window yet (tick twice)");
    else
        *out = ctx->sys_power;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_report_get(pa_ctx *ctx, pa_report **out)
{
    if (!ctx || !out)
        return pa__err(-EINVAL, "pa_report_get: bad arguments");
    pthread_mutex_lock(&ctx->lock);
    int rc;
    if (!ctx->have_report)
        rc = pa__err(-ENODATA, "no complete window yet (tick twice)");
    else
        rc = pa__report_copy(&ctx->report, out);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Helpers for module writers                                          */
/* ------------------------------------------------------------------ */

void *pa_module_priv(const pa_module *m)
{
    return m->priv;
}

void pa_module_set_priv(pa_module *m, void *priv)
{
    m->priv = priv;
}

const pa_env *pa_module_env(const pa_module *m)
{
    return &m->ctx->env;
}

void pa_module_errorf(pa_module *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof(m->err), fmt, ap);
    va_end(ap);
    pa__err(0, "%s", m->err);
}

const char *pa_env_procfs(const pa_env *env)
{
    return env->procfs;
}

const char *pa_env_sysfs(const pa_env *env)
{
    return env->sysfs;
}

const char *pa_env_devfs(const pa_env *env)
{
    return env->devfs;
}

static bool is_watched(const pa_ctx *ctx, pid_t pid, unsigned flag)
{
    for (size_t i = 0; i < ctx->nwatches; i++)
        if (ctx->watches[i].pid == pid &&
            (ctx->watches[i].flags & flag) == flag)
            return true;
    return false;
}

int pa_frame_set_cpu_ns(pa_frame *f, pid_t pid, pid_t tid, uint64_t cpu_ns)
{
    pa_ctx *ctx = f->ctx;
    pa_task *t = tid ? pa__task_find(ctx, PA_TARGET_THREAD, tid)
                     : pa__task_find(ctx, PA_TARGET_PROCESS, pid);
    /* a user sensor may be the one that discovers a watched target */
    if (!t && (tid ? is_watched(ctx, pid, PA_WATCH_THREADS)
                   : (ctx->watch_all || is_watched(ctx, pid, 0)))) {
        t = pa__task_seen(f, tid ? PA_TARGET_THREAD : PA_TARGET_PROCESS, pid,
                          tid, 0);
        if (!t)
            return pa__err(-ENOMEM, "out of memory");
        if (tid)
            t->proc = pa__task_find(ctx, PA_TARGET_PROCESS, pid);
    }
    if (!t)
        return pa__err(-ESRCH, "pid %d tid %d: not a target (watch it first)",
                       (int)pid, (int)tid);
    t->cur.cpu_ns = cpu_ns;
    t->cur.have |= PA_RD_CPU;
    t->seen_tick = f->tick;
    return 0;
}

double pa_delta_interval_s(const pa_frame_delta *d)
{
    return d->interval_s;
}

size_t pa_delta_count(const pa_frame_delta *d)
{
    return d->ntasks;
}

double pa_delta_cpu_s(const pa_frame_delta *d, size_t i)
{
    return i < d->ntasks ? d->tasks[i]->d_cpu_s : 0;
}

double pa_delta_capacity_s(const pa_frame_delta *d)
{
    return d->capacity_s;
}

double pa_delta_busy_s(const pa_frame_delta *d)
{
    return d->busy_s;
}

void pa_table_set_target_w(pa_power_table *t, size_t i, double w)
{
    if (i >= t->ntasks)
        return;
    if (t->component == PA_COMP_NIC)
        t->tasks[i]->nic_w = w;
    else
        t->tasks[i]->cpu_w = w;
}

void pa_table_set_system_w(pa_power_table *t, double w, double idle_w)
{
    if (t->component == PA_COMP_NIC) {
        t->nic_w = w;
    } else {
        t->cpu_w = w;
        t->idle_w = idle_w;
    }
}

void pa_table_assume(pa_power_table *t, const char *fmt, ...)
{
    char buf[384]; /* a hwdb source (up to 255) with its context */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    pa__assume(t->assumed, sizeof(t->assumed), buf);
}
