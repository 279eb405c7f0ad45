/*
 * commands.c - the table of subcommands: main.c dispatches through it,
 * `powerapi --help` lists it, and the manual pages and the shell
 * completion are made from it (pa_cli_man, pa_cli_complete).
 */
#include "cli.h"

#include <string.h>

/* In the order `powerapi --help` lists them. */
const pa_cli_command pa_cli_commands[] = {
    {"monitor", pa_cli_monitor,
     "per-process power (W) and energy (J), or the energy of one command"},
    {"modules", pa_cli_modules, "sensors and formulas: which work on this machine, and why not"},
    {"daemon", pa_cli_daemon,
     "sample the whole machine and publish windows in a shared-memory ring"},
    {"top", pa_cli_top, "live terminal view of processes and cgroups by power"},
    {"serve", pa_cli_serve, "Prometheus exporter: /metrics over HTTP"},
    {"profile", pa_cli_profile,
     "per-function energy of any process (perf sampling; flame graph, pprof)"},
    {"jalen", pa_cli_jalen,
     "jalen in a running JVM: start, dump, stop, status (per-method energy)"},
    {"diff", pa_cli_diff, "compare two profiles: per-function change, significance, CI check"},
    {"events", pa_cli_events, "perf events this machine can count (names for the perf sensor)"},
    {"calibrate", pa_cli_calibrate,
     "measure this machine's load-power curve with RAPL for cpu-curve"},
    {NULL, NULL, NULL},
};

const pa_cli_command *pa_cli_command_find(const char *name)
{
    for (const pa_cli_command *c = pa_cli_commands; c->name; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}
