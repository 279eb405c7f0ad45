/* test_completion.c - the bash completion (completion/powerapi.bash),
 * driven as bash drives it: COMP_WORDS, COMP_CWORD, COMP_LINE and
 * COMP_POINT set, _powerapi called, COMPREPLY read back.  The candidates
 * come from the program under test (commands, options, modules and their
 * keys, perf events, durations, pids by name).  zsh's (_powerapi) runs
 * with the completion builtins replaced by functions that print. */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#define COMPLETION PA_SOURCE_TESTS "/../completion/powerapi.bash"

static char *dir;

static void setup(void)
{
    dir = pa_test_tmpdir();
}

static void teardown(void)
{
    pa_test_rmtree(dir);
}

/* COMPREPLY for the command line `line` (the program's name first, its
 * words split at blanks; split also at ':' and '=' as bash's
 * COMP_WORDBREAKS does when split_breaks), one candidate a line, sorted,
 * in a malloc'd string that starts with "\n" ("\n" when none). */
static char *complete_split(const char *line, int split_breaks)
{
    pa_test_write(dir, "t.sh",
                  "source '%s'\n"
                  "COMP_LINE=\"$1\"; COMP_POINT=${#COMP_LINE}\n"
                  "if [ \"$2\" = 1 ]; then\n"
                  "  s=$(printf '%%s' \"$1\" | sed -E 's/([:=]+)/ \\1 /g')\n"
                  "else s=$1; fi\n"
                  "read -r -a COMP_WORDS <<<\"$s\"\n"
                  "case $1 in *' ') COMP_WORDS+=(''); esac\n"
                  "COMP_WORDS[0]='%s'\n"
                  "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
                  "_powerapi\n"
                  "printf '%%s\\n' \"${COMPREPLY[@]}\" | sort\n",
                  COMPLETION, CLI_PATH);
    char cmd[8400], *out = NULL;
    snprintf(cmd, sizeof(cmd), "bash --norc --noprofile '%s/t.sh' '%s' %d 2>&1", dir, line,
             split_breaks);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    char *r = malloc(strlen(out) + 2);
    ck_assert_ptr_nonnull(r);
    strcpy(r, "\n");
    strcat(r, out[0] == '\n' ? out + 1 : out);
    free(out);
    return r;
}

static char *complete(const char *line)
{
    return complete_split(line, 0);
}

static void expect(const char *line, const char *want)
{
    char *got = complete(line);
    ck_assert_msg(!strcmp(got, want), "'%s': got\n%s\nwant\n%s", line, got, want);
    free(got);
}

START_TEST(test_commands_and_options)
{
    expect("powerapi ",
           "\n--help\n--version\ncalibrate\ndaemon\ndiff\nevents\nhelp\njalen\nmodules\n"
           "monitor\nprofile\nserve\ntop\n");
    expect("powerapi mo", "\nmodules\nmonitor\n");
    expect("powerapi serve --no", "\n--node\n");
    expect("powerapi serve --max-c", "\n--max-cgroups\n--max-connections\n");
    expect("powerapi modules --", "\n--calibration\n--disable\n--format\n--formula\n"
                                  "--help\n--hwdb\n--names\n--procfs\n--rootfs\n"
                                  "--sensor\n--sysfs\n");
    expect("powerapi events -", "\n--all\n--help\n-a\n-h\n");
    expect("powerapi monitor --format j", "\njson\n");
    expect("powerapi monitor --group-by c", "\ncgroup\ncontainer\n");
    expect("powerapi jalen 1 st", "\nstart\nstatus\nstop\n");
    expect("powerapi help se", "\nserve\n");
    /* after "--", a command of this machine */
    char *got = complete("powerapi monitor --all -- bas");
    ck_assert_msg(strstr(got, "\nbash\n"), "%s", got);
    free(got);
}
END_TEST

