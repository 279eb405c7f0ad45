/*
 * mxbean.c - the agent's live results, for the MXBean
 * org.powerapi.jalen:type=Energy (Java side in bindings/java, class
 * org.powerapi.jalen.Energy in powerapi.jar).  See mxbean.h.
 *
 * The agent thread owns jl_prof and jl_thr; this file only copies them,
 * under the profile lock (then the threads lock, the agent's own order),
 * into a jalen_live snapshot that the JNI native turns into Java arrays
 * after the locks are released.
 */
#include "mxbean.h"

#include "jalen.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENERGY_CLASS "org/powerapi/jalen/Energy"

/* Recent windows (profile lock held by both writer and readers). */
static jalen_live_window mx_win[JALEN_LIVE_WINDOWS];
static size_t mx_nwin, mx_head; /* head: next slot to write */
static double mx_last_power_w, mx_last_duration_s;
/* the agent's lock, handed down by jalen_mxbean_start (read by the
 * snapshots' Java threads) */
static _Atomic(const jalen_mxbean_hooks *) mx_hooks;

void jalen_mxbean_on_window(double now_s, double duration_s, double energy_j)
{
    if (duration_s <= 0)
        return;
    jalen_live_window *w = &mx_win[mx_head];
    w->start_s = now_s - duration_s - jl_prof.start_s;
    w->duration_s = duration_s;
    w->energy_j = energy_j;
    w->power_w = energy_j / duration_s;
    mx_head = (mx_head + 1) % JALEN_LIVE_WINDOWS;
    if (mx_nwin < JALEN_LIVE_WINDOWS)
        mx_nwin++;
    mx_last_power_w = w->power_w;
    mx_last_duration_s = duration_s;
}

void jalen_live_free(jalen_live *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nmethods; i++)
        free(l->methods[i].name);
    for (size_t i = 0; i < l->nthreads; i++)
        free(l->threads[i].name);
    for (size_t i = 0; i < l->nscopes; i++)
        free(l->scopes[i].name);
    free(l->scopes);
    free(l->methods);
    free(l->threads);
    free(l->recent);
    free(l->formula);
    free(l);
}

static int by_method_energy(const void *a, const void *b)
{
    const jalen_live_method *x = a, *y = b;
    return (x->self_energy_j < y->self_energy_j) - (x->self_energy_j > y->self_energy_j);
}

