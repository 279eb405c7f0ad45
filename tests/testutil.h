/* testutil.h - helpers shared by the Check test programs. */
#ifndef PA_TESTUTIL_H
#define PA_TESTUTIL_H

#include "powerapi.h"

#include <check.h>
#include <stddef.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull

/* Copies tests/fixtures/<name> into a fresh mkdtemp() directory and returns
 * its path (free with pa_test_rmtree, which also frees the string). */
char *pa_test_fixture_copy(const char *name);
/* Makes an empty mkdtemp() directory. */
char *pa_test_tmpdir(void);
/* Removes a directory tree made by the helpers above and frees path. */
void pa_test_rmtree(char *path);
/* Writes (creating parent directories) root/rel with printf-like text. */
void pa_test_write(const char *root, const char *rel, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Removes root/rel (a file, or a directory tree). */
void pa_test_remove(const char *root, const char *rel);
/* A context on root/proc, root/sys, root/dev and the source tree's hwdb.
 * Fails the test on error. */
pa_ctx *pa_test_ctx(const char *root);
/* Runs a shell command, returns its exit status (or 128+signal) and its
 * standard output in *out (malloc'd, may be NULL). */
int pa_test_run(const char *cmd, char **out);
/* Reads a whole file into a malloc'd string (NULL if unreadable). */
char *pa_test_slurp(const char *path);
/* Finds a target of a report by type and id (pid, or tid for threads). */
const pa_target_info *pa_test_target(const pa_report *r, pa_target_type type, pid_t id);
/* One run of the powerapi binary under test (CLI_PATH). */
typedef struct pa_test_cli_run {
    int status;   /* exit status, or 128+signal */
    int signaled; /* killed by a signal: a crash */
    char *out, *err;
} pa_test_cli_run;
/* Runs powerapi with the NULL-terminated argument vector (after argv[0]),
 * stdin on /dev/null, capturing stdout and stderr into *r. */
void pa_test_cli(pa_test_cli_run *r, char *const *args);
void pa_test_cli_free(pa_test_cli_run *r);
/* A loopback TCP port that nobody listens on, held (bound with
 * SO_REUSEADDR, never listening) until the program exits: a connection to
 * it is refused, and a receiver started there later with SO_REUSEADDR gets
 * it. */
unsigned pa_test_free_port(void);
/* A qemu-system-x86_64 (TCG) named -name guest=name,debug-threads=on with
 * -uuid uuid (NULL: none), whose firmware, written into dir, is a reset
 * vector's `jmp $`: its one vCPU spins, no kernel, no disk, a second to
 * start (test_live_vms, test_live_host).  extra: further arguments, NULL-
 * terminated (NULL: none).  The process dies with the test (PDEATHSIG). */
pid_t pa_test_qemu_spin(const char *dir, const char *name, const char *uuid,
                        const char *const *extra);
/* Runs a suite and returns the process exit status. */
int pa_test_main(Suite *s);

#endif
