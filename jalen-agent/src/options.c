/*
 * options.c - the agent's option string: key=value separated by ",",
 * lists inside a value joined by "+".
 */
#include "jalen.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h" /* pa__calib_read, pa__suggest */
#include "powerapi.h"
#include "scopetab.h" /* PA__SCOPE_NAMES_LIMIT */

static const char *const jl_keys[] = {
    "interval",   "window",       "out",        "format",           "filter", "mode",   "net",
    "sensors",    "formula",      "disable",    "procfs",           "sysfs",  "quiet",  "fail",
    "top",        "calibration",  "clock",      "carbon-intensity", "scopes", "scope",  "push",
    "push-every", "service-name", "push-spool", "push-label",       "trace",  "signal", NULL,
};

static char *jl_expand_pid(const char *s, pid_t pid)
{
    size_t len = strlen(s) + 32;
    char *out = malloc(len * 2);
    if (!out)
        return NULL;
    size_t k = 0;
    for (const char *p = s; *p && k + 24 < len * 2; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            k += (size_t)snprintf(out + k, 24, "%d", (int)pid);
            p++;
        } else {
            out[k++] = *p;
        }
    }
    out[k] = '\0';
    return out;
}

static int jl_set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = strdup(v);
    return *dst ? 0 : -ENOMEM;
}

