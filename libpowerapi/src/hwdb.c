/*
 * hwdb.c - the hardware database: CPU models (TDP, base frequency,
 * voltage table) and NICs (power per link speed), read from a plain-text
 * file (data/hwdb.txt, installed as PA_HWDB_DEFAULT).  The format is
 * documented at the top of data/hwdb.txt; in short, one record a line:
 *
 *   cpu "Q6600" tdp=105 mhz=2400 threads=4 source="..."
 *   nic "e100" state=10:0.58,100:0.58 idle=0 source="..."
 *
 * '#' starts a comment outside quotes.  Every lookup parses (and so
 * validates) the whole file: lookups happen when a formula starts or is
 * reconfigured, never per tick, and a broken line is reported with its
 * file:line whatever record was asked for.
 *
 * CPU records match a substring of /proc/cpuinfo "model name", compared
 * case-insensitively with runs of blanks folded to one space ("Intel(R)
 * Core(TM)2 Quad CPU    Q6600  @ 2.40GHz" has several), and only at word
 * boundaries: "i7-8700" does not match "i7-8700K".  The longest matching
 * string wins.  NIC records match the kernel driver name exactly.
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HWDB_LINE_MAX 1024

const char *pa__hwdb_path(const char *configured)
{
    if (configured && *configured)
        return configured;
#ifdef PA_HWDB_DEFAULT
    if (access(PA_HWDB_DEFAULT, R_OK) == 0)
        return PA_HWDB_DEFAULT;
#endif
#ifdef PA_HWDB_BUILDTREE
    if (access(PA_HWDB_BUILDTREE, R_OK) == 0)
        return PA_HWDB_BUILDTREE;
#endif
    return NULL;
}

/* Folds blanks to one space, trims, lowercases ASCII. */
static void normalize(const char *in, char *out, size_t len)
{
    size_t o = 0;
    bool space = false;
    for (const char *p = in ? in : ""; *p && o + 1 < len; p++) {
        unsigned char c = (unsigned char)*p;
        if (isspace(c)) {
            space = o > 0;
            continue;
        }
        if (space && o + 2 < len)
            out[o++] = ' ';
        space = false;
        out[o++] = (char)tolower(c);
    }
    out[o] = '\0';
}

/* Is needle (normalized) in hay (normalized) at word boundaries?  A
 * boundary is only required where the needle itself begins or ends with a
 * letter or digit. */
