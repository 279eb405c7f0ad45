/* bench_ring.c - what the shared-memory ring costs: publishing a window,
 * reading one, aggregating 10 and 100 windows, for 10 to 1000 targets;
 * and the writer's publish time while reader threads spin on the ring
 * (it must not change: readers never make the writer wait).
 * Prints figures; not a pass/fail test. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "powerapi.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *const cgroups[8] = {"/system.slice/ssh.service",
                                       "/system.slice/cron.service",
                                       "/user.slice/user-1000.slice/session-1.scope",
                                       "/init.scope",
                                       "/system.slice/docker-0123456789abcdef.scope",
                                       "/machine.slice",
                                       "/system.slice/systemd-journald.service",
                                       "/"};

static void make_report(pa_report *r, pa_target_info *t, size_t n, uint64_t k)
{
    memset(r, 0, sizeof(*r));
    r->tick = k;
    r->time_ns = k * 1000000000ull;
    r->interval_s = 1;
    r->system.cpu_w = 20;
    r->system.total_w = 20;
    r->formula = "cpu-tdp+nic-linear";
    r->sensors = "procfs-cpu+nic";
    r->cpu_source = "model";
    r->assumed = "tdp=10W (default: unknown CPU)";
    for (size_t i = 0; i < n; i++) {
        memset(&t[i], 0, sizeof(t[i]));
        t[i].type = i + 8 < n ? PA_TARGET_PROCESS : PA_TARGET_CGROUP;
        t[i].pid = (pid_t)(1000 + i);
        snprintf(t[i].comm, sizeof(t[i].comm), "proc-%u", (unsigned)(i % 100000));
        t[i].cgroup = cgroups[i % 8];
        t[i].power.cpu_w = (double)(i % 17) * 0.1;
        t[i].power.total_w = t[i].power.cpu_w;
        t[i].power.total_j = (double)k;
        t[i].power.interval_s = 1;
    }
    r->ntargets = n;
    r->targets = t;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct spin {
    const char *name;
    int stop;
    long reads;
} spin;

static void *spin_reader(void *arg)
{
    spin *s = arg;
    pa_ring_reader *r;
    if (pa_ring_open(s->name, &r) < 0)
        return NULL;
    uint64_t seq = 0;
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        const pa_report *g;
        if (pa_ring_read(r, &seq, &g) == 0)
            s->reads++;
        else
            usleep(50); /* caught up: poll, as a real reader would */
    }
    pa_ring_close(r);
    return NULL;
}

int main(void)
{
    char name[64];
    snprintf(name, sizeof(name), "pa-bench-ring-%d", (int)getpid());
    static const size_t sizes[3] = {10, 100, 1000};
    pa_target_info *t = calloc(1000, sizeof(*t));
    if (!t)
        return 1;
    printf("ring: capacity 100 windows, max 1024 targets per window\n");
    printf("%8s %12s %12s %14s %15s\n", "targets", "publish us", "read us", "agg 10 win us",
           "agg 100 win us");
    for (int s = 0; s < 3; s++) {
        size_t n = sizes[s];
        pa_ring_opts o = {.capacity = 100, .max_targets = 1024};
        pa_ring_writer *w;
        if (pa_ring_create(name, &o, &w) < 0) {
            fprintf(stderr, "%s\n", pa_last_error());
            return 1;
        }
        pa_report r;
        const int reps = 2000;
        for (int k = 1; k <= 100; k++) { /* every slot's pages touched */
            make_report(&r, t, n, (uint64_t)k);
            pa_ring_publish(w, &r);
        }
        make_report(&r, t, n, 101);
        uint64_t t0 = now_ns();
        for (int k = 1; k <= reps; k++) {
            r.tick = (uint64_t)k + 100;
            pa_ring_publish(w, &r);
        }
        uint64_t t1 = now_ns();
        double pub_us = (double)(t1 - t0) / reps / 1e3;

        pa_ring_reader *rd;
        pa_ring_open(name, &rd);
        const pa_report *g;
        uint64_t warm = 0; /* the reader's buffers grow once */
        pa_ring_aggregate(rd, &warm, 0, &g);
        uint64_t a0 = now_ns();
        for (int k = 0; k < reps; k++) {
            uint64_t seq = (uint64_t)reps + 100 - 1 - (uint64_t)(k % 50);
            pa_ring_read(rd, &seq, &g);
        }
        double read_us = (double)(now_ns() - a0) / reps / 1e3;
        a0 = now_ns();
        for (int k = 0; k < 200; k++) {
            uint64_t seq = (uint64_t)reps + 100 - 10;
            pa_ring_aggregate(rd, &seq, 0, &g);
        }
        double agg10_us = (double)(now_ns() - a0) / 200 / 1e3;
        a0 = now_ns();
        for (int k = 0; k < 20; k++) {
            uint64_t seq = 0;
            pa_ring_aggregate(rd, &seq, 0, &g);
        }
        double agg100_us = (double)(now_ns() - a0) / 20 / 1e3;
        printf("%8zu %12.2f %12.2f %14.1f %15.1f\n", n, pub_us, read_us, agg10_us, agg100_us);
        pa_ring_close(rd);
        pa_ring_destroy(w);
    }

    /* The writer with and without readers spinning on the ring. */
    for (int readers = 0; readers <= 4; readers += 4) {
        pa_ring_opts o = {.capacity = 100, .max_targets = 1024};
        pa_ring_writer *w;
        if (pa_ring_create(name, &o, &w) < 0)
            return 1;
        pa_report r;
        make_report(&r, t, 300, 1);
        pa_ring_publish(w, &r);
        spin sp[4];
        pthread_t th[4];
        for (int i = 0; i < readers; i++) {
            sp[i] = (spin){.name = name};
            pthread_create(&th[i], NULL, spin_reader, &sp[i]);
        }
        usleep(100000);
        enum { REPS = 20000 };
        static uint64_t d[REPS];
        for (int k = 0; k < REPS; k++) {
            r.tick = (uint64_t)k + 2;
            uint64_t a = now_ns();
            pa_ring_publish(w, &r);
            d[k] = now_ns() - a;
        }
        qsort(d, REPS, sizeof(d[0]), cmp_u64);
        long reads = 0;
        for (int i = 0; i < readers; i++) {
            __atomic_store_n(&sp[i].stop, 1, __ATOMIC_RELEASE);
            pthread_join(th[i], NULL);
            reads += sp[i].reads;
        }
        printf("300 targets, %d polling readers: publish p50 %.2f us, p99 "
               "%.2f us, max %.1f us; %ld windows read meanwhile\n",
               readers, (double)d[REPS / 2] / 1e3, (double)d[REPS * 99 / 100] / 1e3,
               (double)d[REPS - 1] / 1e3, reads);
        pa_ring_destroy(w);
    }
    free(t);
    return 0;
}
