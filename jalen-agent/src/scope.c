/*
 * scope.c - the natives of org.powerapi.jalen.Scope (jalen-agent/api) and
 * the energy of its calls (DESIGN.md section 15, "jalen's scopes").
 *
 * The Java side keeps each thread's stack of open scopes; the natives read
 * the thread's CPU clock and socket byte count at enter and at exit, and
 * at exit queue the call (inclusive and self CPU ns and bytes) for the
 * agent thread.  At the end of each window the agent thread prices the
 * calls queued in it at that window's process energy per CPU-second and
 * NIC energy per byte and adds them to the per-name aggregates (the
 * library's scopetab: bounded name table, log-bucketed histograms).
 *
 * Cost at exit: one short critical section (the queue's mutex) besides the
 * two clock reads; the queue grows by 48 bytes a call between two windows.
 */
#include "jalen.h"
#include "scopetab.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SCOPE_CLASS "Lorg/powerapi/jalen/Scope;"
/* flags set by the Java side (Scope.java) */
enum { JS_RECURSIVE = 1, JS_TOP = 2, JS_PART = 4 };
#define JS_OTHER_ID (-2) /* the id of [other scopes] in a call */

typedef struct jl_scall {
    int32_t id;     /* name index; JS_OTHER_ID; -1: a thread's outermost time */
    uint32_t flags; /* JS_* */
    uint64_t cpu_ns, self_ns, bytes, self_bytes;
} jl_scall;

static pa__scope_table jl_stab;
static int jl_stab_on, jl_stab_quiet;
static atomic_int jl_stab_warned, jl_name_warned; /* folded names; refused ones */
/* calls are queued while a run goes on (jl_scopes_set_active): after a
 * stop nobody drains the queue */
static atomic_int jl_scopes_active;

/* calls ended since the last window: written under jl_sq_lock by the
 * threads that close scopes, taken whole by the agent thread */
static pthread_mutex_t jl_sq_lock = PTHREAD_MUTEX_INITIALIZER;
static jl_scall *jl_sq, *jl_sq_spare;
static size_t jl_sqn, jl_sqcap, jl_sq_sparecap;
static uint64_t jl_sq_lost; /* calls not queued (out of memory) */

/* Scope's fields, looked up when the class is bound */
static jfieldID f_j_per_ns, f_j_per_byte;
static jfieldID f_id, f_outer, f_flags, f_commit, f_cpu0, f_bytes0, f_cpu, f_bytes, f_child_cpu,
    f_child_bytes, f_ext_cpu, f_ext_bytes, f_ext_self_cpu, f_ext_self_bytes;

static __thread pid_t jl_scope_tid;
/* agent thread: the pseudo-method of each code, -1 unknown yet */
static int *jl_scope_methods;
static size_t jl_scope_nmethods;

/* The calling thread's innermost open scope, for its samples (sampler.c
 * stamps them with it): code id + 3, 0 none. */
static void set_current(jint id)
{
    pid_t tid = jl_scope_tid;
    if (!tid)
        tid = jl_scope_tid = jl_gettid();
    jl_sampler_set_scope(tid, id == -1 ? 0 : (int)id + 3);
}

/* the last priced window's prices (J per CPU ns, J per byte), for the
 * estimate Scope gives at close (doubles as bits) */
static _Atomic uint64_t jl_last_p, jl_last_b;

/* agent thread, under the profile lock */
static double jl_scoped_j, jl_unscoped_j, jl_scoped_cpu_s;
static uint64_t jl_scoped_bytes;

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void jl_scopes_init(size_t max_names, int quiet)
{
    if (jl_stab_on)
        return; /* a second run in this JVM (attached again) goes on counting */
    pa__scope_table_init(&jl_stab, max_names);
    jl_stab_quiet = quiet;
    jl_stab_on = 1;
}

void jl_scopes_set_active(int on)
{
    atomic_store(&jl_scopes_active, on);
}

/* ------------------------------------------------------------------ */
/* Natives                                                             */
/* ------------------------------------------------------------------ */

