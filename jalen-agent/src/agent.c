/*
 * agent.c - JVMTI entry points, thread events and the agent thread that
 * turns each power window of libpowerapi into thread and method energy.
 *
 * The Jalen equations (DESIGN.md section 6.4), per window:
 *   E_thread = E_process_cpu . cputime_thread / cputime_all_threads
 *   E_method_self = E_thread . samples_on_top / samples_of_thread
 *   E_net_method = E_process_net . bytes_method / bytes_process
 * Threads that are not Java threads keep their energy under pseudo-frames
 * ([GC], [JIT compiler], [VM], [agent]); a Java thread's energy that no
 * sample explains goes to [unattributed].  Nothing is dropped.
 */
#include "attrib.h"
#include "jalen.h"
#include "mxbean.h" /* MXBean hooks (bindings; see mxbean.h) */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "powerapi.h"

#define JL_EXPORT __attribute__((visibility("default")))
#define JL_AGENT_NAME "jalen-agent"
#define JL_SAMPLER_NAME "jalen-sampler" /* mode=jvmti */
#define JL_MXBEAN_NAME "jalen-mxbean"   /* registers the MXBean, then ends */

static jvmtiEnv *jl_jvmti;
static jl_opts jl_o;
static pa_ctx *jl_ctx;
static pid_t jl_pid;
static atomic_int jl_active; /* profiling: events do their work */
static int jl_done;          /* the last window is written (prof lock) */
static int jl_attached;      /* loaded by Agent_OnAttach */
/* set by those threads, read by others */
static atomic_int jl_agent_tid, jl_sampler_tid, jl_mxbean_tid;
static pthread_mutex_t jl_prof_lock = PTHREAD_MUTEX_INITIALIZER;
static double jl_last_window_s;
/* the process's cumulative CPU and network joules (profcore's pa_pcum:
 * each window takes the increase since the last reading) */
static pa_pcum jl_cum_cpu, jl_cum_nic;
static int jl_power_warned;

/* this window's resolved samples: [tid, n, frame...]* */
static int *jl_wbuf;
static size_t jl_wn, jl_wcap;

double jl_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void jl_warn(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "jalen: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

static void jl_thread_name(jvmtiEnv *jvmti, jthread thr, char *out, size_t len)
{
    jvmtiThreadInfo ti;
    memset(&ti, 0, sizeof(ti));
    snprintf(out, len, "[unnamed]");
    if ((*jvmti)->GetThreadInfo(jvmti, thr, &ti) == JVMTI_ERROR_NONE) {
        if (ti.name) {
            snprintf(out, len, "%s", ti.name);
            (*jvmti)->Deallocate(jvmti, (unsigned char *)ti.name);
        }
        /* local references: the agent thread never returns to Java to
         * free them */
        JNIEnv *jni = NULL;
        if ((ti.thread_group || ti.context_class_loader) && jl_smp.vm &&
            (*jl_smp.vm)->GetEnv(jl_smp.vm, (void **)&jni, JNI_VERSION_1_6) == JNI_OK && jni) {
            if (ti.thread_group)
                (*jni)->DeleteLocalRef(jni, ti.thread_group);
            if (ti.context_class_loader)
                (*jni)->DeleteLocalRef(jni, ti.context_class_loader);
        }
    }
    /* kept as the JVM names it: threads.csv quotes it (pa__csv_write) */
}

/* When the kernel started thread tid (CLOCK_BOOTTIME seconds, to the
 * clock tick), or -1. */
static double jl_thread_start_boot_s(pid_t tid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* after the comm's closing parenthesis: state (field 3) ... starttime (22) */
    char *p = strrchr(buf, ')');
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    long hz = sysconf(_SC_CLK_TCK);
    if (!p || hz <= 0)
        return -1;
    return (double)strtoull(p + 1, NULL, 10) / (double)hz;
}

/* Enters a Java thread (lock taken here) and starts its CPU timer.
 * tid 0: the calling thread. */
static void jl_add_java_thread(JNIEnv *jni, jthread thr, pid_t tid, const char *name)
{
    int self = tid == 0;
    if (self)
        tid = jl_gettid();
    int agent = !strcmp(name, JL_AGENT_NAME) || !strcmp(name, JL_SAMPLER_NAME) ||
                !strcmp(name, JL_MXBEAN_NAME);
    struct timespec ts = {0, 0};
    if (self)
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    pthread_mutex_lock(&jl_thr.lock);
    jl_thread *t = jl_threads_get(tid, 1);
    /* The tid of a thread that ended: the kernel gives tids again once it
     * has gone round them (32768 by default; seconds on a host that starts
     * many processes).  A new thread gets a record of its own, or the two
     * would share one row, the first one's name lost.  The same kernel
     * thread attached again (the main thread comes back as "DestroyJavaVM")
     * keeps its record: its CPU clock goes on from where it ended, and it
     * started (kernel start time, 10-ms ticks) before it ended. */
    if (t && self && !t->alive && t->end_cpu_s >= 0 &&
        ((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 < t->end_cpu_s ||
         !(jl_thread_start_boot_s(tid) < t->end_boot_s - 0.02)))
        t = jl_threads_new(tid);
    if (!t) {
        pthread_mutex_unlock(&jl_thr.lock);
        return;
    }
    if (t->has_timer) {
        jl_sampler_timer_delete(t->timer);
        t->has_timer = 0;
    }
    if (t->ref && jni)
        (*jni)->DeleteGlobalRef(jni, t->ref);
    t->ref = NULL;
    /* the main thread comes back as "DestroyJavaVM": keep its first name */
    if (!(t->kind == JL_K_JAVA && t->name[0] && (t->alive || !strcmp(name, "DestroyJavaVM"))))
        snprintf(t->name, sizeof(t->name), "%s", name);
    t->kind = agent ? JL_K_AGENT : JL_K_JAVA;
    t->alive = 1;
    t->final_cpu_s = -1;
    if (!agent) {
        if (jl_o.mode == JL_MODE_CPU) {
            jl_timer tm;
            if (jl_sampler_timer_create(self ? 0 : tid, &tm) == 0) {
                t->timer = tm;
                t->has_timer = 1;
            }
        }
        /* mode=jvmti samples through it; both modes follow renames */
        if (jni && thr)
            t->ref = (*jni)->NewGlobalRef(jni, thr);
    }
    pthread_mutex_unlock(&jl_thr.lock);
}

static void JNICALL jl_on_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr)
{
    if (!atomic_load(&jl_active))
        return;
    char name[64];
    jl_thread_name(jvmti, thr, name, sizeof(name));
    if (jl_o.mode == JL_MODE_CPU)
        jl_unwind_thread_start(jl_gettid());
    jl_add_java_thread(jni, thr, 0, name);
}

/* A Java thread's name now, when Thread.setName changed it since it was
 * read (thr lock held).  The main thread comes back at exit as
 * "DestroyJavaVM": it keeps the name it had. */
static void jl_thread_rename(jvmtiEnv *jvmti, jl_thread *t, jthread thr)
{
    if (t->kind != JL_K_JAVA || !thr)
        return;
    char name[64];
    jl_thread_name(jvmti, thr, name, sizeof(name));
    if (strcmp(name, "[unnamed]") && strcmp(name, "DestroyJavaVM"))
        snprintf(t->name, sizeof(t->name), "%s", name);
}

static void JNICALL jl_on_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr)
{
    if (!atomic_load(&jl_active))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    pid_t tid = jl_gettid();
    pthread_mutex_lock(&jl_thr.lock);
    jl_thread *t = jl_threads_get(tid, 0);
    if (t) {
        /* a thread that ends keeps the name it ended with */
        jl_thread_rename(jvmti, t, thr);
        if (t->has_timer) {
            jl_sampler_timer_delete(t->timer);
            t->has_timer = 0;
        }
        if (t->ref && jni)
            (*jni)->DeleteGlobalRef(jni, t->ref);
        t->ref = NULL;
        t->final_cpu_s = t->end_cpu_s = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
        struct timespec bt;
        clock_gettime(CLOCK_BOOTTIME, &bt);
        t->end_boot_s = (double)bt.tv_sec + (double)bt.tv_nsec * 1e-9;
        t->alive = 0;
    }
    pthread_mutex_unlock(&jl_thr.lock);
}

