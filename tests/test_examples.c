/* test_examples.c - every fenced example of every README runs as written
 * (the conventions are in DESIGN.md section 9.1).
 *
 * The READMEs are found, not listed: any README*.md of the source tree
 * (build trees and hidden folders left out).  Each fenced block runs by
 * its language: c (compiled against the built library), python (the built
 * binding), java (the built jar and JNI library; a block that imports
 * org.powerapi.jalen.Scope: jalen-api.jar, under the agent), sh/bash/console
 * (one command per line, on a pty, with the built powerapi first on PATH), json
 * (output samples, compared with the keys of the real output).  A block
 * runs in its own mount and network namespaces (a private /dev/shm and
 * loopback) when the test runs as root, so a daemon example's ring
 * "powerapi" and serve's port meet no other test run.  HTML comments right
 * before a block change how it runs:
 *     <!-- example: skip: REASON -->     not run, listed with its reason
 *     <!-- example: xfail: REASON -->    must fail today (remove with the fix)
 *     <!-- example: daemon -->           a powerapi daemon runs meanwhile
 *     <!-- example: timeout=N -->        N s per command
 *     <!-- example: env -->              its "export NAME=VALUE" lines,
 *                                        evaluated in the examples' folder,
 *                                        are the environment of every
 *                                        example (README.md's says where
 *                                        the build put the command and the
 *                                        libraries, so the examples run as a
 *                                        reader who followed it runs them)
 * The case test_broken_example_fails runs the same machinery on a
 * temporary README whose example is wrong, and checks that it fails.
 */

#include "testutil.h"

/* Paths here are built from PATH_MAX-sized parts; one too long for its
 * buffer is cut, and the file operation on it then fails the test. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_CMD_S 3      /* a shell command, then it runs "until stopped" */
#define DEFAULT_PROGRAM_S 90 /* compile and run a C, Java or Python block */
#define STOP_S 5             /* after SIGINT */
#define PARALLEL 6           /* blocks at once (most of their time is waiting) */
#define OUT_MAX (256 * 1024)

/* ------------------------------------------------------------------ */
/* Blocks                                                              */
/* ------------------------------------------------------------------ */

typedef struct block {
    char file[512]; /* README, relative to the source root */
    int line;       /* of the opening fence */
    char lang[32];
    char *text;
    char skip[256];  /* reason; "" = run */
    char xfail[256]; /* reason; "" = must pass */
    bool daemon;
    bool env; /* its exports are every example's environment */
    int timeout_s;
} block;

typedef struct blocks {
    block *v;
    size_t n, cap;
    char *errors; /* malformed markers, "file:line: ...\n" */
    size_t elen;
} blocks;

static void add_error(blocks *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_error(blocks *b, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = strlen(msg);
    char *e = realloc(b->errors, b->elen + n + 2);
    ck_assert_ptr_nonnull(e);
    memcpy(e + b->elen, msg, n);
    e[b->elen + n] = '\n';
    e[b->elen + n + 1] = '\0';
    b->errors = e;
    b->elen += n + 1;
}

static void blocks_free(blocks *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->v[i].text);
    free(b->v);
    free(b->errors);
    memset(b, 0, sizeof *b);
}

/* "<!-- example: ... -->" applied to the next block; false if not one. */
static bool parse_marker(blocks *b, const char *rel, int lineno, const char *line, block *pending)
{
    const char *p = line;
    while (*p == ' ')
        p++;
    if (strncmp(p, "<!--", 4))
        return false;
    p += 4;
    while (*p == ' ')
        p++;
    if (strncmp(p, "example:", 8))
        return false;
    p += 8;
    while (*p == ' ')
        p++;
    char body[512];
    snprintf(body, sizeof body, "%s", p);
    char *end = strstr(body, "-->");
    if (!end) {
        add_error(b, "%s:%d: example marker without '-->' on its line", rel, lineno);
        return true;
    }
    *end = '\0';
    for (size_t n = strlen(body); n && body[n - 1] == ' ';)
        body[--n] = '\0';
    if (!strncmp(body, "skip:", 5) || !strncmp(body, "xfail:", 6)) {
        bool skip = body[0] == 's';
        const char *why = body + (skip ? 5 : 6);
        while (*why == ' ')
            why++;
        if (!*why)
            add_error(b, "%s:%d: '%s' needs a reason a reader can check", rel, lineno,
                      skip ? "skip:" : "xfail:");
        snprintf(skip ? pending->skip : pending->xfail, sizeof pending->skip, "%s", why);
    } else if (!strcmp(body, "daemon")) {
        pending->daemon = true;
    } else if (!strcmp(body, "env")) {
        pending->env = true;
    } else if (!strncmp(body, "timeout=", 8) && atoi(body + 8) > 0) {
        pending->timeout_s = atoi(body + 8);
    } else {
        add_error(b,
                  "%s:%d: unknown example marker '%s' (skip: REASON, xfail: "
                  "REASON, daemon, env, timeout=N)",
                  rel, lineno, body);
    }
    return true;
}

