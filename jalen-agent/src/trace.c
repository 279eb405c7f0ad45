/*
 * trace.c - trace=PATTERNS: the methods named are rewritten so that every
 * call records its entry and exit on its thread, as E-Surgeon's Jalen did
 * (DESIGN.md section 11.2).
 *
 * The rewriting is Java's (jalen-agent/trace/: ObjectWeb ASM, loaded in a
 * class loader of the agent's own); this file finds the jars, calls the
 * rewriter from ClassFileLoadHook (for the classes a pattern names, and for
 * those whose constant pool names a method one names: a native method is
 * counted at its Java call sites), and implements the natives the
 * rewritten code calls (org.powerapi.jalen.trace.Trace, on the boot class
 * path).
 *
 * Hot path (enter, exit, thrown): the calling thread's own record, found
 * through a thread-local pointer; its stack of open traced calls and its
 * per-method counters are written by that thread alone (relaxed atomic
 * stores the agent thread reads), nothing is allocated but a method's
 * counters at the thread's first call of it.  Each window the agent thread
 * prices what every (thread, method) added since the last one at the
 * window's prices (jl_window_prices, scope.c: the scopes' pricing).
 */
#include "jalen.h"
#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JL_TRACE_MAX 4096  /* traced methods */
#define JL_TRACE_WARN 1000 /* a pattern set tracing more is said */
#define JL_TRACE_DEPTH 256 /* open traced calls kept per thread */
#define JL_TRACE_HB 8      /* wall-time buckets per power of two */
#define JL_TRACE_HN (64 * JL_TRACE_HB)
#define JL_TRACE_PATS JL_TRACE_PATTERNS
#define RT_CLASS "org/powerapi/jalen/trace/Trace"
#define RW_CLASS "org.powerapi.jalen.trace.Rewriter"
#ifndef JALEN_SHARE_DIR
#define JALEN_SHARE_DIR "/usr/share/jalen"
#endif
#ifndef JALEN_ASM_DIR
#define JALEN_ASM_DIR "/usr/share/java"
#endif

typedef _Atomic uint64_t jl_cnt;
#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
/* written by one thread only: a plain add, published for the reader */
#define ADD(x, v) atomic_store_explicit(&(x), LD(x) + (v), memory_order_relaxed)

/* One traced method on one thread. */
typedef struct jl_tstat {
    jl_cnt entered, calls, thrown, unmatched;
    jl_cnt across; /* calls that ended after the patterns changed (jl_trace_set) */
    jl_cnt cpu_ns, self_ns, wall_ns, bytes, self_bytes, max_wall_ns;
    jl_cnt hist[JL_TRACE_HN]; /* wall time per call */
    int depth;                /* owner: calls of it open (recursion) */
    /* agent thread: what was priced so far */
    uint64_t seen_cpu, seen_self, seen_bytes, seen_self_bytes;
    double energy_j, self_energy_j;
} jl_tstat;

typedef struct jl_tframe {
    int id;
    uint64_t cpu0, wall0, bytes0, child_cpu, child_bytes;
    unsigned gen; /* the patterns' generation at entry */
} jl_tframe;

typedef struct jl_tthread {
    pid_t tid;
    int depth;    /* frames open; more than JL_TRACE_DEPTH are counted, not kept */
    jl_tstat **m; /* [JL_TRACE_MAX], NULL: not called on this thread */
    jl_tframe stack[JL_TRACE_DEPTH];
    struct jl_tthread *_Atomic next;
} jl_tthread;

typedef struct jl_tpats {
    char *spec; /* ';'-separated */
    size_t n;
    char *globs[JL_TRACE_PATS];   /* their class parts, '/'-separated */
    char *mglobs[JL_TRACE_PATS];  /* their method parts */
    char *descs[JL_TRACE_PATS];   /* their descriptors, NULL: any overload */
    uint64_t hits[JL_TRACE_PATS]; /* methods each matched (jl_tr.lock) */
} jl_tpats;

typedef struct jl_tmethod {
    char *name; /* package.Class.method(descriptor) */
    int pattern;
} jl_tmethod;

static struct {
    int on;
    atomic_int ready; /* the rewriter is there (VMInit done) */
    /* the patterns now; a set replaced at runtime (jl_trace_set) is kept,
     * not freed: a hook may still read it (a few hundred bytes a change) */
    _Atomic(jl_tpats *) pats;
    char dir[4096]; /* where libjalen.so and the trace jars are */
    jclass rw;      /* Rewriter (global reference) */
    jmethodID rw_rewrite, rw_configure;
    pthread_mutex_t lock; /* the method table, the thread list's inserts */
    jl_tmethod methods[JL_TRACE_MAX];
    atomic_int nmethods;
    atomic_uint gen; /* changes of the patterns at runtime */
    jl_tthread *_Atomic threads;
    int warned_many, warned_full, quiet;
    int cp_ok;             /* can_get_constant_pool (the callers of natives, at runtime) */
    atomic_int said_sites; /* a class calling a native left as it is: said once */
    atomic_ulong rewritten, failed, deep;
    double unpriced_cpu_s; /* traced self CPU time in windows without a price */
} jl_tr = {.lock = PTHREAD_MUTEX_INITIALIZER};

static __thread jl_tthread *jl_tself;
static __thread int jl_in_hook;

/* ------------------------------------------------------------------ */
/* Patterns                                                            */
/* ------------------------------------------------------------------ */

/* The patterns of spec, with the class part of each as class files name
 * classes; NULL when out of memory. */
static jl_tpats *split_patterns(const char *spec)
{
    jl_tpats *t = calloc(1, sizeof(*t));
    char *dup = strdup(spec), *save = NULL;
    if (!t || !dup || !(t->spec = strdup(spec))) {
        free(dup);
        free(t);
        return NULL;
    }
    save = dup;
    for (char *p = jl_pattern_next(&save); p && t->n < JL_TRACE_PATS; p = jl_pattern_next(&save)) {
        char *paren = strchr(p, '('), *dot;
        char *desc = paren ? strdup(paren) : NULL;
        if (paren)
            *paren = '\0';
        if ((dot = strrchr(p, '.')))
            *dot = '\0';
        for (char *c = p; *c; c++)
            if (*c == '.')
                *c = '/';
        t->globs[t->n] = strdup(p);
        t->mglobs[t->n] = strdup(dot ? dot + 1 : "*");
        t->descs[t->n] = desc;
        if (t->globs[t->n] && t->mglobs[t->n] && (desc || !paren)) {
            t->n++;
        } else {
            free(t->globs[t->n]);
            free(t->mglobs[t->n]);
            free(desc);
        }
    }
    free(dup);
    return t;
}

