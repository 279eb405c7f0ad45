/*
 * threads.c - the table of the JVM's native threads (tid -> name, kind).
 *
 * Java threads are entered at ThreadStart (gettid on the new thread) or,
 * for those started before VMInit, matched by name in /proc/self/task.
 * Every other thread is a pseudo-thread classified by its comm.
 */
#include "jalen.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

jl_threads jl_thr = {.lock = PTHREAD_MUTEX_INITIALIZER};

const char *const jl_kind_names[JL_K_COUNT] = {
    [JL_K_JAVA] = "java", [JL_K_GC] = "[GC]",       [JL_K_JIT] = "[JIT compiler]",
    [JL_K_VM] = "[VM]",   [JL_K_AGENT] = "[agent]",
};

static int jl_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

jl_kind jl_classify_comm(const char *comm)
{
    static const char *const gc[] = {
        "GC Thread",  "G1 ",         "GC ",       "ParGC",          "Parallel GC", "CMS",
        "Shenandoah", "ZWorker",     "ZDirector", "ZDriver",        "ZStat",       "ZUnmapper",
        "ZRelocat",   "Gang worker", "Conc#",     "VM Periodic GC", NULL,
    };
    static const char *const jit[] = {
        "C1 CompilerThre", "C2 CompilerThre", "CompilerThread", "Sweeper thread",
        "JVMCI",           "C1 Compiler",     "C2 Compiler",    NULL,
    };
    for (size_t i = 0; gc[i]; i++)
        if (jl_prefix(comm, gc[i]))
            return JL_K_GC;
    for (size_t i = 0; jit[i]; i++)
        if (jl_prefix(comm, jit[i]))
            return JL_K_JIT;
    return JL_K_VM;
}

static size_t jl_hash_tid(pid_t tid, size_t cap)
{
    return pa__hash_u64((uint32_t)tid) & (cap - 1);
}

/* Newest record first: a tid that a new thread took again (jl_threads_new)
 * finds the new thread's record; the older ones stay in v only. */
static int jl_rehash(size_t ncap)
{
    int *h = calloc(ncap, sizeof(int));
    if (!h)
        return -1;
    for (size_t i = jl_thr.n; i-- > 0;) {
        size_t k = jl_hash_tid(jl_thr.v[i].tid, ncap);
        while (h[k] && jl_thr.v[h[k] - 1].tid != jl_thr.v[i].tid)
            k = (k + 1) & (ncap - 1);
        if (!h[k])
            h[k] = (int)i + 1;
    }
    free(jl_thr.hash);
    jl_thr.hash = h;
    jl_thr.hcap = ncap;
    return 0;
}

/* The hash slot of tid: its record's, else the free one it would take. */
static size_t jl_hash_slot(pid_t tid)
{
    size_t k = jl_hash_tid(tid, jl_thr.hcap);
    while (jl_thr.hash[k] && jl_thr.v[jl_thr.hash[k] - 1].tid != tid)
        k = (k + 1) & (jl_thr.hcap - 1);
    return k;
}

/* Lock held.  A fresh record for tid, the one tid finds from now on; also
 * for a thread that took the tid of one that ended: the old record keeps
 * its figures (its row) but tid no longer finds it.  Pointers into
 * jl_thr.v are invalid afterwards. */
jl_thread *jl_threads_new(pid_t tid)
{
    if (PA__GROW(jl_thr.v, jl_thr.cap, jl_thr.n + 1, 256) < 0)
        return NULL;
    if ((jl_thr.n + 1) * 2 > jl_thr.hcap && jl_rehash(jl_thr.hcap ? jl_thr.hcap * 2 : 512) < 0)
        return NULL;
    jl_thread *t = &jl_thr.v[jl_thr.n];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    t->kind = JL_K_VM;
    t->alive = 1;
    t->final_cpu_s = -1;
    t->end_cpu_s = -1;
    jl_thr.hash[jl_hash_slot(tid)] = (int)jl_thr.n + 1;
    jl_thr.n++;
    return t;
}

/* Lock held.  The record tid finds: a tid that exited and was reused by
 * a thread no one told us about keeps one record (a dead record is
 * revived); jl_threads_new gives a new Java thread one of its own. */
jl_thread *jl_threads_get(pid_t tid, int create)
{
    if (jl_thr.hcap) {
        int i = jl_thr.hash[jl_hash_slot(tid)];
        if (i)
            return &jl_thr.v[i - 1];
    }
    return create ? jl_threads_new(tid) : NULL;
}
