/*
 * wall.c - what the whole machine's meters share (issue 46; DESIGN.md
 * section 19): the parsers of their answers (JSON value paths, the
 * Prometheus text format, hwmon attributes), the ACPI power meter's
 * reader (the HTTP side is wall_http.c).
 */
#include "wall.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- JSON ---- */

/* The value at path in root (borrowed), or NULL. */
static json_object *json_at(json_object *root, const char *path)
{
    char key[128];
    const char *p = path;
    json_object *v = root;
    while (v && *p) {
        size_t n = strcspn(p, ".");
        if (n >= sizeof(key))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        p += n + (p[n] == '.');
        if (json_object_is_type(v, json_type_array)) {
            char *end;
            unsigned long i = strtoul(key, &end, 10);
            if (end == key || *end || i >= json_object_array_length(v))
                return NULL;
            v = json_object_array_get_idx(v, i);
        } else if (!json_object_is_type(v, json_type_object) ||
                   !json_object_object_get_ex(v, key, &v)) {
            return NULL;
        }
    }
    return v;
}

static json_object *json_parse(const char *text, size_t len)
{
    json_tokener *tok = json_tokener_new();
    if (!tok)
        return NULL;
    json_object *o = len <= (size_t)INT32_MAX ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
    if (o && json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    return o;
}

int pa_wall_json_number(const char *text, size_t len, const char *path, double *out)
{
    json_object *root = json_parse(text, len);
    if (!root)
        return -EINVAL;
    json_object *v = json_at(root, path);
    int rc = -ENOENT;
    if (v && (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int))) {
        double x = json_object_get_double(v);
        rc = isfinite(x) ? 0 : -ERANGE;
        if (rc == 0)
            *out = x;
    } else if (v) {
        rc = -ERANGE; /* null (a BMC that has no reading now), a string */
    }
    json_object_put(root);
    return rc;
}

int pa_wall_json_link(const char *text, size_t len, const char *path, char *out, size_t outlen)
{
    json_object *root = json_parse(text, len);
    if (!root)
        return -EINVAL;
    json_object *v = json_at(root, path), *id = NULL;
    int rc = -ENOENT;
    if (v && json_object_is_type(v, json_type_object) &&
        json_object_object_get_ex(v, "@odata.id", &id) &&
        json_object_is_type(id, json_type_string)) {
        const char *s = json_object_get_string(id);
        rc = strlen(s) < outlen && s[0] == '/' ? 0 : -ERANGE;
        if (rc == 0)
            snprintf(out, outlen, "%s", s);
    }
    json_object_put(root);
    return rc;
}

/* ---- Prometheus text format ---- */

int pa_wall_prom_number(const char *text, size_t len, const char *metric, double *out)
{
    size_t m = strlen(metric);
    const char *end = text + len;
    for (const char *l = text; l < end;) {
        const char *nl = memchr(l, '\n', (size_t)(end - l));
        size_t ll = nl ? (size_t)(nl - l) : (size_t)(end - l);
        /* "metric value", "metric{labels} value" (a metric given with its
         * labels matches them exactly) */
        if (ll > m && !memcmp(l, metric, m) && l[0] != '#' &&
            (l[m] == ' ' || (l[m] == '{' && !strchr(metric, '{')))) {
            const char *v = l + m;
            if (*v == '{') {
                const char *c = memchr(v, '}', ll - m);
                v = c ? c + 1 : l + ll;
            }
            char num[64];
            size_t n = (size_t)(l + ll - v);
            if (n && n < sizeof(num)) {
                memcpy(num, v, n);
                num[n] = '\0';
                char *e;
                double x = strtod(num, &e);
                if (e != num && isfinite(x) && (*e == '\0' || *e == ' ' || *e == '\r')) {
                    *out = x;
                    return 0;
                }
            }
            return -ERANGE;
        }
        l = nl ? nl + 1 : end;
    }
    return -ENOENT;
}

/* ---- hwmon (Documentation/hwmon/sysfs-interface, acpi_power_meter) ---- */

int pa_wall_hwmon_value(const char *text, unsigned long long *out)
{
    if (text[0] < '0' || text[0] > '9')
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || (*end && *end != '\n'))
        return -EINVAL;
    *out = v;
    return 0;
}

/* root/hwmonN/file's value: 0 or -errno. */
static int hwmon_read(const char *dir, const char *name, const char *file, unsigned long long *v)
{
    char path[4500], buf[64];
    snprintf(path, sizeof(path), "%.4096s/%.300s/%.32s", dir, name, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    int e = errno;
    close(fd);
    if (n < 0)
        return -e;
    buf[n] = '\0';
    return pa_wall_hwmon_value(buf, v);
}

/* Where hwmon device name under dir keeps an ACPI power meter's files:
 * name itself (a driver on hwmon_device_register_with_info)
 * or name/device (before), into sub; 0 when it is not a power meter. */
static int power_meter_dir(const char *dir, const char *name, char *sub, size_t len)
{
    for (int k = 0; k < 2; k++) {
        char path[4500], buf[32];
        snprintf(sub, len, "%.255s%s", name, k ? "/device" : "");
        snprintf(path, sizeof(path), "%.4096s/%.300s/name", dir, sub);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n >= 11 && !strncmp(buf, "power_meter", 11) && (n == 11 || buf[11] == '\n'))
            return 1;
    }
    return 0;
}

int pa_wall_acpi_read(const char *sysfs, pa_wall_reading *r, char *why, size_t len)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/class/hwmon", sysfs);
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        snprintf(why, len, "acpi-power: %s: %s (no hwmon here)", dir, strerror(e));
        return -e;
    }
    int n = 0, rc = 0;
    double w = 0, avg = 0;
    char meters[96] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        char sub[300];
        if (strncmp(e->d_name, "hwmon", 5) || !power_meter_dir(dir, e->d_name, sub, sizeof(sub)))
            continue;
        unsigned long long uw, ms = 0;
        int r1 = hwmon_read(dir, sub, "power1_average", &uw);
        if (r1 < 0) {
            snprintf(why, len,
                     "acpi-power: %s/%s/power1_average: %s (the ACPI power meter gives no "
                     "reading: its firmware may need a cap set, or run as root)",
                     dir, sub, strerror(-r1));
            rc = r1;
            continue;
        }
        hwmon_read(dir, sub, "power1_average_interval", &ms);
        w += (double)uw * 1e-6; /* µW */
        avg = (double)ms * 1e-3 > avg ? (double)ms * 1e-3 : avg;
        size_t l = strlen(meters);
        snprintf(meters + l, sizeof(meters) - l, "%s%.16s", l ? "+" : "", e->d_name);
        n++;
    }
    closedir(d);
    if (!n)
        return rc ? rc : 0;
    r->power_w = w;
    r->avg_s = avg;
    snprintf(r->meter, sizeof(r->meter), "%.*s (power_meter)", (int)sizeof(r->meter) - 15, meters);
    snprintf(r->how, sizeof(r->how), "power1_average, %.3f s average", avg);
    return n;
}
