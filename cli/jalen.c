/*
 * jalen.c - `powerapi jalen PID start|dump|stop|status`: the jalen agent
 * in a JVM that runs already, without a restart.
 *
 * HotSpot's attach mechanism (the one `jcmd` uses): a JVM that finds the
 * file .attach_pid<PID> in its working folder or /tmp when it gets
 * SIGQUIT opens the socket /tmp/.java_pid<PID>, which accepts a request
 * from a process of its own user: "1\0load\0LIBRARY\0true\0OPTIONS\0" (true: LIBRARY is a path).
 * It loads the library (once; later requests find it loaded) and calls
 * its Agent_OnAttach with OPTIONS, then answers "0\n" (the request was
 * taken) and "return code: N" (what Agent_OnAttach returned).  The agent's
 * own answer comes through a file named in OPTIONS (reply=), which this
 * command prints (jalen-agent/src/attach.c).
 *
 * Everything that can be said before touching the JVM is checked first,
 * SIGQUIT above all: a process that is not a JVM dies of it.
 */
#include "cli.h"
#include "profout.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CMD "jalen"

typedef struct jalen_args {
    const char *agent;            /* --agent */
    const char *out;              /* -o/--output (start) */
    uint64_t timeout_ns;          /* --timeout: for the JVM's attach socket */
    unsigned long repeat, warmup; /* --repeat N -- java ... (issue 44) */
    const char *agent_opts;       /* --agent-options, with --repeat */
} jalen_args;

static const cli_opt jalen_opts[] = {
    CLI_OPT_STRING('o', "output", NULL, "DIR",
                   "start: the folder of the files (out= of the agent);\n"
                   "default ./jalen-PID, made absolute here"),
    CLI_OPT_STRING(0, "agent", NULL, "FILE",
                   "the agent library (libjalen.so); default: where it\n"
                   "installs, else this program's build tree"),
    CLI_OPT_DURATION(0, "timeout", NULL,
                     "how long the JVM may take to open its attach socket\n"
                     "(default 10s)",
                     1000000ull, 600000000000ull),
    CLI_OPT_UINT(0, "repeat", NULL, "N",
                 "instead of a PID: run `-- java ARGS...` N times under\n"
                 "the agent, into DIR/run-1..N (-o, default\n"
                 "jalen-repeat), then DIR/repeat.csv and summary.json\n"
                 "(each method's mean, spread, 95 % interval)",
                 1, 1000),
    CLI_OPT_UINT(0, "warmup", NULL, "N", "with --repeat: N runs without the agent first", 0, 1000),
    CLI_OPT_STRING(0, "agent-options", NULL, "OPTS",
                   "with --repeat: more of the agent's options\n"
                   "(interval=1ms,filter=com.acme.)"),
    CLI_OPT_END,
};

/* ---- what can be known of the target before attaching ---- */

