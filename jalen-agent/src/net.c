/*
 * net.c - socket bytes per call stack, through NativeMethodBind wrappers
 * around the JDK's socket natives.
 *
 * A wrapper calls the original native, then adds the bytes it moved to a
 * record keyed by (thread, Java stack).  The stack is walked at most once
 * per call: always for a transfer of 4 KiB or more, and for a small one
 * only when the same native on the same thread was not walked for a while
 * (each thread caches the last stack per native, so a thread that
 * alternates reads and writes keeps both apart).  That while starts at
 * 10 ms and doubles, up to 1.28 s, each time a walk finds one of the last
 * few stacks this thread had for this native; a new stack sets it back to
 * 10 ms.  Servers whose pool threads take turns at a handful of roles (a
 * Jetty thread reads as the selector's producer one moment and as a
 * connection's consumer the next) thus settle at 1.28 s too.  Between
 * walks the bytes go to the stack the last walk found: a walk falls on
 * whatever call comes after the while, so over many walks each stack gets
 * its share.  Heavy small I/O thus costs a plain add per call and about
 * one walk per second per thread and native.
 *
 * FileDispatcherImpl's natives serve files and pipes as well as sockets,
 * so their fd is looked at (fstat) once and the answer cached per fd.  The
 * JDK's close natives are wrapped too and forget the fd's answer before
 * and after closing it, so that a number reused for a file (or a socket)
 * is looked at again; fds closed by native code the JDK does not see are
 * covered by forgetting every answer once per window.
 */
#include "jalen.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { JL_RX = 0, JL_TX = 1 };
enum { JL_SIG_RW_I, JL_SIG_RW_J, JL_SIG_RECV, JL_SIG_SEND };

typedef struct jl_target {
    const char *cls;  /* class signature */
    const char *name; /* method name */
    const char *sig;  /* JNI signature */
    int dir;
    int check_socket; /* the native also serves files and pipes */
    int shape;
    void *_Atomic orig;
} jl_target;

#define FD_SIG "(Ljava/io/FileDescriptor;JI)"
static jl_target jl_targets[] = {
    {"Lsun/nio/ch/SocketDispatcher;", "read0", FD_SIG "I", JL_RX, 0, JL_SIG_RW_I, NULL},
    {"Lsun/nio/ch/SocketDispatcher;", "readv0", FD_SIG "J", JL_RX, 0, JL_SIG_RW_J, NULL},
    {"Lsun/nio/ch/SocketDispatcher;", "write0", FD_SIG "I", JL_TX, 0, JL_SIG_RW_I, NULL},
    {"Lsun/nio/ch/SocketDispatcher;", "writev0", FD_SIG "J", JL_TX, 0, JL_SIG_RW_J, NULL},
    {"Lsun/nio/ch/FileDispatcherImpl;", "write0", FD_SIG "I", JL_TX, 1, JL_SIG_RW_I, NULL},
    {"Lsun/nio/ch/FileDispatcherImpl;", "writev0", FD_SIG "J", JL_TX, 1, JL_SIG_RW_J, NULL},
    {"Lsun/nio/ch/FileDispatcherImpl;", "read0", FD_SIG "I", JL_RX, 1, JL_SIG_RW_I, NULL},
    {"Lsun/nio/ch/FileDispatcherImpl;", "readv0", FD_SIG "J", JL_RX, 1, JL_SIG_RW_J, NULL},
    {"Lsun/nio/ch/UnixFileDispatcherImpl;", "write0", FD_SIG "I", JL_TX, 1, JL_SIG_RW_I, NULL},
    {"Lsun/nio/ch/UnixFileDispatcherImpl;", "writev0", FD_SIG "J", JL_TX, 1, JL_SIG_RW_J, NULL},
    {"Lsun/nio/ch/UnixFileDispatcherImpl;", "read0", FD_SIG "I", JL_RX, 1, JL_SIG_RW_I, NULL},
    {"Lsun/nio/ch/UnixFileDispatcherImpl;", "readv0", FD_SIG "J", JL_RX, 1, JL_SIG_RW_J, NULL},
    {"Lsun/nio/ch/DatagramDispatcher;", "read0", FD_SIG "I", JL_RX, 0, JL_SIG_RW_I, NULL},
    {"Lsun/nio/ch/DatagramDispatcher;", "readv0", FD_SIG "J", JL_RX, 0, JL_SIG_RW_J, NULL},
    {"Lsun/nio/ch/DatagramDispatcher;", "write0", FD_SIG "I", JL_TX, 0, JL_SIG_RW_I, NULL},
    {"Lsun/nio/ch/DatagramDispatcher;", "writev0", FD_SIG "J", JL_TX, 0, JL_SIG_RW_J, NULL},
    {"Lsun/nio/ch/DatagramChannelImpl;", "receive0", "(Ljava/io/FileDescriptor;JIJZ)I", JL_RX, 0,
     JL_SIG_RECV, NULL},
    {"Lsun/nio/ch/DatagramChannelImpl;", "send0", "(Ljava/io/FileDescriptor;JIJI)I", JL_TX, 0,
     JL_SIG_SEND, NULL},
};
#define JL_NTARGETS (sizeof(jl_targets) / sizeof(jl_targets[0]))

