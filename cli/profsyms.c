/*
 * profsyms.c - what `powerapi profile` tells a user whose program's frames
 * are unnamed (issue 43 item 2): Debian strips its programs, so `sort`
 * profiles as "[unknown] sort+0x8850" until its debug symbols are there,
 * from the package that owns the file's -dbgsym companion or from a
 * debuginfod server (elfutils reads both, DEBUGINFOD_URLS); and the check
 * that such a server answers at all, so that one that does not never
 * stalls a run.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* The Debian package that owns path (dpkg-query -S), into pkg; 0, or -1
 * when none does or dpkg is not there. */
static int owning_package(const char *path, char *pkg, size_t len)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    pid_t c = fork();
    if (c < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (c == 0) {
        dup2(fds[1], 1);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 2);
        close(fds[0]);
        execlp("dpkg-query", "dpkg-query", "-S", "--", path, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[512];
    ssize_t n = 0, r;
    while (n < (ssize_t)sizeof(buf) - 1 && (r = read(fds[0], buf + n, sizeof(buf) - 1 - n)) > 0)
        n += r;
    close(fds[0]);
    int st = 0;
    waitpid(c, &st, 0);
    buf[n > 0 ? n : 0] = '\0';
    /* "coreutils: /usr/bin/sort" (a multi-arch one: "libc6:amd64: ...") */
    char *colon = strchr(buf, ':');
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !colon || colon == buf)
        return -1;
    *colon = '\0';
    if (strlen(buf) >= len)
        return -1;
    memcpy(pkg, buf, strlen(buf) + 1);
    return 0;
}

void cli_symbols_note(const char *path, double share, char *out, size_t len)
{
    out[0] = '\0';
    if (!path || !*path || share < 0.5)
        return;
    char pkg[128];
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (owning_package(path, pkg, sizeof(pkg)) == 0)
        snprintf(out, len,
                 "%.1f %% of the energy is on unnamed frames of %s, which has no symbols: "
                 "install %s-dbgsym (Debian's debug symbols, from the debian-debug archive), "
                 "or set DEBUGINFOD_URLS=https://debuginfod.debian.net, and profile again",
                 100 * share, base, pkg);
    else
        snprintf(out, len,
                 "%.1f %% of the energy is on unnamed frames of %s, which has no symbols: "
                 "install its debug symbols (under /usr/lib/debug/.build-id/), or set "
                 "DEBUGINFOD_URLS to a debuginfod server that has them, and profile again",
                 100 * share, path);
}

/* Does the server of url (http://HOST[:PORT]/...) answer a request within
 * ms?  1 yes, 0 no (said why in why). */
static int server_answers(const char *url, int ms, char *why, size_t len)
{
    char host[160], port[16] = "80";
    const char *p = url;
    bool tls = !strncmp(p, "https://", 8);
    if (tls) {
        p += 8;
        snprintf(port, sizeof(port), "443");
    } else if (!strncmp(p, "http://", 7)) {
        p += 7;
    }
    size_t h = strcspn(p, ":/");
    if (h == 0 || h >= 150) {
        snprintf(why, len, "not an http(s) URL");
        return 0;
    }
    memcpy(host, p, h);
    host[h] = '\0';
    if (p[h] == ':')
        snprintf(port, sizeof(port), "%.*s", (int)strcspn(p + h + 1, "/"), p + h + 1);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) {
        snprintf(why, len, "its host %.100s is not known", host);
        return 0;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int ok = 0;
    if (fd >= 0 && (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS)) {
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        int err = 0;
        socklen_t el = sizeof(err);
        if (poll(&pf, 1, ms) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && !err) {
            /* connected; over TLS that is all this check asks, in plain
             * HTTP the server must also answer a request */
            static const char req[] = "GET / HTTP/1.0\r\n\r\n";
            pf.events = POLLIN;
            char b;
            ok = tls || (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) > 0 &&
                         poll(&pf, 1, ms) == 1 && recv(fd, &b, 1, 0) >= 0);
            if (!ok)
                snprintf(why, len, "it accepted a connection but sent nothing in %d ms", ms);
        } else {
            snprintf(why, len, "no connection in %d ms (%s)", ms, strerror(err ? err : ETIMEDOUT));
        }
    } else {
        snprintf(why, len, "no connection (%s)", strerror(errno));
    }
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return ok;
}

void cli_debuginfod_check(const char *cmd, bool quiet)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (!urls || !*urls)
        return;
    /* a server that answers slowly: at most 10 s for each file (the
     * client's default is 90 s), unless the user chose */
    setenv("DEBUGINFOD_TIMEOUT", getenv("DEBUGINFOD_TIMEOUT") ? getenv("DEBUGINFOD_TIMEOUT") : "10",
           1);
    char *copy = strdup(urls), *save = NULL, keep[4096] = "";
    if (!copy)
        return;
    for (char *u = strtok_r(copy, " ", &save); u; u = strtok_r(NULL, " ", &save)) {
        char why[160];
        if (server_answers(u, 2000, why, sizeof(why))) {
            size_t l = strlen(keep);
            snprintf(keep + l, sizeof(keep) - l, "%s%s", l ? " " : "", u);
        } else if (!quiet) {
            fprintf(stderr, "%s: debuginfod server %s not used this run: %s\n", cmd, u, why);
        }
    }
    free(copy);
    if (keep[0])
        setenv("DEBUGINFOD_URLS", keep, 1);
    else
        unsetenv("DEBUGINFOD_URLS");
}