/* Reads /proc/PID/name (at most len-1 bytes, NUL-terminated); -errno. */
static ssize_t proc_read(pid_t pid, const char *name, char *buf, size_t len)
{
    char p[64];
    snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, name);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && (r = read(fd, buf + n, len - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

static void proc_comm(pid_t pid, char *out, size_t len)
{
    if (proc_read(pid, "comm", out, len) <= 0)
        snprintf(out, len, "?");
    out[strcspn(out, "\n")] = '\0';
}

/* Whether the NUL-separated words of buf[0..n) turn the attach mechanism
 * off (the last of -XX:+/-DisableAttachMechanism wins); env_only: only in
 * the JVM's option variables. */
static int attach_disabled_in(const char *buf, size_t n, int env_only)
{
    int off = 0;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
        const char *w = buf + i;
        if (env_only && strncmp(w, "JAVA_TOOL_OPTIONS=", 18) &&
            strncmp(w, "JDK_JAVA_OPTIONS=", 17) && strncmp(w, "_JAVA_OPTIONS=", 14))
            continue;
        for (const char *p = w; (p = strstr(p, "DisableAttachMechanism")); p++)
            if (p - w >= 5 && !strncmp(p - 5, "-XX:", 4))
                off = p[-1] == '+';
    }
    return off;
}

/* 0 when pid is a JVM of a user we may attach to, that accepts attach;
 * otherwise the one line that says why, printed, and CLI_EXIT_FAIL. */
static int check_target(pid_t pid, uid_t *uid)
{
    struct stat st;
    char p[64], comm[64];
    snprintf(p, sizeof(p), "/proc/%d", (int)pid);
    if (stat(p, &st) < 0) {
        cli_error(CMD, "no process %d", (int)pid);
        return CLI_EXIT_FAIL;
    }
    *uid = st.st_uid;
    proc_comm(pid, comm, sizeof(comm));
    if (geteuid() != 0 && st.st_uid != geteuid()) {
        struct passwd *pw = getpwuid(st.st_uid);
        cli_error(CMD,
                  "pid %d (%s) runs as user %s: a JVM accepts attach from its own user "
                  "only; run this as that user (sudo -u %s %s jalen %d ...)",
                  (int)pid, comm, pw ? pw->pw_name : "?", pw ? pw->pw_name : "USER", cli_prog,
                  (int)pid);
        return CLI_EXIT_FAIL;
    }
    static char buf[1 << 20];
    ssize_t n = proc_read(pid, "maps", buf, sizeof(buf));
    if (n < 0) {
        cli_error(CMD, "cannot read /proc/%d/maps: %s", (int)pid, strerror((int)-n));
        return CLI_EXIT_FAIL;
    }
    if (!strstr(buf, "/libjvm.so")) {
        cli_error(CMD,
                  "pid %d (%s) is not a Java virtual machine (no libjvm.so in its "
                  "memory map)",
                  (int)pid, comm);
        return CLI_EXIT_FAIL;
    }
    int off = 0;
    if ((n = proc_read(pid, "cmdline", buf, sizeof(buf))) > 0)
        off = attach_disabled_in(buf, (size_t)n, 0);
    if (!off && (n = proc_read(pid, "environ", buf, sizeof(buf))) > 0)
        off = attach_disabled_in(buf, (size_t)n, 1);
    if (off) {
        cli_error(CMD,
                  "pid %d (%s) was started with -XX:+DisableAttachMechanism: it accepts no "
                  "attach; start it without that flag, or load jalen at launch "
                  "(-agentpath:.../libjalen.so)",
                  (int)pid, comm);
        return CLI_EXIT_FAIL;
    }
    struct stat a, b;
    snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)pid);
    if (stat(p, &a) == 0 && stat("/proc/self/ns/mnt", &b) == 0 && a.st_ino != b.st_ino) {
        cli_error(CMD,
                  "pid %d (%s) runs in another mount namespace (a container): attaching "
                  "there is not supported; load jalen at launch inside it",
                  (int)pid, comm);
        return CLI_EXIT_FAIL;
    }
    return 0;
}

/* The agent library: --agent, else where it installs beside this
 * program (its prefix's PA_AGENT_INSTALL_DIR, a relocated copy too), else
 * the build tree's, else the absolute install path of this build. */
static int find_agent(const char *given, char *out, size_t len)
{
    if (given) {
        if (!realpath(given, out) || access(out, R_OK) < 0) {
            cli_error(CMD, "--agent %s: %s", given, strerror(errno));
            return CLI_EXIT_USAGE;
        }
        return 0;
    }
    (void)len;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        static const char *const rel[] = {PA_AGENT_INSTALLED_REL, "../jalen-agent/libjalen.so"};
        for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
            char c[PATH_MAX + 256];
            snprintf(c, sizeof(c), "%s/%s", exe, rel[i]);
            if (realpath(c, out) && access(out, R_OK) == 0)
                return 0;
        }
    }
    if (realpath(PA_AGENT_INSTALLED, out) && access(out, R_OK) == 0)
        return 0;
    cli_error(CMD,
              "the agent library libjalen.so is neither where it installs (%s) nor in the "
              "build tree beside %s; install the jalen-agent package or name it with --agent "
              "FILE",
              PA_AGENT_INSTALLED, cli_prog);
    return CLI_EXIT_FAIL;
}

