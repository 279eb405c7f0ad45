/*
 * otlp.h - a pa_report as an OpenTelemetry metrics export request
 * (OTLP/HTTP protobuf, ExportMetricsServiceRequest, encoded with
 * protobuf-c from the vendored opentelemetry-proto files): the series of
 * `serve`'s Prometheus page (prometheus.h, the same selection by --top,
 * --min-watts and --max-cgroups) under OpenTelemetry's semantic-convention
 * names where they exist (hw.power, hw.energy, process.pid, container.id,
 * k8s.pod.uid, host.name ...) and ours where they do not (README, "OTLP
 * metrics").  Nothing here prints or sends; thread-safe (no state).
 */
#ifndef PA_REPORT_OTLP_H
#define PA_REPORT_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "powerapi.h"
#include "prometheus.h"

typedef struct rp_otlp_opts {
    rp_prom_opts prom;        /* the page's selection; node = host.name */
    uint64_t start_unix_ns;   /* start_time_unix_nano of every cumulative
                                 sum: the exporter's start, stable */
    uint64_t time_unix_ns;    /* time_unix_nano of the window's points */
    const char *service_name; /* service.name of the resource ("powerapi") */
    const char *version;      /* the scope's version */
    uint64_t dropped_batches; /* powerapi.otlp.dropped_batches */
} rp_otlp_opts;

/* Encodes r as an ExportMetricsServiceRequest: a malloc'd buffer of *len
 * bytes in *out.  0, or -ENOMEM (*out untouched). */
int rp_otlp_encode(const pa_report *r, const rp_otlp_opts *o, uint8_t **out, size_t *len);

#endif