static int by_thread_energy(const void *a, const void *b)
{
    const jalen_live_thread *x = a, *y = b;
    return (x->energy_j < y->energy_j) - (x->energy_j > y->energy_j);
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* The scopes' aggregates (profile lock held). */
static int copy_scopes(jalen_live *l)
{
    jl_scopes_totals(&l->scoped_j, &l->unscoped_j);
    jl_scope_row *rows;
    size_t n = jl_scopes_get(&rows);
    if (n && !(l->scopes = calloc(n, sizeof(*l->scopes)))) {
        free(rows);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const pa_scope_stats *s = &rows[i].s;
        const pa__scope_net *net = &rows[i].net;
        jalen_live_scope *o = &l->scopes[l->nscopes];
        if (!(o->name = dup_or_empty(s->name))) {
            free(rows);
            return -ENOMEM;
        }
        l->nscopes++;
        o->calls = s->calls;
        double e[2] = {s->energy_j, s->self_energy_j}, nj[2] = {net->net_j, net->self_net_j};
        for (int k = 0; k < 2; k++) {
            o->energy_j[k] = e[k];
            o->net_energy_j[k] = nj[k];
            o->cpu_energy_j[k] = e[k] - nj[k];
        }
        o->cpu_time_s[0] = s->cpu_time_s, o->cpu_time_s[1] = s->self_cpu_time_s;
        o->mean_j[0] = s->mean_j, o->mean_j[1] = s->self_mean_j;
        o->p50_j[0] = s->p50_j, o->p50_j[1] = s->self_p50_j;
        o->p95_j[0] = s->p95_j, o->p95_j[1] = s->self_p95_j;
        o->p99_j[0] = s->p99_j, o->p99_j[1] = s->self_p99_j;
        o->net_bytes[0] = net->net_bytes, o->net_bytes[1] = net->self_net_bytes;
    }
    free(rows);
    return 0;
}

/* Profile (and threads) lock held. */
static int copy_locked(jalen_live *l)
{
    double wd = mx_last_duration_s;
    l->uptime_s = jl_now_s() - jl_prof.start_s;
    l->process_power_w = mx_last_power_w;
    l->process_energy_j = jl_prof.process_j;
    l->unattributed_j = jl_prof.unattributed_j;
    l->attributed_j = jl_prof.process_j - jl_prof.unattributed_j;
    l->windows = jl_prof.windows;
    l->samples = jl_prof.samples;
    l->dropped = jl_prof.samples_dropped;
    l->formula = dup_or_empty(jl_prof.source.formula);
    if (!l->formula)
        return -ENOMEM;

    if (jl_prof.nm) {
        l->methods = calloc(jl_prof.nm, sizeof(*l->methods));
        if (!l->methods)
            return -ENOMEM;
    }
    for (size_t i = 0; i < jl_prof.nm; i++) {
        const pc_stat *m = &jl_prof.ms[i];
        if (m->self_j <= 0 && m->total_j <= 0)
            continue;
        jalen_live_method *o = &l->methods[l->nmethods];
        o->name = dup_or_empty(jl_prof.m[i].name);
        if (!o->name)
            return -ENOMEM;
        l->nmethods++;
        o->self_energy_j = m->self_j;
        o->total_energy_j = m->total_j;
        o->cpu_energy_j = m->cpu_j;
        o->net_energy_j = m->net_j;
        o->window_power_w = wd > 0 ? m->w_self_j / wd : 0;
        o->self_samples = m->self_samples;
        o->total_samples = m->total_samples;
        o->net_bytes = m->net_bytes;
    }

    if (jl_thr.n) {
        l->threads = calloc(jl_thr.n, sizeof(*l->threads));
        if (!l->threads)
            return -ENOMEM;
    }
    for (size_t i = 0; i < jl_thr.n; i++) {
        const jl_thread *t = &jl_thr.v[i];
        jalen_live_thread *o = &l->threads[l->nthreads];
        o->name = dup_or_empty(t->name);
        if (!o->name)
            return -ENOMEM;
        l->nthreads++;
        o->tid = t->tid;
        o->cpu_time_s = t->cpu_s;
        o->energy_j = t->energy_j;
        o->cpu_energy_j = t->cpu_j;
        o->net_energy_j = t->net_j;
        o->window_power_w = wd > 0 ? (t->w_cpu_j + t->w_net_j) / wd : 0;
        o->net_bytes = t->net_bytes;
    }

    if (mx_nwin) {
        l->recent = calloc(mx_nwin, sizeof(*l->recent));
        if (!l->recent)
            return -ENOMEM;
        size_t first = (mx_head + JALEN_LIVE_WINDOWS - mx_nwin) % JALEN_LIVE_WINDOWS;
        for (size_t i = 0; i < mx_nwin; i++)
            l->recent[i] = mx_win[(first + i) % JALEN_LIVE_WINDOWS];
        l->nwindows = mx_nwin;
    }
    return copy_scopes(l);
}

int jalen_live_get(jalen_live **out, size_t top)
{
    const jalen_mxbean_hooks *h = atomic_load(&mx_hooks);
    if (!h || !h->lock || !h->unlock)
        return -ENOSYS;
    jalen_live *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    h->lock();
    pthread_mutex_lock(&jl_thr.lock);
    int rc = copy_locked(l);
    pthread_mutex_unlock(&jl_thr.lock);
    h->unlock();
    if (rc < 0)
        goto fail;
    /* Sorting and trimming need no lock. */
    qsort(l->methods, l->nmethods, sizeof(*l->methods), by_method_energy);
    qsort(l->threads, l->nthreads, sizeof(*l->threads), by_thread_energy);
    if (top) {
        for (size_t i = top; i < l->nmethods; i++)
            free(l->methods[i].name);
        if (l->nmethods > top)
            l->nmethods = top;
        for (size_t i = top; i < l->nthreads; i++)
            free(l->threads[i].name);
        if (l->nthreads > top)
            l->nthreads = top;
    }
    *out = l;
    return 0;
fail:
    jalen_live_free(l);
    return rc;
}

/* ------------------------------------------------------------------ */
/* JNI                                                                 */
/* ------------------------------------------------------------------ */

static jdoubleArray new_doubles(JNIEnv *env, const double *v, size_t n)
{
    jdoubleArray a = (*env)->NewDoubleArray(env, (jsize)n);
    if (a && n)
        (*env)->SetDoubleArrayRegion(env, a, 0, (jsize)n, v);
    return a;
}

static jlongArray new_longs(JNIEnv *env, const jlong *v, size_t n)
{
    jlongArray a = (*env)->NewLongArray(env, (jsize)n);
    if (a && n)
        (*env)->SetLongArrayRegion(env, a, 0, (jsize)n, v);
    return a;
}

/* String i is the char * at offset off of element i (stride bytes) of
 * the array base; base may be NULL when n is 0. */
static jobjectArray new_strings(JNIEnv *env, const void *base, size_t off, size_t stride, size_t n)
{
    jclass sc = (*env)->FindClass(env, "java/lang/String");
    if (!sc)
        return NULL;
    jobjectArray a = (*env)->NewObjectArray(env, (jsize)n, sc, NULL);
    for (size_t i = 0; a && i < n; i++) {
        const char *s = *(char *const *)((const char *)base + i * stride + off);
        jstring js = (*env)->NewStringUTF(env, s);
        if (!js)
            return NULL;
        (*env)->SetObjectArrayElement(env, a, (jsize)i, js);
        (*env)->DeleteLocalRef(env, js);
    }
    return a;
}

static int put(JNIEnv *env, jobjectArray arr, int i, jobject o)
{
    if (!o)
        return -1;
    (*env)->SetObjectArrayElement(env, arr, i, o);
    (*env)->DeleteLocalRef(env, o);
    return (*env)->ExceptionCheck(env) ? -1 : 0;
}

/* [10] names, [11] 16 doubles and [12] 3 longs per scope (Energy.java). */
static int put_scopes(JNIEnv *env, jobjectArray res, const jalen_live *l, double *d, jlong *j)
{
    size_t ns = l->nscopes;
    for (size_t i = 0; i < ns; i++) {
        const jalen_live_scope *s = &l->scopes[i];
        for (int k = 0; k < 2; k++) {
            double *o = &d[16 * i + 8 * (size_t)k];
            o[0] = s->cpu_time_s[k], o[1] = s->energy_j[k], o[2] = s->cpu_energy_j[k];
            o[3] = s->net_energy_j[k], o[4] = s->mean_j[k], o[5] = s->p50_j[k];
            o[6] = s->p95_j[k], o[7] = s->p99_j[k];
        }
        j[3 * i] = (jlong)s->calls;
        j[3 * i + 1] = (jlong)s->net_bytes[0];
        j[3 * i + 2] = (jlong)s->net_bytes[1];
    }
    return put(env, res, 10,
               new_strings(env, l->scopes, offsetof(jalen_live_scope, name),
                           sizeof(jalen_live_scope), ns)) ||
           put(env, res, 11, new_doubles(env, d, 16 * ns)) ||
           put(env, res, 12, new_longs(env, j, 3 * ns));
}

/* Layout documented in Energy.java (nSnapshot). */
/* A stream's text as a Java string (NULL when it could not be made). */
static jstring text_of(JNIEnv *env, FILE *f, char **buf)
{
    if (!f)
        return NULL;
    fclose(f);
    jstring s = *buf ? (*env)->NewStringUTF(env, *buf) : NULL;
    free(*buf);
    return s;
}

/* EnergyMXBean.trace: the methods traced become patterns ("" none, DESIGN.md
 * 11.2); the agent's answer. */
static jstring JNICALL n_trace(JNIEnv *env, jclass cls, jstring patterns)
{
    (void)cls;
    char *buf = NULL;
    size_t len = 0;
    const char *p = patterns ? (*env)->GetStringUTFChars(env, patterns, NULL) : "";
    FILE *f = p ? open_memstream(&buf, &len) : NULL;
    if (f && !atomic_load(&jl_run.active))
        fprintf(f, "jalen: not profiling this JVM: no tracing\n");
    else if (f)
        jl_trace_set(jl_run.jvmti, env, p, f);
    if (patterns && p)
        (*env)->ReleaseStringUTFChars(env, patterns, p);
    return text_of(env, f, &buf);
}

/* EnergyMXBean.getTracedCalls: calls.csv as it is now. */
static jstring JNICALL n_traced(JNIEnv *env, jclass cls)
{
    (void)cls;
    const jalen_mxbean_hooks *h = atomic_load(&mx_hooks);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = h ? open_memstream(&buf, &len) : NULL;
    if (f) {
        h->lock();
        jl_trace_rows(f);
        h->unlock();
    }
    return text_of(env, f, &buf);
}

static jobjectArray JNICALL n_snapshot(JNIEnv *env, jclass cls, jint top)
{
    (void)cls;
    jalen_live *l = NULL;
    if (jalen_live_get(&l, top > 0 ? (size_t)top : 0) < 0)
        return NULL;
    jobjectArray res = NULL;
    size_t nm = l->nmethods, nt = l->nthreads, nw = l->nwindows, ns = l->nscopes;
    size_t big = nm > nt ? nm : nt;
    big = big > 4 * ns ? big : 4 * ns; /* scopes: 16 doubles, 3 longs each */
    double *d = malloc((5 * big + 4 * nw + 10 + 1) * sizeof(double));
    jlong *j = malloc((3 * big + 1) * sizeof(jlong));
    jclass oc = (*env)->FindClass(env, "java/lang/Object");
    if (!d || !j || !oc)
        goto out;
    res = (*env)->NewObjectArray(env, 13, oc, NULL);
    if (!res)
        goto out;

    double sum[10] = {l->uptime_s,        l->process_power_w, l->process_energy_j,
                      l->attributed_j,    l->unattributed_j,  (double)l->windows,
                      (double)l->samples, (double)l->dropped, l->scoped_j,
                      l->unscoped_j};
    char *strs[2] = {l->formula, (char *)""};
    if (put(env, res, 0, new_doubles(env, sum, 10)) ||
        put(env, res, 1, new_strings(env, strs, 0, sizeof(char *), 2)))
        goto fail;

    for (size_t i = 0; i < nm; i++) {
        const jalen_live_method *m = &l->methods[i];
        d[5 * i] = m->self_energy_j;
        d[5 * i + 1] = m->total_energy_j;
        d[5 * i + 2] = m->cpu_energy_j;
        d[5 * i + 3] = m->net_energy_j;
        d[5 * i + 4] = m->window_power_w;
        j[3 * i] = (jlong)m->self_samples;
        j[3 * i + 1] = (jlong)m->total_samples;
        j[3 * i + 2] = (jlong)m->net_bytes;
    }
    if (put(env, res, 2,
            new_strings(env, l->methods, offsetof(jalen_live_method, name),
                        sizeof(jalen_live_method), nm)) ||
        put(env, res, 3, new_doubles(env, d, 5 * nm)) ||
        put(env, res, 4, new_longs(env, j, 3 * nm)))
        goto fail;

    for (size_t i = 0; i < nt; i++) {
        const jalen_live_thread *t = &l->threads[i];
        j[i] = (jlong)t->tid;
        d[5 * i] = t->cpu_time_s;
        d[5 * i + 1] = t->energy_j;
        d[5 * i + 2] = t->cpu_energy_j;
        d[5 * i + 3] = t->net_energy_j;
        d[5 * i + 4] = t->window_power_w;
    }
    if (put(env, res, 5, new_longs(env, j, nt)) ||
        put(env, res, 6,
            new_strings(env, l->threads, offsetof(jalen_live_thread, name),
                        sizeof(jalen_live_thread), nt)) ||
        put(env, res, 7, new_doubles(env, d, 5 * nt)))
        goto fail;
    for (size_t i = 0; i < nt; i++)
        j[i] = (jlong)l->threads[i].net_bytes;
    if (put(env, res, 8, new_longs(env, j, nt)))
        goto fail;

    for (size_t i = 0; i < nw; i++) {
        d[4 * i] = l->recent[i].start_s;
        d[4 * i + 1] = l->recent[i].duration_s;
        d[4 * i + 2] = l->recent[i].power_w;
        d[4 * i + 3] = l->recent[i].energy_j;
    }
    if (put(env, res, 9, new_doubles(env, d, 4 * nw)) || put_scopes(env, res, l, d, j))
        goto fail;
    goto out;
fail:
    res = NULL; /* an exception (OutOfMemoryError) is pending */
out:
    free(d);
    free(j);
    jalen_live_free(l);
    return res;
}

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */

/* set once a class shows the JVM's management in use */
static atomic_int mx_wanted;

void jalen_mxbean_class_prepared(jvmtiEnv *jvmti, jclass klass)
{
    char *sig = NULL;
    if (atomic_load_explicit(&mx_wanted, memory_order_relaxed) ||
        (*jvmti)->GetClassSignature(jvmti, klass, &sig, NULL) != JVMTI_ERROR_NONE || !sig)
        return;
    if (!strcmp(sig, "Ljava/lang/management/ManagementFactory;") ||
        !strcmp(sig, "L" ENERGY_CLASS ";"))
        atomic_store(&mx_wanted, 1);
    (*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
}

int jalen_mxbean_wanted(void)
{
    const char *always = getenv("JALEN_MXBEAN");
    return atomic_load(&mx_wanted) || (always && !strcmp(always, "1"));
}

/* Finds powerapi.jar: $JALEN_MXBEAN_JAR, else near libjalen.so. */
static int find_jar(char *out, size_t len)
{
    const char *env = getenv("JALEN_MXBEAN_JAR");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -ENOENT;
    }
    Dl_info info;
    if (!dladdr((void *)&find_jar, &info) || !info.dli_fname)
        return -ENOENT;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -ENOENT;
    *slash = '\0';
    static const char *const rel[] = {
        "powerapi.jar",
        "../bindings/java/powerapi.jar",
        "../share/java/powerapi.jar",
        "../../share/java/powerapi.jar",
    };
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        if ((size_t)snprintf(out, len, "%s/%s", dir, rel[i]) >= len)
            continue;
        if (access(out, R_OK) == 0)
            return 0;
    }
    return -ENOENT;
}

