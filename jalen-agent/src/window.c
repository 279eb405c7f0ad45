/*
 * window.c - each window's work on the agent thread (DESIGN.md section
 * 6.4, section 11 "Windows"): libpowerapi's tick gives the process's
 * energy, the ring's samples and the socket byte records are drained, and
 * the Jalen equations split the energy (attrib.c) over threads, methods
 * (profile.c) and scopes (scope.c) before the files are written
 * (writers.c):
 *   E_thread = E_process_cpu . cputime_thread / cputime_all_threads
 *   E_method_self = E_thread . samples_on_top / samples_of_thread
 *   E_net_method = E_process_net . bytes_method / bytes_process
 * Threads that are not Java threads keep their energy under pseudo-frames
 * ([GC], [JIT compiler], [VM], [agent]); a Java thread's energy that no
 * sample explains goes to [unattributed].  Nothing is dropped.
 */
#include "attrib.h"
#include "jalen.h"
#include "mxbean.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static double jl_last_window_s;
/* the process's cumulative CPU and network joules (profcore's pc_cum:
 * each window takes the increase since the last reading) */
static pc_cum jl_cum_cpu, jl_cum_nic;
static int jl_power_warned;

/* this window's resolved samples: [tid, n, frame...]* */
static int *jl_wbuf;
static size_t jl_wn, jl_wcap;

