/*
 * main.c - the powerapi command: global options and subcommand dispatch.
 *
 * A subcommand is one entry of the table in commands.c; it receives argv
 * from its own name on and returns the exit status.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: %s COMMAND [OPTIONS]\n"
            "       %s monitor [OPTIONS] [-- COMMAND [ARGS...]]\n"
            "\n"
            "Energy profiler for Linux: per-process, per-thread and "
            "per-cgroup power.\n"
            "\nCommands:\n",
            cli_prog, cli_prog);
    for (const cli_command *c = cli_commands; c->name; c++)
        fprintf(f, "  %-10s %s\n", c->name, c->help);
    fprintf(f,
            "\nOptions:\n"
            "  -h, --help     show this help\n"
            "  -V, --version  show the version\n"
            "\n'%s COMMAND --help' describes a command's options.\n",
            cli_prog);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        if (argc > 2 && strcmp(cmd, "help") == 0) {
            /* "powerapi help monitor" = "powerapi monitor --help" */
            const cli_command *c = cli_command_find(argv[2]);
            if (c) {
                char *hargv[] = {argv[2], "--help", NULL};
                return c->run(2, hargv);
            }
            return cli_usage_error(NULL, "unknown command '%s'", argv[2]);
        }
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("%s %s (libpowerapi %s)\n", cli_prog, PA_VERSION_STRING, pa_version());
        return CLI_EXIT_OK;
    }
    /* hidden: the manual page powerapi(1), the commands for completion */
    if (!strcmp(cmd, "--man")) {
        cli_man_main(stdout);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    if (!strcmp(cmd, "--complete")) {
        for (const cli_command *c = cli_commands; c->name; c++)
            printf("%s\n", c->name);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    const cli_command *c = cli_command_find(cmd);
    if (c)
        return c->run(argc - 1, argv + 1);
    if (cmd[0] == '-')
        return cli_usage_error(NULL, "unknown option '%s'", cmd);
    return cli_usage_error(NULL, "unknown command '%s'", cmd);
}
