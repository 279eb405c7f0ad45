/*
 * top.c - `powerapi top`: a live terminal view (ncurses) of the processes
 * (or cgroups) sorted by power, with the system line.
 *
 * Windows come from our own context (a tick each interval) or from a
 * daemon's ring, every window since the last refresh averaged into one
 * (pa_ring_aggregate).  The screen is redrawn after each refresh and
 * after each key; getch() with a timeout is the only wait.
 */
#include "cli.h"
#include "cpupct.h"
#include "groups.h"
#include "vmgroups.h"

#include <ctype.h>
#include <curses.h>
#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CMD "top"

typedef enum sort_key {
    SORT_POWER = 0,
    SORT_CPU,
    SORT_NIC,
    SORT_ENERGY,
    SORT_PID,
    SORT_N
} sort_key;

static const char *const sort_names[SORT_N] = {"power", "cpu", "nic", "energy", "pid"};

typedef struct top {
    const char *ring;
    pa_ring_reader *r;
    uint64_t seq;
    pa_ctx *ctx;
    pa_report *own; /* own context's last report (pa_report_get) */
    const pa_report *rep;
    uint64_t interval_ns;
    sort_key sort;
    bool cgroups;
    rp_group group; /* g: processes, then containers, pods, units */
    char filter[64];
    char status[512]; /* error or notice on the status line */
    double energy_j;  /* system energy over the windows top saw */
    double seen_s;    /* time those windows cover */
    uint64_t last_tick;
    const pa_target_info **rows;
    size_t rows_cap;
    const char *procfs;      /* where the rows' thread counts are read */
    bool capped;             /* a row's CPU% was capped (drawn with '*') */
    double carbon_g_per_kwh; /* --carbon-intensity; 0: no grams */
    rp_vmgroups *vmg;        /* the VM view of own sampling, made when first shown */
    const char *rootfs;      /* where its managers' files are */
} top;

/* Windows shorter than this many ticks of procfs-cpu are refused: a
 * process's CPU time moves in ticks, so a window reads up to a tick more
 * or less than was used (above 10 % under 10 ticks). */
#define TOP_MIN_TICKS 10

static const char top_about[] =
    "\n"
    "A live view of the processes sorted by power (CPU and NIC watts, energy "
    "since\nfirst seen), the whole machine's power (measured or modelled, "
    "with the\nconstants assumed) and a cgroup view.  --interval is the "
    "refresh interval.\n";

static const char top_footer[] =
    "Keys: q quit, s next sort key, c processes/cgroups, g processes/containers/pods/"
    "units, v VMs (own sampling), / filter (Enter "
    "applies,\nEsc cancels, empty clears), + and - double or halve the "
    "interval.\n";

/* ---- data ---- */

static void set_status(top *t, const char *msg)
{
    snprintf(t->status, sizeof(t->status), "%s", msg);
}

/* In the VM view, lists the VMs again and watches their threads (their
 * vCPUs apart from the next window on). */
static void watch_vms(top *t)
{
    int err = 0;
    if (t->group != RP_GROUP_VM || t->ring)
        return;
    if (!t->vmg)
        err = rp_vmgroups_new(&t->vmg, t->procfs, t->rootfs);
    if (err < 0 || (err = rp_vmgroups_scan(t->vmg, t->ctx)) < 0)
        set_status(t, cli_errmsg(err));
}

static void toggle_vms(top *t)
{
    t->group = t->group == RP_GROUP_VM ? RP_GROUP_NONE : RP_GROUP_VM;
    watch_vms(t);
}

