/*
 * test_cgroup_counters.c - cgroup records take counters counted per
 * cgroup (pa__cgroup_ctr, what the perf sensor fills with
 * PERF_FLAG_PID_CGROUP) when a sensor gave them for this tick and the
 * previous one, and fall back to the sum of the cgroup's processes
 * otherwise (a cgroup not counted, a tick skipped, a new baseline).  On
 * the cgroups-server fixture, with a test sensor that writes known
 * cumulative counts.
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX "cgroups-server"
#define NGINX "/system.slice/nginx.service"
#define DOCKER "/system.slice/docker-4f3a9c0e1b2d.scope"

/* What the test sensor writes at the next tick. */
static struct {
    bool write_cg;   /* nginx's cgroup counters */
    bool fresh;      /* ... as a new baseline */
    double cg_value; /* cumulative */
    double mux;
    double per_tick; /* every process counts pid / 1000 x this per tick */
    double acc;      /* accumulated per_tick */
} fake;

static const char *const fake_names[] = {"perf::TASK-CLOCK"};

static int fake_start(pa_module *m, const pa_options *opts)
{
    (void)opts;
    return pa__counters_declare(m->ctx, fake_names, 1);
}

static int fake_sample(pa_module *m, pa_frame *f)
{
    pa_ctx *ctx = m->ctx;
    fake.acc += fake.per_tick;
    for (size_t i = 0; i < ctx->procs.n; i++) {
        pa_task *t = ctx->procs.v[i];
        if (t->seen_tick != f->tick || !t->ctr_cur)
            continue;
        t->ctr_cur[0] = fake.acc * t->pid / 1000.0;
        t->cur.have |= PA_RD_COUNTERS;
        t->cur.multiplex = 1.0;
    }
    if (!fake.write_cg)
        return 0;
    for (size_t g = 0; g < ctx->ncgroups; g++) {
        if (strcmp(ctx->cgroups[g], NGINX) != 0)
            continue;
        pa_cgroup_ctr *c = pa__cgroup_ctr(ctx, g);
        ck_assert(c != NULL);
        c->cur[0] = fake.cg_value;
        c->multiplex = fake.mux;
        c->cur_tick = f->tick;
        if (fake.fresh)
            c->prev_tick = 0;
    }
    return 0;
}

static const pa_module_ops fake_ops = {
    .abi = PA_MODULE_ABI,
    .name = "fake-cgroup-counters",
    .kind = PA_SENSOR,
    .component = PA_COMP_NONE,
    .description = "test: per-cgroup counters",
    .start = fake_start,
    .sample = fake_sample,
};

static char *overlay_dst;
static size_t overlay_skip;

static int overlay_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (type != FTW_F)
        return 0;
    char *text = pa_test_slurp(path);
    ck_assert(text != NULL);
    pa_test_write(overlay_dst, path + overlay_skip, "%s", text);
    free(text);
    return 0;
}

static void apply_state(const char *root, int k)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/%s/states/%d", PA_FIXTURES, FIX, k);
    overlay_dst = (char *)root;
    overlay_skip = strlen(dir) + 1;
    ck_assert_int_eq(nftw(dir, overlay_one, 16, FTW_PHYS), 0);
}

/* The counter and multiplex of the cgroup record cg in the last report
 * (-1 if absent). */
static double cg_counter(pa_ctx *ctx, const char *cg, double *mux)
{
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    double v = -1;
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *t = &r->targets[i];
        if (t->type == PA_TARGET_CGROUP && !strcmp(t->cgroup, cg)) {
            ck_assert(t->counters != NULL);
            v = t->counters[0];
            if (mux)
                *mux = t->multiplex;
        }
    }
    pa_report_free(r);
    return v;
}

/* Tick k: the fixture's states 1 and 2, then state 2 again (the
 * counters do not depend on CPU time). */
static void tick(pa_ctx *ctx, const char *root, int k)
{
    apply_state(root, k < 2 ? k : 2);
    int rc = pa_tick_at(ctx, (uint64_t)(k + 1) * NS_PER_S);
    ck_assert_msg(rc == 0, "tick %d: %s", k, pa_last_error());
}

