/* test_docs.c - every reference to a document resolves (the rules are in
 * DESIGN.md section 9.2).
 *
 * Scans every source, header, script, build and Markdown file of the
 * repository (build trees and .git left out) for:
 *   - citations of a section of the design document: its file name, then
 *     "section" or the sign "§", then a number (6, 6.1); DESIGN.md must
 *     have a heading with that number; inside DESIGN.md the sign and a
 *     number alone refer to DESIGN.md itself;
 *   - any mention of a Markdown file ("README.md", "bindings/README.md"),
 *     resolved from the mentioning file's folder, then from the repository
 *     root: the file must exist; a mention followed by "#anchor" must name a
 *     heading of it;
 *   - in Markdown files, relative links and images "[text](path#anchor)"
 *     (URLs with a scheme are left alone): the path must exist, and the
 *     anchor must be a heading of the target (or of the file itself for
 *     "#anchor"), with GitHub's slugs.
 * A failure names file:line and what is missing.
 */
#include "testutil.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Spelled apart so that this file's own text cites nothing. */
#define MD ".md"
#define DESIGN_MD "DESIGN" MD

/* ------------------------------------------------------------------ */
/* Findings                                                            */
/* ------------------------------------------------------------------ */

typedef struct findings {
    char *text; /* "file:line: message\n"... */
    size_t len, cap;
    int n;
} findings;

static void found(findings *f, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void found(findings *f, const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char row[1400];
    int n = snprintf(row, sizeof row, "%s:%d: %s\n", file, line, msg);
    if (n < 0)
        return;
    if (f->len + (size_t)n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 4096;
        while (cap < f->len + (size_t)n + 1)
            cap *= 2;
        char *t = realloc(f->text, cap);
        ck_assert_ptr_nonnull(t);
        f->text = t;
        f->cap = cap;
    }
    memcpy(f->text + f->len, row, (size_t)n + 1);
    f->len += (size_t)n;
    f->n++;
}

/* ------------------------------------------------------------------ */
/* Markdown headings: GitHub slugs and section numbers                 */
/* ------------------------------------------------------------------ */

/* GitHub's anchor of a heading: lower case, letters, digits, '-', '_' and
 * non-ASCII bytes kept, blanks become '-', other punctuation dropped. */
static void slugify(const char *text, char *out, size_t len)
{
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p && k + 1 < len; p++) {
        if (*p >= 0x80 || isalnum(*p) || *p == '-' || *p == '_')
            out[k++] = (char)tolower(*p);
        else if (*p == ' ')
            out[k++] = '-';
    }
    out[k] = '\0';
}

typedef struct heading_set {
    char **slug;
    char **number; /* "6", "6.1"; NULL when not numbered */
    size_t n;
} heading_set;

static void headings_free(heading_set *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->slug[i]);
        free(h->number[i]);
    }
    free(h->slug);
    free(h->number);
    memset(h, 0, sizeof *h);
}

/* A fence line ("```", "~~~", possibly indented by up to 3 blanks). */
static bool is_fence(const char *line)
{
    while (*line == ' ')
        line++;
    return !strncmp(line, "```", 3) || !strncmp(line, "~~~", 3);
}

