/*
 * diff.c - `powerapi diff A B`: two profiles compared (issue 44), for a
 * developer who changed the code and for a CI job that must fail when a
 * change burns more.  A and B are result folders of `powerapi profile` or
 * jalen (repeated ones with run-1/ ... run-N/) or pprof files; the
 * comparison and its files are profcore's (pdiff.h), this file is the
 * options, the words and the exit status.
 */
#include "cli.h"
#include "pdiff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CMD "diff"
#define MAX_FUNCS 32

typedef struct diff_opts {
    const char *out;
    double fail_above; /* percent, or joules when fail_joules */
    int fail_set, fail_joules;
    const char *funcs[MAX_FUNCS];
    size_t nfuncs;
    unsigned long top;
    double min_pct; /* --min-change */
    bool quiet;
    const char *summarize; /* --summarize DIR */
} diff_opts;

/* "10" or "10%": percent; "0.5J": joules */
static int set_fail_above(void *v, const char *cmd, const char *arg)
{
    diff_opts *o = v;
    char *end;
    errno = 0;
    double x = strtod(arg, &end);
    int joules = *end == 'J' || *end == 'j';
    if (*end == '%' || joules)
        end++;
    if (errno || end == arg || *end || !(x >= 0) || !isfinite(x))
        return cli_usage_error(cmd,
                               "--fail-above: '%s' is not a percentage (10, 10%%) nor "
                               "joules (0.5J)",
                               arg);
    o->fail_above = x;
    o->fail_joules = joules;
    o->fail_set = 1;
    return 0;
}

static int set_min_change(void *v, const char *cmd, const char *arg)
{
    char *end;
    double x = strtod(arg, &end);
    if (*end == '%')
        end++;
    if (end == arg || *end || !(x >= 0 && x <= 1000))
        return cli_usage_error(cmd, "--min-change: '%s' is not a percentage (0 to 1000)", arg);
    ((diff_opts *)v)->min_pct = x;
    return 0;
}

static int set_function(void *v, const char *cmd, const char *arg)
{
    diff_opts *o = v;
    if (o->nfuncs == MAX_FUNCS)
        return cli_usage_error(cmd, "--function: at most %d", MAX_FUNCS);
    o->funcs[o->nfuncs++] = arg;
    return 0;
}

/* Whether c is a regression beyond the threshold: above it and, where
 * there are repeats, significant.  The reason into why. */
static int regressed(const diff_opts *o, const pc_change *c, const char *what, const char *unit,
                     char *why, size_t len)
{
    double amount = o->fail_joules ? c->change : c->pct;
    if (c->change <= 0 || amount <= o->fail_above || c->significant == 0)
        return 0;
    snprintf(why, len, "%s rose by %+.3f %s (%+.1f %%), above --fail-above %g%s%s", what, c->change,
             unit, c->pct, o->fail_above, o->fail_joules ? " J" : " %",
             c->significant < 0 ? " (single runs: not tested for significance)" : ", significant");
    return 1;
}

