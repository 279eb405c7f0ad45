/*
 * sampler.c - SIGPROF CPU-time timers and AsyncGetCallTrace into a
 * preallocated ring (the async-profiler pattern).
 *
 * Each Java thread has a clock that sends SIGPROF to that very thread
 * every `interval` of its CPU time, so samples fall in proportion to CPU
 * time, with no safepoint bias: perf's cpu-clock event opened on the
 * thread (an hrtimer that runs while the thread runs, in user and kernel
 * mode alike; its overflow sends the thread SIGTRAP itself, on the way
 * back to user mode (perf_event_attr.sigtrap), or, on a kernel before
 * 5.13 or with signal=prof, SIGPROF through F_SETOWN_EX), or,
 * where the kernel refuses kernel samples to this process, a POSIX timer
 * on the thread's CPU-time clock (SIGEV_THREAD_ID).  The timer's expiry is
 * only seen at a scheduler tick that finds the thread running: at most
 * CONFIG_HZ samples a CPU-second whatever the interval.  Neither clock is
 * exact for a thread that parks often (DESIGN.md section 11,
 * bench/bench_jalen_park.sh: 8-12 % of such a thread's CPU measured
 * inside park(), 2-5 % of its samples from the timer, 23-27 % from perf's
 * clock).
 * The handler takes no lock, never allocates: it claims the lowest free
 * slot with one compare-and-swap (another on a race), or counts a drop.
 */
#include "jalen.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

jl_sampler jl_smp;

/* Each thread's open scope for the handler: slot tid % JL_SCOPE_TIDS
 * holds tid << 32 | code.  Two threads whose tids share a slot overwrite
 * each other: a sample then finds another tid and no scope (rare: 16,384
 * slots). */
#define JL_SCOPE_TIDS 16384
static _Atomic uint64_t jl_scope_cur[JL_SCOPE_TIDS];

void jl_sampler_set_scope(pid_t tid, int code)
{
    atomic_store_explicit(&jl_scope_cur[(uint32_t)tid % JL_SCOPE_TIDS],
                          (uint64_t)(uint32_t)tid << 32 | (uint32_t)code, memory_order_relaxed);
}

int jl_sampler_scope(pid_t tid)
{
    uint64_t v =
        atomic_load_explicit(&jl_scope_cur[(uint32_t)tid % JL_SCOPE_TIDS], memory_order_relaxed);
    return (pid_t)(v >> 32) == tid ? (int)(v & 0xffffffffu) : 0;
}

/* The lowest free slot, so that the handler writes where it wrote a
 * drain ago rather than across the whole ring: between two drains (50
 * ms) two threads at 1 kHz use the first hundred slots, 200 KiB, again
 * and again, where a round-robin ring moved through all 2048 (4 MiB)
 * once a second.  Memory a second cold costs several microseconds to
 * touch after the timer's interrupt on a virtual machine (its pages'
 * translations are gone): the handler's mean time per sample fell from
 * 20-21 to 12-14 us on this change (the timing build, three interleaved
 * runs each; DESIGN.md section 11). */
jl_slot *jl_slot_claim(void)
{
    for (int w = 0; w < JL_RING_WORDS; w++) {
        uint64_t v = atomic_load_explicit(&jl_smp.free_bits[w], memory_order_relaxed);
        /* a failed exchange reloads v: another handler took a slot */
        while (v) {
            int b = __builtin_ctzll(v);
            if (atomic_compare_exchange_weak_explicit(&jl_smp.free_bits[w], &v,
                                                      v & ~(UINT64_C(1) << b), memory_order_acquire,
                                                      memory_order_relaxed))
                return &jl_smp.slots[w * 64 + b];
        }
    }
    atomic_fetch_add_explicit(&jl_smp.dropped, 1, memory_order_relaxed);
    return NULL;
}

