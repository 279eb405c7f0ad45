/*
 * vm_vsock.c - the daemon's AF_VSOCK server of the guests' powerapi-vm
 * (DESIGN.md section 18.1): one connection, one answer, then closed; the
 * peer's CID says which VM.  A thread of its own polls the socket every
 * 200 ms so that it stops promptly.
 */
#include "vm_vsock.h"

#include <errno.h>
#include <linux/vm_sockets.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct cli_vsock {
    rp_vmexport *x;
    int fd;
    pthread_t thread;
    bool stop; /* atomic */
};

static void *serve(void *arg)
{
    cli_vsock *v = arg;
    while (!__atomic_load_n(&v->stop, __ATOMIC_ACQUIRE)) {
        struct pollfd p = {.fd = v->fd, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0)
            continue;
        struct sockaddr_vm peer;
        socklen_t len = sizeof(peer);
        int c = accept4(v->fd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        (void)rp_vmexport_send(v->x, c, peer.svm_cid); /* unknown CID: closed unanswered */
        close(c);
    }
    return NULL;
}

int cli_vsock_start(rp_vmexport *x, unsigned port, cli_vsock **out, char *why, size_t wl)
{
    int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_vm a = {.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = port};
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0) {
        int e = errno;
        snprintf(why, wl,
                 "--export-vsock %u: %s (the host needs the vhost_vsock module and a free "
                 "port)",
                 port, strerror(e));
        if (fd >= 0)
            close(fd);
        return -e;
    }
    cli_vsock *v = calloc(1, sizeof(*v));
    if (v) {
        v->x = x;
        v->fd = fd;
    }
    if (!v || pthread_create(&v->thread, NULL, serve, v) != 0) {
        free(v);
        close(fd);
        snprintf(why, wl, "--export-vsock %u: out of memory or threads", port);
        return -ENOMEM;
    }
    *out = v;
    return 0;
}

void cli_vsock_stop(cli_vsock *v)
{
    if (!v)
        return;
    __atomic_store_n(&v->stop, true, __ATOMIC_RELEASE);
    pthread_join(v->thread, NULL);
    close(v->fd);
    free(v);
}
