/*
 * main.c - the powerapi command: global options and subcommand dispatch.
 *
 * A subcommand is one entry of the table below; it receives argv from its
 * own name on and returns the exit status.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

typedef struct pa_cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help; /* one line */
} pa_cli_command;

/* Subcommands, in the order `powerapi --help` lists them. */
static const pa_cli_command commands[] = {
    {"monitor", pa_cli_monitor,
     "per-process power (W) and energy (J), or the energy of one command"},
    {"modules", pa_cli_modules,
     "sensors and formulas: which work on this machine, and why not"},
    {"daemon", pa_cli_daemon,
     "sample the whole machine and publish windows in a shared-memory ring"},
    {"top", pa_cli_top, "live terminal view of processes and cgroups by power"},
    {"serve", pa_cli_serve, "Prometheus exporter: /metrics over HTTP"},
    {"profile", pa_cli_profile,
     "per-function energy of any process (perf sampling; flame graph, pprof)"},
    {"jalen", pa_cli_jalen,
     "jalen in a running JVM: start, dump, stop, status (per-method energy)"},
    {"events", pa_cli_events,
     "perf events this machine can count (names for the perf sensor)"},
    {"calibrate", pa_cli_calibrate,
     "measure this machine's load-power curve with RAPL for cpu-curve"},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: %s COMMAND [OPTIONS]\n"
            "       %s monitor [OPTIONS] [-- COMMAND [ARGS...]]\n"
            "\n"
            "Energy profiler for Linux: per-process, per-thread and "
            "per-cgroup power.\n"
            "\nCommands:\n",
            pa_cli_prog, pa_cli_prog);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f,
            "\nOptions:\n"
            "  -h, --help     show this help\n"
            "  -V, --version  show the version\n"
            "\n'%s COMMAND --help' describes a command's options.\n",
            pa_cli_prog);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return PA_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        if (argc > 2 && strcmp(cmd, "help") == 0) {
            /* "powerapi help monitor" = "powerapi monitor --help" */
            for (size_t i = 0; i < NCOMMANDS; i++)
                if (!strcmp(argv[2], commands[i].name)) {
                    char *hargv[] = {argv[2], "--help", NULL};
                    return commands[i].run(2, hargv);
                }
            return pa_cli_usage_error(NULL, "unknown command '%s'", argv[2]);
        }
        usage(stdout);
        return PA_EXIT_OK;
    }
    if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") ||
        !strcmp(cmd, "version")) {
        printf("%s %s (libpowerapi %s)\n", pa_cli_prog, PA_VERSION_STRING,
               pa_version());
        return PA_EXIT_OK;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    if (cmd[0] == '-')
        return pa_cli_usage_error(NULL, "unknown option '%s'", cmd);
    return pa_cli_usage_error(NULL, "unknown command '%s'", cmd);
}