/* The class org.powerapi.jalen.Energy: from the application's class path
 * when it has powerapi.jar (so that Energy.get() works in-process), else
 * from jar through a URLClassLoader whose parent is the system class
 * loader.  (Appending to the boot class path instead would turn class data
 * sharing off for the application's classes, with a warning.)  Returns a
 * local reference, or NULL with why[] filled and no exception pending. */
/* Every JNI call below is followed by an exception check (-Xcheck:jni). */
#define J(expr) ((*jni)->expr)
#define FAILED() ((*jni)->ExceptionCheck(jni))

static jclass load_energy_in_frame(JNIEnv *jni, const char *jar, char *why, size_t why_len)
{
    jclass cls = NULL, fc, lc, uc, urlc, cc, uric;
    jmethodID sys, forname, fnew, touri, tourl, unew;
    if (!(fc = J(FindClass(jni, "java/io/File"))) ||
        !(lc = J(FindClass(jni, "java/lang/ClassLoader"))) ||
        !(uc = J(FindClass(jni, "java/net/URLClassLoader"))) ||
        !(urlc = J(FindClass(jni, "java/net/URL"))) ||
        !(cc = J(FindClass(jni, "java/lang/Class"))) || !(uric = J(FindClass(jni, "java/net/URI"))))
        goto fail;
    if (!(sys =
              J(GetStaticMethodID(jni, lc, "getSystemClassLoader", "()Ljava/lang/ClassLoader;"))) ||
        !(forname = J(GetStaticMethodID(jni, cc, "forName",
                                        "(Ljava/lang/String;Z"
                                        "Ljava/lang/ClassLoader;)"
                                        "Ljava/lang/Class;"))) ||
        !(fnew = J(GetMethodID(jni, fc, "<init>", "(Ljava/lang/String;)V"))) ||
        !(touri = J(GetMethodID(jni, fc, "toURI", "()Ljava/net/URI;"))) ||
        !(tourl = J(GetMethodID(jni, uric, "toURL", "()Ljava/net/URL;"))) ||
        !(unew = J(GetMethodID(jni, uc, "<init>", "([Ljava/net/URL;Ljava/lang/ClassLoader;)V"))))
        goto fail;
    jobject sl = J(CallStaticObjectMethod(jni, lc, sys));
    if (FAILED() || !sl)
        goto fail;
    jstring cname = J(NewStringUTF(jni, "org.powerapi.jalen.Energy"));
    if (!cname)
        goto fail;
    /* The application's own copy first. */
    cls = (jclass)J(CallStaticObjectMethod(jni, cc, forname, cname, JNI_FALSE, sl));
    if (!FAILED() && cls)
        return cls;
    J(ExceptionClear(jni)); /* ClassNotFoundException: use the jar */
    cls = NULL;
    if (!*jar) {
        snprintf(why, why_len,
                 "MXBean: powerapi.jar not found next to libjalen.so nor in "
                 "../share/java; set JALEN_MXBEAN_JAR");
        return NULL;
    }
    jstring jpath = J(NewStringUTF(jni, jar));
    if (!jpath)
        goto fail;
    jobject file = J(NewObject(jni, fc, fnew, jpath));
    if (FAILED() || !file)
        goto fail;
    jobject uri = J(CallObjectMethod(jni, file, touri));
    if (FAILED() || !uri)
        goto fail;
    jobject url = J(CallObjectMethod(jni, uri, tourl));
    if (FAILED() || !url)
        goto fail;
    jobjectArray urls = J(NewObjectArray(jni, 1, urlc, url));
    if (FAILED() || !urls)
        goto fail;
    jobject loader = J(NewObject(jni, uc, unew, urls, sl));
    if (FAILED() || !loader)
        goto fail;
    cls = (jclass)J(CallStaticObjectMethod(jni, cc, forname, cname, JNI_FALSE, loader));
    if (!FAILED() && cls)
        return cls;
fail:
    J(ExceptionClear(jni));
    snprintf(why, why_len, "MXBean: cannot load org.powerapi.jalen.Energy from %s", jar);
    return NULL;
}

