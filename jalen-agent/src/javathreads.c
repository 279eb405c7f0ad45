/*
 * javathreads.c - the JVM's Java threads in the thread table (threads.c):
 * entered at ThreadStart with their sample clock (sampler.c) and, in both
 * modes, a global reference; their names followed (Thread.setName);
 * their CPU time kept at ThreadEnd; those that started before the agent
 * found at VMInit or attach (DESIGN.md section 11, "Threads" and "Thread
 * names").
 */
#include "jalen.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* A thread's sample clock deleted and its reference freed (jni NULL:
 * the reference forgotten); thr lock held. */
static void jl_thread_release(JNIEnv *jni, jl_thread *t)
{
    if (t->has_timer) {
        jl_sampler_timer_delete(t->timer);
        t->has_timer = 0;
    }
    if (t->ref && jni)
        (*jni)->DeleteGlobalRef(jni, t->ref);
    t->ref = NULL;
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
    jl_thread_release(jni, t);
    /* the main thread comes back as "DestroyJavaVM": keep its first name */
    if (!(t->kind == JL_K_JAVA && t->name[0] && (t->alive || !strcmp(name, "DestroyJavaVM"))))
        snprintf(t->name, sizeof(t->name), "%s", name);
    t->kind = agent ? JL_K_AGENT : JL_K_JAVA;
    t->alive = 1;
    t->final_cpu_s = -1;
    if (!agent) {
        if (jl_run.o.mode == JL_MODE_CPU) {
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

/* The calling thread, thr, entered with its stack's bounds (unwind.c) */
static void jl_add_current_thread(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr)
{
    char name[64];
    jl_thread_name(jvmti, thr, name, sizeof(name));
    if (jl_run.o.mode == JL_MODE_CPU)
        jl_unwind_thread_start(jl_gettid());
    jl_add_java_thread(jni, thr, 0, name);
}

void JNICALL jl_on_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr)
{
    if (atomic_load(&jl_run.active))
        jl_add_current_thread(jvmti, jni, thr);
}

/* The main thread comes back at exit as "DestroyJavaVM": it keeps the
 * name it had. */
void jl_java_thread_rename(jvmtiEnv *jvmti, jl_thread *t, jthread thr)
{
    if (t->kind != JL_K_JAVA || !thr)
        return;
    char name[64];
    jl_thread_name(jvmti, thr, name, sizeof(name));
    if (strcmp(name, "[unnamed]") && strcmp(name, "DestroyJavaVM"))
        snprintf(t->name, sizeof(t->name), "%s", name);
}

void JNICALL jl_on_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr)
{
    if (!atomic_load(&jl_run.active))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    pid_t tid = jl_gettid();
    pthread_mutex_lock(&jl_thr.lock);
    jl_thread *t = jl_threads_get(tid, 0);
    if (t) {
        /* a thread that ends keeps the name it ended with */
        jl_java_thread_rename(jvmti, t, thr);
        jl_thread_release(jni, t);
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

void jl_java_threads_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr)
{
    jl_add_current_thread(jvmti, jni, thr);
    jl_find_early_threads(jvmti, jni, jl_gettid());
}

void jl_java_threads_stop_timers(void)
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

void jl_java_threads_clear(JNIEnv *jni)
{
    pthread_mutex_lock(&jl_thr.lock);
    for (size_t i = 0; i < jl_thr.n; i++)
        jl_thread_release(jni, &jl_thr.v[i]);
    jl_thr.n = 0;
    if (jl_thr.hash)
        memset(jl_thr.hash, 0, jl_thr.hcap * sizeof(*jl_thr.hash));
    pthread_mutex_unlock(&jl_thr.lock);
}