static int class_wanted(const jl_tpats *t, const char *name)
{
    if (!t || !strncmp(name, "org/powerapi/jalen/", 19) || !strncmp(name, "org/objectweb/asm/", 18))
        return 0;
    for (size_t i = 0; i < t->n; i++)
        if (fnmatch(t->globs[i], name, 0) == 0)
            return 1;
    return 0;
}

/* Whether a pattern of t names the method cls.name desc (cls as class
 * files name classes): a call site that names it is wrapped when it
 * resolves to a native method (the rewriter decides, DESIGN.md 11.2). */
static int ref_wanted(const jl_tpats *t, const char *cls, const char *name, const char *desc)
{
    for (size_t i = 0; t && i < t->n; i++)
        if (fnmatch(t->globs[i], cls, 0) == 0 && fnmatch(t->mglobs[i], name, 0) == 0 &&
            (!t->descs[i] || !strcmp(t->descs[i], desc)))
            return 1;
    return 0;
}

#define CP_NONE UINT32_MAX

static unsigned u2(const unsigned char *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

/* The size of the constant pool entry at p (JVMS 4.4), 0 when malformed. */
static size_t cp_entry_size(const unsigned char *p, size_t len)
{
    /* by tag: 1 Utf8 (3 + its length), 3-6 numbers (5 Long and 6 Double
     * take two slots), 7 Class, 8 String, 9-11 references, 12 NameAndType,
     * 15 MethodHandle, 16 MethodType, 17-18 (Invoke)Dynamic, 19 Module,
     * 20 Package */
    static const unsigned char size[21] = {0, 3, 0, 5, 5, 9, 9, 3, 3, 5, 5,
                                           5, 5, 0, 0, 4, 3, 5, 5, 3, 3};
    if (p[0] == 1)
        return len >= 3 ? 3 + u2(p + 1) : 0;
    return p[0] < 21 ? size[p[0]] : 0;
}

/* The Utf8 entry k of the pool copied into out (NUL-terminated); 0 when
 * it is not one or does not fit. */
static int cp_utf8(const unsigned char *p, size_t len, const uint32_t *off, unsigned count,
                   unsigned k, char *out, size_t outlen)
{
    if (k == 0 || k >= count || off[k] == CP_NONE || p[off[k]] != 1)
        return 0;
    size_t n = u2(p + off[k] + 1);
    if (off[k] + 3 + n > len || n >= outlen)
        return 0;
    memcpy(out, p + off[k] + 3, n);
    out[n] = '\0';
    return 1;
}

/* The index of the entry that entry k (of tag) points to at byte at. */
static unsigned cp_ref(const unsigned char *p, const uint32_t *off, unsigned count, unsigned k,
                       int tag, int at)
{
    return k && k < count && off[k] != CP_NONE && p[off[k]] == tag ? u2(p + off[k] + at) : 0;
}

typedef int (*jl_ref_fn)(const void *arg, const char *cls, const char *name, const char *desc);

/* Whether a Methodref of a constant pool (count: its constant_pool_count;
 * p, len: its entries as a class file holds them, JVMS 4.4) is one want
 * takes; 0 for a malformed pool.  (Interface methods are never native.) */
static int cp_any_ref(const unsigned char *p, size_t len, unsigned count, jl_ref_fn want,
                      const void *arg)
{
    uint32_t *off = count > 1 ? malloc(count * sizeof(*off)) : NULL;
    if (!off)
        return 0;
    size_t at = 0;
    unsigned i = 1;
    for (; i < count && at < len; i++) {
        size_t sz = cp_entry_size(p + at, len - at);
        if (!sz || at + sz > len)
            break;
        off[i] = (uint32_t)at;
        if ((p[at] == 5 || p[at] == 6) && i + 1 < count)
            off[++i] = CP_NONE;
        at += sz;
    }
    int hit = 0;
    char cls[1024], name[256], desc[1024];
    for (unsigned k = 1; i >= count && !hit && k < count; k++) {
        unsigned c = cp_ref(p, off, count, k, 10, 1), nt = cp_ref(p, off, count, k, 10, 3);
        hit = c && nt &&
              cp_utf8(p, len, off, count, cp_ref(p, off, count, c, 7, 1), cls, sizeof(cls)) &&
              cp_utf8(p, len, off, count, cp_ref(p, off, count, nt, 12, 1), name, sizeof(name)) &&
              cp_utf8(p, len, off, count, cp_ref(p, off, count, nt, 12, 3), desc, sizeof(desc)) &&
              want(arg, cls, name, desc);
    }
    free(off);
    return hit;
}

static int ref_of_pats(const void *arg, const char *cls, const char *name, const char *desc)
{
    return ref_wanted(arg, cls, name, desc);
}

/* Whether a class file (data, len) is one the rewriter must see: a
 * pattern names it, or it calls a method a pattern names (a native one's
 * call sites are wrapped). */
static int class_file_wanted(const jl_tpats *t, const char *name, const unsigned char *data,
                             jint len)
{
    if (!t || !strncmp(name, "org/powerapi/jalen/", 19) || !strncmp(name, "org/objectweb/asm/", 18))
        return 0;
    if (class_wanted(t, name))
        return 1;
    return len > 10 && cp_any_ref(data + 10, (size_t)len - 10, u2(data + 8), ref_of_pats, t);
}

/* ------------------------------------------------------------------ */
/* The natives of Trace (the hot path)                                 */
/* ------------------------------------------------------------------ */

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static jl_tthread *self_thread(void)
{
    jl_tthread *t = jl_tself;
    if (t)
        return t;
    t = calloc(1, sizeof(*t));
    if (t && !(t->m = calloc(JL_TRACE_MAX, sizeof(*t->m)))) {
        free(t);
        t = NULL;
    }
    if (!t)
        return NULL;
    t->tid = jl_gettid();
    pthread_mutex_lock(&jl_tr.lock);
    atomic_store(&t->next, atomic_load(&jl_tr.threads));
    atomic_store(&jl_tr.threads, t);
    pthread_mutex_unlock(&jl_tr.lock);
    return jl_tself = t;
}

static jl_tstat *stat_of(jl_tthread *t, jint id)
{
    if (id < 0 || id >= JL_TRACE_MAX)
        return NULL;
    jl_tstat *s = atomic_load_explicit((jl_tstat * _Atomic *)&t->m[id], memory_order_acquire);
    if (!s && (s = calloc(1, sizeof(*s))))
        atomic_store_explicit((jl_tstat * _Atomic *)&t->m[id], s, memory_order_release);
    return s;
}

static void JNICALL n_enter(JNIEnv *env, jclass cls, jint id)
{
    (void)env;
    (void)cls;
    jl_tthread *t = self_thread();
    jl_tstat *s = t ? stat_of(t, id) : NULL;
    if (!s)
        return;
    ADD(s->entered, 1);
    s->depth++;
    if (t->depth >= JL_TRACE_DEPTH) {
        t->depth++;
        atomic_fetch_add(&jl_tr.deep, 1);
        return;
    }
    jl_tframe *f = &t->stack[t->depth++];
    f->id = id;
    f->child_cpu = f->child_bytes = 0;
    f->bytes0 = jl_net_thread_bytes();
    f->wall0 = clock_ns(CLOCK_MONOTONIC);
    f->gen = atomic_load_explicit(&jl_tr.gen, memory_order_relaxed);
    f->cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static unsigned bucket(uint64_t ns)
{
    if (ns < JL_TRACE_HB)
        return (unsigned)ns;
    unsigned e = 63u - (unsigned)__builtin_clzll(ns); /* >= 3 */
    unsigned sub = (unsigned)(ns >> (e - 3)) & (JL_TRACE_HB - 1);
    return (e - 2) * JL_TRACE_HB + sub;
}

/* The lower bound of a bucket, in ns. */
static double bucket_ns(unsigned b)
{
    if (b < JL_TRACE_HB)
        return b;
    unsigned e = b / JL_TRACE_HB + 2, sub = b % JL_TRACE_HB;
    return (double)((uint64_t)(JL_TRACE_HB + sub) << (e - 3));
}

/* The innermost open call of id ends (thrown: by an exception). */
static void leave(jint id, int thrown)
{
    uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID), wall = clock_ns(CLOCK_MONOTONIC);
    jl_tthread *t = jl_tself;
    jl_tstat *s = t ? stat_of(t, id) : NULL;
    if (!s)
        return;
    if (t->depth > JL_TRACE_DEPTH) {
        t->depth--; /* a call too deep to keep: counted, not timed */
        s->depth--;
        ADD(s->calls, 1);
        ADD(s->thrown, thrown ? 1 : 0);
        return;
    }
    int k = t->depth - 1;
    while (k >= 0 && t->stack[k].id != id)
        k--;
    if (k < 0 || s->depth <= 0) {
        ADD(s->unmatched, 1); /* entered before tracing began */
        return;
    }
    for (int j = t->depth - 1; j > k; j--) {
        jl_tstat *o = stat_of(t, t->stack[j].id); /* calls that missed their exit */
        if (o)
            o->depth--;
    }
    jl_tframe *f = &t->stack[k];
    t->depth = k;
    s->depth--;
    uint64_t incl = cpu - f->cpu0, bytes = jl_net_thread_bytes() - f->bytes0;
    uint64_t w = wall - f->wall0;
    ADD(s->calls, 1);
    ADD(s->thrown, thrown ? 1 : 0);
    if (f->gen != atomic_load_explicit(&jl_tr.gen, memory_order_relaxed))
        ADD(s->across, 1); /* began before the patterns changed, ended after */
    ADD(s->self_ns, incl > f->child_cpu ? incl - f->child_cpu : 0);
    ADD(s->self_bytes, bytes > f->child_bytes ? bytes - f->child_bytes : 0);
    if (s->depth == 0) { /* the outermost call of a recursion holds the rest */
        ADD(s->cpu_ns, incl);
        ADD(s->bytes, bytes);
    }
    ADD(s->wall_ns, w);
    ADD(s->hist[bucket(w)], 1);
    if (w > LD(s->max_wall_ns))
        atomic_store_explicit(&s->max_wall_ns, w, memory_order_relaxed);
    if (k > 0) {
        t->stack[k - 1].child_cpu += incl;
        t->stack[k - 1].child_bytes += bytes;
    }
}

static void JNICALL n_exit(JNIEnv *env, jclass cls, jint id)
{
    (void)env;
    (void)cls;
    leave(id, 0);
}

static void JNICALL n_thrown(JNIEnv *env, jclass cls, jint id)
{
    (void)env;
    (void)cls;
    leave(id, 1);
}

static jint JNICALL n_register(JNIEnv *env, jclass cls, jstring jc, jstring jm, jstring jd,
                               jint pattern)
{
    (void)cls;
    const char *c = (*env)->GetStringUTFChars(env, jc, NULL);
    const char *m = c ? (*env)->GetStringUTFChars(env, jm, NULL) : NULL;
    const char *d = m ? (*env)->GetStringUTFChars(env, jd, NULL) : NULL;
    jint id = -1;
    if (d) {
        char *name = NULL;
        if (asprintf(&name, "%s.%s%s", c, m, d) < 0)
            name = NULL;
        pthread_mutex_lock(&jl_tr.lock);
        int n = atomic_load(&jl_tr.nmethods);
        for (int i = 0; name && i < n && id < 0; i++)
            if (!strcmp(jl_tr.methods[i].name, name))
                id = i;
        if (id < 0 && name && n < JL_TRACE_MAX) {
            jl_tr.methods[n] = (jl_tmethod){.name = name, .pattern = pattern};
            name = NULL;
            id = n;
            atomic_store(&jl_tr.nmethods, n + 1);
            jl_tpats *t = atomic_load(&jl_tr.pats);
            if (t && pattern >= 0 && (size_t)pattern < t->n)
                t->hits[pattern]++;
            if (n + 1 == JL_TRACE_WARN && !jl_tr.quiet)
                fprintf(stderr,
                        "jalen: trace= matches %d methods so far: each call of each costs "
                        "two clock reads; name fewer (trace=%.200s)\n",
                        n + 1, t ? t->spec : "");
        } else if (id < 0 && n >= JL_TRACE_MAX && !jl_tr.warned_full++ && !jl_tr.quiet) {
            fprintf(stderr,
                    "jalen: trace= matched more than %d methods: the others are not "
                    "traced; name fewer\n",
                    JL_TRACE_MAX);
        }
        pthread_mutex_unlock(&jl_tr.lock);
        free(name);
    }
    if (d)
        (*env)->ReleaseStringUTFChars(env, jd, d);
    if (m)
        (*env)->ReleaseStringUTFChars(env, jm, m);
    if (c)
        (*env)->ReleaseStringUTFChars(env, jc, c);
    return id;
}

/* ------------------------------------------------------------------ */
/* Set-up                                                              */
/* ------------------------------------------------------------------ */

int jl_trace_init(jvmtiEnv *jvmti, const char *spec, int quiet, char *err, size_t errlen)
{
    jl_tr.quiet = quiet;
    if (!spec)
        return 0;
    Dl_info di;
    if (!dladdr((void *)jl_trace_init, &di) || !di.dli_fname) {
        snprintf(err, errlen, "trace=: cannot find where libjalen.so is (dladdr)");
        return -ENOENT;
    }
    char path[sizeof(jl_tr.dir) + 64];
    snprintf(path, sizeof(jl_tr.dir), "%s", di.dli_fname);
    snprintf(jl_tr.dir, sizeof(jl_tr.dir), "%s", dirname(path));
    snprintf(path, sizeof(path), "%s/jalen-trace-rt.jar", jl_tr.dir);
    if (access(path, R_OK) < 0) { /* installed: the agent's private jars */
        snprintf(jl_tr.dir, sizeof(jl_tr.dir), "%s", JALEN_SHARE_DIR);
        snprintf(path, sizeof(path), "%s/jalen-trace-rt.jar", jl_tr.dir);
    }
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof(caps));
    caps.can_generate_all_class_hook_events = 1;
    caps.can_retransform_classes = 1;
    if (access(path, R_OK) < 0) {
        snprintf(err, errlen,
                 "trace=: %s: %s (it is built beside libjalen.so and installed in "
                 "%s)",
                 path, strerror(errno), JALEN_SHARE_DIR);
        return -ENOENT;
    }
    if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE ||
        (*jvmti)->AddToBootstrapClassLoaderSearch(jvmti, path) != JVMTI_ERROR_NONE) {
        snprintf(err, errlen,
                 "trace=: this JVM refuses class file hooks or %s on the boot "
                 "class path",
                 path);
        return -ENOTSUP;
    }
    /* apart: without it only the callers of natives loaded from now on
     * are found (retransform) */
    memset(&caps, 0, sizeof(caps));
    caps.can_get_constant_pool = 1;
    jl_tr.cp_ok = (*jvmti)->AddCapabilities(jvmti, &caps) == JVMTI_ERROR_NONE;
    jl_tpats *t = split_patterns(spec);
    if (!t)
        return -ENOMEM;
    atomic_store(&jl_tr.pats, t);
    jl_tr.on = 1;
    return 0;
}

