/*
 * bench_sample_floor.c - what one CPU-time stack sample costs before the
 * profiler's own handler does anything: the clock's interrupt and the
 * signal, on this machine, with no JVM in the way.
 *
 * Two threads run a fixed numeric loop; the process's CPU time is read
 * before and after.  Each round runs every configuration once, the order
 * rotating:
 *   none        no clock;
 *   perf        perf's cpu-clock opened on each thread, its overflow
 *               signalling that thread (F_SETOWN_EX, SIGPROF), an empty
 *               handler: what async-profiler samples with (and jalen with
 *               signal=prof);
 *   perf-trap   the same clock sending SIGTRAP itself (sigtrap, Linux
 *               5.13): what jalen samples with;
 *   perf-nosig  the same clock with no signal: its interrupt alone;
 *   timer       a POSIX timer on each thread's CPU clock (SIGEV_THREAD_ID),
 *               which the kernel checks at its tick (at most CONFIG_HZ
 *               signals a CPU-second);
 *   perf-cold   perf, with a handler that writes 1 KiB into the next slot
 *               of a 4 MiB ring (a round-robin sample ring);
 *   perf-hot    the same 1 KiB into one of 64 slots (128 KiB), the lowest
 *               free ones, as jalen's ring claims them.
 * A configuration's cost per sample is its CPU time over the round's
 * `none`, divided by its signals (perf-nosig: by the samples the clock
 * counted, read from the event).  Printed: the median over the rounds,
 * a 90 % bootstrap interval of it, min..max.
 *
 * On bare metal the interrupt and the signal cost a few microseconds; on a
 * virtual machine each interrupt of the clock also exits to the host,
 * which is charged to the thread that was running.  This floor is paid by
 * every profiler that samples CPU time with a signal, whatever its
 * handler does (bench_jalen_cost.sh's `floor` is the same measure in a
 * JVM).
 *
 * Prints figures; it does not pass or fail.
 *
 * Usage: bench_sample_floor [ROUNDS] [SECONDS] [INTERVAL_US]
 *   (defaults 10 rounds, 1.5 s of CPU per thread, 1000 us)
 */
#include "bench_util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { C_NONE, C_PERF, C_PERF_TRAP, C_PERF_NOSIG, C_TIMER, C_PERF_COLD, C_PERF_HOT, C_N };
static const char *const cfg_name[C_N] = {"none",  "perf",      "perf-trap", "perf-nosig",
                                          "timer", "perf-cold", "perf-hot"};

#define THREADS 2
#define SLOT 2072 /* a jalen slot: a header and 128 frames of 16 bytes */
#define COLD_SLOTS 2048
#define HOT_SLOTS 64
#define MAX_ROUNDS 64

static int cfg;
static long iters;
static long interval_ns;
static unsigned char *ring;
static _Atomic unsigned long signals, cold_next;
static _Atomic unsigned long counted;            /* perf-nosig: the clock's overflows */
static _Atomic uint64_t hot_free = ~UINT64_C(0); /* HOT_SLOTS bits */

static void on_sigprof(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    atomic_fetch_add_explicit(&signals, 1, memory_order_relaxed);
    if (cfg == C_PERF_COLD) {
        unsigned long i = atomic_fetch_add_explicit(&cold_next, 1, memory_order_relaxed);
        memset(ring + (i % COLD_SLOTS) * SLOT, (int)i, 1024);
    } else if (cfg == C_PERF_HOT) {
        /* claim the lowest free slot, write, free it (a drain at once) */
        uint64_t v = atomic_load_explicit(&hot_free, memory_order_relaxed);
        while (v && !atomic_compare_exchange_weak(&hot_free, &v, v & (v - 1)))
            ;
        if (!v)
            return;
        int b = __builtin_ctzll(v);
        memset(ring + (size_t)b * SLOT, b, 1024);
        atomic_fetch_or(&hot_free, UINT64_C(1) << b);
    }
}

/* with_signal: 0 none, 1 SIGPROF through the file's owner, 2 SIGTRAP */
static int perf_open(pid_t tid, int with_signal)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = (uint64_t)interval_ns;
    a.wakeup_events = 1;
    a.disabled = 1;
    if (with_signal == 2) {
        a.sigtrap = 1;
        a.remove_on_exec = 1;
    }
    /* user and kernel time, as jalen's clock; user time alone where
     * perf_event_paranoid refuses kernel samples to this process */
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) {
        a.exclude_kernel = 1;
        fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (fd < 0)
        return -errno;
    struct f_owner_ex own = {F_OWNER_TID, tid};
    if (with_signal == 1 && (fcntl(fd, F_SETFL, O_ASYNC) < 0 || fcntl(fd, F_SETSIG, SIGPROF) < 0 ||
                             fcntl(fd, F_SETOWN_EX, &own) < 0)) {
        close(fd);
        return -errno;
    }
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    return fd;
}