/* Fetches a new window.  Returns 1 if t->rep changed. */
static int refresh_data(top *t)
{
    int rc;
    if (t->ring) {
        if (!t->r) {
            rc = pa_ring_open(t->ring, &t->r);
            if (rc < 0) {
                set_status(t, cli_errmsg(rc));
                t->rep = NULL;
                return 1;
            }
            t->seq = 0;
            rc = pa_ring_read(t->r, &t->seq, &t->rep);
        } else {
            rc = pa_ring_aggregate(t->r, &t->seq, 0, &t->rep);
        }
        if (rc == -EAGAIN)
            return 0;
        if (rc < 0) {
            set_status(t, cli_errmsg(rc));
            pa_ring_close(t->r);
            t->r = NULL;
            t->rep = NULL;
            return 1;
        }
        t->status[0] = '\0';
    } else {
        rc = pa_tick(t->ctx);
        pa_report *nr = NULL;
        if (rc == 0)
            rc = pa_report_get(t->ctx, &nr);
        if (rc == -ENODATA)
            return 0;
        if (rc < 0) {
            set_status(t, cli_errmsg(rc));
            return 1;
        }
        pa_report_free(t->own);
        t->own = nr;
        t->rep = nr;
        watch_vms(t);
    }
    if (t->rep) {
        t->energy_j += t->rep->system.total_w * t->rep->interval_s;
        t->seen_s += t->rep->interval_s;
    }
    return 1;
}

static int cmp_rows(const pa_target_info *a, const pa_target_info *b, sort_key k)
{
    double x, y;
    switch (k) {
    case SORT_CPU:
        x = a->power.cpu_w, y = b->power.cpu_w;
        break;
    case SORT_NIC:
        x = a->power.nic_w, y = b->power.nic_w;
        break;
    case SORT_ENERGY:
        x = a->power.total_j, y = b->power.total_j;
        break;
    case SORT_PID:
        x = -(double)a->pid, y = -(double)b->pid;
        break;
    default:
        x = a->power.total_w, y = b->power.total_w;
        break;
    }
    if (x != y)
        return x > y ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return strcmp(a->cgroup ? a->cgroup : "", b->cgroup ? b->cgroup : "");
}

static sort_key g_sort; /* qsort has no context argument */

static int qsort_rows(const void *a, const void *b)
{
    return cmp_rows(*(const pa_target_info *const *)a, *(const pa_target_info *const *)b, g_sort);
}

static bool matches(const top *t, const pa_target_info *x)
{
    if (!t->filter[0])
        return true;
    char pid[16];
    snprintf(pid, sizeof(pid), "%d", (int)x->pid);
    return strstr(x->comm, t->filter) || (x->cgroup && strstr(x->cgroup, t->filter)) ||
           (!t->cgroups && strstr(pid, t->filter));
}

static size_t build_rows(top *t, const pa_report *r)
{
    if (!r)
        return 0;
    if (r->ntargets > t->rows_cap) {
        const pa_target_info **nr = realloc(t->rows, r->ntargets * sizeof(*nr));
        if (!nr)
            return 0;
        t->rows = nr;
        t->rows_cap = r->ntargets;
    }
    pa_target_type want = t->group == RP_GROUP_VM  ? PA_TARGET_VM
                          : t->cgroups || t->group ? PA_TARGET_CGROUP
                                                   : PA_TARGET_PROCESS;
    size_t n = 0;
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *x = &r->targets[i];
        /* the process view has a line for the processes born and gone in
         * the window and one for what no process accounts for */
        bool fold = want == PA_TARGET_PROCESS &&
                    (x->type == PA_TARGET_EXITED || x->type == PA_TARGET_UNACCOUNTED);
        if ((x->type == want || fold) && !(x->power.flags & PA_POWER_EXITED) && matches(t, x))
            t->rows[n++] = x;
    }
    g_sort = t->sort;
    if (n > 1)
        qsort(t->rows, n, sizeof(*t->rows), qsort_rows);
    return n;
}

/* ---- screen ---- */