int jl_trace_on(void)
{
    return jl_tr.on;
}

/* new URLClassLoader(urls, null).loadClass(RW_CLASS) */
static jclass load_rewriter(JNIEnv *env)
{
    static const char *const jars[] = {
        "%s/jalen-trace.jar", JALEN_ASM_DIR "/asm.jar%s", JALEN_ASM_DIR "/asm-commons.jar%s",
        JALEN_ASM_DIR "/asm-tree.jar%s", JALEN_ASM_DIR "/asm-analysis.jar%s"};
    const int n = (int)(sizeof(jars) / sizeof(jars[0]));
    jclass url = (*env)->FindClass(env, "java/net/URL");
    jclass ucl = url ? (*env)->FindClass(env, "java/net/URLClassLoader") : NULL;
    jmethodID url_new = ucl ? (*env)->GetMethodID(env, url, "<init>", "(Ljava/lang/String;)V") : 0;
    jmethodID ucl_new = url_new ? (*env)->GetMethodID(env, ucl, "<init>",
                                                      "([Ljava/net/URL;Ljava/lang/ClassLoader;)V")
                                : 0;
    jmethodID load = ucl_new ? (*env)->GetMethodID(env, ucl, "loadClass",
                                                   "(Ljava/lang/String;)Ljava/lang/Class;")
                             : 0;
    jobjectArray urls = load ? (*env)->NewObjectArray(env, n, url, NULL) : NULL;
    for (int i = 0; urls && i < n; i++) {
        char p[sizeof(jl_tr.dir) + 128];
        snprintf(p, sizeof(p), "file:");
        snprintf(p + 5, sizeof(p) - 5, jars[i], i == 0 ? jl_tr.dir : "");
        jstring s = (*env)->NewStringUTF(env, p);
        jobject u = s ? (*env)->NewObject(env, url, url_new, s) : NULL;
        if (!u)
            return NULL;
        (*env)->SetObjectArrayElement(env, urls, i, u);
    }
    jobject l = urls ? (*env)->NewObject(env, ucl, ucl_new, urls, NULL) : NULL;
    jstring name = l ? (*env)->NewStringUTF(env, RW_CLASS) : NULL;
    return name ? (jclass)(*env)->CallObjectMethod(env, l, load, name) : NULL;
}

