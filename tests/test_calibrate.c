/*
 * test_calibrate.c - the library's calibration API (pa_calibrate_*,
 * libpowerapi/src/calibrate.c, DESIGN.md section 6.6) without RAPL: its
 * checks of the parameters and of a frequencies list, one calibration at a
 * time, and on the desktop-cpufreq fixture the frequencies it chooses, the
 * value it writes to each policy and its restoration when a window has no
 * RAPL reading.  The ladders themselves are measured on a simulated RAPL by
 * test_live_calibrate.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLICY "sys/devices/system/cpu/cpufreq/policy%d/scaling_max_freq"

/* The notes of a calibration, one a line. */
typedef struct notes {
    char text[4096];
} notes;

static void on_note(void *arg, const char *msg)
{
    notes *n = arg;
    size_t len = strlen(n->text);
    snprintf(n->text + len, sizeof(n->text) - len, "%s\n", msg);
}

/* Parameters of a fast run: a step of 40 ms of which 10 settle, windows
 * of 10 ms, 1 level, 1 repetition, no validation. */
static pa_calibrate_params fast(notes *n, const char *sysfs, const char *freqs)
{
    return (pa_calibrate_params){.version = PA_CALIBRATE_VERSION,
                                 .step_ns = 40000000,
                                 .settle_ns = 10000000,
                                 .window_ns = 10000000,
                                 .reps = 1,
                                 .levels = 1,
                                 .frequencies = freqs,
                                 .sysfs = sysfs,
                                 .note = on_note,
                                 .note_arg = n};
}

START_TEST(frequencies_lists)
{
    ck_assert_int_eq(pa_calibrate_check_frequencies("none"), 0);
    ck_assert_int_eq(pa_calibrate_check_frequencies("min,mid,max"), 0);
    ck_assert_int_eq(pa_calibrate_check_frequencies("1200,2400"), 0);
    ck_assert_int_eq(pa_calibrate_check_frequencies("1,2,3,4,5,6,7,8"), 0);
    ck_assert_int_eq(pa_calibrate_check_frequencies("1,2,3,4,5,6,7,8,9"), -EINVAL);
    ck_assert_int_eq(pa_calibrate_check_frequencies(""), -EINVAL);
    ck_assert_int_eq(pa_calibrate_check_frequencies("0"), -EINVAL);
    ck_assert_int_eq(pa_calibrate_check_frequencies("fast"), -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), "--frequencies fast: give none"), "%s", pa_last_error());
}
END_TEST

START_TEST(parameters_checked)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    pa_ctx *ctx = pa_test_ctx(root);
    notes n = {""};
    pa_calibrate *cal = NULL;
    pa_calibrate_params p = fast(&n, NULL, "none");
    p.version = 2;
    ck_assert_int_eq(pa_calibrate_new(ctx, &p, &cal), -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), "version 2") && strstr(pa_last_error(), "version 1"),
                  "%s", pa_last_error());
    p = fast(&n, NULL, "none");
    p.window_ns = 20000000; /* two of them do not fit in 40 - 10 ms */
    ck_assert_int_eq(pa_calibrate_new(ctx, &p, &cal), -EINVAL);
    p = fast(&n, NULL, "none");
    p.reps = 0;
    ck_assert_int_eq(pa_calibrate_new(ctx, &p, &cal), -EINVAL);
    p = fast(&n, NULL, "7x");
    ck_assert_int_eq(pa_calibrate_new(ctx, &p, &cal), -EINVAL);
    ck_assert_int_eq(pa_calibrate_new(NULL, &p, &cal), -EINVAL);
    ck_assert_ptr_null(cal);
    ck_assert_str_eq(n.text, ""); /* nothing started */
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* min, mid and max of the fixture's 16 frequencies: 800, 1900 and 3201
 * MHz through scaling_max_freq (governor schedutil); the first ladder's
 * window has no RAPL reading, so the run stops, and the four policies are
 * back at 3201000 kHz. */
START_TEST(frequencies_set_and_restored)
{
    char *root = pa_test_fixture_copy("desktop-cpufreq");
    char sys[4200];
    snprintf(sys, sizeof(sys), "%s/sys", root);
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    notes n = {""};
    pa_calibrate_params p = fast(&n, sys, NULL);
    pa_calibrate *cal = NULL, *two = NULL;
    ck_assert_int_eq(pa_calibrate_new(ctx, &p, &cal), 0);
    ck_assert_int_eq(pa_calibrate_new(ctx, &p, &two), -EBUSY); /* one at a time */
    ck_assert_msg(strstr(n.text, "ladder of 2 levels x 1 repetitions x 4 frequency settings"), "%s",
                  n.text);
    pa_calibrate_curve_result r;
    ck_assert_int_eq(pa_calibrate_curve(cal, &r), -ENODATA);
    ck_assert_msg(strstr(pa_last_error(), "a window without RAPL"), "%s", pa_last_error());
    ck_assert_msg(strstr(n.text, "ladder at 800 MHz (scaling_max_freq)\n"), "%s", n.text);
    for (int i = 0; i < 4; i++) {
        char rel[128], path[4400];
        snprintf(rel, sizeof(rel), POLICY, i);
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        char *v = pa_test_slurp(path);
        ck_assert_msg(v && !strcmp(v, "3201000\n"), "%s: [%s]", rel, v ? v : "(none)");
        free(v);
    }
    pa_calibrate_free(cal);
    /* released: another may start */
    p.frequencies = "none";
    ck_assert_int_eq(pa_calibrate_new(ctx, &p, &cal), 0);
    pa_calibrate_free(cal);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calibrate");
    TCase *tc = tcase_create("calibrate");
    tcase_add_test(tc, frequencies_lists);
    tcase_add_test(tc, parameters_checked);
    tcase_add_test(tc, frequencies_set_and_restored);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