/* The headings of a Markdown file (outside fenced code). */
static int headings_read(const char *path, heading_set *h)
{
    memset(h, 0, sizeof *h);
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    char line[4096];
    bool fenced = false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (is_fence(line)) {
            fenced = !fenced;
            continue;
        }
        if (fenced || line[0] != '#')
            continue;
        const char *t = line;
        while (*t == '#')
            t++;
        if (*t != ' ')
            continue;
        while (*t == ' ')
            t++;
        char text[4096];
        snprintf(text, sizeof text, "%s", t);
        /* a closing run of '#' is not part of the text */
        size_t tl = strlen(text);
        while (tl && (text[tl - 1] == '#' || text[tl - 1] == ' '))
            text[--tl] = '\0';
        char slug[4096];
        slugify(text, slug, sizeof slug);
        /* GitHub numbers repeated slugs: x, x-1, x-2 */
        size_t same = 0;
        for (size_t i = 0; i < h->n; i++) {
            const char *s = h->slug[i];
            size_t sl = strlen(slug);
            if (!strcmp(s, slug) ||
                (!strncmp(s, slug, sl) && s[sl] == '-' &&
                 strspn(s + sl + 1, "0123456789") == strlen(s + sl + 1) && s[sl + 1]))
                same++;
        }
        char final[4200];
        if (same)
            snprintf(final, sizeof final, "%s-%zu", slug, same);
        else
            snprintf(final, sizeof final, "%s", slug);
        char *num = NULL;
        size_t nl = 0;
        while (isdigit((unsigned char)text[nl]) ||
               (text[nl] == '.' && isdigit((unsigned char)text[nl + 1])))
            nl++;
        if (nl && (text[nl] == '.' || text[nl] == ' '))
            num = strndup(text, nl);
        char **s2 = realloc(h->slug, (h->n + 1) * sizeof *s2);
        ck_assert_ptr_nonnull(s2);
        h->slug = s2;
        char **n2 = realloc(h->number, (h->n + 1) * sizeof *n2);
        ck_assert_ptr_nonnull(n2);
        h->number = n2;
        h->slug[h->n] = strdup(final);
        h->number[h->n] = num;
        h->n++;
    }
    fclose(f);
    return 0;
}

static bool has_slug(const heading_set *h, const char *slug)
{
    for (size_t i = 0; i < h->n; i++)
        if (!strcmp(h->slug[i], slug))
            return true;
    return false;
}