/* One line for the exception pending (cleared), as "Class: message". */
static void exception_line(JNIEnv *env, char *out, size_t len)
{
    jthrowable ex = (*env)->ExceptionOccurred(env);
    (*env)->ExceptionClear(env);
    snprintf(out, len, "unknown error");
    jclass k = ex ? (*env)->FindClass(env, "java/lang/Throwable") : NULL;
    jmethodID ts = k ? (*env)->GetMethodID(env, k, "toString", "()Ljava/lang/String;") : 0;
    jstring s = ts ? (jstring)(*env)->CallObjectMethod(env, ex, ts) : NULL;
    const char *c = s ? (*env)->GetStringUTFChars(env, s, NULL) : NULL;
    if (c) {
        snprintf(out, len, "%s", c);
        (*env)->ReleaseStringUTFChars(env, s, c);
    }
    (*env)->ExceptionClear(env);
}

static int bind_natives(JNIEnv *env)
{
    static const JNINativeMethod nm[] = {
        {(char *)"enter", (char *)"(I)V", (void *)n_enter},
        {(char *)"exit", (char *)"(I)V", (void *)n_exit},
        {(char *)"thrown", (char *)"(I)V", (void *)n_thrown},
        {(char *)"register", (char *)"(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;I)I",
         (void *)n_register},
    };
    jclass k = (*env)->FindClass(env, RT_CLASS);
    return k && (*env)->RegisterNatives(env, k, nm, 4) == 0 ? 0 : -1;
}