static void *burn(void *arg)
{
    (void)arg;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int fd = -1;
    timer_t tm;
    if (cfg == C_PERF || cfg == C_PERF_COLD || cfg == C_PERF_HOT || cfg == C_PERF_NOSIG)
        fd = perf_open(tid, cfg != C_PERF_NOSIG);
    if (cfg == C_PERF_TRAP)
        fd = perf_open(tid, 2);
    if (cfg == C_TIMER) {
        struct sigevent se;
        memset(&se, 0, sizeof(se));
        se.sigev_notify = SIGEV_THREAD_ID;
        se.sigev_signo = SIGPROF;
        se._sigev_un._tid = tid;
        struct itimerspec its = {{0, interval_ns}, {0, interval_ns}};
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &se, &tm) == 0)
            timer_settime(tm, 0, &its, NULL);
    }
    volatile double x = 1.0;
    for (long i = 0; i < iters; i++)
        x = x * 1.0000001 + 1e-9;
    if (fd >= 0) {
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
        if (cfg == C_PERF_NOSIG) {
            /* the clock's time over its period: the overflows it had */
            uint64_t ns = 0;
            if (read(fd, &ns, sizeof(ns)) == (ssize_t)sizeof(ns))
                atomic_fetch_add(&counted, ns / (uint64_t)interval_ns);
        }
        close(fd);
    }
    if (cfg == C_TIMER)
        timer_delete(tm);
    return NULL;
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One run of configuration c: its CPU seconds; *n its samples. */
static double run_one(int c, unsigned long *n)
{
    cfg = c;
    atomic_store(&signals, 0);
    atomic_store(&counted, 0);
    double t0 = process_cpu_s();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, burn, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    double cpu = process_cpu_s() - t0;
    *n = c == C_PERF_NOSIG ? atomic_load(&counted) : atomic_load(&signals);
    return cpu;
}

/* The loop's iterations for `seconds` of CPU per thread, from a short run. */
static long calibrate(double seconds)
{
    iters = 20000000;
    unsigned long n;
    double cpu = run_one(C_NONE, &n) / THREADS;
    return (long)((double)iters * seconds / (cpu > 1e-3 ? cpu : 1e-3));
}

/* The median of v[0..n) and a 90 % bootstrap interval of it. */
static void median_interval(const double *v, int n, double out[3])
{
    double s[MAX_ROUNDS], b[1000], r[MAX_ROUNDS];
    memcpy(s, v, sizeof(double) * (size_t)n);
    out[0] = pa_bench_median(s, (size_t)n);
    unsigned seed = 12345;
    for (int k = 0; k < 1000; k++) {
        for (int i = 0; i < n; i++)
            r[i] = v[rand_r(&seed) % (unsigned)n];
        b[k] = pa_bench_median(r, (size_t)n);
    }
    qsort(b, 1000, sizeof(double), pa_bench_cmp_double);
    out[1] = b[50];
    out[2] = b[949];
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    double seconds = argc > 2 ? atof(argv[2]) : 1.5;
    long interval_us = argc > 3 ? atol(argv[3]) : 1000;
    if (rounds < 2 || rounds > MAX_ROUNDS || seconds <= 0 || interval_us <= 0) {
        fprintf(stderr, "usage: bench_sample_floor [ROUNDS 2-%d] [SECONDS] [INTERVAL_US]\n",
                MAX_ROUNDS);
        return 2;
    }
    interval_ns = interval_us * 1000;
    ring = mmap(NULL, (size_t)COLD_SLOTS * SLOT, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ring == MAP_FAILED) {
        perror("bench_sample_floor: mmap");
        return 1;
    }
    memset(ring, 0, (size_t)COLD_SLOTS * SLOT);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    sigaction(SIGTRAP, &sa, NULL);
    int fd = perf_open((pid_t)syscall(SYS_gettid), 0);
    if (fd < 0) {
        fprintf(stderr,
                "bench_sample_floor: perf_event_open: %s (perf_event_paranoid <= 2 needed)\n",
                strerror(-fd));
        return 1;
    }
    close(fd);
    iters = calibrate(seconds);
    printf("bench_sample_floor: %d threads, %.1f s of CPU each, interval %ld us, %d rounds\n",
           THREADS, seconds, interval_us, rounds);
    static double cost[C_N][MAX_ROUNDS], samples[C_N][MAX_ROUNDS], cpu[C_N][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < C_N; k++) {
            int c = (k + r) % C_N;
            unsigned long n;
            cpu[c][r] = run_one(c, &n);
            samples[c][r] = (double)n;
        }
        for (int c = 1; c < C_N; c++)
            cost[c][r] = samples[c][r] > 0 ? (cpu[c][r] - cpu[C_NONE][r]) / samples[c][r] * 1e6 : 0;
        printf("  round %2d:", r + 1);
        for (int c = 0; c < C_N; c++)
            printf(" %s %.3f s", cfg_name[c], cpu[c][r]);
        printf("\n");
    }
    double m[3], tmp[MAX_ROUNDS];
    median_interval(cpu[C_NONE], rounds, m);
    printf("\n%-11s %30s %14s %16s\n", "", "us per sample (90 % interval)", "min..max",
           "samples a run");
    printf("%-11s %30s %14s %16s   (CPU %.3f s a run)\n", "none", "", "", "", m[0]);
    for (int c = 1; c < C_N; c++) {
        median_interval(cost[c], rounds, m);
        memcpy(tmp, cost[c], sizeof(double) * (size_t)rounds);
        qsort(tmp, (size_t)rounds, sizeof(double), pa_bench_cmp_double);
        double ns[3];
        median_interval(samples[c], rounds, ns);
        printf("%-11s %12.1f (%6.1f..%6.1f) %6.1f..%-6.1f %16.0f\n", cfg_name[c], m[0], m[1], m[2],
               tmp[0], tmp[rounds - 1], ns[0]);
    }
    return 0;
}