static void jl_warn(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "jalen: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

static int jl_wbuf_push(int v)
{
    if (PA__GROW(jl_wbuf, jl_wcap, jl_wn + 1, 65536) < 0)
        return -1;
    jl_wbuf[jl_wn++] = v;
    return 0;
}

/* samples the agent thread could not store (out of memory): dropped too */
static uint64_t jl_drain_dropped;

static void jl_on_slot(const jl_slot *s, void *user)
{
    (void)user;
    size_t mark = jl_wn;
    int n = s->n;
    /* a sample in a scope: the scope's frame at the root */
    int scope = s->scope ? jl_scope_frame(s->scope) : -1;
    if (jl_wbuf_push(s->tid) < 0 || jl_wbuf_push(s->weight >= 0 ? s->weight : 0) < 0)
        goto fail;
    if (n <= 0) {
        int code = -n;
        if (jl_wbuf_push(1 + (scope >= 0)) < 0 ||
            jl_wbuf_push(code <= 10 ? JL_M_ERR0 + code : JL_M_UNATTRIBUTED) < 0 ||
            (scope >= 0 && jl_wbuf_push(scope) < 0) || jl_wbuf_push(0) < 0 ||
            (scope >= 0 && jl_wbuf_push(0) < 0))
            goto fail;
        return;
    }
    if (n > JL_MAX_DEPTH)
        n = JL_MAX_DEPTH;
    if (jl_wbuf_push(n + (s->truncated ? 1 : 0) + (scope >= 0)) < 0)
        goto fail;
    /* the methods, then their lines (the BCI each frame was at) */
    int lines[JL_MAX_DEPTH];
    for (int i = 0; i < n; i++)
        if (jl_wbuf_push(jl_method_line(jl_run.jvmti, s->frames[i].method_id, s->frames[i].lineno,
                                        &lines[i])) < 0)
            goto fail;
    if ((s->truncated && jl_wbuf_push(s->truncated == 2   ? JL_M_PARTIAL
                                      : s->truncated == 3 ? JL_M_PARTIAL_PC
                                                          : JL_M_TRUNCATED) < 0) ||
        (scope >= 0 && jl_wbuf_push(scope) < 0))
        goto fail;
    for (int i = 0; i < n; i++)
        if (jl_wbuf_push(lines[i]) < 0)
            goto fail;
    if ((s->truncated && jl_wbuf_push(0) < 0) || (scope >= 0 && jl_wbuf_push(0) < 0))
        goto fail;
    return;
fail:
    jl_wn = mark;
    jl_drain_dropped++;
}

void jl_drain(void)
{
    if (jl_run.o.mode == JL_MODE_CPU)
        jl_unwind_refresh();
    jl_sampler_drain(jl_on_slot, NULL);
}

typedef struct jl_netw {
    double nic_j;
    uint64_t total;
} jl_netw;

static void jl_on_net(jl_net_rec *r, uint64_t bytes, void *user)
{
    jl_netw *w = user;
    int frames[JL_MAX_DEPTH + 1];
    int n = 0;
    for (int i = 0; i < r->n && i < JL_MAX_DEPTH; i++)
        frames[n++] = jl_method_of(jl_run.jvmti, r->frames[i]);
    if (n == 0)
        frames[n++] = JL_M_UNATTRIBUTED;
    double e = jl_attrib_net(w->nic_j, (double)bytes, (double)w->total);
    jl_profile_add(frames, NULL, n, 0.0, e, bytes, 0, 0);
    jl_thread *t = jl_threads_get(r->tid, 1);
    if (t) {
        t->w_net_j += e;
        t->w_net_bytes += bytes;
    }
    jl_prof.net_bytes += bytes;
}

/* The window's net records: collected first, since the byte total of the
 * window must be known before any record is priced. */
typedef struct jl_net_item {
    jl_net_rec *r;
    uint64_t bytes;
} jl_net_item;
static jl_net_item *jl_nitems;
static size_t jl_nn, jl_ncap;

static void jl_on_net_collect(jl_net_rec *r, uint64_t bytes, void *user)
{
    (void)user;
    if (PA__GROW(jl_nitems, jl_ncap, jl_nn + 1, 256) < 0)
        return;
    jl_nitems[jl_nn].r = r;
    jl_nitems[jl_nn].bytes = bytes;
    jl_nn++;
}

/* Prof lock held. */
/* The window's energy of the process (its cumulative joules' increase);
 * the tick's status. */
static int jl_window_power(double now, double interval, double *dcpu, double *dnic)
{
    *dcpu = *dnic = 0;
    int rc = pa_tick(jl_run.ctx);
    pa_power pw;
    if (rc >= 0 && pa_pid_power(jl_run.ctx, jl_run.pid, &pw) == 0) {
        /* the first window with a reading: whatever came before is its own */
        *dcpu = pc_cum_delta(&jl_cum_cpu, pw.cpu_j);
        *dnic = pc_cum_delta(&jl_cum_nic, pw.nic_j);
    } else if (rc < 0 && !jl_power_warned && !jl_run.o.quiet) {
        jl_warn("libpowerapi tick failed (%s): %s", pa_strerror(rc), pa_last_error());
        jl_power_warned = 1;
    }
    /* MXBean (bindings; see mxbean.h): the process's energy this window */
    jalen_mxbean_on_window(now, interval, *dcpu + *dnic);
    return rc;
}

/* Each thread's CPU time in the window (thr lock held): the report's, and
 * for threads that ended in it the CPU time procfs could not see. */
static void jl_window_threads(int rc)
{
    /* names set with Thread.setName since the last window */
    for (size_t i = 0; i < jl_thr.n; i++)
        if (jl_thr.v[i].alive && jl_thr.v[i].ref)
            jl_java_thread_rename(jl_run.jvmti, &jl_thr.v[i], jl_thr.v[i].ref);
    pa_report *rep = NULL;
    if (rc >= 0 && pa_report_get(jl_run.ctx, &rep) == 0 && rep) {
        pc_source_from_report(&jl_prof.source, rep);
        for (size_t i = 0; i < rep->ntargets; i++) {
            const pa_target_info *ti = &rep->targets[i];
            if (ti->type != PA_TARGET_THREAD || ti->pid != jl_run.pid)
                continue;
            jl_thread *t = jl_threads_get(ti->tid, 1);
            if (!t)
                continue;
            if (!t->name[0]) {
                /* first seen here: not a Java thread we know */
                snprintf(t->name, sizeof(t->name), "%s", ti->comm);
                int ours = ti->tid == jl_run.agent_tid || ti->tid == jl_run.sampler_tid ||
                           ti->tid == jl_run.mxbean_tid;
                t->kind = ours ? JL_K_AGENT : jl_classify_comm(ti->comm);
            }
            double c = ti->power.cpu_time_s;
            if (c > 0) {
                t->w_cpu_s += c;
                t->seen_cpu_s += c;
            }
        }
        pa_report_free(rep);
    }
    for (size_t i = 0; i < jl_thr.n; i++) {
        jl_thread *t = &jl_thr.v[i];
        if (!t->alive && t->final_cpu_s >= 0) {
            double extra = jl_attrib_ended_cpu(t->final_cpu_s, t->seen_cpu_s);
            t->w_cpu_s += extra;
            t->seen_cpu_s += extra;
            t->final_cpu_s = -2; /* counted */
        }
    }
}

/* The fixed frames of jl_attrib_frame's pseudo[] */
static const int jl_pseudo[JL_ATTRIB_NFRAMES] = {-1,      JL_M_GC,    JL_M_JIT,
                                                 JL_M_VM, JL_M_AGENT, JL_M_UNATTRIBUTED};
/* The threads of the window as attrib.c sees them (jl_window_split) */
static jl_attrib_thread *jl_athr;
static size_t jl_athr_cap, jl_athr_n;

/* Each thread's samples in the window (their weights; thr lock held); a
 * thread first seen in a sample is a Java thread. */
static void jl_window_count(void)
{
    for (size_t p = 0; p < jl_wn;) {
        pid_t tid = jl_wbuf[p];
        int wt = jl_wbuf[p + 1], n = jl_wbuf[p + 2];
        jl_thread *t = jl_threads_get(tid, 1);
        if (t) {
            if (!t->name[0]) {
                snprintf(t->name, sizeof(t->name), "[thread %d]", (int)tid);
                t->kind = JL_K_JAVA;
            }
            t->w_samples += wt;
        }
        p += 3 + 2 * (size_t)n;
    }
}

/* E_thread and each thread's frame (attrib.c; thr lock held).  Returns
 * what goes to [VM]. */
static double jl_window_split(double dcpu)
{
    jl_athr_n = 0;
    if (PA__GROW(jl_athr, jl_athr_cap, jl_thr.n + 1, 64) < 0)
        return dcpu; /* out of memory: the window's energy goes to [VM] */
    jl_athr_n = jl_thr.n;
    for (size_t i = 0; i < jl_thr.n; i++)
        jl_athr[i] = (jl_attrib_thread){.kind = jl_thr.v[i].kind,
                                        .cpu_s = jl_thr.v[i].w_cpu_s,
                                        .samples = jl_thr.v[i].w_samples};
    double vm = jl_attrib_window(dcpu, jl_athr, jl_thr.n, jl_pseudo);
    for (size_t i = 0; i < jl_thr.n; i++)
        jl_thr.v[i].w_cpu_j = jl_athr[i].cpu_j;
    return vm;
}

/* A window's energy on the pseudo-thread [VM] (tid -1): what no thread
 * took (cpu_j) or no socket moved (net_j). */
static void jl_window_vm(double cpu_j, double net_j)
{
    int frame = cpu_j > 0 ? JL_M_VM : JL_M_UNATTRIBUTED;
    jl_profile_add(&frame, NULL, 1, cpu_j, net_j, 0, 0, 0);
    jl_thread *t = jl_threads_get(-1, 1);
    if (t) {
        snprintf(t->name, sizeof(t->name), "[VM]");
        t->kind = JL_K_VM;
        t->alive = 0;
        t->w_cpu_j += cpu_j;
        t->w_net_j += net_j;
    }
}

/* The window's distinct records (thread, frames, lines), in the order
 * first seen: where the first one is in jl_wbuf, the summed weights and
 * how many.  E_sample is linear in the weight, so each distinct stack is
 * priced once: the bookkeeping of a window (the methods', classes' and
 * call tree's tables, a walk of the stack's depth each) grows with its
 * distinct stacks, not with its samples (a hot loop sampled at 1 kHz is
 * one stack a thread). */
typedef struct jl_wstack {
    size_t at;
    int wt, count;
} jl_wstack;
static jl_wstack *jl_wd;
static size_t jl_nwd, jl_cwd;
static uint32_t *jl_wdh; /* open addressing: index + 1 into jl_wd, 0 empty */
static size_t jl_cwdh;   /* a power of two */

static uint64_t jl_wrec_hash(const int *r)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the words */
    h = (h ^ (uint32_t)r[0]) * 1099511628211ull;
    for (int i = 0; i <= 2 * r[2]; i++)
        h = (h ^ (uint32_t)r[2 + i]) * 1099511628211ull;
    return h;
}

