/*
 * test_cli_options.c - the options that build a context are the same in
 * every command (cli/options.c): each shared option given a bad value
 * makes every command that takes it print the same line (the command's
 * name aside) with the same exit status, the commands that do not take it
 * refuse it as unknown, and each command's --help lists the shared
 * options it takes with the same text.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const commands[] = {"monitor", "daemon",  "top",      "serve",
                                       "profile", "modules", "calibrate"};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* Which commands take a group of shared options, by index in commands. */
enum {
    ALL = 0x7f,                  /* --procfs, --sysfs, --hwdb */
    SAMPLERS = 0x0f,             /* --interval: monitor daemon top serve */
    NOT_CALIBRATE = ALL & ~0x40, /* --calibration, modules */
    /* profile's own -i/--interval is its sampling period (CPU time between
     * two stack samples, down to 10 us), not the context's window: it is
     * left out of the --interval cases */
    NOT_PROFILE = ALL & ~0x10,
    /* --carbon-intensity: the commands that report energy (monitor, top,
     * serve, profile) */
    CARBON = 0x1d,
};

static const struct {
    const char *args[3];
    unsigned takes; /* commands that take the option */
    unsigned asked; /* commands run */
    int status;
} bad[] = {
    {{"--interval", "0s"}, SAMPLERS, NOT_PROFILE, 2},
    {{"--interval", "5"}, SAMPLERS, NOT_PROFILE, 2},
    {{"--interval", "abc"}, SAMPLERS, NOT_PROFILE, 2},
    {{"--interval", "999us"}, SAMPLERS, NOT_PROFILE, 2},
    {{"-i", "1parsec"}, SAMPLERS, NOT_PROFILE, 2},
    {{"--interval"}, SAMPLERS, NOT_PROFILE, 2},
    {{"--procfs", "/nonexistent/proc"}, ALL, ALL, 1},
    {{"--sysfs", "/nonexistent/sys"}, ALL, ALL, 1},
    {{"--hwdb", "/nonexistent/hwdb.txt"}, ALL, ALL, 1},
    {{"--hwdb", "/"}, ALL, ALL, 1},
    {{"--procfs"}, ALL, ALL, 2},
    {{"--calibration", "/nonexistent/calibration.txt"}, NOT_CALIBRATE, ALL, 2},
    {{"--sensor", ":x=1"}, NOT_CALIBRATE, ALL, 2},
    {{"--formula", ""}, NOT_CALIBRATE, ALL, 2},
    {{"--disable", "rapl:x"}, NOT_CALIBRATE, ALL, 2},
    {{"--carbon-intensity", "-3"}, CARBON, ALL, 2},
    {{"--carbon-intensity", "abc"}, CARBON, ALL, 2},
    {{"--carbon-intensity", "9000"}, CARBON, ALL, 2},
    {{"--carbon-intensity"}, CARBON, ALL, 2},
};

/* stderr with "powerapi CMD" made "powerapi *": what must be equal. */
static char *generic(const char *err, const char *cmd)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "powerapi %s", cmd);
    size_t pl = strlen(pat);
    char *out = malloc(strlen(err) + 1);
    ck_assert(out != NULL);
    char *o = out;
    while (*err) {
        if (!strncmp(err, pat, pl)) {
            o += sprintf(o, "powerapi *");
            err += pl;
        } else {
            *o++ = *err++;
        }
    }
    *o = '\0';
    return out;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

