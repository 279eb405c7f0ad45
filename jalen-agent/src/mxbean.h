/*
 * mxbean.h - the agent's live results as the MXBean
 * org.powerapi.jalen:type=Energy.
 *
 * mxbean.c (owned by the bindings) implements everything declared here; the
 * Java side is bindings/java/src/org/powerapi/jalen/ (in powerapi.jar).
 * The agent calls it at two points, and hands it what it needs of the
 * agent (collectd's way: at registration, never a symbol of the agent's
 * files that mxbean.c would call back into):
 *
 *   - jalen_mxbean_start(jvmti, jni, &hooks, NULL, why, len) on an agent
 *     thread of its own ("jalen-mxbean", agentthreads.c), a second after
 *     VMInit at the earliest and once jalen_mxbean_wanted() (the JVM's
 *     management in use, jalen_mxbean_class_prepared at each ClassPrepare
 *     until then), so that the JMX start it runs never delays the agent
 *     thread's windows; hooks.lock()/unlock() take and release the
 *     profile lock (jl_run.prof_lock), so that mxbean.c reads jl_prof and
 *     jl_thr consistently (lock order as the agent thread: profile, then
 *     threads);
 *   - jalen_mxbean_on_window(now_s, duration_s, energy_j) at the end of
 *     each window (window.c, profile lock held): the process's energy in
 *     the window.
 */
#ifndef JALEN_MXBEAN_H
#define JALEN_MXBEAN_H

#include <jni.h>
#include <jvmti.h>
#include <stddef.h>
#include <stdint.h>

/* One method (package.Class.method, as in methods.csv, or a pseudo-frame
 * such as [GC]). */
typedef struct jalen_live_method {
    char *name;
    double self_energy_j;  /* since start */
    double total_energy_j; /* since start, method anywhere on the stack */
    double cpu_energy_j, net_energy_j;
    double window_power_w; /* self power in the last window */
    uint64_t self_samples, total_samples, net_bytes;
} jalen_live_method;

/* One thread. */
typedef struct jalen_live_thread {
    long tid;
    char *name;
    double cpu_time_s; /* since start */
    double energy_j;   /* since start */
    double cpu_energy_j, net_energy_j;
    double window_power_w; /* last window */
    uint64_t net_bytes;
} jalen_live_thread;

/* One closed power window. */
typedef struct jalen_live_window {
    double start_s; /* since the agent started */
    double duration_s;
    double power_w; /* process power over the window */
    double energy_j;
} jalen_live_window;

#define JALEN_LIVE_WINDOWS 60

/* One scope name (org.powerapi.jalen.Scope), as in scopes.csv: [0]
 * inclusive, [1] self. */
typedef struct jalen_live_scope {
    char *name;
    uint64_t calls;
    double cpu_time_s[2], energy_j[2], cpu_energy_j[2], net_energy_j[2];
    double mean_j[2], p50_j[2], p95_j[2], p99_j[2];
    uint64_t net_bytes[2];
} jalen_live_scope;

typedef struct jalen_live {
    double uptime_s;         /* since the agent started */
    double process_power_w;  /* last window */
    double process_energy_j; /* since start */
    double attributed_j, unattributed_j;
    uint64_t windows, samples, dropped;
    char *formula;   /* "cpu-tdp", "rapl-share" ... */
    size_t nmethods; /* sorted by self energy, descending */
    jalen_live_method *methods;
    size_t nthreads; /* sorted by energy, descending */
    jalen_live_thread *threads;
    size_t nwindows; /* oldest first */
    jalen_live_window *recent;
    size_t nscopes; /* first-use order, [other scopes] last */
    jalen_live_scope *scopes;
    double scoped_j, unscoped_j;
} jalen_live;

/* What the agent hands to jalen_mxbean_start: the profile lock. */
typedef struct jalen_mxbean_hooks {
    void (*lock)(void);
    void (*unlock)(void);
} jalen_mxbean_hooks;

/* Copies the live results: at most top methods and top threads (0: all)
 * and the last JALEN_LIVE_WINDOWS windows.  Everything in the copy is owned
 * by it.  Returns 0, -ENOSYS before jalen_mxbean_start gave the hooks,
 * -ENOMEM.  Thread-safe (takes the profile lock). */
int jalen_live_get(jalen_live **out, size_t top);
/* Frees a copy; NULL is a no-op. */
void jalen_live_free(jalen_live *l);

/* Called by the agent at the end of each window, profile lock held:
 * now_s on jl_now_s()'s clock, the window's length and the process's
 * energy in it. */
void jalen_mxbean_on_window(double now_s, double duration_s, double energy_j);

/* Called by the agent on its "jalen-mxbean" thread (JNIEnv of that thread),
 * a second after VMInit; hooks (kept, not copied: static) are the agent's
 * lock.
 * Loads org.powerapi.jalen.Energy from the application's class path, else
 * from powerapi.jar through a URLClassLoader (the boot class path is left
 * alone: appending to it turns class data sharing off), binds its native
 * (RegisterNatives: no symbol lookup, nothing exported) and registers the
 * MXBean in the platform MBean server.  Never aborts the JVM: returns 0,
 * or a negative errno with why[] saying what failed.  jar: powerapi.jar,
 * or NULL to use $JALEN_MXBEAN_JAR, else look next to libjalen.so, in
 * ../bindings/java/ (build tree) and ../share/java/ (installed).
 * JALEN_MXBEAN=0 in the environment turns it off (returns 0). */
int jalen_mxbean_start(jvmtiEnv *jvmti, JNIEnv *jni, const jalen_mxbean_hooks *hooks,
                       const char *jar, char *why, size_t why_len);

/* Called by the agent at each ClassPrepare (any thread) until
 * jalen_mxbean_wanted() says yes: a class that shows the JVM's management
 * in use (java.lang.management.ManagementFactory, which the platform MBean
 * server, a JMX agent started by jcmd or an attaching jconsole load, or
 * org.powerapi.jalen.Energy) makes the MXBean wanted.  Thread-safe. */
void jalen_mxbean_class_prepared(jvmtiEnv *jvmti, jclass klass);
/* Whether the agent should register the MXBean now: a class of
 * jalen_mxbean_class_prepared was seen, or JALEN_MXBEAN=1 in the
 * environment (always, as soon as the JVM has run a second).  Registering
 * starts JMX (about 160 ms of CPU and 10 MiB), which a JVM that never uses
 * its management would pay for nothing.  Thread-safe. */
int jalen_mxbean_wanted(void);

#endif /* JALEN_MXBEAN_H */