/* printf at a row, clipped to the screen width (never wraps). */
static void line(int row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(int row, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (row >= 0 && row < LINES)
        mvaddnstr(row, 0, buf, COLS);
}

/* Length of the next line of text in width columns: the whole text if it
 * fits, else up to its last space within width (a word longer than width
 * is cut). */
static size_t wrap_len(const char *s, size_t width)
{
    size_t n = strlen(s);
    if (n <= width)
        return n;
    for (size_t k = width; k > 0; k--)
        if (s[k] == ' ')
            return k;
    return width;
}

/* The assumptions ("a;b;c", each "; "-separated on screen), wrapped at
 * word boundaries from row 3, at most max_rows rows (the last ends with
 * "..." when more is left).  Returns the rows used. */
static int draw_assumed(const char *as, int w, int max_rows)
{
    char text[4096];
    size_t k = 0;
    for (const char *p = as; *p && k + 3 < sizeof(text); p++) {
        text[k++] = *p;
        if (*p == ';' && p[1] && p[1] != ' ')
            text[k++] = ' ';
    }
    text[k] = '\0';
    size_t width = w > 20 ? (size_t)w - 8 : 12;
    const char *p = text;
    int rows = 0;
    while (*p && rows < max_rows) {
        size_t n = wrap_len(p, width);
        bool last = rows + 1 == max_rows && p[n];
        if (last) /* room for " ..." at a word boundary */
            n = wrap_len(p, width > 4 ? width - 4 : width);
        line(3 + rows, "%s%.*s%s", rows ? "        " : "Assumed ", (int)n, p, last ? " ..." : "");
        rows++;
        p += n;
        while (*p == ' ')
            p++;
    }
    return rows ? rows : 1;
}

/* The index of the component "gpu" in r, -1 when none (no GPU here). */
static int gpu_comp(const pa_report *r)
{
    for (size_t k = 0; r && r->system_component_w && k < r->ncomponents; k++)
        if (!strcmp(r->component_names[k], "gpu"))
            return (int)k;
    return -1;
}

/* Row x's GPU watts (component g of report r) into col, "-" when the
 * report has no components per row (the grouped views). */
static void row_gpu(const pa_report *r, const pa_target_info *x, int g, char *col, size_t len)
{
    if (g < 0 || !r->target_component_w || (size_t)g >= r->ncomponents || x < r->targets ||
        x >= r->targets + r->ntargets)
        snprintf(col, len, " %9s", "-");
    else
        snprintf(col, len, " %9.2f",
                 r->target_component_w[(size_t)(x - r->targets) * r->ncomponents + (size_t)g]);
}

/* The name of the view: "processes", "cgroups", "containers"... */
static const char *view_name(const top *t)
{
    static const char *const groups[] = {"", "containers", "pods", "units", "cgroups", "VMs"};
    return t->group ? groups[t->group] : t->cgroups ? "cgroups" : "processes";
}

/* A VM row's name: "web-01 (qemu, libvirt; vCPUs 21.00 W)". */
static void vm_label(const pa_target_info *x, char *out, size_t len)
{
    const pa_vm_info *v = x->vm;
    if (!v) {
        snprintf(out, len, "%s", x->comm);
        return;
    }
    char vcpu[48] = "";
    if (x->vcpu_w >= 0)
        snprintf(vcpu, sizeof(vcpu), "; vCPUs %.2f W", x->vcpu_w);
    snprintf(out, len, "%.64s (%s%s%s%s)", v->name[0] ? v->name : "?", v->hypervisor,
             v->manager[0] ? ", " : "", v->manager, vcpu);
}

/* The report of the view: r, its cgroups grouped (*grouped, freed by the
 * caller) or its VMs (own sampling: grouped here; a ring: the VM records
 * of a 'daemon --vms'). */
static const pa_report *view_report(top *t, const pa_report *r, pa_report **grouped)
{
    const pa_report *vr = NULL;
    if (r && t->group == RP_GROUP_VM) {
        if (t->ring)
            return r;
        if (!t->vmg || rp_vmgroups_report(t->vmg, r, &vr) < 0)
            snprintf(t->status, sizeof(t->status), "out of memory");
        return vr;
    }
    if (r && t->group && rp_group_report(r, t->group, grouped) < 0)
        snprintf(t->status, sizeof(t->status), "out of memory");
    return *grouped ? *grouped : r;
}

/* The header's rows (the totals, the formula, the assumptions) of report
 * r, or "waiting"; the row of the column titles. */
static int draw_header(const top *t, const pa_report *r, size_t n)
{
    int h = LINES, w = COLS;
    line(0, "powerapi top - %s | every %.3g s | %zu %s | sort: %s%s%s",
         t->ring ? t->ring : "own sampling", (double)t->interval_ns / 1e9, n, view_name(t),
         sort_names[t->sort], t->filter[0] ? " | filter: " : "", t->filter);
    if (!r) {
        line(1, "waiting for the first window...");
        return 5;
    }
    char co2[48] = "", ci[128] = "";
    if (t->carbon_g_per_kwh > 0 && pa_carbon_assumption(t->carbon_g_per_kwh, ci, sizeof(ci)) > 0)
        snprintf(co2, sizeof(co2), "  CO2e %.4f g",
                 rp_out_co2e_g(t->carbon_g_per_kwh, t->energy_j));
    /* an 80-column terminal gets the short form (nothing cut off) */
    line(1,
         w >= 110 ? "System %8.2f W  cpu %.2f W (%s)  nic %.2f W  idle %.2f W  "
                    "energy since start %.1f J (%.0f s)%s"
                  : "System %.2f W  cpu %.2f W (%s)  nic %.2f  idle %.2f  %.1f J in %.0f s%s",
         r->system.total_w, r->system.cpu_w, rp_out_source_words(r->cpu_source), r->system.nic_w,
         r->system.idle_w, t->energy_j, t->seen_s, co2);
    if (gpu_comp(r) >= 0)
        line(2, "Formula %s  sensors %s  window %.3f s  gpu %.2f W (%zu device(s))",
             r->formula ? r->formula : "", r->sensors ? r->sensors : "", r->interval_s,
             r->system_component_w[gpu_comp(r)], r->ndevices);
    else
        line(2, "Formula %s  sensors %s  window %.3f s", r->formula ? r->formula : "",
             r->sensors ? r->sensors : "", r->interval_s);
    /* The assumptions can be long: wrapped at words, up to 6 rows (fewer
     * on a short screen), then cut at a word with "...".  The carbon
     * intensity, when given, is the first of them: never cut off. */
    char as[2048];
    snprintf(as, sizeof(as), "%s%s%s", ci, r->assumed && r->assumed[0] && ci[0] ? "; " : "",
             r->assumed ? r->assumed : "");
    if (!as[0])
        snprintf(as, sizeof(as), "nothing");
    /* 2 rows on a 24-line terminal, 5 on a 40-line one, at most 6: the
     * processes come first */
    int max_rows = (h - 8) / 6;
    max_rows = max_rows < 2 ? 2 : max_rows > 6 ? 6 : max_rows;
    int head = 3 + draw_assumed(as, w, max_rows);
    return head < 5 ? 5 : head;
}

/* The column titles at row head; a GPU column when the report has the
 * component (grouped views: "-", their rows carry no components). */
static void draw_titles(const top *t, int head, int g)
{
    int w = COLS;
    attron(A_REVERSE);
    char what[24];
    snprintf(what, sizeof(what), "%s", t->group ? rp_group_name(t->group) : "cgroup");
    for (char *c = what; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    const char *gh = g >= 0 ? "    GPU W" : "";
    int gw = g >= 0 ? 10 : 0;
    if (t->cgroups || t->group)
        line(head, "%-*s %9s %9s%s %10s %12s", w - 45 - gw > 20 ? w - 45 - gw : 20, what, "CPU W",
             "NIC W", gh, "TOTAL W", "ENERGY J");
    else
        line(head, "%7s %-16s %6s %9s %9s%s %10s %12s%s  %s", "PID", "COMM", "CPU%", "CPU W",
             "NIC W", gh, "TOTAL W", "ENERGY J", t->carbon_g_per_kwh > 0 ? "     CO2E G" : "",
             "CGROUP");
    attroff(A_REVERSE);
}

/* Target x at row: a group's row, or a process's (its CPU %, marked when
 * capped). */
static void draw_row(top *t, const pa_report *rr, const pa_target_info *x, int row, int g)
{
    int w = COLS, gw = g >= 0 ? 10 : 0;
    char label[160];
    rp_out_cgroup_label(x, label, sizeof(label));
    if (x->type == PA_TARGET_VM) /* its name, its vCPUs' part */
        vm_label(x, label, sizeof(label));
    else if (t->group)
        snprintf(label, sizeof(label), "%s", x->cgroup); /* the group's name */
    char gcol[16] = "";
    if (g >= 0)
        row_gpu(rr, x, g, gcol, sizeof(gcol));
    if (t->cgroups || t->group) {
        int cw = w - 45 - gw > 20 ? w - 45 - gw : 20;
        line(row, "%-*.*s %9.2f %9.2f%s %10.2f %12.1f", cw, cw,
             t->cgroups && !t->group && x->cgroup && x->cgroup[0] ? x->cgroup : label,
             x->power.cpu_w, x->power.nic_w, gcol, x->power.total_w, x->power.total_j);
        return;
    }
    bool capped;
    double pct = rp_out_cpu_pct(t->procfs, x, x->power.interval_s, &capped);
    t->capped |= capped;
    char gco2[24] = "";
    if (t->carbon_g_per_kwh > 0)
        snprintf(gco2, sizeof(gco2), " %10.4f",
                 rp_out_co2e_g(t->carbon_g_per_kwh, x->power.total_j));
    /* the exited line: how many processes in the last column */
    char pid[16], note[64] = "";
    bool fold = x->type == PA_TARGET_EXITED || x->type == PA_TARGET_UNACCOUNTED;
    snprintf(pid, sizeof(pid), fold ? "-" : "%d", (int)x->pid);
    if (x->type == PA_TARGET_EXITED)
        rp_out_exited_label(x, note, sizeof(note));
    line(row,
         capped ? "%7s %-16.16s %5.1f* %9.2f %9.2f%s %10.2f %12.1f%s  %s"
                : "%7s %-16.16s %6.1f %9.2f %9.2f%s %10.2f %12.1f%s  %s",
         pid, x->comm, pct, x->power.cpu_w, x->power.nic_w, gcol, x->power.total_w,
         x->power.total_j, gco2,
         note[0]     ? note
         : x->cgroup ? x->cgroup
                     : "");
}

/* The whole screen, from the last report. */
static void draw(top *t)
{
    erase();
    int h = LINES;
    const pa_report *r = t->rep;
    pa_report *grouped = NULL;
    const pa_report *rr = view_report(t, r, &grouped);
    size_t n = build_rows(t, rr);
    int head = draw_header(t, r, n);
    int g = gpu_comp(r);
    draw_titles(t, head, g);
    int row = head + 1;
    t->capped = false;
    for (size_t i = 0; i < n && row < h - 1; i++, row++)
        draw_row(t, rr, t->rows[i], row, g);
    if (t->status[0]) {
        attron(A_BOLD);
        line(h - 1, "%s", t->status);
        attroff(A_BOLD);
    } else {
        line(h - 1, "%sq quit  s sort  c %s  g group  v VMs  / filter  +/- interval",
             t->capped ? RP_OUT_CAPPED_NOTE "  " : "", t->cgroups ? "processes" : "cgroups");
    }
    refresh();
    rp_group_free(grouped); /* the rows pointed into it: drawn now */
}

/* Reads a filter at the bottom line.  Enter applies, Esc cancels. */
static void prompt_filter(top *t)
{
    char buf[sizeof(t->filter)] = "";
    size_t n = 0;
    timeout(-1);
    for (;;) {
        move(LINES - 1, 0);
        clrtoeol();
        mvprintw(LINES - 1, 0, "filter: %s", buf);
        refresh();
        int ch = getch();
        if (ch == 27) /* Esc */
            break;
        if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
            memcpy(t->filter, buf, sizeof(buf));
            break;
        }
        if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n > 0)
            buf[--n] = '\0';
        else if (ch >= 32 && ch < 127 && n + 1 < sizeof(buf)) {
            buf[n++] = (char)ch;
            buf[n] = '\0';
        }
    }
}