static bool match_words(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    if (!nl)
        return false;
    for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle)) {
        bool lead =
            !isalnum((unsigned char)needle[0]) || s == hay || !isalnum((unsigned char)s[-1]);
        bool trail = !isalnum((unsigned char)needle[nl - 1]) || !isalnum((unsigned char)s[nl]);
        /* "e5-2680" must not match "e5-2680 v4": another part */
        bool version = s[nl] == ' ' && s[nl + 1] == 'v' && isdigit((unsigned char)s[nl + 2]);
        if (lead && trail && !version)
            return true;
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* Parsing                                                             */
/* ------------------------------------------------------------------ */

typedef enum { REC_CPU, REC_NIC, REC_CURVE } rec_kind;

typedef struct rec {
    rec_kind kind;
    union {
        pa_hwdb_cpu cpu;
        pa_hwdb_nic nic;
        pa_curve curve;
    } u;
} rec;

typedef struct parser {
    const char *path;
    unsigned line;
    char *p; /* cursor in the line */
} parser;

#define PERR(ps, ...) perr_at(ps, __VA_ARGS__)

__attribute__((format(printf, 2, 3))) static int perr_at(parser *ps, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return pa__err(-EINVAL,
                   "hwdb: %s:%u: %s (format: see the comments at the "
                   "top of data/hwdb.txt)",
                   ps->path, ps->line, msg);
}

static void skip_blanks(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')
        ps->p++;
}

static bool at_end(parser *ps)
{
    skip_blanks(ps);
    return *ps->p == '\0' || *ps->p == '#' || *ps->p == '\n';
}

/* Reads a "quoted string" (\" and \\ escapes) into out. */
static int read_quoted(parser *ps, char *out, size_t len, const char *what)
{
    skip_blanks(ps);
    if (*ps->p != '"')
        return PERR(ps, "%s must be a \"quoted string\"", what);
    ps->p++;
    size_t o = 0;
    for (;;) {
        char c = *ps->p;
        if (c == '\0' || c == '\n')
            return PERR(ps, "%s: missing closing quote", what);
        ps->p++;
        if (c == '"')
            break;
        if (c == '\\' && (*ps->p == '"' || *ps->p == '\\'))
            c = *ps->p++;
        if (o + 1 >= len)
            return PERR(ps, "%s longer than %zu characters", what, len - 1);
        out[o++] = c;
    }
    out[o] = '\0';
    if (*ps->p && !isspace((unsigned char)*ps->p) && *ps->p != '#')
        return PERR(ps, "%s: expected a blank after the closing quote", what);
    return 0;
}

/* Reads an unquoted value up to the next blank or comment. */
static int read_bare(parser *ps, char *out, size_t len, const char *key)
{
    size_t o = 0;
    while (*ps->p && !isspace((unsigned char)*ps->p) && *ps->p != '#') {
        if (o + 1 >= len)
            return PERR(ps, "value of %s too long", key);
        out[o++] = *ps->p++;
    }
    out[o] = '\0';
    if (!o)
        return PERR(ps, "%s= has no value", key);
    return 0;
}

static int parse_num(parser *ps, const char *key, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return PERR(ps, "%s=%s is not a number", key, s);
    if (v < lo || v > hi)
        return PERR(ps, "%s=%s out of range [%g, %g]", key, s, lo, hi);
    *out = v;
    return 0;
}

/* "a:b,a:b" (or '+' separated, as in module options) into pairs with
 * strictly increasing a.  Shared with the cpu-tdp volt= option through
 * pa__hwdb_parse_pairs. */
static int parse_pairs_msg(const char *s, double (*pairs)[2], size_t max, size_t *n, double alo,
                           double ahi, double blo, double bhi, char *why, size_t why_len)
{
    size_t k = 0;
    const char *p = s;
    if (!*p) {
        snprintf(why, why_len, "empty list");
        return -EINVAL;
    }
    while (*p) {
        char *end;
        errno = 0;
        double a = strtod(p, &end);
        if (end == p || *end != ':' || errno || !isfinite(a)) {
            snprintf(why, why_len, "'%s': expected NUMBER:NUMBER pairs", p);
            return -EINVAL;
        }
        p = end + 1;
        double b = strtod(p, &end);
        if (end == p || errno || !isfinite(b) || (*end && *end != ',' && *end != '+')) {
            snprintf(why, why_len, "'%s': expected NUMBER:NUMBER pairs", p);
            return -EINVAL;
        }
        if (a < alo || a > ahi || b < blo || b > bhi) {
            snprintf(why, why_len, "pair %g:%g out of range ([%g, %g]:[%g, %g])", a, b, alo, ahi,
                     blo, bhi);
            return -EINVAL;
        }
        if (k == max) {
            snprintf(why, why_len, "more than %zu pairs", max);
            return -EINVAL;
        }
        if (k && a <= pairs[k - 1][0]) {
            snprintf(why, why_len, "pairs must be in strictly increasing order (%g after %g)", a,
                     pairs[k - 1][0]);
            return -EINVAL;
        }
        pairs[k][0] = a;
        pairs[k][1] = b;
        k++;
        p = end;
        if (*p) {
            p++;
            if (!*p) {
                snprintf(why, why_len, "trailing separator");
                return -EINVAL;
            }
        }
    }
    *n = k;
    return 0;
}

int pa__hwdb_parse_volt(const char *s, pa_hwdb_cpu *cpu, char *why, size_t why_len)
{
    double pairs[16][2];
    size_t n = 0;
    int rc = parse_pairs_msg(s, pairs, 16, &n, 1, 100000, 0.05, 5, why, why_len);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        cpu->volt[i].mhz = pairs[i][0];
        cpu->volt[i].volt = pairs[i][1];
    }
    cpu->nvolt = n;
    return 0;
}