static jint JNICALL n_id(JNIEnv *env, jclass cls, jstring name)
{
    (void)cls;
    if (!name || !jl_stab_on)
        return -1;
    const char *s = (*env)->GetStringUTFChars(env, name, NULL);
    if (!s)
        return -1; /* OutOfMemoryError pending */
    size_t len = strnlen(s, PA_SCOPE_NAME_MAX);
    pa__scope_name *e = NULL;
    bool folded = false;
    int rc = len == PA_SCOPE_NAME_MAX
                 ? -ENAMETOOLONG
                 : pa__scope_table_get(&jl_stab, s, len, pa__hash_str(s), &e, &folded);
    jint id = -1;
    if (rc == 0 && folded) {
        id = JS_OTHER_ID;
        if (!atomic_exchange(&jl_stab_warned, 1) && !jl_stab_quiet)
            fprintf(stderr,
                    "jalen: more than %zu distinct scope names ('%.64s' is one too many): the "
                    "calls of the others are counted under '%s' (raise scopes=N)\n",
                    jl_stab.max_names, s, PA_SCOPE_OTHER);
    } else if (rc == 0) {
        size_t n;
        bool other;
        pa__scope_name **names = pa__scope_table_names(&jl_stab, &n, &other);
        for (size_t i = 0; i < n && id < 0; i++)
            if (names[i] == e)
                id = (jint)i;
    } else if (!atomic_exchange(&jl_name_warned, 1) && !jl_stab_quiet) {
        if (rc == -ENAMETOOLONG)
            fprintf(stderr,
                    "jalen: scope '%.64s...' not counted: its name is over %d bytes (name the "
                    "unit of work, a route, not its data)\n",
                    s, PA_SCOPE_NAME_MAX - 1);
        else
            fprintf(stderr, "jalen: scope '%.64s' not counted: %s\n", s, pa_last_error());
    }
    (*env)->ReleaseStringUTFChars(env, name, s);
    return id;
}

static void JNICALL n_enter(JNIEnv *env, jclass cls, jobject s)
{
    (void)cls;
    set_current((*env)->GetIntField(env, s, f_id));
    uint64_t bytes = jl_net_thread_bytes();
    (*env)->SetLongField(env, s, f_bytes0, (jlong)bytes);
    (*env)->SetLongField(env, s, f_cpu0, (jlong)thread_cpu_ns());
}

static void queue(const jl_scall *c)
{
    if (!atomic_load(&jl_scopes_active))
        return; /* the run was stopped: nobody drains the queue */
    pthread_mutex_lock(&jl_sq_lock);
    if (PA__GROW(jl_sq, jl_sqcap, jl_sqn + 1, 1024) == 0)
        jl_sq[jl_sqn++] = *c;
    else
        jl_sq_lost++;
    pthread_mutex_unlock(&jl_sq_lock);
}

#define GETJ(f) ((uint64_t)(*env)->GetLongField(env, s, (f)))

/* Queues the call s (its own figures plus the work continued elsewhere). */
static void record(JNIEnv *env, jobject s, jint id, uint32_t flags)
{
    uint64_t cpu = GETJ(f_cpu), bytes = GETJ(f_bytes);
    jl_scall c = {
        .id = id,
        .flags = flags & ~(uint32_t)JS_TOP,
        .cpu_ns = cpu + GETJ(f_ext_cpu),
        .self_ns = cpu - GETJ(f_child_cpu) + GETJ(f_ext_self_cpu),
        .bytes = bytes + GETJ(f_ext_bytes),
        .self_bytes = bytes - GETJ(f_child_bytes) + GETJ(f_ext_self_bytes),
    };
    queue(&c);
}