static jvmtiEnv *jl_net_jvmti;
static jfieldID jl_fd_field;
static pthread_mutex_t jl_net_lock = PTHREAD_MUTEX_INITIALIZER;
static jl_net_rec **jl_recs; /* open addressing */
static size_t jl_recs_cap, jl_recs_n;
/* per fd: 0 unknown, 1 socket, 2 something else; forgotten on close and
 * each window so that a reused fd is looked at again */
#define JL_FD_CACHE 65536
static unsigned char _Atomic jl_fd_kind[JL_FD_CACHE];

#define JL_SMALL_IO 4096
#define JL_REWALK_MIN_NS 10000000ull
#define JL_REWALK_MAX_NS 1280000000ull
#define JL_SEEN 4 /* stacks remembered per thread and native */
/* one thread-local block: one TLS lookup per call */
typedef struct jl_tls {
    pid_t tid;
    jl_net_rec *rec[JL_NTARGETS];
    uint64_t walk_ns[JL_NTARGETS];
    uint64_t gap_ns[JL_NTARGETS];
    jl_net_rec *seen[JL_NTARGETS][JL_SEEN]; /* the last stacks walks found */
    unsigned char seen_next[JL_NTARGETS];
    uint64_t bytes; /* socket bytes this thread moved, for scopes (scope.c) */
} jl_tls;
static __thread jl_tls jl_tl;
static atomic_ulong jl_net_walks; /* rare: no contention worth a per-thread count */

uint64_t jl_net_thread_bytes(void)
{
    return jl_tl.bytes;
}

uint64_t jl_net_walk_count(void)
{
    return atomic_load_explicit(&jl_net_walks, memory_order_relaxed);
}

void jl_net_init(jvmtiEnv *jvmti)
{
    jl_net_jvmti = jvmti;
}

void jl_net_new_window(void)
{
    for (size_t i = 0; i < JL_FD_CACHE; i++)
        if (atomic_load_explicit(&jl_fd_kind[i], memory_order_relaxed))
            atomic_store_explicit(&jl_fd_kind[i], 0, memory_order_relaxed);
}

static void jl_fd_forget(jint fd)
{
    if (fd >= 0 && fd < JL_FD_CACHE)
        atomic_store_explicit(&jl_fd_kind[fd], 0, memory_order_relaxed);
}

/* The coarse clock (one tick, a few ms) is enough for the 10 ms re-walk
 * rule and costs less on every call. */
static uint64_t jl_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The int in a java.io.FileDescriptor, -1 when there is none. */
static jint jl_fd_of(JNIEnv *env, jobject fdo)
{
    if (!fdo)
        return -1;
    if (!jl_fd_field) {
        jclass c = (*env)->GetObjectClass(env, fdo);
        if (!c)
            return -1;
        jl_fd_field = (*env)->GetFieldID(env, c, "fd", "I");
        (*env)->DeleteLocalRef(env, c);
        if (!jl_fd_field) {
            (*env)->ExceptionClear(env);
            return -1;
        }
    }
    return (*env)->GetIntField(env, fdo, jl_fd_field);
}

static int jl_is_socket(JNIEnv *env, jobject fdo)
{
    jint fd = jl_fd_of(env, fdo);
    if (fd < 0)
        return 0;
    if (fd < JL_FD_CACHE) {
        unsigned k = atomic_load_explicit(&jl_fd_kind[fd], memory_order_relaxed);
        if (k)
            return k == 1;
    }
    struct stat st;
    int sock = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
    if (fd < JL_FD_CACHE)
        atomic_store_explicit(&jl_fd_kind[fd], sock ? 1 : 2, memory_order_relaxed);
    return sock;
}