/* Reads the fenced blocks of one Markdown file. */
static void parse_readme(blocks *b, const char *path, const char *rel)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        add_error(b, "%s: cannot read: %s", rel, strerror(errno));
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, marker_line = 0;
    block pending;
    memset(&pending, 0, sizeof pending);
    bool have_marker = false;
    block *cur = NULL;
    char fence[16] = "";
    size_t tlen = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        const char *p = line;
        size_t ind = strspn(p, " ");
        if (cur) {
            /* closing fence: the same character, at least as long */
            if (ind < 4 && !strncmp(p + ind, fence, strlen(fence)) &&
                p[ind + strspn(p + ind, fence[0] == '`' ? "`" : "~")] == '\0') {
                cur = NULL;
                continue;
            }
            size_t n = strlen(line);
            char *t = realloc(cur->text, tlen + n + 2);
            ck_assert_ptr_nonnull(t);
            cur->text = t;
            memcpy(t + tlen, line, n);
            t[tlen + n] = '\n';
            t[tlen + n + 1] = '\0';
            tlen += n + 1;
            continue;
        }
        if (parse_marker(b, rel, lineno, line, &pending)) {
            have_marker = true;
            marker_line = lineno;
            continue;
        }
        if (ind < 4 && (!strncmp(p + ind, "```", 3) || !strncmp(p + ind, "~~~", 3))) {
            size_t fl = strspn(p + ind, p[ind] == '`' ? "`" : "~");
            if (fl >= sizeof fence)
                fl = sizeof fence - 1;
            memcpy(fence, p + ind, fl);
            fence[fl] = '\0';
            if (b->n == b->cap) {
                b->cap = b->cap ? b->cap * 2 : 32;
                b->v = realloc(b->v, b->cap * sizeof *b->v);
                ck_assert_ptr_nonnull(b->v);
            }
            cur = &b->v[b->n++];
            *cur = pending;
            snprintf(cur->file, sizeof cur->file, "%s", rel);
            cur->line = lineno;
            const char *info = p + ind + fl;
            while (*info == ' ')
                info++;
            size_t k = 0;
            while (info[k] && !isspace((unsigned char)info[k]) && info[k] != '{' &&
                   k + 1 < sizeof cur->lang) {
                cur->lang[k] = (char)tolower((unsigned char)info[k]);
                k++;
            }
            cur->lang[k] = '\0';
            cur->text = strdup("");
            tlen = 0;
            memset(&pending, 0, sizeof pending);
            have_marker = false;
            continue;
        }
        if (have_marker && line[0]) {
            add_error(b, "%s:%d: example marker not followed by a fenced block", rel, marker_line);
            memset(&pending, 0, sizeof pending);
            have_marker = false;
        }
    }
    if (cur)
        add_error(b, "%s:%d: fenced block never closed", rel, cur->line);
    if (have_marker)
        add_error(b, "%s:%d: example marker not followed by a fenced block", rel, marker_line);
    free(line);
    fclose(f);
}

static bool is_readme(const char *name)
{
    size_t n = strlen(name);
    return n > 3 && !strncasecmp(name, "readme", 6) && !strcasecmp(name + n - 3, ".md");
}

/* A folder that is a build tree or hidden. */
static bool skipped_dir(const char *path, const char *name)
{
    if (name[0] == '.' || !strncmp(name, "build", 5))
        return true;
    char cache[PATH_MAX];
    snprintf(cache, sizeof cache, "%s/CMakeCache.txt", path);
    return access(cache, F_OK) == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static void find_readmes(blocks *b, const char *root, const char *rel)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s%s%s", root, rel[0] ? "/" : "", rel);
    struct dirent **list;
    int n = scandir(dir, &list, NULL, by_name);
    if (n < 0) {
        add_error(b, "%s: cannot list: %s", dir, strerror(errno));
        return;
    }
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        char path[PATH_MAX], sub[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", name);
        struct stat st;
        if (strcmp(name, ".") && strcmp(name, "..") && lstat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode) && !skipped_dir(path, name))
                find_readmes(b, root, sub);
            else if (S_ISREG(st.st_mode) && is_readme(name))
                parse_readme(b, path, sub);
        }
        free(list[i]);
    }
    free(list);
}

/* ------------------------------------------------------------------ */
/* Commands on a pty                                                   */
/* ------------------------------------------------------------------ */