START_TEST(test_same_error_everywhere)
{
    char *first = NULL;
    const char *first_cmd = NULL;
    for (size_t c = 0; c < NCOMMANDS; c++) {
        if (!(bad[_i].asked & (1u << c)))
            continue;
        char *argv[5] = {(char *)commands[c]};
        for (size_t k = 0; k < 2 && bad[_i].args[k]; k++)
            argv[k + 1] = (char *)bad[_i].args[k];
        pa_test_cli_run r;
        pa_test_cli(&r, argv);
        const char *opt = bad[_i].args[0];
        ck_assert_msg(!r.signaled, "%s %s: crashed", commands[c], opt);
        ck_assert_msg(count_lines(r.err) == 1, "%s %s: not one line: %s", commands[c], opt, r.err);
        ck_assert_str_eq(r.out, "");
        if (!(bad[_i].takes & (1u << c))) {
            /* a command that does not take it: unknown, not ignored */
            ck_assert_int_eq(r.status, 2);
            ck_assert_msg(strstr(r.err, "unknown option") != NULL, "%s %s: %s", commands[c], opt,
                          r.err);
            pa_test_cli_free(&r);
            continue;
        }
        ck_assert_msg(r.status == bad[_i].status, "%s %s: status %d: %s", commands[c], opt,
                      r.status, r.err);
        char *g = generic(r.err, commands[c]);
        const char *named = opt[1] == '-' ? opt : "--interval";
        ck_assert_msg(strstr(g, named) != NULL, "%s: %s not named: %s", commands[c], named, g);
        if (!first) {
            first = g;
            first_cmd = commands[c];
        } else {
            ck_assert_msg(!strcmp(first, g), "%s and %s differ:\n  %s  %s", first_cmd, commands[c],
                          first, g);
            free(g);
        }
        pa_test_cli_free(&r);
    }
    free(first);
}
END_TEST

/* The lowest interval, 1 ms, is taken by every command: parsing goes on
 * to the next option (refused, so that nothing starts). */
START_TEST(test_lowest_interval)
{
    for (size_t c = 0; c < NCOMMANDS; c++) {
        if (!(SAMPLERS & (1u << c)))
            continue;
        char *argv[] = {(char *)commands[c], "--interval", "1ms", "--bogus", NULL};
        pa_test_cli_run r;
        pa_test_cli(&r, argv);
        ck_assert_int_eq(r.status, 2);
        ck_assert_msg(strstr(r.err, "unknown option '--bogus'") != NULL, "%s --interval 1ms: %s",
                      commands[c], r.err);
        pa_test_cli_free(&r);
    }
}
END_TEST

/* -o/--output in every command that writes a file or a folder; the older
 * spellings stay accepted. */