void jl_slot_publish(jl_slot *s)
{
    size_t i = (size_t)(s - jl_smp.slots);
    atomic_fetch_add_explicit(&jl_smp.taken, 1, memory_order_relaxed);
    atomic_fetch_or_explicit(&jl_smp.ready_bits[i / 64], UINT64_C(1) << (i % 64),
                             memory_order_release);
}

#ifdef JL_TIME_HANDLER
/* the timing build only: JALEN_TIME_NO_RECOVERY=1 turns recovery off, so
 * that the handler's time is compared with and without it in one binary;
 * JALEN_TIME_EMPTY=1 makes the handler return at once (counted, timed): the
 * clock and the signal alone, the floor of any profiler that samples with
 * them (bench_jalen_cost.sh's "floor") */
static int jl_no_recovery, jl_time_empty;
/* JALEN_TIME_CPU=1: the handler's CPU time (the thread's clock, a system
 * call) rather than its wall time (the host's preemptions left out) */
static clockid_t jl_time_clock = CLOCK_MONOTONIC;
#define JL_RECOVER (!jl_no_recovery)
static uint64_t jl_ns(void)
{
    struct timespec ts;
    clock_gettime(jl_time_clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#else
#define JL_RECOVER 1
#endif

/* A walk that AsyncGetCallTrace failed, retried where unwind.c can
 * (DESIGN.md section 11.1); what failed is counted by cause.  Returns the
 * kind of a partial stack (the top frame alone), 0 for none. */
static int jl_walk_recover(jl_asgct_trace *tr, void *uc, JNIEnv *env, pid_t tid, jl_why *why)
{
    int partial = 0;
    /* ticks_unknown_Java: the top frame is unfinished, or native code
     * called from Java (ticks_not_walkable_Java, a frame further down that
     * is not walkable, is not retried: the top frame was fine there) */
    if (JL_RECOVER && (tr->num_frames == -5 || tr->num_frames == -6)) {
        int code = tr->num_frames;
        atomic_fetch_add_explicit(&jl_smp.walks_failed, 1, memory_order_relaxed);
        if (code == -6) {
            why->cause = JL_WHY_NOT_WALKABLE_JAVA;
            why->detail = jl_unwind_where(uc);
        }
        /* not walkable Java with the PC in the interpreter: an entry
         * before its frame is made (unwind.c) */
        if ((code == -5 || (code == -6 && jl_unwind_in_interpreter(uc))) &&
            jl_unwind_retry(tr, JL_MAX_DEPTH, uc, tid, 0, why))
            atomic_fetch_add_explicit(&jl_smp.walks_recovered, 1, memory_order_relaxed);
        else {
            tr->num_frames = code;
            jl_unwind_pc_frame(uc, why);
        }
    }
    /* inside the VM, its last Java frame not walkable yet */
    if (JL_RECOVER && (tr->num_frames == -3 || tr->num_frames == -4)) {
        int code = tr->num_frames;
        atomic_fetch_add_explicit(&jl_smp.walks_failed, 1, memory_order_relaxed);
        int got = jl_unwind_walk_anchor(tr, JL_MAX_DEPTH, uc, env, tid, why);
        if (got)
            atomic_fetch_add_explicit(&jl_smp.walks_recovered, 1, memory_order_relaxed);
        else
            tr->num_frames = code;
        partial = got == 2 ? 2 : 0;
    }
    if (tr->num_frames <= 0 && why->cause != JL_WHY_NONE) {
        jl_why_count(why);
        /* the deepest Java frame known for sure, alone, rather than a
         * root-level pseudo-frame (DESIGN.md section 11.1) */
        if (why->part && why->method) {
            tr->frames[0].lineno = why->bci;
            tr->frames[0].method_id = why->method;
            tr->num_frames = 1;
            partial = why->part;
            atomic_fetch_add_explicit(&jl_smp.walks_partial, 1, memory_order_relaxed);
        }
    }
    return partial;
}

/* The stack of a Java thread the signal interrupted, into s. */
static void jl_walk(jl_slot *s, JNIEnv *env, void *uc)
{
    jl_asgct_trace tr = {.env_id = env, .num_frames = 0, .frames = s->frames};
    int partial = 0; /* the top frame alone (jl_unwind_walk_anchor) */
    jl_why why = {JL_WHY_NONE, 0, 0, 0, NULL};
    if (JL_RECOVER && jl_unwind_retry(&tr, JL_MAX_DEPTH, uc, s->tid, 1, &why)) {
        /* in a stub: walked from its caller at once (unwind.c) */
        atomic_fetch_add_explicit(&jl_smp.walks_failed, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&jl_smp.walks_recovered, 1, memory_order_relaxed);
    } else {
        why = (jl_why){JL_WHY_NONE, 0, 0, 0, NULL}; /* only for a walk that fails below */
        /* in native code: walked from the return into Java code, the
         * call's scope; at a debug record: decoded from the PC before it,
         * whose scope the sample's time belongs to (DESIGN.md section
         * 11.1); a walk that gives nothing is made again from the PC as it
         * is */
        if (!(JL_RECOVER && jl_unwind_walk_native(&tr, JL_MAX_DEPTH, uc, env, s->tid)) &&
            !jl_unwind_walk_interrupted(&tr, JL_MAX_DEPTH, uc))
            jl_smp.asgct(&tr, JL_MAX_DEPTH, uc);
        partial = jl_walk_recover(&tr, uc, env, s->tid, &why);
    }
    s->n = tr.num_frames;
    s->truncated = partial ? partial : tr.num_frames >= JL_MAX_DEPTH;
}

static void jl_on_sigprof(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    int saved = errno;
#ifdef JL_TIME_HANDLER
    uint64_t t0 = jl_ns();
    if (jl_time_empty)
        goto timed;
#endif
    if (!atomic_load_explicit(&jl_smp.on, memory_order_acquire) ||
        atomic_load_explicit(&jl_smp.paused, memory_order_relaxed))
        goto out;
    JNIEnv *env = NULL;
    /* GetEnv only reads the thread-local Thread*: what async-profiler does */
    if ((*jl_smp.vm)->GetEnv(jl_smp.vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK)
        env = NULL;
    jl_slot *s = jl_slot_claim();
    if (!s)
        goto out;
    s->tid = jl_gettid();
    s->scope = jl_sampler_scope(s->tid);
    s->truncated = 0;
    /* a late signal stands for every interval that expired meanwhile */
    s->weight = jl_smp.interval_us *
                (1 + (si && si->si_code == SI_TIMER && si->si_overrun > 0 ? si->si_overrun : 0));
    if (!env)
        s->n = -3; /* ticks_unknown_not_Java */
    else
        jl_walk(s, env, uc);
    jl_slot_publish(s);
#ifdef JL_TIME_HANDLER
timed:;
    uint64_t dt = jl_ns() - t0;
    atomic_fetch_add_explicit(&jl_smp.t_total_ns, dt, memory_order_relaxed);
    atomic_fetch_add_explicit(&jl_smp.t_hist[dt / 500 < 511 ? dt / 500 : 511], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&jl_smp.t_n, 1, memory_order_relaxed);
#endif
out:
    errno = saved;
}

static int jl_perf_open(pid_t tid, int trap);

#ifndef TRAP_PERF
#define TRAP_PERF 6 /* <asm-generic/siginfo.h>: a perf event with sigtrap */
#endif
/* sig_data of jalen's perf events, which their SIGTRAP carries */
#define JL_TRAP_DATA 0x6a616c656eul /* "jalen" */

/* siginfo's si_perf_data (the event's sig_data), which glibc 2.36 does not
 * name: the word after si_addr in the fault fields (<asm-generic/
 * siginfo.h>, the same on every 64-bit architecture). */
static unsigned long jl_si_perf_data(const siginfo_t *si)
{
    unsigned long d;
    memcpy(&d, (const char *)&si->si_addr + sizeof(void *), sizeof(d));
    return d;
}

static struct sigaction jl_old_trap; /* SIGTRAP's action before ours */
static int jl_trap_installed;

/* A sample from perf's clock; any other SIGTRAP (a breakpoint, kill, a
 * perf event not ours) goes to the action that was there before. */
static void jl_on_sigtrap(int sig, siginfo_t *si, void *uc)
{
    if (si && si->si_code == TRAP_PERF && jl_si_perf_data(si) == JL_TRAP_DATA) {
        jl_on_sigprof(sig, si, uc);
        return;
    }
    if (jl_old_trap.sa_flags & SA_SIGINFO) {
        if (jl_old_trap.sa_sigaction)
            jl_old_trap.sa_sigaction(sig, si, uc);
    } else if (jl_old_trap.sa_handler == SIG_DFL) {
        /* blocked until this handler returns, then the default action */
        sigaction(SIGTRAP, &jl_old_trap, NULL);
        raise(SIGTRAP);
    } else if (jl_old_trap.sa_handler != SIG_IGN) {
        jl_old_trap.sa_handler(sig);
    }
}

/* Opens and closes perf's clock on this thread (trap: with sigtrap), so
 * that an option asking for it by name is refused now, in one line
 * ("WHAT: the error (HINT)"), rather than threads left without a clock. */
static int jl_perf_probe(int trap, const char *what, const char *hint, char *err, size_t errlen)
{
    int fd = jl_perf_open(jl_gettid(), trap);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s (%s)", what, strerror(-fd), hint);
        return fd;
    }
    close(fd);
    return 0;
}

/* fn as sig's handler (SA_SIGINFO, SA_RESTART, nothing else blocked);
 * old, when not NULL, gets the action it replaces. */
static int jl_handler_install(int sig, void (*fn)(int, siginfo_t *, void *), struct sigaction *old,
                              char *err, size_t errlen)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, old) < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot install the %s handler: %s",
                 sig == SIGTRAP ? "SIGTRAP" : "SIGPROF", strerror(e));
        return -e;
    }
    return 0;
}

