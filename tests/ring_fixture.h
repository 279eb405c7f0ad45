/* ring_fixture.h - a ring fed with a known window by a publisher thread,
 * a child process running the powerapi CLI, and a raw HTTP client: what
 * the serve and top tests share.  Header-only (static inline). */
#ifndef PA_RING_FIXTURE_H
#define PA_RING_FIXTURE_H

#include "testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "powerapi.h"

/* The known window, every value exact in binary:
 *   java   pid 4242  cpu 4 W + nic 0.125 W = 4.125 W, 40.25 J, 0.5 s CPU
 *   we"ird\name pid 17, 1.5 W, 15 J      (label escaping)
 *   \xff\xfe-bad pid 99, 0.0625 W, 0.5 J (not UTF-8)
 *   cgroup /system.slice/a.service 5.6875 W
 *   system cpu 10, nic 1, idle 3, total 11 W, 110.5 J; window 0.125 s
 * and, with counters (rf_start_counters), perf counters task-clock and
 * instructions per window: java 62500000 ns and 250000000, the cgroup
 * 125000000 ns and 500000000 (0.5e9, 2e9, 1e9 and 4e9 per second). */
#define RF_WINDOW_S 0.125

typedef struct ring_fixture {
    char name[64];
    pa_ring_writer *w;
    pthread_t th;
    int stop; /* atomic */
    int running;
    uint64_t tick;
    int counters;       /* windows carry perf counters */
    const char *cgroup; /* the targets' cgroup instead of a.service, or NULL */
} ring_fixture;

static inline void rf_window(pa_report *r, pa_target_info *t, uint64_t tick)
{
    static const char cg[] = "/system.slice/a.service";
    memset(r, 0, sizeof(*r));
    memset(t, 0, 4 * sizeof(*t));
    r->tick = tick;
    r->time_ns = tick * 125000000ull;
    r->interval_s = RF_WINDOW_S;
    r->system.cpu_w = 10;
    r->system.nic_w = 1;
    r->system.idle_w = 3;
    r->system.total_w = 11;
    r->system.total_j = 110.5;
    r->system.interval_s = RF_WINDOW_S;
    r->formula = "cpu-tdp+nic-linear";
    r->sensors = "procfs-cpu+nic";
    r->cpu_source = "model";
    r->assumed = "tdp=10W (default: unknown CPU \"x\")";
    static const struct {
        pid_t pid;
        const char *comm;
        double cpu_w, nic_w, j;
    } p[3] = {{4242, "java", 4, 0.125, 40.25},
              {17, "we\"ird\\name", 1.5, 0, 15},
              {99, "\xff\xfe-bad", 0.0625, 0, 0.5}};
    for (int i = 0; i < 3; i++) {
        t[i].type = PA_TARGET_PROCESS;
        t[i].pid = p[i].pid;
        snprintf(t[i].comm, sizeof(t[i].comm), "%s", p[i].comm);
        t[i].cgroup = cg;
        t[i].power.cpu_w = p[i].cpu_w;
        t[i].power.nic_w = p[i].nic_w;
        t[i].power.total_w = p[i].cpu_w + p[i].nic_w;
        t[i].power.total_j = p[i].j;
        t[i].power.cpu_j = p[i].j;
        t[i].power.interval_s = RF_WINDOW_S;
        t[i].power.cpu_time_s = i == 0 ? 0.0625 : 0;
        t[i].multiplex = 1;
    }
    t[3].type = PA_TARGET_CGROUP;
    t[3].cgroup = cg;
    t[3].power.cpu_w = 5.5625;
    t[3].power.nic_w = 0.125;
    t[3].power.total_w = 5.6875;
    t[3].power.total_j = 55.75;
    t[3].power.interval_s = RF_WINDOW_S;
    t[3].multiplex = 1;
    r->ntargets = 4;
    r->targets = t;
}

