/* util.c - the library's small file and parsing helpers (internal.h), for
 * the library and its modules, and the helpers of util.h that every layer
 * shares. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pa__vpath(char *buf, size_t len, const char *root, const char *fmt, va_list ap)
{
    int n = snprintf(buf, len, "%s/", root);
    if (n < 0 || (size_t)n >= len)
        return -ENAMETOOLONG;
    int m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
    if (m < 0 || (size_t)m >= len - (size_t)n)
        return -ENAMETOOLONG;
    return 0;
}

int pa__path(char *buf, size_t len, const char *root, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = pa__vpath(buf, len, root, fmt, ap);
    va_end(ap);
    return rc;
}

ssize_t pa__pread_all(int fd, char *buf, size_t len)
{
    size_t got = 0;
    if (len == 0)
        return -EINVAL;
    /* procfs files are generated per read: loop until EOF or full. */
    while (got < len - 1) {
        ssize_t r = pread(fd, buf + got, len - 1 - got, (off_t)got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            break;
        got += (size_t)r;
        /* a short read is the end: another pread on procfs would generate
         * the whole record again only to return 0 */
        if ((size_t)r < len - 1 - (got - (size_t)r))
            break;
    }
    buf[got] = '\0';
    return (ssize_t)got;
}

ssize_t pa__read_file(const char *root, const char *rel, char *buf, size_t len)
{
    char path[PA_PATH_MAX];
    int rc = pa__path(path, sizeof(path), root, "%s", rel);
    if (rc < 0)
        return rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = pa__pread_all(fd, buf, len);
    close(fd);
    return n;
}

int pa__parse_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9')
        return -EINVAL;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
        s++;
    }
    *out = v;
    *p = s;
    return 0;
}

int pa__parse_cpulist(const char *s, int *cpus, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        if (*s < '0' || *s > '9') {
            s++;
            continue;
        }
        /* A number no CPU can have (above INT_MAX, or overflowing) is
         * skipped with its range: the loop below must not overflow. */
        char *end;
        errno = 0;
        unsigned long a = strtoul(s, &end, 10), b = a;
        if (*end == '-' && end[1] >= '0' && end[1] <= '9')
            b = strtoul(end + 1, &end, 10);
        bool ok = errno == 0 && a <= INT_MAX && b <= INT_MAX;
        for (unsigned long c = a; ok && c <= b && n < cap; c++)
            cpus[n++] = (int)c;
        s = end;
    }
    return n;
}

int pa__procfs_hidepid(const char *procfs, char *opt, size_t len)
{
    if (geteuid() == 0)
        return 0; /* root sees every process whatever the mount says */
    char rp[PATH_MAX], path[PA_PATH_MAX];
    if (!realpath(procfs, rp) || pa__path(path, sizeof(path), procfs, "self/mountinfo") < 0)
        return 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return 0; /* a fixture tree, not a mounted procfs */
    char line[4096];
    int hidden = 0;
    while (!hidden && fgets(line, sizeof(line), f)) {
        /* proc(5) mountinfo: id parent maj:min root mountpoint opts
         * [optional fields] - fstype source superopts */
        char mnt[PATH_MAX], fstype[64];
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 || strcmp(mnt, rp) != 0)
            continue;
        const char *sep = strstr(line, " - ");
        char super[1024];
        if (!sep || sscanf(sep, " - %63s %*s %1023s", fstype, super) != 2 ||
            strcmp(fstype, "proc") != 0)
            continue;
        const char *h = strstr(super, "hidepid=");
        if (!h)
            continue;
        char val[32];
        if (sscanf(h, "hidepid=%31[^,]", val) != 1 || !strcmp(val, "0") || !strcmp(val, "off"))
            continue;
        /* members of the mount's gid= group see everything */
        const char *g = strstr(super, "gid=");
        if (g) {
            gid_t gid = (gid_t)strtoul(g + 4, NULL, 10);
            gid_t groups[256];
            int n = getgroups(256, groups);
            bool member = getegid() == gid;
            for (int i = 0; i < n && !member; i++)
                member = groups[i] == gid;
            if (member)
                continue;
        }
        snprintf(opt, len, "hidepid=%s", val);
        hidden = 1;
    }
    fclose(f);
    return hidden;
}

void pa__assume(char *list, size_t len, const char *text)
{
    if (!text || !*text)
        return;
    /* deduplicate whole entries */
    size_t tl = strlen(text);
    const char *s = list;
    while ((s = strstr(s, text)) != NULL) {
        bool start = (s == list) || (s >= list + 2 && s[-2] == ';');
        bool end = s[tl] == '\0' || s[tl] == ';';
        if (start && end)
            return;
        s += tl;
    }
    size_t used = strlen(list);
    snprintf(list + used, len - used, "%s%s", used ? "; " : "", text);
}

