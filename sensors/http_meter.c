/*
 * http_meter.c - the "http-meter" sensor: the whole machine's power from a
 * smart plug or a network PDU outlet that answers HTTP (issue 46; DESIGN.md
 * section 19): url= gives its reading, either JSON with path= naming the
 * value (object keys and array indexes separated by dots: Tasmota's
 * "StatusSNS.ENERGY.Power", Shelly's "apower") or the Prometheus text
 * format with metric= naming the series (with its labels:
 * 'pdu_outlet_power_watts{outlet="3"}'), times scale= (0.001 for mW).  A
 * meter that averages says so with avg= (seconds).  Polled every period=
 * seconds on a thread of its own (wall_http.c), like redfish, with the
 * same cacert=, insecure= and credentials= (a file only its owner reads).
 */
#include "wall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "powerapi_module.h"

static const char *const meter_options[] = {"url",      "path",        "metric",  "scale",
                                            "avg",      "period",      "timeout", "cacert",
                                            "insecure", "credentials", NULL};

typedef struct meter_mod {
    pa_wall_http http;
    char url[1024], path[256], metric[256];
    double scale, avg_s, period_s;
    pa_wall_poller *poller;
    pa_wall_reading r;
} meter_mod;

static int meter_poll(void *user, pa_wall_reading *out, char *err, size_t errlen)
{
    meter_mod *s = user;
    char *b = NULL;
    size_t n = 0;
    int rc = pa_wall_http_get(&s->http, s->url, &b, &n, err, errlen);
    if (rc < 0)
        return rc;
    double v = 0;
    rc = s->path[0] ? pa_wall_json_number(b, n, s->path, &v)
                    : pa_wall_prom_number(b, n, s->metric, &v);
    free(b);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s %s", s->url, s->path[0] ? s->path : s->metric,
                 rc == -EINVAL   ? "not read: the answer is not JSON"
                 : rc == -ENOENT ? "absent from the answer (check path= or metric=)"
                                 : "is not a number");
        return rc;
    }
    out->power_w = v * s->scale;
    out->avg_s = s->avg_s;
    snprintf(out->meter, sizeof(out->meter), "%.95s", s->url);
    snprintf(out->how, sizeof(out->how), "%.60s x %g%s", s->path[0] ? s->path : s->metric, s->scale,
             s->avg_s > 0 ? " (averaged, avg=)" : " (an instant)");
    return 0;
}

/* Options into s: 0, or -EINVAL / -EPERM with m's error set. */
static int meter_options_read(pa_module *m, meter_mod *s, const pa_options *o)
{
    const char *url = pa_options_get(o, "url"), *path = pa_options_get(o, "path");
    const char *metric = pa_options_get(o, "metric"), *ca = pa_options_get(o, "cacert");
    const char *cred = pa_options_get(o, "credentials");
    double insecure = 0;
    if (!url || (strncmp(url, "https://", 8) && strncmp(url, "http://", 7)) || !path == !metric) {
        pa_module_errorf(m, "http-meter: give url=http(s)://... and either path= (a JSON value: "
                            "StatusSNS.ENERGY.Power) or metric= (a Prometheus series)");
        return -EINVAL;
    }
    snprintf(s->url, sizeof(s->url), "%s", url);
    snprintf(s->path, sizeof(s->path), "%s", path ? path : "");
    snprintf(s->metric, sizeof(s->metric), "%s", metric ? metric : "");
    snprintf(s->http.cacert, sizeof(s->http.cacert), "%s", ca ? ca : "");
    if (pa_options_get_double(o, "scale", 1, &s->scale) < 0 ||
        pa_options_get_double(o, "avg", 0, &s->avg_s) < 0 ||
        pa_options_get_double(o, "insecure", 0, &insecure) < 0 ||
        pa_options_get_double(o, "period", 1, &s->period_s) < 0 ||
        pa_options_get_double(o, "timeout", 2, &s->http.timeout_s) < 0 || s->period_s < 0.1 ||
        s->http.timeout_s <= 0 || s->avg_s < 0 || !(s->scale > 0)) {
        pa_module_errorf(m, "http-meter: scale= is a factor to watts, avg=, period= (at least "
                            "0.1) and timeout= are seconds, insecure= is 0 or 1");
        return -EINVAL;
    }
    s->http.insecure = insecure != 0;
    char why[512];
    int rc = cred ? pa_wall_credentials_read(cred, s->http.userpwd, sizeof(s->http.userpwd), why,
                                             sizeof(why))
                  : 0;
    if (rc < 0)
        pa_module_errorf(m, "http-meter: %s", why);
    return rc;
}

static int meter_start(pa_module *m, const pa_options *o)
{
    meter_mod *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    int rc = meter_options_read(m, s, o);
    if (rc == 0)
        rc = pa_wall_poller_start(s->period_s, meter_poll, s, &s->poller);
    if (rc < 0) {
        free(s);
        return rc;
    }
    pa_module_set_priv(m, s);
    return 0;
}

static int meter_sample(pa_module *m, pa_frame *f)
{
    meter_mod *s = pa_module_priv(m);
    char err[256];
    int rc = pa_wall_poller_latest(s->poller, 3 * s->period_s + s->http.timeout_s, &s->r, err,
                                   sizeof(err));
    if (rc < 0) {
        pa_module_errorf(m, "http-meter: %s", err);
        return rc;
    }
    if (err[0])
        pa_frame_note(f, "http-meter: last poll failed, reading %.1f s old: %s", s->r.age_s, err);
    s->r.frame_ns = pa_frame_time_ns(f);
    return rc ? pa_frame_put(f, "http-meter", &s->r, sizeof(s->r)) : 0;
}

static void meter_stop(pa_module *m)
{
    meter_mod *s = pa_module_priv(m);
    if (s)
        pa_wall_poller_stop(s->poller);
    free(s);
    pa_module_set_priv(m, NULL);
}

const pa_module_ops pa__mod_http_meter = {
    .abi = PA_MODULE_ABI,
    .name = "http-meter",
    .kind = PA_SENSOR,
    .description = "the whole machine's power from a smart plug or PDU over HTTP (url=, JSON "
                   "path= or Prometheus metric=)",
    .options = meter_options,
    .start = meter_start,
    .sample = meter_sample,
    .stop = meter_stop,
};