static uint64_t jl_rec_hash(pid_t tid, const jmethodID *f, int n)
{
    uint64_t h = pa__hash_u64((uint32_t)tid);
    for (int i = 0; i < n; i++)
        h = pa__hash_pair(h, (uintptr_t)f[i]);
    return h;
}

/* net lock held */
static jl_net_rec *jl_rec_find(pid_t tid, const jmethodID *f, int n)
{
    if ((jl_recs_n + 1) * 2 > jl_recs_cap) {
        size_t ncap = jl_recs_cap ? jl_recs_cap * 2 : 1024;
        jl_net_rec **nv = calloc(ncap, sizeof(*nv));
        if (!nv)
            return NULL;
        for (size_t i = 0; i < jl_recs_cap; i++) {
            jl_net_rec *r = jl_recs[i];
            if (!r)
                continue;
            size_t k = jl_rec_hash(r->tid, r->frames, r->n) & (ncap - 1);
            while (nv[k])
                k = (k + 1) & (ncap - 1);
            nv[k] = r;
        }
        free(jl_recs);
        jl_recs = nv;
        jl_recs_cap = ncap;
    }
    size_t k = jl_rec_hash(tid, f, n) & (jl_recs_cap - 1);
    while (jl_recs[k]) {
        jl_net_rec *r = jl_recs[k];
        if (r->tid == tid && r->n == n && !memcmp(r->frames, f, (size_t)n * sizeof(*f)))
            return r;
        k = (k + 1) & (jl_recs_cap - 1);
    }
    /* one cache line each: threads add to their own records without
     * bouncing a line shared with another thread's record */
    size_t sz = (sizeof(jl_net_rec) + 63) & ~(size_t)63;
    jl_net_rec *r = aligned_alloc(64, sz);
    if (!r)
        return NULL;
    memset(r, 0, sz);
    r->frames = malloc((size_t)(n ? n : 1) * sizeof(*f));
    if (!r->frames) {
        free(r);
        return NULL;
    }
    memcpy(r->frames, f, (size_t)n * sizeof(*f));
    r->tid = tid;
    r->n = n;
    jl_recs[k] = r;
    jl_recs_n++;
    return r;
}

static void jl_net_count(JNIEnv *env, const jl_target *t, jobject fdo, uint64_t bytes)
{
    if (atomic_load_explicit(&jl_smp.paused, memory_order_relaxed))
        return;
    if (t->check_socket && !jl_is_socket(env, fdo))
        return;
    jl_tls *tl = &jl_tl;
    tl->bytes += bytes;
    if (!tl->tid)
        tl->tid = jl_gettid();
    size_t k = (size_t)(t - jl_targets);
    uint64_t now = 0;
    if (!tl->rec[k] || bytes >= JL_SMALL_IO ||
        (now = jl_mono_ns()) - tl->walk_ns[k] > tl->gap_ns[k]) {
        if (!now)
            now = jl_mono_ns();
        atomic_fetch_add_explicit(&jl_net_walks, 1, memory_order_relaxed);
        jmethodID ids[JL_MAX_DEPTH];
        jint n = 0;
        if (jl_smp.asgct) {
            /* in a native method the thread is in native state: ASGCT walks
             * from its last Java frame, no context needed, no VM transition */
            jl_asgct_frame fr[JL_MAX_DEPTH];
            jl_asgct_trace tr = {.env_id = env, .num_frames = 0, .frames = fr};
            jl_smp.asgct(&tr, JL_MAX_DEPTH, NULL);
            n = tr.num_frames > 0 ? tr.num_frames : 0;
            for (jint i = 0; i < n; i++)
                ids[i] = fr[i].method_id;
        } else {
            jvmtiFrameInfo fi[JL_MAX_DEPTH];
            if ((*jl_net_jvmti)->GetStackTrace(jl_net_jvmti, NULL, 0, JL_MAX_DEPTH, fi, &n) !=
                JVMTI_ERROR_NONE)
                n = 0;
            for (jint i = 0; i < n; i++)
                ids[i] = fi[i].method;
        }
        pthread_mutex_lock(&jl_net_lock);
        jl_net_rec *r = jl_rec_find(tl->tid, ids, n);
        pthread_mutex_unlock(&jl_net_lock);
        if (!r)
            return;
        int known = 0;
        for (int i = 0; i < JL_SEEN; i++)
            known |= tl->seen[k][i] == r;
        if (known) {
            tl->gap_ns[k] =
                tl->gap_ns[k] * 2 > JL_REWALK_MAX_NS ? JL_REWALK_MAX_NS : tl->gap_ns[k] * 2;
        } else {
            tl->gap_ns[k] = JL_REWALK_MIN_NS;
            tl->seen[k][tl->seen_next[k]] = r;
            tl->seen_next[k] = (unsigned char)((tl->seen_next[k] + 1) % JL_SEEN);
        }
        tl->rec[k] = r;
        tl->walk_ns[k] = now;
    }
    /* the record is this thread's alone (tid is part of its key) */
    jl_net_rec *r = tl->rec[k];
    __atomic_store_n(&r->w_total, __atomic_load_n(&r->w_total, __ATOMIC_RELAXED) + bytes,
                     __ATOMIC_RELAXED);
}