/* ---- the attach exchange ---- */

/* The pid as the JVM knows it (its own PID namespace: NSpid's last). */
static pid_t ns_pid(pid_t pid)
{
    char buf[4096];
    if (proc_read(pid, "status", buf, sizeof(buf)) <= 0)
        return pid;
    char *l = strstr(buf, "\nNSpid:");
    if (!l)
        return pid;
    l += 7;
    pid_t last = pid;
    char *end;
    for (long v; (v = strtol(l, &end, 10)) > 0 && end != l; l = end)
        last = (pid_t)v;
    return last;
}

static int is_socket(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Makes the JVM open its attach socket (path) if it has not yet: the
 * trigger file, SIGQUIT, a wait of up to timeout_ns. */
static int wake_jvm(pid_t pid, pid_t nspid, uid_t uid, const char *path, uint64_t timeout_ns)
{
    if (is_socket(path))
        return 0;
    char trig[128];
    snprintf(trig, sizeof(trig), "/proc/%d/cwd/.attach_pid%d", (int)pid, (int)nspid);
    int fd = open(trig, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(trig, sizeof(trig), "/proc/%d/root/tmp/.attach_pid%d", (int)pid, (int)nspid);
        fd = open(trig, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    }
    if (fd < 0) {
        cli_error(CMD, "cannot make the attach trigger file %s: %s", trig, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (geteuid() == 0 && fchown(fd, uid, (gid_t)-1) < 0) {
        /* the JVM checks the file's owner; best effort */
    }
    close(fd);
    int rc = 0;
    if (kill(pid, SIGQUIT) < 0) {
        cli_error(CMD, "cannot signal pid %d: %s", (int)pid, strerror(errno));
        rc = CLI_EXIT_FAIL;
    }
    uint64_t end = cli_mono_ns() + timeout_ns;
    while (!rc && !is_socket(path) && cli_mono_ns() < end) {
        struct timespec ts = {0, 20000000L};
        nanosleep(&ts, NULL);
    }
    unlink(trig);
    if (!rc && !is_socket(path)) {
        cli_error(CMD,
                  "pid %d did not open its attach socket within %.0f s (%s): the JVM "
                  "is busy or stopped, or it does not accept attach",
                  (int)pid, (double)timeout_ns * 1e-9, path);
        rc = CLI_EXIT_FAIL;
    }
    return rc;
}

/* Sends the load request; *code gets Agent_OnAttach's return.  The JVM's
 * answer text, if any, goes to msg. */
static int attach_load(pid_t pid, uid_t uid, const char *path, const char *agent, const char *opts,
                       int *code, char *msg, size_t msglen)
{
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        if (s >= 0)
            close(s);
        cli_error(CMD, "the attach socket's path is too long: %s", path);
        return CLI_EXIT_FAIL;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    /* the JVM takes requests from its own user: root becomes that user
     * for the connection */
    uid_t was = geteuid();
    if (was == 0 && uid != 0 && seteuid(uid) < 0)
        was = (uid_t)-1;
    int c = s >= 0 ? connect(s, (struct sockaddr *)&sa, sizeof(sa)) : -1;
    int cerr = errno;
    if (was == 0 && uid != 0 && seteuid(0) < 0) {
        /* cannot happen for root */
    }
    if (c < 0) {
        if (s >= 0)
            close(s);
        cli_error(CMD, "cannot connect to pid %d's attach socket %s: %s", (int)pid, path,
                  strerror(cerr));
        return CLI_EXIT_FAIL;
    }
    const char *parts[] = {"1", "load", agent, "true", opts};
    for (size_t i = 0; i < 5; i++) {
        size_t n = strlen(parts[i]) + 1;
        if (write(s, parts[i], n) != (ssize_t)n) {
            cli_error(CMD, "pid %d's attach socket: %s", (int)pid, strerror(errno));
            close(s);
            return CLI_EXIT_FAIL;
        }
    }
    char buf[4096];
    size_t n = 0;
    ssize_t r;
    while (n + 1 < sizeof(buf) && (r = read(s, buf + n, sizeof(buf) - 1 - n)) > 0)
        n += (size_t)r;
    close(s);
    buf[n] = '\0';
    /* "0\n" then "return code: N" (JDK 9 and later) or "N" */
    char *end;
    long status = strtol(buf, &end, 10);
    if (end == buf || status != 0) {
        buf[strcspn(buf, "\n")] = '\0';
        cli_error(CMD, "pid %d refused to load the agent: %s", (int)pid, n ? buf : "(no answer)");
        return CLI_EXIT_FAIL;
    }
    const char *rcs = strstr(end, "return code:");
    *code = (int)strtol(rcs ? rcs + 12 : end, NULL, 10);
    snprintf(msg, msglen, "%s", end + strspn(end, "\n"));
    return 0;
}

/* ---- the command ---- */

/* The agent's options for command verb: reply= first, then for start the
 * output folder (absolute: the JVM's working folder is not ours) and the
 * user's options. */
static int agent_options(const char *verb, const char *reply, const char *out, const char *user,
                         pid_t pid, char *buf, size_t len)
{
    int k = snprintf(buf, len, "%s,reply=%s", verb, reply);
    if (!strcmp(verb, "start")) {
        int has_out = user && (!strncmp(user, "out=", 4) || strstr(user, ",out="));
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)))
            snprintf(cwd, sizeof(cwd), "/tmp");
        if (out)
            k += snprintf(buf + k, len - (size_t)k, ",out=%s%s%s", out[0] == '/' ? "" : cwd,
                          out[0] == '/' ? "" : "/", out);
        else if (!has_out)
            k += snprintf(buf + k, len - (size_t)k, ",out=%s/jalen-%d", cwd, (int)pid);
        if (user && *user)
            k += snprintf(buf + k, len - (size_t)k, ",%s", user);
    } else if (!strcmp(verb, "trace")) {
        if (user && *user)
            k += snprintf(buf + k, len - (size_t)k, ",trace=%s", user);
    } else if (user && *user) {
        return cli_usage_error(CMD, "'%s' takes no agent options ('%s')", verb, user);
    }
    if ((size_t)k >= len)
        return cli_usage_error(CMD, "the agent options are too long");
    return 0;
}

/* Prints the agent's answer (the reply file) on stdout (0) or stderr. */
static void print_reply(const char *path, int failed)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof(line), f))
        fputs(line, failed ? stderr : stdout);
    fclose(f);
}

