/*
 * window.c - a window's energy, split over the targets' processes, their
 * threads and their samples (DESIGN.md section 13.2), as jalen splits a
 * JVM's (section 6.4):
 *   E_thread = E_process . cputime_thread / cputime_process_threads
 *   E_sample = E_thread / samples_of_thread
 * A thread with energy but no sample keeps it as [unsampled]; process
 * energy no thread's CPU time explains, and the energy of processes that
 * lived and died between two ticks (the caller's extra_j), goes to the
 * samples of the processes the report did not have, else to
 * [unattributed].  Nothing is dropped: functions + [unsampled] +
 * [unattributed] = threads = process, every window.
 */
#include "profcore.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

double pc_cum_delta(pc_cum *c, double now)
{
    double d = c->have ? now - c->last : now;
    c->last = now;
    c->have = 1;
    return d > 0 ? d : 0;
}

/* ---- the tables ---- */

static uint64_t proc_key(pid_t pid)
{
    return pa__hash_u64((uint64_t)(uint32_t)pid);
}

static uint64_t thr_key(pid_t pid, pid_t tid)
{
    return pa__hash_pair((uint64_t)(uint32_t)pid, (uint64_t)(uint32_t)tid);
}

static uint64_t proc_key_at(const void *user, size_t i)
{
    return proc_key(((const pc_tasks *)user)->procs[i].pid);
}

static uint64_t thr_key_at(const void *user, size_t i)
{
    const pc_thr *h = &((const pc_tasks *)user)->thrs[i];
    return thr_key(h->pid, h->tid);
}

/* The slot of pid in the index: its entry's, or the empty one where it
 * would go. */
static size_t proc_slot(const pc_tasks *t, pid_t pid)
{
    size_t q = proc_key(pid) & (t->phcap - 1);
    while (t->phash[q] && t->procs[t->phash[q] - 1].pid != pid)
        q = (q + 1) & (t->phcap - 1);
    return q;
}

pc_proc *pc_tasks_proc_find(pc_tasks *t, pid_t pid)
{
    if (!t->phcap)
        return NULL;
    int at = t->phash[proc_slot(t, pid)];
    return at ? &t->procs[at - 1] : NULL;
}

