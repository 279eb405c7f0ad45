/*
 * scopetrace.h - the scope trace: where a process's C scopes (pa_scope_begin
 * / pa_scope_end) tell `powerapi profile`, which runs it, which scope each
 * of its threads is in, so that the profile's samples get a [scope NAME]
 * root frame as jalen's do (DESIGN.md section 15.1).
 *
 * The profiler makes a file of this layout (in /dev/shm) and names it in
 * the command's environment (PA__STRACE_ENV).  The library, at its first
 * scope call, maps it when the variable is set; then each begin and end
 * appends an event: the time (CLOCK_MONOTONIC, the clock of the profiler's
 * samples), the thread and the innermost scope open on the thread after
 * the call (0: none).  Events go in a ring: a writer takes a slot with an
 * atomic increment of head and publishes it by writing its sequence number
 * (slot index + 1) last; the reader takes the slots whose sequence is the
 * one it expects and counts the others, overwritten before it came, as
 * lost.  Scope k (1-based) is names[k - 1], written before nnames says k.
 * The library never fails a scope call for the trace: any problem leaves
 * the trace off.
 */
#ifndef PA_SCOPETRACE_H
#define PA_SCOPETRACE_H

#include <stdatomic.h>
#include <stdint.h>

#define PA__STRACE_ENV "POWERAPI_SCOPE_TRACE"
#define PA__STRACE_MAGIC 0x3145435254534150ull /* "PASTRCE1" */
#define PA__STRACE_NAMES 256                   /* the rest: "[other scopes]" */
#define PA__STRACE_NAMELEN 64
#define PA__STRACE_EVENTS (1u << 18) /* 6 MiB of events */

typedef struct pa__strace_event {
    _Atomic uint64_t seq; /* slot index + 1, written last */
    uint64_t t_ns;        /* CLOCK_MONOTONIC */
    uint32_t tid;
    uint32_t code; /* the innermost scope after the call: 0 none, k names[k - 1] */
} pa__strace_event;

typedef struct pa__strace {
    uint64_t magic;
    _Atomic uint64_t head;   /* events taken */
    _Atomic uint32_t nnames; /* names published */
    uint32_t pad;
    char names[PA__STRACE_NAMES][PA__STRACE_NAMELEN];
    pa__strace_event ev[PA__STRACE_EVENTS];
} pa__strace;

#endif
