/*
 * jvmtisampler.c - mode=jvmti's stack samples: the sampler thread
 * (agentthreads.c) takes the runnable Java threads' stacks with JVMTI
 * every interval, into the same ring as mode=cpu's signal handler
 * (sampler.c), each weighted by the CPU time its thread used since its
 * previous sample (DESIGN.md section 11, "Samples").
 */
#include "jalen.h"

#include <stdlib.h>

void jl_jvmti_sample(jvmtiEnv *jvmti)
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
                t->jv_cpu_ns && cpu >= t->jv_cpu_ns ? cpu - t->jv_cpu_ns : jl_run.o.interval_ns;
            t->jv_cpu_ns = cpu;
            /* after a gap (the sampler thread kept off the CPU) the stack
             * seen now says little about the CPU time before it: a sample
             * stands for at most four intervals, and the thread's other
             * samples of the window share the rest */
            if (d > 4 * jl_run.o.interval_ns)
                d = 4 * jl_run.o.interval_ns;
            jl_slot *s = jl_slot_claim();
            if (!s)
                continue;
            s->tid = tids[i];
            s->scope = jl_sampler_scope(tids[i]);
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
