/*
 * manpage.c - the manual pages and the completion lists, made from the
 * option tables that --help prints (cli/options.c) and the commands'
 * table (cli/commands.c), so that the manual and --help cannot disagree.
 *
 * `powerapi --man` writes powerapi(1), `powerapi CMD --man` writes
 * powerapi-CMD(1); the build runs them into build/man (man/CMakeLists.txt)
 * and tests/test_man.c lints them with mandoc and checks every option of
 * --help is in them.
 */
#include "cli.h"

#include <stdbool.h>
#include <string.h>

/* the date of the pages: that of the version, so that a build makes the
 * same bytes (no build date) */
#define PA_MAN_DATE "2026-11-25"

/* Writes s as roff text: "%s" as the program's name, "%%" as '%', a
 * backslash as \e, a '-' that starts a word or follows one as \- (an
 * option, not a hyphen), and a line starting with '.' or '\'' guarded
 * with \& (not a request).  With fill, a '\n' is a space and a space
 * before a word that would pass column 78 ends the line (mandoc's style:
 * source lines of at most 80 bytes); without, lines stay as they are
 * (no-fill text). */
static void put_roff(FILE *f, const char *s, bool fill)
{
    int col = 0;
    char prev = ' ';
    for (; *s; s++) {
        char c = *s;
        if (c == '\n' && fill)
            c = ' ';
        if (c == ' ' && fill && col + 1 + (int)strcspn(s + 1, " \n") > 78)
            c = '\n';
        if (col == 0 && (c == '.' || c == '\''))
            col += fprintf(f, "\\&");
        if (c == '\n') {
            fputc(c, f);
            col = 0;
            prev = ' ';
            continue;
        }
        if (c == '%' && (s[1] == 's' || s[1] == '%')) {
            col += fprintf(f, "%s", s[1] == 's' ? cli_prog : "%");
            s++;
            prev = 'x';
            continue;
        }
        if (c == '\\')
            col += fprintf(f, "\\e");
        else if (c == '-' &&
                 (prev == ' ' || prev == '-' || prev == '(' || prev == '\'' || prev == '"'))
            col += fprintf(f, "\\-");
        else
            col += fputc(c, f) != EOF;
        prev = c;
    }
}

/* Text of the about or footer: a blank line starts a paragraph, indented
 * lines (examples, lists) are kept as they are, in no-fill mode. */
static void put_paragraphs(FILE *f, const char *text)
{
    bool nofill = false, any = false, pending = false;
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) : strlen(text);
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)len, text);
        for (size_t n = strlen(line); n && line[n - 1] == ' ';)
            line[--n] = '\0';
        text += len + (nl ? 1 : 0);
        bool blank = line[strspn(line, " ")] == '\0';
        bool indented = !blank && line[0] == ' ';
        if (nofill && !indented) {
            fputs(".fi\n", f);
            nofill = false;
        }
        if (blank) {
            pending = pending || any; /* .PP before the next text, if any */
            any = false;
            continue;
        }
        if (indented && !nofill) {
            fputs(".PP\n.nf\n", f);
            nofill = true;
        } else if (pending && !nofill) {
            fputs(".PP\n", f);
        }
        pending = false;
        put_roff(f, nofill ? line + strspn(line, " ") : line, !nofill);
        fputc('\n', f);
        any = true;
    }
    if (nofill)
        fputs(".fi\n", f);
}

static void put_option(FILE *f, const cli_opt *o)
{
    fputs(".TP\n", f);
    if (o->short_name)
        fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
    fputs("\\fB", f);
    put_roff(f, "--", false);
    put_roff(f, o->long_name, false);
    fputs("\\fR", f);
    if (o->argh) {
        fputs(" \\fI", f);
        put_roff(f, o->argh, false);
        fputs("\\fR", f);
    }
    fputc('\n', f);
    put_roff(f, o->help, true);
    fputc('\n', f);
    if (o->alias)
        fprintf(f, "(Also \\fB\\-\\-%s\\fR, its older spelling.)\n", o->alias);
}

static void put_heading(FILE *f, const char *name, const char *title)
{
    fputs(".TH \"", f);
    for (const char *p = name; *p; p++)
        fputc(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p, f);
    fprintf(f, "\" 1 \"%s\" \"powerapi %s\" \"%s\"\n", PA_MAN_DATE, PA_VERSION_STRING, title);
}

