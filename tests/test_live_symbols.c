/*
 * test_live_symbols.c - `powerapi profile` on one of Debian's own stripped
 * programs (issue 43 item 2): when most of the energy sits on unnamed
 * frames of sort, the closing lines and summary.json name the package of
 * its debug symbols (coreutils-dbgsym, from the file's owner) and
 * DEBUGINFOD_URLS; a debuginfod server that accepts a connection and never
 * answers (one on loopback, made here) does not stall the run: it is left
 * out after a bounded wait, said once.
 */
#include "testutil.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CLI_BIN PA_BINARY_DIR "/cli/powerapi"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

START_TEST(stripped_program_says_what_names_it)
{
    char *out = NULL;
    if (pa_test_run(CLI_BIN " profile --pid 1 --duration 100ms -o /dev/null 2>&1", &out) != 0 &&
        out && strstr(out, "perf_event_paranoid")) {
        fprintf(stderr, "stripped_program_says_what_names_it: SKIPPED: %s", out);
        free(out);
        return;
    }
    free(out);
    /* a server that never answers: listening, never accepting */
    int srv = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    ck_assert_int_eq(bind(srv, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(srv, 16), 0);
    ck_assert_int_eq(getsockname(srv, (struct sockaddr *)&a, &al), 0);
    char *dir = pa_test_tmpdir(), cmd[8192];
    snprintf(cmd, sizeof(cmd), "seq 1500000 | shuf --random-source=/dev/zero > '%s/big.txt'", dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof(cmd),
             "DEBUGINFOD_URLS=http://127.0.0.1:%d/ " CLI_BIN
             " profile -o '%s/p' -- sort -n '%s/big.txt' -o /dev/null 2>&1",
             (int)ntohs(a.sin_port), dir, dir);
    double t0 = now_s();
    int st = pa_test_run(cmd, &out);
    double took = now_s() - t0;
    close(srv);
    printf("profile of sort with a silent debuginfod server: %.1f s\n%s", took, out);
    ck_assert_msg(st == 0, "profile: %d\n%s", st, out);
    char said[128];
    snprintf(said, sizeof(said), "debuginfod server http://127.0.0.1:%d/ not used this run",
             (int)ntohs(a.sin_port));
    ck_assert_msg(count(out, said) == 1 && strstr(out, "accepted a connection but sent nothing"),
                  "%s", out);
    ck_assert_msg(took < 30, "the run took %.1f s", took);
    char path[4200];
    snprintf(path, sizeof(path), "%s/p/summary.json", dir);
    char *sum = pa_test_slurp(path);
    ck_assert_ptr_nonnull(sum);
    bool dpkg = system("dpkg-query -S /usr/bin/sort >/dev/null 2>&1") == 0;
    const char *want = dpkg ? "install coreutils-dbgsym" : "install its debug symbols";
    ck_assert_msg(strstr(out, want) && strstr(out, "DEBUGINFOD_URLS"), "%s", out);
    ck_assert_msg(strstr(sum, "\"symbols_note\": \"") && strstr(sum, want), "%s", sum);
    free(sum);
    free(out);
    pa_test_rmtree(dir);
}
END_TEST

/* An idle target: said idle, no advice to sample more often (which
 * cannot help: samples come with CPU time). */
START_TEST(idle_pid_is_said_idle)
{
    pid_t c = fork();
    if (c == 0) {
        sleep(30);
        _exit(0);
    }
    char cmd[512], *out = NULL;
    snprintf(cmd, sizeof(cmd), CLI_BIN " profile --pid %d --duration 1s -o /tmp/pa-idle-%d 2>&1",
             (int)c, (int)getpid());
    int st = pa_test_run(cmd, &out);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    snprintf(cmd, sizeof(cmd), "rm -rf /tmp/pa-idle-%d", (int)getpid());
    ck_assert_int_eq(system(cmd), 0);
    if (out && strstr(out, "perf_event_paranoid")) {
        fprintf(stderr, "idle_pid_is_said_idle: SKIPPED: %s", out);
        free(out);
        return;
    }
    ck_assert_msg(st == 0 && strstr(out, "the targets were idle") && !strstr(out, "more often"),
                  "%d %s", st, out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("live_symbols");
    TCase *tc = tcase_create("live");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, stripped_program_says_what_names_it);
    tcase_add_test(tc, idle_pid_is_said_idle);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