static int jl_read_comm(pid_t tid, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, out, len - 1);
    close(fd);
    if (n <= 0)
        return -1;
    out[n] = '\0';
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = '\0';
    return 0;
}

/* A thread found running: entered unless it is a Java thread already. */
static void jl_add_known_thread(JNIEnv *jni, jthread thr, pid_t tid, const char *name)
{
    pthread_mutex_lock(&jl_thr.lock);
    jl_thread *t = jl_threads_get(tid, 0);
    int known = t && t->kind == JL_K_JAVA;
    pthread_mutex_unlock(&jl_thr.lock);
    if (!known)
        jl_add_java_thread(jni, thr, tid, name);
}

/* Java threads started before VMInit (or before the agent attached) get
 * no ThreadStart: their tids from the VM's structures, else their names
 * matched against the kernel's comm (15 characters) of /proc/self/task. */
static void jl_find_early_threads(jvmtiEnv *jvmti, JNIEnv *jni, pid_t self)
{
    jint n = 0;
    jthread *ts = NULL;
    if ((*jvmti)->GetAllThreads(jvmti, &n, &ts) != JVMTI_ERROR_NONE)
        return;
    DIR *d = opendir("/proc/self/task");
    pid_t tids[512];
    char comms[512][16];
    int nt = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) && nt < 512) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        pid_t tid = (pid_t)atoi(de->d_name);
        if (tid == self || jl_read_comm(tid, comms[nt], sizeof(comms[nt])) < 0)
            continue;
        tids[nt++] = tid;
    }
    if (d)
        closedir(d);
    for (jint i = 0; i < n; i++) {
        char name[64];
        jl_thread_name(jvmti, ts[i], name, sizeof(name));
        /* the VM's own record of the thread's tid where it exports it
         * (names are cut to 15 characters in comm: "pool-1-thread-1"
         * and "pool-1-thread-10" are one name there) */
        pid_t vtid = 0;
        if (jl_java_thread_tid(jni, ts[i], &vtid) == 0 && vtid != self) {
            for (int k = 0; k < nt; k++)
                if (tids[k] == vtid)
                    tids[k] = 0;
            jl_add_known_thread(jni, ts[i], vtid, name);
            (*jni)->DeleteLocalRef(jni, ts[i]);
            continue;
        }
        for (int k = 0; k < nt; k++) {
            if (tids[k] && !strncmp(comms[k], name, 15) &&
                strlen(comms[k]) == (strlen(name) < 15 ? strlen(name) : 15)) {
                jl_add_known_thread(jni, ts[i], tids[k], name);
                tids[k] = 0;
                break;
            }
        }
        (*jni)->DeleteLocalRef(jni, ts[i]);
    }
    (*jvmti)->Deallocate(jvmti, (unsigned char *)ts);
}

/* ------------------------------------------------------------------ */
/* Classes: jmethodIDs made ahead, so that ASGCT can name every frame  */
/* ------------------------------------------------------------------ */

static void jl_prepare_class(jvmtiEnv *jvmti, JNIEnv *jni, jclass klass)
{
    jl_scope_bind(jvmti, jni, klass);
    jint n = 0;
    jmethodID *ms = NULL;
    if ((*jvmti)->GetClassMethods(jvmti, klass, &n, &ms) == JVMTI_ERROR_NONE && ms)
        (*jvmti)->Deallocate(jvmti, (unsigned char *)ms);
}

static void JNICALL jl_on_class_load(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr, jclass klass)
{
    (void)jvmti;
    (void)jni;
    (void)thr;
    (void)klass;
}

static void JNICALL jl_on_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr, jclass klass)
{
    (void)thr;
    jl_prepare_class(jvmti, jni, klass);
}

static void JNICALL jl_on_compiled_method_load(jvmtiEnv *jvmti, jmethodID method, jint code_size,
                                               const void *code_addr, jint map_length,
                                               const jvmtiAddrLocationMap *map,
                                               const void *compile_info)
{
    (void)jvmti;
    jl_nmethods_load(method, code_addr, code_size, map_length, map, compile_info);
}

static void JNICALL jl_on_compiled_method_unload(jvmtiEnv *jvmti, jmethodID method,
                                                 const void *code_addr)
{
    (void)jvmti;
    (void)method;
    jl_nmethods_unload(code_addr);
}

/* ------------------------------------------------------------------ */
/* Windows                                                             */
/* ------------------------------------------------------------------ */

static int jl_wbuf_push(int v)
{
    if (PA__GROW(jl_wbuf, jl_wcap, jl_wn + 1, 65536) < 0)
        return -1;
    jl_wbuf[jl_wn++] = v;
    return 0;
}

/* samples the agent thread could not store (out of memory): dropped too */
static uint64_t jl_drain_dropped;

static void jl_on_slot(const jl_slot *s, void *user)
{
    (void)user;
    size_t mark = jl_wn;
    int n = s->n;
    /* a sample in a scope: the scope's frame at the root */
    int scope = s->scope ? jl_scope_frame(s->scope) : -1;
    if (jl_wbuf_push(s->tid) < 0 || jl_wbuf_push(s->weight >= 0 ? s->weight : 0) < 0)
        goto fail;
    if (n <= 0) {
        int code = -n;
        if (jl_wbuf_push(1 + (scope >= 0)) < 0 ||
            jl_wbuf_push(code <= 10 ? JL_M_ERR0 + code : JL_M_UNATTRIBUTED) < 0 ||
            (scope >= 0 && jl_wbuf_push(scope) < 0) || jl_wbuf_push(0) < 0 ||
            (scope >= 0 && jl_wbuf_push(0) < 0))
            goto fail;
        return;
    }
    if (n > JL_MAX_DEPTH)
        n = JL_MAX_DEPTH;
    if (jl_wbuf_push(n + (s->truncated ? 1 : 0) + (scope >= 0)) < 0)
        goto fail;
    /* the methods, then their lines (the BCI each frame was at) */
    int lines[JL_MAX_DEPTH];
    for (int i = 0; i < n; i++)
        if (jl_wbuf_push(jl_method_line(jl_jvmti, s->frames[i].method_id, s->frames[i].lineno,
                                        &lines[i])) < 0)
            goto fail;
    if ((s->truncated && jl_wbuf_push(s->truncated == 2   ? JL_M_PARTIAL
                                      : s->truncated == 3 ? JL_M_PARTIAL_PC
                                                          : JL_M_TRUNCATED) < 0) ||
        (scope >= 0 && jl_wbuf_push(scope) < 0))
        goto fail;
    for (int i = 0; i < n; i++)
        if (jl_wbuf_push(lines[i]) < 0)
            goto fail;
    if ((s->truncated && jl_wbuf_push(0) < 0) || (scope >= 0 && jl_wbuf_push(0) < 0))
        goto fail;
    return;
fail:
    jl_wn = mark;
    jl_drain_dropped++;
}

