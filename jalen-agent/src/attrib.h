/*
 * attrib.h - the Jalen equations of one window (DESIGN.md section 6.4), as
 * pure functions: known inputs, known joules, unit-tested without a JVM
 * (tests/unit_attrib.c).  window.c feeds them the window's readings.
 *
 *   E_thread = E_process_cpu . cputime_thread / cputime_all_threads
 *   E_sample = E_thread . weight / samples_of_thread   (Java threads)
 *   E_net    = E_process_net . bytes / bytes_process
 *
 * A Java thread without a sample keeps its energy under [unattributed]; a
 * thread the JVM runs for itself under its pseudo-frame ([GC], [JIT
 * compiler], [VM], [agent]); energy no thread had CPU time for goes to
 * [VM].  Nothing is dropped: the parts sum to the process's energy.
 */
#ifndef JALEN_ATTRIB_H
#define JALEN_ATTRIB_H

#include <stddef.h>

/* The energy of one sample of weight w of a thread of energy thread_j and
 * thread_samples samples in the window; 0 for a thread filed under a
 * pseudo-frame (java 0: its energy stays with that frame). */
double jl_attrib_sample(double thread_j, int w, int thread_samples, int java);

/* The pseudo-frame (an index of the agent's fixed frames, see pseudo[])
 * that holds a thread's window energy: for a Java thread with samples,
 * -1 (its samples hold it); pseudo[kind] otherwise, pseudo[JL_ATTRIB_NOSAMPLE]
 * for a Java thread without a sample.  kinds: 0 Java, 1 GC, 2 JIT, 3 VM,
 * 4 agent; others are the VM's. */
enum { JL_ATTRIB_NOSAMPLE = 5, JL_ATTRIB_NFRAMES = 6 };
int jl_attrib_frame(int kind, int samples, const int pseudo[JL_ATTRIB_NFRAMES]);

/* The network energy of bytes out of all bytes of the window. */
double jl_attrib_net(double net_j, double bytes, double all_bytes);

/* What of the window's network energy no byte record takes (it goes to
 * [VM]): all of net_j when no byte moved, else nothing. */
double jl_attrib_net_left(double net_j, double all_bytes);

/* The CPU time a thread that ended in the window adds to it: its CPU time
 * at ThreadEnd (final_s, < 0 unknown) beyond what the reports counted
 * (seen_s), 0 when none. */
double jl_attrib_ended_cpu(double final_s, double seen_s);

/* One thread of a window, as the equations see it. */
typedef struct jl_attrib_thread {
    int kind;       /* 0 Java, 1 GC, 2 JIT, 3 VM, 4 agent; others the VM's */
    double cpu_s;   /* its CPU time in the window */
    double samples; /* the weights of its samples in the window */
    double cpu_j;   /* out: E_thread */
    int frame;      /* out: the pseudo-frame that holds cpu_j, -1 its
                       samples (jl_attrib_frame) */
} jl_attrib_thread;

/* A window's CPU energy cpu_j over its n threads: each one's E_thread and
 * the frame that holds it.  Returns what is left for [VM] (no thread had
 * CPU time), 0 when that is below 1e-12 J (rounding): the threads' cpu_j
 * and it sum to cpu_j. */
double jl_attrib_window(double cpu_j, jl_attrib_thread *t, size_t n,
                        const int pseudo[JL_ATTRIB_NFRAMES]);

#endif