static int parse_sort(const char *s, sort_key *out)
{
    for (int i = 0; i < SORT_N; i++)
        if (strcmp(s, sort_names[i]) == 0) {
            *out = (sort_key)i;
            return 0;
        }
    return -EINVAL;
}

/* SIGINT, SIGTERM, SIGHUP: leave the loop, restore the terminal, exit 0,
 * as 'q' does (ncurses' own handler would exit with status 1). */
static volatile sig_atomic_t top_stop;

static void on_stop_signal(int sig)
{
    (void)sig;
    top_stop = 1;
}

static const char *const sort_choices[] = {"power", "cpu", "nic", "energy", "pid", NULL};

static int set_sort(void *v, const char *cmd, const char *arg)
{
    if (cli_choice(cmd, "sort", sort_choices, arg) < 0 || parse_sort(arg, v) < 0)
        return CLI_EXIT_USAGE;
    return 0;
}

static int set_filter(void *v, const char *cmd, const char *arg)
{
    (void)cmd;
    top *t = v;
    snprintf(t->filter, sizeof(t->filter), "%s", arg);
    return 0;
}

static const char *const group_choices[] = {"container", "pod", "unit", "vm", NULL};

static int set_group(void *v, const char *cmd, const char *arg)
{
    if (rp_group_parse(arg, v) < 0 || *(rp_group *)v == RP_GROUP_CGROUP)
        return cli_usage_error(cmd,
                               "--group-by: unknown kind '%s' (container, pod, unit or "
                               "vm; -c for cgroups)",
                               arg);
    return 0;
}