START_TEST(test_durations)
{
    expect("powerapi monitor -i 5", "\n5h\n5m\n5ms\n5ns\n5s\n5us\n");
    expect("powerapi serve --connection-timeout 1", "\n1h\n1m\n1ms\n1ns\n1s\n1us\n");
    expect("powerapi serve --connection-timeout 1m", "\n1m\n");
    expect("powerapi serve --window 1", "\n1h\n1m\n1ms\n1ns\n1s\n1us\n");
    expect("powerapi monitor --interval 2s", "\n2s\n");
    expect("powerapi monitor --interval 25", "\n25h\n25m\n25ms\n25ns\n25s\n25us\n");
}
END_TEST

START_TEST(test_modules_and_keys)
{
    /* sensors only after --sensor, formulas (and auto) after --formula */
    /* every sensor `modules --names` lists, and no formula */
    char cmd[4200], *sensors = NULL;
    snprintf(cmd, sizeof(cmd), "'%s' modules --names | awk '$1 == \"sensor\" { print $2 }' | sort",
             CLI_PATH);
    ck_assert_int_eq(pa_test_run(cmd, &sensors), 0);
    ck_assert_msg(strstr(sensors, "perf\nprocfs-cpu\n"), "%s", sensors);
    char want[4096];
    snprintf(want, sizeof(want), "\n%s", sensors);
    expect("powerapi monitor --sensor ", want);
    free(sensors);
    expect("powerapi monitor --formula cpu-", "\ncpu-curve\ncpu-tdp\n");
    expect("powerapi serve --formula a", "\nauto\n");
    expect("powerapi daemon --disable r", "\nrapl\nrapl-share\nredfish\n");
    /* option keys after ':', and after ',' */
    expect("powerapi monitor --formula cpu-tdp:t", "\ncpu-tdp:tdp=\n");
    expect("powerapi monitor --formula cpu-tdp:tdp=15W,s", "\ncpu-tdp:tdp=15W,share=\n");
    expect("powerapi monitor --sensor perf:", "\nperf:events=\nperf:group=\nperf:system=\n");
    /* as bash splits the word at ':' and '=': only the part after */
    char *got = complete_split("powerapi monitor --formula cpu-tdp:t", 1);
    ck_assert_msg(!strcmp(got, "\ntdp=\n"), "%s", got);
    free(got);
    got = complete_split("powerapi monitor --sensor perf:", 1);
    ck_assert_msg(!strcmp(got, "\n:events=\n:group=\n:system=\n"), "%s", got);
    free(got);
}
END_TEST

START_TEST(test_perf_events)
{
    char cmd[4200], *out = NULL;
    snprintf(cmd, sizeof(cmd), "'%s' events 2>/dev/null", CLI_PATH);
    pa_test_run(cmd, &out);
    if (!out || !strstr(out, "perf::TASK-CLOCK ")) {
        fprintf(stderr, "test_perf_events: SKIPPED: 'powerapi events' lists no "
                        "perf::TASK-CLOCK here (perf_event_open refused)\n");
        free(out);
        return;
    }
    free(out);
    expect("powerapi monitor --sensor perf:events=perf::TASK-CL",
           "\nperf:events=perf::TASK-CLOCK\n");
    /* the second event of a '+' list */
    expect("powerapi monitor --sensor perf:events=perf::TASK-CLOCK+perf::TASK-CL",
           "\nperf:events=perf::TASK-CLOCK+perf::TASK-CLOCK\n");
    char *got = complete_split("powerapi monitor --sensor perf:events=perf::TASK-CL", 1);
    ck_assert_msg(!strcmp(got, "\nTASK-CLOCK\n"), "%s", got);
    free(got);
}
END_TEST

static char *zsh_complete(const char *line);

/* Options with a fixed set of values offer exactly what the command's own
 * check accepts (issue 43: profile --event offered perf's events, which it
 * refuses): the values come from the option tables (`--complete`'s extra
 * fields), and every one of them, run through its command, is taken. */