static void jl_drain(int full)
{
    if (jl_o.mode == JL_MODE_CPU)
        jl_unwind_refresh();
    jl_sampler_drain(jl_on_slot, NULL, full);
}

typedef struct jl_netw {
    double nic_j;
    uint64_t total;
} jl_netw;

static void jl_on_net(jl_net_rec *r, uint64_t bytes, void *user)
{
    jl_netw *w = user;
    int frames[JL_MAX_DEPTH + 1];
    int n = 0;
    for (int i = 0; i < r->n && i < JL_MAX_DEPTH; i++)
        frames[n++] = jl_method_of(jl_jvmti, r->frames[i]);
    if (n == 0)
        frames[n++] = JL_M_UNATTRIBUTED;
    double e = jl_attrib_net(w->nic_j, (double)bytes, (double)w->total);
    jl_profile_add(frames, NULL, n, 0.0, e, bytes, 0, 0);
    jl_thread *t = jl_threads_get(r->tid, 1);
    if (t) {
        t->w_net_j += e;
        t->w_net_bytes += bytes;
    }
    jl_prof.net_bytes += bytes;
}

/* The window's net records: collected first, since the byte total of the
 * window must be known before any record is priced. */
typedef struct jl_net_item {
    jl_net_rec *r;
    uint64_t bytes;
} jl_net_item;
static jl_net_item *jl_nitems;
static size_t jl_nn, jl_ncap;

static void jl_on_net_collect(jl_net_rec *r, uint64_t bytes, void *user)
{
    (void)user;
    if (PA__GROW(jl_nitems, jl_ncap, jl_nn + 1, 256) < 0)
        return;
    jl_nitems[jl_nn].r = r;
    jl_nitems[jl_nn].bytes = bytes;
    jl_nn++;
}

/* Prof lock held. */
/* The window's energy of the process (its cumulative joules' increase);
 * the tick's status. */
static int jl_window_power(double now, double interval, double *dcpu, double *dnic)
{
    *dcpu = *dnic = 0;
    int rc = pa_tick(jl_ctx);
    pa_power pw;
    if (rc >= 0 && pa_pid_power(jl_ctx, jl_pid, &pw) == 0) {
        /* the first window with a reading: whatever came before is its own */
        *dcpu = pa_pcum_delta(&jl_cum_cpu, pw.cpu_j);
        *dnic = pa_pcum_delta(&jl_cum_nic, pw.nic_j);
    } else if (rc < 0 && !jl_power_warned && !jl_o.quiet) {
        jl_warn("libpowerapi tick failed (%s): %s", pa_strerror(rc), pa_last_error());
        jl_power_warned = 1;
    }
    /* MXBean (bindings; see mxbean.h): the process's energy this window */
    if (jalen_mxbean_on_window)
        jalen_mxbean_on_window(now, interval, *dcpu + *dnic);
    return rc;
}

/* Each thread's CPU time in the window (thr lock held): the report's, and
 * for threads that ended in it the CPU time procfs could not see. */
static void jl_window_threads(int rc)
{
    /* names set with Thread.setName since the last window */
    for (size_t i = 0; i < jl_thr.n; i++)
        if (jl_thr.v[i].alive && jl_thr.v[i].ref)
            jl_thread_rename(jl_jvmti, &jl_thr.v[i], jl_thr.v[i].ref);
    pa_report *rep = NULL;
    if (rc >= 0 && pa_report_get(jl_ctx, &rep) == 0 && rep) {
        pa_psource_from_report(&jl_prof.source, rep);
        for (size_t i = 0; i < rep->ntargets; i++) {
            const pa_target_info *ti = &rep->targets[i];
            if (ti->type != PA_TARGET_THREAD || ti->pid != jl_pid)
                continue;
            jl_thread *t = jl_threads_get(ti->tid, 1);
            if (!t)
                continue;
            if (!t->name[0]) {
                /* first seen here: not a Java thread we know */
                snprintf(t->name, sizeof(t->name), "%s", ti->comm);
                int ours = ti->tid == jl_agent_tid || ti->tid == jl_sampler_tid ||
                           ti->tid == jl_mxbean_tid;
                t->kind = ours ? JL_K_AGENT : jl_classify_comm(ti->comm);
            }
            double c = ti->power.cpu_time_s;
            if (c > 0) {
                t->w_cpu_s += c;
                t->seen_cpu_s += c;
            }
        }
        pa_report_free(rep);
    }
    for (size_t i = 0; i < jl_thr.n; i++) {
        jl_thread *t = &jl_thr.v[i];
        if (!t->alive && t->final_cpu_s >= 0) {
            double extra = jl_attrib_ended_cpu(t->final_cpu_s, t->seen_cpu_s);
            t->w_cpu_s += extra;
            t->seen_cpu_s += extra;
            t->final_cpu_s = -2; /* counted */
        }
    }
}

/* The fixed frames of jl_attrib_frame's pseudo[] */
static const int jl_pseudo[JL_ATTRIB_NFRAMES] = {-1,      JL_M_GC,    JL_M_JIT,
                                                 JL_M_VM, JL_M_AGENT, JL_M_UNATTRIBUTED};
/* The threads of the window as attrib.c sees them (jl_window_split) */
static jl_attrib_thread *jl_athr;
static size_t jl_athr_cap, jl_athr_n;

/* Each thread's samples in the window (their weights; thr lock held); a
 * thread first seen in a sample is a Java thread. */
static void jl_window_count(void)
{
    for (size_t p = 0; p < jl_wn;) {
        pid_t tid = jl_wbuf[p];
        int wt = jl_wbuf[p + 1], n = jl_wbuf[p + 2];
        jl_thread *t = jl_threads_get(tid, 1);
        if (t) {
            if (!t->name[0]) {
                snprintf(t->name, sizeof(t->name), "[thread %d]", (int)tid);
                t->kind = JL_K_JAVA;
            }
            t->w_samples += wt;
        }
        p += 3 + 2 * (size_t)n;
    }
}

/* E_thread and each thread's frame (attrib.c; thr lock held).  Returns
 * what goes to [VM]. */