static int jl_parse_formats(const char *v, unsigned *out)
{
    unsigned f = 0;
    char *dup = strdup(v), *save = NULL;
    if (!dup)
        return -ENOMEM;
    for (char *t = strtok_r(dup, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
        if (!strcmp(t, "csv"))
            f |= JL_FMT_CSV;
        else if (!strcmp(t, "collapsed"))
            f |= JL_FMT_COLLAPSED;
        else if (!strcmp(t, "html"))
            f |= JL_FMT_HTML;
        else if (!strcmp(t, "json"))
            f |= JL_FMT_JSON;
        else if (!strcmp(t, "all"))
            f |= JL_FMT_ALL;
        else {
            free(dup);
            return -EINVAL;
        }
    }
    free(dup);
    if (!f)
        return -EINVAL;
    *out = f;
    return 0;
}

static int jl_parse_filters(const char *v, jl_opts *o)
{
    char *dup = strdup(v), *save = NULL;
    if (!dup)
        return -ENOMEM;
    for (char *t = strtok_r(dup, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
        char **nv = realloc(o->filters, (o->nfilters + 1) * sizeof(*nv));
        if (!nv) {
            free(dup);
            return -ENOMEM;
        }
        o->filters = nv;
        o->filters[o->nfilters] = strdup(t);
        if (!o->filters[o->nfilters]) {
            free(dup);
            return -ENOMEM;
        }
        /* accept "com/acme/" as well as "com.acme." */
        for (char *c = o->filters[o->nfilters]; *c; c++)
            if (*c == '/')
                *c = '.';
        o->nfilters++;
    }
    free(dup);
    return 0;
}

/* The error of a value its key does not take; -EINVAL. */
static int jl_bad(const char *key, const char *val, char *err, size_t errlen)
{
    snprintf(err, errlen, "bad value '%s' for '%s'", val ? val : "", key);
    return -EINVAL;
}

/* The keys whose value is one word of a list, and the int each word
 * sets. */
static const struct {
    const char *key, *word;
    size_t off; /* the int in jl_opts */
    int v;
} jl_words[] = {
    {"mode", "cpu", offsetof(jl_opts, mode), JL_MODE_CPU},
    {"mode", "jvmti", offsetof(jl_opts, mode), JL_MODE_JVMTI},
    {"clock", "auto", offsetof(jl_opts, clock), JL_CLOCK_AUTO},
    {"clock", "perf", offsetof(jl_opts, clock), JL_CLOCK_PERF},
    {"clock", "timer", offsetof(jl_opts, clock), JL_CLOCK_TIMER},
    {"signal", "auto", offsetof(jl_opts, signal), JL_SIG_AUTO},
    {"signal", "trap", offsetof(jl_opts, signal), JL_SIG_TRAP},
    {"signal", "prof", offsetof(jl_opts, signal), JL_SIG_PROF},
    {"net", "on", offsetof(jl_opts, net), 1},
    {"net", "1", offsetof(jl_opts, net), 1},
    {"net", "off", offsetof(jl_opts, net), 0},
    {"net", "0", offsetof(jl_opts, net), 0},
    {"fail", "abort", offsetof(jl_opts, fail_abort), 1},
    {"fail", "continue", offsetof(jl_opts, fail_abort), 0},
};

/* The keys whose value is kept as it is written. */
static const struct {
    const char *key;
    size_t off; /* the char * in jl_opts */
} jl_strings[] = {
    {"sensors", offsetof(jl_opts, sensors)},
    {"formula", offsetof(jl_opts, formula)},
    {"disable", offsetof(jl_opts, disable)},
    {"procfs", offsetof(jl_opts, procfs)},
    {"sysfs", offsetof(jl_opts, sysfs)},
    {"scope", offsetof(jl_opts, scope)},
    {"service-name", offsetof(jl_opts, service_name)},
    {"push-spool", offsetof(jl_opts, push_spool)},
    {"trace", offsetof(jl_opts, trace)},
};

/* A key of jl_words: 1 when val is one of its words (set in o), -EINVAL
 * when it is none of them; 0 when key is not one of jl_words'. */
static int jl_apply_word(jl_opts *o, const char *key, const char *val)
{
    int known = 0;
    for (size_t i = 0; i < sizeof(jl_words) / sizeof(jl_words[0]); i++) {
        if (strcmp(key, jl_words[i].key))
            continue;
        known = 1;
        if (!strcmp(val, jl_words[i].word)) {
            *(int *)((char *)o + jl_words[i].off) = jl_words[i].v;
            return 1;
        }
    }
    return known ? -EINVAL : 0;
}

/* A key of jl_strings: 1 when val is kept (-ENOMEM when it cannot be);
 * 0 when key is not one of jl_strings'. */
static int jl_apply_string(jl_opts *o, const char *key, const char *val)
{
    for (size_t i = 0; i < sizeof(jl_strings) / sizeof(jl_strings[0]); i++)
        if (!strcmp(key, jl_strings[i].key))
            return jl_set_str((char **)((char *)o + jl_strings[i].off), val) < 0 ? -ENOMEM : 1;
    return 0;
}

/* interval= and window=: a duration with its unit, within the key's
 * bounds. */
static int jl_apply_duration(jl_opts *o, const char *key, const char *val, char *err, size_t errlen)
{
    uint64_t ns;
    int drc = pa_parse_duration_unit_ns(val, &ns);
    if (drc == -EDOM) {
        snprintf(err, errlen,
                 "bad value '%s' for '%s': no unit (write it as 10ms, 1s, 500us...; "
                 "units ns, us, ms, s, m, h)",
                 val, key);
        return -EINVAL;
    }
    if (drc < 0)
        return jl_bad(key, val, err, errlen);
    if (!strcmp(key, "push-every")) {
        if (ns < 1000000000ull) {
            snprintf(err, errlen, "bad value '%s' for 'push-every' (at least 1s)", val);
            return -EINVAL;
        }
        o->push_every_ns = ns;
    } else if (!strcmp(key, "interval")) {
        if (ns < 100000ull || ns > 10000000000ull) {
            snprintf(err, errlen, "bad value '%s' for 'interval' (between 100us and 10s)", val);
            return -EINVAL;
        }
        o->interval_ns = ns;
    } else {
        if (ns < 10000000ull || ns > 3600000000000ull) {
            snprintf(err, errlen, "bad value '%s' for 'window' (between 10ms and 1h)", val);
            return -EINVAL;
        }
        o->window_ns = ns;
    }
    return 0;
}

/* push=pyroscope=URL|otlp=URL and push-label=NAME=VALUE. */
static int jl_apply_push(jl_opts *o, const char *key, const char *val, char *err, size_t errlen)
{
    char **to = NULL;
    const char *v = val;
    int label = !strcmp(key, "push-label");
    if (label) {
        const char *eq = strchr(val, '=');
        if (!eq || eq == val || strpbrk(val, "{},")) {
            snprintf(err, errlen, "bad value '%s' for 'push-label' (NAME=VALUE)", val);
            return -EINVAL;
        }
        if (o->npush_labels == sizeof(o->push_labels) / sizeof(o->push_labels[0])) {
            snprintf(err, errlen, "push-label: at most 8");
            return -EINVAL;
        }
        to = &o->push_labels[o->npush_labels++];
    } else if (!strncmp(val, "pyroscope=", 10)) {
        to = &o->push_pyroscope;
        v = val + 10;
    } else if (!strncmp(val, "otlp=", 5)) {
        to = &o->push_otlp;
        v = val + 5;
    }
    if (!to || (!label && strncmp(v, "http://", 7) && strncmp(v, "https://", 8))) {
        snprintf(err, errlen,
                 "bad value '%s' for 'push' (pyroscope=http://HOST:4040 or "
                 "otlp=http://HOST:4318)",
                 val);
        return -EINVAL;
    }
    free(*to);
    *to = strdup(v);
    return *to ? 0 : -ENOMEM;
}

/* top= and scopes=: a count within the key's bounds. */
static int jl_apply_count(jl_opts *o, const char *key, const char *val, char *err, size_t errlen)
{
    char *end;
    long v = strtol(val, &end, 10);
    if (!strcmp(key, "top")) {
        if (*end || v < 1 || v > 1000)
            return jl_bad(key, val, err, errlen);
        o->top = (int)v;
        return 0;
    }
    if (*end || v < 1 || v > PA__SCOPE_NAMES_LIMIT) {
        snprintf(err, errlen, "bad value '%s' for 'scopes' (distinct scope names, 1 to %d)", val,
                 PA__SCOPE_NAMES_LIMIT);
        return -EINVAL;
    }
    o->scopes = (size_t)v;
    return 0;
}

/* calibration=FILE: a `powerapi calibrate` file: the library's cpu-curve
 * formula (chosen by auto when RAPL is absent) reads it from here; read
 * with the library's own reader, so that a file it would refuse is
 * refused here, with its reason. */
static int jl_apply_calibration(const char *val, char *err, size_t errlen)
{
    pa_curve curve;
    if (access(val, R_OK) < 0) {
        snprintf(err, errlen,
                 "calibration=%s: %s (write one with `powerapi "
                 "calibrate --output FILE`)",
                 val, strerror(errno));
        return -EINVAL;
    }
    if (pa__calib_read(val, &curve) < 0) {
        snprintf(err, errlen, "calibration=%s: %s", val, pa_last_error());
        return -EINVAL;
    }
    if (setenv("POWERAPI_CALIBRATION", val, 1) < 0)
        return -ENOMEM;
    return 0;
}

char *jl_pattern_next(char **s)
{
    char *p = *s;
    while (p && *p == ';')
        p++;
    if (!p || !*p)
        return *s = NULL;
    int depth = 0;
    char *q = p;
    for (; *q && (*q != ';' || depth > 0); q++)
        depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
    *s = *q ? q + 1 : NULL;
    *q = '\0';
    return p;
}

/* trace=: each pattern CLASS.METHOD[(DESCRIPTOR)] (the rewriter, trace.c,
 * matches them); -EINVAL with one line naming the bad one. */
static int jl_trace_check(const char *spec, char *err, size_t errlen)
{
    char *dup = strdup(spec), *save = NULL;
    if (!dup)
        return -ENOMEM;
    int rc = 0, n = 0;
    save = dup;
    for (char *p = jl_pattern_next(&save); p && rc == 0; p = jl_pattern_next(&save)) {
        char *paren = strchr(p, '(');
        size_t head = paren ? (size_t)(paren - p) : strlen(p);
        const char *dot = memrchr(p, '.', head);
        if (!dot || dot == p || (size_t)(dot - p) == head - 1 || strcspn(p, " /,") < head ||
            (paren && (!strchr(paren, ')') || strchr(paren + 1, '(')))) {
            snprintf(err, errlen,
                     "trace pattern '%s' is not CLASS.METHOD[(DESCRIPTOR)] (write Demo.work, "
                     "com.acme.*.handle, Demo.*, or Demo.work(I)V for one overload)",
                     p);
            rc = -EINVAL;
        } else if (++n > JL_TRACE_PATTERNS) {
            snprintf(err, errlen, "more than %d trace patterns: join them with wildcards",
                     JL_TRACE_PATTERNS);
            rc = -EINVAL;
        }
    }
    if (rc == 0 && n == 0) {
        snprintf(err, errlen, "trace= needs a pattern (trace=Demo.work;Demo.other)");
        rc = -EINVAL;
    }
    free(dup);
    return rc;
}

/* One key=value into o (key is one of jl_keys); 0 or -EINVAL / -ENOMEM
 * with one line in err. */
static int jl_apply(jl_opts *o, const char *key, const char *val, pid_t pid, char *err,
                    size_t errlen)
{
    int rc = 0;
    if (!strcmp(key, "quiet")) {
        if (val && strcmp(val, "on") && strcmp(val, "1") && strcmp(val, "true"))
            return jl_bad(key, val, err, errlen);
        o->quiet = 1;
        return 0;
    }
    if (!val || !*val) {
        snprintf(err, errlen, "option '%s' needs a value (%s=...)", key, key);
        return -EINVAL;
    }
    if ((rc = jl_apply_word(o, key, val)) != 0)
        return rc < 0 ? jl_bad(key, val, err, errlen) : 0;
    if ((rc = jl_apply_string(o, key, val)) != 0) {
        rc = rc < 0 ? rc : 0;
        if (rc == 0 && !strcmp(key, "trace"))
            return jl_trace_check(val, err, errlen);
    } else if (!strcmp(key, "interval") || !strcmp(key, "window") || !strcmp(key, "push-every")) {
        return jl_apply_duration(o, key, val, err, errlen);
    } else if (!strcmp(key, "push") || !strcmp(key, "push-label")) {
        return jl_apply_push(o, key, val, err, errlen);
    } else if (!strcmp(key, "top") || !strcmp(key, "scopes")) {
        return jl_apply_count(o, key, val, err, errlen);
    } else if (!strcmp(key, "calibration")) {
        return jl_apply_calibration(val, err, errlen);
    } else if (!strcmp(key, "out")) {
        free(o->out);
        o->out = jl_expand_pid(val, pid);
        rc = o->out ? 0 : -ENOMEM;
    } else if (!strcmp(key, "format")) {
        if (jl_parse_formats(val, &o->formats) < 0) {
            snprintf(err, errlen, "bad value '%s' for 'format' (csv+collapsed+html+json)", val);
            return -EINVAL;
        }
    } else if (!strcmp(key, "filter")) {
        rc = jl_parse_filters(val, o);
    } else if (!strcmp(key, "carbon-intensity")) {
        /* the library's parser: the bounds and the line of powerapi's
         * --carbon-intensity */
        if (pa_carbon_intensity_parse(val, &o->carbon_g_per_kwh) < 0) {
            snprintf(err, errlen, "carbon-intensity: %s", pa_last_error());
            return -EINVAL;
        }
    }
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory parsing options");
    return rc;
}

int jl_opts_parse(const char *s, pid_t pid, jl_opts *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->interval_ns = 10000000ull;
    o->window_ns = 1000000000ull;
    o->formats = JL_FMT_ALL;
    o->mode = JL_MODE_CPU;
    o->net = 1;
    o->top = 10;
    o->scopes = PA_SCOPE_DEFAULT_NAMES;
    o->out = jl_expand_pid("jalen-%p", pid);
    if (!o->out)
        return -ENOMEM;
    if (!s || !*s)
        return 0;
    char *dup = strdup(s), *save = NULL;
    if (!dup)
        return -ENOMEM;
    int rc = 0;
    /* fail= first, so that it applies whatever the order */
    for (char *t = strtok_r(dup, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
        if (!*t)
            continue;
        char *eq = strchr(t, '=');
        const char *val = NULL;
        if (eq) {
            *eq = '\0';
            val = eq + 1;
        }
        int known = 0;
        for (size_t i = 0; jl_keys[i]; i++)
            if (!strcmp(jl_keys[i], t))
                known = 1;
        if (!known) {
            const char *best = pa__suggest(t, jl_keys);
            if (best)
                snprintf(err, errlen, "unknown option '%s' (did you mean '%s'?)", t, best);
            else
                snprintf(err, errlen, "unknown option '%s'", t);
            rc = -EINVAL;
            break;
        }
        rc = jl_apply(o, t, val, pid, err, errlen);
    }
    free(dup);
    /* a bad option elsewhere must not hide fail=abort */
    if (rc < 0 && strstr(s, "fail=abort"))
        o->fail_abort = 1;
    return rc;
}

void jl_opts_free(jl_opts *o)
{
    free(o->out);
    for (size_t i = 0; i < o->nfilters; i++)
        free(o->filters[i]);
    free(o->filters);
    free(o->sensors);
    free(o->formula);
    free(o->disable);
    free(o->procfs);
    free(o->sysfs);
    free(o->scope);
    free(o->push_pyroscope);
    free(o->push_otlp);
    free(o->service_name);
    free(o->push_spool);
    for (size_t i = 0; i < o->npush_labels; i++)
        free(o->push_labels[i]);
    free(o->trace);
    memset(o, 0, sizeof(*o));
}