#undef J
#undef FAILED

static jclass load_energy(JNIEnv *jni, const char *jar, char *why, size_t why_len)
{
    if ((*jni)->PushLocalFrame(jni, 32) < 0) {
        (*jni)->ExceptionClear(jni);
        snprintf(why, why_len, "MXBean: out of memory");
        return NULL;
    }
    jclass cls = load_energy_in_frame(jni, jar, why, why_len);
    return (jclass)(*jni)->PopLocalFrame(jni, cls);
}

int jalen_mxbean_start(jvmtiEnv *jvmti, JNIEnv *jni, const jalen_mxbean_hooks *hooks,
                       const char *jar, char *why, size_t why_len)
{
    /* before the native is bound: a snapshot needs the lock from the first */
    atomic_store(&mx_hooks, hooks);
    const char *off = getenv("JALEN_MXBEAN");
    if (off && !strcmp(off, "0"))
        return 0;
    char path[PATH_MAX];
    if (jar) {
        snprintf(path, sizeof(path), "%s", jar);
    } else if (find_jar(path, sizeof(path)) < 0) {
        path[0] = '\0'; /* only the application's class path then */
    }
    jclass cls = load_energy(jni, path, why, why_len);
    if (!cls)
        return -ENOENT;
    JNINativeMethod nm[] = {
        {(char *)"nSnapshot", (char *)"(I)[Ljava/lang/Object;", (void *)n_snapshot},
        {(char *)"nTrace", (char *)"(Ljava/lang/String;)Ljava/lang/String;", (void *)n_trace},
        {(char *)"nTraced", (char *)"()Ljava/lang/String;", (void *)n_traced},
    };
    jmethodID reg = NULL;
    if ((*jni)->RegisterNatives(jni, cls, nm, 3) != 0 ||
        !(reg = (*jni)->GetStaticMethodID(jni, cls, "register", "()V"))) {
        (*jni)->ExceptionClear(jni);
        snprintf(why, why_len, "MXBean: %s does not match this agent", path);
        (*jni)->DeleteLocalRef(jni, cls);
        return -EINVAL;
    }
    (*jni)->CallStaticVoidMethod(jni, cls, reg);
    if ((*jni)->ExceptionCheck(jni)) {
        (*jni)->ExceptionClear(jni);
        snprintf(why, why_len, "MXBean: registering org.powerapi.jalen:type=Energy failed");
        (*jni)->DeleteLocalRef(jni, cls);
        return -EINVAL;
    }
    (*jni)->DeleteLocalRef(jni, cls);
    return 0;
}
