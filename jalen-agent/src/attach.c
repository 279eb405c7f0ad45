/*
 * attach.c - jalen loaded into a JVM that runs already (Agent_OnAttach).
 *
 * The JDK's attach mechanism (what `jcmd PID JVMTI.agent_load` and
 * `powerapi jalen PID ...` use) loads the library and calls
 * Agent_OnAttach with an option string; loading it again calls it again,
 * which is how later commands reach the running agent.  The first word
 * of the options is the command:
 *
 *   start[,OPTIONS]  start profiling with the launch-time options
 *                    (out=, interval=, mode=, ...); the default command
 *   dump             write the files now (the run goes on)
 *   stop             end the run as the JVM's exit would (complete files,
 *                    the summary), then leave the JVM as it was: events
 *                    off, no timer
 *   status           one line: what runs, since when, where the files are
 *   trace[,trace=P]  the methods traced become P (trace= of the options,
 *                    DESIGN.md 11.2); without P, tracing is removed
 *
 * The commands other than start are here too (start is load.c's
 * jl_agent_load, with live=1).
 *
 * reply=PATH (any command) names a file, made by the caller, that gets
 * the command's answer instead of the JVM's stderr: the caller prints it
 * on its own terminal.  The return value is 0 when the command did its
 * work, otherwise a positive code (the attach response carries it).
 */
#include "jalen.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JL_EXPORT __attribute__((visibility("default")))

enum { JL_A_START, JL_A_STOP, JL_A_DUMP, JL_A_STATUS, JL_A_TRACE };

/* Splits "CMD[,k=v...]" into the command, the reply file and the rest
 * (the launch-time options).  -EINVAL for an unknown command. */
static int jl_attach_parse(const char *in, int *cmd, char **reply, char **rest)
{
    static const char *const names[] = {"start", "stop", "dump", "status", "trace"};
    *cmd = JL_A_START;
    *reply = NULL;
    *rest = calloc(1, strlen(in ? in : "") + 1);
    if (!*rest)
        return -ENOMEM;
    char *dup = strdup(in ? in : ""), *save = NULL;
    if (!dup)
        return -ENOMEM;
    int first = 1, rc = 0;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save), first = 0) {
        if (!strncmp(t, "reply=", 6)) {
            free(*reply);
            *reply = strdup(t + 6);
            continue;
        }
        if (first && !strchr(t, '=')) {
            rc = -EINVAL;
            for (int k = 0; k < 5; k++)
                if (!strcmp(t, names[k])) {
                    *cmd = k;
                    rc = 0;
                }
            if (rc < 0) {
                free(*rest);
                *rest = strdup(t); /* named in the error */
                break;
            }
            continue;
        }
        if (**rest)
            strcat(*rest, ",");
        strcat(*rest, t);
    }
    free(dup);
    return rc;
}

/* stop: ends the run as VMDeath does (last window, complete files,
 * summary on f), then leaves the JVM as it was: no event reaches the
 * agent, no timer fires (the signal handler stays installed, with nothing
 * to wake it). */
static void jl_attach_stop(FILE *f)
{
    if (!atomic_load(&jl_run.active))
        return;
    jl_agent_finish(f);
    jl_events_mode(JVMTI_DISABLE);
    if (jl_run.o.mode == JL_MODE_CPU)
        (*jl_run.jvmti)
            ->SetEventNotificationMode(jl_run.jvmti, JVMTI_DISABLE,
                                       JVMTI_EVENT_DYNAMIC_CODE_GENERATED, NULL);
}

/* dump: the files written now (a window closed early), summary on f;
 * -ESRCH when no run is going on. */
static int jl_attach_dump(FILE *f)
{
    pthread_mutex_lock(&jl_run.prof_lock);
    int rc = -ESRCH;
    if (!jl_run.done && atomic_load(&jl_run.active)) {
        jl_process_window(0);
        rc = 0;
        if (f)
            jl_print_summary(&jl_run.o, f);
    }
    pthread_mutex_unlock(&jl_run.prof_lock);
    return rc;
}