static double jl_window_split(double dcpu)
{
    jl_athr_n = 0;
    if (PA__GROW(jl_athr, jl_athr_cap, jl_thr.n + 1, 64) < 0)
        return dcpu; /* out of memory: the window's energy goes to [VM] */
    jl_athr_n = jl_thr.n;
    for (size_t i = 0; i < jl_thr.n; i++)
        jl_athr[i] = (jl_attrib_thread){.kind = jl_thr.v[i].kind,
                                        .cpu_s = jl_thr.v[i].w_cpu_s,
                                        .samples = jl_thr.v[i].w_samples};
    double vm = jl_attrib_window(dcpu, jl_athr, jl_thr.n, jl_pseudo);
    for (size_t i = 0; i < jl_thr.n; i++)
        jl_thr.v[i].w_cpu_j = jl_athr[i].cpu_j;
    return vm;
}

/* A window's energy on the pseudo-thread [VM] (tid -1): what no thread
 * took (cpu_j) or no socket moved (net_j). */
static void jl_window_vm(double cpu_j, double net_j)
{
    int frame = cpu_j > 0 ? JL_M_VM : JL_M_UNATTRIBUTED;
    jl_profile_add(&frame, NULL, 1, cpu_j, net_j, 0, 0, 0);
    jl_thread *t = jl_threads_get(-1, 1);
    if (t) {
        snprintf(t->name, sizeof(t->name), "[VM]");
        t->kind = JL_K_VM;
        t->alive = 0;
        t->w_cpu_j += cpu_j;
        t->w_net_j += net_j;
    }
}

/* E_sample, and the threads' energy that no sample holds on their
 * pseudo-frames (attrib.c; thr lock held, after jl_window_split). */
static void jl_window_samples(double vm)
{
    for (size_t p = 0; p < jl_wn;) {
        pid_t tid = jl_wbuf[p];
        int wt = jl_wbuf[p + 1], n = jl_wbuf[p + 2];
        jl_thread *t = jl_threads_get(tid, 0);
        /* a sample of a thread filed as a pseudo-thread is counted, its
         * energy stays with the pseudo-frame */
        int java = t && t->kind == JL_K_JAVA;
        double w = java ? jl_attrib_sample(t->w_cpu_j, wt, t->w_samples, 1) : 0;
        double c = java ? jl_attrib_sample(t->w_cpu_s, wt, t->w_samples, 1) : 0;
        jl_profile_add(&jl_wbuf[p + 3], &jl_wbuf[p + 3 + n], n, w, 0, 0, c, 1);
        p += 3 + 2 * (size_t)n;
    }
    for (size_t i = 0; i < jl_athr_n; i++) {
        int frame = jl_athr[i].frame;
        if (jl_thr.v[i].w_cpu_j > 0 && frame >= 0)
            jl_profile_add(&frame, NULL, 1, jl_thr.v[i].w_cpu_j, 0, 0, jl_thr.v[i].w_cpu_s, 0);
    }
    if (vm > 0) /* no thread had CPU time in the window (or rounding) */
        jl_window_vm(vm, 0);
}

/* E_net: the window's network energy over the byte records; returns the
 * window's socket bytes. */
static uint64_t jl_window_net(double dnic)
{
    jl_nn = 0;
    jl_net_drain(jl_on_net_collect, NULL);
    jl_netw nw = {.nic_j = dnic, .total = 0};
    for (size_t i = 0; i < jl_nn; i++)
        nw.total += jl_nitems[i].bytes;
    for (size_t i = 0; i < jl_nn; i++)
        jl_on_net(jl_nitems[i].r, jl_nitems[i].bytes, &nw);
    double left = jl_attrib_net_left(dnic, (double)nw.total);
    if (left > 0)
        jl_window_vm(0, left);
    jl_net_new_window();
    return nw.total;
}

/* The threads' totals, the profile's counters and the window's top
 * methods for timeline.csv. */
static void jl_window_close(double now, double interval, double dcpu, double dnic)
{
    for (size_t i = 0; i < jl_thr.n; i++) {
        jl_thread *t = &jl_thr.v[i];
        t->cpu_s += t->w_cpu_s;
        t->cpu_j += t->w_cpu_j;
        t->net_j += t->w_net_j;
        t->energy_j = t->cpu_j + t->net_j;
        t->net_bytes += t->w_net_bytes;
        t->w_cpu_s = t->w_cpu_j = t->w_net_j = 0;
        t->w_net_bytes = 0;
        t->w_samples = 0;
    }
    if (jl_wn == 0 && dcpu > 0)
        jl_prof.windows_empty++; /* its Java energy is [unattributed] */
    jl_wn = 0;
    jl_prof.process_cpu_j += dcpu;
    jl_prof.process_nic_j += dnic;
    jl_prof.process_j = jl_prof.process_cpu_j + jl_prof.process_nic_j;
    jl_prof.unattributed_j = jl_prof.ms[JL_M_UNATTRIBUTED].self_j;
    jl_prof.windows++;
    jl_prof.duration_s = now - jl_prof.start_s;
    /* samples: in the profile; dropped: by the handler (ring full) or here */
    jl_prof.samples = atomic_load(&jl_smp.taken) - jl_drain_dropped;
    jl_prof.samples_dropped = atomic_load(&jl_smp.dropped) + jl_drain_dropped;
    static int top[1000]; /* top=N is at most 1000 (options.c) */
    static double top_j[1000];
    int k = interval > 0 ? (jl_o.top < 1000 ? jl_o.top : 1000) : 0;
    k = pa_pstat_window_top(jl_prof.ms, jl_prof.nm, k, top, top_j);
    for (int i = 0; i < k; i++) {
        if (PA__GROW(jl_prof.tl, jl_prof.captl, jl_prof.ntl + 1, 1024) < 0)
            break;
        jl_prof.tl[jl_prof.ntl].start_s = now - interval - jl_prof.start_s;
        jl_prof.tl[jl_prof.ntl].method = top[i];
        jl_prof.tl[jl_prof.ntl].power_w = top_j[i] / interval;
        jl_prof.ntl++;
    }
}

static void jl_process_window(int final)
{
    double now = jl_now_s();
    double interval = now - jl_last_window_s;
    jl_last_window_s = now;
    double dcpu, dnic;
    int rc = jl_window_power(now, interval, &dcpu, &dnic);
    jl_drain(1);
    pthread_mutex_lock(&jl_thr.lock);
    jl_window_threads(rc);
    jl_window_count();
    double vm = jl_window_split(dcpu);
    jl_window_samples(vm);
    uint64_t bytes = jl_window_net(dnic);
    double cpu_s = 0;
    for (size_t i = 0; i < jl_thr.n; i++)
        cpu_s += jl_thr.v[i].w_cpu_s;
    jl_scopes_window(dcpu, cpu_s, dnic, bytes);
    jl_window_close(now, interval, dcpu, dnic);
    pthread_mutex_unlock(&jl_thr.lock);
    jl_write_all(&jl_o, final);
}

/* ------------------------------------------------------------------ */
/* mode=jvmti: stacks of the running threads, from the sampler thread   */
/* ------------------------------------------------------------------ */