static int check_fail(const diff_opts *o, const pc_diff *d, const char *unit)
{
    char why[512];
    int bad = 0;
    if (!o->nfuncs && regressed(o, pc_diff_total(d), "the total", unit, why, sizeof(why))) {
        cli_error(CMD, "%s", why);
        bad = 1;
    }
    for (size_t i = 0; i < o->nfuncs; i++) {
        const pc_diff_row *r = pc_diff_find(d, o->funcs[i]);
        if (!r) {
            cli_error(CMD, "--function %s: in neither profile", o->funcs[i]);
            return CLI_EXIT_USAGE;
        }
        char what[300];
        snprintf(what, sizeof(what), "%s (self)", r->name);
        if (regressed(o, &r->self, what, unit, why, sizeof(why))) {
            cli_error(CMD, "%s", why);
            bad = 1;
        }
    }
    return bad ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* Options may come before and after A and B (`diff A B --fail-above 5`):
 * getopt stops at the first operand, so what follows is parsed again. */
static int parse(const cli_cmd *c, int argc, char **argv, const char **ops, int *nops)
{
    char **rest = argv;
    int n = argc;
    *nops = 0;
    for (;;) {
        int first;
        int st = cli_parse(c, n, rest, &first);
        if (st)
            return st;
        while (first < n && (rest[first][0] != '-' || !strcmp(rest[first], "-"))) {
            if (*nops == 2)
                return cli_extra_arg(CMD, rest[first]);
            ops[(*nops)++] = rest[first++];
        }
        if (first >= n)
            return 0;
        if (!strcmp(rest[first], "--")) {
            while (++first < n && *nops < 2)
                ops[(*nops)++] = rest[first];
            return first < n ? cli_extra_arg(CMD, rest[first]) : 0;
        }
        /* rest[first - 1] becomes the "argv[0]" of the next round */
        rest += first - 1;
        n -= first - 1;
    }
}

static int load_both(const char *const *ops, pc_side **a, pc_side **b)
{
    char err[1024];
    *a = *b = NULL;
    if (pc_side_load(ops[0], a, err, sizeof(err)) < 0 ||
        pc_side_load(ops[1], b, err, sizeof(err)) < 0) {
        cli_error(CMD, "%s", err);
        pc_side_free(*a);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(pc_side_tool(*a), pc_side_tool(*b))) {
        cli_error(CMD, "%s is a %s result and %s a %s one: compare results of the same tool",
                  ops[0], pc_side_tool(*a), ops[1], pc_side_tool(*b));
        pc_side_free(*a);
        pc_side_free(*b);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

static int run_diff(const diff_opts *o, const char *const *ops)
{
    pc_side *a, *b;
    int st = load_both(ops, &a, &b);
    if (st)
        return st;
    char err[512];
    pc_diff *d = NULL;
    int rc = pc_diff_new(a, b, o->min_pct, &d, err, sizeof(err));
    const char *unit = rc == 0 ? pc_side_unit(a) : "J";
    pc_side_free(a);
    pc_side_free(b);
    if (rc < 0) {
        cli_error(CMD, "%s", err);
        return rc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    rc = pc_diff_write(d, o->out, ops[0], ops[1]);
    if (rc < 0) {
        cli_error(CMD, "writing %s: %s", o->out, strerror(-rc));
        pc_diff_free(d);
        return CLI_EXIT_FAIL;
    }
    if (!o->quiet) {
        pc_diff_print(d, stdout, o->top);
        printf("\nwritten: %s/diff.csv, diff.json, diff.md, flamegraph.html\n", o->out);
    }
    fflush(stdout);
    st = o->fail_set ? check_fail(o, d, unit) : CLI_EXIT_OK;
    pc_diff_free(d);
    return st;
}

/* --summarize DIR: a folder of run-1/ ... run-N/ made by hand or by a
 * script gets what `profile
 * --repeat` writes, repeat.csv and summary.json */
static int summarize(const diff_opts *o)
{
    char err[1024];
    pc_side *s;
    if (pc_side_load(o->summarize, &s, err, sizeof(err)) < 0) {
        cli_error(CMD, "%s", err);
        return CLI_EXIT_USAGE;
    }
    double mean, half, cv;
    size_t runs = pc_side_runs(s);
    int rc = runs < 2 ? -EINVAL : pc_side_write_repeat(s, o->summarize, 0, &mean, &half, &cv);
    pc_side_free(s);
    if (rc == -EINVAL) {
        cli_error(CMD, "--summarize %s: no run-1/ ... run-N/ folders (two at least)", o->summarize);
        return CLI_EXIT_USAGE;
    }
    if (rc < 0) {
        cli_error(CMD, "writing %s: %s", o->summarize, strerror(-rc));
        return CLI_EXIT_FAIL;
    }
    if (!o->quiet)
        printf("%zu runs: %.3f J +- %.3f (95 %% interval), coefficient of variation %.1f %%; "
               "per function in %s/repeat.csv\n",
               runs, mean, half, 100 * cv, o->summarize);
    return CLI_EXIT_OK;
}

int cli_diff(int argc, char **argv)
{
    diff_opts o = {.out = "powerapi-diff", .top = 20, .min_pct = 5};
    const cli_opt opts[] = {
        CLI_OPT_GROUP("Output:"),
        CLI_OPT_STRING('o', "output", &o.out, "DIR",
                       "folder of diff.csv, diff.json, diff.md and the\n"
                       "differential flamegraph.html (default powerapi-diff)"),
        CLI_OPT_UINT('n', "top", &o.top, "N", "functions printed (default 20)", 1, 1000000),
        CLI_OPT_FLAG('q', "quiet", &o.quiet, "print nothing but errors"),
        CLI_OPT_STRING(0, "summarize", &o.summarize, "DIR",
                       "instead of comparing: DIR's run-1/ ... run-N/ (a\n"
                       "repeated jalen or profile) summed up in\n"
                       "DIR/repeat.csv and DIR/summary.json"),
        CLI_OPT_GROUP("Comparison:"),
        CLI_OPT_CALLBACK(0, "min-change", &o, "PERCENT",
                         "a function's change under PERCENT of its energy\n"
                         "is noise, however sure the test (default 5)",
                         set_min_change),
        CLI_OPT_GROUP("Checks (for CI):"),
        CLI_OPT_CALLBACK(0, "fail-above", &o, "PERCENT|XJ",
                         "exit 1 when the total (or each --function) rose by\n"
                         "more than PERCENT (or X joules: 0.5J), significantly\n"
                         "where both sides have repeats",
                         set_fail_above),
        CLI_OPT_CALLBACK(0, "function", &o, "NAME",
                         "check NAME's self energy instead of the total\n"
                         "(repeatable)",
                         set_function),
        CLI_OPT_END,
    };
    const cli_cmd c = {
        .name = CMD,
        .usage = "%s diff [OPTIONS] A B\n       %s diff --summarize DIR\n",
        .about = "\nCompares two profiles: result folders of `powerapi profile` or jalen\n"
                 "(repeated ones, from --repeat N, get Welch's t-test) or pprof files\n"
                 "with an energy or cpu sample type.  Prints the total A -> B and each\n"
                 "function's self and inclusive change, largest first, matched by name\n"
                 "across builds; writes diff.csv, diff.json, diff.md and a differential\n"
                 "flame graph.\n",
        .footer = "\nExit status: 0; 1 when --fail-above is exceeded; 2 on bad input (one\n"
                  "line: a missing file, an empty profile, results of different tools).\n",
        .opts = opts,
        .operands = 1};
    const char *ops[2];
    int nops;
    int st = parse(&c, argc, argv, ops, &nops);
    if (st)
        return st < 0 ? CLI_EXIT_OK : st;
    if (o.summarize && nops == 0)
        return summarize(&o);
    if (nops != 2)
        return cli_usage_error(CMD, "needs two profiles, A and B (%d given)", nops);
    return run_diff(&o, ops);
}