static bool has_number(const heading_set *h, const char *num)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->number[i] && !strcmp(h->number[i], num))
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* Resolution                                                          */
/* ------------------------------------------------------------------ */

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* rel resolved from dir (the mentioning file's folder) then from root;
 * the path that exists goes to out.  false when neither does. */
static bool resolve(const char *root, const char *dir, const char *rel, bool dir_only, char *out,
                    size_t len)
{
    snprintf(out, len, "%s/%s", dir, rel);
    if (exists(out))
        return true;
    if (dir_only)
        return false;
    snprintf(out, len, "%s/%s", root, rel);
    return exists(out);
}

/* Checks an anchor of a Markdown file. */
static void check_anchor(findings *f, const char *file, int line, const char *target,
                         const char *shown, const char *anchor)
{
    heading_set h;
    if (headings_read(target, &h) < 0) {
        found(f, file, line, "cannot read %s", shown);
        return;
    }
    if (!has_slug(&h, anchor))
        found(f, file, line, "%s has no heading with anchor #%s", shown, anchor);
    headings_free(&h);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static bool path_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == '/';
}

typedef struct scan {
    const char *root;
    findings *f;
    heading_set design; /* DESIGN.md at the root, if any */
    bool have_design;
} scan;

/* Section citations (forms[]), and the bare sign inside DESIGN.md. */
static void check_sections(scan *s, const char *file, int lineno, const char *line, bool in_design)
{
    static const char *const forms[] = {DESIGN_MD " section ", DESIGN_MD " §",
                                        DESIGN_MD " sections "};
    for (size_t k = 0; k < 3 + (in_design ? 1 : 0); k++) {
        const char *form = k < 3 ? forms[k] : "§";
        for (const char *p = strstr(line, form); p; p = strstr(p + 1, form)) {
            if (k == 3 && p >= line + 10 && !strncmp(p - 10, DESIGN_MD " ", 10))
                continue; /* already checked with the file name */
            const char *q = p + strlen(form);
            char num[32];
            size_t n = 0;
            while (n + 1 < sizeof num && (isdigit((unsigned char)q[n]) ||
                                          (q[n] == '.' && isdigit((unsigned char)q[n + 1]))))
                num[n] = q[n], n++;
            num[n] = '\0';
            if (!n) {
                found(s->f, file, lineno, "'%s' without a section number", form);
                continue;
            }
            if (!s->have_design)
                found(s->f, file, lineno,
                      "cites " DESIGN_MD " section %s, but there is no " DESIGN_MD
                      " at the repository root",
                      num);
            else if (!has_number(&s->design, num))
                found(s->f, file, lineno,
                      "cites " DESIGN_MD " section %s, which " DESIGN_MD
                      " does not have (its headings are numbered '## N.' and "
                      "'### N.M')",
                      num);
        }
    }
}

/* Every Markdown file name (and "#anchor" after it) mentioned in a line. */
static void check_mentions(scan *s, const char *file, const char *dir, int lineno, const char *line,
                           bool md)
{
    for (const char *p = strstr(line, ".md"); p; p = strstr(p + 1, ".md")) {
        if (path_char(p[3]) && p[3] != '/' && p[3] != '.')
            continue; /* ".mdx", ".md5"... */
        if (p[3] == '/' || (p[3] == '.' && path_char(p[4])))
            continue;
        const char *b = p;
        while (b > line && path_char(b[-1]))
            b--;
        if (b == p)
            continue; /* ".md" alone */
        if (b > line && (b[-1] == ':' || b[-1] == '$' || b[-1] == '{'))
            continue; /* a URL or a variable */
        if (b[0] == '/' && b[1] == '/')
            continue;
        if (md && b >= line + 2 && b[-1] == '(' && b[-2] == ']')
            continue; /* a link target: check_links looks at it */
        char rel[1024];
        size_t n = (size_t)(p + 3 - b);
        if (n >= sizeof rel)
            continue;
        memcpy(rel, b, n);
        rel[n] = '\0';
        /* a file the programs write, not a document of the repository:
         * `powerapi diff`'s summary for a pull request (issue 44) */
        const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
        if (!strcmp(base, "diff" MD))
            continue;
        char path[4096];
        if (rel[0] == '/') {
            found(s->f, file, lineno, "mentions %s, a path outside the repository", rel);
            continue;
        }
        if (!resolve(s->root, dir, rel, false, path, sizeof path)) {
            found(s->f, file, lineno,
                  "mentions %s, which exists neither next to this file nor "
                  "at the repository root",
                  rel);
            continue;
        }
        if (p[3] == '#') {
            char anchor[256];
            size_t a = 0;
            const char *q = p + 4;
            while (a + 1 < sizeof anchor &&
                   (isalnum((unsigned char)q[a]) || q[a] == '-' || q[a] == '_'))
                anchor[a] = q[a], a++;
            anchor[a] = '\0';
            if (a)
                check_anchor(s->f, file, lineno, path, rel, anchor);
        }
    }
}

/* "[text](target)" and "![alt](target)" in a Markdown line. */
static void check_links(scan *s, const char *file, const char *dir, const char *self, int lineno,
                        const char *text)
{
    /* code spans (`...`) show links without making them */
    char *line = strdup(text);
    ck_assert_ptr_nonnull(line);
    for (char *c = strchr(line, '`'); c;) {
        char *e = strchr(c + 1, '`');
        if (!e)
            break;
        memset(c, ' ', (size_t)(e - c + 1));
        c = strchr(e + 1, '`');
    }
    for (const char *p = strstr(line, "]("); p; p = strstr(p + 2, "](")) {
        const char *q = p + 2;
        bool angle = *q == '<';
        if (angle)
            q++;
        const char *e = q;
        while (*e && *e != (angle ? '>' : ')') && (angle || *e != ' '))
            e++;
        if (!*e)
            continue;
        char target[2048];
        size_t n = (size_t)(e - q);
        if (n == 0 || n >= sizeof target)
            continue;
        memcpy(target, q, n);
        target[n] = '\0';
        /* a scheme ("https:", "mailto:") makes it a URL */
        size_t sch = strspn(target, "abcdefghijklmnopqrstuvwxyz+.-");
        if (sch && target[sch] == ':')
            continue;
        char *hash = strchr(target, '#');
        char anchor[512] = "";
        if (hash) {
            snprintf(anchor, sizeof anchor, "%s", hash + 1);
            *hash = '\0';
        }
        char path[4096];
        if (!target[0]) {
            snprintf(path, sizeof path, "%s", self);
        } else if (!resolve(s->root, dir, target, true, path, sizeof path)) {
            found(s->f, file, lineno, "link to %s, which does not exist", target);
            continue;
        }
        if (anchor[0]) {
            if (ends_with(path, ".md"))
                check_anchor(s->f, file, lineno, path, target[0] ? target : file, anchor);
            else
                found(s->f, file, lineno, "link with an anchor #%s into %s, which is not Markdown",
                      anchor, target);
        }
    }
    free(line);
}

static bool scanned_file(const char *name)
{
    static const char *const ext[] = {".c",  ".h",     ".py",  ".java", ".sh", ".md",
                                      ".in", ".cmake", ".txt", ".html", NULL};
    if (!strcmp(name, "CMakeLists.txt"))
        return true;
    if (ends_with(name, ".txt"))
        return false; /* data (hwdb, fixtures) */
    for (size_t i = 0; ext[i]; i++)
        if (ends_with(name, ext[i]))
            return true;
    return false;
}

static void scan_file(scan *s, const char *path, const char *rel, const char *dir)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        found(s->f, rel, 0, "cannot read: %s", strerror(errno));
        return;
    }
    bool md = ends_with(path, ".md");
    bool in_design = !strcmp(rel, DESIGN_MD);
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        check_sections(s, rel, lineno, line, in_design);
        check_mentions(s, rel, dir, lineno, line, md);
        if (md)
            check_links(s, rel, dir, path, lineno, line);
    }
    free(line);
    fclose(f);
}

