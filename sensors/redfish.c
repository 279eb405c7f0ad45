/*
 * redfish.c - the "redfish" sensor: the whole machine's power from its
 * BMC's Redfish service (issue 46; DESIGN.md section 19).  At the first
 * poll it finds, under url= (the service's https://host), the chassis of
 * /redfish/v1/Chassis and the first with a power reading: its
 * EnvironmentMetrics (PowerWatts.Reading, the newer schema), else its Power
 * resource (PowerControl[0].PowerConsumedWatts), else its PowerSubsystem's
 * power supplies (each one's Metrics InputPowerWatts, summed); resource=
 * names an EnvironmentMetrics or Power resource instead.  Then it polls it every period= seconds on
 * a thread of its own (wall_http.c: a slow or failing BMC never stalls the tick, which takes the
 * latest reading and its age), over HTTPS checked against cacert= (or the system's CAs; insecure=1
 * checks nothing, and says so), with user:password from credentials=FILE, which only its owner may
 * read (never on the command line).
 */
#include "wall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "powerapi_module.h"

static const char *const redfish_options[] = {"url",    "resource", "cacert",      "insecure",
                                              "period", "timeout",  "credentials", NULL};

enum { RF_POWER, RF_ENV, RF_PSU };

typedef struct redfish_mod {
    pa_wall_http http;
    char base[512];     /* https://host:port */
    char resource[512]; /* the resource polled, "" until found */
    int kind;           /* RF_ENV, RF_POWER, RF_PSU (resource: the PowerSupplies) */
    double period_s;
    pa_wall_poller *poller;
    pa_wall_reading r;
} redfish_mod;

/* GETs base + path: 0 with *body (to free), or -errno with err. */
static int rf_get(redfish_mod *s, const char *path, char **body, size_t *len, char *err,
                  size_t errlen)
{
    char url[1024];
    snprintf(url, sizeof(url), "%s%s", s->base, path);
    return pa_wall_http_get(&s->http, url, body, len, err, errlen);
}

/* Chassis at path: its EnvironmentMetrics, else Power, else its
 * PowerSubsystem's PowerSupplies link into s. */
static int rf_chassis(redfish_mod *s, const char *path, char *err, size_t errlen)
{
    char *b = NULL, *sub = NULL;
    size_t n = 0, sn = 0;
    char link[512];
    int rc = rf_get(s, path, &b, &n, err, errlen);
    if (rc < 0)
        return rc;
    s->resource[0] = '\0';
    if (pa_wall_json_link(b, n, "EnvironmentMetrics", s->resource, sizeof(s->resource)) == 0)
        s->kind = RF_ENV;
    else if (pa_wall_json_link(b, n, "Power", s->resource, sizeof(s->resource)) == 0)
        s->kind = RF_POWER;
    else if (pa_wall_json_link(b, n, "PowerSubsystem", link, sizeof(link)) == 0 &&
             rf_get(s, link, &sub, &sn, err, errlen) == 0 &&
             pa_wall_json_link(sub, sn, "PowerSupplies", s->resource, sizeof(s->resource)) == 0)
        s->kind = RF_PSU;
    else
        s->resource[0] = '\0';
    free(sub);
    free(b);
    return s->resource[0] ? 0 : -ENOENT;
}

/* The power supplies' input power summed (PowerSubsystem: each supply's
 * Metrics InputPowerWatts.Reading), into *w; 0 or -errno. */
static int rf_supplies(redfish_mod *s, const char *coll, size_t cn, double *w, int *nsup, char *err,
                       size_t errlen)
{
    *w = 0;
    *nsup = 0;
    for (int i = 0; i < 16; i++) {
        char key[32], link[512], metrics[512];
        char *b = NULL, *m = NULL;
        size_t n = 0, mn = 0;
        double v;
        snprintf(key, sizeof(key), "Members.%d", i);
        if (pa_wall_json_link(coll, cn, key, link, sizeof(link)) < 0)
            break;
        int rc = rf_get(s, link, &b, &n, err, errlen);
        if (rc == 0 && pa_wall_json_link(b, n, "Metrics", metrics, sizeof(metrics)) == 0 &&
            (rc = rf_get(s, metrics, &m, &mn, err, errlen)) == 0 &&
            pa_wall_json_number(m, mn, "InputPowerWatts.Reading", &v) == 0) {
            *w += v;
            (*nsup)++;
        }
        free(b);
        free(m);
        if (rc < 0)
            return rc;
    }
    if (!*nsup)
        snprintf(err, errlen,
                 "%s%s: no power supply gives InputPowerWatts (name a resource "
                 "with resource=)",
                 s->base, s->resource);
    return *nsup ? 0 : -ENOENT;
}

/* The first chassis with a power reading. */
static int rf_discover(redfish_mod *s, char *err, size_t errlen)
{
    char *b = NULL;
    size_t n = 0;
    int rc = rf_get(s, "/redfish/v1/Chassis", &b, &n, err, errlen);
    if (rc < 0)
        return rc;
    for (int i = 0; i < 64; i++) {
        char key[32], link[512];
        snprintf(key, sizeof(key), "Members.%d", i);
        if (pa_wall_json_link(b, n, key, link, sizeof(link)) < 0)
            break;
        if (rf_chassis(s, link, err, errlen) == 0)
            break;
    }
    free(b);
    if (!s->resource[0])
        snprintf(err, errlen,
                 "%s/redfish/v1/Chassis: no chassis links EnvironmentMetrics or Power "
                 "(name the resource with resource=)",
                 s->base);
    return s->resource[0] ? 0 : -ENOENT;
}