void cli_man(FILE *f, const cli_cmd *c)
{
    const cli_command *e = cli_command_find(c->name);
    char page[64];
    snprintf(page, sizeof(page), "%s-%s", cli_prog, c->name);
    put_heading(f, page, "User Commands");
    fprintf(f, ".SH NAME\n%s \\-\n", page);
    put_roff(f, e ? e->help : c->name, true);
    fputs("\n.SH SYNOPSIS\n.nf\n", f);
    const char *u = c->usage;
    while (*u) {
        const char *nl = strchr(u, '\n');
        size_t len = nl ? (size_t)(nl - u) : strlen(u);
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)len, u);
        const char *l = line + strspn(line, " ");
        if (*l) {
            put_roff(f, l, false);
            fputc('\n', f);
        }
        u += len + (nl ? 1 : 0);
    }
    fputs(".fi\n.SH DESCRIPTION\n", f);
    put_paragraphs(f, c->about);
    fputs(".SH OPTIONS\n", f);
    for (const cli_opt *o = c->opts; o->type != CLI_KIND_END; o++) {
        if (o->type == CLI_KIND_GROUP && !strcmp(o->help, "Options:")) {
            continue; /* the section's own name */
        } else if (o->type == CLI_KIND_GROUP) {
            size_t n = strlen(o->help);
            fprintf(f, ".SS %.*s\n", (int)(n && o->help[n - 1] == ':' ? n - 1 : n), o->help);
        } else if (o->type == CLI_KIND_CONTEXT) {
            fputs(".SS Context (the same options in every command that takes "
                  "them)\n",
                  f);
            for (const cli_opt *s = cli_ctx_options(); s->type; s++)
                if (s->mask & o->mask)
                    put_option(f, s);
        } else {
            put_option(f, o);
        }
    }
    fputs(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nshow this help\n", f);
    if (c->footer) {
        fputs(".SH NOTES\n", f);
        put_paragraphs(f, c->footer);
    }
    fprintf(f, ".SH SEE ALSO\n.BR %s (1)\n", cli_prog);
}

void cli_man_main(FILE *f)
{
    put_heading(f, cli_prog, "User Commands");
    fprintf(f,
            ".SH NAME\n%s \\- energy profiler for Linux:\nper-process, "
            "per-thread and per-cgroup power\n"
            ".SH SYNOPSIS\n.B %s\n.I COMMAND\n[\\fIOPTIONS\\fR]\n"
            ".SH DESCRIPTION\n"
            "Measures (RAPL) or models the power of a Linux machine\n"
            "and attributes it to its processes, threads and cgroups.\n"
            "Each command has its own page, \\fB%s\\-\\fICOMMAND\\fR(1),\n"
            "made from the same table as \\fB%s \\fICOMMAND\\fB \\-\\-help\\fR.\n"
            ".SH COMMANDS\n",
            cli_prog, cli_prog, cli_prog, cli_prog);
    for (const cli_command *c = cli_commands; c->name; c++) {
        fprintf(f, ".TP\n.BR %s\\-%s (1)\n", cli_prog, c->name);
        put_roff(f, c->help, true);
        fputc('\n', f);
    }
    fputs(".SH OPTIONS\n"
          ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nshow the commands\n"
          ".TP\n\\fB\\-V\\fR, \\fB\\-\\-version\\fR\nshow the version\n"
          ".SH ENVIRONMENT\n"
          ".TP\n.B POWERAPI_HWDB\nthe hardware database (CPU TDPs, NIC "
          "powers) instead of the installed one\n"
          ".TP\n.B POWERAPI_CALIBRATION\na \\fBpowerapi calibrate\\fR file "
          "for the cpu\\-curve formula\n"
          ".SH EXIT STATUS\n"
          "0 on success, 1 on a runtime failure, 2 on a usage error;\n"
          "\\fBmonitor \\-\\- \\fICOMMAND\\fR exits with the command's own "
          "status.\n"
          ".SH SEE ALSO\n",
          f);
    for (const cli_command *c = cli_commands; c->name; c++)
        fprintf(f, ".BR %s\\-%s (1),\n", cli_prog, c->name);
    fputs(".BR libpowerapi (3),\n.BR jalen (7)\n", f);
}

/* "--LONG -S ARGH [CHOICE...]": the choices are what the option's own
 * check accepts (cli_opt.choices), for the shells' completion. */
static void complete_line(FILE *f, const cli_opt *o)
{
    const char *a = o->argh ? o->argh : "-";
    for (int alias = 0; alias < 2; alias++) {
        const char *name = alias ? o->alias : o->long_name;
        if (!name)
            continue;
        if (o->short_name && !alias)
            fprintf(f, "--%s -%c %s", name, o->short_name, a);
        else
            fprintf(f, "--%s - %s", name, a);
        for (int i = 0; o->choices && o->choices[i]; i++)
            fprintf(f, " %s", o->choices[i]);
        fputc('\n', f);
    }
}

void cli_complete(FILE *f, const cli_cmd *c)
{
    for (const cli_opt *o = c->opts; o->type != CLI_KIND_END; o++) {
        if (o->type == CLI_KIND_CONTEXT) {
            for (const cli_opt *s = cli_ctx_options(); s->type; s++)
                if (s->mask & o->mask)
                    complete_line(f, s);
        } else if (o->type != CLI_KIND_GROUP) {
            complete_line(f, o);
        }
    }
    fputs("--help -h -\n", f);
}
