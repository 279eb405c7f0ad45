/*
 * agentthreads.c - the agent's own Java threads, filed as [agent]: the
 * agent thread (drains the ring every 50 ms and closes a window every
 * window=), the mode=jvmti sampler's thread, and the MXBean's (registers
 * it, then ends); their start at VMInit and their stop at the end of a
 * run (DESIGN.md section 11).
 */
#include "jalen.h"
#include "mxbean.h" /* MXBean (bindings; see mxbean.h) */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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
    jl_run.agent_tid = jl_gettid();
    double next_window = jl_now_s() + (double)jl_run.o.window_ns * 1e-9;
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
        pthread_mutex_lock(&jl_run.prof_lock);
        if (jl_run.done) {
            pthread_mutex_unlock(&jl_run.prof_lock);
            jl_agent_exit();
            return;
        }
        if (now >= next_window) {
            jl_process_window(0);
            next_window += (double)jl_run.o.window_ns * 1e-9;
            if (next_window < now)
                next_window = now + (double)jl_run.o.window_ns * 1e-9;
        } else {
            jl_drain();
        }
        next_drain = now + 0.05;
        pthread_mutex_unlock(&jl_run.prof_lock);
    }
}

/* What the MXBean's snapshots need of the agent: its profile lock. */
static void jl_prof_lock_take(void)
{
    pthread_mutex_lock(&jl_run.prof_lock);
}

static void jl_prof_lock_give(void)
{
    pthread_mutex_unlock(&jl_run.prof_lock);
}

static const jalen_mxbean_hooks jl_mxbean_hooks = {.lock = jl_prof_lock_take,
                                                   .unlock = jl_prof_lock_give};

/* MXBean (bindings; see mxbean.h): org.powerapi.jalen:type=Energy,
 * registered on a thread of its own, filed with the agent's threads (its
 * CPU time is the agent's cost), once the JVM has run a second and its
 * management is in use (jalen_mxbean_wanted, looked at five times a
 * second): registering starts JMX (~160 ms of CPU alone and 10 MiB,
 * several seconds on a loaded host: it loads and runs hundreds of
 * classes), which a short run, or one that never uses JMX, would pay for
 * nothing.  Not on the agent thread: its windows must stay on time (the
 * MXBean start used to delay them by seconds under load). */
static void JNICALL jl_mxbean_main(jvmtiEnv *jvmti, JNIEnv *jni, void *arg)
{
    (void)arg;
    jl_run.mxbean_tid = jl_gettid();
    int stopped = jl_sleep_ns(1000000000ull);
    while (!stopped && !jalen_mxbean_wanted())
        stopped = jl_sleep_ns(200000000ull);
    if (stopped) {
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
    int rc = jalen_mxbean_start(jvmti, jni, &jl_mxbean_hooks, NULL, mxwhy, sizeof(mxwhy));
    pthread_mutex_lock(&jl_sleep_lock);
    jl_agent_in_java = 0;
    stop = jl_stop;
    pthread_mutex_unlock(&jl_sleep_lock);
    /* no powerapi.jar is the usual case, not worth a line */
    if (rc < 0 && !jl_run.o.quiet && !stop && !strstr(mxwhy, "not found"))
        fprintf(stderr, "jalen: %s\n", mxwhy);
    jl_agent_exit();
}

/* mode=jvmti: a thread of its own, so that the agent thread's windows
 * leave no gap in the samples */
static void JNICALL jl_sampler_main(jvmtiEnv *jvmti, JNIEnv *jni, void *arg)
{
    (void)jni;
    (void)arg;
    jl_run.sampler_tid = jl_gettid();
    while (!jl_sleep_ns(jl_run.o.interval_ns))
        if (atomic_load(&jl_run.active) &&
            !atomic_load_explicit(&jl_smp.paused, memory_order_relaxed))
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

void jl_agent_threads_start(jvmtiEnv *jvmti, JNIEnv *jni)
{
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
    if (jl_run.o.mode == JL_MODE_JVMTI &&
        jl_run_agent_thread(jvmti, jni, JL_SAMPLER_NAME, jl_sampler_main) < 0)
        fprintf(stderr, "jalen: cannot start the sampler thread; no stack samples (mode=jvmti)\n");
    /* registered once per JVM: a later run's windows reach it as well */
    static int mxbean_started;
    if (!mxbean_started) {
        mxbean_started = 1;
        if (jl_run_agent_thread(jvmti, jni, JL_MXBEAN_NAME, jl_mxbean_main) < 0 && !jl_run.o.quiet)
            fprintf(stderr, "jalen: cannot start the MXBean's thread; no MXBean\n");
    }
}

void jl_agent_finish(FILE *f)
{
    atomic_store(&jl_smp.on, 0);
    jl_java_threads_stop_timers();
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
    pthread_mutex_lock(&jl_run.prof_lock);
    if (!jl_run.done) {
        jl_process_window(1);
        jl_run.done = 1;
        jl_trace_finish();
        if (f)
            jl_print_summary(&jl_run.o, f);
    }
    pthread_mutex_unlock(&jl_run.prof_lock);
    atomic_store(&jl_run.active, 0);
    jl_scopes_set_active(0);
}

int jl_agent_threads_rearm(void)
{
    pthread_mutex_lock(&jl_sleep_lock);
    int busy = jl_agent_running > jl_agent_in_java;
    if (!busy)
        jl_stop = 0;
    pthread_mutex_unlock(&jl_sleep_lock);
    if (busy)
        return -EBUSY;
    atomic_store(&jl_run.agent_tid, 0);
    atomic_store(&jl_run.sampler_tid, 0);
    return 0;
}
