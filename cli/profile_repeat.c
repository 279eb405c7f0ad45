/*
 * profile_repeat.c - `powerapi profile --repeat N -- COMMAND` (issue 44),
 * and `powerapi jalen --repeat N -- java ...` (each run under the agent,
 * out=DIR/run-K, instead of a profile of its own):
 * the command profiled N times, each run a whole `powerapi profile` of
 * its own (this program again, into DIR/run-K), after --warmup runs of
 * the command unprofiled; then profcore's figures of the runs (mean,
 * spread, 95 % interval per function and for the total, the total's
 * coefficient of variation) in DIR/repeat.csv and DIR/summary.json.
 */
#include "cli.h"
#include "pdiff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CMD (r->cmd_name ? r->cmd_name : "profile")

/* Runs argv (execv of path, or execvp of argv[0] when path is NULL) and
 * waits: its exit status, 128 + its signal, or CLI_EXIT_FAIL. */
static int run_wait(const cli_repeat *r, const char *path, char **argv)
{
    pid_t pid = fork();
    if (pid < 0) {
        cli_error(CMD, "fork: %s", strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (pid == 0) {
        if (path)
            execv(path, argv);
        else
            execvp(argv[0], argv);
        fprintf(stderr, "%s %s: %s: %s\n", cli_prog, CMD, path ? path : argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return CLI_EXIT_FAIL;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* this program again: "profile", the options as given, then one run's */
static int one_run(const cli_repeat *r, unsigned long k)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/run-%lu", r->out, k);
    size_t ncmd = 0;
    while (r->cmd[ncmd])
        ncmd++;
    char **v = calloc((size_t)r->nopts + ncmd + 10, sizeof(*v));
    if (!v)
        return CLI_EXIT_FAIL;
    size_t n = 0;
    v[n++] = (char *)cli_prog;
    v[n++] = (char *)"profile";
    for (int i = 0; i < r->nopts; i++)
        v[n++] = r->opts[i];
    /* the last of an option given twice wins: one run, quiet, its folder */
    char *tail[] = {"--repeat", "1", "--quiet", "--output", dir, "--"};
    for (size_t i = 0; i < sizeof(tail) / sizeof(tail[0]); i++)
        v[n++] = tail[i];
    for (size_t i = 0; i < ncmd; i++)
        v[n++] = r->cmd[i];
    int st = run_wait(r, "/proc/self/exe", v);
    free(v);
    return st;
}

/* java -agentpath:AGENT=out=DIR/run-K[,OPTS][,quiet] ARGS... */
static int one_agent_run(const cli_repeat *r, unsigned long k)
{
    size_t ncmd = 0;
    while (r->cmd[ncmd])
        ncmd++;
    char **v = calloc(ncmd + 2, sizeof(*v));
    char *ap = NULL;
    if (!v || asprintf(&ap, "-agentpath:%s=out=%s/run-%lu%s%s%s", r->agent, r->out, k,
                       r->agent_opts ? "," : "", r->agent_opts ? r->agent_opts : "",
                       r->quiet ? ",quiet" : "") < 0) {
        free(v);
        return CLI_EXIT_FAIL;
    }
    v[0] = r->cmd[0];
    v[1] = ap;
    for (size_t i = 1; i < ncmd; i++)
        v[i + 1] = r->cmd[i];
    int st = run_wait(r, NULL, v);
    free(ap);
    free(v);
    return st;
}

int cli_profile_repeat(const cli_repeat *r)
{
    for (unsigned long w = 0; w < r->warmup; w++) {
        int st = run_wait(r, NULL, r->cmd);
        if (st) {
            cli_error(CMD, "warm-up run %lu of %s: exit status %d", w + 1, r->cmd[0], st);
            return st;
        }
    }
    for (unsigned long k = 1; k <= r->repeat; k++) {
        int st = r->agent ? one_agent_run(r, k) : one_run(r, k);
        if (st) {
            cli_error(CMD, "run %lu of %lu: exit status %d (the runs before are in %s)", k,
                      r->repeat, st, r->out);
            return st;
        }
    }
    char err[1024];
    pc_side *s;
    int rc = pc_side_load(r->out, &s, err, sizeof(err));
    if (rc < 0) {
        cli_error(CMD, "%s", err);
        return CLI_EXIT_FAIL;
    }
    double mean, half, cv;
    rc = pc_side_write_repeat(s, r->out, r->warmup, &mean, &half, &cv);
    pc_side_free(s);
    if (rc < 0) {
        cli_error(CMD, "writing %s: %s", r->out, strerror(-rc));
        return CLI_EXIT_FAIL;
    }
    if (!r->quiet)
        fprintf(stderr,
                "%s %s: %lu runs: %.3f J +- %.3f (95 %% interval), coefficient of variation "
                "%.1f %%%s; per function in %s/repeat.csv, each run in %s/run-N\n",
                cli_prog, CMD, r->repeat, mean, half, 100 * cv,
                cv > 0.05 ? " (a noisy machine: a difference below a few times this is noise)" : "",
                r->out, r->out);
    return CLI_EXIT_OK;
}
