/*
 * scope.c - the energy of named regions of code (DESIGN.md section 15).
 *
 * Hot path (a name already seen): begin hashes the name, finds it in an
 * open-addressing table read without a lock (slots are published with
 * release stores and never removed), and pushes a frame on a thread-local
 * stack; end pops it, reads the price (a seqlock that the tick writes at
 * the end of each window) and adds to the name's atomic counters.  Only a
 * name's first use takes the scopes' mutex and allocates.
 */
#include "internal.h"
#include "scopetab.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PRICED (1u << 31) /* rate_flags: a price was read */

typedef pa__scope_name scope_name;

struct pa__scopes {
    pa__scope_table tab;          /* its lock also serialises pa_scope_configure */
    _Atomic int pid_now;          /* pa_scope_opts.pid */
    _Atomic uint64_t carbon_bits; /* pa_scope_opts.carbon_g_per_kwh (a
                                     double; 0 none) */

    /* the price, under a seqlock: written by the tick (pa__scopes_window,
     * under the context lock) and by pa_scope_configure or the scopes'
     * making (from the public getters), serialised by price_lock; stamp
     * is the end of the priced window, so an older one never replaces a
     * newer one */
    pthread_mutex_t price_lock;
    uint64_t stamp;
    _Atomic unsigned seq;
    _Atomic uint64_t rate_bits;
    _Atomic unsigned rate_flags;
};

typedef struct scope_frame {
    pa_ctx *ctx;
    struct pa__scopes *sc;
    scope_name *e;
    uint64_t hash;     /* of the name given to begin (folded names) */
    uint64_t begin_ns; /* thread CPU clock */
    uint64_t child_ns; /* inclusive CPU time of the children */
    double child_j;    /* their inclusive energy */
    bool folded, recursive;
} scope_frame;

static _Thread_local scope_frame stack[PA_SCOPE_MAX_DEPTH];
static _Thread_local unsigned depth;

/* ------------------------------------------------------------------ */
/* The context's scopes                                                */
/* ------------------------------------------------------------------ */

static struct pa__scopes *scopes_new(void)
{
    struct pa__scopes *sc = calloc(1, sizeof(*sc));
    if (!sc)
        return NULL;
    pa__scope_table_init(&sc->tab, PA_SCOPE_DEFAULT_NAMES);
    pthread_mutex_init(&sc->price_lock, NULL);
    return sc;
}

static void scopes_free(struct pa__scopes *sc)
{
    if (!sc)
        return;
    pa__scope_table_destroy(&sc->tab);
    pthread_mutex_destroy(&sc->price_lock);
    free(sc);
}

static void price_load(pa_ctx *ctx, struct pa__scopes *sc);

/* The context's scopes, made at the first use (several threads may race
 * to make them: one wins). */
static struct pa__scopes *scopes_of(pa_ctx *ctx)
{
    struct pa__scopes *sc = atomic_load_explicit(&ctx->scopes, memory_order_acquire);
    if (sc)
        return sc;
    struct pa__scopes *mine = scopes_new();
    if (!mine)
        return NULL;
    if (atomic_compare_exchange_strong(&ctx->scopes, &sc, mine)) {
        price_load(ctx, mine); /* the windows before: the last one */
        return mine;
    }
    scopes_free(mine);
    return sc;
}

void pa__scopes_free(pa_ctx *ctx)
{
    scopes_free(atomic_load(&ctx->scopes));
}

