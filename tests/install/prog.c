/* A user's program: its own power over a busy half second. */
#include <powerapi.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void burn(double s)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += (unsigned long)i;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < s);
}

int main(void)
{
    pa_ctx *ctx;
    if (pa_ctx_new(&ctx, NULL) < 0) {
        fprintf(stderr, "powerapi: %s\n", pa_last_error());
        return 1;
    }
    pa_watch_pid(ctx, getpid(), 0);
    pa_tick(ctx);
    burn(0.5);
    if (pa_tick(ctx) < 0) {
        fprintf(stderr, "powerapi: %s\n", pa_last_error());
        return 1;
    }
    pa_power p;
    if (pa_pid_power(ctx, getpid(), &p) < 0) {
        fprintf(stderr, "powerapi: %s\n", pa_last_error());
        return 1;
    }
    printf("version=%s cpu_time_s=%.3f cpu_w=%.3f\n", pa_version(), p.cpu_time_s,
           p.cpu_w);
    pa_ctx_free(ctx);
    return p.cpu_time_s > 0.3 && p.cpu_w > 0 ? 0 : 2;
}
