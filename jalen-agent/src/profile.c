/*
 * profile.c - methods, classes and the call tree, with their energies.
 *
 * Only the agent thread (or VMDeath, under the same lock) touches these.
 */
#include "jalen.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

jl_profile jl_prof;
static const jl_opts *jl_popts;

static const char *const jl_fixed_names[JL_M_NFIXED] = {
    [JL_M_UNATTRIBUTED] = "[unattributed]",
    [JL_M_GC] = "[GC]",
    [JL_M_JIT] = "[JIT compiler]",
    [JL_M_VM] = "[VM]",
    [JL_M_AGENT] = "[agent]",
    [JL_M_OUTSIDE_FILTER] = "[outside filter]",
    [JL_M_TRUNCATED] = "[truncated]",
    [JL_M_PARTIAL] = "[callers not walkable: last Java frame]",
    [JL_M_PARTIAL_PC] = "[callers not walkable: compiled code at the PC]",
    [JL_M_ERR0 + 0] = "[no Java frame]",
    [JL_M_ERR0 + 1] = "[no class loaded]",
    [JL_M_ERR0 + 2] = "[GC active]",
    [JL_M_ERR0 + 3] = "[not Java]",
    [JL_M_ERR0 + 4] = "[not walkable, not Java]",
    [JL_M_ERR0 + 5] = "[unknown Java]",
    [JL_M_ERR0 + 6] = "[not walkable Java]",
    [JL_M_ERR0 + 7] = "[unknown state]",
    [JL_M_ERR0 + 8] = "[thread exit]",
    [JL_M_ERR0 + 9] = "[deoptimization]",
    [JL_M_ERR0 + 10] = "[safepoint]",
};

static uint64_t jl_class_hash_at(const void *user, size_t i)
{
    (void)user;
    return pa__hash_str(jl_prof.c[i].name);
}

static uint64_t jl_method_hash_at(const void *user, size_t i)
{
    (void)user;
    return pa__hash_str(jl_prof.m[i].name);
}

static int jl_class_of(const char *name)
{
    if (pa__index_reserve(&jl_prof.chash, &jl_prof.chcap, 1024, 0, jl_prof.nc, jl_class_hash_at,
                          NULL) < 0)
        return -1;
    size_t k = pa__hash_str(name) & (jl_prof.chcap - 1);
    while (jl_prof.chash[k]) {
        int i = jl_prof.chash[k] - 1;
        if (!strcmp(jl_prof.c[i].name, name))
            return i;
        k = (k + 1) & (jl_prof.chcap - 1);
    }
    if (PA__GROW(jl_prof.c, jl_prof.capc, jl_prof.nc + 1, 256) < 0 ||
        PA__GROW(jl_prof.cs, jl_prof.capcs, jl_prof.nc + 1, 256) < 0)
        return -1;
    jl_class *c = &jl_prof.c[jl_prof.nc];
    memset(c, 0, sizeof(*c));
    memset(&jl_prof.cs[jl_prof.nc], 0, sizeof(pc_stat));
    c->name = strdup(name);
    if (!c->name)
        return -1;
    jl_prof.chash[k] = (int)jl_prof.nc + 1;
    return (int)jl_prof.nc++;
}

static int jl_matches(const char *name)
{
    if (!jl_popts || jl_popts->nfilters == 0)
        return 1;
    for (size_t i = 0; i < jl_popts->nfilters; i++)
        if (!strncmp(name, jl_popts->filters[i], strlen(jl_popts->filters[i])))
            return 1;
    return 0;
}

/* Whether method i matches the filter, and how the filtered view charges
 * it: a method of the filter, or a pseudo-frame of a Java thread's stack;
 * the pseudo-threads (the JVM's own work, not the filtered code's) go to
 * [outside filter] (issue 31 item 9). */
static void jl_method_filter(size_t i)
{
    jl_method *m = &jl_prof.m[i];
    m->matches = i >= JL_M_NFIXED && jl_matches(m->name);
    int pseudo_thread = i >= JL_M_GC && i <= JL_M_AGENT;
    jl_prof.mcharge[i] =
        m->matches || (i < JL_M_NFIXED && !pseudo_thread) ? PC_CHARGE_ANY : PC_CHARGE_NONE;
}