int pa__curve_parse_points(const char *s, pa_curve *c, char *why, size_t why_len)
{
    double pairs[PA_CURVE_MAX][2];
    size_t n = 0;
    int rc = parse_pairs_msg(s, pairs, PA_CURVE_MAX, &n, 0, 100, 0, 100000, why, why_len);
    if (rc < 0)
        return rc;
    for (size_t i = 1; i < n; i++)
        if (pairs[i][1] < pairs[i - 1][1]) {
            snprintf(why, why_len,
                     "power must not fall as load grows (%gW at %g%% after "
                     "%gW at %g%%)",
                     pairs[i][1], pairs[i][0], pairs[i - 1][1], pairs[i - 1][0]);
            return -EINVAL;
        }
    for (size_t i = 0; i < n; i++) {
        c->load[i] = pairs[i][0] / 100.0;
        c->watts[i] = pairs[i][1];
    }
    c->n = n;
    return 0;
}

/* Reads "key=" into key (letters only). */
static int read_key(parser *ps, char *key, size_t len)
{
    size_t kl = 0;
    while (isalpha((unsigned char)*ps->p) && kl + 1 < len)
        key[kl++] = *ps->p++;
    key[kl] = '\0';
    if (!kl || *ps->p != '=')
        return PERR(ps, "expected key=value, got '%.20s'", ps->p);
    ps->p++;
    return 0;
}

/* Reads the quoted value of source= (once per record, never empty). */
static int read_source(parser *ps, char *out, size_t len, bool *have)
{
    int rc = read_quoted(ps, out, len, "source");
    if (rc < 0)
        return rc;
    if (*have)
        return PERR(ps, "source given twice");
    if (!out[0])
        return PERR(ps, "source is empty: name the data sheet");
    *have = true;
    return 0;
}

/* The quoted match string of a cpu or curve record (what), which must
 * not be empty once normalized.  0 or -errno. */
static int read_match(parser *ps, char *match, size_t len, const char *what)
{
    char desc[32];
    snprintf(desc, sizeof(desc), "%s match string", what);
    int rc = read_quoted(ps, match, len, desc);
    if (rc < 0)
        return rc;
    char norm[96];
    normalize(match, norm, len < sizeof(norm) ? len : sizeof(norm));
    if (!norm[0])
        return PERR(ps, "empty %s match string", what);
    return 0;
}

/* The next KEY=VALUE of a record: source= read into source (returns 1),
 * any other key's bare value into val (returns 0); or -errno. */
static int read_field(parser *ps, char *key, size_t klen, char *val, size_t vlen, char *source,
                      size_t slen, bool *have_src)
{
    int rc = read_key(ps, key, klen);
    if (rc < 0)
        return rc;
    if (!strcmp(key, "source")) {
        if ((rc = read_source(ps, source, slen, have_src)) < 0)
            return rc;
        return 1;
    }
    if ((rc = read_bare(ps, val, vlen, key)) < 0)
        return rc;
    return 0;
}