/* Parses the options into t and co.  0, -1 (help printed) or the exit
 * status. */
static int parse_args(top *t, cli_ctx *co, int argc, char **argv)
{
    const cli_opt opts[] = {
        CLI_OPT_GROUP("Options:"),
        CLI_OPT_STRING('r', "ring", &t->ring, "NAME", "read a daemon's ring instead of sampling"),
        CLI_OPT_CHOICE('s', "sort", &t->sort, "KEY",
                       "power, cpu, nic, energy or pid (default power)", set_sort, sort_choices),
        CLI_OPT_FLAG('c', "cgroups", &t->cgroups, "start in the cgroup view"),
        CLI_OPT_CHOICE('g', "group-by", &t->group, "KIND",
                       "start in the view of containers, pods, units or\n"
                       "VMs (vm; the key g goes from one to the next of\n"
                       "the first three, v to the VMs and back)",
                       set_group, group_choices),
        CLI_OPT_CALLBACK('f', "filter", t, "TEXT",
                         "only rows whose name, cgroup or pid contains TEXT", set_filter),
        CLI_OPT_CONTEXT(co, CLI_CTXOPT_ALL | CLI_CTXOPT_CARBON),
        CLI_OPT_END,
    };
    const cli_cmd c = {.name = CMD,
                       .usage = "%s " CMD " [OPTIONS]\n",
                       .about = top_about,
                       .footer = top_footer,
                       .opts = opts};
    int first;
    int st = cli_parse(&c, argc, argv, &first);
    if (st)
        return st;
    const char *given = cli_ctx_sampling_option(co);
    if (t->ring && given)
        return cli_usage_error(CMD,
                               "--ring reads what the daemon samples: no "
                               "%s with it (modules and roots are the "
                               "daemon's)",
                               given);
    t->interval_ns = co->interval_ns;
    return 0;
}