static void jl_jvmti_sample(jvmtiEnv *jvmti)
{
    pthread_mutex_lock(&jl_thr.lock);
    size_t cap = jl_thr.n, n = 0;
    jthread *list = malloc((cap ? cap : 1) * sizeof(jthread));
    pid_t *tids = malloc((cap ? cap : 1) * sizeof(pid_t));
    for (size_t i = 0; list && tids && i < jl_thr.n; i++) {
        jl_thread *t = &jl_thr.v[i];
        if (t->alive && t->kind == JL_K_JAVA && t->ref) {
            list[n] = t->ref;
            tids[n] = t->tid;
            n++;
        }
    }
    jvmtiStackInfo *si = NULL;
    if (n && (*jvmti)->GetThreadListStackTraces(jvmti, (jint)n, list, JL_MAX_DEPTH, &si) ==
                 JVMTI_ERROR_NONE) {
        for (size_t i = 0; i < n; i++) {
            if (!(si[i].state & JVMTI_THREAD_STATE_RUNNABLE) || si[i].frame_count <= 0)
                continue;
            /* a runnable thread may not be running: weigh the sample by the
             * CPU time the thread used since its last one, so that samples
             * stand for CPU time as in mode=cpu */
            struct timespec ts;
            clockid_t clk = (clockid_t)((~(unsigned)tids[i]) << 3) | 6;
            if (clock_gettime(clk, &ts) < 0)
                continue;
            uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
            jl_thread *t = jl_threads_get(tids[i], 0);
            if (!t)
                continue;
            uint64_t d =
                t->jv_cpu_ns && cpu >= t->jv_cpu_ns ? cpu - t->jv_cpu_ns : jl_o.interval_ns;
            t->jv_cpu_ns = cpu;
            /* after a gap (the sampler thread kept off the CPU) the stack
             * seen now says little about the CPU time before it: a sample
             * stands for at most four intervals, and the thread's other
             * samples of the window share the rest */
            if (d > 4 * jl_o.interval_ns)
                d = 4 * jl_o.interval_ns;
            jl_slot *s = jl_slot_claim();
            if (!s)
                continue;
            s->tid = tids[i];
            s->scope = jl_scope_code(tids[i]);
            s->weight = (int)(d / 1000);
            s->n = si[i].frame_count;
            s->truncated = si[i].frame_count >= JL_MAX_DEPTH;
            for (jint k = 0; k < si[i].frame_count; k++) {
                s->frames[k].method_id = si[i].frame_buffer[k].method;
                s->frames[k].lineno = (jint)si[i].frame_buffer[k].location;
            }
            jl_slot_publish(s);
        }
        (*jvmti)->Deallocate(jvmti, (unsigned char *)si);
    }
    pthread_mutex_unlock(&jl_thr.lock);
    free(list);
    free(tids);
}

/* The agent thread sleeps on a condition variable, so that VMDeath can stop
 * it at once: HotSpot's exit waits (up to 300 ms) for threads that are in
 * native code, and a sleeping agent thread is one. */
static pthread_mutex_t jl_sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jl_sleep_cond;
static int jl_stop;          /* sleep lock */
static int jl_agent_running; /* sleep lock: agent threads running */
static int jl_agent_in_java; /* sleep lock: agent threads in Java code (0 or 1:
                              * the MXBean thread registering it) */

/* Returns 1 when asked to stop. */
static int jl_sleep_ns(uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ns / 1000000000ull);
    ts.tv_nsec += (long)(ns % 1000000000ull);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&jl_sleep_lock);
    while (!jl_stop && pthread_cond_timedwait(&jl_sleep_cond, &jl_sleep_lock, &ts) == 0)
        ;
    int stop = jl_stop;
    pthread_mutex_unlock(&jl_sleep_lock);
    return stop;
}

static void jl_agent_exit(void)
{
    pthread_mutex_lock(&jl_sleep_lock);
    jl_agent_running--;
    pthread_cond_broadcast(&jl_sleep_cond);
    pthread_mutex_unlock(&jl_sleep_lock);
}

/* JALEN_BENCH_PAUSE_FILE, NULL when unset or empty (see jl_agent_main) */
static const char *jl_bench_pause_file(void)
{
    const char *f = getenv("JALEN_BENCH_PAUSE_FILE");
    return f && *f ? f : NULL;
}

static void JNICALL jl_agent_main(jvmtiEnv *jvmti, JNIEnv *jni, void *arg)
{
    (void)jvmti;
    (void)jni;
    (void)arg;
    jl_agent_tid = jl_gettid();
    double next_window = jl_now_s() + (double)jl_o.window_ns * 1e-9;
    double next_drain = jl_now_s() + 0.05;
    /* Benchmark hook, not an option: while the file named by
     * JALEN_BENCH_PAUSE_FILE exists, the agent's run-time work stops (no
     * stack samples, no socket counting, no windows; the timers still fire
     * and return at once), so that bench_jalen_toggle.sh can weigh that
     * work against the rest of the agent's cost in one and the same JVM.
     * The window after a pause covers it, with its samples missing. */
    const char *pause_file = jl_bench_pause_file();
    for (;;) {
        if (jl_sleep_ns(50000000ull)) {
            jl_agent_exit();
            return;
        }
        double now = jl_now_s();
        if (now < next_drain && now < next_window)
            continue;
        if (pause_file) {
            int paused = access(pause_file, F_OK) == 0;
            atomic_store_explicit(&jl_smp.paused, paused, memory_order_relaxed);
            if (paused) {
                next_drain = now + 0.05;
                continue;
            }
        }
        pthread_mutex_lock(&jl_prof_lock);
        if (jl_done) {
            pthread_mutex_unlock(&jl_prof_lock);
            jl_agent_exit();
            return;
        }
        if (now >= next_window) {
            jl_process_window(0);
            next_window += (double)jl_o.window_ns * 1e-9;
            if (next_window < now)
                next_window = now + (double)jl_o.window_ns * 1e-9;
        } else {
            jl_drain(0);
        }
        next_drain = now + 0.05;
        pthread_mutex_unlock(&jl_prof_lock);
    }
}

/* MXBean (bindings; see mxbean.h): org.powerapi.jalen:type=Energy,
 * registered on a thread of its own, filed with the agent's threads (its
 * CPU time is the agent's cost), and only once the JVM has run a second:
 * registering starts JMX (~160 ms of CPU alone, several seconds on a loaded
 * host: it loads and runs hundreds of classes), which a short run would pay
 * for nothing.  Not on the agent thread: its windows must stay on time
 * (the MXBean start used to delay them by seconds under load). */
static void JNICALL jl_mxbean_main(jvmtiEnv *jvmti, JNIEnv *jni, void *arg)
{
    (void)arg;
    jl_mxbean_tid = jl_gettid();
    if (jl_sleep_ns(1000000000ull)) {
        jl_agent_exit();
        return;
    }
    /* VMDeath does not wait for a thread in Java code */
    pthread_mutex_lock(&jl_sleep_lock);
    int stop = jl_stop;
    jl_agent_in_java = !stop;
    pthread_mutex_unlock(&jl_sleep_lock);
    if (stop) {
        jl_agent_exit();
        return;
    }
    char mxwhy[256] = "";
    int rc = jalen_mxbean_start(jvmti, jni, NULL, mxwhy, sizeof(mxwhy));
    pthread_mutex_lock(&jl_sleep_lock);
    jl_agent_in_java = 0;
    stop = jl_stop;
    pthread_mutex_unlock(&jl_sleep_lock);
    /* no powerapi.jar is the usual case, not worth a line */
    if (rc < 0 && !jl_o.quiet && !stop && !strstr(mxwhy, "not found"))
        fprintf(stderr, "jalen: %s\n", mxwhy);
    jl_agent_exit();
}