static int parse_cpu(parser *ps, pa_hwdb_cpu *c)
{
    bool have_tdp = false, have_mhz = false, have_src = false, have_volt = false, have_thr = false;
    while (!at_end(ps)) {
        char key[16], val[256];
        int rc = read_field(ps, key, sizeof(key), val, sizeof(val), c->source, sizeof(c->source),
                            &have_src);
        if (rc < 0)
            return rc;
        if (rc == 1)
            continue;
        if (!strcmp(key, "tdp")) {
            if (have_tdp)
                return PERR(ps, "tdp given twice");
            if ((rc = parse_num(ps, key, val, 0.1, 2000, &c->tdp_w)) < 0)
                return rc;
            have_tdp = true;
        } else if (!strcmp(key, "mhz")) {
            if (have_mhz)
                return PERR(ps, "mhz given twice");
            if ((rc = parse_num(ps, key, val, 1, 100000, &c->base_mhz)) < 0)
                return rc;
            have_mhz = true;
        } else if (!strcmp(key, "threads")) {
            double t;
            if (have_thr)
                return PERR(ps, "threads given twice");
            if ((rc = parse_num(ps, key, val, 1, 65536, &t)) < 0)
                return rc;
            if (t != floor(t))
                return PERR(ps, "threads=%s is not a whole number", val);
            c->threads = (unsigned)t;
            have_thr = true;
        } else if (!strcmp(key, "volt")) {
            char why[160];
            if (have_volt)
                return PERR(ps, "volt given twice");
            if (pa__hwdb_parse_volt(val, c, why, sizeof(why)) < 0)
                return PERR(ps,
                            "volt=%s: %s (write MHZ:VOLTS pairs, e.g. "
                            "volt=600:0.956,1600:1.484)",
                            val, why);
            have_volt = true;
        } else {
            return PERR(ps,
                        "unknown cpu key '%s' (valid: tdp, mhz, threads, "
                        "volt, source)",
                        key);
        }
    }
    if (!have_tdp || !have_mhz || !have_src)
        return PERR(ps, "cpu record needs tdp=, mhz= and source=");
    return 0;
}

static int parse_nic(parser *ps, pa_hwdb_nic *n)
{
    bool have_state = false, have_idle = false, have_src = false;
    while (!at_end(ps)) {
        char key[16], val[256];
        int rc = read_field(ps, key, sizeof(key), val, sizeof(val), n->source, sizeof(n->source),
                            &have_src);
        if (rc < 0)
            return rc;
        if (rc == 1)
            continue;
        if (!strcmp(key, "state")) {
            double pairs[8][2];
            size_t k = 0;
            char why[160];
            if (have_state)
                return PERR(ps, "state given twice");
            if (parse_pairs_msg(val, pairs, 8, &k, 0.001, 1e7, 0, 1000, why, sizeof(why)) < 0)
                return PERR(ps,
                            "state=%s: %s (write MBPS:WATTS pairs, e.g. "
                            "state=10:0.58,100:0.58)",
                            val, why);
            for (size_t i = 0; i < k; i++) {
                n->state[i].mbps = pairs[i][0];
                n->state[i].watts = pairs[i][1];
            }
            n->nstates = k;
            have_state = true;
        } else if (!strcmp(key, "idle")) {
            if (have_idle)
                return PERR(ps, "idle given twice");
            if ((rc = parse_num(ps, key, val, 0, 1000, &n->idle_w)) < 0)
                return rc;
            have_idle = true;
        } else {
            return PERR(ps, "unknown nic key '%s' (valid: state, idle, source)", key);
        }
    }
    if (!have_state || !have_src)
        return PERR(ps, "nic record needs state= and source=");
    return 0;
}