START_TEST(test_choices_are_the_commands_own)
{
    expect("powerapi profile --event ", "\ncpu-clock\ncycles\ntask-clock\n");
    expect("powerapi profile --event cpu", "\ncpu-clock\n");
    expect("powerapi profile -e t", "\ntask-clock\n");
    expect("powerapi profile --call-graph ", "\ndwarf\nfp\n");
    expect("powerapi monitor --exited ", "\nfold\nlist\n");
    expect("powerapi top --sort e", "\nenergy\n");
    if (system("command -v zsh >/dev/null 2>&1") == 0) {
        char *got = zsh_complete("powerapi profile --event ");
        ck_assert_msg(strstr(got, "\ncpu-clock\n") && !strstr(got, "perf::"), "%s", got);
        free(got);
    }
    char cmd[8192], *cmds = NULL;
    snprintf(cmd, sizeof(cmd), "'%s' --complete", CLI_PATH);
    ck_assert_int_eq(pa_test_run(cmd, &cmds), 0);
    int tried = 0;
    for (char *c = strtok(cmds, "\n"); c; c = strtok(NULL, "\n")) {
        if (c[0] == '-')
            continue;
        char *opts = NULL;
        snprintf(cmd, sizeof(cmd), "'%s' %s --complete", CLI_PATH, c);
        ck_assert_int_eq(pa_test_run(cmd, &opts), 0);
        char *save = NULL;
        for (char *l = strtok_r(opts, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            char *w[32], *s2 = NULL;
            int n = 0;
            for (char *t = strtok_r(l, " ", &s2); t && n < 32; t = strtok_r(NULL, " ", &s2))
                w[n++] = t;
            for (int k = 3; k < n; k++) { /* each value, then --help: taken, exit 0 */
                char *out = NULL;
                snprintf(cmd, sizeof(cmd), "'%s' %s %s %s --help >/dev/null", CLI_PATH, c, w[0],
                         w[k]);
                int st = pa_test_run(cmd, &out);
                ck_assert_msg(st == 0, "powerapi %s %s %s: %d %s", c, w[0], w[k], st, out);
                free(out);
                tried++;
            }
            if (n > 3) { /* and one it does not offer is refused */
                char *out = NULL;
                snprintf(cmd, sizeof(cmd), "'%s' %s %s no-such-value --help 2>&1", CLI_PATH, c,
                         w[0]);
                int st = pa_test_run(cmd, &out);
                ck_assert_msg(st == 2 && strstr(out, "unknown"), "%s %s: %d %s", c, w[0], st, out);
                free(out);
            }
        }
        free(opts);
    }
    free(cmds);
    ck_assert_int_ge(tried, 15);
}
END_TEST

/* pids by number and by name: a child named pa-compl-NNN */
START_TEST(test_pids)
{
    char name[16];
    snprintf(name, sizeof(name), "pa-cmp-%d", (int)getpid() % 100000);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        prctl(PR_SET_NAME, name);
        pause();
        _exit(0);
    }
    char line[128], want[64];
    /* the name is set by the child: wait until /proc shows it */
    char commf[64];
    snprintf(commf, sizeof(commf), "/proc/%d/comm", (int)pid);
    for (int i = 0; i < 100; i++) {
        char *c = pa_test_slurp(commf);
        int ok = c && !strncmp(c, name, strlen(name));
        free(c);
        if (ok)
            break;
        usleep(10000);
    }
    snprintf(line, sizeof(line), "powerapi monitor --pid %s", name);
    snprintf(want, sizeof(want), "\n%d\n", (int)pid);
    expect(line, want);
    snprintf(line, sizeof(line), "powerapi monitor -p 1,%s", name);
    snprintf(want, sizeof(want), "\n1,%d\n", (int)pid);
    expect(line, want);
    snprintf(line, sizeof(line), "powerapi monitor --pid %d", (int)pid);
    char *got = complete(line);
    snprintf(want, sizeof(want), "\n%d\n", (int)pid);
    ck_assert_msg(strstr(got, want), "%s", got);
    free(got);
    snprintf(line, sizeof(line), "powerapi jalen %s", name);
    snprintf(want, sizeof(want), "\n%d\n", (int)pid);
    expect(line, want);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}
END_TEST

