/*
 * load.c - loading the agent: Agent_OnLoad (at the JVM's launch) and
 * jl_agent_load, which attach.c's start calls too: the options, the JVMTI
 * environment and capabilities, the libpowerapi context, the sampler, the
 * events; at attach, VMInit's work done at once; and for a later run in
 * the same JVM, what the last one accumulated reset (DESIGN.md section
 * 11).
 */
#include "jalen.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JL_EXPORT __attribute__((visibility("default")))

static int jl_power_start(char *err, size_t errlen)
{
    pa_ctx_opts co;
    memset(&co, 0, sizeof(co));
    co.procfs = jl_run.o.procfs;
    co.sysfs = jl_run.o.sysfs;
    int rc = pa_ctx_new(&jl_run.ctx, &co);
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
    const char *lists[3] = {jl_run.o.sensors, jl_run.o.formula, jl_run.o.disable};
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
            rc = l == 2 ? pa_module_disable(jl_run.ctx, t) : pa_module_enable(jl_run.ctx, t, mopts);
            if (rc < 0) {
                snprintf(err, errlen, "bad value '%s' for '%s': %s", t, keys[l],
                         pa_last_error()[0] ? pa_last_error() : pa_strerror(rc));
                free(dup);
                return rc;
            }
        }
        free(dup);
    }
    rc = pa_watch_pid(jl_run.ctx, jl_run.pid, PA_WATCH_THREADS);
    if (rc < 0) {
        snprintf(err, errlen, "libpowerapi cannot watch pid %d: %s", (int)jl_run.pid,
                 pa_last_error()[0] ? pa_last_error() : pa_strerror(rc));
        return rc;
    }
    /* first tick primes the readings: the first window starts here */
    rc = pa_tick(jl_run.ctx);
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
    if ((*vm)->GetEnv(vm, (void **)&jl_run.jvmti, JVMTI_VERSION_1_2) != JNI_OK) {
        snprintf(err, errlen, "JVMTI 1.2 is not available in this JVM");
        return -ENOTSUP;
    }
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof(caps));
    caps.can_get_line_numbers = 1;
    caps.can_get_source_file_name = 1;
    caps.can_generate_compiled_method_load_events = 1;
    if (jl_run.o.net)
        caps.can_generate_native_method_bind_events = 1;
    if ((*jl_run.jvmti)->AddCapabilities(jl_run.jvmti, &caps) != JVMTI_ERROR_NONE) {
        snprintf(err, errlen, "the JVM refused the JVMTI capabilities jalen needs");
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
        (*jl_run.jvmti)->GetCurrentThread(jl_run.jvmti, &self) != JVMTI_ERROR_NONE) {
        snprintf(err, errlen, "the attaching thread has no JNI environment");
        return -ENOTSUP;
    }
    jl_on_vm_init(jl_run.jvmti, jni, self);
    if (self)
        (*jni)->DeleteLocalRef(jni, self);
    if (jl_run.o.mode == JL_MODE_CPU)
        (*jl_run.jvmti)->GenerateEvents(jl_run.jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
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
    if (jl_agent_threads_rearm() < 0) {
        snprintf(err, errlen,
                 "the last run's agent thread has not ended yet; start again in a "
                 "second");
        return -EBUSY;
    }
    jl_opts_free(&jl_run.o);
    jl_run.o = *o;
    JNIEnv *jni = NULL;
    if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_6) != JNI_OK)
        jni = NULL;
    jl_java_threads_clear(jni);
    pthread_mutex_lock(&jl_run.prof_lock);
    jl_profile_reset(&jl_run.o);
    jl_write_reset();
    jl_run.done = 0;
    jl_windows_reset();
    pthread_mutex_unlock(&jl_run.prof_lock);
    jl_net_drain(jl_on_net_ignore, NULL); /* bytes moved between the runs */
    pa_ctx_free(jl_run.ctx);
    jl_run.ctx = NULL;
    return 0;
}

/* The options of a run: parsed into jl_run.o at the first one (the JVMTI
 * environment made then), and for a later run in the same JVM (start
 * after stop) parsed apart, checked, and taken over by jl_run_reset. */
static int jl_run_options(JavaVM *vm, const char *options, char *err, size_t errlen)
{
    jl_opts o;
    int again = jl_run.jvmti != NULL;
    int rc = jl_opts_parse(options, jl_run.pid, again ? &o : &jl_run.o, err, errlen);
    jl_opts *po = again ? &o : &jl_run.o;
    if (rc == 0 && !again)
        rc = jl_jvmti_setup(vm, err, errlen);
    if (rc == 0 && (rc = pc_out_mkdirs(po->out, 0755)) < 0)
        snprintf(err, errlen, "cannot create the output folder '%s': %s", po->out, strerror(-rc));
    if (rc == 0 && again)
        rc = jl_run_reset(vm, &o, err, errlen);
    else if (rc == 0 && jl_profile_init(&jl_run.o) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    if (rc < 0 && again)
        jl_opts_free(&o);
    return rc;
}

int jl_agent_load(JavaVM *vm, const char *options, int live, char *err, size_t errlen)
{
    jl_run.pid = getpid();
    double now = jl_now_s();
    jl_prof.start_s = now;
    jl_windows_start(now);
    int rc = jl_run_options(vm, options, err, errlen);
    if (rc < 0)
        return rc;
    jl_scopes_init(jl_run.o.scopes, jl_run.o.quiet);
    jl_push_start(&jl_run.o); /* a failure is said and the run goes on */
    jl_prof.source.carbon_g_per_kwh = jl_run.o.carbon_g_per_kwh; /* the writers' grams */
    rc = jl_sampler_init(vm, &jl_run.o, err, errlen);
    if (rc == -ENOSYS) {
        /* a JVM without AsyncGetCallTrace: the JVMTI mode still works */
        fprintf(stderr, "jalen: %s; falling back to mode=jvmti\n", err);
        jl_run.o.mode = JL_MODE_JVMTI;
        rc = 0;
    }
    if (rc < 0 || (rc = jl_power_start(err, errlen)) < 0)
        return rc;
    jl_net_init(jl_run.jvmti);
    if (!jl_trace_on() &&
        (rc = jl_trace_init(jl_run.jvmti, jl_run.o.trace, jl_run.o.quiet, err, errlen)) < 0)
        return rc;
    if ((rc = jl_events_init(err, errlen)) < 0)
        return rc;
    jl_events_mode(JVMTI_ENABLE);
    atomic_store(&jl_run.active, 1);
    jl_scopes_set_active(1);
    jl_run.attached = live;
    return live ? jl_go_live(vm, err, errlen) : 0;
}

JL_EXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
    (void)reserved;
    char err[512] = "";
    if (jl_agent_load(vm, options, 0, err, sizeof(err)) == 0)
        return JNI_OK;
    fprintf(stderr, "jalen: %s; %s\n", err,
            jl_run.o.fail_abort ? "aborting (fail=abort)" : "the JVM runs on without profiling");
    if (jl_run.ctx) {
        pa_ctx_free(jl_run.ctx);
        jl_run.ctx = NULL;
    }
    return jl_run.o.fail_abort ? JNI_ERR : JNI_OK;
}

JL_EXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
    (void)vm;
}
