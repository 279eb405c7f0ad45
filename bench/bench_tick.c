/*
 * bench_tick.c - cost of one `--all` tick of the procfs-cpu sensor.
 *
 * For N = 100, 1000, 5000 sleeping child processes (fork + pause), times
 * one tick of a context with procfs-cpu only and pa_watch_all (median of
 * several ticks, after a first tick that opens and allocates), beside the
 * floor measured in the same run: a minimal loop that lists /proc with
 * readdir and opens, reads and closes every /proc/<pid>/stat.  Both are
 * divided by the number of processes listed in /proc (the children plus
 * whatever else runs on the machine).
 *
 * Three sensor figures: with the stat fds kept open (the fd budget is half
 * of RLIMIT_NOFILE, raised here to its hard limit) and with a budget too
 * small to keep any (soft limit 64), which is the open/read/close path;
 * and this process watched with PA_WATCH_CHILDREN (what `powerapi monitor
 * -- COMMAND` does), which reads every process for its ppid.
 *
 * Memory per process: the library's heap growth (mallinfo2) and the RSS
 * growth of this process after the warm-up tick, divided by the number of
 * processes; and the kernel's slab growth (/proc/meminfo Slab), which is
 * where kept procfs fds cost (a struct file and a seq_file page each).
 *
 * Prints figures; it does not pass or fail.  Targets (issue 2): at most
 * 1.5 x the floor, at most 10 us per process per tick, at most 2 KiB per
 * watched process.
 *
 * Usage: bench_tick [N ...]   (default: 100 1000 5000)
 */
#include "internal.h"

#include "bench_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNS 9

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The floor: readdir /proc, then open/read/close each <pid>/stat.
 * Returns the number of processes read. */
static size_t floor_pass(void)
{
    char buf[1024], path[300];
    size_t n = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (read(fd, buf, sizeof(buf)) > 0)
            n++;
        close(fd);
    }
    closedir(d);
    return n;
}

static long meminfo_kb(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    if (f)
        fclose(f);
    return v;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A warmed-up context: procfs-cpu only, --all.  soft is the soft
 * RLIMIT_NOFILE while the sensor starts (it sets the fd budget); 0 means
 * the hard limit.  heap_b/rss_b/slab_b: growth per process. */
typedef struct bctx {
    pa_ctx *ctx;
    size_t ntasks;
    double heap_b, rss_b, slab_b;
} bctx;

static size_t report_procs(pa_ctx *ctx)
{
    pa_report *r = NULL;
    size_t n = 0;
    if (pa_report_get(ctx, &r) == 0) {
        for (size_t i = 0; i < r->ntargets; i++)
            n += r->targets[i].type == PA_TARGET_PROCESS;
        pa_report_free(r);
    }
    return n ? n : 1;
}

static int bctx_open(bctx *b, rlim_t soft, pid_t tree)
{
    struct rlimit rl, old;
    getrlimit(RLIMIT_NOFILE, &old);
    rl = old;
    rl.rlim_cur = soft ? soft : old.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
        fprintf(stderr, "setrlimit: %s\n", strerror(errno));
        return -1;
    }
    struct mallinfo2 m0 = mallinfo2();
    long rss0 = rss_kb(), slab0 = meminfo_kb("Slab");
    pa_ctx *ctx = NULL;
    int rc = pa_ctx_new(&ctx, NULL);
    /* procfs-cpu alone, as measured before auto filled in around it */
    if (rc == 0)
        rc = pa_module_disable(ctx, "auto");
    if (rc == 0)
        rc = pa_module_enable(ctx, "procfs-cpu", NULL);
    if (rc == 0)
        rc = tree ? pa_watch_pid(ctx, tree, PA_WATCH_CHILDREN) : pa_watch_all(ctx, 1);
    /* the first tick opens and allocates; the second makes the first
     * report (its arrays grow once) */
    if (rc == 0)
        rc = pa_tick(ctx);
    if (rc == 0)
        rc = pa_tick(ctx);
    setrlimit(RLIMIT_NOFILE, &old);
    if (rc < 0) {
        fprintf(stderr, "bench_tick: %s (%s)\n", pa_strerror(rc), pa_last_error());
        pa_ctx_free(ctx);
        return -1;
    }
    struct mallinfo2 m1 = mallinfo2();
    long rss1 = rss_kb(), slab1 = meminfo_kb("Slab");
    b->ctx = ctx;
    b->ntasks = report_procs(ctx);
    b->heap_b = (double)(m1.uordblks - m0.uordblks) / (double)b->ntasks;
    b->rss_b = (double)(rss1 - rss0) * 1024.0 / (double)b->ntasks;
    b->slab_b = (double)(slab1 - slab0) * 1024.0 / (double)b->ntasks;
    return 0;
}

static double tick_us(pa_ctx *ctx)
{
    double a = now_us();
    int rc = pa_tick(ctx);
    double t = now_us() - a;
    if (rc < 0)
        fprintf(stderr, "tick: %s\n", pa_last_error());
    return t;
}