static int jl_method_new(const char *cls, const char *meth)
{
    if (PA__GROW(jl_prof.m, jl_prof.capm, jl_prof.nm + 1, 1024) < 0 ||
        PA__GROW(jl_prof.ms, jl_prof.capms, jl_prof.nm + 1, 1024) < 0 ||
        PA__GROW(jl_prof.mcharge, jl_prof.capmch, jl_prof.nm + 1, 1024) < 0)
        return -1;
    int ci = jl_class_of(cls);
    if (ci < 0)
        return -1;
    jl_method *m = &jl_prof.m[jl_prof.nm];
    memset(m, 0, sizeof(*m));
    size_t len = strlen(cls) + strlen(meth) + 2;
    m->name = malloc(len);
    if (!m->name)
        return -1;
    if (*meth)
        snprintf(m->name, len, "%s.%s", cls, meth);
    else
        snprintf(m->name, len, "%s", cls);
    m->cls = ci;
    memset(&jl_prof.ms[jl_prof.nm], 0, sizeof(pc_stat));
    jl_method_filter(jl_prof.nm);
    return (int)jl_prof.nm++;
}

int jl_method_pseudo(const char *name)
{
    int m = jl_method_new(name, "");
    if (m >= 0)
        jl_prof.m[m].matches = 0;
    return m;
}

int jl_profile_init(const jl_opts *o)
{
    jl_popts = o;
    jl_prof.tree.hint = 8192;
    jl_prof.tree.node_hint = 4096;
    for (int i = 0; i < JL_M_NFIXED; i++)
        if (jl_method_new(jl_fixed_names[i], "") != i)
            return -1;
    return 0;
}

void jl_profile_reset(const jl_opts *o)
{
    jl_popts = o;
    for (size_t i = 0; i < jl_prof.nm; i++) {
        memset(&jl_prof.ms[i], 0, sizeof(pc_stat));
        jl_method_filter(i);
    }
    memset(jl_prof.cs, 0, jl_prof.nc * sizeof(pc_stat));
    pc_tree_build_free(&jl_prof.tree);
    memset(&jl_prof.tree, 0, sizeof(jl_prof.tree));
    jl_prof.tree.hint = 8192;
    jl_prof.tree.node_hint = 4096;
    jl_prof.ntl = 0;
    jl_prof.process_j = jl_prof.process_cpu_j = jl_prof.process_nic_j = 0;
    jl_prof.unattributed_j = jl_prof.duration_s = 0;
    jl_prof.windows = jl_prof.samples = jl_prof.samples_dropped = jl_prof.net_bytes = 0;
    jl_prof.windows_empty = 0;
    memset(&jl_prof.source, 0, sizeof(jl_prof.source));
}

/* "Lcom/acme/Foo$Bar;" -> "com.acme.Foo$Bar"; hidden classes lose their
 * address suffix ("Foo$$Lambda$14/0x0000000800c01234") so they merge. */
static void jl_class_name(const char *sig, char *out, size_t len)
{
    size_t k = 0;
    const char *p = sig;
    if (*p == 'L')
        p++;
    for (; *p && *p != ';' && k + 1 < len; p++) {
        if ((*p == '/' || *p == '.' || *p == '+') && p[1] == '0' && p[2] == 'x')
            break;
        out[k++] = *p == '/' ? '.' : *p;
    }
    out[k] = '\0';
}

static int jl_mhash_grow(void)
{
    size_t ncap = jl_prof.mhcap ? jl_prof.mhcap * 2 : 4096;
    int *h = calloc(ncap, sizeof(int));
    jmethodID *keys = calloc(ncap, sizeof(jmethodID));
    jl_lines *lines = calloc(ncap, sizeof(jl_lines));
    if (!h || !keys || !lines) {
        free(h);
        free(keys);
        free(lines);
        return -1;
    }
    for (size_t i = 0; i < jl_prof.mhcap; i++) {
        if (!jl_prof.mhash[i])
            continue;
        size_t k = pa__hash_u64((uint64_t)(uintptr_t)jl_prof.mhkeys[i]) & (ncap - 1);
        while (h[k])
            k = (k + 1) & (ncap - 1);
        h[k] = jl_prof.mhash[i];
        keys[k] = jl_prof.mhkeys[i];
        lines[k] = jl_prof.mhlines[i];
    }
    free(jl_prof.mhash);
    free(jl_prof.mhkeys);
    free(jl_prof.mhlines);
    jl_prof.mhash = h;
    jl_prof.mhkeys = keys;
    jl_prof.mhlines = lines;
    jl_prof.mhcap = ncap;
    return 0;
}