typedef jint(JNICALL *jl_fn_rw_i)(JNIEnv *, jclass, jobject, jlong, jint);
typedef jlong(JNICALL *jl_fn_rw_j)(JNIEnv *, jclass, jobject, jlong, jint);
typedef jint(JNICALL *jl_fn_recv)(JNIEnv *, jclass, jobject, jlong, jint, jlong, jboolean);
typedef jint(JNICALL *jl_fn_send)(JNIEnv *, jclass, jobject, jlong, jint, jlong, jint);

#define JL_WRAP(N)                                                                                 \
    static jint JNICALL jl_wi##N(JNIEnv *e, jclass c, jobject fd, jlong a, jint l)                 \
    {                                                                                              \
        jint r = ((jl_fn_rw_i)jl_targets[N].orig)(e, c, fd, a, l);                                 \
        if (r > 0)                                                                                 \
            jl_net_count(e, &jl_targets[N], fd, (uint64_t)r);                                      \
        return r;                                                                                  \
    }                                                                                              \
    static jlong JNICALL jl_wj##N(JNIEnv *e, jclass c, jobject fd, jlong a, jint l)                \
    {                                                                                              \
        jlong r = ((jl_fn_rw_j)jl_targets[N].orig)(e, c, fd, a, l);                                \
        if (r > 0)                                                                                 \
            jl_net_count(e, &jl_targets[N], fd, (uint64_t)r);                                      \
        return r;                                                                                  \
    }                                                                                              \
    static jint JNICALL jl_wr##N(JNIEnv *e, jclass c, jobject fd, jlong a, jint l, jlong s,        \
                                 jboolean b)                                                       \
    {                                                                                              \
        jint r = ((jl_fn_recv)jl_targets[N].orig)(e, c, fd, a, l, s, b);                           \
        if (r > 0)                                                                                 \
            jl_net_count(e, &jl_targets[N], fd, (uint64_t)r);                                      \
        return r;                                                                                  \
    }                                                                                              \
    static jint JNICALL jl_ws##N(JNIEnv *e, jclass c, jobject fd, jlong a, jint l, jlong s,        \
                                 jint b)                                                           \
    {                                                                                              \
        jint r = ((jl_fn_send)jl_targets[N].orig)(e, c, fd, a, l, s, b);                           \
        if (r > 0)                                                                                 \
            jl_net_count(e, &jl_targets[N], fd, (uint64_t)r);                                      \
        return r;                                                                                  \
    }

JL_WRAP(0)
JL_WRAP(1)
JL_WRAP(2)
JL_WRAP(3)
JL_WRAP(4)
JL_WRAP(5)
JL_WRAP(6)
JL_WRAP(7)
JL_WRAP(8)
JL_WRAP(9)
JL_WRAP(10)
JL_WRAP(11)
JL_WRAP(12)
JL_WRAP(13)
JL_WRAP(14)
JL_WRAP(15)
JL_WRAP(16)
JL_WRAP(17)

/* The close natives: the fd's cached answer is forgotten before the
 * close and again after it (a read on another thread may have cached it
 * in between). */