static int rf_poll(void *user, pa_wall_reading *out, char *err, size_t errlen)
{
    redfish_mod *s = user;
    int rc = s->resource[0] ? 0 : rf_discover(s, err, errlen);
    char *b = NULL;
    size_t n = 0;
    if (rc == 0)
        rc = rf_get(s, s->resource, &b, &n, err, errlen);
    if (rc < 0)
        return rc;
    const char *path = "PowerControl.0.PowerConsumedWatts";
    if (s->kind == RF_ENV || strstr(s->resource, "EnvironmentMetrics"))
        path = "PowerWatts.Reading";
    int nsup = 0;
    if (s->kind == RF_PSU) {
        path = "InputPowerWatts.Reading";
        rc = rf_supplies(s, b, n, &out->power_w, &nsup, err, errlen);
        free(b);
        if (rc < 0)
            return rc;
        snprintf(out->meter, sizeof(out->meter), "%.95s", s->resource);
        snprintf(out->how, sizeof(out->how),
                 "%d power supplies' InputPowerWatts summed (the BMC's latest samples)", nsup);
        return 0;
    }
    rc = pa_wall_json_number(b, n, path, &out->power_w);
    free(b);
    if (rc < 0) {
        snprintf(err, errlen, "%s%s: %s %s", s->base, s->resource, path,
                 rc == -EINVAL   ? "not read: the answer is not JSON"
                 : rc == -ENOENT ? "absent (name another resource with resource=)"
                                 : "is not a number (the BMC has no reading now)");
        return rc;
    }
    out->avg_s = 0; /* the BMC's latest sample: an instant, as far as it says */
    snprintf(out->meter, sizeof(out->meter), "%.95s", s->resource);
    snprintf(out->how, sizeof(out->how), "%s (the BMC's latest sample)", path);
    return 0;
}

/* Options into s: 0, or -EINVAL / -EPERM with m's error set. */
static int rf_options(pa_module *m, redfish_mod *s, const pa_options *o)
{
    const char *url = pa_options_get(o, "url"), *res = pa_options_get(o, "resource");
    const char *ca = pa_options_get(o, "cacert"), *cred = pa_options_get(o, "credentials");
    double insecure = 0;
    char why[512];
    if (!url || (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))) {
        pa_module_errorf(m, "redfish: give the BMC's service as url=https://HOST[:PORT]");
        return -EINVAL;
    }
    snprintf(s->base, sizeof(s->base), "%s", url);
    size_t bl = strlen(s->base);
    if (bl && s->base[bl - 1] == '/')
        s->base[bl - 1] = '\0';
    snprintf(s->resource, sizeof(s->resource), "%s", res ? res : "");
    snprintf(s->http.cacert, sizeof(s->http.cacert), "%s", ca ? ca : "");
    if (pa_options_get_double(o, "insecure", 0, &insecure) < 0 ||
        pa_options_get_double(o, "period", 1, &s->period_s) < 0 ||
        pa_options_get_double(o, "timeout", 2, &s->http.timeout_s) < 0 || s->period_s < 0.1 ||
        s->http.timeout_s <= 0) {
        pa_module_errorf(m, "redfish: period= (at least 0.1 s; most BMCs refresh their reading "
                            "every 1 to 10 s) and timeout= are seconds, insecure= is 0 or 1");
        return -EINVAL;
    }
    s->http.insecure = insecure != 0;
    int rc = cred ? pa_wall_credentials_read(cred, s->http.userpwd, sizeof(s->http.userpwd), why,
                                             sizeof(why))
                  : 0;
    if (rc < 0)
        pa_module_errorf(m, "redfish: %s", why);
    return rc;
}

static int redfish_start(pa_module *m, const pa_options *o)
{
    redfish_mod *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    int rc = rf_options(m, s, o);
    if (rc == 0)
        rc = pa_wall_poller_start(s->period_s, rf_poll, s, &s->poller);
    if (rc < 0) {
        free(s);
        return rc;
    }
    pa_module_set_priv(m, s);
    return 0;
}

static int redfish_sample(pa_module *m, pa_frame *f)
{
    redfish_mod *s = pa_module_priv(m);
    char err[256];
    /* a reading older than three periods and a timeout is no reading */
    double stale = 3 * s->period_s + s->http.timeout_s;
    int rc = pa_wall_poller_latest(s->poller, stale, &s->r, err, sizeof(err));
    if (rc < 0) {
        pa_module_errorf(m, "redfish: %s", err);
        return rc;
    }
    if (err[0])
        pa_frame_note(f, "redfish: last poll failed, reading %.1f s old: %s", s->r.age_s, err);
    if (s->http.insecure)
        pa_frame_note(f, "redfish: %s's certificate not checked (insecure=1)", s->base);
    s->r.frame_ns = pa_frame_time_ns(f);
    return rc ? pa_frame_put(f, "redfish", &s->r, sizeof(s->r)) : 0;
}

static void redfish_stop(pa_module *m)
{
    redfish_mod *s = pa_module_priv(m);
    if (s)
        pa_wall_poller_stop(s->poller);
    free(s);
    pa_module_set_priv(m, NULL);
}

const pa_module_ops pa__mod_redfish = {
    .abi = PA_MODULE_ABI,
    .name = "redfish",
    .kind = PA_SENSOR,
    .description = "the whole machine's power from its BMC's Redfish service (url=, "
                   "credentials=FILE, cacert=)",
    .options = redfish_options,
    .start = redfish_start,
    .sample = redfish_sample,
    .stop = redfish_stop,
};