/* The line of bci in a line number table: the entry that starts last at
 * or before it. */
static int jl_line_at(const jl_lines *t, jint bci)
{
    if (bci < 0 || t->n <= 0 || bci < t->v[0].start_location)
        return 0;
    int lo = 0, hi = t->n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (t->v[mid].start_location <= bci)
            lo = mid;
        else
            hi = mid - 1;
    }
    return t->v[lo].line_number > 0 ? (int)t->v[lo].line_number : 0;
}

static int jl_entry_cmp(const void *a, const void *b)
{
    jlocation x = ((const jvmtiLineNumberEntry *)a)->start_location;
    jlocation y = ((const jvmtiLineNumberEntry *)b)->start_location;
    return x < y ? -1 : x > y;
}

/* A copy of id's line number table, sorted by BCI (JVMTI does not say
 * its order); none when the method has none. */
static jl_lines jl_lines_read(jvmtiEnv *jvmti, jmethodID id)
{
    jl_lines t = {0, NULL};
    jint n = 0;
    jvmtiLineNumberEntry *v = NULL;
    if (!id || (*jvmti)->GetLineNumberTable(jvmti, id, &n, &v) != JVMTI_ERROR_NONE)
        return t;
    if (n > 0 && (t.v = malloc((size_t)n * sizeof(*t.v))) != NULL) {
        memcpy(t.v, v, (size_t)n * sizeof(*t.v));
        qsort(t.v, (size_t)n, sizeof(*t.v), jl_entry_cmp);
        t.n = n;
    }
    (*jvmti)->Deallocate(jvmti, (unsigned char *)v);
    return t;
}

/* "package/dir/Source.java" of a class ("com.acme.Foo" in
 * "Foo.java"), or NULL. */
static char *jl_source_of(jvmtiEnv *jvmti, jclass klass, const char *cls)
{
    char *src = NULL, *out = NULL;
    if (!klass || (*jvmti)->GetSourceFileName(jvmti, klass, &src) != JVMTI_ERROR_NONE || !src)
        return NULL;
    const char *dot = strrchr(cls, '.');
    size_t pkg = dot ? (size_t)(dot - cls) + 1 : 0;
    size_t len = pkg + strlen(src) + 1;
    if ((out = malloc(len)) != NULL) {
        for (size_t i = 0; i < pkg; i++)
            out[i] = cls[i] == '.' ? '/' : cls[i];
        snprintf(out + pkg, len - pkg, "%s", src);
    }
    (*jvmti)->Deallocate(jvmti, (unsigned char *)src);
    return out;
}

int jl_method_of(jvmtiEnv *jvmti, jmethodID id)
{
    int line;
    return jl_method_line(jvmti, id, -1, &line);
}