static void JNICALL n_exit(JNIEnv *env, jclass cls, jobject s)
{
    (void)cls;
    uint64_t now = thread_cpu_ns(), bytes = jl_net_thread_bytes();
    uint64_t cpu = now - GETJ(f_cpu0), moved = bytes - GETJ(f_bytes0);
    (*env)->SetLongField(env, s, f_cpu, (jlong)cpu);
    (*env)->SetLongField(env, s, f_bytes, (jlong)moved);
    set_current((*env)->GetIntField(env, s, f_outer));
    (*env)->SetDoubleField(env, s, f_j_per_ns,
                           pa__u2d(atomic_load_explicit(&jl_last_p, memory_order_relaxed)));
    (*env)->SetDoubleField(env, s, f_j_per_byte,
                           pa__u2d(atomic_load_explicit(&jl_last_b, memory_order_relaxed)));
    uint32_t flags = (uint32_t)(*env)->GetIntField(env, s, f_flags);
    if (flags & JS_TOP) {
        jl_scall top = {.id = -1, .cpu_ns = cpu, .bytes = moved};
        queue(&top);
    }
    if ((*env)->GetBooleanField(env, s, f_commit))
        record(env, s, (*env)->GetIntField(env, s, f_id), flags);
}

static void JNICALL n_record(JNIEnv *env, jclass cls, jobject s)
{
    (void)cls;
    record(env, s, (*env)->GetIntField(env, s, f_id),
           (uint32_t)(*env)->GetIntField(env, s, f_flags));
}

#undef GETJ

/* ------------------------------------------------------------------ */
/* Binding                                                             */
/* ------------------------------------------------------------------ */