/* Rewriter.configure(spec): 0, or -EINVAL with its exception's line. */
static int configure(JNIEnv *env, const char *spec, char *why, size_t len)
{
    jstring s = (*env)->NewStringUTF(env, spec);
    if (s)
        (*env)->CallStaticVoidMethod(env, jl_tr.rw, jl_tr.rw_configure, s);
    if (!s || (*env)->ExceptionCheck(env)) {
        exception_line(env, why, len);
        return -EINVAL;
    }
    (*env)->DeleteLocalRef(env, s);
    return 0;
}

static int retransform(jvmtiEnv *jvmti, JNIEnv *env, const jl_tpats *old, const jl_tpats *now,
                       FILE *f);

void jl_trace_vm_init(jvmtiEnv *jvmti, JNIEnv *env)
{
    if (!jl_tr.on || atomic_load(&jl_tr.ready))
        return;
    jl_in_hook = 1;
    char why[512] = "";
    jclass rw = NULL;
    if (bind_natives(env) < 0 || !(rw = load_rewriter(env)) ||
        !(jl_tr.rw_configure =
              (*env)->GetStaticMethodID(env, rw, "configure", "(Ljava/lang/String;)V")) ||
        !(jl_tr.rw_rewrite = (*env)->GetStaticMethodID(
              env, rw, "rewrite", "(Ljava/lang/ClassLoader;Ljava/lang/String;[B)[B"))) {
        exception_line(env, why, sizeof(why));
        fprintf(stderr,
                "jalen: trace=: the rewriter did not load (%s); check %s/jalen-trace.jar and "
                "Debian's libasm-java in " JALEN_ASM_DIR "; nothing is traced\n",
                why, jl_tr.dir);
        jl_in_hook = 0;
        return;
    }
    jl_tr.rw = (jclass)(*env)->NewGlobalRef(env, rw);
    if (configure(env, atomic_load(&jl_tr.pats)->spec, why, sizeof(why)) < 0) {
        fprintf(stderr, "jalen: trace=: %s; nothing is traced\n", why);
        jl_in_hook = 0;
        return;
    }
    atomic_store(&jl_tr.ready, 1);
    jl_in_hook = 0;
    /* the classes loaded before now (an attach; boot classes at VMInit) */
    retransform(jvmti, env, NULL, atomic_load(&jl_tr.pats), stderr);
}

/* The name of the class of signature sig ("Lpkg/Name;") in out; 0 when
 * it is not a class's (an array, a primitive) or does not fit. */
static int sig_name(const char *sig, char *out, size_t len)
{
    size_t n = strlen(sig);
    if (n < 3 || sig[0] != 'L' || n - 2 >= len)
        return 0;
    memcpy(out, sig + 1, n - 2);
    out[n - 2] = '\0';
    return 1;
}

/* Whether the class of signature sig is one a or b names. */
static int wanted_sig(const char *sig, const jl_tpats *a, const jl_tpats *b)
{
    char name[1024];
    return sig_name(sig, name, sizeof(name)) && (class_wanted(a, name) || class_wanted(b, name));
}

/* The native methods of loaded classes that a pattern names: "cls.name
 * desc" with cls the class a call site names (the method may be its super
 * class's). */
typedef struct jl_natives {
    char **v;
    size_t n, cap;
    const jl_tpats *a, *b;
} jl_natives;