int pa_scope_configure(pa_ctx *ctx, const pa_scope_opts *opts)
{
    pa_scope_opts def = {0};
    if (!opts)
        opts = &def;
    if (!ctx)
        return pa__err(-EINVAL, "pa_scope_configure: ctx is NULL");
    size_t max = opts->max_names ? opts->max_names : PA_SCOPE_DEFAULT_NAMES;
    if (max > PA__SCOPE_NAMES_LIMIT)
        return pa__err(-EINVAL, "pa_scope_configure: max_names %zu is over %d", opts->max_names,
                       PA__SCOPE_NAMES_LIMIT);
    double g;
    if (opts->carbon_g_per_kwh != 0 && pa_carbon_g(0, opts->carbon_g_per_kwh, &g) < 0)
        return pa__err(-ERANGE,
                       "pa_scope_configure: carbon_g_per_kwh %g is out of range (0: none, "
                       "else grams of CO2e per kWh, more than 0 and at most 5000)",
                       opts->carbon_g_per_kwh);
    if (opts->pid < -1)
        return pa__err(-EINVAL,
                       "pa_scope_configure: pid %d (0: this process, -1: the "
                       "machine, or a pid)",
                       (int)opts->pid);
    struct pa__scopes *sc = scopes_of(ctx);
    if (!sc)
        return pa__err(-ENOMEM, "pa_scope_configure: out of memory");
    pthread_mutex_lock(&sc->tab.lock);
    int rc = 0;
    if (max != sc->tab.max_names && atomic_load(&sc->tab.slots))
        rc = pa__err(-EBUSY,
                     "pa_scope_configure: max_names is set before the "
                     "context's first scope (it is %zu)",
                     sc->tab.max_names);
    else {
        sc->tab.max_names = max;
        atomic_store(&sc->pid_now, (int)opts->pid);
        atomic_store(&sc->carbon_bits, pa__d2u(opts->carbon_g_per_kwh));
    }
    pthread_mutex_unlock(&sc->tab.lock);
    if (rc == 0) /* the price of the last window, for this pid, now */
        price_load(ctx, sc);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The price: energy per CPU-second of the last window                 */
/* ------------------------------------------------------------------ */

/* The pricing rule (DESIGN.md section 15): the process's CPU power per
 * CPU-second of the window when it ran with a power (a process whose CPU
 * ticks and the machine's disagree over a short window may get none),
 * else the machine's active power per busy CPU-second.  proc may be NULL.
 * False when neither ran: the previous price stays. */
static bool price_rule(const pa_power *proc, const pa_power *sys, double *rate, unsigned *flags)
{
    if (proc && proc->cpu_time_s > 0 && proc->cpu_w > 0) {
        *rate = proc->cpu_w * proc->interval_s / proc->cpu_time_s;
        *flags = proc->flags & PA_POWER_MEASURED;
        return true;
    }
    if (sys && sys->cpu_time_s > 0 && sys->cpu_w > sys->idle_w) {
        *rate = (sys->cpu_w - sys->idle_w) * sys->interval_s / sys->cpu_time_s;
        *flags = (sys->flags & PA_POWER_MEASURED) | PA_SCOPE_RATE_SYSTEM;
        return true;
    }
    return false;
}

/* Publishes a price of the window ending at stamp, unless a later one is
 * there already. */
static void price_publish(struct pa__scopes *sc, double rate, unsigned flags, uint64_t stamp)
{
    pthread_mutex_lock(&sc->price_lock);
    if (stamp >= sc->stamp) {
        sc->stamp = stamp;
        unsigned s = atomic_load_explicit(&sc->seq, memory_order_relaxed);
        atomic_store_explicit(&sc->seq, s + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&sc->rate_bits, pa__d2u(rate), memory_order_relaxed);
        atomic_store_explicit(&sc->rate_flags, flags | PRICED, memory_order_relaxed);
        atomic_store_explicit(&sc->seq, s + 2, memory_order_release);
    }
    pthread_mutex_unlock(&sc->price_lock);
}

/* The tick, at the end of each window, under the context lock. */
void pa__scopes_window(pa_ctx *ctx)
{
    struct pa__scopes *sc = atomic_load_explicit(&ctx->scopes, memory_order_acquire);
    if (!sc)
        return;
    int pid = atomic_load(&sc->pid_now);
    const pa_power *sys = &ctx->sys_power;
    const pa_task *t =
        pid >= 0 ? pa__task_find(ctx, PA_TARGET_PROCESS, pid ? pid : getpid()) : NULL;
    pa_power proc = {0};
    if (t && t->in_window && !t->gone) {
        proc.cpu_w = t->cpu_w;
        proc.cpu_time_s = t->d_cpu_s;
        proc.interval_s = sys->interval_s;
        proc.flags = sys->flags & PA_POWER_MEASURED;
    }
    double rate;
    unsigned flags;
    if (price_rule(t ? &proc : NULL, sys, &rate, &flags))
        price_publish(sc, rate, flags, sys->time_ns);
}

/* The last window's price, when the scopes are made or reconfigured: the
 * getters' figures, read under the context lock (taken here) with the
 * library's lock-held getter, which leaves the caller's last error alone. */
static void price_load(pa_ctx *ctx, struct pa__scopes *sc)
{
    int pid = atomic_load(&sc->pid_now);
    pa_power proc, sys;
    pthread_mutex_lock(&ctx->lock);
    bool have_proc = pid >= 0 && pa__target_power_locked(ctx, PA_TARGET_PROCESS,
                                                         pid ? pid : getpid(), &proc) == 0;
    bool have_sys = ctx->have_report;
    if (have_sys)
        sys = ctx->sys_power;
    pthread_mutex_unlock(&ctx->lock);
    double rate;
    unsigned flags;
    if (have_sys && price_rule(have_proc ? &proc : NULL, &sys, &rate, &flags))
        price_publish(sc, rate, flags, sys.time_ns);
}

/* The price and its flags (PA_SCOPE_NO_WINDOW when there is none yet). */
static double price(struct pa__scopes *sc, unsigned *flags)
{
    for (;;) {
        unsigned s = atomic_load_explicit(&sc->seq, memory_order_acquire);
        if (s & 1)
            continue;
        double r = pa__u2d(atomic_load_explicit(&sc->rate_bits, memory_order_relaxed));
        unsigned f = atomic_load_explicit(&sc->rate_flags, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&sc->seq, memory_order_relaxed) != s)
            continue;
        if (!(f & PRICED)) {
            *flags = PA_SCOPE_NO_WINDOW;
            return 0;
        }
        *flags = f & ~PRICED;
        return r;
    }
}