/* Groups the window's records into jl_wd: 0, or -1 (out of memory). */
static int jl_window_group(void)
{
    size_t nrec = 0;
    for (size_t p = 0; p < jl_wn; p += 3 + 2 * (size_t)jl_wbuf[p + 2])
        nrec++;
    size_t cap = 64;
    while (cap < 2 * nrec)
        cap *= 2;
    if (cap > jl_cwdh) {
        uint32_t *h = realloc(jl_wdh, cap * sizeof(*h));
        if (!h)
            return -1;
        jl_wdh = h;
        jl_cwdh = cap;
    }
    memset(jl_wdh, 0, jl_cwdh * sizeof(*jl_wdh));
    if (PA__GROW(jl_wd, jl_cwd, nrec, 256) < 0)
        return -1;
    jl_nwd = 0;
    for (size_t p = 0; p < jl_wn; p += 3 + 2 * (size_t)jl_wbuf[p + 2]) {
        const int *r = &jl_wbuf[p];
        size_t k = jl_wrec_hash(r) & (jl_cwdh - 1);
        for (; jl_wdh[k]; k = (k + 1) & (jl_cwdh - 1)) {
            jl_wstack *d = &jl_wd[jl_wdh[k] - 1];
            const int *q = &jl_wbuf[d->at];
            if (q[0] == r[0] && q[2] == r[2] &&
                !memcmp(q + 3, r + 3, 2 * (size_t)r[2] * sizeof(int))) {
                d->wt += r[1];
                d->count++;
                break;
            }
        }
        if (!jl_wdh[k]) {
            jl_wd[jl_nwd] = (jl_wstack){.at = p, .wt = r[1], .count = 1};
            jl_wdh[k] = (uint32_t)++jl_nwd;
        }
    }
    return 0;
}