/* SIGTRAP's handler, unless signal=prof; signal=trap that the kernel
 * refuses is an error now rather than threads without a clock. */
static int jl_sigtrap_init(char *err, size_t errlen)
{
    if (jl_smp.signal == JL_SIG_PROF)
        return 0;
    int rc;
    if (jl_smp.signal == JL_SIG_TRAP &&
        (rc = jl_perf_probe(1, "signal=trap: perf_event_open with sigtrap",
                            "Linux 5.13 or later; signal=auto falls back to SIGPROF", err,
                            errlen)) < 0)
        return rc;
    if (jl_trap_installed)
        return 0;
    if ((rc = jl_handler_install(SIGTRAP, jl_on_sigtrap, &jl_old_trap, err, errlen)) < 0)
        return rc;
    jl_trap_installed = 1;
    return 0;
}

int jl_sampler_init(JavaVM *vm, const jl_opts *o, char *err, size_t errlen)
{
    uint64_t interval_ns = o->interval_ns;
    int mode = o->mode, clock = o->clock;
    jl_smp.vm = vm;
    jl_smp.clock = clock;
    jl_smp.signal = clock == JL_CLOCK_TIMER ? JL_SIG_PROF : o->signal;
    atomic_store(&jl_smp.trap_refused, 0);
    atomic_store(&jl_smp.n_trap, 0);
    jl_smp.interval_ns = interval_ns;
    jl_smp.interval_us = (int)(interval_ns / 1000 ? interval_ns / 1000 : 1);
    /* a new run in the same JVM keeps the ring (drained at the end of the
     * last one) and counts from zero */
    atomic_store(&jl_smp.taken, 0);
    atomic_store(&jl_smp.dropped, 0);
    atomic_store(&jl_smp.walks_failed, 0);
    atomic_store(&jl_smp.walks_recovered, 0);
    atomic_store(&jl_smp.walks_partial, 0);
    jl_why_reset();
    atomic_store(&jl_smp.perf_errno, 0);
    atomic_store(&jl_smp.n_perf, 0);
    atomic_store(&jl_smp.n_timer, 0);
    /* mmap: zeroed, and not on the malloc heap the JVM shares */
    void *mem = jl_smp.slots ? (void *)jl_smp.slots
                             : mmap(NULL, sizeof(jl_slot) * JL_RING_SLOTS, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        snprintf(err, errlen, "cannot map the sample ring: %s", strerror(errno));
        return -ENOMEM;
    }
    if (!jl_smp.slots)
        for (int w = 0; w < JL_RING_WORDS; w++)
            atomic_store(&jl_smp.free_bits[w], ~UINT64_C(0));
    jl_smp.slots = mem;
#ifdef JL_TIME_HANDLER
    jl_no_recovery = getenv("JALEN_TIME_NO_RECOVERY") != NULL;
    jl_time_empty = getenv("JALEN_TIME_EMPTY") != NULL;
    jl_time_clock = getenv("JALEN_TIME_CPU") ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
#endif
    /* also the cheap stack walk of the net wrappers, in either mode */
    jl_smp.asgct = (jl_asgct_fn)dlsym(RTLD_DEFAULT, "AsyncGetCallTrace");
    if (mode != JL_MODE_CPU)
        return 0;
    if (!jl_smp.asgct) {
        snprintf(err, errlen, "AsyncGetCallTrace not found in this JVM");
        return -ENOSYS;
    }
    int rc;
    if (clock == JL_CLOCK_PERF &&
        (rc = jl_perf_probe(0, "clock=perf: perf_event_open",
                            "kernel samples need root, CAP_PERFMON or perf_event_paranoid <= 1; "
                            "clock=auto falls back to the timers",
                            err, errlen)) < 0)
        return rc;
    if ((rc = jl_handler_install(SIGPROF, jl_on_sigprof, NULL, err, errlen)) < 0)
        return rc;
    return jl_sigtrap_init(err, errlen);
}

