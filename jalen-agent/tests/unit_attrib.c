/*
 * unit_attrib.c - the Jalen equations of a window (attrib.c, DESIGN.md
 * section 6.4) on known inputs, without a JVM: known joules, and the
 * parts summing to the process's energy.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "attrib.h"

#define TOL 1e-12

/* 12 J over threads of 0.3, 0.1, 0 and 0.2 s of CPU: 6, 2, 0 and 4 J. */
START_TEST(threads_by_cpu_time)
{
    const double cpu[4] = {0.3, 0.1, 0, 0.2};
    double out[4];
    double left = jl_attrib_threads(12, cpu, out, 4);
    ck_assert_double_eq_tol(out[0], 6, TOL);
    ck_assert_double_eq_tol(out[1], 2, TOL);
    ck_assert_double_eq_tol(out[2], 0, TOL);
    ck_assert_double_eq_tol(out[3], 4, TOL);
    ck_assert_double_eq_tol(left, 0, TOL);
    /* no thread had CPU time: all of it is left (the agent files it under
     * [VM]); a negative reading takes nothing */
    const double none[2] = {0, -0.5};
    left = jl_attrib_threads(5, none, out, 2);
    ck_assert_double_eq_tol(left, 5, TOL);
    ck_assert_double_eq_tol(out[0] + out[1], 0, TOL);
    ck_assert_double_eq_tol(jl_attrib_threads(3, NULL, NULL, 0), 3, TOL);
}
END_TEST

/* A Java thread of 6 J and 4 samples: a sample of weight 1 holds 1.5 J,
 * of weight 2 3 J; the sum over its samples is the thread's energy.  A
 * pseudo-thread's samples hold nothing. */
START_TEST(samples_split_the_thread)
{
    ck_assert_double_eq_tol(jl_attrib_sample(6, 1, 4, 1), 1.5, TOL);
    ck_assert_double_eq_tol(jl_attrib_sample(6, 2, 4, 1), 3, TOL);
    double sum = 0;
    const int w[3] = {1, 2, 1};
    for (int i = 0; i < 3; i++)
        sum += jl_attrib_sample(6, w[i], 4, 1);
    ck_assert_double_eq_tol(sum, 6, TOL);
    ck_assert_double_eq_tol(jl_attrib_sample(6, 1, 4, 0), 0, TOL);
    ck_assert_double_eq_tol(jl_attrib_sample(6, 1, 0, 1), 0, TOL);
    ck_assert_double_eq_tol(jl_attrib_sample(6, 0, 4, 1), 0, TOL);
}
END_TEST

START_TEST(pseudo_frames)
{
    const int pseudo[JL_ATTRIB_NFRAMES] = {-1, 101, 102, 103, 104, 100};
    ck_assert_int_eq(jl_attrib_frame(0, 3, pseudo), -1);  /* Java, sampled */
    ck_assert_int_eq(jl_attrib_frame(0, 0, pseudo), 100); /* [unattributed] */
    ck_assert_int_eq(jl_attrib_frame(1, 5, pseudo), 101); /* [GC] */
    ck_assert_int_eq(jl_attrib_frame(2, 0, pseudo), 102); /* [JIT compiler] */
    ck_assert_int_eq(jl_attrib_frame(3, 0, pseudo), 103); /* [VM] */
    ck_assert_int_eq(jl_attrib_frame(4, 0, pseudo), 104); /* [agent] */
    ck_assert_int_eq(jl_attrib_frame(9, 0, pseudo), 103); /* unknown: the VM's */
}
END_TEST

/* A window end to end: 10 J of CPU over a Java thread (0.6 s, samples of
 * weight 1 and 2), a GC thread (0.2 s) and an unsampled Java thread
 * (0.2 s); 1 J of network over 3,000 and 1,000 bytes.  The parts sum to
 * 11 J. */
START_TEST(window_conserves)
{
    const double cpu[3] = {0.6, 0.2, 0.2};
    double thr[3];
    double left = jl_attrib_threads(10, cpu, thr, 3);
    double methods = jl_attrib_sample(thr[0], 1, 3, 1) + jl_attrib_sample(thr[0], 2, 3, 1);
    ck_assert_double_eq_tol(methods, 6, TOL);
    const int pseudo[JL_ATTRIB_NFRAMES] = {-1, 1, 2, 3, 4, 0};
    double frames = 0;
    const int kind[3] = {0, 1, 0}, samples[3] = {3, 0, 0};
    for (int i = 0; i < 3; i++)
        if (jl_attrib_frame(kind[i], samples[i], pseudo) >= 0)
            frames += thr[i];
    ck_assert_double_eq_tol(frames, 4, TOL); /* [GC] 2 J, [unattributed] 2 J */
    double net = jl_attrib_net(1, 3000, 4000) + jl_attrib_net(1, 1000, 4000);
    ck_assert_double_eq_tol(jl_attrib_net(1, 3000, 4000), 0.75, TOL);
    ck_assert_double_eq_tol(methods + frames + left + net, 11, TOL);
    ck_assert_double_eq_tol(jl_attrib_net(1, 10, 0), 0, TOL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_attrib");
    TCase *tc = tcase_create("attrib");
    tcase_add_test(tc, threads_by_cpu_time);
    tcase_add_test(tc, samples_split_the_thread);
    tcase_add_test(tc, pseudo_frames);
    tcase_add_test(tc, window_conserves);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