int pa_parse_duration_ns(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return pa__err(-EINVAL, "empty duration (examples: 500ms, 2s, 1m)");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v < 0)
        return pa__err(-EINVAL, "bad duration '%s' (examples: 500ms, 2s, 1.5s, 1m)", s);
    double mul;
    if (!strcmp(end, "") || !strcmp(end, "s"))
        mul = 1e9;
    else if (!strcmp(end, "ms"))
        mul = 1e6;
    else if (!strcmp(end, "us"))
        mul = 1e3;
    else if (!strcmp(end, "ns"))
        mul = 1;
    else if (!strcmp(end, "m") || !strcmp(end, "min"))
        mul = 60e9;
    else if (!strcmp(end, "h"))
        mul = 3600e9;
    else
        return pa__err(-EINVAL, "bad duration unit in '%s' (use ns, us, ms, s, m, h)", s);
    double ns = v * mul;
    if (ns > 1e19)
        return pa__err(-EINVAL, "duration '%s' is too long", s);
    *out = (uint64_t)llround(ns);
    return 0;
}

int pa_parse_duration_unit_ns(const char *s, uint64_t *out)
{
    uint64_t v;
    int rc = pa_parse_duration_ns(s, &v);
    if (rc < 0)
        return rc;
    /* a bare number: seconds to the library, but 5 is as likely meant as
     * 5 ms (or 5 ns, by async-profiler's habit) by whoever typed it */
    char *end;
    (void)strtod(s, &end);
    if (*end == '\0')
        return pa__err(-EDOM,
                       "'%s' has no unit (write it as 5s, 100ms, 1m, 250us...; units ns, "
                       "us, ms, s, m, h)",
                       s);
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The helpers of util.h shared by every layer                         */
/* ------------------------------------------------------------------ */

int pa__grow(void *arrp, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : (first ? first : 1);
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return -ENOMEM;
        ncap *= 2;
    }
    if (elem && ncap > SIZE_MAX / elem)
        return -ENOMEM;
    /* arrp points to a T *: copied through memcpy, not read as void * */
    void *v;
    memcpy(&v, arrp, sizeof(v));
    void *nv = realloc(v, ncap * elem);
    if (!nv)
        return -ENOMEM;
    memcpy(arrp, &nv, sizeof(nv));
    *cap = ncap;
    return 0;
}

int pa__index_reserve(int **slots, size_t *cap, size_t first, size_t from, size_t n,
                      pa__index_hash hash, const void *user)
{
    if ((n - from + 1) * 2 <= *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : (first ? first : 2);
    while ((n - from + 1) * 2 > ncap)
        ncap *= 2;
    int *h = calloc(ncap, sizeof(*h));
    if (!h)
        return -ENOMEM;
    for (size_t i = from; i < n; i++) {
        size_t q = hash(user, i) & (ncap - 1);
        while (h[q])
            q = (q + 1) & (ncap - 1);
        h[q] = (int)i + 1;
    }
    free(*slots);
    *slots = h;
    *cap = ncap;
    return 0;
}

int pa__hex_decode(const char *s, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = pa__hexval((unsigned char)s[2 * i]);
        if (hi < 0)
            return -EINVAL;
        int lo = pa__hexval((unsigned char)s[2 * i + 1]);
        if (lo < 0)
            return -EINVAL;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* Optimal string alignment distance (Levenshtein plus transpositions of
 * neighbours: "tpd" -> "tdp" is one edit), both strings < 64 bytes; three
 * rows, no allocation. */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t r0[64], r1[64], r2[64];
    size_t *pp = r0, *p = r1, *c = r2;
    for (size_t j = 0; j <= lb; j++)
        p[j] = j;
    for (size_t i = 1; i <= la; i++) {
        c[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t v = p[j - 1] + (a[i - 1] != b[j - 1]);
            if (p[j] + 1 < v)
                v = p[j] + 1;
            if (c[j - 1] + 1 < v)
                v = c[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < v)
                v = pp[j - 2] + 1;
            c[j] = v;
        }
        size_t *t = pp;
        pp = p;
        p = c;
        c = t;
    }
    return p[lb];
}

const char *pa__suggest(const char *name, const char *const *candidates)
{
    if (!name || !candidates)
        return NULL;
    size_t la = strlen(name);
    if (la > 63)
        return NULL;
    const char *best = NULL;
    size_t bestd = 3; /* a suggestion is at most 2 edits away */
    for (size_t i = 0; candidates[i]; i++) {
        size_t lb = strlen(candidates[i]);
        if (lb > 63 || (la > lb ? la - lb : lb - la) >= bestd)
            continue;
        size_t d = edit_distance(name, la, candidates[i], lb);
        if (d < bestd) {
            bestd = d;
            best = candidates[i];
        }
    }
    return best;
}

size_t pa__utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return c ? 1 : 0;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    unsigned cp = c & (0x3fu >> (n - 1));
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0; /* also stops at the NUL */
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* 1 when byte c needs more than copying in a JSON string */
static int json_special(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\' || c == '<' || c >= 0x7f;
}

void pa__json_write(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        const unsigned char *q = p;
        while (*q && !json_special(*q))
            q++;
        if (q > p) { /* a run to copy: usually the whole string */
            fwrite(p, 1, (size_t)(q - p), f);
            p = q;
            continue;
        }
        size_t n = *p >= 0x80 ? pa__utf8_len(p) : 0;
        if (n) {
            fwrite(p, 1, n, f);
            p += n;
            continue;
        }
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p >= 0x80)
            fputs("\\ufffd", f);
        else
            fprintf(f, "\\u%04x", *p);
        p++;
    }
    fputc('"', f);
}

void pa__csv_write(FILE *f, const char *s)
{
    if (!s)
        s = "";
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}
