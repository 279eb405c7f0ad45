/*
 * events.c - `powerapi events`: the perf events this machine can count.
 *
 * Every event libpfm4 knows for the PMUs present here (and the generic
 * kernel events the perf sensor accepts) is encoded and opened once on
 * this process; those that open are listed, one line each with a short
 * description, in the form the perf sensor's events= option takes.
 * --all also lists the ones that do not open, with the reason.
 */
#include "cli.h"
#include "powerapi.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct ev_list {
    int all;
    int open, closed;
    int hw_open;     /* a hardware (non perf::) event opened */
    int first_errno; /* reason of the first one that did not open */
} ev_list;

static void one_line(char *out, size_t len, const char *desc)
{
    /* libpfm4 descriptions can span sentences: keep the first line */
    snprintf(out, len, "%s", desc);
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = '\0';
}

static int on_event(const char *name, const char *desc, int status, void *user)
{
    ev_list *l = user;
    char d[160];
    one_line(d, sizeof(d), desc);
    if (status == 0) {
        l->open++;
        if (strncmp(name, "perf::", 6) != 0)
            l->hw_open = 1;
        printf("%-40s %s\n", name, d);
    } else {
        l->closed++;
        if (!l->first_errno)
            l->first_errno = -status;
        if (l->all)
            printf("%-40s %s [does not open here: %s]\n", name, d, strerror(-status));
    }
    return 0;
}

int cli_events(int argc, char **argv)
{
    ev_list l;
    memset(&l, 0, sizeof(l));
    bool all = false;
    const cli_opt opts[] = {
        CLI_OPT_GROUP("Options:"),
        CLI_OPT_FLAG('a', "all", &all, "also list the events that do not open here, and why"),
        CLI_OPT_END,
    };
    const cli_cmd c = {.name = "events",
                       .usage = "%s events [--all]\n",
                       .about = "\nLists the perf events this machine can count (names for "
                                "the\nperf sensor: monitor --sensor perf:events=A+B+C).\n",
                       .opts = opts};
    int first;
    int st = cli_parse(&c, argc, argv, &first);
    if (st)
        return st < 0 ? CLI_EXIT_OK : st;
    l.all = all;
    int n = pa_perf_events_list(on_event, &l);
    if (n < 0) {
        cli_error("events", "%s", cli_errmsg(n));
        return CLI_EXIT_FAIL;
    }
    fflush(stdout);
    if (!l.hw_open)
        fprintf(stderr,
                "%s events: no hardware event opens here (%s): no hardware "
                "PMU, as in a VM without a virtual PMU; software events "
                "(perf::TASK-CLOCK) work%s\n",
                cli_prog, strerror(l.first_errno ? l.first_errno : ENOENT),
                l.all ? "" : "; --all lists the others");
    if (l.open == 0) {
        cli_error("events", "no event opens here (perf_event_open "
                            "refused: see kernel.perf_event_paranoid)");
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}
