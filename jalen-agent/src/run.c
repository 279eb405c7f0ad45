/*
 * run.c - the state of the agent's run (jalen.h, jl_run): its options,
 * the JVMTI environment, the libpowerapi context, the flags and the
 * profile lock.  Data alone, so that the files that read it (events,
 * windows, the agent threads, loading, attach) call no file above them.
 */
#include "jalen.h"

jl_run_state jl_run = {.prof_lock = PTHREAD_MUTEX_INITIALIZER};