/* zsh's _powerapi, run with the completion system's builtins replaced by
 * functions that print what they are given (compadd, _describe, ...):
 * words and CURRENT set as zsh sets them; one candidate a line. */
static char *zsh_complete(const char *line)
{
    pa_test_write(dir, "z.zsh",
                  "compadd() { local -a a; while (( $# )); do case $1 in\n"
                  "  -a) shift; a+=(${(P)1});; -S) shift;; -*) ;; *) a+=($1);;\n"
                  "  esac; shift; done; print -l -- $a; }\n"
                  "_describe() { print -l -- ${(P)4}; }\n"
                  "_files() { print FILES; }\n"
                  "_message() { print MESSAGE; }\n"
                  "_normal() { print NORMAL $words; }\n"
                  "compset() { return 1; }\n"
                  "words=(\"${(@s: :)1}\"); words[1]='%s'; CURRENT=$#words\n"
                  "PREFIX=$words[CURRENT]\n"
                  "source '%s/../completion/_powerapi'\n",
                  CLI_PATH, PA_SOURCE_TESTS);
    char cmd[8400], *out = NULL;
    snprintf(cmd, sizeof(cmd), "zsh -f '%s/z.zsh' '%s' 2>&1", dir, line);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    char *r = malloc(strlen(out) + 2);
    ck_assert_ptr_nonnull(r);
    strcpy(r, "\n");
    strcat(r, out);
    free(out);
    return r;
}

START_TEST(test_zsh)
{
    if (system("command -v zsh >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_zsh: SKIPPED: zsh absent (scripts/deps.sh)\n");
        return;
    }
    ck_assert_int_eq(pa_test_run("zsh -n '" PA_SOURCE_TESTS "/../completion/_powerapi' 2>&1", NULL),
                     0);
    static const struct {
        const char *line, *want;
    } cases[] = {
        {"powerapi mo", "\nmonitor\nmodules\ndaemon\ntop\nserve\nprofile\njalen\n"},
        {"powerapi monitor --interval ", "\n100ms\n250ms\n500ms\n1s\n"},
        {"powerapi monitor --sensor ", "\nprocfs-cpu\n"},
        {"powerapi monitor --formula ", "\nauto\n"},
        {"powerapi monitor --hwdb ", "\nFILES\n"},
        {"powerapi jalen 1 ", "\nstart\ndump\nstop\nstatus\n"},
        {"powerapi monitor -- ls", "\nNORMAL ls\n"},
        {"powerapi serve --", "\n--listen\n-l\n--ring\n-r\n--window\n--top\n-t\n"},
    };
    char *got;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        got = zsh_complete(cases[i].line);
        ck_assert_msg(strstr(got, cases[i].want), "zsh '%s': got\n%s\nwant\n%s", cases[i].line, got,
                      cases[i].want);
        free(got);
    }
    /* sensors after --sensor, formulas after --formula, not the other */
    got = zsh_complete("powerapi monitor --sensor ");
    ck_assert_msg(strstr(got, "\nperf\n") && !strstr(got, "cpu-tdp"), "%s", got);
    free(got);
    got = zsh_complete("powerapi monitor --formula ");
    ck_assert_msg(strstr(got, "\ncpu-tdp\n") && !strstr(got, "procfs-cpu"), "%s", got);
    free(got);
    /* pids with their names: this test process */
    got = zsh_complete("powerapi monitor --pid ");
    char want[64];
    snprintf(want, sizeof(want), "\n%d:test_completion\n", (int)getpid());
    ck_assert_msg(strstr(got, want), "no %s in\n%s", want + 1, got);
    free(got);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("completion");
    TCase *tc = tcase_create("completion");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_commands_and_options);
    tcase_add_test(tc, test_durations);
    tcase_add_test(tc, test_modules_and_keys);
    tcase_add_test(tc, test_perf_events);
    tcase_add_test(tc, test_choices_are_the_commands_own);
    tcase_add_test(tc, test_pids);
    tcase_add_test(tc, test_zsh);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
