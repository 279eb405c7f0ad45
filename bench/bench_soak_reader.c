/* bench_soak_reader.c - one reader of a daemon's ring for the soak run
 * (bench/soak_daemon.sh): reads every window in order with pa_ring_read
 * for SECONDS (or until SIGTERM/SIGINT) and prints, on one line, how many
 * windows it read, how many sequence numbers it skipped (gaps), what the
 * ring counted as lost for it, its first and last sequence numbers and
 * its own RSS at the end.  A healthy soak has gaps=0 lost=0.
 *
 * Usage: bench_soak_reader RING SECONDS
 * Prints figures; not a pass/fail test. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "powerapi.h"

static volatile sig_atomic_t stop;

static void on_signal(int s)
{
    (void)s;
    stop = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s RING SECONDS\n", argv[0]);
        return 2;
    }
    double secs = atof(argv[2]);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    pa_ring_reader *r = NULL;
    uint64_t t0 = now_ns();
    int rc;
    /* The daemon may still be creating its ring. */
    while ((rc = pa_ring_open(argv[1], &r)) < 0 && !stop && now_ns() - t0 < 10000000000ull)
        usleep(100000);
    if (rc < 0) {
        fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], pa_last_error());
        return 1;
    }
    uint64_t seq = 0, first = 0, last = 0, windows = 0, gaps = 0, targets = 0;
    const pa_report *rep;
    while (!stop && (double)(now_ns() - t0) / 1e9 < secs) {
        uint64_t before = seq;
        rc = pa_ring_read(r, &seq, &rep);
        if (rc == -EAGAIN) {
            usleep(20000);
            continue;
        }
        if (rc < 0) {
            fprintf(stderr, "%s: read: %s\n", argv[0], pa_last_error());
            break;
        }
        if (!first)
            first = seq;
        else if (seq != before + 1)
            gaps += seq - before - 1;
        last = seq;
        windows++;
        targets += rep->ntargets;
    }
    pa_ring_info info;
    memset(&info, 0, sizeof(info));
    pa_ring_get_info(r, &info);
    printf("reader pid=%d windows=%llu gaps=%llu lost=%llu first=%llu "
           "last=%llu targets_per_window=%.0f rss_kib=%ld\n",
           (int)getpid(), (unsigned long long)windows, (unsigned long long)gaps,
           (unsigned long long)info.lost, (unsigned long long)first, (unsigned long long)last,
           windows ? (double)targets / (double)windows : 0.0, rss_kib());
    pa_ring_close(r);
    return 0;
}