/* E_sample of count records at p in jl_wbuf whose weights sum to wt. */
static void jl_window_price(size_t p, int wt, int count)
{
    pid_t tid = jl_wbuf[p];
    int n = jl_wbuf[p + 2];
    jl_thread *t = jl_threads_get(tid, 0);
    /* a sample of a thread filed as a pseudo-thread is counted, its
     * energy stays with the pseudo-frame */
    int java = t && t->kind == JL_K_JAVA;
    double w = java ? jl_attrib_sample(t->w_cpu_j, wt, t->w_samples, 1) : 0;
    double c = java ? jl_attrib_sample(t->w_cpu_s, wt, t->w_samples, 1) : 0;
    jl_profile_add(&jl_wbuf[p + 3], &jl_wbuf[p + 3 + n], n, w, 0, 0, c, count);
}

/* E_sample, and the threads' energy that no sample holds on their
 * pseudo-frames (attrib.c; thr lock held, after jl_window_split). */
static void jl_window_samples(double vm)
{
    if (jl_window_group() == 0) {
        for (size_t i = 0; i < jl_nwd; i++)
            jl_window_price(jl_wd[i].at, jl_wd[i].wt, jl_wd[i].count);
    } else { /* out of memory: one sample at a time */
        for (size_t p = 0; p < jl_wn; p += 3 + 2 * (size_t)jl_wbuf[p + 2])
            jl_window_price(p, jl_wbuf[p + 1], 1);
    }
    for (size_t i = 0; i < jl_athr_n; i++) {
        int frame = jl_athr[i].frame;
        if (jl_thr.v[i].w_cpu_j > 0 && frame >= 0)
            jl_profile_add(&frame, NULL, 1, jl_thr.v[i].w_cpu_j, 0, 0, jl_thr.v[i].w_cpu_s, 0);
    }
    if (vm > 0) /* no thread had CPU time in the window (or rounding) */
        jl_window_vm(vm, 0);
}

/* E_net: the window's network energy over the byte records; returns the
 * window's socket bytes. */