static int fields(JNIEnv *env, jclass k)
{
    static const struct {
        jfieldID *id;
        const char *name, *sig;
    } f[] = {
        {&f_id, "id", "I"},
        {&f_j_per_ns, "jPerCpuNs", "D"},
        {&f_j_per_byte, "jPerByte", "D"},
        {&f_outer, "outer", "I"},
        {&f_flags, "flags", "I"},
        {&f_commit, "commit", "Z"},
        {&f_cpu0, "cpu0", "J"},
        {&f_bytes0, "bytes0", "J"},
        {&f_cpu, "cpu", "J"},
        {&f_bytes, "bytes", "J"},
        {&f_child_cpu, "childCpu", "J"},
        {&f_child_bytes, "childBytes", "J"},
        {&f_ext_cpu, "extCpu", "J"},
        {&f_ext_bytes, "extBytes", "J"},
        {&f_ext_self_cpu, "extSelfCpu", "J"},
        {&f_ext_self_bytes, "extSelfBytes", "J"},
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (!(*f[i].id = (*env)->GetFieldID(env, k, f[i].name, f[i].sig)))
            return -1;
    return 0;
}

/* Registers the natives of k and sets its flag: 0, or -1 (an exception
 * may be pending). */
static int bind(JNIEnv *env, jclass k)
{
    static const JNINativeMethod nm[] = {
        {(char *)"nId", (char *)"(Ljava/lang/String;)I", (void *)n_id},
        {(char *)"nEnter", (char *)"(" SCOPE_CLASS ")V", (void *)n_enter},
        {(char *)"nExit", (char *)"(" SCOPE_CLASS ")V", (void *)n_exit},
        {(char *)"nRecord", (char *)"(" SCOPE_CLASS ")V", (void *)n_record},
    };
    jfieldID bound;
    if (fields(env, k) < 0 || (*env)->RegisterNatives(env, k, nm, 4) != 0 ||
        !(bound = (*env)->GetStaticFieldID(env, k, "bound", "Z")))
        return -1;
    (*env)->SetStaticBooleanField(env, k, bound, JNI_TRUE);
    return 0;
}

void jl_scope_bind(jvmtiEnv *jvmti, JNIEnv *env, jclass k)
{
    char *sig = NULL;
    if (!jl_stab_on || !env ||
        (*jvmti)->GetClassSignature(jvmti, k, &sig, NULL) != JVMTI_ERROR_NONE || !sig)
        return;
    int ours = !strcmp(sig, SCOPE_CLASS);
    (*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
    if (!ours)
        return;
    /* the natives use one class's field ids: a second copy of the class
     * (another class loader) stays unbound, its scopes inert */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static jclass bound_class;
    pthread_mutex_lock(&lock);
    if (bound_class) {
        if (!(*env)->IsSameObject(env, bound_class, k) && !jl_stab_quiet)
            fprintf(stderr, "jalen: a second org.powerapi.jalen.Scope (another class loader): its "
                            "scopes are not counted; put jalen-api.jar on a class path the "
                            "applications share\n");
    } else if (bind(env, k) == 0) {
        bound_class = (*env)->NewGlobalRef(env, k);
    } else {
        (*env)->ExceptionClear(env);
        if (!jl_stab_quiet)
            fprintf(stderr, "jalen: org.powerapi.jalen.Scope does not match this agent (a "
                            "jalen-api.jar of another version?): scopes not counted\n");
    }
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------ */
/* Windows                                                             */
/* ------------------------------------------------------------------ */

static pa__scope_name *entry(int32_t id)
{
    if (id == JS_OTHER_ID)
        return jl_stab.other;
    size_t n;
    bool other;
    pa__scope_name **names = pa__scope_table_names(&jl_stab, &n, &other);
    return names && id >= 0 && (size_t)id < n ? names[id] : NULL;
}

int jl_window_prices(double cpu_j, double cpu_s, double nic_j, uint64_t bytes, double *p, double *b)
{
    /* J per CPU-second, J per byte */
    int priced = cpu_s > 0 && cpu_j > 0;
    *p = priced ? cpu_j / cpu_s : 0;
    *b = bytes ? nic_j / (double)bytes : 0;
    return priced;
}

void jl_scopes_window(double cpu_j, double cpu_s, double nic_j, uint64_t bytes)
{
    if (!jl_stab_on)
        return;
    pthread_mutex_lock(&jl_sq_lock);
    jl_scall *q = jl_sq;
    size_t n = jl_sqn, cap = jl_sqcap;
    jl_sq = jl_sq_spare;
    jl_sqcap = jl_sq_sparecap;
    jl_sqn = 0;
    pthread_mutex_unlock(&jl_sq_lock);
    double p, b;
    int priced = jl_window_prices(cpu_j, cpu_s, nic_j, bytes, &p, &b);
    if (priced)
        atomic_store_explicit(&jl_last_p, pa__d2u(p * 1e-9), memory_order_relaxed);
    if (bytes)
        atomic_store_explicit(&jl_last_b, pa__d2u(b), memory_order_relaxed);
    uint64_t top_ns = 0, top_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const jl_scall *c = &q[i];
        if (c->id == -1) {
            top_ns += c->cpu_ns;
            top_bytes += c->bytes;
            continue;
        }
        pa__scope_name *e = entry(c->id);
        if (!e)
            continue;
        pa__scope_call r = {
            .cpu_ns = c->cpu_ns,
            .self_ns = c->self_ns,
            .net_j = (double)c->bytes * b,
            .self_net_j = (double)c->self_bytes * b,
            .net_bytes = c->bytes,
            .self_net_bytes = c->self_bytes,
            .flags = (c->flags & JS_RECURSIVE ? PA_SCOPE_RECURSIVE : 0) |
                     (c->flags & JS_PART ? PA__SCOPE_PART : 0) | (priced ? 0 : PA_SCOPE_NO_WINDOW),
        };
        r.energy_j = (double)c->cpu_ns * 1e-9 * p + r.net_j;
        r.self_energy_j = (double)c->self_ns * 1e-9 * p + r.self_net_j;
        pa__scope_record(e, &r);
    }
    jl_sq_spare = q;
    jl_sq_sparecap = cap;
    /* scoped: the outermost scopes' time; unscoped: the rest of the
     * window's, each at the window's prices (a thread clock ahead of the
     * window's CPU time is cut to it) */
    double sc_s = (double)top_ns * 1e-9;
    if (sc_s > cpu_s)
        sc_s = cpu_s;
    uint64_t sc_b = top_bytes < bytes ? top_bytes : bytes;
    double scoped = sc_s * p + (double)sc_b * b;
    double unscoped = (cpu_s - sc_s) * p + (double)(bytes - sc_b) * b;
    if (!priced)
        unscoped += cpu_j; /* no CPU time to price it by */
    if (!bytes)
        unscoped += nic_j;
    jl_scoped_j += scoped;
    jl_unscoped_j += unscoped;
    jl_scoped_cpu_s += (double)top_ns * 1e-9;
    jl_scoped_bytes += top_bytes;
}

int jl_scope_frame(int code)
{
    size_t i = (size_t)code;
    if (code <= 0)
        return -1;
    if (i >= jl_scope_nmethods) {
        size_t old = jl_scope_nmethods;
        if (PA__GROW(jl_scope_methods, jl_scope_nmethods, i + 1, 64) < 0)
            return -1;
        for (size_t k = old; k < jl_scope_nmethods; k++)
            jl_scope_methods[k] = -1;
    }
    if (jl_scope_methods[i] < 0) {
        pa__scope_name *e = entry(code - 3);
        char name[PA_SCOPE_NAME_MAX + 16];
        if (!e)
            return -1;
        snprintf(name, sizeof(name), "[scope %s]", e->name);
        jl_scope_methods[i] = jl_method_pseudo(name);
    }
    return jl_scope_methods[i];
}

int jl_scope_frame_of(const char *name)
{
    if (!jl_stab_on)
        return -1;
    pa__scope_name *e = !strcmp(name, PA_SCOPE_OTHER)
                            ? jl_stab.other
                            : pa__scope_table_find(&jl_stab, pa__hash_str(name), name);
    size_t n;
    bool other;
    pa__scope_name **names = pa__scope_table_names(&jl_stab, &n, &other);
    for (size_t i = 0; e && names && i < n; i++)
        if (names[i] == e)
            return jl_scope_frame((int)i + 3);
    return e && e == jl_stab.other ? jl_scope_frame(JS_OTHER_ID + 3) : -1;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

void jl_scopes_totals(double *scoped_j, double *unscoped_j)
{
    *scoped_j = jl_scoped_j;
    *unscoped_j = jl_unscoped_j;
}

void jl_scopes_json(FILE *f)
{
    fprintf(f, "  \"scoped_energy_j\": %.9f,\n  \"unscoped_energy_j\": %.9f,\n", jl_scoped_j,
            jl_unscoped_j);
    pc_source_carbon_json(f, &jl_prof.source, "scoped_co2e_g", jl_scoped_j);
    pc_source_carbon_json(f, &jl_prof.source, "unscoped_co2e_g", jl_unscoped_j);
    fprintf(f, "  \"scoped_cpu_time_s\": %.6f,\n  \"scoped_net_bytes\": %llu,\n", jl_scoped_cpu_s,
            (unsigned long long)jl_scoped_bytes);
    fprintf(f, "  \"scope_names_max\": %zu,\n  \"scope_calls_lost\": %llu,\n", jl_stab.max_names,
            (unsigned long long)jl_sq_lost);
}

size_t jl_scopes_get(jl_scope_row **out)
{
    *out = NULL;
    if (!jl_stab_on)
        return 0;
    size_t n;
    bool other;
    pa__scope_name **names = pa__scope_table_names(&jl_stab, &n, &other);
    size_t total = n + (other ? 1 : 0);
    if (!total || !(*out = calloc(total, sizeof(**out))))
        return 0;
    for (size_t i = 0; i < total; i++) {
        jl_scope_row *r = &(*out)[i];
        pa__scope_fill(i < n ? names[i] : jl_stab.other, i >= n, &r->s, &r->net);
    }
    return total;
}

size_t jl_scopes_memory(void)
{
    pthread_mutex_lock(&jl_sq_lock);
    size_t q = (jl_sqcap + jl_sq_sparecap) * sizeof(jl_scall);
    pthread_mutex_unlock(&jl_sq_lock);
    return atomic_load(&jl_stab.nnames) * sizeof(pa__scope_name) + q;
}
