/* A user's program: its own power over a busy half second, with a
 * sensor of its own written on the module-helper header. */
#include <powerapi.h>
#include <powerapi_module.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Burns s seconds of CPU time (not wall time: the machine may be busy). */
static void burn(double s)
{
    double end = cpu_s() + s;
    volatile unsigned long x = 0;
    while (cpu_s() < end)
        for (int i = 0; i < 100000; i++)
            x += (unsigned long)i;
}

/* A user's sensor on powerapi_module.h: it sees the tick's tasks that
 * procfs-cpu discovered (it runs after it) and leaves a note. */
static unsigned seen_tasks;

static int own_sample(pa_module *m, pa_frame *f)
{
    (void)m;
    pa_frame_task_info ti;
    for (size_t i = 0; i < pa_frame_task_count(f); i++)
        seen_tasks += pa_frame_task(f, i, &ti) == 0;
    pa_frame_note(f, "own-sensor: tick %llu", (unsigned long long)pa_frame_tick(f));
    return 0;
}

static const pa_module_ops own_sensor = {
    .abi = PA_MODULE_ABI,
    .name = "own-sensor",
    .kind = PA_SENSOR,
    .description = "a user's sensor on powerapi_module.h",
    .sample = own_sample,
};

int main(void)
{
    pa_ctx *ctx;
    if (pa_ctx_new(&ctx, NULL) < 0) {
        fprintf(stderr, "powerapi: %s\n", pa_last_error());
        return 1;
    }
    if (pa_module_register(ctx, &own_sensor) < 0 || pa_module_enable(ctx, "own-sensor", NULL) < 0) {
        fprintf(stderr, "powerapi: %s\n", pa_last_error());
        return 1;
    }
    pa_watch_pid(ctx, getpid(), 0);
    pa_tick(ctx);
    double c0 = cpu_s();
    burn(0.5);
    double used = cpu_s() - c0;
    if (pa_tick(ctx) < 0) {
        fprintf(stderr, "powerapi: %s\n", pa_last_error());
        return 1;
    }
    pa_power p;
    if (pa_pid_power(ctx, getpid(), &p) < 0) {
        fprintf(stderr, "powerapi: %s\n", pa_last_error());
        return 1;
    }
    printf("version=%s cpu_time_s=%.3f (own clock %.3f) cpu_w=%.3f own_sensor_tasks=%u\n",
           pa_version(), p.cpu_time_s, used, p.cpu_w, seen_tasks);
    pa_ctx_free(ctx);
    /* utime+stime count in 10 ms ticks */
    double err = p.cpu_time_s - used;
    return err < 0.03 && err > -0.03 && p.cpu_w > 0 && seen_tasks > 0 ? 0 : 2;
}
