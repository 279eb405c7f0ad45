/*
 * cpupct.h - a target's CPU% as the table writer and `top` show it, capped
 * by the threads the process has (read under procfs: cpupct.c).
 */
#ifndef PA_REPORT_CPUPCT_H
#define PA_REPORT_CPUPCT_H

#include "powerapi.h"

#include <stdbool.h>
#include <sys/types.h>

/* Threads of a process: proc(5) field 20 (num_threads) of
 * <procfs>/<pid>/stat (procfs NULL: "/proc"); 0 when unreadable. */
long rp_out_num_threads(const char *procfs, pid_t pid);

/* A target's CPU% over a window of interval_s, as shown to people: at
 * most 100 % for a thread, 100 % a thread for a process (its threads read
 * under procfs, else the online CPUs), 100 % a CPU otherwise.  A process's
 * CPU time moves in clock ticks (/proc/PID/stat), so a window can read a
 * tick more than it lasted (13 ticks in 0.125 s: 104 % for one thread).
 * *capped tells whether the figure was capped. */
double rp_out_cpu_pct(const char *procfs, const pa_target_info *t, double interval_s, bool *capped);

/* The note printed beside a capped CPU%. */
#define RP_OUT_CAPPED_NOTE "* CPU% capped at 100 % a thread (/proc counts CPU time in clock ticks)"

#endif /* PA_REPORT_CPUPCT_H */