/* ------------------------------------------------------------------ */
/* Begin and end                                                       */
/* ------------------------------------------------------------------ */

int pa_scope_begin_at(pa_ctx *ctx, const char *name, uint64_t cpu_ns)
{
    if (!ctx || !name)
        return pa__err(-EINVAL, "pa_scope_begin: %s is NULL", ctx ? "name" : "ctx");
    size_t len = strnlen(name, PA_SCOPE_NAME_MAX);
    if (!len)
        return pa__err(-EINVAL, "pa_scope_begin: the name is empty");
    if (len == PA_SCOPE_NAME_MAX)
        return pa__err(-ENAMETOOLONG, "pa_scope_begin: the name '%.32s...' is over %d bytes", name,
                       PA_SCOPE_NAME_MAX - 1);
    if (depth >= PA_SCOPE_MAX_DEPTH)
        return pa__err(-E2BIG,
                       "pa_scope_begin '%s': %d scopes are already open on "
                       "this thread (is a pa_scope_end missing?)",
                       name, PA_SCOPE_MAX_DEPTH);
    struct pa__scopes *sc = scopes_of(ctx);
    if (!sc)
        return pa__err(-ENOMEM, "pa_scope_begin: out of memory");
    uint64_t hash = pa__hash_str(name);
    bool folded = false;
    scope_name *e;
    int rc = pa__scope_table_get(&sc->tab, name, len, hash, &e, &folded);
    if (rc < 0)
        return rc;
    bool recursive = false;
    for (unsigned i = 0; i < depth && !recursive; i++)
        recursive = stack[i].e == e;
    stack[depth++] = (scope_frame){.ctx = ctx,
                                   .sc = sc,
                                   .e = e,
                                   .hash = hash,
                                   .begin_ns = cpu_ns,
                                   .folded = folded,
                                   .recursive = recursive};
    return 0;
}

/* Checks that the innermost frame is `name` on ctx. */
static int end_check(pa_ctx *ctx, const char *name, uint64_t cpu_ns)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_scope_end: ctx is NULL");
    if (!depth)
        return pa__err(-ENOENT,
                       "pa_scope_end '%s': no scope is open on this thread "
                       "(pa_scope_begin first, on the same thread)",
                       name ? name : "(any)");
    const scope_frame *f = &stack[depth - 1];
    const char *open = f->folded ? "(a folded name)" : f->e->name;
    if (f->ctx != ctx)
        return pa__err(-EPROTO,
                       "pa_scope_end: the innermost open scope '%s' was "
                       "begun on another context",
                       open);
    if (name && (f->folded ? pa__hash_str(name) != f->hash : strcmp(name, f->e->name) != 0))
        return pa__err(-EPROTO,
                       "pa_scope_end '%s': the innermost open scope on this "
                       "thread is '%s' (scopes end in the reverse order of "
                       "their begins)",
                       name, open);
    if (cpu_ns < f->begin_ns || cpu_ns - f->begin_ns < f->child_ns)
        return pa__err(-EINVAL,
                       "pa_scope_end '%s': CPU clock %llu ns is before the "
                       "scope's begin or its children's end",
                       open, (unsigned long long)cpu_ns);
    return 0;
}