/* mode=jvmti: a thread of its own, so that the agent thread's windows
 * leave no gap in the samples */
static void JNICALL jl_sampler_main(jvmtiEnv *jvmti, JNIEnv *jni, void *arg)
{
    (void)jni;
    (void)arg;
    jl_sampler_tid = jl_gettid();
    while (!jl_sleep_ns(jl_o.interval_ns))
        if (atomic_load(&jl_active) && !atomic_load_explicit(&jl_smp.paused, memory_order_relaxed))
            jl_jvmti_sample(jvmti);
    jl_agent_exit();
}

/* Starts an agent thread (a Java thread running fn in native code). */
static int jl_run_agent_thread(jvmtiEnv *jvmti, JNIEnv *jni, const char *name,
                               jvmtiStartFunction fn)
{
    jclass tc = (*jni)->FindClass(jni, "java/lang/Thread");
    jmethodID ctor = tc ? (*jni)->GetMethodID(jni, tc, "<init>", "(Ljava/lang/String;)V") : NULL;
    jstring nm = ctor ? (*jni)->NewStringUTF(jni, name) : NULL;
    jthread at = nm ? (*jni)->NewObject(jni, tc, ctor, nm) : NULL;
    pthread_mutex_lock(&jl_sleep_lock);
    jl_agent_running++;
    pthread_mutex_unlock(&jl_sleep_lock);
    if (!at || (*jvmti)->RunAgentThread(jvmti, at, fn, NULL, JVMTI_THREAD_NORM_PRIORITY) !=
                   JVMTI_ERROR_NONE) {
        jl_agent_exit();
        (*jni)->ExceptionClear(jni);
        return -1;
    }
    return 0;
}

static void JNICALL jl_on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr)
{
    if (!atomic_load(&jl_active))
        return;
    char name[64];
    jl_thread_name(jvmti, thr, name, sizeof(name));
    if (jl_o.mode == JL_MODE_CPU) {
        jl_unwind_vm_init(jvmti, jni, thr);
        jl_unwind_thread_start(jl_gettid());
    }
    jl_add_java_thread(jni, thr, 0, name);
    jl_find_early_threads(jvmti, jni, jl_gettid());
    jint nc = 0;
    jclass *cs = NULL;
    if ((*jvmti)->GetLoadedClasses(jvmti, &nc, &cs) == JVMTI_ERROR_NONE) {
        /* GetLoadedClasses made nc local references at once (hundreds at
         * VMInit): declared, or -Xcheck:jni warns "JNI local refs: 441,
         * exceeds capacity: 32" at the next JNI call */
        if (nc > 0)
            (void)(*jni)->EnsureLocalCapacity(jni, nc);
        for (jint i = 0; i < nc; i++) {
            jl_prepare_class(jvmti, jni, cs[i]);
            (*jni)->DeleteLocalRef(jni, cs[i]);
        }
        (*jvmti)->Deallocate(jvmti, (unsigned char *)cs);
    }
    const char *pause_file = jl_bench_pause_file();
    if (pause_file && access(pause_file, F_OK) == 0)
        atomic_store(&jl_smp.paused, 1);
    atomic_store(&jl_smp.on, 1);
    static int cond_made; /* once: a later run in this JVM reuses it */
    if (!cond_made) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&jl_sleep_cond, &ca);
        pthread_condattr_destroy(&ca);
        cond_made = 1;
    }
    if (jl_run_agent_thread(jvmti, jni, JL_AGENT_NAME, jl_agent_main) < 0)
        fprintf(stderr, "jalen: cannot start the agent thread; files are written at exit only\n");
    if (jl_o.mode == JL_MODE_JVMTI &&
        jl_run_agent_thread(jvmti, jni, JL_SAMPLER_NAME, jl_sampler_main) < 0)
        fprintf(stderr, "jalen: cannot start the sampler thread; no stack samples (mode=jvmti)\n");
    /* registered once per JVM: a later run's windows reach it as well */
    static int mxbean_started;
    if (jalen_mxbean_start && !mxbean_started) {
        mxbean_started = 1;
        if (jl_run_agent_thread(jvmti, jni, JL_MXBEAN_NAME, jl_mxbean_main) < 0 && !jl_o.quiet)
            fprintf(stderr, "jalen: cannot start the MXBean's thread; no MXBean\n");
    }
}

static void jl_stop_timers(void)
{
    pthread_mutex_lock(&jl_thr.lock);
    for (size_t i = 0; i < jl_thr.n; i++) {
        if (jl_thr.v[i].has_timer) {
            jl_sampler_timer_delete(jl_thr.v[i].timer);
            jl_thr.v[i].has_timer = 0;
        }
    }
    pthread_mutex_unlock(&jl_thr.lock);
}

/* The end of a run: timers and agent threads stopped, the last window
 * written with complete=true, the closing summary on f (NULL: none). */
static void jl_finish(FILE *f)
{
    atomic_store(&jl_smp.on, 0);
    jl_stop_timers();
    /* stop the agent thread (it may be in a window: let it finish) */
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 2;
    pthread_mutex_lock(&jl_sleep_lock);
    jl_stop = 1;
    pthread_cond_broadcast(&jl_sleep_cond);
    while (jl_agent_running > jl_agent_in_java &&
           pthread_cond_timedwait(&jl_sleep_cond, &jl_sleep_lock, &until) == 0)
        ;
    pthread_mutex_unlock(&jl_sleep_lock);
    pthread_mutex_lock(&jl_prof_lock);
    if (!jl_done) {
        jl_process_window(1);
        jl_done = 1;
        if (f)
            jl_print_summary(&jl_o, f);
    }
    pthread_mutex_unlock(&jl_prof_lock);
    atomic_store(&jl_active, 0);
}

static void JNICALL jl_on_vm_death(jvmtiEnv *jvmti, JNIEnv *jni)
{
    (void)jvmti;
    (void)jni;
    if (!atomic_load(&jl_active))
        return;
    jl_finish(jl_o.quiet ? NULL : stderr);
}

/* ------------------------------------------------------------------ */
/* Attached (attach.c): stop, dump, status                             */
/* ------------------------------------------------------------------ */

static void jl_events_mode(jvmtiEventMode mode);

int jl_agent_active(void)
{
    return atomic_load(&jl_active);
}

int jl_agent_ran(void)
{
    return jl_jvmti != NULL;
}

void jl_agent_stop(FILE *f)
{
    if (!atomic_load(&jl_active))
        return;
    jl_finish(f);
    /* the JVM as it was: no event reaches the agent, no timer fires (the
     * signal handler stays installed, with nothing to wake it) */
    jl_events_mode(JVMTI_DISABLE);
    if (jl_o.mode == JL_MODE_CPU)
        (*jl_jvmti)->SetEventNotificationMode(jl_jvmti, JVMTI_DISABLE,
                                              JVMTI_EVENT_DYNAMIC_CODE_GENERATED, NULL);
}

