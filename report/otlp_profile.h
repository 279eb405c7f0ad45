/*
 * otlp_profile.h - a pprof profile (profcore's profile.pb.gz) as an
 * OpenTelemetry profiles export request (OTLP/HTTP protobuf,
 * ExportProfilesServiceRequest of opentelemetry-proto's profiles
 * v1development, an alpha signal: its messages may change), for `powerapi
 * profile --push otlp=URL`.  One Profile per pprof sample type, energy
 * first; the functions, locations, mappings and stacks in the request's
 * dictionary.  Nothing here prints or sends; thread-safe (no state).
 */
#ifndef PA_REPORT_OTLP_PROFILE_H
#define PA_REPORT_OTLP_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "powerapi.h"

typedef struct rp_otlp_profile_opts {
    const char *service_name;     /* service.name */
    const char *host_name;        /* host.name, or NULL */
    pid_t pid;                    /* process.pid, 0: none */
    const pa_cgroup_names *names; /* container.*, k8s.* where known, or NULL */
    uint64_t time_unix_ns;        /* the profile's start */
} rp_otlp_profile_opts;

/* pprof (gzip'd or not, len bytes) into *out (malloc'd, *out_len bytes).
 * 0, -EINVAL (not a pprof profile) or -ENOMEM; *out untouched on error. */
int rp_otlp_profile_encode(const void *pprof, size_t len, const rp_otlp_profile_opts *o,
                           uint8_t **out, size_t *out_len);

#endif
