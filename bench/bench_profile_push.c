/* bench_profile_push.c - what `powerapi profile --push pyroscope=URL` adds
 * to a window when it pushes, with a profile of 10,000 call-tree nodes,
 * beside the same window without a push (its floor: charging the window's
 * samples, which profile does every window anyway).
 *
 * A profile of 100 functions called from 100 callers (10,000 nodes, each
 * with a line) is charged one window of samples (the floor); the push is
 * the delta pprof written (pc_prof_write_delta), read back and queued for
 * the sending thread (push.c, a spool folder in a temporary directory),
 * which posts it to a libmicrohttpd receiver in a child process.  Medians
 * of 30 windows. */
#include "profcore.h"
#include "push.h"

#include "bench_receiver.h"
#include "bench_util.h"

#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FUNCS 100
#define ROUNDS 30

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One window: every caller-callee pair sampled once. */
static void charge(pc_prof *prof, pc_frame *fr)
{
    for (int i = 0; i < FUNCS; i++)
        for (int j = 0; j < FUNCS; j++) {
            pc_frame st[2] = {fr[FUNCS + j], fr[i]};
            st[0].at_line = 10 + j;
            st[1].at_line = 20 + i;
            pc_prof_add(prof, st, 2, 1e-4, 1e-3, 1, 100, 100, "app", "app");
        }
}

int main(void)
{
    char tmpl[] = "/tmp/pa-bench-push-XXXXXX";
    char *dir = mkdtemp(tmpl);
    pid_t child;
    unsigned port = receiver(&child);
    static pc_frame fr[2 * FUNCS];
    for (int i = 0; i < 2 * FUNCS; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s_%d", i < FUNCS ? "caller" : "callee", i);
        fr[i] = (pc_frame){.name = pc_intern(name),
                           .module = pc_intern("app"),
                           .source = pc_intern(""),
                           .file = pc_intern("app.c"),
                           .line = i + 1,
                           .path = pc_intern("/usr/bin/app"),
                           .build_id = pc_intern(""),
                           .mstart = 0x400000,
                           .mlimit = 0x800000};
    }
    pc_prof *prof;
    if (!dir || pc_prof_new(&prof, NULL, 0) < 0)
        return 1;
    char url[128], spool[300], tmp[300], path[400];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/ingest?name=app&format=pprof", port);
    snprintf(spool, sizeof(spool), "%s/spool", dir);
    snprintf(tmp, sizeof(tmp), "%s/delta", dir);
    mkdir(tmp, 0700);
    rp_push *push;
    rp_push_cfg cfg = {.cmd = "bench", .name = "pyroscope", .url = url, .spool_dir = spool};
    if (rp_push_start(&cfg, &push) < 0)
        return 1;
    pc_delta delta = {0};
    static double floor_ms[ROUNDS], push_ms[ROUNDS];
    size_t bytes = 0;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ms();
        charge(prof, fr);
        double t1 = now_ms();
        pc_prof_write_delta(prof, tmp, 10000000, 1, &delta);
        snprintf(path, sizeof(path), "%s/profile.pb.gz", tmp);
        FILE *f = fopen(path, "rb");
        struct stat st;
        char *body = f && fstat(fileno(f), &st) == 0 ? malloc((size_t)st.st_size) : NULL;
        bytes = body ? fread(body, 1, (size_t)st.st_size, f) : 0;
        if (f)
            fclose(f);
        rp_push_submit(push, body, bytes, NULL);
        double t2 = now_ms();
        floor_ms[r] = t1 - t0;
        push_ms[r] = t2 - t1;
    }
    rp_push_stop(push, 5000000000ull);
    printf("bench_profile_push: %d call-tree nodes, %d windows\n", FUNCS * FUNCS, ROUNDS);
    printf("window without a push (charging 10,000 samples): %.2f ms\n",
           pa_bench_median(floor_ms, ROUNDS));
    printf("the push on the profiling thread (delta pprof written, read, queued): %.2f ms, "
           "%zu bytes (gzip)\n",
           pa_bench_median(push_ms, ROUNDS), bytes);
    pc_prof_free(prof);
    free(delta.last);
    pc_intern_free();
    kill(child, SIGTERM);
    waitpid(child, NULL, 0);
    unlink(path); /* the last delta; the spool is empty once all is sent */
    rmdir(tmp);
    rmdir(spool);
    return rmdir(dir) != 0;
}
