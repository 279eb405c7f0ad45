/* options.c - the one parser of "key=value,key=value" module options. */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void pa__options_free(pa_options *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++) {
        free(o->kv[i].key);
        free(o->kv[i].value);
    }
    free(o->kv);
    free(o);
}

static int unknown_key(const char *who, const char *key, const char *const *allowed)
{
    if (!allowed || !allowed[0])
        return pa__err(-EINVAL, "%s: takes no options (got '%s')", who, key);
    const char *best = pa__suggest(key, allowed);
    char list[512] = "";
    for (size_t i = 0; allowed[i]; i++) {
        size_t u = strlen(list);
        snprintf(list + u, sizeof(list) - u, "%s%s", i ? ", " : "", allowed[i]);
    }
    if (best)
        return pa__err(-EINVAL, "%s: unknown option '%s' (did you mean '%s'? valid: %s)", who, key,
                       best, list);
    return pa__err(-EINVAL, "%s: unknown option '%s' (valid: %s)", who, key, list);
}

static int add_kv(pa_options *o, const char *k, size_t kl, const char *v, size_t vl)
{
    for (size_t i = 0; i < o->n; i++)
        if (strlen(o->kv[i].key) == kl && !strncmp(o->kv[i].key, k, kl)) {
            char *nv = strndup(v, vl);
            if (!nv)
                return -ENOMEM;
            free(o->kv[i].value);
            o->kv[i].value = nv;
            return 0;
        }
    pa_kv *nkv = realloc(o->kv, (o->n + 1) * sizeof(*nkv));
    if (!nkv)
        return -ENOMEM;
    o->kv = nkv;
    char *key = strndup(k, kl), *val = strndup(v, vl);
    if (!key || !val) {
        free(key);
        free(val);
        return -ENOMEM;
    }
    o->kv[o->n].key = key;
    o->kv[o->n].value = val;
    o->n++;
    return 0;
}

int pa__options_parse(const char *who, const char *s, const char *const *allowed, pa_options **out)
{
    pa_options *o = calloc(1, sizeof(*o));
    if (!o)
        return pa__err(-ENOMEM, "%s: out of memory parsing options", who);
    int rc = 0;
    const char *p = s ? s : "";
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        /* trim */
        while (len && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        if (len) {
            const char *eq = memchr(p, '=', len);
            if (!eq || eq == p) {
                rc = pa__err(-EINVAL,
                             "%s: option '%.*s' is not key=value "
                             "(options look like tdp=95,share=active)",
                             who, (int)len, p);
                goto fail;
            }
            size_t kl = (size_t)(eq - p);
            char key[64];
            if (kl >= sizeof(key)) {
                rc = pa__err(-EINVAL, "%s: option name '%.*s' too long", who, (int)kl, p);
                goto fail;
            }
            memcpy(key, p, kl);
            key[kl] = '\0';
            bool ok = false;
            for (size_t i = 0; allowed && allowed[i]; i++)
                if (!strcmp(allowed[i], key))
                    ok = true;
            if (!ok) {
                rc = unknown_key(who, key, allowed);
                goto fail;
            }
            rc = add_kv(o, p, kl, eq + 1, len - kl - 1);
            if (rc < 0) {
                rc = pa__err(rc, "%s: out of memory parsing options", who);
                goto fail;
            }
        }
        if (!end)
            break;
        p = end + 1;
    }
    *out = o;
    return 0;
fail:
    pa__options_free(o);
    return rc;
}

int pa__options_merge(const pa_options *base, const pa_options *upd, pa_options **out)
{
    pa_options *o = calloc(1, sizeof(*o));
    if (!o)
        return -ENOMEM;
    const pa_options *src[2] = {base, upd};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; src[s] && i < src[s]->n; i++) {
            const pa_kv *kv = &src[s]->kv[i];
            if (add_kv(o, kv->key, strlen(kv->key), kv->value, strlen(kv->value)) < 0) {
                pa__options_free(o);
                return -ENOMEM;
            }
        }
    *out = o;
    return 0;
}

int pa__options_format(const pa_options *o, char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; o && i < o->n; i++) {
        int n = snprintf(used < len ? buf + used : NULL, used < len ? len - used : 0, "%s%s=%s",
                         i ? "," : "", o->kv[i].key, o->kv[i].value);
        if (n < 0)
            return -EINVAL;
        used += (size_t)n;
    }
    return (int)used;
}

const char *pa_options_get(const pa_options *o, const char *key)
{
    for (size_t i = 0; o && i < o->n; i++)
        if (!strcmp(o->kv[i].key, key))
            return o->kv[i].value;
    return NULL;
}

int pa_options_get_double(const pa_options *o, const char *key, double def, double *out)
{
    const char *v = pa_options_get(o, key);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    double d = strtod(v, &end);
    /* accept a unit suffix naming the quantity: 95W, 3200MHz, 1.2V */
    if (end == v || !isfinite(d) ||
        (*end && strcmp(end, "W") && strcmp(end, "MHz") && strcmp(end, "V") && strcmp(end, "w") &&
         strcmp(end, "mhz") && strcmp(end, "v")))
        return pa__err(-EINVAL, "option %s=%s: not a number (example: %s=95)", key, v, key);
    *out = d;
    return 0;
}

int pa_options_get_duration_ns(const pa_options *o, const char *key, uint64_t def, uint64_t *out)
{
    const char *v = pa_options_get(o, key);
    if (!v) {
        *out = def;
        return 0;
    }
    int rc = pa_parse_duration_ns(v, out);
    if (rc < 0)
        return pa__err(rc, "option %s=%s: not a duration (examples: 500ms, 2s)", key, v);
    return 0;
}