START_TEST(cgroup_counters_or_sums)
{
    memset(&fake, 0, sizeof(fake));
    fake.per_tick = 10; /* nginx: pids 1001 + 1002 -> 20.03 per tick */
    char *root = pa_test_fixture_copy(FIX);
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_register(ctx, &fake_ops), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "fake-cgroup-counters", NULL), 0);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_report_cgroups(ctx, 1), 0);
    const double nginx_sum = 10 * (1001 + 1002) / 1000.0;
    const double docker_sum = 10 * 2001 / 1000.0;

    /* tick 0: nginx counted as a cgroup, a baseline of 100 */
    fake.write_cg = true;
    fake.fresh = true;
    fake.cg_value = 100;
    fake.mux = 1;
    ck_assert_int_eq(pa_tick_at(ctx, NS_PER_S), 0);
    /* window 1: 100 -> 350 (processes that came and went included),
     * multiplexed half the time; docker: its process's sum */
    fake.fresh = false;
    fake.cg_value = 350;
    fake.mux = 0.5;
    tick(ctx, root, 1);
    double mux = 0;
    ck_assert_double_eq_tol(cg_counter(ctx, NGINX, &mux), 250, 1e-9);
    ck_assert_double_eq_tol(mux, 0.5, 1e-12);
    ck_assert_double_eq_tol(cg_counter(ctx, DOCKER, NULL), docker_sum, 1e-9);
    /* window 2: the sensor did not count the cgroup: the processes' sum */
    fake.write_cg = false;
    tick(ctx, root, 2);
    ck_assert_double_eq_tol(cg_counter(ctx, NGINX, &mux), nginx_sum, 1e-9);
    ck_assert_double_eq_tol(mux, 1.0, 1e-12);
    /* window 3: counted again, but the previous tick has no reading: sum */
    fake.write_cg = true;
    fake.cg_value = 400;
    fake.mux = 1;
    tick(ctx, root, 3);
    ck_assert_double_eq_tol(cg_counter(ctx, NGINX, NULL), nginx_sum, 1e-9);
    /* window 4: 400 -> 470 */
    fake.cg_value = 470;
    tick(ctx, root, 4);
    ck_assert_double_eq_tol(cg_counter(ctx, NGINX, NULL), 70, 1e-9);
    /* window 5: reopened (a new baseline of 5): sum; window 6: 5 -> 45 */
    fake.fresh = true;
    fake.cg_value = 5;
    tick(ctx, root, 5);
    ck_assert_double_eq_tol(cg_counter(ctx, NGINX, NULL), nginx_sum, 1e-9);
    fake.fresh = false;
    fake.cg_value = 45;
    tick(ctx, root, 6);
    ck_assert_double_eq_tol(cg_counter(ctx, NGINX, NULL), 40, 1e-9);
    /* a counter that went backwards (reset without a baseline) is 0 */
    fake.cg_value = 30;
    tick(ctx, root, 7);
    ck_assert_double_eq_tol(cg_counter(ctx, NGINX, NULL), 0, 1e-9);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* Index beyond the interned cgroups: no storage. */
START_TEST(cgroup_ctr_bounds)
{
    pa_ctx *ctx = NULL;
    ck_assert_int_eq(pa_ctx_new(&ctx, NULL), 0);
    ck_assert_ptr_null(pa__cgroup_ctr(ctx, 0));
    for (int i = 0; i < 40; i++) {
        char p[32];
        snprintf(p, sizeof(p), "/g%d", i);
        ck_assert_int_eq(pa__cgroup_intern(ctx, p), i);
    }
    pa_cgroup_ctr *c = pa__cgroup_ctr(ctx, 39);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(c->cur_tick, 0);
    ck_assert_double_eq(c->cur[0], 0);
    ck_assert_ptr_null(pa__cgroup_ctr(ctx, 40));
    pa_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cgroup-counters");
    TCase *tc = tcase_create("engine");
    tcase_add_test(tc, cgroup_counters_or_sums);
    tcase_add_test(tc, cgroup_ctr_bounds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
