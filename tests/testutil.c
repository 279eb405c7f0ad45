/* testutil.c - fixture copies, explicit clocks, command runs. */
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

char *pa_test_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *tmpl;
    if (asprintf(&tmpl, "%s/pa-test-XXXXXX", base && *base ? base : "/tmp") < 0)
        ck_abort_msg("out of memory");
    if (!mkdtemp(tmpl))
        ck_abort_msg("mkdtemp: %s", strerror(errno));
    return tmpl;
}

char *pa_test_fixture_copy(const char *name)
{
    char *dir = pa_test_tmpdir();
    char *cmd;
    if (asprintf(&cmd, "cp -a '%s/%s/.' '%s/'", PA_FIXTURES, name, dir) < 0)
        ck_abort_msg("out of memory");
    int rc = system(cmd);
    ck_assert_msg(rc == 0, "copying fixture %s failed", name);
    free(cmd);
    return dir;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    /* fixtures may drop permissions to test EACCES: restore them first;
     * never through a symbolic link, whose target is not ours */
    if (flag != FTW_SL)
        chmod(p, 0700);
    return remove(p);
}

void pa_test_rmtree(char *path)
{
    if (!path)
        return;
    if (strncmp(path, "/", 1) == 0 && strlen(path) > 5)
        nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
    free(path);
}

static void mkdirs(char *path)
{
    for (char *s = path + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(path, 0755);
            *s = '/';
        }
}

void pa_test_write(const char *root, const char *rel, const char *fmt, ...)
{
    char *path;
    if (asprintf(&path, "%s/%s", root, rel) < 0)
        ck_abort_msg("out of memory");
    mkdirs(path);
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
    free(path);
}

void pa_test_remove(const char *root, const char *rel)
{
    char *path;
    if (asprintf(&path, "%s/%s", root, rel) < 0)
        ck_abort_msg("out of memory");
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
        nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
    else
        remove(path);
    free(path);
}

pa_ctx *pa_test_ctx(const char *root)
{
    char proc[4096], sys[4096], dev[4096];
    snprintf(proc, sizeof(proc), "%s/proc", root);
    snprintf(sys, sizeof(sys), "%s/sys", root);
    snprintf(dev, sizeof(dev), "%s/dev", root);
    mkdir(sys, 0755);
    mkdir(dev, 0755);
    pa_ctx_opts o = {.procfs = proc, .sysfs = sys, .devfs = dev, .hwdb = PA_TEST_HWDB};
    pa_ctx *ctx = NULL;
    int rc = pa_ctx_new(&ctx, &o);
    ck_assert_msg(rc == 0, "pa_ctx_new(%s): %s", root, pa_last_error());
    return ctx;
}

int pa_test_run(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "popen %s", cmd);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    ck_assert(buf != NULL);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (cap - n < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert(buf != NULL);
        }
    }
    buf[n] = '\0';
    int st = pclose(p);
    if (out)
        *out = buf;
    else
        free(buf);
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

char *pa_test_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

const pa_target_info *pa_test_target(const pa_report *r, pa_target_type type, pid_t id)
{
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *t = &r->targets[i];
        if (t->type != type)
            continue;
        if ((type == PA_TARGET_THREAD ? t->tid : t->pid) == id)
            return t;
    }
    return NULL;
}

int pa_test_main(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

void pa_test_cli_free(pa_test_cli_run *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof(*r));
}

void pa_test_cli(pa_test_cli_run *r, char *const *args)
{
    char *dir = pa_test_tmpdir();
    char outp[4096], errp[4096];
    snprintf(outp, sizeof(outp), "%s/out", dir);
    snprintf(errp, sizeof(errp), "%s/err", dir);
    size_t n = 0;
    while (args[n])
        n++;
    char **argv = calloc(n + 2, sizeof(char *));
    ck_assert(argv != NULL);
    argv[0] = (char *)CLI_PATH;
    memcpy(argv + 1, args, n * sizeof(char *));
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int in = open("/dev/null", O_RDONLY);
        if (o < 0 || e < 0 || in < 0)
            _exit(126);
        dup2(in, 0);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ck_assert_int_eq(errno, EINTR);
    memset(r, 0, sizeof(*r));
    r->signaled = WIFSIGNALED(st);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->out = pa_test_slurp(outp);
    r->err = pa_test_slurp(errp);
    ck_assert(r->out && r->err);
    free(argv);
    pa_test_rmtree(dir);
}

unsigned pa_test_free_port(void)
{
    /* The port stays bound, with SO_REUSEADDR and no listen(), until this
     * program exits: a connection to it is refused, no other socket of the
     * machine is given it (bind to port 0, a client's port), and a server
     * that binds it with SO_REUSEADDR (Python's http.server, libmicrohttpd,
     * Go's net.Listen) gets it.  A port merely found free and closed was
     * given meanwhile to a receiver started next (fc19: the refused case of
     * test_live_otlp reached the 401 receiver). */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

pid_t pa_test_qemu_spin(const char *dir, const char *name, const char *uuid,
                        const char *const *extra)
{
    char fw[4096], guest[160];
    snprintf(fw, sizeof(fw), "%s/spin.bin", dir);
    static unsigned char rom[65536];
    rom[sizeof(rom) - 16] = 0xeb; /* at the reset vector: jmp $ */
    rom[sizeof(rom) - 15] = 0xfe;
    FILE *f = fopen(fw, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(rom, 1, sizeof(rom), f), sizeof(rom));
    ck_assert_int_eq(fclose(f), 0);
    snprintf(guest, sizeof(guest), "guest=%s,debug-threads=on", name);
    const char *argv[64] = {
        "qemu-system-x86_64", "-accel",   "tcg",  "-name", guest, "-smp", "1", "-m", "16",
        "-nodefaults",        "-display", "none", "-bios", fw};
    size_t n = 14;
    if (uuid) {
        argv[n++] = "-uuid";
        argv[n++] = uuid;
    }
    for (size_t i = 0; extra && extra[i] && n < 63; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failed test */
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}