int jl_method_line(jvmtiEnv *jvmti, jmethodID id, jint bci, int *line)
{
    *line = 0;
    if ((jl_prof.mhn + 1) * 2 > jl_prof.mhcap && jl_mhash_grow() < 0)
        return JL_M_UNATTRIBUTED;
    size_t k = pa__hash_u64((uint64_t)(uintptr_t)id) & (jl_prof.mhcap - 1);
    while (jl_prof.mhash[k]) {
        if (jl_prof.mhkeys[k] == id) {
            *line = jl_line_at(&jl_prof.mhlines[k], bci);
            return jl_prof.mhash[k] - 1;
        }
        k = (k + 1) & (jl_prof.mhcap - 1);
    }
    char cls[512] = "[unknown class]";
    char meth[256] = "[unknown method]";
    jclass klass = NULL;
    char *csig = NULL, *mname = NULL;
    if (id && (*jvmti)->GetMethodDeclaringClass(jvmti, id, &klass) == JVMTI_ERROR_NONE) {
        if ((*jvmti)->GetClassSignature(jvmti, klass, &csig, NULL) == JVMTI_ERROR_NONE && csig) {
            jl_class_name(csig, cls, sizeof(cls));
            (*jvmti)->Deallocate(jvmti, (unsigned char *)csig);
        }
    }
    jl_lines lt = jl_lines_read(jvmti, id);
    if (id && (*jvmti)->GetMethodName(jvmti, id, &mname, NULL, NULL) == JVMTI_ERROR_NONE && mname) {
        snprintf(meth, sizeof(meth), "%s", mname);
        (*jvmti)->Deallocate(jvmti, (unsigned char *)mname);
    }
    char *file = jl_source_of(jvmti, klass, cls);
    if (klass) {
        JNIEnv *jni = NULL;
        JavaVM *vm = jl_smp.vm;
        if (vm && (*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_6) == JNI_OK && jni)
            (*jni)->DeleteLocalRef(jni, klass);
    }
    /* one method record per name: the same method of a class loaded twice
     * (or of two hidden classes) merges */
    char full[800];
    snprintf(full, sizeof(full), "%s.%s", cls, meth);
    int mi = -1;
    static int *nh;
    static size_t nhcap;
    /* every method past the fixed ones is made here, so all are indexed */
    if (pa__index_reserve(&nh, &nhcap, 4096, JL_M_NFIXED, jl_prof.nm, jl_method_hash_at, NULL) <
        0) {
        free(file);
        free(lt.v);
        return JL_M_UNATTRIBUTED;
    }
    size_t q = pa__hash_str(full) & (nhcap - 1);
    while (nh[q]) {
        if (!strcmp(jl_prof.m[nh[q] - 1].name, full)) {
            mi = nh[q] - 1;
            break;
        }
        q = (q + 1) & (nhcap - 1);
    }
    if (mi < 0) {
        mi = jl_method_new(cls, meth);
        if (mi < 0) {
            free(file);
            free(lt.v);
            return JL_M_UNATTRIBUTED;
        }
        nh[q] = mi + 1;
    }
    /* the first class of a merged name gives the method its file */
    if (!jl_prof.m[mi].file) {
        jl_prof.m[mi].file = file;
        file = NULL;
    }
    free(file);
    jl_prof.mhash[k] = mi + 1;
    jl_prof.mhkeys[k] = id;
    jl_prof.mhlines[k] = lt;
    jl_prof.mhn++;
    *line = jl_line_at(&lt, bci);
    return mi;
}

void jl_profile_add(const int *frames, const int *lines, int n, double cpu_j, double net_j,
                    uint64_t net_bytes, double cpu_s, int count_sample)
{
    if (n <= 0)
        return;
    if (n > JL_MAX_DEPTH + 2) /* + [truncated] + [scope NAME] */
        n = JL_MAX_DEPTH + 2;
    pc_sample s = {.energy_j = cpu_j + net_j,
                   .cpu_j = cpu_j,
                   .net_j = net_j,
                   .net_bytes = net_bytes,
                   .samples = (uint64_t)count_sample};
    uint64_t stamp = ++jl_prof.stamp;
    pc_stat_add(jl_prof.ms, frames, n, jl_prof.mcharge, JL_M_OUTSIDE_FILTER, stamp, &s);
    int cls[JL_MAX_DEPTH + 2];
    for (int i = 0; i < n; i++)
        cls[i] = jl_prof.m[frames[i]].cls;
    pc_stat_add(jl_prof.cs, cls, n, NULL, -1, stamp, &s);
    int node = pc_tree_stack(&jl_prof.tree, frames, NULL, lines, n);
    if (node >= 0) {
        jl_prof.tree.nodes[node].self_j += s.energy_j;
        jl_prof.tree.nodes[node].self_cpu_s += cpu_s;
        jl_prof.tree.nodes[node].self_samples += (uint64_t)count_sample;
    }
}
