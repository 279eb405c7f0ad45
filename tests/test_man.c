/* test_man.c - the manual pages: powerapi(1) and powerapi-CMD(1) as the
 * program writes them from its option tables (--man), those the build
 * wrote (build/man/man1), libpowerapi(3) and jalen(7) linted with mandoc
 * at its strictest level (style); every option --help lists is in the
 * command's page and every option of the page is in --help; every
 * function of powerapi.h is in libpowerapi(3) and every agent option key
 * (jalen-agent/src/options.c) in jalen(7). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAN_BUILT PA_BINARY_DIR "/man"

static char *dir;

static void setup(void)
{
    dir = pa_test_tmpdir();
}

static void teardown(void)
{
    pa_test_rmtree(dir);
}

static int have_mandoc(void)
{
    return system("command -v mandoc >/dev/null 2>&1") == 0;
}

/* The commands, as `powerapi --complete` lists them: a malloc'd buffer of
 * NUL-separated names, *n of them. */
static char *commands(size_t *n)
{
    char cmd[4200], *out = NULL;
    snprintf(cmd, sizeof(cmd), "'%s' --complete", CLI_PATH);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    *n = 0;
    for (char *p = out; *p; p++)
        if (*p == '\n') {
            *p = '\0';
            (*n)++;
        }
    ck_assert_uint_ge(*n, 9);
    return out;
}

/* mandoc -T lint -W style of path: nothing to say, exit 0. */
static void lint(const char *path)
{
    char cmd[4400], *out = NULL;
    snprintf(cmd, sizeof(cmd), "mandoc -T lint -W style '%s' 2>&1", path);
    int st = pa_test_run(cmd, &out);
    ck_assert_msg(st == 0 && out[0] == '\0', "%s: mandoc says (%d):\n%s", path, st, out);
    free(out);
}

/* `powerapi [CMD] --man` into dir/NAME and its text. */
static char *man_of(const char *c, const char *name)
{
    char cmd[8400], path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(cmd, sizeof(cmd), "'%s' %s --man > '%s'", CLI_PATH, c ? c : "", path);
    ck_assert_int_eq(pa_test_run(cmd, NULL), 0);
    char *t = pa_test_slurp(path);
    ck_assert_ptr_nonnull(t);
    return t;
}

START_TEST(test_pages_lint)
{
    if (!have_mandoc()) {
        fprintf(stderr, "test_pages_lint: SKIPPED: mandoc absent (Debian package "
                        "'mandoc', scripts/deps.sh)\n");
        return;
    }
    size_t n;
    char *cmds = commands(&n), *c = cmds;
    char path[4200];
    free(man_of(NULL, "powerapi.1"));
    snprintf(path, sizeof(path), "%s/powerapi.1", dir);
    lint(path);
    for (size_t i = 0; i < n; i++, c += strlen(c) + 1) {
        char name[128];
        snprintf(name, sizeof(name), "powerapi-%s.1", c);
        char *fresh = man_of(c, name);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        lint(path);
        /* the page the build wrote (and installs) is the program's */
        snprintf(path, sizeof(path), "%s/man/man1/%s", PA_BINARY_DIR, name);
        char *built = pa_test_slurp(path);
        ck_assert_msg(built != NULL, "the build did not write %s", path);
        ck_assert_msg(!strcmp(built, fresh), "%s differs from '%s --man'", path, c);
        free(built);
        free(fresh);
    }
    free(cmds);
    lint(MAN_BUILT "/man3/libpowerapi.3");
    lint(MAN_BUILT "/man7/jalen.7");
}
END_TEST

/* The "--long" names of a text: --help's option lines ("  -i, --interval
 * ...", "      --procfs DIR"), or the page's "\fB\-\-long\fR", one a line in
 * a malloc'd string ("\n--a\n--b\n"). */
static char *help_options(const char *help)
{
    size_t cap = strlen(help) + 2;
    char *out = calloc(1, cap + 1);
    ck_assert_ptr_nonnull(out);
    strcpy(out, "\n");
    for (const char *l = help; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        /* "  -i, --interval" or "      --procfs", not a continuation of a
         * help text at column 28 that starts with a dash */
        const char *p = l + strspn(l, " ");
        size_t indent = (size_t)(p - l);
        if (indent == 2 && p[0] == '-' && p[1] != '-' && !strncmp(p + 2, ", --", 4))
            p += 4;
        else if (indent != 6 || strncmp(p, "--", 2))
            continue;
        size_t len = strcspn(p, " \n");
        strncat(out, p, len);
        strcat(out, "\n");
    }
    return out;
}

