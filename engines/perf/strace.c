/*
 * strace.c - the reader of the scope trace (libpowerapi/src/scopetrace.h):
 * which C scope each thread of the profiled command was in at each moment,
 * so that a sample gets its [scope NAME] root frame (DESIGN.md 15.1).
 *
 * Per thread, the events read so far (time, innermost scope after it) in
 * time order; a sample at time t is in the scope of the thread's last event
 * at or before t.  After each window the events no later sample can need
 * are dropped (pf_strace_trim): the last one before the window's end stays.
 */
#include "perf.h"
#include "scopetrace.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct st_thread {
    pid_t tid; /* 0: a free slot */
    size_t n, cap;
    uint64_t *t;
    uint32_t *code;
} st_thread;

struct pf_strace {
    pa__strace *map;
    char path[64];
    char env[96];  /* PA__STRACE_ENV=path */
    uint64_t pos;  /* the next event to read */
    uint64_t lost; /* overwritten before they were read */
    st_thread *thr;
    size_t cap, used;                        /* open addressing on tid, cap a power of two */
    const char *frame[PA__STRACE_NAMES + 1]; /* "[scope NAME]", interned */
};

int pf_strace_new(pf_strace **out, const char **env)
{
    *out = NULL;
    pf_strace *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    snprintf(s->path, sizeof(s->path), "/dev/shm/powerapi-scopes-XXXXXX");
    int fd = mkstemp(s->path);
    if (fd < 0) {
        int e = -errno;
        free(s);
        return e;
    }
    void *m = MAP_FAILED;
    if (ftruncate(fd, (off_t)sizeof(pa__strace)) == 0)
        m = mmap(NULL, sizeof(pa__strace), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = -errno;
    close(fd);
    if (m == MAP_FAILED) {
        unlink(s->path);
        free(s);
        return e;
    }
    s->map = m;
    s->map->magic = PA__STRACE_MAGIC;
    snprintf(s->env, sizeof(s->env), "%s=%s", PA__STRACE_ENV, s->path);
    *out = s;
    *env = s->env;
    return 0;
}

void pf_strace_free(pf_strace *s)
{
    if (!s)
        return;
    munmap(s->map, sizeof(pa__strace));
    unlink(s->path);
    for (size_t i = 0; i < s->cap; i++) {
        free(s->thr[i].t);
        free(s->thr[i].code);
    }
    free(s->thr);
    free(s);
}

static st_thread *thread_of(pf_strace *s, pid_t tid, bool add)
{
    if (add && (s->used + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        st_thread *n = calloc(cap, sizeof(*n));
        if (!n)
            return NULL;
        for (size_t i = 0; i < s->cap; i++)
            if (s->thr[i].tid) {
                size_t k = pa__hash_u64((uint64_t)s->thr[i].tid) & (cap - 1);
                while (n[k].tid)
                    k = (k + 1) & (cap - 1);
                n[k] = s->thr[i];
            }
        free(s->thr);
        s->thr = n;
        s->cap = cap;
    }
    if (!s->cap)
        return NULL;
    size_t k = pa__hash_u64((uint64_t)tid) & (s->cap - 1);
    while (s->thr[k].tid && s->thr[k].tid != tid)
        k = (k + 1) & (s->cap - 1);
    if (s->thr[k].tid == tid)
        return &s->thr[k];
    if (!add)
        return NULL;
    s->thr[k].tid = tid;
    s->used++;
    return &s->thr[k];
}

static void add_event(pf_strace *s, pid_t tid, uint64_t t, uint32_t code)
{
    st_thread *th = thread_of(s, tid, true);
    if (!th)
        return;
    if (th->n == th->cap) {
        size_t cap = th->cap ? th->cap * 2 : 16;
        uint64_t *nt = realloc(th->t, cap * sizeof(*nt));
        if (!nt)
            return;
        th->t = nt;
        uint32_t *nc = realloc(th->code, cap * sizeof(*nc));
        if (!nc)
            return;
        th->code = nc;
        th->cap = cap;
    }
    th->t[th->n] = t;
    th->code[th->n++] = code;
}

void pf_strace_read(pf_strace *s)
{
    if (!s)
        return;
    uint64_t head = atomic_load_explicit(&s->map->head, memory_order_acquire);
    if (head - s->pos > PA__STRACE_EVENTS) { /* overwritten before we came */
        s->lost += head - s->pos - PA__STRACE_EVENTS;
        s->pos = head - PA__STRACE_EVENTS;
    }
    for (; s->pos < head; s->pos++) {
        pa__strace_event *v = &s->map->ev[s->pos % PA__STRACE_EVENTS];
        if (atomic_load_explicit(&v->seq, memory_order_acquire) != s->pos + 1)
            break; /* still being written: the next read takes it */
        uint64_t t = v->t_ns;
        uint32_t tid = v->tid, code = v->code;
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&v->seq, memory_order_relaxed) != s->pos + 1) {
            s->lost++; /* overwritten while read */
            continue;
        }
        add_event(s, (pid_t)tid, t, code);
    }
}

/* The frame of a code, interned at its first use. */
static const char *frame_of(pf_strace *s, uint32_t code)
{
    size_t k = code == UINT32_MAX || code > PA__STRACE_NAMES ? PA__STRACE_NAMES : code - 1;
    if (!s->frame[k]) {
        char name[PA__STRACE_NAMELEN + 16];
        if (k == PA__STRACE_NAMES)
            snprintf(name, sizeof(name), "[scope [other scopes]]");
        else
            snprintf(name, sizeof(name), "[scope %.*s]", PA__STRACE_NAMELEN, s->map->names[k]);
        s->frame[k] = pc_intern(name);
    }
    return s->frame[k];
}

const char *pf_strace_at(pf_strace *s, pid_t tid, uint64_t t_ns)
{
    st_thread *th = s ? thread_of(s, tid, false) : NULL;
    if (!th || !th->n || th->t[0] > t_ns)
        return NULL;
    size_t lo = 0, hi = th->n; /* the last event at or before t_ns */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (th->t[mid] <= t_ns)
            lo = mid;
        else
            hi = mid;
    }
    uint32_t code = th->code[lo];
    if (!code ||
        (code != UINT32_MAX && code > atomic_load_explicit(&s->map->nnames, memory_order_acquire)))
        return NULL;
    return frame_of(s, code);
}

void pf_strace_trim(pf_strace *s, uint64_t before_ns)
{
    for (size_t i = 0; s && i < s->cap; i++) {
        st_thread *th = &s->thr[i];
        size_t k = 0;
        while (k + 1 < th->n && th->t[k + 1] <= before_ns)
            k++;
        if (k) {
            memmove(th->t, th->t + k, (th->n - k) * sizeof(*th->t));
            memmove(th->code, th->code + k, (th->n - k) * sizeof(*th->code));
            th->n -= k;
        }
    }
}

uint64_t pf_strace_lost(const pf_strace *s)
{
    return s ? s->lost : 0;
}