static const cli_cmd jalen_cmd = {
    .name = CMD,
    .usage = "%s jalen PID start [OPTIONS] [AGENT_OPTIONS]\n"
             "       %s jalen PID dump|stop|status\n"
             "       %s jalen PID trace [PATTERN[;PATTERN...]]\n"
             "       %s jalen --repeat N [-o DIR] -- java ARGS...\n",
    .about = "\njalen in a JVM that runs already (the JDK's attach mechanism): start\n"
             "profiling it, write the files now (dump), end the run (stop: the files\n"
             "complete, the summary; the JVM goes on as before), or say what runs;\n"
             "trace: the methods traced become PATTERNS (none: tracing removed).\n"
             "AGENT_OPTIONS are the agent's launch-time options (interval=1ms,mode=cpu,...).\n\n",
    .footer = "Run it as the JVM's user.  The files are those of a launch-time run\n"
              "(jalen-agent/README.md; the agent's options: jalen(7)).\n",
    .opts = jalen_opts,
    .operands = 1,
};

static int jalen_run(pid_t pid, const char *verb, const char *user, const jalen_args *a)
{
    uid_t uid = 0;
    char agent[PATH_MAX], opts[8192], reply[] = "/tmp/powerapi-jalen-XXXXXX";
    int rc = check_target(pid, &uid);
    if (rc || (rc = find_agent(a->agent, agent, sizeof(agent))))
        return rc;
    int fd = mkstemp(reply);
    if (fd < 0) {
        cli_error(CMD, "cannot make a file in /tmp: %s", strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (geteuid() == 0 && fchown(fd, uid, (gid_t)-1) < 0) {
        /* root's file stays writable for root's JVM only */
    }
    close(fd);
    rc = agent_options(verb, reply, a->out, user, pid, opts, sizeof(opts));
    char sock[128], msg[512] = "";
    pid_t nspid = ns_pid(pid);
    snprintf(sock, sizeof(sock), "/proc/%d/root/tmp/.java_pid%d", (int)pid, (int)nspid);
    int code = 0;
    if (!rc)
        rc = wake_jvm(pid, nspid, uid, sock, a->timeout_ns);
    if (!rc)
        rc = attach_load(pid, uid, sock, agent, opts, &code, msg, sizeof(msg));
    if (!rc) {
        struct stat st;
        if (stat(reply, &st) == 0 && st.st_size == 0)
            cli_error(CMD,
                      "pid %d loaded %s but its Agent_OnAttach said nothing (%s): "
                      "is it jalen?",
                      (int)pid, agent, msg[0] ? msg : "no answer");
        print_reply(reply, code != 0);
        rc = code == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    unlink(reply);
    return rc;
}

/* --repeat N -- java ARGS...: the runs and their figures (profile_repeat.c) */
static int jalen_repeat(const jalen_args *a, char **cmd, int n)
{
    if (n < 1)
        return cli_usage_error(CMD, "--repeat needs a Java command: -- java ARGS...");
    char agent[PATH_MAX];
    int rc = find_agent(a->agent, agent, sizeof(agent));
    if (rc)
        return rc;
    const char *out = a->out ? a->out : "jalen-repeat";
    int err = pc_out_mkdirs(out, 0777);
    if (err < 0) {
        cli_error(CMD, "-o %s: %s", out, strerror(-err));
        return CLI_EXIT_FAIL;
    }
    cli_repeat r = {.cmd = cmd,
                    .out = out,
                    .repeat = a->repeat,
                    .warmup = a->warmup,
                    .agent = agent,
                    .agent_opts = a->agent_opts,
                    .cmd_name = CMD};
    return cli_profile_repeat(&r);
}

int cli_jalen(int argc, char **argv)
{
    jalen_args a = {.timeout_ns = 10000000000ull};
    cli_opt t[sizeof(jalen_opts) / sizeof(jalen_opts[0])];
    memcpy(t, jalen_opts, sizeof(t));
    t[0].value = &a.out;
    t[1].value = &a.agent;
    t[2].value = &a.timeout_ns;
    t[3].value = &a.repeat;
    t[4].value = &a.warmup;
    t[5].value = &a.agent_opts;
    cli_cmd c = jalen_cmd;
    c.opts = t;
    int first = 0, rc = cli_parse(&c, argc, argv, &first);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (a.repeat)
        return jalen_repeat(&a, argv + first, argc - first);
    if (argc - first < 2)
        return cli_usage_error(CMD, "needs a PID and a command (start, dump, stop, status)");
    char *end;
    long pid = strtol(argv[first], &end, 10);
    if (*end || pid <= 0 || pid > INT_MAX)
        return cli_usage_error(CMD, "'%s' is not a process id", argv[first]);
    const char *verb = argv[first + 1];
    if (strcmp(verb, "start") && strcmp(verb, "dump") && strcmp(verb, "stop") &&
        strcmp(verb, "status") && strcmp(verb, "trace"))
        return cli_usage_error(CMD, "unknown command '%s' (start, dump, stop, status or trace)",
                               verb);
    /* options may follow the command too */
    int rest = first + 1, more = 0;
    if (argc - rest > 1 && (rc = cli_parse(&c, argc - rest, argv + rest, &more)))
        return rc < 0 ? CLI_EXIT_OK : rc;
    int uarg = more ? rest + more : first + 2;
    if (argc - uarg > 1)
        return cli_extra_arg(CMD, argv[uarg + 1]);
    return jalen_run((pid_t)pid, verb, uarg < argc ? argv[uarg] : NULL, &a);
}
