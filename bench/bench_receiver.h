/* bench_receiver.h - an HTTP receiver in a child process for the push
 * benchmarks (libmicrohttpd): it answers 200 to every POST at once and
 * discards the body.  Header-only (static). */
#ifndef PA_BENCH_RECEIVER_H
#define PA_BENCH_RECEIVER_H

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

static enum MHD_Result on_req(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **state)
{
    (void)cls, (void)url, (void)method, (void)version, (void)data;
    if (!*state) { /* the headers: the body comes next */
        *state = (void *)1;
        return MHD_YES;
    }
    if (*size) { /* a piece of the body, discarded */
        *size = 0;
        return MHD_YES;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* A receiver in a child process; its port. */
/* Starts the receiver in a child process (*pid); its loopback port. */
static unsigned receiver(pid_t *pid)
{
    int p[2];
    if (pipe(p) < 0)
        exit(1);
    *pid = fork();
    if (*pid == 0) {
        struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0,
                                                NULL, NULL, on_req, NULL, MHD_OPTION_END);
        const union MHD_DaemonInfo *di =
            d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
        unsigned port = di ? di->port : 0;
        if (write(p[1], &port, sizeof(port)) != sizeof(port))
            _exit(1);
        pause();
        _exit(0);
    }
    unsigned port = 0;
    if (read(p[0], &port, sizeof(port)) != sizeof(port) || !port) {
        fprintf(stderr, "bench_otlp: the receiver did not start\n");
        exit(1);
    }
    close(p[0]);
    close(p[1]);
    return port;
}

#endif