enum { JL_CL_FD, JL_CL_INT, JL_CL_THIS, JL_CL_INT_J };
typedef struct jl_close_target {
    const char *cls, *name, *sig;
    int shape;
    void *_Atomic orig;
} jl_close_target;
static jl_close_target jl_close_targets[] = {
    {"Lsun/nio/ch/FileDispatcherImpl;", "close0", "(Ljava/io/FileDescriptor;)V", JL_CL_FD, NULL},
    {"Lsun/nio/ch/FileDispatcherImpl;", "closeIntFD", "(I)V", JL_CL_INT, NULL},
    {"Lsun/nio/ch/UnixDispatcher;", "close0", "(Ljava/io/FileDescriptor;)V", JL_CL_FD, NULL},
    {"Lsun/nio/ch/UnixFileDispatcherImpl;", "closeIntFD", "(I)V", JL_CL_INT, NULL},
    {"Ljava/io/FileDescriptor;", "close0", "()V", JL_CL_THIS, NULL},
    {"Ljava/io/FileCleanable;", "cleanupClose0", "(IJ)V", JL_CL_INT_J, NULL},
};
#define JL_NCLOSE (sizeof(jl_close_targets) / sizeof(jl_close_targets[0]))

typedef void(JNICALL *jl_fn_cl_obj)(JNIEnv *, jobject, jobject);
typedef void(JNICALL *jl_fn_cl_int)(JNIEnv *, jclass, jint);
typedef void(JNICALL *jl_fn_cl_this)(JNIEnv *, jobject);
typedef void(JNICALL *jl_fn_cl_int_j)(JNIEnv *, jclass, jint, jlong);

#define JL_WRAP_CLOSE(N)                                                                           \
    static void JNICALL jl_cf##N(JNIEnv *e, jclass c, jobject fdo)                                 \
    {                                                                                              \
        jint fd = jl_fd_of(e, fdo);                                                                \
        jl_fd_forget(fd);                                                                          \
        ((jl_fn_cl_obj)jl_close_targets[N].orig)(e, c, fdo);                                       \
        jl_fd_forget(fd);                                                                          \
    }                                                                                              \
    static void JNICALL jl_ci##N(JNIEnv *e, jclass c, jint fd)                                     \
    {                                                                                              \
        jl_fd_forget(fd);                                                                          \
        ((jl_fn_cl_int)jl_close_targets[N].orig)(e, c, fd);                                        \
        jl_fd_forget(fd);                                                                          \
    }                                                                                              \
    static void JNICALL jl_ct##N(JNIEnv *e, jobject self)                                          \
    {                                                                                              \
        jint fd = jl_fd_of(e, self);                                                               \
        jl_fd_forget(fd);                                                                          \
        ((jl_fn_cl_this)jl_close_targets[N].orig)(e, self);                                        \
        jl_fd_forget(fd);                                                                          \
    }                                                                                              \
    static void JNICALL jl_cj##N(JNIEnv *e, jclass c, jint fd, jlong h)                            \
    {                                                                                              \
        jl_fd_forget(fd);                                                                          \
        ((jl_fn_cl_int_j)jl_close_targets[N].orig)(e, c, fd, h);                                   \
        jl_fd_forget(fd);                                                                          \
    }

JL_WRAP_CLOSE(0)
JL_WRAP_CLOSE(1)
JL_WRAP_CLOSE(2)
JL_WRAP_CLOSE(3)
JL_WRAP_CLOSE(4)
JL_WRAP_CLOSE(5)

#define JL_CROW(N)                                                                                 \
    {                                                                                              \
        (void *)jl_cf##N, (void *)jl_ci##N, (void *)jl_ct##N, (void *)jl_cj##N                     \
    }
static void *const jl_close_wrappers[][4] = {
    JL_CROW(0), JL_CROW(1), JL_CROW(2), JL_CROW(3), JL_CROW(4), JL_CROW(5),
};
_Static_assert(sizeof(jl_close_wrappers) / sizeof(jl_close_wrappers[0]) == JL_NCLOSE,
               "one wrapper row per close target");

#define JL_ROW(N)                                                                                  \
    {                                                                                              \
        (void *)jl_wi##N, (void *)jl_wj##N, (void *)jl_wr##N, (void *)jl_ws##N                     \
    }