typedef struct proc {
    pid_t pid;
    int fd;
    char *out;
    size_t len;
    bool exited;
    int status; /* exit code, or 128 + signal */
    char cmd[1024];
} proc;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int proc_start(proc *p, const char *cmd)
{
    memset(p, 0, sizeof *p);
    snprintf(p->cmd, sizeof p->cmd, "%s", cmd);
    p->out = calloc(1, OUT_MAX + 1);
    if (!p->out)
        return -ENOMEM;
    struct winsize ws = {.ws_row = 40, .ws_col = 120};
    pid_t pid = forkpty(&p->fd, NULL, NULL, &ws);
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        execl("/bin/bash", "bash", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    p->pid = pid;
    fcntl(p->fd, F_SETFL, O_NONBLOCK);
    return 0;
}

/* Reads what is there, and reaps the process once it has exited. */
static void proc_poll(proc *p)
{
    if (p->fd >= 0) {
        char buf[8192];
        for (;;) {
            ssize_t r = read(p->fd, buf, sizeof buf);
            if (r > 0) {
                size_t k = (size_t)r;
                if (p->len + k > OUT_MAX) { /* keep the newest */
                    size_t drop = p->len + k - OUT_MAX;
                    if (drop > p->len)
                        drop = p->len;
                    memmove(p->out, p->out + drop, p->len - drop);
                    p->len -= drop;
                    if (k > OUT_MAX)
                        k = OUT_MAX;
                }
                memcpy(p->out + p->len, buf + (size_t)r - k, k);
                p->len += k;
                p->out[p->len] = '\0';
                continue;
            }
            if (r < 0 && errno == EAGAIN)
                break;
            close(p->fd); /* EIO: no process has the terminal any more */
            p->fd = -1;
            break;
        }
    }
    if (!p->exited) {
        int st;
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->exited = true;
            p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
    }
}

static bool printed(const proc *p)
{
    for (size_t i = 0; i < p->len; i++)
        if (!isspace((unsigned char)p->out[i]))
            return true;
    return false;
}

/* Waits until p exits (true) or for `seconds`, polling the others too so
 * that none blocks on a full terminal. */
static bool proc_wait(proc *p, double seconds, proc *others, size_t nothers)
{
    double end = now_s() + seconds;
    for (;;) {
        proc_poll(p);
        for (size_t i = 0; i < nothers; i++)
            proc_poll(&others[i]);
        if (p->exited) {
            proc_poll(p); /* the last output */
            return true;
        }
        if (now_s() >= end)
            return false;
        struct pollfd pf[1] = {{.fd = p->fd, .events = POLLIN}};
        poll(pf, p->fd >= 0 ? 1 : 0, 50);
    }
}

static void proc_kill(proc *p)
{
    if (!p->exited) {
        killpg(p->pid, SIGKILL);
        kill(p->pid, SIGKILL);
        int st;
        waitpid(p->pid, &st, 0);
        p->exited = true;
        p->status = 128 + SIGKILL;
    }
}

static void proc_free(proc *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    free(p->out);
    p->out = NULL;
}

/* The last lines of an output, for a failure message. */
static const char *tail(const proc *p)
{
    size_t n = p->len, lines = 0;
    while (n > 0 && lines < 15 && p->len - n < 2000)
        if (p->out[--n] == '\n')
            lines++;
    return p->out + n;
}

/* ------------------------------------------------------------------ */
/* Running a block                                                     */
/* ------------------------------------------------------------------ */

typedef struct env {
    char src[PATH_MAX];  /* tree whose READMEs run */
    char proj[PATH_MAX]; /* the project under test (its header) */
    char bin[PATH_MAX];  /* build tree */
    char work[PATH_MAX]; /* working folder of the examples */
    bool isolated;       /* private namespaces are possible */
    bool have_java, have_python, have_python3;
} env;

typedef struct result {
    FILE *log;
    bool failed;
} result;

static void block_fail(result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void block_fail(result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->log, fmt, ap);
    va_end(ap);
    fputc('\n', r->log);
    r->failed = true;
}

/* The shell command lines of a block: comments and blank lines left out,
 * "\" continuations joined, "$ " prompts stripped (console: other lines
 * are output), a leading sudo dropped when running as root. */
static size_t command_lines(const block *b, char ***out)
{
    bool console = !strcmp(b->lang, "console");
    char **v = NULL;
    size_t n = 0;
    char *text = strdup(b->text), *save = NULL, *acc = NULL;
    ck_assert_ptr_nonnull(text);
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *s = l;
        if (!acc) {
            while (*s == ' ' || *s == '\t')
                s++;
            if (console) {
                if (strncmp(s, "$ ", 2))
                    continue;
                s += 2;
            }
            if (!*s || *s == '#')
                continue;
        }
        size_t len = strlen(s);
        bool cont = len && s[len - 1] == '\\';
        if (cont)
            s[len - 1] = ' ';
        if (acc) {
            char *j;
            ck_assert_int_ge(asprintf(&j, "%s%s", acc, s), 0);
            free(acc);
            acc = j;
        } else {
            acc = strdup(s);
        }
        if (cont)
            continue;
        if (geteuid() == 0 && !strncmp(acc, "sudo ", 5))
            memmove(acc, acc + 5, strlen(acc + 5) + 1);
        v = realloc(v, (n + 1) * sizeof *v);
        ck_assert_ptr_nonnull(v);
        v[n++] = acc;
        acc = NULL;
    }
    if (acc) {
        v = realloc(v, (n + 1) * sizeof *v);
        v[n++] = acc;
    }
    free(text);
    *out = v;
    return n;
}

/* Stops the commands still running with SIGINT; each must exit 0. */
static void stop_all(result *r, const block *b, proc *bg, size_t nbg)
{
    for (size_t i = 0; i < nbg; i++) {
        proc *p = &bg[i];
        proc_poll(p);
        if (!p->exited) {
            killpg(p->pid, SIGINT);
            if (!proc_wait(p, STOP_S, bg, nbg)) {
                proc_kill(p);
                block_fail(r,
                           "%s:%d: `%s` still ran %d s after SIGINT; its output "
                           "ends:\n%s",
                           b->file, b->line, p->cmd, STOP_S, tail(p));
                continue;
            }
        }
        if (p->status != 0)
            block_fail(r,
                       "%s:%d: `%s` ended with status %d (after SIGINT, or on "
                       "its own); its output ends:\n%s",
                       b->file, b->line, p->cmd, p->status, tail(p));
    }
}

/* Runs commands in turn: each must exit 0 within its time, or, still
 * running, have printed something (it then runs on until the end). */