int pa_scope_end_at(pa_ctx *ctx, const char *name, uint64_t cpu_ns, pa_scope_result *out)
{
    int rc = end_check(ctx, name, cpu_ns);
    if (rc < 0)
        return rc;
    scope_frame f = stack[--depth];
    uint64_t incl = cpu_ns - f.begin_ns, self = incl - f.child_ns;
    pa_scope_result r = {0};
    double rate = price(f.sc, &r.flags);
    r.cpu_time_s = (double)incl * 1e-9;
    r.self_cpu_time_s = (double)self * 1e-9;
    r.self_energy_j = r.self_cpu_time_s * rate;
    r.energy_j = r.self_energy_j + f.child_j;
    r.j_per_cpu_s = rate;
    r.depth = depth;
    r.flags |= (f.recursive ? PA_SCOPE_RECURSIVE : 0) | (f.folded ? PA_SCOPE_FOLDED : 0);
    /* the nearest enclosing scope of the same context is the parent */
    for (unsigned i = depth; i-- > 0;)
        if (stack[i].sc == f.sc) {
            stack[i].child_ns += incl;
            stack[i].child_j += r.energy_j;
            break;
        }
    pa__scope_call c = {.cpu_ns = incl,
                        .self_ns = self,
                        .energy_j = r.energy_j,
                        .self_energy_j = r.self_energy_j,
                        .flags = r.flags};
    pa__scope_record(f.e, &c);
    if (out)
        *out = r;
    return 0;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int pa_scope_begin(pa_ctx *ctx, const char *name)
{
    /* the clock last, so that the name's lookup is outside the scope: the
     * frame's begin is set after the push */
    int rc = pa_scope_begin_at(ctx, name, 0);
    if (rc == 0) {
        pa__strace_note(stack[depth - 1].e); /* powerapi profile's trace */
        stack[depth - 1].begin_ns = thread_cpu_ns();
    }
    return rc;
}

int pa_scope_end(pa_ctx *ctx, const char *name, pa_scope_result *out)
{
    int rc = pa_scope_end_at(ctx, name, thread_cpu_ns(), out);
    if (rc == 0)
        pa__strace_note(depth ? stack[depth - 1].e : NULL);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Aggregates                                                          */
/* ------------------------------------------------------------------ */

/* The grams of CO2e of the figures at the context's carbon intensity
 * (pa_carbon_g, the one conversion), when it has one. */
static void stats_carbon(double g_per_kwh, pa_scope_stats *s)
{
    if (g_per_kwh <= 0 || pa_carbon_g(s->energy_j, g_per_kwh, &s->co2e_g) < 0 ||
        pa_carbon_g(s->self_energy_j, g_per_kwh, &s->self_co2e_g) < 0 ||
        pa_carbon_g(s->mean_j, g_per_kwh, &s->mean_co2e_g) < 0)
        return;
    s->carbon_g_per_kwh = g_per_kwh;
}

/* A name's aggregates (scopetab.c) with the context's grams of CO2e. */
static void stats_fill(struct pa__scopes *sc, scope_name *e, bool other, pa_scope_stats *out)
{
    pa__scope_fill(e, other, out, NULL);
    stats_carbon(pa__u2d(atomic_load(&sc->carbon_bits)), out);
}

/* The scopes to read, or NULL when the context has none. */
static struct pa__scopes *scopes_read(pa_ctx *ctx, size_t *n, bool *other, scope_name ***names)
{
    struct pa__scopes *sc = atomic_load_explicit(&ctx->scopes, memory_order_acquire);
    *n = 0;
    *other = false;
    *names = sc ? pa__scope_table_names(&sc->tab, n, other) : NULL;
    return *names ? sc : NULL;
}

int pa_scope_list(pa_ctx *ctx, pa_scope_stats *out, size_t cap)
{
    if (!ctx || (!out && cap))
        return pa__err(-EINVAL, "pa_scope_list: %s is NULL", ctx ? "out" : "ctx");
    size_t n;
    bool other;
    scope_name **names;
    struct pa__scopes *sc = scopes_read(ctx, &n, &other, &names);
    for (size_t i = 0; i < n && i < cap; i++)
        stats_fill(sc, names[i], false, &out[i]);
    if (other && n < cap)
        stats_fill(sc, sc->tab.other, true, &out[n]);
    size_t total = n + (other ? 1 : 0);
    return total > INT32_MAX ? INT32_MAX : (int)total;
}

int pa_scope_get(pa_ctx *ctx, const char *name, pa_scope_stats *out)
{
    if (!ctx || !name || !out)
        return pa__err(-EINVAL, "pa_scope_get: %s is NULL", !ctx ? "ctx" : !name ? "name" : "out");
    size_t n;
    bool other;
    scope_name **names;
    struct pa__scopes *sc = scopes_read(ctx, &n, &other, &names);
    if (sc && other && !strcmp(name, PA_SCOPE_OTHER)) {
        stats_fill(sc, sc->tab.other, true, out);
        return 0;
    }
    scope_name *e = sc ? pa__scope_table_find(&sc->tab, pa__hash_str(name), name) : NULL;
    if (!e)
        return pa__err(-ENOENT, "pa_scope_get: no scope '%s' on this context%s", name,
                       other ? " (names beyond max_names are counted under "
                               "'" PA_SCOPE_OTHER "')"
                             : "");
    stats_fill(sc, e, false, out);
    return 0;
}