static int parse_curve(parser *ps, pa_curve *c)
{
    bool have_load = false, have_per = false, have_src = false, have_pk = false, have_thr = false;
    c->packages = 1;
    c->error = -1;
    while (!at_end(ps)) {
        char key[16], val[512];
        int rc = read_field(ps, key, sizeof(key), val, sizeof(val), c->source, sizeof(c->source),
                            &have_src);
        if (rc < 0)
            return rc;
        if (rc == 1)
            continue;
        if (!strcmp(key, "load")) {
            char why[160];
            if (have_load)
                return PERR(ps, "load given twice");
            if (pa__curve_parse_points(val, c, why, sizeof(why)) < 0)
                return PERR(ps,
                            "load=%s: %s (write LOAD%%:WATTS pairs, e.g. "
                            "load=0:66,50:156,100:247)",
                            val, why);
            if (c->n < 2)
                return PERR(ps, "load= needs at least 2 points");
            have_load = true;
        } else if (!strcmp(key, "per")) {
            if (have_per)
                return PERR(ps, "per given twice");
            if (!strcmp(val, "server"))
                c->per = PA_CURVE_SERVER;
            else if (!strcmp(val, "package"))
                c->per = PA_CURVE_PACKAGE;
            else if (!strcmp(val, "vcpu"))
                c->per = PA_CURVE_VCPU;
            else
                return PERR(ps, "per=%s: use server, package or vcpu", val);
            have_per = true;
        } else if (!strcmp(key, "packages") || !strcmp(key, "threads")) {
            double t;
            bool pk = key[0] == 'p';
            if (pk ? have_pk : have_thr)
                return PERR(ps, "%s given twice", key);
            if ((rc = parse_num(ps, key, val, 1, 65536, &t)) < 0)
                return rc;
            if (t != floor(t))
                return PERR(ps, "%s=%s is not a whole number", key, val);
            if (pk) {
                c->packages = (unsigned)t;
                have_pk = true;
            } else {
                c->threads = (unsigned)t;
                have_thr = true;
            }
        } else {
            return PERR(ps,
                        "unknown curve key '%s' (valid: load, per, packages, "
                        "threads, source)",
                        key);
        }
    }
    if (!have_load || !have_per || !have_src)
        return PERR(ps, "curve record needs load=, per= and source=");
    return 0;
}

/* Parses one line; returns 1 and fills r for a record, 0 for a blank or
 * comment line, -EINVAL on error. */
static int parse_line(parser *ps, char *line, rec *r)
{
    ps->p = line;
    if (at_end(ps))
        return 0;
    char word[8];
    size_t wl = 0;
    while (isalpha((unsigned char)*ps->p) && wl + 1 < sizeof(word))
        word[wl++] = *ps->p++;
    word[wl] = '\0';
    if (*ps->p && !isspace((unsigned char)*ps->p))
        wl = 0;
    memset(r, 0, sizeof(*r));
    if (wl && !strcmp(word, "cpu")) {
        r->kind = REC_CPU;
        int rc = read_match(ps, r->u.cpu.match, sizeof(r->u.cpu.match), "cpu");
        if (rc < 0)
            return rc;
        rc = parse_cpu(ps, &r->u.cpu);
        return rc < 0 ? rc : 1;
    }
    if (wl && !strcmp(word, "curve")) {
        r->kind = REC_CURVE;
        int rc = read_match(ps, r->u.curve.match, sizeof(r->u.curve.match), "curve");
        if (rc < 0)
            return rc;
        rc = parse_curve(ps, &r->u.curve);
        return rc < 0 ? rc : 1;
    }
    if (wl && !strcmp(word, "nic")) {
        r->kind = REC_NIC;
        int rc = read_quoted(ps, r->u.nic.match, sizeof(r->u.nic.match), "nic driver name");
        if (rc < 0)
            return rc;
        if (!r->u.nic.match[0])
            return PERR(ps, "empty nic driver name");
        rc = parse_nic(ps, &r->u.nic);
        return rc < 0 ? rc : 1;
    }
    return PERR(ps,
                "a record starts with 'cpu', 'curve' or 'nic', not "
                "'%.20s'",
                line);
}

typedef struct seen {
    rec_kind kind;
    char norm[96];
    unsigned line;
} seen;

/* Parses the whole file.  For kind want, keeps in best the record whose
 * match wins for key (CPU: longest word match of the model name; NIC:
 * equal driver name).  Returns 1 if found, 0 if not, <0 on error. */