static void run_commands(result *r, const block *b, char **cmds, size_t n, int seconds)
{
    proc *bg = calloc(n + 1, sizeof *bg);
    ck_assert_ptr_nonnull(bg);
    size_t nbg = 0;
    for (size_t i = 0; i < n && !r->failed; i++) {
        proc p;
        int rc = proc_start(&p, cmds[i]);
        if (rc < 0) {
            block_fail(r, "%s:%d: cannot start `%s`: %s", b->file, b->line, cmds[i], strerror(-rc));
            break;
        }
        if (proc_wait(&p, seconds, bg, nbg)) {
            /* the agent refuses a bad option by design without failing
             * the JVM: its one line is what says the example is wrong */
            if (strstr(p.out, "runs on without profiling"))
                block_fail(r,
                           "%s:%d: `%s`: the jalen agent refused its "
                           "options:\n%s",
                           b->file, b->line, p.cmd, tail(&p));
            else if (p.status != 0)
                block_fail(r,
                           "%s:%d: `%s` failed with status %d; its output "
                           "ends:\n%s",
                           b->file, b->line, p.cmd, p.status, tail(&p));
            proc_free(&p);
        } else if (!printed(&p)) {
            proc_kill(&p);
            block_fail(r,
                       "%s:%d: `%s` printed nothing in %d s (raise the time with "
                       "<!-- example: timeout=N --> if it is slow)",
                       b->file, b->line, p.cmd, seconds);
            proc_free(&p);
        } else {
            bg[nbg++] = p; /* runs until stopped */
            fprintf(r->log, "  `%s` runs until stopped (output after %d s)\n", p.cmd, seconds);
        }
    }
    stop_all(r, b, bg, nbg);
    for (size_t i = 0; i < nbg; i++) {
        proc_kill(&bg[i]);
        proc_free(&bg[i]);
    }
    free(bg);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* C and Java blocks without their entry point get one; the lines that must
 * stay at the top (#include, import) are kept there. */
static char *wrap(const char *text, const char *top_prefix, const char *head, const char *open,
                  const char *close)
{
    size_t len = strlen(text) + strlen(head) + strlen(open) + strlen(close) + 8;
    char *top = calloc(1, len), *body = calloc(1, len), *out = calloc(1, 2 * len);
    ck_assert(top && body && out);
    char *copy = strdup(text), *save = NULL;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *dst = !strncmp(l, top_prefix, strlen(top_prefix)) ? top : body;
        strcat(dst, l);
        strcat(dst, "\n");
    }
    snprintf(out, 2 * len, "%s%s%s%s%s", head, top, open, body, close);
    free(copy);
    free(top);
    free(body);
    return out;
}

static const char *const json_check_py =
    "import json, sys\n"
    "def flat(d, p=''):\n"
    "    out = set()\n"
    "    for k, v in d.items():\n"
    "        out.add(p + k)\n"
    "        if isinstance(v, dict) and k != 'counters':\n"
    "            out |= flat(v, p + k + '.')\n"
    "    return out\n"
    "real = {}\n"
    "for line in open(sys.argv[2]):\n"
    "    if line.strip():\n"
    "        r = json.loads(line)\n"
    "        real.setdefault(r.get('type'), set()).update(flat(r))\n"
    "text = open(sys.argv[1]).read()\n"
    "try:\n"
    "    docs = [json.loads(text)]\n"
    "except ValueError:\n"
    "    docs = []\n"
    "    for n, line in enumerate(text.splitlines(), 1):\n"
    "        if line.strip():\n"
    "            try:\n"
    "                docs.append(json.loads(line))\n"
    "            except ValueError as e:\n"
    "                sys.exit('line %d of the block is not JSON: %s' % (n, e))\n"
    "bad = 0\n"
    "for d in docs:\n"
    "    if not isinstance(d, dict) or 'type' not in d:\n"
    "        continue\n"
    "    t = d['type']\n"
    "    if t not in real:\n"
    "        print('no %r record in the real output (it has %s)' % (t, sorted(map(str, real))))\n"
    "        bad = 1\n"
    "        continue\n"
    "    miss = sorted(flat(d) - real[t])\n"
    "    if miss:\n"
    "        print('keys of the %r sample the real output does not have: %s' % (t, miss))\n"
    "        bad = 1\n"
    "    else:\n"
    "        print('%r record: keys checked against the real output' % t)\n"
    "sys.exit(bad)\n";

/* The command that runs a program block (c, python, java, json) from its
 * folder dir, or NULL with *why set when it cannot run here. */
static char *program_command(const env *e, const block *b, const char *dir, const char **why)
{
    char path[PATH_MAX], *cmd = NULL;
    if (!strcmp(b->lang, "c")) {
        snprintf(path, sizeof path, "%s/example.c", dir);
        if (strstr(b->text, "main(")) {
            write_file(path, b->text);
        } else {
            char *w = wrap(b->text, "#include", "", "int main(void)\n{\n", "    return 0;\n}\n");
            write_file(path, w);
            free(w);
        }
        ck_assert_int_ge(asprintf(&cmd,
                                  "cc -Wall -Werror -fdiagnostics-color=never "
                                  "-I'%s/libpowerapi/include' -o '%s/example' "
                                  "'%s' -L'%s' -lpowerapi -Wl,-rpath,'%s' && '%s/example'",
                                  e->proj, dir, path, e->bin, e->bin, dir),
                         0);
    } else if (!strcmp(b->lang, "python") || !strcmp(b->lang, "py")) {
        if (!e->have_python) {
            *why = "the Python binding was not built";
            return NULL;
        }
        snprintf(path, sizeof path, "%s/example.py", dir);
        write_file(path, b->text);
        ck_assert_int_ge(asprintf(&cmd, "python3 '%s'", path), 0);
    } else if (!strcmp(b->lang, "java")) {
        if (!e->have_java) {
            *why = "the Java binding was not built, or no JDK";
            return NULL;
        }
        /* a block with its own public class runs that class */
        char cls[128] = "Example";
        const char *pc = strstr(b->text, "public class ");
        if (pc)
            sscanf(pc + 13, "%127[A-Za-z0-9_]", cls);
        snprintf(path, sizeof path, "%s/%s.java", dir, cls);
        if (pc) {
            write_file(path, b->text);
        } else {
            char *w = wrap(b->text, "import ", "import org.powerapi.*;\n",
                           "public class Example {\n    public static void "
                           "main(String[] args) throws Exception {\n",
                           "    }\n}\n");
            write_file(path, w);
            free(w);
        }
        if (strstr(b->text, "import org.powerapi.jalen.Scope;")) {
            /* the scope API (jalen-api.jar, Java 8): under the agent, and
             * it must have written scopes.csv */
            ck_assert_int_ge(
                asprintf(&cmd,
                         "javac --release 8 -d '%s' -cp '%s/jalen-agent/jalen-api.jar' "
                         "'%s' && java -agentpath:'%s/jalen-agent/libjalen.so'=out='%s/"
                         "jalen',quiet -cp '%s/jalen-agent/jalen-api.jar:%s' %s && "
                         "test -s '%s/jalen/scopes.csv'",
                         dir, e->bin, path, e->bin, dir, e->bin, dir, cls, dir),
                0);
            return cmd;
        }
        ck_assert_int_ge(asprintf(&cmd,
                                  "javac -d '%s' -cp '%s/bindings/java/powerapi.jar' '%s' && "
                                  "java -cp '%s/bindings/java/powerapi.jar:%s' %s",
                                  dir, e->bin, path, e->bin, dir, cls),
                         0);
    } else if (!strcmp(b->lang, "json")) {
        if (!e->have_python3) {
            *why = "no python3 to parse the sample";
            return NULL;
        }
        snprintf(path, sizeof path, "%s/sample.json", dir);
        write_file(path, b->text);
        char py[PATH_MAX];
        snprintf(py, sizeof py, "%s/check.py", dir);
        write_file(py, json_check_py);
        ck_assert_int_ge(asprintf(&cmd,
                                  "powerapi monitor --all --count 1 --interval 300ms "
                                  "--format json > '%s/real.jsonl' && python3 '%s' '%s' "
                                  "'%s/real.jsonl'",
                                  dir, py, path, dir),
                         0);
    }
    return cmd;
}

static bool is_shell(const char *lang)
{
    return !strcmp(lang, "sh") || !strcmp(lang, "bash") || !strcmp(lang, "console") ||
           !strcmp(lang, "shell");
}

static bool is_run(const char *lang)
{
    return is_shell(lang) || !strcmp(lang, "c") || !strcmp(lang, "python") || !strcmp(lang, "py") ||
           !strcmp(lang, "java") || !strcmp(lang, "json");
}

/* Private /dev/shm and loopback for this process and its children. */
static int isolate(char *why, size_t len)
{
    if (unshare(CLONE_NEWNS | CLONE_NEWNET) < 0) {
        snprintf(why, len, "unshare: %s", strerror(errno));
        return -1;
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0) {
        snprintf(why, len, "mount: %s", strerror(errno));
        return -1;
    }
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    int rc = s < 0 ? -1 : ioctl(s, SIOCGIFFLAGS, &ifr);
    if (rc == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        rc = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    if (s >= 0)
        close(s);
    if (rc < 0) {
        snprintf(why, len, "loopback up: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* Runs one block in this (child) process; the verdict goes to r. */
static void run_block(const env *e, const block *b, const char *dir, result *r)
{
    char why[256] = "";
    bool shell = is_shell(b->lang);
    if ((shell || b->daemon) && !e->isolated) {
        fprintf(r->log, "SKIP needs private mount and network namespaces: "
                        "run the test as root, where unshare(2) is allowed\n");
        return;
    }
    if (e->isolated && isolate(why, sizeof why) < 0) {
        block_fail(r, "%s:%d: cannot make private namespaces: %s", b->file, b->line, why);
        return;
    }
    if (chdir(e->work) < 0) {
        block_fail(r, "chdir %s: %s", e->work, strerror(errno));
        return;
    }
    proc daemon;
    bool have_daemon = false;
    if (b->daemon) {
        if (proc_start(&daemon, "powerapi daemon --interval 200ms") < 0) {
            block_fail(r, "%s:%d: cannot start the daemon", b->file, b->line);
            return;
        }
        have_daemon = true;
        /* published: the ring exists and a window is in it */
        for (int i = 0; i < 50; i++) {
            proc_poll(&daemon);
            if (daemon.exited || access("/dev/shm/powerapi", R_OK) == 0)
                break;
            usleep(100000);
        }
        usleep(600000);
        proc_poll(&daemon);
        if (daemon.exited) {
            block_fail(r, "%s:%d: the example's daemon exited (%d):\n%s", b->file, b->line,
                       daemon.status, tail(&daemon));
            proc_free(&daemon);
            return;
        }
    }
    if (shell) {
        char **cmds;
        size_t n = command_lines(b, &cmds);
        run_commands(r, b, cmds, n, b->timeout_s ? b->timeout_s : DEFAULT_CMD_S);
        for (size_t i = 0; i < n; i++)
            free(cmds[i]);
        free(cmds);
    } else {
        const char *skip = NULL;
        char *cmd = program_command(e, b, dir, &skip);
        if (!cmd) {
            fprintf(r->log, "SKIP %s\n", skip);
        } else {
            proc p;
            int secs = b->timeout_s ? b->timeout_s : DEFAULT_PROGRAM_S;
            if (proc_start(&p, cmd) < 0) {
                block_fail(r, "%s:%d: cannot start `%s`", b->file, b->line, cmd);
            } else if (!proc_wait(&p, secs, NULL, 0)) {
                proc_kill(&p);
                block_fail(r, "%s:%d: `%s` did not finish in %d s; output ends:\n%s", b->file,
                           b->line, cmd, secs, tail(&p));
            } else if (p.status != 0) {
                block_fail(r, "%s:%d: `%s` failed with status %d; output ends:\n%s", b->file,
                           b->line, cmd, p.status, tail(&p));
            } else if (!strcmp(b->lang, "json")) {
                fprintf(r->log, "  %s", tail(&p));
            }
            proc_free(&p);
            free(cmd);
        }
    }
    if (have_daemon) {
        stop_all(r, b, &daemon, 1);
        proc_free(&daemon);
    }
}

/* ------------------------------------------------------------------ */
/* The whole run                                                       */
/* ------------------------------------------------------------------ */

typedef struct summary {
    int ran, skipped, xfailed, failed;
    char env[512]; /* names README.md's env block set, "PATH POWERAPI_..." */
    char *report;  /* every block, one line each, plus failures */
    size_t len;
} summary;

static void say(summary *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(summary *s, const char *fmt, ...)
{
    char *m;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&m, fmt, ap);
    va_end(ap);
    ck_assert_int_ge(n, 0);
    s->report = realloc(s->report, s->len + (size_t)n + 1);
    ck_assert_ptr_nonnull(s->report);
    memcpy(s->report + s->len, m, (size_t)n + 1);
    s->len += (size_t)n;
    free(m);
}

/* app.jar for the agent examples: a Main that burns half a second. */
static void make_app_jar(const env *e)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/.app", e->work);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/Main.java", dir);
    write_file(path, "public class Main {\n"
                     "    public static void main(String[] args) {\n"
                     "        long end = System.nanoTime() + 500_000_000L;\n"
                     "        double x = 0;\n"
                     "        while (System.nanoTime() < end)\n"
                     "            x += Math.sqrt(x + 1);\n"
                     "        System.out.println(\"app.jar: done \" + (x > 0));\n"
                     "    }\n"
                     "}\n");
    char *cmd;
    ck_assert_int_ge(asprintf(&cmd,
                              "cd '%s' && javac Main.java && jar cfe '%s/app.jar' "
                              "Main Main.class",
                              dir, e->work),
                     0);
    char *out = NULL;
    int rc = pa_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "building app.jar failed (%d): %s", rc, out ? out : "");
    free(out);
    free(cmd);
}

/* The examples' working folder: the source tree's top entries as links,
 * and "build" for the build tree. */
static void make_work(env *e)
{
    char *w = pa_test_tmpdir();
    snprintf(e->work, sizeof e->work, "%s", w);
    free(w);
    DIR *d = opendir(e->src);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !strncmp(de->d_name, "build", 5))
            continue;
        char from[PATH_MAX * 2], to[PATH_MAX * 2];
        snprintf(from, sizeof from, "%s/%s", e->src, de->d_name);
        snprintf(to, sizeof to, "%s/%s", e->work, de->d_name);
        ck_assert_int_eq(symlink(from, to), 0);
    }
    closedir(d);
    char to[PATH_MAX * 2];
    snprintf(to, sizeof to, "%s/build", e->work);
    ck_assert_int_eq(symlink(e->bin, to), 0);
}