static char *page_options(const char *page)
{
    char *out = calloc(1, strlen(page) + 2);
    ck_assert_ptr_nonnull(out);
    strcpy(out, "\n");
    for (const char *p = strstr(page, "\n.TP\n"); p; p = strstr(p + 1, "\n.TP\n")) {
        const char *o = strstr(p + 5, "\\fB\\-\\-");
        const char *nl = strchr(p + 5, '\n');
        if (!o || (nl && o > nl))
            continue;
        o += 7;
        strcat(out, "--");
        strncat(out, o, strcspn(o, "\\"));
        strcat(out, "\n");
    }
    return out;
}

START_TEST(test_help_and_man_agree)
{
    size_t n;
    char *cmds = commands(&n), *c = cmds;
    for (size_t i = 0; i < n; i++, c += strlen(c) + 1) {
        pa_test_cli_run r;
        char *args[] = {c, "--help", NULL};
        pa_test_cli(&r, args);
        ck_assert_int_eq(r.status, 0);
        char *h = help_options(r.out);
        char name[128];
        snprintf(name, sizeof(name), "powerapi-%s.1", c);
        char *page = man_of(c, name);
        char *m = page_options(page);
        ck_assert_msg(strstr(h, "\n--help\n"), "%s --help: %s", c, h);
        ck_assert_msg(!strcmp(h, m), "%s: --help lists\n%s\nthe page\n%s", c, h, m);
        /* the one-line summary of `powerapi --help` names the page */
        ck_assert_msg(strstr(page, ".SH NAME\npowerapi-"), "%s", page);
        free(h);
        free(m);
        free(page);
        pa_test_cli_free(&r);
    }
    /* powerapi(1) points to each command's page */
    char *top = man_of(NULL, "powerapi.1");
    c = cmds;
    for (size_t i = 0; i < n; i++, c += strlen(c) + 1) {
        char want[128];
        snprintf(want, sizeof(want), ".BR powerapi\\-%s (1)\n", c);
        ck_assert_msg(strstr(top, want), "powerapi(1) lacks %s", want);
    }
    free(top);
    /* README.md's "What it is" names every command (a new user read six
     * of nine there: profile, jalen and calibrate were missing) */
    char rpath[4200];
    snprintf(rpath, sizeof(rpath), "%s/../%s", PA_SOURCE_TESTS, "README.md");
    char *readme = pa_test_slurp(rpath);
    ck_assert_ptr_nonnull(readme);
    char *what = strstr(readme, "- **powerapi** — the command:");
    ck_assert_ptr_nonnull(what);
    char *next = strstr(what + 1, "\n- **");
    if (next)
        *next = '\0';
    c = cmds;
    for (size_t i = 0; i < n; i++, c += strlen(c) + 1) {
        char want[128];
        snprintf(want, sizeof(want), "`%s`", c);
        ck_assert_msg(strstr(what, want), "README.md's list of commands lacks %s: %s", want, what);
    }
    free(readme);
    free(cmds);
}
END_TEST

/* Every function powerapi.h declares or names is in libpowerapi(3), and
 * so is every one of the module-helper header, powerapi_module.h. */
