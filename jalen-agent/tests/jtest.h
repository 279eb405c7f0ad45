/*
 * jtest.h - helpers of the jalen agent tests: run real JVMs with the agent,
 * read the output files back.
 */
#ifndef JTEST_H
#define JTEST_H

#include <stddef.h>
#include <sys/types.h>

#define JT_MAXF 24

typedef struct jt_row {
    char *f[JT_MAXF];
    int nf;
} jt_row;

typedef struct jt_csv {
    jt_row head;
    jt_row *rows;
    size_t n;
    int bad; /* rows whose field count differs from the header's */
} jt_csv;

/* A fresh folder under $TMPDIR (or /tmp), made with mkdtemp. */
char *jt_tmpdir(void);
void jt_rmtree(const char *dir);

/* The java binary jt_spawn runs (default JALEN_JAVA). */
extern const char *jt_java;

/* Runs a Check suite (and frees it): the exit status of a test program,
 * 0 when every test passed. */
struct Suite;
int jt_run_suite(struct Suite *s);

/* Switches jt_java to the second JDK found at configure time and returns
 * 1; 0 (after a SKIPPED line naming what) when there is none. */
int jt_other_jdk(const char *what);

/* Starts java -agentpath:AGENT=OPTS -cp CP ARGS... (opts NULL: no agent),
 * stdout to a pipe (*out_fd, may be NULL to discard), stderr to errfile. */
pid_t jt_spawn(const char *opts, const char *cp, const char *const *args, int *out_fd,
               const char *errfile);
/* Waits up to timeout_s (then SIGKILL); returns the wait status, -1 on error. */
int jt_wait(pid_t pid, double timeout_s);
/* Reads lines from fd until one starts with prefix (or timeout); the line is
 * copied into buf.  0 on success. */
int jt_wait_line(int fd, const char *prefix, char *buf, size_t len, double timeout_s);

char *jt_read(const char *path);
int jt_csv_load(const char *path, jt_csv *out);
void jt_csv_free(jt_csv *c);
/* First row whose field col equals name, or NULL. */
const jt_row *jt_csv_find(const jt_csv *c, int col, const char *name);
double jt_num(const jt_row *r, int col);
double jt_csv_sum(const jt_csv *c, int col);
/* A number of a flat JSON object ("key": 1.5), NAN when absent. */
double jt_json_num(const char *json, const char *key);
/* 1 when "key": true. */
int jt_json_true(const char *json, const char *key);
/* Counts the lines of a text. */
int jt_lines(const char *s);

/* Checks every output file of a run (present, parseable, columns of
 * DESIGN.md section 8, conservation within tol), ck_assert inside. */
void jt_check_outputs(const char *dir, double tol);

/* Runs java ARGS (JALEN_CLASSES on the class path) with the agent's opts
 * plus ",out=DIR/out,quiet", for up to timeout_s, and checks what every
 * such run must give: exit 0, nothing on stderr, every output file
 * (jt_check_outputs, 0.5 %), summary.json complete.  Returns
 * summary.json's text (free it); ck_assert inside. */
char *jt_run_quiet(const char *dir, const char *opts, const char *const *args, double timeout_s);

#endif
