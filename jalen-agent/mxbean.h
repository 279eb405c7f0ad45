/*
 * mxbean.h - the agent's live results as the MXBean
 * org.powerapi.jalen:type=Energy (owned by the bindings; see
 * bindings/java/src/org/powerapi/jalen/).
 *
 * Two halves:
 *
 * 1. jalen_live_get / jalen_live_free: IMPLEMENTED BY THE AGENT (any file
 *    of jalen-agent/ but mxbean.c).  A consistent copy of the current
 *    results, taken under the agent's lock; everything in it (strings
 *    included) is owned by the copy and released by jalen_live_free.
 *    Both are declared weak here: while the agent does not define them the
 *    MXBean is simply not registered.
 *
 * 2. jalen_mxbean_start: IMPLEMENTED IN mxbean.c.  The agent calls it once
 *    from its VMInit callback (any thread that has a JNIEnv).  It appends
 *    powerapi.jar to the bootstrap class path (AddToBootstrapClassLoaderSearch),
 *    binds the natives of org.powerapi.jalen.Energy (RegisterNatives, so
 *    no symbol lookup is involved) and registers the MXBean in the platform
 *    MBean server.  It never aborts the JVM: on failure it returns a
 *    negative errno and writes why into why[] (the agent may print it once).
 *    jar: powerapi.jar's path (agent option mxbean=PATH), or NULL to look
 *    for it in $JALEN_MXBEAN_JAR, next to libjalen.so, in
 *    ../bindings/java/ (build tree) and ../share/java/ (installed).
 */
#ifndef JALEN_MXBEAN_H
#define JALEN_MXBEAN_H

#include <jni.h>
#include <jvmti.h>
#include <stddef.h>
#include <stdint.h>

/* One method (package.Class.method, as in methods.csv). */
typedef struct jalen_live_method {
    char *name;
    double self_energy_j;  /* since start */
    double total_energy_j; /* since start, method anywhere on the stack */
    double cpu_energy_j, net_energy_j;
    double window_power_w; /* self power in the last window */
    uint64_t self_samples, total_samples, net_bytes;
} jalen_live_method;

/* One thread (pseudo-threads [GC], [JIT compiler], [VM] included). */
typedef struct jalen_live_thread {
    long tid;
    char *name;
    double cpu_time_s;     /* since start */
    double energy_j;       /* since start */
    double cpu_energy_j, net_energy_j;
    double window_power_w; /* last window */
    uint64_t net_bytes;
} jalen_live_thread;

/* One closed power window. */
typedef struct jalen_live_window {
    double start_s;    /* since the agent started */
    double duration_s;
    double power_w;    /* process power over the window */
    double energy_j;
} jalen_live_window;

typedef struct jalen_live {
    double uptime_s;            /* since the agent started */
    double process_power_w;     /* last window */
    double process_energy_j;    /* since start */
    double attributed_j, unattributed_j;
    uint64_t windows, samples, dropped;
    char *formula;              /* "cpu-tdp", "rapl-share" ... */
    char *mode;                 /* sampling mode of the agent */
    size_t nmethods;            /* sorted by self energy, descending */
    jalen_live_method *methods;
    size_t nthreads;            /* sorted by energy, descending */
    jalen_live_thread *threads;
    size_t nwindows;            /* most recent last */
    jalen_live_window *recent;
} jalen_live;

/* Copies the live results: at most top methods and top threads (0: all),
 * and the most recent windows (up to 60).  Returns 0, -ENODATA before the
 * first window, or -ENOMEM.  Thread-safe. */
int jalen_live_get(jalen_live **out, size_t top) __attribute__((weak));
/* Frees a copy; NULL is a no-op. */
void jalen_live_free(jalen_live *l) __attribute__((weak));

int jalen_mxbean_start(jvmtiEnv *jvmti, JNIEnv *jni, const char *jar,
                       char *why, size_t why_len);

#endif /* JALEN_MXBEAN_H */
