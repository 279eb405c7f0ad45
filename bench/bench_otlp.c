/* bench_otlp.c - the cost of `--otlp` per window with 1,000 series, beside
 * the same window without a push (its floor: the Prometheus page that
 * serve makes of every window anyway).
 *
 * A window of 495 processes and 1 cgroup (1,000 points with the system's,
 * the window's and the exporter's own) is made into the page (the floor),
 * then into the page plus an OTLP request queued for the sending thread
 * (what the measuring thread pays with --otlp), interleaved round by
 * round; the sending thread posts each batch to a receiver of a child
 * process on loopback (libmicrohttpd, answering 200 at once), with and
 * without gzip.  Prints the medians, the bytes and the process's CPU time
 * per window (the sending thread's included; the receiver's not). */
#include "otlp.h"
#include "prometheus.h"
#include "push.h"

#include "bench_receiver.h"
#include "bench_util.h"

#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NPROC 495
#define ROUNDS 300

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void make_window(pa_report *r, pa_target_info *t)
{
    memset(r, 0, sizeof(*r));
    r->tick = 1;
    r->time_ns = 1;
    r->interval_s = 1;
    r->system = (pa_power){.cpu_w = 40, .nic_w = 2, .idle_w = 10, .total_w = 42, .total_j = 4200};
    r->formula = "cpu-tdp+nic-linear";
    r->sensors = "procfs-cpu+nic";
    r->cpu_source = "model";
    r->assumed = "tdp=65W (default: unknown CPU)";
    for (int i = 0; i < NPROC; i++) {
        t[i] = (pa_target_info){.type = PA_TARGET_PROCESS, .pid = 1000 + i, .cgroup = "/a.slice"};
        snprintf(t[i].comm, sizeof(t[i].comm), "worker-%d", i);
        t[i].power.total_w = 0.01 * (i + 1);
        t[i].power.total_j = 3.0 * (i + 1);
    }
    t[NPROC] = (pa_target_info){.type = PA_TARGET_CGROUP, .cgroup = "/a.slice"};
    t[NPROC].power.total_w = 30;
    t[NPROC].power.total_j = 3000;
    r->ntargets = NPROC + 1;
    r->targets = t;
}

/* One configuration: the rounds, interleaved with the floor. */
static void run(const char *what, const pa_report *r, const char *url, int gzip)
{
    rp_push *push;
    rp_push_cfg cfg = {.cmd = "bench",
                       .name = "otlp",
                       .url = url,
                       .content_type = "application/x-protobuf",
                       .gzip = gzip,
                       .queue_max = 64};
    if (rp_push_start(&cfg, &push) < 0)
        exit(1);
    rp_prom_opts po = {.max_cgroups = 1000};
    snprintf(po.node, sizeof(po.node), "bench");
    rp_otlp_opts oo = {.prom = po, .start_unix_ns = 1, .time_unix_ns = 2, .service_name = "bench"};
    static double floor_us[ROUNDS], push_us[ROUNDS], deliver_us[ROUNDS];
    double floor_cpu = 0, push_cpu = 0;
    size_t bytes = 0;
    for (int i = 0; i < ROUNDS; i++) {
        double c0 = cpu_us(), t0 = now_us();
        size_t len;
        char *page = rp_prom_page(r, &po, &len);
        double t1 = now_us();
        free(page);
        floor_us[i] = t1 - t0;
        floor_cpu += cpu_us() - c0;

        rp_push_stats st0, st;
        rp_push_get_stats(push, &st0);
        c0 = cpu_us();
        t0 = now_us();
        page = rp_prom_page(r, &po, &len);
        uint8_t *buf;
        if (rp_otlp_encode(r, &oo, &buf, &bytes) < 0)
            exit(1);
        rp_push_submit(push, buf, bytes, NULL);
        t1 = now_us();
        free(page);
        push_us[i] = t1 - t0;
        do { /* until sent: the sending thread's cost falls in this window */
            usleep(50);
            rp_push_get_stats(push, &st);
        } while (st.sent + st.rejected == st0.sent + st0.rejected);
        deliver_us[i] = now_us() - t1;
        push_cpu += cpu_us() - c0;
    }
    rp_push_stats st;
    rp_push_get_stats(push, &st);
    rp_push_stop(push, 1000000000ull);
    printf("%-12s | %8.1f | %8.1f (+%.1f) | %8.1f | %7.1f | %7.1f | %zu | %llu/%d\n", what,
           pa_bench_median(floor_us, ROUNDS), pa_bench_median(push_us, ROUNDS),
           pa_bench_median(push_us, ROUNDS) - pa_bench_median(floor_us, ROUNDS),
           pa_bench_median(deliver_us, ROUNDS), floor_cpu / ROUNDS, push_cpu / ROUNDS, bytes,
           (unsigned long long)st.sent, ROUNDS);
}

int main(void)
{
    static pa_target_info t[NPROC + 1];
    pa_report r;
    make_window(&r, t);
    pid_t child;
    unsigned port = receiver(&child);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/v1/metrics", port);
    rp_prom_opts po = {.max_cgroups = 1000};
    rp_otlp_opts oo = {.prom = po, .start_unix_ns = 1, .time_unix_ns = 2};
    uint8_t *buf;
    size_t len;
    rp_otlp_encode(&r, &oo, &buf, &len);
    free(buf);
    printf("bench_otlp: a window of %d processes and 1 cgroup: %d points (series), %d rounds\n",
           NPROC, 2 * NPROC + 2 + 1 + 5 + 1 + 1 + 1 + 1, ROUNDS);
    printf("%-12s | %8s | %17s | %8s | %7s | %7s | %s | %s\n", "", "page µs", "page+otlp µs",
           "sent µs", "cpu µs", "cpu µs", "bytes", "sent");
    printf("%-12s | %8s | %17s | %8s | %7s | %7s | %s | %s\n", "", "(floor)", "(measuring thr.)",
           "(later)", "floor", "push", "", "");
    run("otlp", &r, url, 0);
    run("otlp+gzip", &r, url, 1);
    kill(child, SIGTERM);
    waitpid(child, NULL, 0);
    return 0;
}
