/*
 * test_lifecycle.c - enable / disable / configure / register from another
 * thread while the background sampler runs, thousands of times.  Run under
 * ASan/UBSan in CI; a module freed under a running callback, or a tick
 * that sees a half-configured module, shows up here.  A formula that
 * requires a sensor is enabled and disabled meanwhile (the sensor comes
 * and goes with it, -EBUSY while it is needed), and "auto" is switched
 * off and on, so that auto fills in inside the sampler's ticks.
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A sensor whose state is a heap block that sample() writes: a use after
 * stop() is an ASan error.  The magic catches a half-started module. */
#define MAGIC 0x5ca1ab1eu

typedef struct {
    unsigned magic;
    uint64_t cpu_ns;
    double scale;
} state;

static atomic_ulong samples, computes, callbacks, needed_samples;

static const char *const scale_opts[] = {"scale", NULL};

static int st_start(pa_module *m, const pa_options *o)
{
    state *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    int rc = pa_options_get_double(o, "scale", 1.0, &s->scale);
    if (rc < 0) {
        free(s);
        return rc;
    }
    s->magic = MAGIC;
    pa_module_set_priv(m, s);
    return 0;
}

static int st_configure(pa_module *m, const pa_options *o)
{
    state *s = pa_module_priv(m);
    double v;
    int rc = pa_options_get_double(o, "scale", 1.0, &v);
    if (rc < 0)
        return rc;
    s->scale = v;
    return 0;
}

static void st_stop(pa_module *m)
{
    state *s = pa_module_priv(m);
    s->magic = 0;
    free(s);
}

static int st_sample(pa_module *m, pa_frame *f)
{
    state *s = pa_module_priv(m);
    ck_assert_uint_eq(s->magic, MAGIC);
    s->cpu_ns += 1000000;
    f->sys->have |= PA_HAVE_CPU;
    f->sys->ncpus = 1;
    pa_task *t = pa__task_seen(f, PA_TARGET_PROCESS, getpid(), 0, 1);
    ck_assert_ptr_nonnull(t);
    t->cur.cpu_ns = s->cpu_ns;
    t->cur.have |= PA_RD_CPU;
    f->scanned = true;
    atomic_fetch_add(&samples, 1);
    return 0;
}

static int st_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *t)
{
    state *s = pa_module_priv(m);
    ck_assert_uint_eq(s->magic, MAGIC);
    for (size_t i = 0; i < pa_delta_count(d); i++)
        pa_table_set_target_w(t, i, s->scale);
    pa_table_set_system_w(t, s->scale, 0);
    atomic_fetch_add(&computes, 1);
    return 0;
}

static const pa_module_ops sensor_ops = {
    .abi = PA_MODULE_ABI,
    .name = "stress-sensor",
    .kind = PA_SENSOR,
    .options = scale_opts,
    .start = st_start,
    .sample = st_sample,
    .configure = st_configure,
    .stop = st_stop,
};

static const pa_module_ops formula_ops = {
    .abi = PA_MODULE_ABI,
    .name = "stress-formula",
    .kind = PA_FORMULA,
    .component = PA_COMP_CPU,
    .options = scale_opts,
    .start = st_start,
    .compute = st_compute,
    /* no configure: the engine restarts it with the new options */
    .stop = st_stop,
};

/* The sensor the "stress-needy" formula requires: only checks its state. */
static int needed_sample(pa_module *m, pa_frame *f)
{
    (void)f;
    state *s = pa_module_priv(m);
    ck_assert_uint_eq(s->magic, MAGIC);
    atomic_fetch_add(&needed_samples, 1);
    return 0;
}

static const pa_module_ops needed_ops = {
    .abi = PA_MODULE_ABI,
    .name = "stress-needed",
    .kind = PA_SENSOR,
    .options = scale_opts,
    .start = st_start,
    .sample = needed_sample,
    .stop = st_stop,
};

static const char *const needy_requires[] = {"stress-needed", NULL};

static const pa_module_ops needy_ops = {
    .abi = PA_MODULE_ABI,
    .name = "stress-needy",
    .kind = PA_FORMULA,
    .component = PA_COMP_NIC,
    .options = scale_opts,
    .start = st_start,
    .compute = st_compute,
    .stop = st_stop,
    .requires = needy_requires,
};

