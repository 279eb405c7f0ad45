/*
 * fuzz.h - what the fuzz targets of tests/fuzz/ share.
 *
 * Each fuzz_<name>.c defines LLVMFuzzerTestOneInput and is built twice:
 * with libFuzzer (PA_FUZZ=ON, clang; tests/fuzz/run.sh runs it) and with
 * replay.c (any compiler; ctest runs every file of corpus/<name>/ through
 * it, so a crash once found stays fixed).
 *
 * Inputs that stand for several files are cut into pieces at FZ_SEP; the
 * piece i replaces file i of the target, a missing piece leaves the file
 * as the fixture has it.
 */
#ifndef PA_FUZZ_H
#define PA_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_SEP "\n~~~\n"
#define FZ_MAX_PIECES 16

typedef struct fz_piece {
    const uint8_t *p;
    size_t n;
} fz_piece;

/* Cuts data at FZ_SEP into at most max pieces (the last one keeps any
 * further separators).  Returns the number of pieces (>= 1). */
size_t fz_split(const uint8_t *data, size_t size, fz_piece *out, size_t max);

/* A NUL-terminated malloc'd copy of a piece (never NULL: aborts on ENOMEM,
 * which libFuzzer reports). */
char *fz_strdup(const fz_piece *pc);

/* A private copy of tests/fixtures/<fixture> (or an empty tree when NULL)
 * with proc/, sys/ and dev/ folders, made once per process under
 * /dev/shm (else $TMPDIR) and removed at exit. */
const char *fz_root(const char *fixture);

/* A context on root/proc, root/sys, root/dev and the source tree's hwdb
 * (aborts on failure). */
struct pa_ctx;
struct pa_ctx *fz_ctx(const char *root);

/* Writes root/rel (parents created), replacing it. */
void fz_write(const char *root, const char *rel, const void *buf, size_t len);

/* One file a sensor target replaces: before tick `tick` (0 or 1). */
typedef struct fz_file {
    unsigned tick;
    const char *rel; /* under the root: "proc/300/stat" */
    long long at;    /* > 0: the piece is 8 bytes (zero-padded) written at
                        this offset of the file (an MSR), not the file */
} fz_file;

/* A whole file replaced before tick t. */
#define FZ_F(t, r)                                                                                 \
    {                                                                                              \
        .tick = (t), .rel = (r)                                                                    \
    }

/* A sensor run on a fixture tree: a context on the copy, the modules
 * enabled in order, three ticks a second apart (the files of tick 1
 * written after the first), the reports read.
 *
 * The context is made on the first input and kept for the process, as a
 * long-running monitor keeps one: each input stops the modules, writes its
 * files, starts the modules again (so their start-time reads see the
 * input) and ticks on the one clock.  The context's own state (watched
 * targets, reports) thus runs on from input to input; a crash that needs
 * that history does not come back from its input alone, which is why
 * PA_FUZZ_FRESH=1 makes a new context for every input (the replay tool
 * sets it: each input on its own), and so does a spec's .fresh, for the
 * targets whose files the context reads only when it first sees a process
 * (cgroup, schedstat: a kept context saw them once, libFuzzer's coverage
 * showed it).  With the small hardware database (fz_root) the kept context
 * makes a target about 3 times faster (proc_stat: 700 -> 2,400 inputs a
 * second on a busy host). */
typedef struct fz_sensor {
    const char *fixture;
    const char *modules[4]; /* "name" or "name:options" */
    pid_t watch_pid;        /* 0 none */
    unsigned watch_flags;   /* PA_WATCH_* */
    int watch_all;          /* pa_watch_all argument, 0 none */
    int cgroups;            /* pa_report_cgroups */
    int fresh;              /* a new context for every input: the files are
                               read when a process is first seen, and a
                               kept context would see them once */
    unsigned keep;          /* on a kept context, the first `keep` modules
                               (ones that read none of the pieces when
                               they start) are restarted only every 64th
                               input: restarting procfs-cpu under auto's
                               CPU formula restarted RAPL every input */
    fz_file files[FZ_MAX_PIECES];
} fz_sensor;

/* Runs the sensor on data (pieces for s->files).  Aborts if the library
 * breaks its own contract (an error without a message, a report with
 * inconsistent counts). */
void fz_run_sensor(const fz_sensor *s, const uint8_t *data, size_t size);

/* The same with the pieces already cut (npc <= FZ_MAX_PIECES; missing
 * ones leave the fixture's file). */
void fz_run_pieces(const fz_sensor *s, const fz_piece *pc, size_t npc);

/* Aborts with a message (a contract the library broke). */
void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