static pid_t *spawn(size_t n)
{
    pid_t *kids = calloc(n, sizeof(*kids));
    pid_t parent = getpid();
    for (size_t i = 0; kids && i < n; i++) {
        pid_t p = fork();
        if (p < 0) {
            fprintf(stderr, "fork %zu: %s\n", i, strerror(errno));
            kids[i] = 0;
            break;
        }
        if (p == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(0);
            for (;;)
                pause();
        }
        kids[i] = p;
    }
    return kids;
}

static void reap(pid_t *kids, size_t n)
{
    for (size_t i = 0; i < n && kids[i]; i++)
        kill(kids[i], SIGKILL);
    for (size_t i = 0; i < n && kids[i]; i++)
        waitpid(kids[i], NULL, 0);
    free(kids);
}

int main(int argc, char **argv)
{
    size_t sizes[16] = {100, 1000, 5000};
    size_t nsizes = 3;
    if (argc > 1) {
        nsizes = 0;
        for (int i = 1; i < argc && nsizes < 16; i++)
            sizes[nsizes++] = (size_t)strtoul(argv[i], NULL, 10);
    }
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    printf("procfs-cpu --all tick (median of %d ticks; us per process; "
           "RLIMIT_NOFILE hard %llu)\n\n",
           RUNS, (unsigned long long)rl.rlim_max);
    printf("%7s %7s | %9s | %9s %6s | %9s %6s | %9s | %8s %8s %9s\n", "spawned", "procs", "floor",
           "kept fds", "x", "no fds", "x", "tree", "heap B", "RSS B", "kernel B");
    printf("%7s %7s | %9s | %9s %6s | %9s %6s | %9s | %8s %8s %9s\n", "", "", "us/proc", "us/proc",
           "floor", "us/proc", "floor", "us/proc", "/proc", "/proc", "/proc");
    for (size_t s = 0; s < nsizes; s++) {
        size_t n = sizes[s];
        pid_t *kids = spawn(n);
        if (!kids)
            return 1;
        usleep(200000); /* let every child reach pause() */
        bctx kept = {0}, nofd = {0}, tree = {0};
        /* the small budget first: the soft limit bounds fd numbers, and
         * the kept-fd context holds thousands */
        if (bctx_open(&nofd, 64, 0) < 0 || bctx_open(&kept, 0, 0) < 0 ||
            bctx_open(&tree, 0, getpid()) < 0) {
            pa_ctx_free(nofd.ctx);
            pa_ctx_free(kept.ctx);
            reap(kids, n);
            return 1;
        }
        /* interleaved, so that the machine's noise hits all three alike */
        double f[RUNS], tk[RUNS], tn[RUNS], tt[RUNS];
        size_t nf = 0;
        floor_pass();
        for (int i = 0; i < RUNS; i++) {
            double a = now_us();
            nf = floor_pass();
            f[i] = now_us() - a;
            tk[i] = tick_us(kept.ctx);
            tn[i] = tick_us(nofd.ctx);
            tt[i] = tick_us(tree.ctx);
        }
        struct mallinfo2 m = mallinfo2();
        tick_us(kept.ctx);
        tick_us(nofd.ctx);
        if (mallinfo2().uordblks > m.uordblks + 4096)
            fprintf(stderr, "note: the heap grew during steady ticks\n");
        double floor_us = pa_bench_median(f, RUNS) / (double)(nf ? nf : 1);
        double k_us = pa_bench_median(tk, RUNS) / (double)kept.ntasks;
        double n_us = pa_bench_median(tn, RUNS) / (double)nofd.ntasks;
        /* a tree reads every process for its ppid */
        double t_us = pa_bench_median(tt, RUNS) / (double)(nf ? nf : 1);
        pa_ctx_free(tree.ctx);
        pa_ctx_free(kept.ctx);
        pa_ctx_free(nofd.ctx);
        reap(kids, n);
        printf("%7zu %7zu | %9.2f | %9.2f %6.2f | %9.2f %6.2f | %9.2f | %8.0f "
               "%8.0f %9.0f\n",
               n, kept.ntasks, floor_us, k_us, k_us / floor_us, n_us, n_us / floor_us, t_us,
               kept.heap_b, kept.rss_b, kept.slab_b);
        fflush(stdout);
    }
    printf("\nfloor: readdir(/proc) + open/read/close of each /proc/<pid>/stat"
           "\nkept fds: stat fds kept open and re-read with pread (budget: "
           "half of RLIMIT_NOFILE)\nno fds: soft RLIMIT_NOFILE 64, so every "
           "read is open/read/close\ntree: this process watched with "
           "PA_WATCH_CHILDREN (every process is read for its ppid; the "
           "children's stat fds kept)\nheap, RSS: growth of this process over "
           "the warm-up ticks (kept-fd context); kernel: /proc/meminfo Slab "
           "growth (noisy)\ntargets: <= 1.5x floor, <= 10 us/process/tick, "
           "<= 2048 B/process\n");
    return 0;
}