/* A folder that is a build tree, or not part of the sources. */
static bool skipped_dir(const char *path, const char *name)
{
    if (name[0] == '.' || !strncmp(name, "build", 5))
        return true;
    char cache[4096];
    snprintf(cache, sizeof cache, "%s/CMakeCache.txt", path);
    return exists(cache);
}

static void scan_dir(scan *s, const char *path, const char *rel)
{
    DIR *d = opendir(path);
    if (!d) {
        found(s->f, rel[0] ? rel : ".", 0, "cannot list: %s", strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[4096], subrel[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        snprintf(subrel, sizeof subrel, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        struct stat st;
        if (lstat(sub, &st) < 0 || S_ISLNK(st.st_mode))
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (!skipped_dir(sub, e->d_name))
                scan_dir(s, sub, subrel);
        } else if (S_ISREG(st.st_mode) && scanned_file(e->d_name)) {
            scan_file(s, sub, subrel, path);
        }
    }
    closedir(d);
}

/* Checks the tree at root; returns the number of broken references, with
 * one "file:line: ..." row each in f. */
static int check_tree(const char *root, findings *f)
{
    scan s = {.root = root, .f = f};
    char design[4096];
    snprintf(design, sizeof design, "%s/" DESIGN_MD, root);
    s.have_design = headings_read(design, &s.design) == 0;
    scan_dir(&s, root, "");
    headings_free(&s.design);
    return f->n;
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

static char *project_root(void)
{
    char *root = realpath(PA_SOURCE_TESTS "/..", NULL);
    ck_assert_ptr_nonnull(root);
    return root;
}

START_TEST(test_repository_references_resolve)
{
    char *root = project_root();
    findings f = {0};
    int n = check_tree(root, &f);
    ck_assert_msg(n == 0,
                  "%d document reference(s) point to nothing (fix the "
                  "reference, or the document):\n%s",
                  n, f.text ? f.text : "");
    free(f.text);
    free(root);
}
END_TEST

START_TEST(test_design_has_the_cited_sections)
{
    /* the numbers the code has always cited keep their meaning */
    char *root = project_root();
    char path[4096];
    snprintf(path, sizeof path, "%s/" DESIGN_MD, root);
    heading_set h;
    ck_assert_int_eq(headings_read(path, &h), 0);
    static const struct {
        const char *num, *words;
    } want[] = {{"6", "formulas"}, {"8", "output contracts"}, {"9", "development machines"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        bool ok = false;
        for (size_t k = 0; k < h.n; k++)
            if (h.number[k] && !strcmp(h.number[k], want[i].num)) {
                char words[64];
                slugify(want[i].words, words, sizeof words);
                ok = strstr(h.slug[k], words) != NULL;
            }
        ck_assert_msg(ok, DESIGN_MD " section %s is no longer about %s", want[i].num,
                      want[i].words);
    }
    headings_free(&h);
    free(root);
}
END_TEST

START_TEST(test_slugs_follow_github)
{
    char out[256];
    slugify("9. The development machines, and how everything is tested", out, sizeof out);
    ck_assert_str_eq(out, "9-the-development-machines-and-how-everything-is-tested");
    slugify("6.4 In the agent: the Jalen equations", out, sizeof out);
    ck_assert_str_eq(out, "64-in-the-agent-the-jalen-equations");
    slugify("`auto` (the default)", out, sizeof out);
    ck_assert_str_eq(out, "auto-the-default");
    slugify("jalen — energy per thread", out, sizeof out);
    ck_assert_str_eq(out, "jalen-—-energy-per-thread");
}
END_TEST

/* The checker on a small tree with known good and broken references: it
 * must report exactly the broken ones, with their file and line.  The
 * cited names are built at run time so that this file's own text holds no
 * broken reference. */
START_TEST(test_broken_references_are_reported)
{
    char *dir = pa_test_tmpdir();
    const char *D = DESIGN_MD;
    pa_test_write(dir, DESIGN_MD,
                  "# title\n\n## 1. One\n\n### 1.2 Two, sub\n\n```sh\n"
                  "# not a heading\n```\n\n## 1. One\n\n"
                  "A bare §1.2 is fine, §4 is not.\n");
    pa_test_write(dir, "src/a.c",
                  "/* %s section 1 */\n/* %s §1.2 */\n/* %s section 7 */\n"
                  "/* %s §3.1, and see docs/x%s */\n",
                  D, D, D, D, MD);
    pa_test_write(dir, "docs/x" MD,
                  "[ok](../%s#1-one) [dup](../%s#1-one-1) [self](#sub)\n\n"
                  "## Sub\n\n[bad](../%s#nope)\n[missing](nothere%s)\n"
                  "![img](pic.png) [web](https://example.org/x%s)\n"
                  "See %s and MISSING%s and [code](../src/a.c#L3).\n"
                  "[heading](#not-a-heading)\n",
                  D, D, D, MD, MD, D, MD);
    findings f = {0};
    int n = check_tree(dir, &f);
    const char *want[] = {
        DESIGN_MD ":13: cites " DESIGN_MD " section 4,",
        "src/a.c:3: cites " DESIGN_MD " section 7,",
        "src/a.c:4: cites " DESIGN_MD " section 3.1,",
        "docs/x" MD ":5: ../" DESIGN_MD " has no heading with anchor #nope",
        "docs/x" MD ":6: link to nothere" MD ", which does not exist",
        "docs/x" MD ":7: link to pic.png, which does not exist",
        "docs/x" MD ":8: mentions MISSING" MD ", which exists neither",
        "docs/x" MD ":8: link with an anchor #L3 into ../src/a.c",
        "docs/x" MD ":9: docs/x" MD " has no heading with anchor "
        "#not-a-heading",
    };
    size_t nwant = sizeof want / sizeof want[0];
    for (size_t i = 0; i < nwant; i++)
        ck_assert_msg(f.text && strstr(f.text, want[i]), "expected \"%s\" among the findings:\n%s",
                      want[i], f.text ? f.text : "(none)");
    ck_assert_msg(n == (int)nwant, "%d findings, %zu expected:\n%s", n, nwant,
                  f.text ? f.text : "");
    free(f.text);

    /* fixing them makes the tree clean */
    pa_test_write(dir, DESIGN_MD,
                  "# title\n\n## 1. One\n\n### 1.2 Two, sub\n\n## 3. Three\n\n"
                  "### 3.1 x\n\n## 4. Four\n\n## 7. Seven\n\n## 1. One\n\n"
                  "§1.2 and §4.\n");
    pa_test_write(dir, "docs/x" MD,
                  "[ok](../%s#1-one) [dup](../%s#1-one-1) [self](#sub)\n\n"
                  "## Sub\n\n[web](https://example.org/x%s)\n",
                  D, D, MD);
    findings g = {0};
    ck_assert_msg(check_tree(dir, &g) == 0, "still reported:\n%s", g.text ? g.text : "");
    free(g.text);
    pa_test_rmtree(dir);
}
END_TEST

static Suite *docs_suite(void)
{
    Suite *s = suite_create("docs");
    TCase *tc = tcase_create("references");
    tcase_add_test(tc, test_repository_references_resolve);
    tcase_add_test(tc, test_design_has_the_cited_sections);
    tcase_add_test(tc, test_slugs_follow_github);
    tcase_add_test(tc, test_broken_references_are_reported);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(docs_suite());
}