/* Root, and allowed to make namespaces (a container may refuse). */
static bool can_isolate(void)
{
    if (geteuid() != 0)
        return false;
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        char why[256];
        _exit(isolate(why, sizeof why) == 0 ? 0 : 1);
    }
    int st;
    return waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void env_init(env *e, const char *src)
{
    memset(e, 0, sizeof *e);
    ck_assert_ptr_nonnull(realpath(src, e->src));
    ck_assert_ptr_nonnull(realpath(PA_SOURCE_TESTS "/..", e->proj));
    ck_assert_ptr_nonnull(realpath(PA_BINARY_DIR, e->bin));
    char p[PATH_MAX * 2];
    snprintf(p, sizeof p, "%s/bindings/python/powerapi/__init__.py", e->bin);
    e->have_python3 = system("python3 -c '' >/dev/null 2>&1") == 0;
    e->have_python = access(p, R_OK) == 0 && e->have_python3;
    snprintf(p, sizeof p, "%s/bindings/java/powerapi.jar", e->bin);
    e->have_java = access(p, R_OK) == 0 && system("javac -version >/dev/null 2>&1") == 0 &&
                   system("jar --version >/dev/null 2>&1") == 0;
    e->isolated = can_isolate();
    make_work(e);
    /* what every example sees */
    char *path;
    ck_assert_int_ge(asprintf(&path, "%s/cli:%s", e->bin, getenv("PATH")), 0);
    setenv("PATH", path, 1);
    free(path);
    /* the libraries' variables and where Python finds the binding come
     * from README.md's env block alone (apply_env): an example that needs
     * one the README does not give fails, as it would for a reader (issue
     * 43: `import powerapi` needed a PYTHONPATH the README did not give) */
    unsetenv("PYTHONPATH");
    unsetenv("POWERAPI_LIBRARY");
    unsetenv("POWERAPI_JNI_LIBRARY");
    setenv("TERM", "xterm", 1);
    unsetenv("JAVA_TOOL_OPTIONS");
}