static int names_in_page(const char *h, const char *page)
{
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_nonnull(page);
    int found = 0;
    for (const char *p = strstr(h, "pa_"); p; p = strstr(p + 1, "pa_")) {
        if (p > h && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z')))
            continue;
        size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
        if (p[len] != '(')
            continue;
        char want[96];
        snprintf(want, sizeof(want), "B%s %.*s", "R", (int)len, p);
        char alt[96];
        snprintf(alt, sizeof(alt), ".B %.*s\n", (int)len, p);
        ck_assert_msg(strstr(page, want) || strstr(page, alt), "libpowerapi(3) does not name %.*s",
                      (int)len, p);
        found++;
    }
    return found;
}

START_TEST(test_libpowerapi_page)
{
    char *h = pa_test_slurp(PA_SOURCE_TESTS "/../libpowerapi/include/powerapi.h");
    char *hm = pa_test_slurp(PA_SOURCE_TESTS "/../libpowerapi/include/powerapi_module.h");
    char *page = pa_test_slurp(MAN_BUILT "/man3/libpowerapi.3");
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_nonnull(hm);
    ck_assert_ptr_nonnull(page);
    ck_assert_int_ge(names_in_page(h, page), 60);
    ck_assert_int_ge(names_in_page(hm, page), 10);
    free(h);
    free(hm);
    free(page);
}
END_TEST

/* Every key of the agent's jl_keys is an entry of jalen(7), and every
 * entry is a key. */
START_TEST(test_jalen_page)
{
    char *src = pa_test_slurp(PA_SOURCE_TESTS "/../jalen-agent/src/options.c");
    char *page = pa_test_slurp(MAN_BUILT "/man7/jalen.7");
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(page);
    const char *k = strstr(src, "jl_keys[] = {");
    ck_assert_ptr_nonnull(k);
    const char *end = strstr(k, "NULL");
    int keys = 0, entries = 0;
    for (const char *q = strchr(k, '"'); q && q < end; q = strchr(q + 1, '"')) {
        const char *e = strchr(q + 1, '"');
        char a[96], b[96];
        snprintf(a, sizeof(a), ".TP\n.BI %.*s= ", (int)(e - q - 1), q + 1);
        snprintf(b, sizeof(b), ".TP\n.B %.*s\n", (int)(e - q - 1), q + 1);
        ck_assert_msg(strstr(page, a) || strstr(page, b), "jalen(7) lacks %.*s", (int)(e - q - 1),
                      q + 1);
        keys++;
        q = e;
    }
    const char *opts = strstr(page, ".SH OPTIONS"), *files = strstr(page, ".SH FILES");
    for (const char *p = strstr(opts, ".TP\n"); p && p < files; p = strstr(p + 1, ".TP\n"))
        entries++;
    ck_assert_int_ge(keys, 17);
    ck_assert_int_eq(entries, keys);
    free(src);
    free(page);
}
END_TEST

/* `cmake --install` puts the pages, the completion, the dashboard and
 * the rules where their tools look; `man powerapi` then reads the page. */
START_TEST(test_installed)
{
    char cmd[8400], *out = NULL;
    snprintf(cmd, sizeof(cmd), "cmake --install '%s' --prefix '%s' 2>&1", PA_BINARY_DIR, dir);
    ck_assert_msg(pa_test_run(cmd, &out) == 0, "%s", out);
    free(out);
    /* the pages compressed, as Debian's policy asks (man reads them) */
    static const char *const files[] = {
        "share/man/man1/powerapi.1.gz",
        "share/man/man1/powerapi-monitor.1.gz",
        "share/man/man1/powerapi-serve.1.gz",
        "share/man/man3/libpowerapi.3.gz",
        "share/man/man7/jalen.7.gz",
        "share/bash-completion/completions/powerapi",
        "share/zsh/vendor-completions/_powerapi",
        "share/powerapi/fleet/grafana-dashboard.json",
        "share/powerapi/fleet/powerapi.rules.yml",
        "share/powerapi/fleet/prometheus.yml",
    };
    struct stat st;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        ck_assert_msg(stat(path, &st) == 0 && st.st_size > 0, "not installed: %s", files[i]);
    }
    if (system("command -v man >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_installed: man SKIPPED: no man command\n");
        return;
    }
    snprintf(cmd, sizeof(cmd), "MANPAGER=cat man -M '%s/share/man' powerapi 2>&1", dir);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "powerapi-monitor(1)"), "%s", out);
    free(out);
    snprintf(cmd, sizeof(cmd), "MANPAGER=cat man -M '%s/share/man' 7 jalen 2>&1", dir);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "calibration="), "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("man");
    TCase *tc = tcase_create("man");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_pages_lint);
    tcase_add_test(tc, test_help_and_man_agree);
    tcase_add_test(tc, test_libpowerapi_page);
    tcase_add_test(tc, test_jalen_page);
    tcase_add_test(tc, test_installed);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
