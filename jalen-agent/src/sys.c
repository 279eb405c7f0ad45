/*
 * sys.c - the small system helpers every part of the agent uses: the
 * monotonic clock of its windows and the calling thread's kernel tid.  A
 * leaf: it calls no other file of the agent, so that any of them may call
 * it without a circle.
 */
#include "jalen.h"

#include <sys/syscall.h>
#include <unistd.h>

double jl_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

pid_t jl_gettid(void)
{
    return (pid_t)syscall(SYS_gettid);
}