/* perf's cpu-clock event on thread tid, disabled, sending SIGTRAP at each
 * overflow when trap (jl_on_sigtrap tells it by JL_TRAP_DATA); -errno when
 * the kernel refuses it (kernel samples need root, CAP_PERFMON or
 * perf_event_paranoid <= 1; SIGTRAP, Linux 5.13). */
static int jl_perf_open(pid_t tid, int trap)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = jl_smp.interval_ns;
    a.disabled = 1;
    a.exclude_hv = 1; /* kernel time is the point: exclude_kernel stays 0 */
    if (trap) {
        a.sigtrap = 1;
        a.remove_on_exec = 1; /* the kernel's condition for sigtrap */
        a.sig_data = JL_TRAP_DATA;
    }
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* The event of jl_perf_open, signalling thread tid at each overflow,
 * enabled: with SIGTRAP unless signal=prof or the kernel refused it once,
 * else with SIGPROF. */
static int jl_perf_clock(pid_t tid)
{
    if (jl_smp.signal != JL_SIG_PROF && !atomic_load(&jl_smp.trap_refused)) {
        int fd = jl_perf_open(tid, 1);
        if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0) {
            atomic_fetch_add(&jl_smp.n_trap, 1);
            return fd;
        }
        int e = fd < 0 ? -fd : errno;
        if (fd >= 0)
            close(fd);
        /* a kernel without sigtrap says EINVAL; anything else is the
         * clock's own refusal, which SIGPROF would meet too */
        if (e != EINVAL || jl_smp.signal == JL_SIG_TRAP)
            return -e;
        atomic_store(&jl_smp.trap_refused, e);
    }
    int fd = jl_perf_open(tid, 0);
    if (fd < 0)
        return fd;
    struct f_owner_ex own = {.type = F_OWNER_TID, .pid = tid};
    if (fcntl(fd, F_SETFL, O_ASYNC) < 0 || fcntl(fd, F_SETSIG, SIGPROF) < 0 ||
        fcntl(fd, F_SETOWN_EX, &own) < 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

static int jl_posix_timer(pid_t tid, timer_t *out)
{
    clockid_t clk;
    if (tid == jl_gettid()) {
        clk = CLOCK_THREAD_CPUTIME_ID;
    } else {
        /* the kernel's CPU clock of another thread: MAKE_THREAD_CPUCLOCK */
        clk = (clockid_t)((~(unsigned)tid) << 3) | 6;
    }
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = tid;
    timer_t t;
    if (timer_create(clk, &sev, &t) < 0)
        return -errno;
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(jl_smp.interval_ns / 1000000000ull);
    its.it_interval.tv_nsec = (long)(jl_smp.interval_ns % 1000000000ull);
    its.it_value = its.it_interval;
    if (timer_settime(t, 0, &its, NULL) < 0) {
        int e = -errno;
        timer_delete(t);
        return e;
    }
    *out = t;
    return 0;
}

int jl_sampler_timer_create(pid_t tid, jl_timer *out)
{
    if (tid == 0)
        tid = jl_gettid();
    jl_timer tm = {.fd = -1};
    if (jl_smp.clock != JL_CLOCK_TIMER) {
        int fd = jl_perf_clock(tid);
        if (fd >= 0) {
            tm.fd = fd;
            atomic_fetch_add(&jl_smp.n_perf, 1);
            *out = tm;
            return 0;
        }
        atomic_store(&jl_smp.perf_errno, -fd);
        if (jl_smp.clock == JL_CLOCK_PERF)
            return fd;
    }
    int rc = jl_posix_timer(tid, &tm.t);
    if (rc < 0)
        return rc;
    atomic_fetch_add(&jl_smp.n_timer, 1);
    *out = tm;
    return 0;
}

void jl_sampler_timer_delete(jl_timer t)
{
    if (t.fd >= 0) {
        ioctl(t.fd, PERF_EVENT_IOC_DISABLE, 0);
        close(t.fd);
    } else {
        timer_delete(t.t);
    }
}

const char *jl_sampler_clock(char *why, size_t len)
{
    unsigned long p = atomic_load(&jl_smp.n_perf), t = atomic_load(&jl_smp.n_timer);
    int e = atomic_load(&jl_smp.perf_errno);
    why[0] = 0;
    if (jl_smp.clock == JL_CLOCK_TIMER)
        snprintf(why, len, "clock=timer");
    else if (e)
        snprintf(why, len, "perf_event_open: %s%s", strerror(e),
                 e == EACCES || e == EPERM
                     ? " (kernel samples need root, CAP_PERFMON or perf_event_paranoid <= 1)"
                     : "");
    if (p && t)
        return "perf-cpu-clock+thread-cpu-timer";
    return p ? "perf-cpu-clock" : "thread-cpu-timer";
}

const char *jl_sampler_signal(char *why, size_t len)
{
    unsigned long perf = atomic_load(&jl_smp.n_perf), trap = atomic_load(&jl_smp.n_trap);
    int e = atomic_load(&jl_smp.trap_refused);
    why[0] = '\0';
    if (e)
        snprintf(why, len, "perf_event_open refused sigtrap: %s (Linux 5.13 or later)",
                 strerror(e));
    else if (jl_smp.signal == JL_SIG_PROF && perf)
        snprintf(why, len, "signal=prof");
    if (!perf)
        return "";
    return trap == perf ? "SIGTRAP" : trap ? "SIGTRAP+SIGPROF" : "SIGPROF";
}

void jl_sampler_drain(void (*fn)(const jl_slot *, void *), void *user)
{
    if (!jl_smp.slots)
        return;
    for (int w = 0; w < JL_RING_WORDS; w++) {
        uint64_t v = atomic_exchange_explicit(&jl_smp.ready_bits[w], 0, memory_order_acquire);
        for (uint64_t r = v; r; r &= r - 1)
            fn(&jl_smp.slots[w * 64 + __builtin_ctzll(r)], user);
        if (v)
            atomic_fetch_or_explicit(&jl_smp.free_bits[w], v, memory_order_release);
    }
}
