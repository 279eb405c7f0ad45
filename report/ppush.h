/*
 * ppush.h - a continuous profiler's pushes: every N seconds the pprof of
 * what was charged since the last push, posted to Pyroscope's ingest API
 * (the name SERVICE{host,pid,container,pod,labels}, from and until) or as
 * OTLP profiles (otlp_profile.h), each kept in a spool folder until it is
 * sent (push.h).  One implementation for `powerapi profile --push` and the
 * jalen agent's push= (DESIGN.md section 8.6).  Not thread-safe: one
 * caller drives a session; the sending happens on push.h's threads.
 */
#ifndef RP_PPUSH_H
#define RP_PPUSH_H

#include "powerapi.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rp_ppush_cfg {
    const char *prog, *cmd;    /* for messages: "powerapi", "profile" */
    const char *pyroscope;     /* base URL, or NULL */
    const char *otlp;          /* OTLP/HTTP URL (profiles), or NULL */
    uint64_t every_ns;         /* between pushes (0: 10 s) */
    const char *service;       /* the application's name (required) */
    const char *spool;         /* folder (NULL: ~/.cache/powerapi/push) */
    const char *const *labels; /* "NAME=VALUE", nlabels of them */
    size_t nlabels;
    pid_t pid;                    /* the profiled process, 0: a machine */
    const pa_cgroup_names *names; /* its container or pod, or NULL */
} rp_ppush_cfg;

typedef struct rp_ppush rp_ppush;

/* Starts the senders; the configuration's strings are copied.  0, or
 * -errno with *why (a buffer of whylen) saying what failed. */
int rp_ppush_start(const rp_ppush_cfg *cfg, rp_ppush **out, char *why, size_t whylen);
/* Whether every_ns passed since the last push. */
int rp_ppush_due(const rp_ppush *x);
/* Seconds since the last push (the start for the first). */
double rp_ppush_since_s(const rp_ppush *x);
/* A folder of the session's own where the caller writes profile.pb.gz
 * before rp_ppush_send. */
const char *rp_ppush_dir(const rp_ppush *x);
/* Queues rp_ppush_dir's profile.pb.gz for the time since the last push
 * (removed once read).  0, or -errno (nothing to send). */
int rp_ppush_send(rp_ppush *x);
/* Stops (flush_ns to send what waits; the rest stays in the spool) and
 * frees.  NULL: nothing. */
void rp_ppush_end(rp_ppush *x, uint64_t flush_ns);
/* The service name a session should use when none is given: the
 * container's name, else comm (its basename), else the host's. */
void rp_ppush_service(char *out, size_t len, const pa_cgroup_names *names, const char *comm);

#endif