/* Applies the "export NAME=VALUE" lines of the env blocks, evaluated by
 * bash in the examples' folder (the build tree is its "build"), to this
 * process: every example inherits them.  The names README.md sets go to
 * s->env. */
static void apply_env(const env *e, const blocks *b, summary *s)
{
    for (size_t i = 0; i < b->n; i++) {
        const block *k = &b->v[i];
        if (!k->env || k->skip[0])
            continue;
        char **cmds;
        size_t n = command_lines(k, &cmds);
        for (size_t c = 0; c < n; c++) {
            char name[128] = "";
            if (sscanf(cmds[c], "export %127[A-Za-z0-9_]=", name) != 1) {
                say(s,
                    "  FAILED    %s:%d: env block line is not 'export "
                    "NAME=VALUE': %s\n",
                    k->file, k->line, cmds[c]);
                s->failed++;
            } else {
                char *cmd, *val = NULL;
                ck_assert_int_ge(asprintf(&cmd,
                                          "cd '%s' || exit 1\n%s\n"
                                          "printf '%%s' \"$%s\"",
                                          e->work, cmds[c], name),
                                 0);
                int rc = pa_test_run(cmd, &val);
                ck_assert_msg(rc == 0 && val, "%s:%d: `%s` failed (%d)", k->file, k->line, cmds[c],
                              rc);
                setenv(name, val, 1);
                if (!strcmp(k->file, "README.md") &&
                    strlen(s->env) + strlen(name) + 3 < sizeof(s->env)) {
                    if (!s->env[0])
                        strcat(s->env, " ");
                    strcat(s->env, name);
                    strcat(s->env, " ");
                }
                free(val);
                free(cmd);
            }
            free(cmds[c]);
        }
        free(cmds);
    }
}

