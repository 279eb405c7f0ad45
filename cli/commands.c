/*
 * commands.c - the table of subcommands: main.c dispatches through it,
 * `powerapi --help` lists it, and the manual pages and the shell
 * completion are made from it (cli_man, cli_complete).
 */
#include "cli.h"

#include <string.h>

/* In the order `powerapi --help` lists them. */
const cli_command cli_commands[] = {
    {"monitor", cli_monitor, "per-process power (W) and energy (J), or the energy of one command"},
    {"modules", cli_modules, "sensors and formulas: which work on this machine, and why not"},
    {"daemon", cli_daemon, "sample the whole machine and publish windows in a shared-memory ring"},
    {"top", cli_top, "live terminal view of processes and cgroups by power"},
    {"serve", cli_serve, "Prometheus exporter: /metrics over HTTP"},
    {"profile", cli_profile,
     "per-function energy of any process (perf sampling; flame graph, pprof)"},
    {"jalen", cli_jalen, "jalen in a running JVM: start, dump, stop, status (per-method energy)"},
    {"diff", cli_diff, "compare two profiles: per-function change, significance, CI check"},
    {"events", cli_events, "perf events this machine can count (names for the perf sensor)"},
    {"calibrate", cli_calibrate, "measure this machine's load-power curve with RAPL for cpu-curve"},
    {NULL, NULL, NULL},
};

const cli_command *cli_command_find(const char *name)
{
    for (const cli_command *c = cli_commands; c->name; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}