static inline void rf_publish(ring_fixture *f)
{
    pa_report r;
    pa_target_info t[4];
    rf_window(&r, t, ++f->tick);
    for (int i = 0; f->cgroup && i < 4; i++)
        t[i].cgroup = f->cgroup;
    static const char *const names[2] = {"task-clock", "instructions"};
    static const double java[2] = {62500000, 250000000};
    static const double cgroup[2] = {125000000, 500000000};
    if (f->counters) {
        r.ncounters = 2;
        r.counter_names = names;
        t[0].counters = java;
        t[0].multiplex = 0.5;
        t[3].counters = cgroup;
    }
    ck_assert_int_eq(pa_ring_publish(f->w, &r), 0);
}

static inline void *rf_loop(void *arg)
{
    ring_fixture *f = arg;
    while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
        rf_publish(f);
        usleep(50000);
    }
    return NULL;
}

/* A failing check ends the test process at once, without its teardown:
 * its ring stays in /dev/shm.  The runner calls this after the suite to
 * remove the rings "pa-test-<tag>-<pid>[-n]" whose process is gone. */
static inline void rf_sweep(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "pa-test-", 8) != 0)
            continue;
        const char *p = e->d_name + 8;
        long pid = 0;
        while (*p && !pid) { /* the first all-digit component */
            const char *q = p;
            while (*q >= '0' && *q <= '9')
                q++;
            if (q > p && (*q == '-' || *q == '\0'))
                pid = strtol(p, NULL, 10);
            p = strchr(p, '-');
            p = p ? p + 1 : "";
        }
        if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
            char shm[300];
            snprintf(shm, sizeof(shm), "/%s", e->d_name);
            shm_unlink(shm);
        }
    }
    closedir(d);
}

/* Creates the ring (unique name), publishes two windows, and keeps
 * publishing the same window every 50 ms on a thread; with counters, the
 * windows carry perf counters; with cgroup, every target is in that
 * cgroup (a container's, say) instead of /system.slice/a.service. */
static inline void rf_start_cgroup(ring_fixture *f, const char *tag, int counters,
                                   const char *cgroup)
{
    memset(f, 0, sizeof(*f));
    f->counters = counters;
    f->cgroup = cgroup;
    snprintf(f->name, sizeof(f->name), "pa-test-%s-%d", tag, (int)getpid());
    pa_ring_opts o = {.capacity = 16, .max_targets = 16, .interval_ns = 125000000ull};
    int rc = pa_ring_create(f->name, &o, &f->w);
    ck_assert_msg(rc == 0, "ring: %s", pa_last_error());
    rf_publish(f);
    rf_publish(f);
    ck_assert_int_eq(pthread_create(&f->th, NULL, rf_loop, f), 0);
    f->running = 1;
}

static inline void rf_start_with(ring_fixture *f, const char *tag, int counters)
{
    rf_start_cgroup(f, tag, counters, NULL);
}

static inline void rf_start(ring_fixture *f, const char *tag)
{
    rf_start_with(f, tag, 0);
}

/* Stops publishing (the ring stays, its writer "hangs"). */
static inline void rf_pause(ring_fixture *f)
{
    if (f->running) {
        __atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
        pthread_join(f->th, NULL);
        f->running = 0;
    }
}

static inline void rf_stop(ring_fixture *f)
{
    rf_pause(f);
    pa_ring_destroy(f->w);
    f->w = NULL;
}

/* ---- child processes ---- */

static inline uint64_t rf_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Starts argv (argv[0] a path) with stdout on a pipe; returns the pid and
 * the pipe's read end in *out_fd. */
static inline pid_t rf_spawn(char *const argv[], int *out_fd)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* A failing check ends the test at once, without its teardown:
         * the child must not outlive it. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        close(p[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    *out_fd = p[0];
    return pid;
}

/* Reads one line from fd within timeout_ms into buf; 0 or -1. */
static inline int rf_read_line(int fd, char *buf, size_t len, int timeout_ms)
{
    size_t n = 0;
    uint64_t end = rf_now_ms() + (uint64_t)timeout_ms;
    while (n + 1 < len) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        uint64_t now = rf_now_ms();
        if (now >= end || poll(&pfd, 1, (int)(end - now)) <= 0)
            return -1;
        char c;
        if (read(fd, &c, 1) != 1)
            return -1;
        if (c == '\n')
            break;
        buf[n++] = c;
    }
    buf[n] = '\0';
    return 0;
}