static bool is_enabled(pa_ctx *ctx, const char *name)
{
    pa_module_info mi[16];
    int n = pa_module_list(ctx, mi, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (!strcmp(mi[i].name, name))
            return mi[i].enabled != 0;
    return false;
}

static void on_report(pa_ctx *ctx, const pa_report *r, void *user)
{
    (void)user;
    atomic_fetch_add(&callbacks, 1);
    ck_assert_uint_ge(r->tick, 1); /* windows are counted from 1 */
    /* context-safe calls from the callback are allowed... */
    pa_power p;
    int rc = pa_pid_power(ctx, getpid(), &p);
    ck_assert(rc == 0 || rc == -ENODATA || rc == -ESRCH);
    /* ...ticking from it is refused */
    ck_assert_int_eq(pa_tick(ctx), -EBUSY);
    ck_assert_int_eq(pa_stop(ctx), -EDEADLK);
}

START_TEST(lifecycle_while_sampling)
{
    char *root = pa_test_tmpdir();
    pa_test_write(root, "proc/stat", "cpu  0 0 0 0 0 0 0 0 0 0\n");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_register(ctx, &sensor_ops), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "stress-sensor", NULL), 0);
    ck_assert_int_eq(pa_start(ctx, 1000000, on_report, NULL), 0);
    ck_assert_int_eq(pa_start(ctx, 1000000, on_report, NULL), -EALREADY);
    ck_assert_int_eq(pa_module_register(ctx, &formula_ops), 0);
    ck_assert_int_eq(pa_module_register(ctx, &needed_ops), 0);
    ck_assert_int_eq(pa_module_register(ctx, &needy_ops), 0);
    char opt[32];
    for (int i = 0; i < 3000; i++) {
        switch (i % 7) {
        case 0:
            ck_assert_int_eq(pa_module_enable(ctx, "stress-needy", NULL), 0);
            ck_assert(is_enabled(ctx, "stress-needed"));
            break;
        case 2:
            ck_assert_int_eq(pa_module_disable(ctx, "stress-needed"), -EBUSY);
            break;
        case 4:
            ck_assert_int_eq(pa_module_disable(ctx, "stress-needy"), 0);
            ck_assert(!is_enabled(ctx, "stress-needed"));
            break;
        case 5:
            if (i % 3 == 0)
                ck_assert_int_eq(pa_module_disable(ctx, "auto"), 0);
            else if (i % 3 == 1)
                ck_assert_int_eq(pa_module_enable(ctx, "auto", NULL), 0);
            break;
        }
        switch (i % 5) {
        case 0:
            pa_module_enable(ctx, "stress-formula", NULL);
            break;
        case 1:
            snprintf(opt, sizeof(opt), "scale=%d", i);
            /* may be disabled at this point: either result is fine */
            pa_module_configure(ctx, "stress-formula", opt);
            break;
        case 2:
            snprintf(opt, sizeof(opt), "scale=%d", i);
            ck_assert_int_eq(pa_module_configure(ctx, "stress-sensor", opt), 0);
            break;
        case 3:
            pa_module_disable(ctx, "stress-formula");
            break;
        case 4:
            ck_assert_int_eq(pa_module_configure(ctx, "stress-sensor", "scale=oops"), -EINVAL);
            break;
        }
        if (i % 500 == 0) {
            pa_module_disable(ctx, "stress-sensor");
            ck_assert_int_eq(pa_module_enable(ctx, "stress-sensor", NULL), 0);
            usleep(2000);
        }
    }
    /* let a few ticks run with everything enabled */
    ck_assert_int_eq(pa_module_enable(ctx, "stress-formula", "scale=7"), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "stress-needy", NULL), 0);
    unsigned long needed0 = atomic_load(&needed_samples);
    usleep(50000);
    /* the sensor the formula brought is sampled (waiting for the sampler
     * on a loaded machine, 10 s at most) */
    for (int i = 0; i < 1000 && atomic_load(&needed_samples) == needed0; i++)
        usleep(10000);
    ck_assert_int_eq(pa_stop(ctx), 0);
    ck_assert_uint_gt(atomic_load(&samples), 10);
    ck_assert_uint_gt(atomic_load(&needed_samples), needed0);
    ck_assert_uint_gt(atomic_load(&computes), 0);
    ck_assert_uint_gt(atomic_load(&callbacks), 0);
    /* the last windows used scale=7 */
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_power p;
    ck_assert_int_eq(pa_pid_power(ctx, getpid(), &p), 0);
    ck_assert_double_eq_tol(p.cpu_w, 7.0, 1e-9);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

typedef struct {
    pa_ctx *ctx;
    int id;
} ctx_arg;

START_TEST(several_contexts_at_once)
{
    char *root = pa_test_tmpdir();
    pa_test_write(root, "proc/stat", "cpu  0 0 0 0 0 0 0 0 0 0\n");
    pa_ctx *a = pa_test_ctx(root), *b = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_register(a, &sensor_ops), 0);
    ck_assert_int_eq(pa_module_register(b, &sensor_ops), 0);
    ck_assert_int_eq(pa_module_register(a, &formula_ops), 0);
    ck_assert_int_eq(pa_module_register(b, &formula_ops), 0);
    ck_assert_int_eq(pa_module_enable(a, "stress-sensor", NULL), 0);
    ck_assert_int_eq(pa_module_enable(b, "stress-sensor", NULL), 0);
    ck_assert_int_eq(pa_module_enable(a, "stress-formula", "scale=2"), 0);
    ck_assert_int_eq(pa_module_enable(b, "stress-formula", "scale=3"), 0);
    ck_assert_int_eq(pa_start(a, 1000000, NULL, NULL), 0);
    ck_assert_int_eq(pa_start(b, 2000000, NULL, NULL), 0);
    usleep(60000);
    /* a loaded machine (ASan, parallel builds) may not have run both
     * samplers yet: wait for a window in each, 10 s at most */
    pa_power pa, pb;
    for (int i = 0;
         i < 1000 && (pa_pid_power(a, getpid(), &pa) < 0 || pa_pid_power(b, getpid(), &pb) < 0);
         i++)
        usleep(10000);
    ck_assert_int_eq(pa_stop(a), 0);
    ck_assert_int_eq(pa_stop(b), 0);
    ck_assert_int_eq(pa_pid_power(a, getpid(), &pa), 0);
    ck_assert_int_eq(pa_pid_power(b, getpid(), &pb), 0);
    ck_assert_double_eq_tol(pa.cpu_w, 2.0, 1e-9);
    ck_assert_double_eq_tol(pb.cpu_w, 3.0, 1e-9);
    pa_ctx_free(a);
    pa_ctx_free(b);
    pa_test_rmtree(root);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lifecycle");
    TCase *tc = tcase_create("sampler");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, lifecycle_while_sampling);
    tcase_add_test(tc, several_contexts_at_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