static void *const jl_wrappers[][4] = {
    JL_ROW(0),  JL_ROW(1),  JL_ROW(2),  JL_ROW(3),  JL_ROW(4),  JL_ROW(5),
    JL_ROW(6),  JL_ROW(7),  JL_ROW(8),  JL_ROW(9),  JL_ROW(10), JL_ROW(11),
    JL_ROW(12), JL_ROW(13), JL_ROW(14), JL_ROW(15), JL_ROW(16), JL_ROW(17),
};
_Static_assert(sizeof(jl_wrappers) / sizeof(jl_wrappers[0]) == JL_NTARGETS,
               "one wrapper row per target");

/* Binds wrapper in place of the native at address, which it will call.
 * Two threads may bind the same native at once: the first address wins,
 * both install the wrapper; a rebind of the wrapper itself is left. */
static void jl_install(void *_Atomic *orig, void *wrapper, void *address, void **new_address)
{
    if (address == wrapper)
        return;
    void *expect = NULL;
    if (atomic_compare_exchange_strong(orig, &expect, address) || expect == address)
        *new_address = wrapper;
}

void JNICALL jl_on_native_bind(jvmtiEnv *jvmti, JNIEnv *env, jthread thr, jmethodID method,
                               void *address, void **new_address)
{
    (void)env;
    (void)thr;
    char *name = NULL, *sig = NULL, *csig = NULL;
    jclass klass = NULL;
    if ((*jvmti)->GetMethodName(jvmti, method, &name, &sig, NULL) != JVMTI_ERROR_NONE)
        return;
    int candidate = 0;
    for (size_t i = 0; i < JL_NTARGETS; i++)
        if (!strcmp(jl_targets[i].name, name) && !strcmp(jl_targets[i].sig, sig))
            candidate = 1;
    for (size_t i = 0; i < JL_NCLOSE; i++)
        if (!strcmp(jl_close_targets[i].name, name) && !strcmp(jl_close_targets[i].sig, sig))
            candidate = 1;
    if (candidate && (*jvmti)->GetMethodDeclaringClass(jvmti, method, &klass) == JVMTI_ERROR_NONE &&
        (*jvmti)->GetClassSignature(jvmti, klass, &csig, NULL) == JVMTI_ERROR_NONE) {
        for (size_t i = 0; i < JL_NTARGETS; i++) {
            jl_target *t = &jl_targets[i];
            if (!strcmp(t->cls, csig) && !strcmp(t->name, name) && !strcmp(t->sig, sig)) {
                jl_install(&t->orig, jl_wrappers[i][t->shape], address, new_address);
                break;
            }
        }
        for (size_t i = 0; i < JL_NCLOSE; i++) {
            jl_close_target *t = &jl_close_targets[i];
            if (!strcmp(t->cls, csig) && !strcmp(t->name, name) && !strcmp(t->sig, sig)) {
                jl_install(&t->orig, jl_close_wrappers[i][t->shape], address, new_address);
                break;
            }
        }
    }
    if (klass && env)
        (*env)->DeleteLocalRef(env, klass);
    (*jvmti)->Deallocate(jvmti, (unsigned char *)name);
    (*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
    if (csig)
        (*jvmti)->Deallocate(jvmti, (unsigned char *)csig);
}

size_t jl_net_memory(void)
{
    pthread_mutex_lock(&jl_net_lock);
    size_t b = jl_recs_cap * sizeof(*jl_recs);
    for (size_t i = 0; i < jl_recs_cap; i++)
        if (jl_recs[i])
            b += sizeof(jl_net_rec) + (size_t)jl_recs[i]->n * sizeof(jmethodID);
    pthread_mutex_unlock(&jl_net_lock);
    return b + sizeof(jl_fd_kind);
}

void jl_net_drain(void (*fn)(jl_net_rec *, uint64_t, void *), void *user)
{
    pthread_mutex_lock(&jl_net_lock);
    for (size_t i = 0; i < jl_recs_cap; i++) {
        jl_net_rec *r = jl_recs ? jl_recs[i] : NULL;
        if (!r)
            continue;
        uint64_t t = __atomic_load_n(&r->w_total, __ATOMIC_RELAXED);
        uint64_t b = t - r->w_seen;
        if (!b)
            continue;
        r->w_seen = t;
        r->bytes += b;
        fn(r, b, user);
    }
    pthread_mutex_unlock(&jl_net_lock);
}
