/*
 * push.h - delivery of batches to an HTTP receiver (OTLP metrics, profiles)
 * on a thread of its own, so that the measuring thread never waits on the
 * network: a bounded queue (full: the oldest batch is dropped and counted),
 * retries with exponential backoff, gzip, headers, one clear line on stderr
 * per kind of failure (libcurl, Debian libcurl4-openssl-dev; zlib).
 */
#ifndef RP_PUSH_H
#define RP_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rp_push rp_push;

typedef struct rp_push_cfg {
    const char *prog;           /* the program, for messages ("powerapi") */
    const char *cmd;            /* the command, for messages ("serve") */
    const char *name;           /* the exporter, for messages ("otlp") */
    const char *url;            /* where batches go without a URL of their own */
    const char *content_type;   /* "application/x-protobuf" */
    const char *const *headers; /* "Name: value", nheaders of them */
    size_t nheaders;
    bool gzip;               /* Content-Encoding: gzip */
    size_t queue_max;        /* batches held at most (0: 64) */
    uint64_t timeout_ns;     /* one request's limit (0: 10 s) */
    uint64_t backoff_ns;     /* first retry after (0: 100 ms), doubling */
    uint64_t backoff_max_ns; /* at most (0: 2 s) */
    const char *spool_dir;   /* NULL, or a folder where each batch is kept
                                until sent (its URL on the first line):
                                batches left at exit are sent by the next
                                start with the same folder */
} rp_push_cfg;

typedef struct rp_push_stats {
    uint64_t submitted; /* batches given */
    uint64_t sent;      /* accepted by the receiver (2xx) */
    uint64_t dropped;   /* the oldest, dropped because the queue was full */
    uint64_t rejected;  /* refused by the receiver for good (4xx but 408 and
                           429, 500, 501), not retried */
    uint64_t retries;   /* failed tries that were retried */
    size_t queued;      /* waiting now */
} rp_push_stats;

/* Starts the sending thread.  The configuration's strings are copied.
 * 0, -ENOMEM, -EINVAL (no URL), or the thread's -errno. */
int rp_push_start(const rp_push_cfg *cfg, rp_push **out);

/* Queues body (malloc'd, len bytes; ownership passes to the queue, also on
 * error) for url (NULL: the configuration's; copied).  Never waits on the
 * network: a full queue drops its oldest batch not being sent.
 * Thread-safe. */
int rp_push_submit(rp_push *p, void *body, size_t len, const char *url);

/* The counts so far.  Thread-safe. */
void rp_push_get_stats(rp_push *p, rp_push_stats *st);

/* Waits until the queue is empty or flush_ns passed (the batches left
 * are said in one line), stops the thread and frees p.  NULL: nothing. */
void rp_push_stop(rp_push *p, uint64_t flush_ns);

#endif