int jl_agent_dump(FILE *f)
{
    pthread_mutex_lock(&jl_prof_lock);
    int rc = -ESRCH;
    if (!jl_done && atomic_load(&jl_active)) {
        jl_process_window(0);
        rc = 0;
        if (f)
            jl_print_summary(&jl_o, f);
    }
    pthread_mutex_unlock(&jl_prof_lock);
    return rc;
}

void jl_agent_status(FILE *f)
{
    pthread_mutex_lock(&jl_prof_lock);
    fprintf(f,
            "jalen: profiling pid %d for %.1f s (mode=%s, interval %.3f ms, %s), %llu samples, "
            "process energy %.3f J; files in %s/\n",
            (int)jl_pid, jl_now_s() - jl_prof.start_s, jl_o.mode == JL_MODE_CPU ? "cpu" : "jvmti",
            (double)jl_o.interval_ns * 1e-6, jl_attached ? "attached" : "loaded at launch",
            (unsigned long long)(atomic_load(&jl_smp.taken) - jl_drain_dropped), jl_prof.process_j,
            jl_o.out);
    pthread_mutex_unlock(&jl_prof_lock);
}

const char *jl_agent_out(void)
{
    return jl_o.out;
}

/* ------------------------------------------------------------------ */
/* Loading                                                             */
/* ------------------------------------------------------------------ */

int jl_mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static int jl_power_start(char *err, size_t errlen)
{
    pa_ctx_opts co;
    memset(&co, 0, sizeof(co));
    co.procfs = jl_o.procfs;
    co.sysfs = jl_o.sysfs;
    int rc = pa_ctx_new(&jl_ctx, &co);
    if (rc < 0) {
        snprintf(err, errlen, "libpowerapi: %s",
                 pa_last_error()[0] ? pa_last_error() : pa_strerror(rc));
        return rc;
    }
    /* sensors=a+b, formula=x+y, disable=z; "name:k=v;k=v" passes module
     * options.  The library's rule, as for powerapi monitor's --sensor,
     * --formula and --disable: a formula brings the sensors it requires,
     * "auto" fills at the first tick every component no formula given
     * covers, and leaves out what disable= names (disable=auto: nothing
     * but the modules given). */
    const char *lists[3] = {jl_o.sensors, jl_o.formula, jl_o.disable};
    static const char *const keys[3] = {"sensors", "formula", "disable"};
    for (int l = 0; l < 3; l++) {
        if (!lists[l])
            continue;
        char *dup = strdup(lists[l]), *save = NULL;
        if (!dup)
            return -ENOMEM;
        for (char *t = strtok_r(dup, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
            char *mopts = strchr(t, ':');
            if (mopts) {
                *mopts++ = '\0';
                for (char *c = mopts; *c; c++)
                    if (*c == ';')
                        *c = ',';
            }
            if (l == 2 && mopts) {
                snprintf(err, errlen, "bad value '%s:%s' for 'disable': module names only", t,
                         mopts);
                free(dup);
                return -EINVAL;
            }
            rc = l == 2 ? pa_module_disable(jl_ctx, t) : pa_module_enable(jl_ctx, t, mopts);
            if (rc < 0) {
                snprintf(err, errlen, "bad value '%s' for '%s': %s", t, keys[l],
                         pa_last_error()[0] ? pa_last_error() : pa_strerror(rc));
                free(dup);
                return rc;
            }
        }
        free(dup);
    }
    rc = pa_watch_pid(jl_ctx, jl_pid, PA_WATCH_THREADS);
    if (rc < 0) {
        snprintf(err, errlen, "libpowerapi cannot watch pid %d: %s", (int)jl_pid,
                 pa_last_error()[0] ? pa_last_error() : pa_strerror(rc));
        return rc;
    }
    /* first tick primes the readings: the first window starts here */
    rc = pa_tick(jl_ctx);
    if (rc < 0 && rc != -ENODATA) {
        snprintf(err, errlen, "libpowerapi: first tick failed: %s",
                 pa_last_error()[0] ? pa_last_error() : pa_strerror(rc));
        return rc;
    }
    return 0;
}

/* JVMTI set-up: the environment, capabilities, callbacks and events. */
static int jl_jvmti_setup(JavaVM *vm, char *err, size_t errlen)
{
    if ((*vm)->GetEnv(vm, (void **)&jl_jvmti, JVMTI_VERSION_1_2) != JNI_OK) {
        snprintf(err, errlen, "JVMTI 1.2 is not available in this JVM");
        return -ENOTSUP;
    }
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof(caps));
    caps.can_get_line_numbers = 1;
    caps.can_get_source_file_name = 1;
    caps.can_generate_compiled_method_load_events = 1;
    if (jl_o.net)
        caps.can_generate_native_method_bind_events = 1;
    if ((*jl_jvmti)->AddCapabilities(jl_jvmti, &caps) != JVMTI_ERROR_NONE) {
        snprintf(err, errlen, "the JVM refused the JVMTI capabilities jalen needs");
        return -ENOTSUP;
    }
    return 0;
}

static const jvmtiEvent jl_events[] = {JVMTI_EVENT_VM_INIT,
                                       JVMTI_EVENT_VM_DEATH,
                                       JVMTI_EVENT_THREAD_START,
                                       JVMTI_EVENT_THREAD_END,
                                       JVMTI_EVENT_CLASS_LOAD,
                                       JVMTI_EVENT_CLASS_PREPARE,
                                       JVMTI_EVENT_COMPILED_METHOD_LOAD,
                                       JVMTI_EVENT_COMPILED_METHOD_UNLOAD,
                                       JVMTI_EVENT_NATIVE_METHOD_BIND};

static void jl_events_mode(jvmtiEventMode mode)
{
    size_t nev = sizeof(jl_events) / sizeof(jl_events[0]) - (jl_o.net ? 0 : 1);
    for (size_t i = 0; i < nev; i++)
        (*jl_jvmti)->SetEventNotificationMode(jl_jvmti, mode, jl_events[i], NULL);
}

static int jl_callbacks(char *err, size_t errlen)
{
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof(cb));
    cb.VMInit = jl_on_vm_init;
    cb.VMDeath = jl_on_vm_death;
    cb.ThreadStart = jl_on_thread_start;
    cb.ThreadEnd = jl_on_thread_end;
    cb.ClassLoad = jl_on_class_load;
    cb.ClassPrepare = jl_on_class_prepare;
    cb.CompiledMethodLoad = jl_on_compiled_method_load;
    cb.CompiledMethodUnload = jl_on_compiled_method_unload;
    if (jl_o.net)
        cb.NativeMethodBind = jl_on_native_bind;
    /* without it, a failed walk keeps its pseudo-frame as before */
    if (jl_o.mode == JL_MODE_CPU && jl_unwind_init(jl_jvmti, &cb) < 0 && !jl_o.quiet)
        fprintf(stderr, "jalen: this JVM's code cache is not found (gHotSpotVMStructs): "
                        "samples in stubs stay under [unknown Java]\n");
    if ((*jl_jvmti)->SetEventCallbacks(jl_jvmti, &cb, sizeof(cb)) != JVMTI_ERROR_NONE) {
        snprintf(err, errlen, "cannot set the JVMTI callbacks");
        return -ENOTSUP;
    }
    return 0;
}