START_TEST(test_output_option)
{
    static const struct {
        const char *args[4];
        const char *err;
    } cases[] = {
        {{"monitor", "-o"}, "option '-o' needs a value"},
        {{"profile", "-o"}, "option '-o' needs a value"},
        {{"calibrate", "-o"}, "option '-o' needs a value"},
        {{"profile", "--output"}, "option '--output' needs a value"},
        {{"profile", "--out"}, "option '--out' needs a value"},
        /* parsed: what is missing is the target */
        {{"profile", "--out", "dir"}, "nothing to profile"},
        {{"calibrate", "--duration", "1s"}, "--step must leave"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pa_test_cli_run r;
        pa_test_cli(&r, (char *const *)cases[i].args);
        ck_assert_int_eq(r.status, 2);
        ck_assert_msg(strstr(r.err, cases[i].err) != NULL, "%s %s: %s", cases[i].args[0],
                      cases[i].args[1], r.err);
        pa_test_cli_free(&r);
    }
}
END_TEST

/* A duration needs its unit: "5" (seconds to the library) is refused by
 * every duration option of every command, with the accepted forms. */
START_TEST(test_bare_number_durations)
{
    static const char *const cases[][3] = {
        {"monitor", "--interval", "5"},    {"monitor", "--duration", "10"},
        {"monitor", "--clock-step", "1"},  {"daemon", "-i", "2"},
        {"top", "--interval", "1"},        {"serve", "--interval", "1"},
        {"serve", "--window", "10"},       {"serve", "--connection-timeout", "10"},
        {"profile", "--interval", "10"},   {"profile", "--window", "1"},
        {"profile", "--duration", "0.5"},  {"calibrate", "--step", "5"},
        {"calibrate", "--settle", "1e-1"}, {"calibrate", "--window", "1"},
        {"calibrate", "--validate", "30"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *argv[] = {(char *)cases[i][0], (char *)cases[i][1], (char *)cases[i][2], NULL};
        pa_test_cli_run r;
        pa_test_cli(&r, argv);
        char want[128];
        snprintf(want, sizeof(want), "'%s' has no unit (write it as 5s, 100ms", cases[i][2]);
        ck_assert_msg(r.status == 2 && count_lines(r.err) == 1 && strstr(r.err, want) != NULL,
                      "%s %s %s: status %d: %s", cases[i][0], cases[i][1], cases[i][2], r.status,
                      r.err);
        pa_test_cli_free(&r);
    }
    /* calibrate --validate 0 stays "no validation" */
    char *argv[] = {"calibrate", "--validate", "0", "--bogus", NULL};
    pa_test_cli_run r;
    pa_test_cli(&r, argv);
    ck_assert_msg(strstr(r.err, "unknown option '--bogus'") != NULL, "%s", r.err);
    pa_test_cli_free(&r);
}
END_TEST

/* The line of --help that describes opt ("  -i, --interval DURATION ..."),
 * continuation lines included; NULL if absent. */
static char *help_of(const char *help, const char *opt)
{
    const char *p = strstr(help, opt);
    if (!p)
        return NULL;
    while (p > help && p[-1] != '\n')
        p--;
    const char *e = strchr(p, '\n');
    /* continuation lines start with spaces up to the help column */
    while (e && !strncmp(e + 1, "                            ", 28))
        e = strchr(e + 1, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char *s = malloc(len + 1);
    ck_assert(s != NULL);
    memcpy(s, p, len);
    s[len] = '\0';
    return s;
}

START_TEST(test_help_lists_shared_options)
{
    static const struct {
        const char *opt;
        unsigned takes;
    } shared[] = {
        {"--procfs DIR", ALL},
        {"--sysfs DIR", ALL},
        {"--hwdb FILE", ALL},
        {"--calibration FILE", NOT_CALIBRATE},
        {"--sensor NAME[:OPTS]", NOT_CALIBRATE},
        {"--formula NAME[:OPTS]", NOT_CALIBRATE},
        {"--disable NAME", NOT_CALIBRATE},
        {"-i, --interval DURATION", SAMPLERS},
    };
    char *first[sizeof(shared) / sizeof(shared[0])] = {NULL};
    for (size_t c = 0; c < NCOMMANDS; c++) {
        char *argv[] = {(char *)commands[c], "--help", NULL};
        pa_test_cli_run r;
        pa_test_cli(&r, argv);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.err, "");
        for (size_t k = 0; k < sizeof(shared) / sizeof(shared[0]); k++) {
            char *line = help_of(r.out, shared[k].opt);
            if (!(shared[k].takes & (1u << c))) {
                free(line);
                continue;
            }
            ck_assert_msg(line != NULL, "%s --help lacks %s:\n%s", commands[c], shared[k].opt,
                          r.out);
            if (!first[k]) {
                first[k] = line;
                continue;
            }
            ck_assert_msg(!strcmp(first[k], line), "%s --help says of %s:\n%s\nnot:\n%s",
                          commands[c], shared[k].opt, line, first[k]);
            free(line);
        }
        pa_test_cli_free(&r);
    }
    for (size_t k = 0; k < sizeof(shared) / sizeof(shared[0]); k++)
        free(first[k]);
}
END_TEST

static Suite *options_suite(void)
{
    Suite *s = suite_create("cli_options");
    TCase *tc = tcase_create("options");
    tcase_add_loop_test(tc, test_same_error_everywhere, 0, sizeof(bad) / sizeof(bad[0]));
    tcase_add_test(tc, test_lowest_interval);
    tcase_add_test(tc, test_output_option);
    tcase_add_test(tc, test_bare_number_durations);
    tcase_add_test(tc, test_help_lists_shared_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(options_suite());
}
