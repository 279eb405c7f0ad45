/*
 * scopetrace.c - the writer of the scope trace (scopetrace.h): the C
 * scopes of a process that `powerapi profile` runs, for the profile's
 * [scope NAME] root frames (DESIGN.md section 15.1).
 */
#include "scopetrace.h"
#include "scopetab.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pa__strace *trace; /* NULL: no trace (the usual case) */
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t trace_names = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local uint32_t trace_tid;

/* Maps the profiler's file, when the environment names one of the
 * expected size and magic; anything else leaves the trace off. */
static void trace_open(void)
{
    const char *path = getenv(PA__STRACE_ENV);
    if (!path || !*path)
        return;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(pa__strace))
        m = mmap(NULL, sizeof(pa__strace), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    if (((pa__strace *)m)->magic != PA__STRACE_MAGIC) {
        munmap(m, sizeof(pa__strace));
        return;
    }
    trace = m;
}

/* The name's code, published in the trace at its first use. */
static uint32_t code_of(pa__scope_name *e)
{
    if (!e)
        return 0;
    uint32_t c = atomic_load_explicit(&e->trace_code, memory_order_acquire);
    if (c)
        return c;
    pthread_mutex_lock(&trace_names);
    c = atomic_load_explicit(&e->trace_code, memory_order_relaxed);
    if (!c) {
        uint32_t n = atomic_load_explicit(&trace->nnames, memory_order_relaxed);
        if (n < PA__STRACE_NAMES) {
            snprintf(trace->names[n], PA__STRACE_NAMELEN, "%s", e->name);
            atomic_store_explicit(&trace->nnames, n + 1, memory_order_release);
            c = n + 1;
        } else {
            c = UINT32_MAX; /* read as "[other scopes]" */
        }
        atomic_store_explicit(&e->trace_code, c, memory_order_release);
    }
    pthread_mutex_unlock(&trace_names);
    return c;
}

void pa__strace_note(pa__scope_name *e)
{
    pthread_once(&trace_once, trace_open);
    if (!trace)
        return;
    if (!trace_tid)
        trace_tid = (uint32_t)syscall(SYS_gettid);
    uint32_t code = code_of(e);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t i = atomic_fetch_add_explicit(&trace->head, 1, memory_order_relaxed);
    pa__strace_event *v = &trace->ev[i % PA__STRACE_EVENTS];
    /* the slot is the reader's again only when seq says i + 1 */
    atomic_store_explicit(&v->seq, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    v->t_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    v->tid = trace_tid;
    v->code = code;
    atomic_store_explicit(&v->seq, i + 1, memory_order_release);
}