/* status: one line: pid, duration, mode, samples, energy, output folder. */
static void jl_attach_status(FILE *f)
{
    pthread_mutex_lock(&jl_run.prof_lock);
    fprintf(f,
            "jalen: profiling pid %d for %.1f s (mode=%s, interval %.3f ms, %s), %llu samples, "
            "process energy %.3f J; files in %s/\n",
            (int)jl_run.pid, jl_now_s() - jl_prof.start_s,
            jl_run.o.mode == JL_MODE_CPU ? "cpu" : "jvmti", (double)jl_run.o.interval_ns * 1e-6,
            jl_run.attached ? "attached" : "loaded at launch",
            (unsigned long long)jl_windows_samples(), jl_prof.process_j, jl_run.o.out);
    pthread_mutex_unlock(&jl_run.prof_lock);
}

/* trace[,trace=PATTERNS]: the methods traced at runtime; 0 or 1. */
static int jl_attach_trace(JavaVM *vm, const char *opts, FILE *f)
{
    JNIEnv *env = NULL;
    const char *spec = !strncmp(opts, "trace=", 6) ? opts + 6 : "";
    if (*opts && strncmp(opts, "trace=", 6)) {
        fprintf(f, "jalen: trace takes trace=PATTERNS alone ('%s')\n", opts);
        return 1;
    }
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK || !env)
        return 1;
    return jl_trace_set(jl_run.jvmti, env, spec, f) < 0;
}

static int jl_attach_run(JavaVM *vm, int cmd, const char *opts, FILE *f)
{
    char err[512] = "";
    switch (cmd) {
    case JL_A_START:
        if (atomic_load(&jl_run.active)) {
            fprintf(f,
                    "jalen: already profiling this JVM (files in %s/); "
                    "stop it first: powerapi jalen %d stop\n",
                    jl_run.o.out, (int)getpid());
            return 1;
        }
        if (jl_agent_load(vm, opts, 1, err, sizeof(err)) < 0) {
            fprintf(f, "jalen: %s; the JVM runs on without profiling\n", err);
            if (atomic_load(&jl_run.active))
                jl_attach_stop(NULL);
            return 1;
        }
        /* a start, not a status: nothing was sampled yet */
        fprintf(f,
                "jalen: started profiling pid %d (mode=%s, interval %.3f ms); files in %s/; "
                "see it with 'powerapi jalen %d status', end it with 'powerapi jalen %d stop'\n",
                (int)jl_run.pid, jl_run.o.mode == JL_MODE_CPU ? "cpu" : "jvmti",
                (double)jl_run.o.interval_ns * 1e-6, jl_run.o.out, (int)jl_run.pid,
                (int)jl_run.pid);
        return 0;
    case JL_A_STOP:
        if (!atomic_load(&jl_run.active))
            break;
        jl_attach_stop(f);
        return 0;
    case JL_A_DUMP:
        if (jl_attach_dump(f) < 0)
            break;
        return 0;
    case JL_A_TRACE:
        if (!atomic_load(&jl_run.active))
            break;
        return jl_attach_trace(vm, opts, f);
    default:
        if (!atomic_load(&jl_run.active))
            break;
        jl_attach_status(f);
        return 0;
    }
    if (jl_run.jvmti != NULL)
        fprintf(f, "jalen: not profiling this JVM any more: its run was stopped (files in %s/)\n",
                jl_run.o.out);
    else
        fprintf(f, "jalen: not profiling this JVM; start with: powerapi jalen %d start\n",
                (int)getpid());
    return 1;
}

JL_EXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
    (void)reserved;
    int cmd = 0;
    char *reply = NULL, *rest = NULL;
    int rc = jl_attach_parse(options, &cmd, &reply, &rest);
    FILE *f = reply ? fopen(reply, "w") : NULL;
    FILE *out = f ? f : stderr;
    if (rc == -EINVAL) {
        fprintf(out, "jalen: unknown command '%s' (start, stop, dump, status or trace)\n",
                rest ? rest : "");
        rc = 2;
    } else if (rc < 0) {
        fprintf(out, "jalen: out of memory\n");
        rc = 1;
    } else {
        rc = jl_attach_run(vm, cmd, rest, out);
    }
    if (f)
        fclose(f);
    free(reply);
    free(rest);
    return rc;
}