static uint64_t jl_window_net(double dnic)
{
    jl_nn = 0;
    jl_net_drain(jl_on_net_collect, NULL);
    jl_netw nw = {.nic_j = dnic, .total = 0};
    for (size_t i = 0; i < jl_nn; i++)
        nw.total += jl_nitems[i].bytes;
    for (size_t i = 0; i < jl_nn; i++)
        jl_on_net(jl_nitems[i].r, jl_nitems[i].bytes, &nw);
    double left = jl_attrib_net_left(dnic, (double)nw.total);
    if (left > 0)
        jl_window_vm(0, left);
    jl_net_new_window();
    return nw.total;
}

/* The threads' totals, the profile's counters and the window's top
 * methods for timeline.csv. */
static void jl_window_close(double now, double interval, double dcpu, double dnic)
{
    for (size_t i = 0; i < jl_thr.n; i++) {
        jl_thread *t = &jl_thr.v[i];
        t->cpu_s += t->w_cpu_s;
        t->cpu_j += t->w_cpu_j;
        t->net_j += t->w_net_j;
        t->energy_j = t->cpu_j + t->net_j;
        t->net_bytes += t->w_net_bytes;
        t->w_cpu_s = t->w_cpu_j = t->w_net_j = 0;
        t->w_net_bytes = 0;
        t->w_samples = 0;
    }
    if (jl_wn == 0 && dcpu > 0)
        jl_prof.windows_empty++; /* its Java energy is [unattributed] */
    jl_wn = 0;
    jl_prof.process_cpu_j += dcpu;
    jl_prof.process_nic_j += dnic;
    jl_prof.process_j = jl_prof.process_cpu_j + jl_prof.process_nic_j;
    jl_prof.unattributed_j = jl_prof.ms[JL_M_UNATTRIBUTED].self_j;
    jl_prof.windows++;
    jl_prof.duration_s = now - jl_prof.start_s;
    /* samples: in the profile; dropped: by the handler (ring full) or here */
    jl_prof.samples = jl_windows_samples();
    jl_prof.samples_dropped = atomic_load(&jl_smp.dropped) + jl_drain_dropped;
    static int top[1000]; /* top=N is at most 1000 (options.c) */
    static double top_j[1000];
    int k = interval > 0 ? (jl_run.o.top < 1000 ? jl_run.o.top : 1000) : 0;
    k = pc_stat_window_top(jl_prof.ms, jl_prof.nm, k, top, top_j);
    for (int i = 0; i < k; i++) {
        if (PA__GROW(jl_prof.tl, jl_prof.captl, jl_prof.ntl + 1, 1024) < 0)
            break;
        jl_prof.tl[jl_prof.ntl].start_s = now - interval - jl_prof.start_s;
        jl_prof.tl[jl_prof.ntl].method = top[i];
        jl_prof.tl[jl_prof.ntl].power_w = top_j[i] / interval;
        jl_prof.ntl++;
    }
}

void jl_process_window(int final)
{
    double now = jl_now_s();
    double interval = now - jl_last_window_s;
    jl_last_window_s = now;
    double dcpu, dnic;
    int rc = jl_window_power(now, interval, &dcpu, &dnic);
    jl_drain();
    pthread_mutex_lock(&jl_thr.lock);
    jl_window_threads(rc);
    jl_window_count();
    double vm = jl_window_split(dcpu);
    jl_window_samples(vm);
    uint64_t bytes = jl_window_net(dnic);
    double cpu_s = 0;
    for (size_t i = 0; i < jl_thr.n; i++)
        cpu_s += jl_thr.v[i].w_cpu_s;
    jl_scopes_window(dcpu, cpu_s, dnic, bytes);
    jl_trace_window(dcpu, cpu_s, dnic, bytes);
    jl_window_close(now, interval, dcpu, dnic);
    pthread_mutex_unlock(&jl_thr.lock);
    jl_write_all(&jl_run.o, final);
    jl_push_window(final);
}

void jl_windows_start(double now)
{
    jl_last_window_s = now;
}

void jl_windows_reset(void)
{
    jl_wn = 0;
    jl_drain_dropped = 0;
    memset(&jl_cum_cpu, 0, sizeof(jl_cum_cpu));
    memset(&jl_cum_nic, 0, sizeof(jl_cum_nic));
    jl_power_warned = 0;
}

uint64_t jl_windows_samples(void)
{
    return atomic_load(&jl_smp.taken) - jl_drain_dropped;
}