/* Opens what the screen shows: the ring, or a context watching every
 * process (its first tick taken); 0 or the exit status. */
static int top_open(top *t, const cli_ctx *co)
{
    int rc;
    if (t->ring) {
        /* A wrong ring name is told before the screen is taken. */
        rc = pa_ring_open(t->ring, &t->r);
        if (rc < 0) {
            cli_error(CMD, "%s", cli_errmsg(rc));
            return CLI_EXIT_FAIL;
        }
        rc = pa_ring_read(t->r, &t->seq, &t->rep);
        if (rc == 0) {
            t->energy_j = t->rep->system.total_w * t->rep->interval_s;
            t->seen_s = t->rep->interval_s;
        }
        return 0;
    }
    if ((rc = cli_ctx_create(co, CMD, &t->ctx)) != 0)
        return rc;
    if ((rc = pa_watch_all(t->ctx, 1)) < 0 || (rc = pa_report_cgroups(t->ctx, 1)) < 0 ||
        (rc = pa_tick(t->ctx)) < 0) {
        cli_error(CMD, "%s", cli_errmsg(rc));
        pa_ctx_free(t->ctx);
        return CLI_EXIT_FAIL;
    }
    t->procfs = co->copts.procfs;
    t->rootfs = co->copts.rootfs;
    watch_vms(t);
    uint64_t tick = cli_cpu_resolution_ns(t->ctx);
    if (t->interval_ns < TOP_MIN_TICKS * tick) {
        cli_error(CMD,
                  "--interval %.3g ms: windows under %.3g ms are "
                  "more than 10 %% off, since process CPU times move "
                  "in %.3g ms clock ticks (procfs-cpu: /proc/PID/stat, "
                  "USER_HZ %ld); use --interval %.3gms or more",
                  (double)t->interval_ns / 1e6, (double)(TOP_MIN_TICKS * tick) / 1e6,
                  (double)tick / 1e6, sysconf(_SC_CLK_TCK), (double)(TOP_MIN_TICKS * tick) / 1e6);
        pa_ctx_free(t->ctx);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* Takes the terminal: the stop signals first (installed before initscr,
 * which then leaves them to us; no SA_RESTART, so a signal also ends
 * getch's wait), then curses. */
static void screen_start(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    setlocale(LC_ALL, "");
    initscr();
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
}

/* Acts on key ch: 1 when the screen is to be drawn again, 0 when the key
 * means nothing here, -1 on q; *next moves when the interval does. */
static int on_key(top *t, int ch, uint64_t *next)
{
    switch (ch) {
    case 'q':
    case 'Q':
        return -1;
    case 's':
        t->sort = (sort_key)((t->sort + 1) % SORT_N);
        return 1;
    case 'c':
        t->cgroups = !t->cgroups;
        t->group = RP_GROUP_NONE;
        return 1;
    case 'g': /* processes -> containers -> pods -> units -> processes */
        t->group = t->group >= RP_GROUP_UNIT ? RP_GROUP_NONE : (rp_group)(t->group + 1);
        return 1;
    case 'v': /* the VMs, and back */
        toggle_vms(t);
        return 1;
    case '/':
        prompt_filter(t);
        return 1;
    case '+':
        if (t->interval_ns < 3600000000000ull)
            t->interval_ns *= 2;
        *next = cli_mono_ns() + t->interval_ns;
        return 1;
    case '-':
        if (t->interval_ns >= 200000000ull)
            t->interval_ns /= 2;
        *next = cli_mono_ns() + t->interval_ns;
        return 1;
    case KEY_RESIZE:
        return 1;
    default:
        return 0;
    }
}

/* Runs the screen until q or a stop signal. */
static int top_run(top *t, const cli_ctx *co)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        cli_error(CMD,
                  "needs a terminal; use '%s monitor' for a "
                  "stream of reports",
                  cli_prog);
        return CLI_EXIT_FAIL;
    }
    int rc = top_open(t, co);
    if (rc != 0)
        return rc;
    screen_start();
    uint64_t next = cli_mono_ns() + t->interval_ns;
    draw(t);
    for (int key = 0; key >= 0 && !top_stop;) {
        uint64_t now = cli_mono_ns();
        if (now >= next) {
            refresh_data(t);
            next += t->interval_ns;
            if (next <= now)
                next = now + t->interval_ns;
            draw(t);
            continue;
        }
        uint64_t wait_ms = (next - now + 999999) / 1000000;
        timeout(wait_ms > 1000 ? 1000 : (int)wait_ms);
        int ch = getch();
        if (ch != ERR && (key = on_key(t, ch, &next)) > 0)
            draw(t);
    }
    endwin();
    pa_ring_close(t->r);
    pa_report_free(t->own);
    pa_ctx_free(t->ctx);
    rp_vmgroups_free(t->vmg);
    free(t->rows);
    return CLI_EXIT_OK;
}

int cli_top(int argc, char **argv)
{
    top t;
    memset(&t, 0, sizeof(t));
    cli_ctx co;
    cli_ctx_init(&co);
    int rc = parse_args(&t, &co, argc, argv);
    t.carbon_g_per_kwh = co.carbon_g_per_kwh;
    if (rc == 0)
        rc = top_run(&t, &co);
    cli_ctx_fini(&co);
    return rc < 0 ? CLI_EXIT_OK : rc;
}