/* A JVM that is already running (Agent_OnAttach): what VMInit does, done
 * now on the attaching thread, and the methods compiled before now
 * replayed for the record table (nmethods.c). */
static int jl_go_live(JavaVM *vm, char *err, size_t errlen)
{
    JNIEnv *jni = NULL;
    jthread self = NULL;
    if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_6) != JNI_OK || !jni ||
        (*jl_jvmti)->GetCurrentThread(jl_jvmti, &self) != JVMTI_ERROR_NONE) {
        snprintf(err, errlen, "the attaching thread has no JNI environment");
        return -ENOTSUP;
    }
    jl_on_vm_init(jl_jvmti, jni, self);
    if (self)
        (*jni)->DeleteLocalRef(jni, self);
    if (jl_o.mode == JL_MODE_CPU)
        (*jl_jvmti)->GenerateEvents(jl_jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
    return 0;
}

static void jl_on_net_ignore(jl_net_rec *r, uint64_t bytes, void *user)
{
    (void)r;
    (void)bytes;
    (void)user;
}

/* A run ended in this JVM (stop) and a new one starts (options o, taken
 * over): what the last run accumulated goes, the JVM-wide tables stay (the
 * methods and classes named, compiled code and stubs, the JVMTI
 * environment and its capabilities, the sample ring, the MXBean).  The
 * threads are found again as at attach.  -EBUSY (o left to the caller)
 * while an agent thread of the last run has not ended. */
static int jl_run_reset(JavaVM *vm, jl_opts *o, char *err, size_t errlen)
{
    pthread_mutex_lock(&jl_sleep_lock);
    int busy = jl_agent_running > jl_agent_in_java;
    if (!busy)
        jl_stop = 0;
    pthread_mutex_unlock(&jl_sleep_lock);
    if (busy) {
        snprintf(err, errlen,
                 "the last run's agent thread has not ended yet; start again in a "
                 "second");
        return -EBUSY;
    }
    jl_opts_free(&jl_o);
    jl_o = *o;
    JNIEnv *jni = NULL;
    if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_6) != JNI_OK)
        jni = NULL;
    pthread_mutex_lock(&jl_thr.lock);
    for (size_t i = 0; i < jl_thr.n; i++) {
        if (jl_thr.v[i].has_timer)
            jl_sampler_timer_delete(jl_thr.v[i].timer);
        if (jl_thr.v[i].ref && jni)
            (*jni)->DeleteGlobalRef(jni, jl_thr.v[i].ref);
    }
    jl_thr.n = 0;
    if (jl_thr.hash)
        memset(jl_thr.hash, 0, jl_thr.hcap * sizeof(*jl_thr.hash));
    pthread_mutex_unlock(&jl_thr.lock);
    pthread_mutex_lock(&jl_prof_lock);
    jl_profile_reset(&jl_o);
    jl_write_reset();
    jl_done = 0;
    jl_wn = 0;
    jl_drain_dropped = 0;
    pthread_mutex_unlock(&jl_prof_lock);
    jl_net_drain(jl_on_net_ignore, NULL); /* bytes moved between the runs */
    pa_ctx_free(jl_ctx);
    jl_ctx = NULL;
    memset(&jl_cum_cpu, 0, sizeof(jl_cum_cpu));
    memset(&jl_cum_nic, 0, sizeof(jl_cum_nic));
    jl_power_warned = 0;
    atomic_store(&jl_agent_tid, 0);
    atomic_store(&jl_sampler_tid, 0);
    return 0;
}

/* The options of a run: parsed into jl_o at the first one (the JVMTI
 * environment made then), and for a later run in the same JVM (start
 * after stop) parsed apart, checked, and taken over by jl_run_reset. */
static int jl_run_options(JavaVM *vm, const char *options, char *err, size_t errlen)
{
    jl_opts o;
    int again = jl_jvmti != NULL;
    int rc = jl_opts_parse(options, jl_pid, again ? &o : &jl_o, err, errlen);
    jl_opts *po = again ? &o : &jl_o;
    if (rc == 0 && !again)
        rc = jl_jvmti_setup(vm, err, errlen);
    if (rc == 0 && jl_mkdirs(po->out) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot create the output folder '%s': %s", po->out, strerror(errno));
    }
    if (rc == 0 && again)
        rc = jl_run_reset(vm, &o, err, errlen);
    else if (rc == 0 && jl_profile_init(&jl_o) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    if (rc < 0 && again)
        jl_opts_free(&o);
    return rc;
}

int jl_agent_load(JavaVM *vm, const char *options, int live, char *err, size_t errlen)
{
    jl_pid = getpid();
    jl_prof.start_s = jl_last_window_s = jl_now_s();
    int rc = jl_run_options(vm, options, err, errlen);
    if (rc < 0)
        return rc;
    jl_scopes_init(jl_o.scopes, jl_o.quiet);
    jl_prof.source.carbon_g_per_kwh = jl_o.carbon_g_per_kwh; /* the writers' grams */
    rc = jl_sampler_init(vm, jl_o.interval_ns, jl_o.mode, jl_o.clock, err, errlen);
    if (rc == -ENOSYS) {
        /* a JVM without AsyncGetCallTrace: the JVMTI mode still works */
        fprintf(stderr, "jalen: %s; falling back to mode=jvmti\n", err);
        jl_o.mode = JL_MODE_JVMTI;
        rc = 0;
    }
    if (rc < 0 || (rc = jl_power_start(err, errlen)) < 0)
        return rc;
    jl_net_init(jl_jvmti);
    if ((rc = jl_callbacks(err, errlen)) < 0)
        return rc;
    jl_events_mode(JVMTI_ENABLE);
    atomic_store(&jl_active, 1);
    jl_attached = live;
    return live ? jl_go_live(vm, err, errlen) : 0;
}

JL_EXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
    (void)reserved;
    char err[512] = "";
    if (jl_agent_load(vm, options, 0, err, sizeof(err)) == 0)
        return JNI_OK;
    fprintf(stderr, "jalen: %s; %s\n", err,
            jl_o.fail_abort ? "aborting (fail=abort)" : "the JVM runs on without profiling");
    if (jl_ctx) {
        pa_ctx_free(jl_ctx);
        jl_ctx = NULL;
    }
    return jl_o.fail_abort ? JNI_ERR : JNI_OK;
}

JL_EXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
    (void)vm;
}

/* ------------------------------------------------------------------ */
/* MXBean hooks (bindings; see mxbean.h): mxbean.c copies jl_prof and  */
/* jl_thr under the profile lock.                                      */
/* ------------------------------------------------------------------ */

void jalen_live_lock(void)
{
    pthread_mutex_lock(&jl_prof_lock);
}

void jalen_live_unlock(void)
{
    pthread_mutex_unlock(&jl_prof_lock);
}