static void natives_add(jl_natives *s, const char *cls, const char *name, const char *desc)
{
    if (!ref_wanted(s->a, cls, name, desc) && !ref_wanted(s->b, cls, name, desc))
        return;
    char *k = NULL;
    if (asprintf(&k, "%s.%s%s", cls, name, desc) < 0)
        return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        char **v = realloc(s->v, cap * sizeof(*v));
        if (!v) {
            free(k);
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = k;
}

/* Adds the native methods of class k and its super classes that a
 * pattern names as methods of cls. */
static void natives_of(jvmtiEnv *jvmti, JNIEnv *env, jclass k, const char *cls, jl_natives *s)
{
    k = (*env)->NewLocalRef(env, k);
    for (int depth = 0; k && depth < 64; depth++) {
        jint nm = 0;
        jmethodID *ms = NULL;
        if ((*jvmti)->GetClassMethods(jvmti, k, &nm, &ms) == JVMTI_ERROR_NONE) {
            for (jint i = 0; i < nm; i++) {
                jint mod = 0;
                char *name = NULL, *desc = NULL;
                if ((*jvmti)->GetMethodModifiers(jvmti, ms[i], &mod) == JVMTI_ERROR_NONE &&
                    (mod & 0x0100) && /* ACC_NATIVE */
                    (*jvmti)->GetMethodName(jvmti, ms[i], &name, &desc, NULL) == JVMTI_ERROR_NONE)
                    natives_add(s, cls, name, desc);
                (*jvmti)->Deallocate(jvmti, (unsigned char *)name);
                (*jvmti)->Deallocate(jvmti, (unsigned char *)desc);
            }
            (*jvmti)->Deallocate(jvmti, (unsigned char *)ms);
        }
        jclass up = (*env)->GetSuperclass(env, k);
        (*env)->DeleteLocalRef(env, k);
        k = up;
    }
    if (k)
        (*env)->DeleteLocalRef(env, k);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ref_of_natives(const void *arg, const char *cls, const char *name, const char *desc)
{
    const jl_natives *s = arg;
    char k[2400], *kp = k;
    snprintf(k, sizeof(k), "%s.%s%s", cls, name, desc);
    return bsearch(&kp, s->v, s->n, sizeof(*s->v), str_cmp) != NULL;
}

/* Whether loaded class k calls a method of s (its constant pool,
 * can_get_constant_pool: what JVMTI reconstitutes of it). */
static int calls_native(jvmtiEnv *jvmti, jclass k, const jl_natives *s)
{
    jint count = 0, n = 0;
    unsigned char *cp = NULL;
    if (!s->n || !jl_tr.cp_ok ||
        (*jvmti)->GetConstantPool(jvmti, k, &count, &n, &cp) != JVMTI_ERROR_NONE)
        return 0;
    int hit = cp_any_ref(cp, (size_t)n, (unsigned)count, ref_of_natives, s);
    (*jvmti)->Deallocate(jvmti, cp);
    return hit;
}

/* Retransforms class k (sig, for the line): 1 when done, 0 when refused
 * (the first refusal kept in first). */
static int retransform_one(jvmtiEnv *jvmti, jclass k, const char *sig, char *first, size_t len)
{
    jboolean ok = JNI_FALSE;
    (*jvmti)->IsModifiableClass(jvmti, k, &ok);
    jvmtiError e = ok ? (*jvmti)->RetransformClasses(jvmti, 1, &k) : JVMTI_ERROR_UNMODIFIABLE_CLASS;
    if (e == JVMTI_ERROR_NONE)
        return 1;
    if (!first[0])
        snprintf(first, len, "%s: JVMTI error %d", sig, (int)e);
    return 0;
}

/* The loaded classes that a pattern of old or now names, or that call a
 * native method one names (its call sites are wrapped), retransformed
 * (the hook rewrites them as now says, or gives back their original
 * bytes): their count; the classes that cannot be are said in one line. */
static int retransform(jvmtiEnv *jvmti, JNIEnv *env, const jl_tpats *old, const jl_tpats *now,
                       FILE *f)
{
    jint nc = 0;
    jclass *cs = NULL;
    if ((*jvmti)->GetLoadedClasses(jvmti, &nc, &cs) != JVMTI_ERROR_NONE)
        return 0;
    char **sigs = calloc((size_t)nc + 1, sizeof(*sigs)), name[1024];
    jl_natives nat = {.a = old, .b = now};
    for (jint i = 0; sigs && i < nc; i++)
        if ((*jvmti)->GetClassSignature(jvmti, cs[i], &sigs[i], NULL) == JVMTI_ERROR_NONE &&
            sigs[i] && wanted_sig(sigs[i], old, now) && sig_name(sigs[i], name, sizeof(name)))
            natives_of(jvmti, env, cs[i], name, &nat);
    if (nat.n)
        qsort(nat.v, nat.n, sizeof(*nat.v), str_cmp);
    int n = 0, refused = 0;
    char first[256] = "";
    for (jint i = 0; sigs && i < nc; i++) {
        if (sigs[i] && (wanted_sig(sigs[i], old, now) || calls_native(jvmti, cs[i], &nat))) {
            int done = retransform_one(jvmti, cs[i], sigs[i], first, sizeof(first));
            n += done;
            refused += !done;
        }
        (*jvmti)->Deallocate(jvmti, (unsigned char *)sigs[i]);
    }
    for (jint i = 0; i < nc; i++)
        (*env)->DeleteLocalRef(env, cs[i]);
    for (size_t i = 0; i < nat.n; i++)
        free(nat.v[i]);
    free(nat.v);
    free(sigs);
    (*jvmti)->Deallocate(jvmti, (unsigned char *)cs);
    if (refused && f)
        fprintf(f,
                "jalen: trace=: %d loaded class%s matched cannot be retransformed (%s): their "
                "methods are not traced; the JVM runs on\n",
                refused, refused > 1 ? "es" : "", first);
    return n;
}

void JNICALL jl_trace_on_class_file(jvmtiEnv *jvmti, JNIEnv *env, jclass redefined, jobject loader,
                                    const char *name, jobject pd, jint len,
                                    const unsigned char *data, jint *new_len,
                                    unsigned char **new_data)
{
    (void)redefined;
    (void)pd;
    if (!name || !env || jl_in_hook || !atomic_load(&jl_tr.ready) ||
        !class_file_wanted(atomic_load(&jl_tr.pats), name, data, len))
        return;
    jl_in_hook = 1;
    (*env)->PushLocalFrame(env, 16);
    jbyteArray in = (*env)->NewByteArray(env, len);
    jstring jn = in ? (*env)->NewStringUTF(env, name) : NULL;
    if (jn)
        (*env)->SetByteArrayRegion(env, in, 0, len, (const jbyte *)data);
    jbyteArray out = jn ? (jbyteArray)(*env)->CallStaticObjectMethod(
                              env, jl_tr.rw, jl_tr.rw_rewrite, loader, jn, in)
                        : NULL;
    if ((*env)->ExceptionCheck(env)) {
        char why[512];
        exception_line(env, why, sizeof(why));
        atomic_fetch_add(&jl_tr.failed, 1);
        if (class_wanted(atomic_load(&jl_tr.pats), name)) {
            if (!jl_tr.quiet)
                fprintf(stderr, "jalen: trace=: class %s left as it is (the rewriter failed: %s)\n",
                        name, why);
        } else if (!atomic_fetch_add(&jl_tr.said_sites, 1) && !jl_tr.quiet) {
            fprintf(stderr,
                    "jalen: trace=: class %s, which calls a traced native method, left as it is "
                    "(the rewriter failed: %s): its calls are not counted (the others: "
                    "summary.json's trace_classes_failed)\n",
                    name, why);
        }
    } else if (out) {
        jint n = (*env)->GetArrayLength(env, out);
        unsigned char *buf = NULL;
        if ((*jvmti)->Allocate(jvmti, n, &buf) == JVMTI_ERROR_NONE) {
            (*env)->GetByteArrayRegion(env, out, 0, n, (jbyte *)buf);
            *new_len = n;
            *new_data = buf;
            atomic_fetch_add(&jl_tr.rewritten, 1);
        }
    }
    (*env)->PopLocalFrame(env, NULL);
    jl_in_hook = 0;
}

/* ------------------------------------------------------------------ */
/* Windows and outputs (agent thread, profile lock held)               */
/* ------------------------------------------------------------------ */

void jl_trace_window(double cpu_j, double cpu_s, double nic_j, uint64_t bytes)
{
    if (!jl_tr.on)
        return;
    double p, b;
    int priced = jl_window_prices(cpu_j, cpu_s, nic_j, bytes, &p, &b);
    int n = atomic_load(&jl_tr.nmethods);
    for (jl_tthread *t = atomic_load(&jl_tr.threads); t; t = atomic_load(&t->next))
        for (int i = 0; i < n; i++) {
            jl_tstat *s = atomic_load((jl_tstat * _Atomic *)&t->m[i]);
            if (!s)
                continue;
            uint64_t c = LD(s->cpu_ns), se = LD(s->self_ns), by = LD(s->bytes),
                     sb = LD(s->self_bytes);
            double dself = (double)(se - s->seen_self) * 1e-9;
            s->energy_j += (double)(c - s->seen_cpu) * 1e-9 * p + (double)(by - s->seen_bytes) * b;
            s->self_energy_j += dself * p + (double)(sb - s->seen_self_bytes) * b;
            if (!priced)
                jl_tr.unpriced_cpu_s += dself;
            s->seen_cpu = c;
            s->seen_self = se;
            s->seen_bytes = by;
            s->seen_self_bytes = sb;
        }
}

/* A method's figures over threads (tid 0) or on one. */
typedef struct jl_trow {
    uint64_t entered, calls, thrown, unmatched, across, cpu_ns, self_ns, wall_ns, bytes, self_bytes,
        max;
    uint64_t hist[JL_TRACE_HN];
    double energy_j, self_energy_j;
} jl_trow;

static void row_add(jl_trow *r, jl_tstat *s)
{
    r->entered += LD(s->entered);
    r->calls += LD(s->calls);
    r->thrown += LD(s->thrown);
    r->unmatched += LD(s->unmatched);
    r->across += LD(s->across);
    /* times and bytes as they are now; the energy of what the last
     * window priced (the rest is priced at the next one) */
    r->cpu_ns += LD(s->cpu_ns);
    r->self_ns += LD(s->self_ns);
    r->wall_ns += LD(s->wall_ns);
    r->bytes += LD(s->bytes);
    r->self_bytes += LD(s->self_bytes);
    uint64_t m = LD(s->max_wall_ns);
    r->max = m > r->max ? m : r->max;
    for (int i = 0; i < JL_TRACE_HN; i++)
        r->hist[i] += LD(s->hist[i]);
    r->energy_j += s->energy_j;
    r->self_energy_j += s->self_energy_j;
}

/* The q-quantile of the wall times, in ms (a bucket's lower bound: within
 * 12.5 %). */
static double quantile_ms(const jl_trow *r, double q)
{
    uint64_t n = 0, k = 0;
    for (int i = 0; i < JL_TRACE_HN; i++)
        n += r->hist[i];
    if (!n)
        return 0;
    uint64_t want = (uint64_t)(q * (double)(n - 1)) + 1;
    for (int i = 0; i < JL_TRACE_HN; i++)
        if ((k += r->hist[i]) >= want)
            return bucket_ns((unsigned)i) * 1e-6;
    return (double)r->max * 1e-6;
}

static void row_csv(FILE *f, const char *method, const char *thread, pid_t tid, const jl_trow *r)
{
    uint64_t open = r->entered > r->calls ? r->entered - r->calls : 0;
    double per = r->calls ? 1.0 / (double)r->calls : 0;
    pa__csv_write(f, method);
    fputc(',', f);
    pa__csv_write(f, thread);
    fprintf(f,
            ",%d,%llu,%llu,%llu,%llu,%.9f,%.9f,%.6f,%.6f,%.6f,%.6f,%.6f,%llu,%llu,%.9f,%.9f,"
            "%.12f,%.12f,%llu\n",
            (int)tid, (unsigned long long)r->calls, (unsigned long long)r->thrown,
            (unsigned long long)open, (unsigned long long)r->unmatched, (double)r->cpu_ns * 1e-9,
            (double)r->self_ns * 1e-9, (double)r->wall_ns * 1e-6 * per, quantile_ms(r, 0.5),
            quantile_ms(r, 0.95), quantile_ms(r, 0.99), (double)r->max * 1e-6,
            (unsigned long long)r->bytes, (unsigned long long)r->self_bytes, r->energy_j,
            r->self_energy_j, r->energy_j * per, r->self_energy_j * per,
            (unsigned long long)r->across);
}

/* The name of thread tid (jl_thr), "" when not known. */
static void thread_name(pid_t tid, char *out, size_t len)
{
    pthread_mutex_lock(&jl_thr.lock);
    jl_thread *t = jl_threads_get(tid, 0);
    snprintf(out, len, "%s", t ? t->name : "");
    pthread_mutex_unlock(&jl_thr.lock);
}

void jl_trace_rows(FILE *f)
{
    jl_trow *r = malloc(sizeof(*r));
    fputs("method,thread,tid,calls,thrown,open_at_end,exits_without_entry,cpu_time_s,"
          "self_cpu_time_s,wall_mean_ms,wall_p50_ms,wall_p95_ms,wall_p99_ms,wall_max_ms,"
          "net_bytes,self_net_bytes,energy_j,self_energy_j,energy_per_call_j,"
          "self_energy_per_call_j,calls_across_change\n",
          f);
    int n = r ? atomic_load(&jl_tr.nmethods) : 0;
    for (int i = 0; i < n; i++) {
        memset(r, 0, sizeof(*r));
        for (jl_tthread *t = atomic_load(&jl_tr.threads); t; t = atomic_load(&t->next))
            if (t->m[i])
                row_add(r, t->m[i]);
        row_csv(f, jl_tr.methods[i].name, "[all threads]", 0, r);
        for (jl_tthread *t = atomic_load(&jl_tr.threads); t; t = atomic_load(&t->next)) {
            if (!t->m[i])
                continue;
            char name[64];
            memset(r, 0, sizeof(*r));
            row_add(r, t->m[i]);
            thread_name(t->tid, name, sizeof(name));
            row_csv(f, jl_tr.methods[i].name, name, t->tid, r);
        }
    }
    free(r);
}

int jl_trace_write_csv(const char *dir)
{
    if (!jl_tr.on)
        return 0;
    pc_out o;
    int rc = pc_out_open(&o, dir, "calls.csv");
    if (rc < 0)
        return rc;
    jl_trace_rows(o.f);
    return pc_out_close(&o);
}

const char *jl_trace_note(const char *method)
{
    static char buf[256];
    buf[0] = '\0';
    int n = jl_tr.on ? atomic_load(&jl_tr.nmethods) : 0;
    size_t len = strlen(method);
    jl_trow *r = NULL;
    for (int i = 0; i < n; i++) {
        const char *m = jl_tr.methods[i].name;
        if (strncmp(m, method, len) || m[len] != '(')
            continue;
        if (!r && !(r = calloc(1, sizeof(*r))))
            return buf;
        for (jl_tthread *t = atomic_load(&jl_tr.threads); t; t = atomic_load(&t->next))
            if (t->m[i])
                row_add(r, t->m[i]);
    }
    if (r && r->calls) {
        double per = 1.0 / (double)r->calls;
        snprintf(buf, sizeof(buf),
                 "traced: %llu calls, %.3g J a call (self %.3g J), wall p50 %.3g ms",
                 (unsigned long long)r->calls, r->energy_j * per, r->self_energy_j * per,
                 quantile_ms(r, 0.5));
    }
    free(r);
    return buf;
}

void jl_trace_json(FILE *f)
{
    if (!jl_tr.on)
        return;
    jl_trow *r = malloc(sizeof(*r));
    if (!r)
        return;
    fputs("  \"trace_patterns\": ", f);
    pa__json_write(f, atomic_load(&jl_tr.pats)->spec);
    fputs(",\n  \"trace_energy_model\": \"each call's CPU time (thread CPU clock at entry and "
          "exit) x the window's process CPU energy per CPU-second, plus its socket bytes x the "
          "window's NIC energy per byte, priced in the window it ended in (as scopes); self: "
          "less the traced calls nested in it; a native method: its calls from Java call sites "
          "(the invoke wrapped), not those from native code (JNI)\",\n",
          f);
    fprintf(f, "  \"trace_unpriced_cpu_time_s\": %.6f,\n", jl_tr.unpriced_cpu_s);
    fprintf(f, "  \"trace_classes_rewritten\": %lu,\n  \"trace_classes_failed\": %lu,\n",
            atomic_load(&jl_tr.rewritten), atomic_load(&jl_tr.failed));
    fputs("  \"traced\": [", f);
    int n = atomic_load(&jl_tr.nmethods);
    for (int i = 0; i < n; i++) {
        memset(r, 0, sizeof(*r));
        for (jl_tthread *t = atomic_load(&jl_tr.threads); t; t = atomic_load(&t->next))
            if (t->m[i])
                row_add(r, t->m[i]);
        double per = r->calls ? 1.0 / (double)r->calls : 0;
        fputs(i ? ",\n    {\"method\": " : "\n    {\"method\": ", f);
        pa__json_write(f, jl_tr.methods[i].name);
        fprintf(f,
                ", \"calls\": %llu, \"thrown\": %llu, \"open_at_end\": %llu, "
                "\"exits_without_entry\": %llu, \"cpu_time_s\": %.9f, \"self_cpu_time_s\": %.9f, "
                "\"wall_p50_ms\": %.6f, \"wall_p95_ms\": %.6f, \"wall_p99_ms\": %.6f, "
                "\"wall_max_ms\": %.6f, \"net_bytes\": %llu, \"energy_j\": %.9f, "
                "\"self_energy_j\": %.9f, \"energy_per_call_j\": %.12f, "
                "\"self_energy_per_call_j\": %.12f, \"calls_across_change\": %llu}",
                (unsigned long long)r->calls, (unsigned long long)r->thrown,
                (unsigned long long)(r->entered > r->calls ? r->entered - r->calls : 0),
                (unsigned long long)r->unmatched, (double)r->cpu_ns * 1e-9,
                (double)r->self_ns * 1e-9, quantile_ms(r, 0.5), quantile_ms(r, 0.95),
                quantile_ms(r, 0.99), (double)r->max * 1e-6, (unsigned long long)r->bytes,
                r->energy_j, r->self_energy_j, r->energy_j * per, r->self_energy_j * per,
                (unsigned long long)r->across);
    }
    fputs(n ? "\n  ],\n" : "],\n", f);
    free(r);
}

void jl_trace_finish(void)
{
    jl_tpats *t = atomic_load(&jl_tr.pats);
    if (!jl_tr.on || jl_tr.quiet || !t)
        return;
    int n = atomic_load(&jl_tr.nmethods);
    if (n >= JL_TRACE_WARN)
        fprintf(stderr,
                "jalen: trace= traced %d methods in %lu classes (%lu left as they were): name "
                "fewer for less overhead\n",
                n, atomic_load(&jl_tr.rewritten), atomic_load(&jl_tr.failed));
    for (size_t i = 0; i < t->n; i++)
        if (!t->hits[i])
            fprintf(stderr,
                    "jalen: trace pattern #%zu (class '%s') traced no method: check its class "
                    "and method names (a class never loaded, or one the rewriter could not "
                    "read, is not traced)\n",
                    i + 1, t->globs[i]);
}

int jl_trace_set(jvmtiEnv *jvmti, JNIEnv *env, const char *spec, FILE *f)
{
    char why[512] = "";
    spec = spec ? spec : "";
    if (!jl_tr.on) {
        int rc = jl_trace_init(jvmti, spec, jl_tr.quiet, why, sizeof(why));
        if (rc < 0) {
            fprintf(f, "jalen: %s\n", why);
            return rc;
        }
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK,
                                           NULL);
        jl_trace_vm_init(jvmti, env);
        if (!atomic_load(&jl_tr.ready))
            return -ENOTSUP;
        fprintf(f, "jalen: tracing %s\n", spec);
        return 0;
    }
    jl_tpats *old = atomic_load(&jl_tr.pats), *now = split_patterns(spec);
    if (!now || !atomic_load(&jl_tr.ready) || configure(env, spec, why, sizeof(why)) < 0) {
        fprintf(f, "jalen: trace=%s: %s\n", spec,
                !now     ? "out of memory"
                : why[0] ? why
                         : "the rewriter is not loaded");
        return -EINVAL;
    }
    atomic_store(&jl_tr.pats, now);
    atomic_fetch_add(&jl_tr.gen, 1);
    int n = retransform(jvmti, env, old, now, f);
    fprintf(f, "jalen: %s%s (%d loaded class%s rewritten again)\n",
            spec[0] ? "tracing " : "tracing removed", spec, n, n == 1 ? "" : "es");
    return 0;
}