/* Sends sig and reaps; returns the wait status, or -1 after timeout_ms
 * (then the child is killed). */
static inline int rf_stop_child(pid_t pid, int sig, int timeout_ms)
{
    kill(pid, sig);
    uint64_t end = rf_now_ms() + (uint64_t)timeout_ms;
    int st;
    while (rf_now_ms() < end) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

/* ---- HTTP ---- */

static inline int rf_connect(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends a raw request and reads the whole answer (the server closes, or
 * Content-Length is reached) within timeout_ms.  Returns the HTTP status
 * (0 when the server closed without one, -1 on timeout); the malloc'd
 * response (headers and body) goes to *resp when not NULL. */
static inline int rf_http(unsigned port, const char *req, size_t reqlen, int timeout_ms,
                          char **resp)
{
    if (resp)
        *resp = NULL;
    int fd = rf_connect(port);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < reqlen) {
        ssize_t w = send(fd, req + off, reqlen - off, MSG_NOSIGNAL);
        if (w <= 0)
            break; /* the server may answer before reading everything */
        off += (size_t)w;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    ck_assert_ptr_nonnull(buf);
    uint64_t end = rf_now_ms() + (uint64_t)timeout_ms;
    int timed_out = 0;
    for (;;) {
        buf[n] = '\0';
        char *hend = strstr(buf, "\r\n\r\n");
        const char *cl = strcasestr(buf, "\r\nContent-Length:");
        if (hend && cl && cl < hend && n >= (size_t)(hend + 4 - buf) + strtoul(cl + 17, NULL, 10))
            break;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        uint64_t now = rf_now_ms();
        if (now >= end || poll(&pfd, 1, (int)(end - now)) <= 0) {
            timed_out = 1;
            break;
        }
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            ck_assert_ptr_nonnull(buf);
        }
        ssize_t r = recv(fd, buf + n, cap - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    close(fd);
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        status = timed_out ? -1 : 0;
    if (resp)
        *resp = buf;
    else
        free(buf);
    return status;
}

static inline int rf_get(unsigned port, const char *path, char **resp)
{
    char req[512];
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    return rf_http(port, req, (size_t)n, 5000, resp);
}

/* A loopback TCP port nobody listens on, held for this program
 * (pa_test_free_port). */
static inline unsigned rf_free_port(void)
{
    return pa_test_free_port(); /* held for this program (testutil.c) */
}

/* Starts Debian's prometheus with dir/prometheus.yml, its data in
 * dir/data and its log in dir/prometheus.log, listening on 127.0.0.1:port;
 * it gets SIGTERM if the test process dies.  Returns its pid. */
static inline pid_t rf_start_prometheus(const char *dir, unsigned port)
{
    char a_cfg[4300], a_data[4300], a_listen[128], log[4200];
    snprintf(a_cfg, sizeof(a_cfg), "--config.file=%s/prometheus.yml", dir);
    snprintf(a_data, sizeof(a_data), "--storage.tsdb.path=%s/data", dir);
    snprintf(a_listen, sizeof(a_listen), "--web.listen-address=127.0.0.1:%u", port);
    snprintf(log, sizeof(log), "%s/prometheus.log", dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* not beyond a failed check */
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execlp("prometheus", "prometheus", a_cfg, a_data, a_listen, "--log.level=warn",
               (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The body of a response (after the blank line). */
static inline const char *rf_body(const char *resp)
{
    const char *b = resp ? strstr(resp, "\r\n\r\n") : NULL;
    return b ? b + 4 : "";
}

#endif