pc_proc *pc_tasks_proc(pc_tasks *t, pid_t pid)
{
    pc_proc *p = pc_tasks_proc_find(t, pid);
    if (p)
        return p;
    if (pa__index_reserve(&t->phash, &t->phcap, 64, 0, t->nprocs, proc_key_at, t) < 0 ||
        PA__GROW(t->procs, t->capprocs, t->nprocs + 1, 16) < 0)
        return NULL;
    t->phash[proc_slot(t, pid)] = (int)t->nprocs + 1;
    p = &t->procs[t->nprocs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    return p;
}

pc_thr *pc_tasks_thr(pc_tasks *t, pid_t pid, pid_t tid)
{
    if (pa__index_reserve(&t->thash, &t->thcap, 256, 0, t->nthrs, thr_key_at, t) < 0)
        return NULL;
    size_t q = thr_key(pid, tid) & (t->thcap - 1);
    for (; t->thash[q]; q = (q + 1) & (t->thcap - 1)) {
        pc_thr *h = &t->thrs[t->thash[q] - 1];
        if (h->tid == tid && h->pid == pid)
            return h;
    }
    if (PA__GROW(t->thrs, t->capthrs, t->nthrs + 1, 64) < 0)
        return NULL;
    t->thash[q] = (int)t->nthrs + 1;
    pc_thr *h = &t->thrs[t->nthrs++];
    memset(h, 0, sizeof(*h));
    h->pid = pid;
    h->tid = tid;
    return h;
}

const char *pc_tasks_comm(pc_tasks *t, pid_t pid)
{
    pc_proc *p = pc_tasks_proc_find(t, pid);
    return p ? p->comm : "";
}

void pc_tasks_set_comm(pc_tasks *t, pid_t pid, const char *comm)
{
    pc_proc *p = pc_tasks_proc(t, pid);
    if (p)
        snprintf(p->comm, sizeof(p->comm), "%.15s", comm);
}

static const char *thr_comm(pc_tasks *t, const pc_thr *h)
{
    return h->comm[0] ? h->comm : pc_tasks_comm(t, h->pid);
}

void pc_tasks_free(pc_tasks *t)
{
    free(t->procs);
    free(t->thrs);
    free(t->phash);
    free(t->thash);
    t->procs = NULL;
    t->thrs = NULL;
    t->phash = t->thash = NULL;
    t->nprocs = t->capprocs = t->nthrs = t->capthrs = t->phcap = t->thcap = 0;
}

/* ---- a window ---- */

void pc_tasks_begin(pc_tasks *t)
{
    for (size_t i = 0; i < t->nprocs; i++) {
        t->procs[i].w_j = 0;
        t->procs[i].w_seen = false;
        t->procs[i].w_thr_cpu_s = 0;
    }
    for (size_t i = 0; i < t->nthrs; i++) {
        pc_thr *h = &t->thrs[i];
        h->w_cpu_s = 0;
        h->w_samples = 0;
        h->w_sampled_cpu_s = 0;
        h->w_first = false; /* w_exited: set since the last window */
        h->w_j = 0;
        h->w_reported = false;
    }
}

static bool is_target(pc_tasks *t, pid_t pid)
{
    return !t->is_target || t->is_target(t->user, pid);
}

static void report_process(pc_tasks *t, const pa_target_info *ti, pc_win *w)
{
    if (t->on_proc)
        t->on_proc(t->user, ti->pid);
    pc_proc *pr = pc_tasks_proc(t, ti->pid);
    if (!pr)
        return;
    if (!pr->comm[0])
        snprintf(pr->comm, sizeof(pr->comm), "%s", ti->comm);
    /* gone since its last reading: the time its samples show since then
     * is in no report, as an unseen process's */
    if ((ti->power.flags & PA_POWER_EXITED) && !(ti->power.cpu_time_s > 0))
        return;
    pr->w_j = pc_cum_delta(&pr->cum, ti->power.cpu_j);
    pr->w_seen = true;
    w->procs_j += pr->w_j;
    w->nic_j += ti->power.interval_s * ti->power.nic_w;
    w->cpu_s += ti->power.cpu_time_s;
}

static void report_thread(pc_tasks *t, const pa_target_info *ti)
{
    pc_thr *h = pc_tasks_thr(t, ti->pid, ti->tid);
    if (!h)
        return;
    if (ti->comm[0])
        snprintf(h->comm, sizeof(h->comm), "%s", ti->comm);
    h->w_cpu_s = ti->power.cpu_time_s > 0 ? ti->power.cpu_time_s : 0;
    h->w_reported = true;
    h->w_first = (ti->power.flags & PA_POWER_FIRST) != 0;
}

void pc_tasks_report(pc_tasks *t, const pa_report *rep, pc_win *w)
{
    memset(w, 0, sizeof(*w));
    for (size_t i = 0; rep && i < rep->ntargets; i++) {
        const pa_target_info *ti = &rep->targets[i];
        if (!is_target(t, ti->pid))
            continue;
        if (ti->type == PA_TARGET_PROCESS)
            report_process(t, ti, w);
        else if (ti->type == PA_TARGET_THREAD)
            report_thread(t, ti);
    }
}

void pc_tasks_sample(pc_tasks *t, pid_t pid, pid_t tid, uint64_t period_ns)
{
    pc_thr *h = pc_tasks_thr(t, pid, tid);
    if (h) {
        h->w_samples++;
        h->w_sampled_cpu_s += (double)period_ns * 1e-9;
    }
}

/* s is the CPU time of the processes the report has, E their energy, R
 * the active energy (the report's CPU power minus its idle power, over
 * the window) that no process got, u the unseen processes' samples x
 * period (0 with cycles, whose period is no time).  A formula that leaves
 * the time of unseen tasks out of its split (cpu-tdp) has that energy in
 * R, at the processes' rate: u . E / s is taken from R.  One that spreads
 * it over the processes seen, so that processes + idle = P (rapl-share,
 * cpu-curve with every process watched), has R = 0 and the processes
 * seen too much: the unseen get (E + R) . u / (s + u), R first and the
 * rest taken from the processes seen in proportion.  The two agree where
 * R is just enough. */
double pc_tasks_unseen(pc_tasks *t, const pa_report *rep, pc_win *w)
{
    double e = w->procs_j, s = w->cpu_s;
    if (!t->period_is_time || !(s > 0) || !(e > 0))
        return 0;
    double u = 0;
    for (size_t i = 0; i < t->nthrs; i++) {
        pc_proc *pr = pc_tasks_proc_find(t, t->thrs[i].pid);
        if (pr && !pr->w_seen)
            u += t->thrs[i].w_sampled_cpu_s;
    }
    if (!(u > 0))
        return 0;
    double r = (rep->system.cpu_w - rep->system.idle_w) * rep->system.interval_s - e;
    if (!(r > 0))
        r = 0;
    double at_rate = e * u / s;
    if (r >= at_rate)
        return at_rate;
    double x = (e + r) * u / (s + u);
    double take = x - r; /* from the processes seen */
    for (size_t i = 0; i < t->nprocs; i++)
        if (t->procs[i].w_seen)
            t->procs[i].w_j *= 1 - take / e;
    w->procs_j = e - take;
    return x;
}

/* A thread that exited in the window is not in the report (nor the CPU
 * time it used since the last tick, though its process's total has it):
 * its samples x period stand for its CPU time; and so where the report is
 * short of the samples by more than their noise (3 sigma of the count,
 * plus two 10 ms clock ticks of the report's own rounding): a reading
 * libpowerapi missed. */
static void threads_cpu(pc_tasks *t)
{
    for (size_t i = 0; i < t->nthrs && t->period_is_time; i++) {
        pc_thr *h = &t->thrs[i];
        if (h->w_sampled_cpu_s <= h->w_cpu_s)
            continue;
        double period = h->w_samples ? h->w_sampled_cpu_s / (double)h->w_samples : 0;
        double noise = 3.0 * sqrt((double)h->w_samples) * period + 0.02;
        if (!h->w_reported || h->w_exited || h->w_first || h->w_sampled_cpu_s - h->w_cpu_s > noise)
            h->w_cpu_s = h->w_sampled_cpu_s;
    }
}

/* E_thread = E_process . cpu_thread / cpu_threads; returns the samples of
 * the processes the report did not have. */
static double threads_energy(pc_tasks *t)
{
    for (size_t i = 0; i < t->nthrs; i++) {
        pc_proc *pr = pc_tasks_proc_find(t, t->thrs[i].pid);
        if (pr)
            pr->w_thr_cpu_s += t->thrs[i].w_cpu_s;
    }
    double unplaced = 0;
    for (size_t i = 0; i < t->nthrs; i++) {
        pc_thr *h = &t->thrs[i];
        pc_proc *pr = pc_tasks_proc_find(t, h->pid);
        if (!pr)
            continue;
        if (pr->w_seen && pr->w_thr_cpu_s > 0)
            h->w_j = pr->w_j * h->w_cpu_s / pr->w_thr_cpu_s;
        else if (!pr->w_seen)
            unplaced += (double)h->w_samples;
    }
    return unplaced;
}

/* Process energy no thread's CPU time explains: the process's samples,
 * else [unattributed]. */
static void process_samples(pc_tasks *t, pc_proc *pr, pc_prof *p)
{
    uint64_t s = 0;
    for (size_t k = 0; k < t->nthrs; k++)
        if (t->thrs[k].pid == pr->pid)
            s += t->thrs[k].w_samples;
    if (!s) {
        pc_prof_add_pseudo(p, "[unattributed]", pr->w_j, pr->pid, 0, pr->comm, "[process]");
        return;
    }
    for (size_t k = 0; k < t->nthrs; k++)
        if (t->thrs[k].pid == pr->pid)
            t->thrs[k].w_j += pr->w_j * (double)t->thrs[k].w_samples / (double)s;
}

void pc_tasks_split(pc_tasks *t, pc_win *w, pc_prof *p, pid_t fallback_pid)
{
    w->window_j = w->procs_j + w->extra_j;
    threads_cpu(t);
    double unplaced = threads_energy(t);
    for (size_t i = 0; i < t->nprocs; i++) {
        pc_proc *pr = &t->procs[i];
        if (pr->w_seen && pr->w_j > 0 && !(pr->w_thr_cpu_s > 0))
            process_samples(t, pr, p);
    }
    /* the extra energy: samples of the processes the report did not have
     * (short-lived), else [unattributed] */
    for (size_t i = 0; i < t->nthrs && w->extra_j > 0 && unplaced > 0; i++) {
        pc_thr *h = &t->thrs[i];
        pc_proc *pr = pc_tasks_proc_find(t, h->pid);
        if (pr && !pr->w_seen)
            h->w_j += w->extra_j * (double)h->w_samples / unplaced;
    }
    if (w->extra_j > 0 && unplaced <= 0)
        pc_prof_add_pseudo(p, "[unattributed]", w->extra_j, fallback_pid, 0, "", "[process]");
}

int pc_tasks_charge(pc_tasks *t, pc_prof *p, pid_t pid, pid_t tid, uint64_t period_ns,
                    const pc_frame *frames, int n)
{
    pc_thr *h = pc_tasks_thr(t, pid, tid);
    double e = h && h->w_samples ? h->w_j / (double)h->w_samples : 0;
    double cpu = t->period_is_time ? (double)period_ns * 1e-9 : 0;
    return pc_prof_add(p, frames, n, e, cpu, 1, pid, tid, pc_tasks_comm(t, pid),
                       h ? thr_comm(t, h) : "");
}

void pc_tasks_end(pc_tasks *t, pc_prof *p)
{
    for (size_t i = 0; i < t->nthrs; i++) {
        pc_thr *h = &t->thrs[i];
        const char *pcomm = pc_tasks_comm(t, h->pid);
        if (h->w_cpu_s > 0)
            pc_prof_thread_cpu(p, h->pid, h->tid, pcomm, thr_comm(t, h), h->w_cpu_s);
        if (h->w_j > 0 && !h->w_samples)
            pc_prof_add_pseudo(p, "[unsampled]", h->w_j, h->pid, h->tid, pcomm, thr_comm(t, h));
    }
    for (size_t i = 0; i < t->nthrs; i++)
        t->thrs[i].w_exited = false;
}

/* Every stack of the window, with its frames, to the profile. */
static void charge_stacks(pc_tasks *t, pc_prof *p, const pc_engine *e)
{
    pc_frame fr[PC_MAX_DEPTH];
    size_t at = 0, here;
    pid_t pid, tid;
    uint64_t weight;
    while (here = at, e->next(e->self, &at, &pid, &tid, &weight)) {
        int nf = e->frames(e->self, here, fr, PC_MAX_DEPTH);
        pc_tasks_charge(t, p, pid, tid, weight, fr, nf);
    }
}

void pc_tasks_window(pc_tasks *t, pc_prof *p, const pc_engine *e, const pa_report *rep, pc_win *w)
{
    pc_tasks_begin(t);
    pc_tasks_report(t, rep, w);
    size_t at = 0;
    pid_t pid, tid;
    uint64_t weight;
    while (e->next(e->self, &at, &pid, &tid, &weight))
        pc_tasks_sample(t, pid, tid, weight);
    w->extra_j = t->extra ? t->extra(t->user, rep, w) : 0;
    double f0, t0, f1, t1;
    pc_prof_sums(p, &f0, &t0);
    pc_tasks_split(t, w, p, t->fallback_pid);
    charge_stacks(t, p, e);
    pc_tasks_end(t, p);
    e->window_done(e->self);
    /* conservation: functions (pseudo-frames included) = threads = the
     * window's energy */
    pc_prof_sums(p, &f1, &t1);
    double scale = w->window_j > 1e-9 ? w->window_j : 1e-9;
    double e1 = fabs((f1 - f0) - w->window_j) / scale;
    double e2 = fabs((t1 - t0) - w->window_j) / scale;
    w->error = w->window_j > 1e-9 ? (e1 > e2 ? e1 : e2) : 0;
}