/* Runs every block of the READMEs under src; the report lists each. */
static void run_all(const char *src, summary *s)
{
    memset(s, 0, sizeof *s);
    env e;
    env_init(&e, src);
    blocks b = {0};
    find_readmes(&b, e.src, "");
    if (b.errors) {
        say(s, "%s", b.errors);
        s->failed++;
    }
    apply_env(&e, &b, s);
    bool want_jar = false;
    for (size_t i = 0; i < b.n; i++)
        want_jar |=
            is_run(b.v[i].lang) && !b.v[i].skip[0] && strstr(b.v[i].text, "app.jar") != NULL;
    if (want_jar && e.have_java)
        make_app_jar(&e);

    /* the longest first (a guess: commands x their time), so that the
     * last to start is not the one that makes everyone wait */
    size_t *order = calloc(b.n + 1, sizeof *order);
    double *cost = calloc(b.n + 1, sizeof *cost);
    ck_assert(order && cost);
    for (size_t i = 0; i < b.n; i++) {
        order[i] = i;
        if (is_shell(b.v[i].lang)) {
            char **cmds;
            size_t n = command_lines(&b.v[i], &cmds);
            for (size_t k = 0; k < n; k++)
                free(cmds[k]);
            free(cmds);
            cost[i] = (double)n * (b.v[i].timeout_s ? b.v[i].timeout_s : DEFAULT_CMD_S);
        } else {
            cost[i] = 5;
        }
    }
    for (size_t i = 1; i < b.n; i++) /* stable insertion sort, by cost */
        for (size_t k = i; k > 0 && cost[order[k]] > cost[order[k - 1]]; k--) {
            size_t t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }

    /* up to PARALLEL blocks at once, each in a child with its own folder */
    pid_t *pid = calloc(b.n + 1, sizeof *pid);
    double *took = calloc(b.n + 1, sizeof *took);
    ck_assert(pid && took);
    size_t next = 0, running = 0;
    while (next < b.n || running) {
        if (next < b.n && running < PARALLEL) {
            size_t bi = order[next];
            block *k = &b.v[bi];
            if (!is_run(k->lang) || k->skip[0]) {
                next++;
                continue;
            }
            char dir[PATH_MAX + 32];
            snprintf(dir, sizeof dir, "%s/.block%zu", e.work, bi);
            ck_assert_int_eq(mkdir(dir, 0755), 0);
            fflush(NULL);
            pid_t c = fork();
            ck_assert_int_ge(c, 0);
            if (c == 0) {
                char log[PATH_MAX + 64];
                snprintf(log, sizeof log, "%s/log", dir);
                result r = {.log = fopen(log, "w")};
                if (!r.log)
                    _exit(3);
                run_block(&e, k, dir, &r);
                fclose(r.log);
                _exit(r.failed ? 1 : 0);
            }
            took[bi] = now_s();
            pid[bi] = c;
            next++;
            running++;
            continue;
        }
        int st;
        pid_t c = wait(&st);
        if (c < 0)
            break;
        for (size_t i = 0; i < b.n; i++)
            if (pid[i] == c) {
                pid[i] = -(WIFEXITED(st) ? WEXITSTATUS(st) : 100) - 1;
                took[i] = now_s() - took[i];
                running--;
            }
    }
    for (size_t i = 0; i < b.n; i++) {
        block *k = &b.v[i];
        const char *where = k->file;
        if (!is_run(k->lang)) {
            say(s, "  not run   %s:%d (```%s: shown, not run)\n", where, k->line, k->lang);
            continue;
        }
        if (k->skip[0]) {
            s->skipped++;
            say(s, "  skipped   %s:%d %s: %s\n", where, k->line, k->lang, k->skip);
            continue;
        }
        int code = -pid[i] - 1;
        char logp[PATH_MAX + 64];
        snprintf(logp, sizeof logp, "%s/.block%zu/log", e.work, i);
        char *log = pa_test_slurp(logp);
        bool env_skip = log && !strncmp(log, "SKIP ", 5);
        if (env_skip) {
            s->skipped++;
            say(s, "  skipped   %s:%d %s: %s", where, k->line, k->lang, log + 5);
        } else if (k->xfail[0]) {
            if (code == 0) {
                s->failed++;
                say(s,
                    "  FAILED    %s:%d %s: marked xfail (%s) but it passes now: "
                    "remove the marker\n",
                    where, k->line, k->lang, k->xfail);
            } else {
                s->xfailed++;
                say(s, "  xfail     %s:%d %s: fails as expected (%s)\n%s", where, k->line, k->lang,
                    k->xfail, log ? log : "");
            }
        } else if (code == 0) {
            s->ran++;
            say(s, "  ok        %s:%d %s%s (%.1f s)\n%s", where, k->line, k->lang,
                k->daemon ? ", with a daemon" : "", took[i], log ? log : "");
        } else {
            s->failed++;
            say(s, "  FAILED    %s:%d %s\n%s\n", where, k->line, k->lang, log ? log : "(no log)");
        }
        free(log);
    }
    free(pid);
    free(took);
    free(order);
    free(cost);
    blocks_free(&b);
    char *w = strdup(e.work);
    pa_test_rmtree(w);
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

START_TEST(test_readme_examples_run)
{
#ifdef PA_SANITIZE_BUILD
    /* the agent and the bindings are not built here, and Python and the
     * JVM cannot load sanitized libraries: the plain build runs these */
    printf("test_examples: skipped in the sanitizer build\n");
    return;
#endif
    double t0 = now_s();
    summary s;
    run_all(PA_SOURCE_TESTS "/..", &s);
    printf("README examples: %d ran, %d skipped, %d expected failures, %d "
           "failed (%.1f s)\n%s",
           s.ran, s.skipped, s.xfailed, s.failed, now_s() - t0, s.report ? s.report : "");
    fflush(stdout);
    ck_assert_msg(s.failed == 0, "%d README example(s) failed:\n%s", s.failed,
                  s.report ? s.report : "");
    /* README.md says, before its examples, where ./run.sh left the
     * command and the bindings' libraries (issue 31 item 10) */
    const char *names[3] = {" PATH ", " POWERAPI_LIBRARY ", " POWERAPI_JNI_LIBRARY "};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(strstr(s.env, names[i]), "README.md's env block does not set%s(it sets:%s)",
                      names[i], s.env);
    ck_assert_msg(s.ran > 0, "no README example ran");
    free(s.report);
}
END_TEST

/* The machinery itself, on a temporary tree whose README has a working
 * example and then a broken one. */
START_TEST(test_broken_example_fails)
{
#ifdef PA_SANITIZE_BUILD
    return;
#endif
    if (!can_isolate()) {
        printf("test_broken_example_fails: skipped: the shell examples need "
               "private namespaces (root)\n");
        return;
    }
    char *dir = pa_test_tmpdir();
    pa_test_write(dir, "README.md",
                  "# t\n\n```sh\npowerapi modules\n```\n\n"
                  "<!-- example: skip: needs RAPL hardware -->\n"
                  "```sh\npowerapi monitor --formula rapl-share --count 1\n```\n\n"
                  "```json\n{\"type\":\"system\",\"power_w\":{\"cpu\":1}}\n```\n\n"
                  "```c\n#include <powerapi.h>\n#include <stdio.h>\n"
                  "puts(pa_version());\n```\n");
    summary s;
    run_all(dir, &s);
    ck_assert_msg(s.failed == 0 && s.ran == 3 && s.skipped == 1,
                  "the working README: %d ran, %d skipped, %d failed:\n%s", s.ran, s.skipped,
                  s.failed, s.report);
    ck_assert_ptr_nonnull(strstr(s.report, "skipped   README.md:8 sh: needs RAPL hardware"));
    free(s.report);

    /* a changed option, a wrong key in a sample, code that does not compile,
     * a stale xfail, an unknown marker, and (with the agent and a JDK) a
     * misspelt agent option: each fails, named by file and line */
    char agent[PATH_MAX];
    snprintf(agent, sizeof agent, "%s/jalen-agent/libjalen.so", PA_BINARY_DIR);
    bool java = access(agent, R_OK) == 0 && system("javac -version >/dev/null 2>&1") == 0 &&
                system("jar --version >/dev/null 2>&1") == 0;
    pa_test_write(dir, "README.md",
                  "# t\n\n```sh\npowerapi modules --verbose-please\n```\n\n"
                  "```json\n{\"type\":\"system\",\"power_w\":{\"gpu\":1}}\n```\n\n"
                  "```c\n#include <powerapi.h>\nputs(pa_version_string());\n```\n\n"
                  "<!-- example: xfail: not broken at all -->\n"
                  "```sh\ntrue\n```\n\n"
                  "<!-- example: sometimes -->\n```sh\ntrue\n```\n\n%s",
                  java ? "<!-- example: timeout=30 -->\n```sh\njava "
                         "-agentpath:build/jalen-agent/libjalen.so=intervall=5ms "
                         "-jar app.jar\n```\n"
                       : "");
    run_all(dir, &s);
    ck_assert_msg(s.failed == 5 + java, "%d failures, %d expected:\n%s", s.failed, 5 + java,
                  s.report);
    if (java)
        ck_assert_msg(strstr(s.report, "README.md:27 sh") &&
                          strstr(s.report, "refused its options"),
                      "a bad agent option passed:\n%s", s.report);
    const char *want[] = {"FAILED    README.md:3 sh",
                          "--verbose-please",
                          "FAILED    README.md:7 json",
                          "power_w.gpu",
                          "FAILED    README.md:11 c",
                          "README.md:17 sh: marked xfail",
                          "README.md:21: unknown example marker 'sometimes'"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(s.report, want[i]), "\"%s\" not reported:\n%s", want[i], s.report);
    free(s.report);
    pa_test_rmtree(dir);
}
END_TEST

static Suite *examples_suite(void)
{
    Suite *s = suite_create("examples");
    TCase *tc = tcase_create("readmes");
    tcase_set_timeout(tc, 280);
    tcase_add_test(tc, test_broken_example_fails);
    tcase_add_test(tc, test_readme_examples_run);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(examples_suite());
}