static int hwdb_scan(const char *path, rec_kind want, const char *key, rec *best)
{
    if (!path)
        return pa__err(-ENOENT, "hwdb: no hardware database found (neither the "
                                "installed one nor the source tree's); give one with "
                                "--hwdb FILE or $POWERAPI_HWDB");
    FILE *f = fopen(path, "re");
    if (!f)
        return pa__err(-errno,
                       "hwdb: cannot open %s: %s; give another with "
                       "--hwdb FILE or $POWERAPI_HWDB",
                       path, strerror(errno));
    char nkey[256];
    if (want != REC_NIC)
        normalize(key, nkey, sizeof(nkey));
    parser ps = {.path = path};
    char line[HWDB_LINE_MAX];
    seen *sv = NULL;
    size_t nsv = 0, capsv = 0;
    size_t best_len = 0;
    int found = 0, rc = 0;
    rec r;
    while (fgets(line, sizeof(line), f)) {
        ps.line++;
        size_t ll = strlen(line);
        if (ll == sizeof(line) - 1 && line[ll - 1] != '\n' && !feof(f)) {
            rc = PERR(&ps, "line longer than %d characters", HWDB_LINE_MAX - 2);
            goto out;
        }
        rc = parse_line(&ps, line, &r);
        if (rc < 0)
            goto out;
        if (rc == 0)
            continue;
        rc = 0;
        /* duplicates make "which one wins" depend on file order: refuse */
        char norm[96];
        const char *m = r.kind == REC_CPU     ? r.u.cpu.match
                        : r.kind == REC_CURVE ? r.u.curve.match
                                              : r.u.nic.match;
        normalize(m, norm, sizeof(norm));
        for (size_t i = 0; i < nsv; i++)
            if (sv[i].kind == r.kind && !strcmp(sv[i].norm, norm)) {
                rc = PERR(&ps, "duplicate %s record \"%s\" (first at line %u)",
                          r.kind == REC_CPU     ? "cpu"
                          : r.kind == REC_CURVE ? "curve"
                                                : "nic",
                          m, sv[i].line);
                goto out;
            }
        if (PA__GROW(sv, capsv, nsv + 1, 64) < 0) {
            rc = pa__err(-ENOMEM, "hwdb: out of memory reading %s", path);
            goto out;
        }
        sv[nsv].kind = r.kind;
        sv[nsv].line = ps.line;
        memcpy(sv[nsv].norm, norm, sizeof(norm));
        nsv++;
        if (r.kind != want || !key)
            continue;
        if (want != REC_NIC) {
            size_t l = strlen(norm);
            if (l > best_len && match_words(nkey, norm)) {
                best_len = l;
                *best = r;
                found = 1;
            }
        } else if (!strcmp(r.u.nic.match, key)) {
            *best = r;
            found = 1;
        }
    }
    if (ferror(f)) {
        rc = pa__err(-EIO, "hwdb: error reading %s", path);
        goto out;
    }
    rc = found;
out:
    free(sv);
    fclose(f);
    return rc;
}

int pa__hwdb_cpu(const char *hwdb_path, const char *model, pa_hwdb_cpu *out)
{
    rec best;
    const char *path = pa__hwdb_path(hwdb_path);
    int rc = hwdb_scan(path, REC_CPU, model ? model : "", &best);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return -ENOENT; /* not an error of the file: no message (callers
                           say what it means for them) */
    *out = best.u.cpu;
    return 0;
}

int pa__hwdb_nic(const char *hwdb_path, const char *driver, pa_hwdb_nic *out)
{
    rec best;
    const char *path = pa__hwdb_path(hwdb_path);
    int rc = hwdb_scan(path, REC_NIC, driver ? driver : "", &best);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return -ENOENT; /* no message, as above */
    *out = best.u.nic;
    return 0;
}

int pa__hwdb_curve(const char *hwdb_path, const char *model, pa_curve *out)
{
    rec best;
    const char *path = pa__hwdb_path(hwdb_path);
    int rc = hwdb_scan(path, REC_CURVE, model ? model : "", &best);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return -ENOENT; /* no message, as above */
    *out = best.u.curve;
    return 0;
}

const char *pa__module_hwdb(const pa_module *m)
{
    return pa__hwdb_path(m->ctx ? m->ctx->env.hwdb : NULL);
}
