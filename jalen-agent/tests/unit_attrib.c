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

static const int pseudo6[JL_ATTRIB_NFRAMES] = {-1, 101, 102, 103, 104, 100};

/* 12 J over threads of 0.3, 0.1, 0 and 0.2 s of CPU: 6, 2, 0 and 4 J, each
 * with the frame that holds it: a sampled Java thread its samples (-1), an
 * unsampled one [unattributed] (100), GC [GC] (101), an unknown kind the
 * VM's (103). */
START_TEST(threads_by_cpu_time)
{
    jl_attrib_thread t[4] = {{.kind = 0, .cpu_s = 0.3, .samples = 2},
                             {.kind = 0, .cpu_s = 0.1},
                             {.kind = 1, .cpu_s = 0},
                             {.kind = 9, .cpu_s = 0.2}};
    double vm = jl_attrib_window(12, t, 4, pseudo6);
    ck_assert_double_eq_tol(t[0].cpu_j, 6, TOL);
    ck_assert_double_eq_tol(t[1].cpu_j, 2, TOL);
    ck_assert_double_eq_tol(t[2].cpu_j, 0, TOL);
    ck_assert_double_eq_tol(t[3].cpu_j, 4, TOL);
    ck_assert_double_eq_tol(vm, 0, TOL);
    ck_assert_int_eq(t[0].frame, -1);
    ck_assert_int_eq(t[1].frame, 100);
    ck_assert_int_eq(t[2].frame, 101);
    ck_assert_int_eq(t[3].frame, 103);
    /* no thread had CPU time: all of it is [VM]'s; a negative reading
     * takes nothing */
    jl_attrib_thread none[2] = {{.cpu_s = 0}, {.cpu_s = -0.5}};
    vm = jl_attrib_window(5, none, 2, pseudo6);
    ck_assert_double_eq_tol(vm, 5, TOL);
    ck_assert_double_eq_tol(none[0].cpu_j + none[1].cpu_j, 0, TOL);
    ck_assert_double_eq_tol(jl_attrib_window(3, NULL, 0, pseudo6), 3, TOL);
}
END_TEST

/* A thread that ended in the window adds the CPU time the reports did not
 * see (1.5 s at its end, 1.2 s seen: 0.3 s); none when unknown or less. */
START_TEST(ended_threads)
{
    ck_assert_double_eq_tol(jl_attrib_ended_cpu(1.5, 1.2), 0.3, TOL);
    ck_assert_double_eq_tol(jl_attrib_ended_cpu(1.0, 1.2), 0, TOL);
    ck_assert_double_eq_tol(jl_attrib_ended_cpu(-1, 0.5), 0, TOL);
    ck_assert_double_eq_tol(jl_attrib_ended_cpu(-2, 0), 0, TOL);
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
 * 11 J.  Then a window where no byte moved: its 2 J of network are [VM]'s. */
START_TEST(window_conserves)
{
    jl_attrib_thread t[3] = {{.kind = 0, .cpu_s = 0.6, .samples = 3},
                             {.kind = 1, .cpu_s = 0.2},
                             {.kind = 0, .cpu_s = 0.2}};
    double vm = jl_attrib_window(10, t, 3, pseudo6);
    double methods = jl_attrib_sample(t[0].cpu_j, 1, 3, 1) + jl_attrib_sample(t[0].cpu_j, 2, 3, 1);
    ck_assert_double_eq_tol(methods, 6, TOL);
    double frames = 0;
    for (int i = 0; i < 3; i++)
        if (t[i].frame >= 0)
            frames += t[i].cpu_j;
    ck_assert_double_eq_tol(frames, 4, TOL); /* [GC] 2 J, [unattributed] 2 J */
    double net = jl_attrib_net(1, 3000, 4000) + jl_attrib_net(1, 1000, 4000);
    ck_assert_double_eq_tol(jl_attrib_net(1, 3000, 4000), 0.75, TOL);
    ck_assert_double_eq_tol(jl_attrib_net_left(1, 4000), 0, TOL);
    ck_assert_double_eq_tol(methods + frames + vm + net, 11, TOL);
    ck_assert_double_eq_tol(jl_attrib_net(1, 10, 0), 0, TOL);
    ck_assert_double_eq_tol(jl_attrib_net_left(2, 0), 2, TOL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_attrib");
    TCase *tc = tcase_create("attrib");
    tcase_add_test(tc, threads_by_cpu_time);
    tcase_add_test(tc, ended_threads);
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
