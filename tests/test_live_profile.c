/*
 * test_live_profile.c - `powerapi profile` on real processes, known answers.
 *
 * The workloads are built here with the system's C compiler:
 *   - work.c + libpfwork.so: in the main thread, f_a, lib_burn (in the
 *     shared library) and f_c (whose loop is the static inline inl_burn)
 *     run 3:1:2 by iterations (each call's count drawn between half and
 *     one and a half times its mean: a fixed cycle of calls, about as long
 *     as the sampling interval on some CPU, would lock the samples to a
 *     few phases of it and skew the shares by several points, as CI saw
 *     once); a second thread runs f_b until its CPU time
 *     is half the main thread's (paced on the main thread's CPU clock, so
 *     the 2:1 holds on a loaded machine).  Each thread measures the CPU
 *     time each function took (CLOCK_THREAD_CPUTIME_ID around each call)
 *     and writes it at exit: the known answer, measured rather than
 *     assumed, since the cost of an iteration differs between loops.  The
 *     main thread runs for a given CPU time (not wall time), so that the
 *     number of samples does not depend on the machine's load.
 *   - a C++ workload (namespace, class, template): demangled names.
 *   - functions carrying Rust names (v0 and legacy): demangled too.
 *   - a JIT workload: machine code written into an executable mapping at
 *     run time and described in /tmp/perf-PID.map.
 * Built -O2 with frame pointers and without; a stripped copy must give
 * "[unknown]" frames with the module's name and no wrong name, and one
 * whose debug file is named by .gnu_debuglink its names back.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir; /* built workloads, for the whole suite */

static const char *LIB_C = "volatile double lib_sink;\n"
                           "void lib_burn(long n)\n"
                           "{\n"
                           "    double x = 1.5;\n"
                           "    for (long i = 0; i < n; i++)\n"
                           "        x = x * 1.0000003 + 0.5;\n"
                           "    lib_sink = x;\n"
                           "}\n";

static const char *WORK_C =
    "#include <pthread.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <time.h>\n"
    "void lib_burn(long n);\n"
    "volatile double sink;\n"
    "static inline void inl_burn(long n)\n"
    "{\n"
    "    double x = 3.0;\n"
    "    for (long i = 0; i < n; i++)\n"
    "        x = x * 0.9999999 + 0.25;\n"
    "    sink += x;\n"
    "}\n"
    "__attribute__((noinline)) void f_a(long n)\n"
    "{\n"
    "    double x = 1;\n"
    "    for (long i = 0; i < n; i++)\n"
    "        x = x * 1.0000001 + 1;\n"
    "    sink = x;\n"
    "}\n"
    "__attribute__((noinline)) void f_b(long n)\n"
    "{\n"
    "    double x = 2;\n"
    "    for (long i = 0; i < n; i++)\n"
    "        x = x * 1.0000002 + 2;\n"
    "    sink = x;\n"
    "}\n"
    "__attribute__((noinline)) void f_c(long n) { inl_burn(n); sink += 1; }\n"
    "/* n/2 to 3n/2 iterations, from a xorshift: no period for samples to lock to */\n"
    "static long vary(unsigned long *s, long n)\n"
    "{\n"
    "    *s ^= *s << 13;\n"
    "    *s ^= *s >> 7;\n"
    "    *s ^= *s << 17;\n"
    "    return n / 2 + (long)(*s % (unsigned long)n);\n"
    "}\n"
    "static double ts(clockid_t c)\n"
    "{\n"
    "    struct timespec t;\n"
    "    clock_gettime(c, &t);\n"
    "    return t.tv_sec + t.tv_nsec / 1e9;\n"
    "}\n"
    "static clockid_t main_clock;\n"
    "static volatile int done;\n"
    "static double t_a, t_l, t_c, t_b, t_second;\n"
    "#define TIMED(acc, call) do { double s_ = ts(CLOCK_THREAD_CPUTIME_ID); "
    "call; acc += ts(CLOCK_THREAD_CPUTIME_ID) - s_; } while (0)\n"
    "static void *second(void *arg)\n"
    "{\n"
    "    (void)arg;\n"
    "    unsigned long r = 0x9e3779b97f4a7c15UL;\n"
    "    while (!done || ts(CLOCK_THREAD_CPUTIME_ID) < ts(main_clock) / 2) {\n"
    "        if (ts(CLOCK_THREAD_CPUTIME_ID) < ts(main_clock) / 2) {\n"
    "            TIMED(t_b, f_b(vary(&r, 200000)));\n"
    "        } else {\n"
    "            struct timespec z = {0, 1000000};\n"
    "            nanosleep(&z, NULL);\n"
    "        }\n"
    "    }\n"
    "    t_second = ts(CLOCK_THREAD_CPUTIME_ID);\n"
    "    return NULL;\n"
    "}\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    double secs = argc > 1 ? atof(argv[1]) : 3;\n"
    "    pthread_getcpuclockid(pthread_self(), &main_clock);\n"
    "    unsigned long r = 88172645463325252UL;\n"
    "    pthread_t th;\n"
    "    int threads = argc > 3 ? atoi(argv[3]) : 2;\n"
    "    if (threads > 1)\n"
    "        pthread_create(&th, NULL, second, NULL);\n"
    "    do { /* secs of CPU time: as many samples however loaded */\n"
    "        TIMED(t_a, f_a(vary(&r, 300000)));\n"
    "        TIMED(t_l, lib_burn(vary(&r, 100000)));\n"
    "        TIMED(t_c, f_c(vary(&r, 200000)));\n"
    "    } while (ts(main_clock) < secs);\n"
    "    done = 1;\n"
    "    if (threads > 1)\n"
    "        pthread_join(th, NULL);\n"
    "    if (argc > 2 && argv[2][0]) {\n"
    "        FILE *f = fopen(argv[2], \"w\");\n"
    "        fprintf(f, \"%f %f %f %f %f %f\\n\", t_a, t_l, t_c, t_b, "
    "ts(main_clock), t_second);\n"
    "        fclose(f);\n"
    "    }\n"
    "    return 0;\n"
    "}\n";

/* Line-level energy: one function, a loop three times as long as the
 * other (same body, so three times the CPU time), called from main. */
static const char *LINES_C = "#include <stdlib.h>\n"
                             "#include <time.h>\n"
                             "volatile double sink;\n"
                             "__attribute__((noinline)) void work(long n)\n"
                             "{\n"
                             "    double x = 1, y = 2;\n"
                             "    for (long i = 0; i < 3 * n; i++) /* HEAVY */\n"
                             "        x = x * 1.0000001 + 1;\n"
                             "    for (long i = 0; i < n; i++) /* LIGHT */\n"
                             "        y = y * 1.0000001 + 1;\n"
                             "    sink = x + y;\n"
                             "}\n"
                             "int main(int argc, char **argv)\n"
                             "{\n"
                             "    double secs = argc > 1 ? atof(argv[1]) : 2;\n"
                             "    while ((double)clock() / CLOCKS_PER_SEC < secs)\n"
                             "        work(200000); /* CALL */\n"
                             "    return 0;\n"
                             "}\n";

static const char *CXX_CC = "#include <cstdlib>\n"
                            "#include <ctime>\n"
                            "namespace energy {\n"
                            "template <typename T> struct Burner {\n"
                            "    volatile T sink;\n"
                            "    __attribute__((noinline)) void burn(long n)\n"
                            "    {\n"
                            "        T x = 1;\n"
                            "        for (long i = 0; i < n; i++)\n"
                            "            x = x * (T)1.0000001 + (T)1;\n"
                            "        sink = x;\n"
                            "    }\n"
                            "};\n"
                            "}\n"
                            "int main(int argc, char **argv)\n"
                            "{\n"
                            "    double secs = argc > 1 ? std::atof(argv[1]) : 2;\n"
                            "    energy::Burner<double> b;\n"
                            "    std::time_t end = std::time(nullptr) + (std::time_t)secs + 1;\n"
                            "    while (std::time(nullptr) < end)\n"
                            "        b.burn(1000000);\n"
                            "    return 0;\n"
                            "}\n";

/* Rust symbols without rustc: C functions given, with asm labels, the
 * names rustc gives (the examples of the v0 RFC 2603 and a legacy name
 * with its hash).  Built without -g, so that only .symtab names them. */
static const char *RUST_C =
    "#include <stdlib.h>\n"
    "#include <time.h>\n"
    "static volatile double sink;\n"
    "#define BURN(fn, label)                                         \\\n"
    "    __attribute__((noinline)) void fn(long n) __asm__(label);    \\\n"
    "    __attribute__((noinline)) void fn(long n)                    \\\n"
    "    {                                                            \\\n"
    "        double x = 1;                                            \\\n"
    "        for (long i = 0; i < n; i++)                             \\\n"
    "            x = x * 1.0000001 + 1;                               \\\n"
    "        sink = x;                                                \\\n"
    "    }\n"
    "BURN(v0_plain, \"_RNvCs15kBYyAo9fc_7mycrate7example\")\n"
    "BURN(v0_impl, \"_RNvMsr_NtCs3ssYzQotkvD_3std4pathNtB5_7PathBuf3new\")\n"
    "BURN(legacy, \"_ZN4core3fmt5write17h0123456789abcdefE\")\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    double secs = argc > 1 ? atof(argv[1]) : 2;\n"
    "    struct timespec t;\n"
    "    do {\n"
    "        v0_plain(300000);\n"
    "        v0_impl(300000);\n"
    "        legacy(300000);\n"
    "        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);\n"
    "    } while (t.tv_sec + t.tv_nsec / 1e9 < secs);\n"
    "    return 0;\n"
    "}\n";

/* Short-lived processes: "storm SECS x" forks one child after another,
 * each burning 30 ms of CPU and exiting (most live and die between two
 * windows); "steady SECS" burns the same way in one process. */
static const char *STORM_C =
    "#include <stdlib.h>\n"
    "#include <sys/wait.h>\n"
    "#include <time.h>\n"
    "#include <unistd.h>\n"
    "static volatile double sink;\n"
    "static double cpu(void)\n"
    "{\n"
    "    struct timespec t;\n"
    "    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);\n"
    "    return t.tv_sec + t.tv_nsec / 1e9;\n"
    "}\n"
    "static void burn(double secs)\n"
    "{\n"
    "    double x = 1, end = cpu() + secs;\n"
    "    while (cpu() < end)\n"
    "        for (int i = 0; i < 10000; i++)\n"
    "            x = x * 1.0000001 + 1;\n"
    "    sink = x;\n"
    "}\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    double wall = argc > 1 ? atof(argv[1]) : 2;\n"
    "    struct timespec t0, t;\n"
    "    clock_gettime(CLOCK_MONOTONIC, &t0);\n"
    "    do {\n"
    "        if (argc > 2) {\n"
    "            pid_t c = fork();\n"
    "            if (c == 0) {\n"
    "                burn(0.03);\n"
    "                _exit(0);\n"
    "            }\n"
    "            waitpid(c, NULL, 0);\n"
    "        } else {\n"
    "            burn(0.03);\n"
    "        }\n"
    "        clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "    } while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < wall);\n"
    "    return 0;\n"
    "}\n";

/* x86-64: mov rcx, imm32; L: dec rcx; jnz L; ret */
static const char *JIT_C =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include <sys/mman.h>\n"
    "#include <time.h>\n"
    "#include <unistd.h>\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    double secs = argc > 1 ? atof(argv[1]) : 2;\n"
    "    unsigned char code[] = {0x48, 0xc7, 0xc1, 0x40, 0x42, 0x0f, 0x00,\n"
    "                            0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3};\n"
    "    unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | "
    "PROT_EXEC,\n"
    "                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
    "    if (m == MAP_FAILED)\n"
    "        return 1;\n"
    "    memcpy(m + 64, code, sizeof(code));\n"
    "    char path[64];\n"
    "    snprintf(path, sizeof(path), \"/tmp/perf-%d.map\", (int)getpid());\n"
    "    FILE *f = fopen(path, \"w\");\n"
    "    fprintf(f, \"%lx %zx jit_hot_loop\\n\", (unsigned long)(m + 64), "
    "sizeof(code));\n"
    "    fclose(f);\n"
    "    void (*fn)(void) = (void (*)(void))(m + 64);\n"
    "    struct timespec t0, t;\n"
    "    clock_gettime(CLOCK_MONOTONIC, &t0);\n"
    "    do {\n"
    "        fn();\n"
    "        clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "    } while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < "
    "secs);\n"
    "    return 0;\n"
    "}\n";

/* Kernel time: reads of 64 KiB from /dev/zero (the kernel clears the
 * buffer: most of the time is in read_zero), for a given CPU time. */
static const char *KERN_C = "#include <fcntl.h>\n"
                            "#include <stdlib.h>\n"
                            "#include <time.h>\n"
                            "#include <unistd.h>\n"
                            "static char buf[65536];\n"
                            "int main(int argc, char **argv)\n"
                            "{\n"
                            "    double secs = argc > 1 ? atof(argv[1]) : 1;\n"
                            "    int fd = open(\"/dev/zero\", O_RDONLY);\n"
                            "    if (fd < 0)\n"
                            "        return 1;\n"
                            "    struct timespec t;\n"
                            "    do {\n"
                            "        for (int i = 0; i < 64; i++)\n"
                            "            if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))\n"
                            "                return 1;\n"
                            "        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);\n"
                            "    } while (t.tv_sec + t.tv_nsec / 1e9 < secs);\n"
                            "    return 0;\n"
                            "}\n";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = pa_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "'%s' failed (%d): %s", cmd, rc, out ? out : "");
    free(out);
}

static void remove_all(void)
{
    pa_test_rmtree(dir);
    dir = NULL;
}

static void build_all(void)
{
    dir = pa_test_tmpdir();
    char p[4096];
    snprintf(p, sizeof(p), "%s/lib.c", dir);
    write_file(p, LIB_C);
    snprintf(p, sizeof(p), "%s/work.c", dir);
    write_file(p, WORK_C);
    snprintf(p, sizeof(p), "%s/cxx.cc", dir);
    write_file(p, CXX_CC);
    snprintf(p, sizeof(p), "%s/jit.c", dir);
    write_file(p, JIT_C);
    snprintf(p, sizeof(p), "%s/rust.c", dir);
    write_file(p, RUST_C);
    snprintf(p, sizeof(p), "%s/storm.c", dir);
    write_file(p, STORM_C);
    snprintf(p, sizeof(p), "%s/kern.c", dir);
    write_file(p, KERN_C);
    snprintf(p, sizeof(p), "%s/lines.c", dir);
    write_file(p, LINES_C);
    /* -fno-ipa-icf: GCC would fold identical bodies into one symbol */
    const char *common = "-O2 -g -fno-ipa-icf";
    sh("cd %s && cc %s -fno-omit-frame-pointer -shared -fPIC -o libpfwork.so lib.c", dir, common);
    sh("cd %s && cc %s -fno-omit-frame-pointer -o work-fp work.c -L. -lpfwork "
       "-Wl,-rpath,%s -pthread",
       dir, common, dir);
    sh("cd %s && cc %s -fomit-frame-pointer -o work-nofp work.c -L. -lpfwork "
       "-Wl,-rpath,%s -pthread",
       dir, common, dir);
    sh("cd %s && cp work-fp work-stripped && strip work-stripped", dir);
    /* stripped, its debug information in a file found by .gnu_debuglink */
    sh("cd %s && objcopy --only-keep-debug work-fp work-linked.debug && cp work-fp "
       "work-linked && strip work-linked && objcopy --add-gnu-debuglink=work-linked.debug "
       "work-linked",
       dir);
    sh("cd %s && (c++ -O2 -g -fno-omit-frame-pointer -o cxx cxx.cc || "
       "g++ -O2 -g -o cxx cxx.cc)",
       dir);
    sh("cd %s && cc -O2 -o jit jit.c", dir);
    sh("cd %s && cc -O2 -fno-omit-frame-pointer -o rust rust.c", dir);
    sh("cd %s && cc -O2 -o storm storm.c && cp storm steady", dir);
    sh("cd %s && cc -O2 -o kern kern.c", dir);
    sh("cd %s && cc -O1 -g -o lines lines.c", dir);
}

/* ---- reading the outputs ---- */

typedef struct frow {
    char name[256], module[128], source[128];
    double self_j, total_j;
    unsigned long self_samples, total_samples;
} frow;

/* Parses functions.csv (names here have no commas or quotes, except the
 * C++ ones, which are quoted). */
static size_t read_functions(const char *out, frow *rows, size_t max)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/functions.csv", out);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s missing", path);
    char line[2048];
    ck_assert(fgets(line, sizeof(line), f) != NULL);
    ck_assert_str_eq(line, "function,module,source,self_energy_j,total_energy_j,"
                           "self_samples,total_samples,cpu_time_s\n");
    size_t n = 0;
    while (n < max && fgets(line, sizeof(line), f)) {
        frow *r = &rows[n];
        memset(r, 0, sizeof(*r));
        char *p = line;
        char *fields[3];
        for (int i = 0; i < 3; i++) {
            fields[i] = p;
            if (*p == '"') {
                fields[i] = ++p;
                char *w = p;
                while (*p && !(*p == '"' && p[1] != '"')) {
                    if (*p == '"')
                        p++;
                    *w++ = *p++;
                }
                *w = '\0';
                p += 2; /* quote, comma */
            } else {
                p += strcspn(p, ",");
                *p++ = '\0';
            }
        }
        snprintf(r->name, sizeof(r->name), "%s", fields[0]);
        snprintf(r->module, sizeof(r->module), "%s", fields[1]);
        snprintf(r->source, sizeof(r->source), "%s", fields[2]);
        ck_assert_int_eq(sscanf(p, "%lf,%lf,%lu,%lu", &r->self_j, &r->total_j, &r->self_samples,
                                &r->total_samples),
                         4);
        n++;
    }
    fclose(f);
    return n;
}

static const frow *find_fn(const frow *rows, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].name, name))
            return &rows[i];
    return NULL;
}

static double json_num(const char *json, const char *key)
{
    char k[128];
    snprintf(k, sizeof(k), "\"%s\": ", key);
    const char *p = strstr(json, k);
    ck_assert_msg(p != NULL, "summary.json has no %s", key);
    return strtod(p + strlen(k), NULL);
}

static char *slurp_in(const char *out, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", out, name);
    char *s = pa_test_slurp(path);
    ck_assert_msg(s != NULL, "%s missing", path);
    return s;
}

/* Sum of a numeric column of a CSV file (0-based column). */
static double csv_sum(const char *out, const char *name, int col)
{
    char *s = slurp_in(out, name);
    double sum = 0;
    char *save = NULL;
    int first = 1;
    for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (first) {
            first = 0;
            continue;
        }
        /* quoted fields here hold no comma-newline mix: count commas
         * outside quotes */
        int c = 0, q = 0;
        char *p = l;
        for (; *p && c < col; p++) {
            if (*p == '"')
                q = !q;
            else if (*p == ',' && !q)
                c++;
        }
        sum += strtod(p, NULL);
    }
    free(s);
    return sum;
}

/* functions + [unsampled] + [unattributed] = threads = process (0.5 %),
 * and the worst window as the profiler measured it. */
static void check_conservation(const char *out)
{
    char *sum = slurp_in(out, "summary.json");
    double process = json_num(sum, "process_energy_j");
    double worst = json_num(sum, "conservation_max_error");
    free(sum);
    double fsum = csv_sum(out, "functions.csv", 3);
    double tsum = csv_sum(out, "threads.csv", 4);
    ck_assert_msg(process > 0, "no energy");
    ck_assert_msg(fabs(fsum - process) <= 0.005 * process, "functions %.6f J vs process %.6f J",
                  fsum, process);
    ck_assert_msg(fabs(tsum - process) <= 0.005 * process, "threads %.6f J vs process %.6f J", tsum,
                  process);
    ck_assert_msg(worst <= 0.005, "a window is off by %.3g", worst);
}

static int run_profile(const char *args, char **output)
{
    char cmd[16384];
    snprintf(cmd, sizeof(cmd), "%s profile %s 2>&1", CLI_PATH, args);
    return pa_test_run(cmd, output);
}

/* `powerapi profile -q OPTS --out OUT/p -- COMMAND` in a fresh folder OUT:
 * exit 0, then its functions.csv read into rows (their number returned).
 * *out is OUT (pa_test_rmtree it), pdir OUT/p. */
static size_t profile_fns(const char *opts, const char *command, char **out, char pdir[4200],
                          frow *rows, size_t max)
{
    *out = pa_test_tmpdir();
    char args[8192];
    snprintf(args, sizeof(args), "-q %s --out %s/p -- %s", opts, *out, command);
    char *log = NULL;
    ck_assert_msg(run_profile(args, &log) == 0, "%s", log);
    free(log);
    snprintf(pdir, 4200, "%s/p", *out);
    return read_functions(pdir, rows, max);
}

/* The known answer: shares of CPU time measured by the workload. */
static void check_known_answer(const char *bin, const char *extra)
{
    int dwarf = strstr(extra, "dwarf") != NULL;
    char *out = pa_test_tmpdir();
    char truth[4200], args[8192];
    snprintf(truth, sizeof(truth), "%s/truth", out);
    snprintf(args, sizeof(args), "-q --interval 1ms %s --out %s/p -- %s/%s 3 %s", extra, out, dir,
             bin, truth);
    char *log = NULL;
    int rc = run_profile(args, &log);
    ck_assert_msg(rc == 0, "profile failed (%d): %s", rc, log);
    free(log);
    double t_a, t_l, t_c, t_b, t_main, t_second;
    char *ts = pa_test_slurp(truth);
    ck_assert(ts != NULL);
    ck_assert_int_eq(
        sscanf(ts, "%lf %lf %lf %lf %lf %lf", &t_a, &t_l, &t_c, &t_b, &t_main, &t_second), 6);
    free(ts);
    char pdir[4200];
    snprintf(pdir, sizeof(pdir), "%s/p", out);
    frow rows[512];
    size_t n = read_functions(pdir, rows, 512);
    char *sum = slurp_in(pdir, "summary.json");
    double process = json_num(sum, "process_energy_j");
    free(sum);
    /* shares among the four functions (the loops' own overhead, clock
     * reads and sleeps, is in neither side) */
    double all = t_a + t_l + t_c + t_b, all_j = 0, samples = 0;
    struct {
        const char *name;
        double t;
    } want[] = {{"f_a", t_a}, {"lib_burn", t_l}, {"f_c", t_c}, {"f_b", t_b}};
    for (int i = 0; i < 4; i++) {
        const frow *r = find_fn(rows, n, want[i].name);
        ck_assert_msg(r != NULL, "%s: %s not in functions.csv", bin, want[i].name);
        all_j += r->total_j;
        samples += r->total_samples;
    }
    ck_assert_msg(all_j > 0.8 * process, "%s: the four functions hold %.3f of %.3f J", bin, all_j,
                  process);
    printf("known answer %s %s: %.0f samples;", bin, extra, samples);
    for (int i = 0; i < 4; i++) {
        const frow *r = find_fn(rows, n, want[i].name);
        printf(" %s %.1f %% (CPU %.1f %%)", want[i].name, 100 * r->total_j / all_j,
               100 * want[i].t / all);
    }
    printf("\n");
    fflush(stdout);
    /* A share estimated from k of N random samples has a standard error of
     * sqrt(p(1-p)/N): 3 points, or 4 standard errors where there were
     * fewer samples than the ~4,500 of 3 s at 1 ms (a coarse timer). */
    for (int i = 0; i < 4; i++) {
        const frow *r = find_fn(rows, n, want[i].name);
        double got = 100 * r->total_j / all_j, exp = 100 * want[i].t / all;
        double p = want[i].t / all, tol = fmax(3.0, 400 * sqrt(p * (1 - p) / samples));
        ck_assert_msg(fabs(got - exp) <= tol,
                      "%s: %s inclusive %.1f %% of the four's energy, expected %.1f %% "
                      "(+-%.1f points, %.0f samples)",
                      bin, want[i].name, got, exp, tol, samples);
    }
    /* the library function and the inlined one are named, with files */
    const frow *lib = find_fn(rows, n, "lib_burn");
    ck_assert_str_eq(lib->module, "libpfwork.so");
    ck_assert_str_eq(lib->source, "lib.c:2");
    const frow *inl = find_fn(rows, n, "inl_burn");
    ck_assert_msg(inl != NULL, "%s: the inlined inl_burn is not a frame", bin);
    ck_assert_str_eq(inl->source, "work.c:7");
    ck_assert_msg(inl->self_j > 0.8 * find_fn(rows, n, "f_c")->total_j,
                  "inl_burn should hold f_c's time");
    /* threads 2:1 within 10 % */
    char *th = slurp_in(pdir, "threads.csv");
    double e[2] = {0, 0};
    int k = 0;
    char *save = NULL;
    for (char *l = strtok_r(th, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        int pid, tid;
        char name[64];
        double cpu, ej;
        if (sscanf(l, "%d,%d,%63[^,],%lf,%lf", &pid, &tid, name, &cpu, &ej) == 5 && k < 2 &&
            ej > 0.05 * process)
            e[k++] = ej;
    }
    free(th);
    ck_assert_msg(k == 2, "%s: expected two threads with energy", bin);
    /* the workload paces the second thread to half the first's CPU time
     * and measures both (the pacing is checked too) */
    double ratio = e[0] > e[1] ? e[0] / e[1] : e[1] / e[0];
    double cpu_ratio = t_main / t_second;
    ck_assert_msg(fabs(cpu_ratio - 2.0) <= 0.1, "%s: workload not 2:1 (%.3f s, %.3f s)", bin,
                  t_main, t_second);
    ck_assert_msg(fabs(ratio - cpu_ratio) <= 0.1 * cpu_ratio,
                  "%s: threads %.3f:%.3f J (ratio %.2f), CPU time ratio %.2f", bin, e[0], e[1],
                  ratio, cpu_ratio);
    /* dwarf: whole stacks, through libc and the frame-pointer-less build */
    if (dwarf) {
        char *col = slurp_in(pdir, "energy.collapsed");
        ck_assert_msg(strstr(col, "__libc_start_call_main;main;f_a ") &&
                          strstr(col, "start_thread;second;f_b ") &&
                          strstr(col, "main;f_c;inl_burn "),
                      "%s: dwarf stacks incomplete:\n%s", bin, col);
        free(col);
    }
    check_conservation(pdir);
    pa_test_rmtree(out);
}

#ifndef PA_SANITIZE_BUILD /* the plain run only (main below) */
START_TEST(known_answer_dwarf_fp)
{
    check_known_answer("work-fp", "--call-graph dwarf");
}
END_TEST
#endif

START_TEST(known_answer_dwarf_nofp)
{
    check_known_answer("work-nofp", "--call-graph dwarf");
}
END_TEST

START_TEST(known_answer_fp)
{
    check_known_answer("work-fp", "--call-graph fp");
}
END_TEST

#ifndef PA_SANITIZE_BUILD /* the plain run only (main below) */
/* frame pointers asked of a program built without them (the default is
 * dwarf since issue 31: known_answer_dwarf_nofp is that case) */
START_TEST(known_answer_nofp)
{
    check_known_answer("work-nofp", "--call-graph fp");
}
END_TEST
#endif

/* --pid on a running process, then a stripped copy: "[unknown]" with the
 * module's name (its entry point, from the ELF header, is _start), never a
 * wrong name. */
START_TEST(stripped_pid)
{
    char *out = pa_test_tmpdir();
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "%s/work-stripped 6 '' 1 >/dev/null 2>&1 & echo $!", dir);
    char *pidtxt = NULL;
    ck_assert_int_eq(pa_test_run(cmd, &pidtxt), 0);
    int pid = atoi(pidtxt);
    free(pidtxt);
    ck_assert_int_gt(pid, 0);
    usleep(200000);
    char args[8192];
    snprintf(args, sizeof(args), "-q --pid %d --duration 2s --out %s/p", pid, out);
    char *log = NULL;
    int rc = run_profile(args, &log);
    ck_assert_msg(rc == 0, "profile --pid failed (%d): %s", rc, log);
    free(log);
    char pdir[4200];
    snprintf(pdir, sizeof(pdir), "%s/p", out);
    frow rows[512];
    size_t n = read_functions(pdir, rows, 512);
    int unknown = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rows[i].module, "work-stripped"))
            continue;
        /* _start: the ELF header's entry point, no guess */
        ck_assert_msg(!strncmp(rows[i].name, "[unknown] work-stripped+0x", 26) ||
                          !strcmp(rows[i].name, "_start"),
                      "stripped binary: a name was guessed: %s", rows[i].name);
        unknown += rows[i].self_samples > 0;
    }
    ck_assert_msg(unknown >= 2, "stripped: expected [unknown] frames of work-stripped");
    ck_assert_msg(find_fn(rows, n, "lib_burn") != NULL,
                  "the library (not stripped) is still named");
    check_conservation(pdir);
    kill(pid, SIGKILL);
    pa_test_rmtree(out);
}
END_TEST

/* --all (root): every process of the machine, per CPU; the workload among
 * them, named. */
START_TEST(all_processes)
{
    if (geteuid() != 0) {
        fprintf(stderr, "all_processes: SKIPPED: --all needs root or CAP_PERFMON\n");
        return;
    }
    char *out = pa_test_tmpdir();
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "%s/work-fp 4 '' 1 >/dev/null 2>&1 & echo $!", dir);
    char *pidtxt = NULL;
    ck_assert_int_eq(pa_test_run(cmd, &pidtxt), 0);
    int pid = atoi(pidtxt);
    free(pidtxt);
    char args[8192];
    snprintf(args, sizeof(args), "-q --all --duration 2s --out %s/p", out);
    char *log = NULL;
    int rc = run_profile(args, &log);
    kill(pid, SIGKILL);
    ck_assert_msg(rc == 0, "profile --all failed (%d): %s", rc, log);
    free(log);
    char pdir[4200];
    snprintf(pdir, sizeof(pdir), "%s/p", out);
    frow rows[2048];
    size_t n = read_functions(pdir, rows, 2048);
    const frow *fa = find_fn(rows, n, "f_a");
    ck_assert_msg(fa != NULL && fa->self_samples > 0, "--all: the workload's f_a not sampled");
    ck_assert_str_eq(fa->module, "work-fp");
    /* the workload is one process among several */
    char *pr = slurp_in(pdir, "processes.csv");
    char needle[64];
    snprintf(needle, sizeof(needle), "\n%d,work-fp,", pid);
    ck_assert_msg(strstr(pr, needle) != NULL, "--all: pid %d not in processes.csv:\n%s", pid, pr);
    free(pr);
    check_conservation(pdir);
    pa_test_rmtree(out);
}
END_TEST

/* --all over a storm of processes that live 30 ms each, beside one
 * steady process burning the same way: the storm's processes, most of
 * which no report has (they live and die between two windows), get
 * energy at the steady one's rate per CPU-second, with a formula that
 * leaves their time out of its split (cpu-tdp: from the window's
 * unexplained active energy) and with auto's (cpu-curve on a VM,
 * rapl-share with RAPL: they spread it over the processes seen, which
 * give it back).  Before, they got 0.14-0.21 J per CPU-second against
 * the steady one's 3.1-3.2. */
START_TEST(all_short_lived)
{
    if (geteuid() != 0) {
        fprintf(stderr, "all_short_lived: SKIPPED: --all needs root or CAP_PERFMON\n");
        return;
    }
    static const char *const formulas[] = {"", "--formula cpu-tdp"};
    /* under the sanitizers auto's formula only: the second run checks a
     * formula's figures, not new code of the profiler (the suite's time) */
#ifdef PA_SANITIZE_BUILD
    const size_t nformulas = 1;
#else
    const size_t nformulas = 2;
#endif
    for (size_t f = 0; f < nformulas; f++) {
        char *out = pa_test_tmpdir();
        char cmd[8192];
        snprintf(cmd, sizeof(cmd), "(%s/storm 4 x & %s/steady 4 &) >/dev/null 2>&1", dir, dir);
        ck_assert_int_eq(pa_test_run(cmd, NULL), 0);
        char args[8192];
        snprintf(args, sizeof(args), "-q --all %s --duration 3s --out %s/p", formulas[f], out);
        char *log = NULL;
        int rc = run_profile(args, &log);
        ck_assert_msg(rc == 0, "profile --all %s failed (%d): %s", formulas[f], rc, log);
        free(log);
        char pdir[4200];
        snprintf(pdir, sizeof(pdir), "%s/p", out);
        char *pr = slurp_in(pdir, "processes.csv");
        /* pid,name,threads,cpu_time_s,energy_j,samples */
        double cpu[2] = {0, 0}, j[2] = {0, 0};
        int nstorm = 0, nzero = 0, nnameless = 0;
        for (char *line = strchr(pr, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
            char name[64];
            int threads;
            unsigned long samples;
            double c, e;
            int at = -1;
            if (sscanf(line + 1, "%*d,%n", &at) == 0 && at > 0 && line[1 + at] == ',') {
                nnameless++; /* no name: a process whose parent was not read */
                continue;
            }
            if (sscanf(line + 1, "%*d,%63[^,],%d,%lf,%lf,%lu", name, &threads, &c, &e, &samples) !=
                5)
                continue;
            int k = !strcmp(name, "storm") ? 0 : !strcmp(name, "steady") ? 1 : -1;
            if (k < 0)
                continue;
            cpu[k] += c;
            j[k] += e;
            if (k == 0 && samples > 0) {
                nstorm++;
                nzero += !(e > 0);
            }
        }
        free(pr);
        check_conservation(pdir);
        /* summary.json says how much went to processes no report had:
         * most of the storm's (the machine may run other short processes),
         * and part of the whole */
        char *sum = slurp_in(pdir, "summary.json");
        double unseen = json_num(sum, "unseen_processes_energy_j");
        double process = json_num(sum, "process_energy_j");
        free(sum);
        ck_assert_msg(unseen >= 0.5 * j[0] && unseen < process,
                      "%s: unseen_processes_energy_j %.3f, storm %.3f J, all %.3f J", formulas[f],
                      unseen, j[0], process);
        ck_assert_msg(nstorm >= 10 && cpu[0] > 0.3 && cpu[1] > 0.3,
                      "%s: %d storm processes sampled, CPU %.3f / %.3f s", formulas[f], nstorm,
                      cpu[0], cpu[1]);
        double rate0 = j[0] / cpu[0], rate1 = j[1] / cpu[1];
        fprintf(stderr,
                "all_short_lived %s: storm %d processes (%d without energy, "
                "%d nameless rows), %.3f J / %.3f s = %.3f J/s; steady %.3f J / "
                "%.3f s = %.3f J/s; unseen %.3f J\n",
                formulas[f][0] ? formulas[f] : "(auto)", nstorm, nzero, nnameless, j[0], cpu[0],
                rate0, j[1], cpu[1], rate1, unseen);
        ck_assert_msg(nnameless * 5 <= nstorm,
                      "%s: %d processes without a name beside %d storm processes "
                      "(their parent's name is read at the fork)",
                      formulas[f], nnameless, nstorm);
        ck_assert_msg(fabs(rate0 / rate1 - 1) < 0.2,
                      "%s: the storm's %.3f J per CPU-second against the steady "
                      "process's %.3f",
                      formulas[f], rate0, rate1);
        ck_assert_msg(nzero * 5 <= nstorm, "%s: %d of %d storm processes without energy",
                      formulas[f], nzero, nstorm);
        sleep(2); /* the workloads end */
        pa_test_rmtree(out);
    }
}
END_TEST

/* A stripped binary whose debug file is found by its .gnu_debuglink: the
 * names, inlined frames and files come back. */
START_TEST(debuglink)
{
    char *out, pdir[4200], cmd[4200];
    snprintf(cmd, sizeof(cmd), "%s/work-linked 0.5 '' 1", dir);
    frow rows[256];
    size_t n = profile_fns("", cmd, &out, pdir, rows, 256);
    const frow *fa = find_fn(rows, n, "f_a"), *inl = find_fn(rows, n, "inl_burn");
    ck_assert_msg(fa && inl, "debuglink: f_a or inl_burn not named");
    ck_assert_str_eq(fa->module, "work-linked");
    ck_assert_str_eq(inl->source, "work.c:7");
    pa_test_rmtree(out);
}
END_TEST

START_TEST(cxx_demangled)
{
    char *out, pdir[4200], cmd[4200];
    snprintf(cmd, sizeof(cmd), "%s/cxx 1", dir);
    frow rows[256];
    size_t n = profile_fns("", cmd, &out, pdir, rows, 256);
    const frow *r = find_fn(rows, n, "energy::Burner<double>::burn(long)");
    ck_assert_msg(r != NULL && r->self_samples > 10,
                  "no demangled energy::Burner<double>::burn(long) (first: %s)",
                  n ? rows[0].name : "none");
    ck_assert_str_eq(r->module, "cxx");
    pa_test_rmtree(out);
}
END_TEST

/* Rust names, v0 and legacy: demangled (libiberty), the legacy hash and
 * v0's crate disambiguators gone, each function about a third. */
START_TEST(rust_demangled)
{
    char *out, pdir[4200], cmd[4200];
    snprintf(cmd, sizeof(cmd), "%s/rust 1", dir); /* 1 s of CPU time */
    frow rows[256];
    size_t n = profile_fns("", cmd, &out, pdir, rows, 256);
    static const char *const names[] = {"mycrate::example", "<std::path::PathBuf>::new",
                                        "core::fmt::write"};
    unsigned long total = 0, each[3];
    for (size_t i = 0; i < 3; i++) {
        const frow *r = find_fn(rows, n, names[i]);
        ck_assert_msg(r != NULL && r->self_samples > 10, "no demangled %s (first: %s)", names[i],
                      n ? rows[0].name : "none");
        ck_assert_str_eq(r->module, "rust");
        each[i] = r->self_samples;
        total += each[i];
    }
    for (size_t i = 0; i < 3; i++)
        ck_assert_msg(each[i] > total / 6, "%s: %lu of %lu samples", names[i], each[i], total);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(strncmp(rows[i].name, "_R", 2) && strncmp(rows[i].name, "_ZN", 3),
                      "a mangled name is left: %s", rows[i].name);
    pa_test_rmtree(out);
}
END_TEST

START_TEST(jit_perf_map)
{
    char *out, pdir[4200], cmd[4200];
    snprintf(cmd, sizeof(cmd), "%s/jit 1.5", dir);
    frow rows[256];
    size_t n = profile_fns("", cmd, &out, pdir, rows, 256);
    const frow *r = find_fn(rows, n, "jit_hot_loop");
    ck_assert_msg(r != NULL, "JIT code not named from the perf map");
    ck_assert_str_eq(r->module, "[jit]");
    ck_assert_msg(r->self_samples > 0.5 * rows[0].self_samples,
                  "jit_hot_loop should be the hottest");
    /* the workload's perf map: the child's pid is in processes or threads */
    char *th = slurp_in(pdir, "threads.csv");
    int pid = 0;
    sscanf(strchr(th, '\n') + 1, "%d", &pid);
    free(th);
    char map[64];
    snprintf(map, sizeof(map), "/tmp/perf-%d.map", pid);
    unlink(map);
    pa_test_rmtree(out);
}
END_TEST

/* sh -c with a chain of short-lived children: each one's samples are
 * there, the command's energy is the tree's, the exit status is kept. */
/* Issue 29: a command's C scopes (pa_scope_begin/end) are the root frames
 * of its samples, as jalen's are: 6 ms in scope "a", 2 ms in "b", 2 ms in
 * none, a hundred times; [scope a] : [scope b] 3 : 1 within 10 %, and the
 * stacks outside a scope keep their own root. */
static const char SCOPED_C[] =
    "#include <powerapi.h>\n"
    "#include <time.h>\n"
    "static volatile double sink;\n"
    "static void burn(double s) {\n"
    "    struct timespec a, b;\n"
    "    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);\n"
    "    do { for (int i = 0; i < 10000; i++) sink += i * 0.5;\n"
    "         clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);\n"
    "    } while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9 < s);\n"
    "}\n"
    "int main(void) {\n"
    "    pa_ctx *ctx;\n"
    "    if (pa_ctx_new(&ctx, NULL) < 0) return 1;\n"
    "    for (int k = 0; k < 100; k++) {\n"
    "        pa_scope_begin(ctx, \"a\"); burn(0.006); pa_scope_end(ctx, \"a\", NULL);\n"
    "        pa_scope_begin(ctx, \"b\"); burn(0.002); pa_scope_end(ctx, \"b\", NULL);\n"
    "        burn(0.002);\n"
    "    }\n"
    "    pa_ctx_free(ctx);\n"
    "    return 0;\n"
    "}\n";

START_TEST(c_scopes)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/scoped.c", dir);
    write_file(p, SCOPED_C);
#ifdef PA_SANITIZE_BUILD
    const char *san = "-fsanitize=address,undefined";
#else
    const char *san = "";
#endif
    sh("cd %s && cc -O1 -g %s -I'%s/../libpowerapi/include' -o scoped scoped.c -L'%s' -lpowerapi "
       "-Wl,-rpath,'%s'",
       dir, san, PA_SOURCE_TESTS, PA_BINARY_DIR, PA_BINARY_DIR);
    char *out = pa_test_tmpdir(), args[8192], *log = NULL;
    snprintf(args, sizeof(args), "-q --out %s/p -- %s/scoped", out, dir);
    int rc = run_profile(args, &log);
    ck_assert_msg(rc == 0, "profile failed (%d): %s", rc, log);
    free(log);
    char pdir[4200];
    snprintf(pdir, sizeof(pdir), "%s/p", out);
    char *col = slurp_in(pdir, "energy.collapsed");
    double a = 0, b = 0, rest = 0;
    for (char *line = col; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *sp = strrchr(line, ' ');
        double w = sp ? atof(sp + 1) : 0;
        if (!strncmp(line, "[scope a];", 10))
            a += w;
        else if (!strncmp(line, "[scope b];", 10))
            b += w;
        else
            rest += w;
        line = nl ? nl + 1 : NULL;
    }
    free(col);
    fprintf(stderr, "c_scopes: [scope a] %.0f, [scope b] %.0f, outside %.0f uJ: a:b %.2f\n", a, b,
            rest, b > 0 ? a / b : 0);
    ck_assert_msg(b > 0 && fabs(a / b / 3 - 1) < 0.1, "[scope a] %.0f : [scope b] %.0f", a, b);
    ck_assert_msg(rest > 0.1 * (a + b + rest) && rest < 0.4 * (a + b + rest),
                  "outside every scope %.0f of %.0f", rest, a + b + rest);
    pa_test_rmtree(out);
}
END_TEST

START_TEST(command_tree)
{
    char *out = pa_test_tmpdir();
    char args[8192];
    snprintf(args, sizeof(args),
             "-q --interval 2ms --carbon-intensity 385 --out %s/p -- sh -c '"
             "for i in 1 2 3 4 5; do %s/work-fp 0.08 \"\" 1; done; "
             "sh -c \"%s/work-fp 0.08 \\\"\\\" 1\"; exit 3'",
             out, dir, dir);
    char *log = NULL;
    int rc = run_profile(args, &log);
    ck_assert_msg(rc == 3, "exit status %d, expected the command's 3: %s", rc, log);
    free(log);
    char pdir[4200];
    snprintf(pdir, sizeof(pdir), "%s/p", out);
    char *pr = slurp_in(pdir, "processes.csv");
    char *pr_text = strdup(pr);
    int works = 0;
    double works_j = 0;
    char *save = NULL;
    for (char *l = strtok_r(pr, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        int pid, nthr;
        char name[64];
        double cpu, ej;
        unsigned long samples;
        if (sscanf(l, "%d,%63[^,],%d,%lf,%lf,%lu", &pid, name, &nthr, &cpu, &ej, &samples) == 6 &&
            !strcmp(name, "work-fp") && samples >= 1) {
            works++;
            works_j += ej;
        }
    }
    free(pr);
    ck_assert_msg(works == 6, "%d of the 6 short-lived children have samples:\n%s", works, pr_text);
    free(pr_text);
    char *sum = slurp_in(pdir, "summary.json");
    double process = json_num(sum, "process_energy_j");
    double tree = json_num(sum, "tree_energy_j");
    ck_assert_int_eq((int)json_num(sum, "exit_status"), 3);
    /* --carbon-intensity (issue 29): the grams of the process's joules,
     * the intensity stated, in summary.json and the flame graph's title */
    double g = json_num(sum, "process_co2e_g");
    ck_assert_msg(fabs(g - process * 385 / 3.6e6) <= 1e-9 + 1e-6 * g, "%.9f g for %.9f J", g,
                  process);
    ck_assert_msg(json_num(sum, "carbon_intensity_g_per_kwh") == 385 &&
                      strstr(sum, "\"carbon intensity 385 gCO2e/kWh (given, not measured)\""),
                  "%s", sum);
    free(sum);
    char *html = slurp_in(pdir, "flamegraph.html");
    const char *t = strstr(html, "), CO2e ");
    ck_assert_msg(t && strstr(t, " g at an assumed 385 gCO2e/kWh\""), "flame graph title");
    ck_assert_msg(fabs(strtod(t + 8, NULL) - g) <= 1e-6, "title's grams: %.40s", t);
    free(html);
    /* issue 43 item 6: a frame of the executable has the executable's
     * colour, one of its library the library's (the page's own words for
     * them, #kind=), in a real browser */
#ifndef PA_SANITIZE_BUILD
    if (system("command -v chromium >/dev/null 2>&1") == 0) {
        static const struct {
            const char *hash, *want;
        } kinds[] = {{"#kind=^f_a$", ": executable</div>"},
                     {"#kind=^lib_burn$", ": library</div>"}};
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
            char cmd[8192], *dom = NULL;
            snprintf(cmd, sizeof(cmd),
                     "timeout 60 chromium --headless --no-sandbox --disable-gpu "
                     "--user-data-dir=%s/chromium --dump-dom 'file://%s/flamegraph.html%s' "
                     "2>/dev/null",
                     out, pdir, kinds[i].hash);
            pa_test_run(cmd, &dom);
            ck_assert_msg(dom && strstr(dom, kinds[i].want), "page%s: no '%s' in:\n%.600s",
                          kinds[i].hash, kinds[i].want,
                          dom && strstr(dom, "id=\"info\"") ? strstr(dom, "id=\"info\"") : "");
            free(dom);
        }
    }
#endif
    ck_assert_msg(fabs(process - tree) <= 0.005 * tree, "command %.6f J vs tree %.6f J", process,
                  tree);
    /* the children did the work: most of the tree's energy is theirs */
    ck_assert_msg(works_j >= 0.5 * tree, "children %.6f J of the tree's %.6f J", works_j, tree);
    frow rows[512];
    size_t n = read_functions(pdir, rows, 512);
    ck_assert_msg(find_fn(rows, n, "f_a") && find_fn(rows, n, "lib_burn"),
                  "short-lived children's samples not symbolised");
    check_conservation(pdir);
    pa_test_rmtree(out);
}
END_TEST

/* The fourth field (self energy) of an unquoted CSV line. */
static double field4(const char *line)
{
    for (int c = 0; c < 3; c++) {
        line = strchr(line, ',');
        ck_assert(line != NULL);
        line++;
    }
    return strtod(line, NULL);
}

/* The line of `go tool pprof -raw` that starts with prefix within the
 * section that follows the line head ("Locations", "Mappings"), or NULL;
 * *next is the line after it. */
static char *raw_line(char *raw, const char *head, const char *prefix, char **next)
{
    char *sec = strstr(raw, head);
    ck_assert_msg(sec != NULL, "pprof -raw has no %s:\n%s", head, raw);
    for (char *l = strchr(sec + 1, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
        char *b = l + 1;
        if (b[0] != ' ' && !(b[0] >= '0' && b[0] <= '9'))
            return NULL; /* the next section */
        while (*b == ' ')
            b++;
        if (!strncmp(b, prefix, strlen(prefix))) {
            *next = strchr(b, '\n');
            return b;
        }
    }
    return NULL;
}

/* pprof -raw: one mapping per module, the main binary first with its
 * build id, functions (and file names, lines, inlined frames) known;
 * every location linked to its module's mapping; inl_burn a line of
 * f_c's location (innermost first), not a location of its own. */
static void check_pprof_raw(const char *out, const char *pdir)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "HOME=%s GOCACHE=%s/gocache %s tool pprof -raw %s/profile.pb.gz 2>&1", out, out, PA_GO,
             pdir);
    char *raw = NULL;
    ck_assert_int_eq(pa_test_run(cmd, &raw), 0);
    ck_assert_msg(strstr(raw, "Main binary filename not available") == NULL, "%s", raw);
    /* "1: 0x55../0x55../0x1000 /tmp/x/work-fp 48b5... [FN][FL][LN][IN]" */
    char *next, main_path[4400], lib_path[4400];
    snprintf(main_path, sizeof(main_path), " %s/work-fp ", dir);
    snprintf(lib_path, sizeof(lib_path), " %s/libpfwork.so ", dir);
    char *m1 = raw_line(raw, "\nMappings\n", "1: ", &next);
    ck_assert_msg(m1 && next, "no mapping 1:\n%s", raw);
    *next = '\0';
    ck_assert_msg(strstr(m1, main_path) != NULL, "mapping 1 is not the main binary: %s", m1);
    ck_assert_msg(strstr(m1, "[FN][FL][LN][IN]") != NULL, "main binary's flags: %s", m1);
    unsigned long long start, limit;
    ck_assert_msg(sscanf(m1, "1: %llx/%llx/", &start, &limit) == 2 && start && limit > start,
                  "main binary's range: %s", m1);
    char bid[64] = "";
    ck_assert_msg(sscanf(strstr(m1, main_path) + strlen(main_path), "%40[0-9a-f]", bid) == 1 &&
                      strlen(bid) == 40,
                  "main binary's build id (20 bytes, GNU): %s", m1);
    *next = '\n';
    /* the library's mapping, and the id lib_burn's location points to */
    int lib_id = 0;
    char *sec = strstr(raw, "\nMappings\n") + 10;
    for (char *l = sec; *l && !lib_id; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
        size_t len = strcspn(l, "\n");
        char *hit = strstr(l, lib_path);
        if (hit && hit < l + len)
            ck_assert_int_eq(sscanf(l, "%d: ", &lib_id), 1);
    }
    ck_assert_msg(lib_id > 1, "no mapping of libpfwork.so:\n%s", raw);
    /* "     4: 0x0 M=3 lib_burn /tmp/x/lib.c:2 s=2" */
    char *loc = strstr(raw, " lib_burn ");
    ck_assert_msg(loc != NULL, "no lib_burn location:\n%s", raw);
    char *bol = loc;
    while (bol > raw && bol[-1] != '\n')
        bol--;
    char want[32], line[512];
    snprintf(want, sizeof(want), " M=%d lib_burn ", lib_id);
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(bol, "\n"), bol);
    ck_assert_msg(strstr(line, want) != NULL, "lib_burn not in libpfwork.so's mapping %d: %s",
                  lib_id, line);
    /* "     1: 0x0 M=1 inl_burn /tmp/x/work.c:10 s=7"
     * "             f_c /tmp/x/work.c:28 s=28"
     * one such location per line of inl_burn sampled; inl_burn is never a
     * location of its own (a frame called by f_c) */
    int chains = 0;
    for (char *inl = strstr(strstr(raw, "\nLocations\n"), " inl_burn "); inl;
         inl = strstr(inl + 1, " inl_burn ")) {
        char *row = inl;
        while (row > raw && row[-1] != '\n')
            row--;
        ck_assert_msg(strncmp(inl - 4, " M=1", 4) == 0,
                      "inl_burn does not start a location of the main binary: %.*s\n%s",
                      (int)strcspn(row, "\n"), row, raw);
        char *l2 = strchr(inl, '\n');
        ck_assert(l2 != NULL);
        l2++;
        ck_assert_msg(l2[0] == ' ', "inl_burn's location has one line:\n%s", raw);
        while (*l2 == ' ')
            l2++;
        ck_assert_msg(!strncmp(l2, "f_c ", 4), "inl_burn's caller line is not f_c:\n%s", raw);
        chains++;
    }
    ck_assert_msg(chains > 0, "no location of inl_burn:\n%s", raw);
    free(raw);
}

/* pprof: go tool pprof -top reads the file; its top entries are
 * functions.csv's. */
START_TEST(pprof_top)
{
    if (!PA_GO[0]) {
        fprintf(stderr, "pprof_top: SKIPPED: go not found at configure time "
                        "(Debian golang-go, scripts/deps.sh)\n");
        return;
    }
    char *out, pdir[4200], work[4200];
    snprintf(work, sizeof(work), "%s/work-fp 1.5 '' 1", dir);
    frow rows[256];
    size_t n = profile_fns("--filter f_", work, &out, pdir, rows, 256);
    /* --filter f_: inl_burn's samples are charged to f_c (its innermost
     * matching frame), lib_burn's to [outside filter] */
    {
        char fpath[4400];
        snprintf(fpath, sizeof(fpath), "%s/functions-filtered.csv", pdir);
        char *ff = pa_test_slurp(fpath);
        ck_assert_msg(ff != NULL, "functions-filtered.csv missing");
        const frow *fc = find_fn(rows, n, "f_c"), *lib = find_fn(rows, n, "lib_burn");
        ck_assert(fc && lib);
        char *l = strstr(ff, "\nf_c,");
        ck_assert_msg(l != NULL, "f_c not in functions-filtered.csv");
        double fself = field4(l + 1);
        ck_assert_msg(fabs(fself - fc->total_j) <= 1e-6 + 1e-6 * fc->total_j,
                      "f_c filtered self %.9f J, its total %.9f J", fself, fc->total_j);
        l = strstr(ff, "\n[outside filter],");
        ck_assert_msg(l != NULL, "[outside filter] missing");
        double outside = field4(l + 1);
        ck_assert_msg(outside >= lib->self_j - 1e-6, "[outside filter] %.9f J < lib_burn %.9f J",
                      outside, lib->self_j);
        ck_assert_msg(strstr(ff, "\nlib_burn,") == NULL, "lib_burn passed the filter");
        free(ff);
    }
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "HOME=%s GOCACHE=%s/gocache %s tool pprof -top -sample_index=energy "
             "%s/profile.pb.gz 2>&1",
             out, out, PA_GO, pdir);
    char *top = NULL;
    ck_assert_int_eq(pa_test_run(cmd, &top), 0);
    /* "  1907500microjoules 49.10% 49.10% ... f_a" */
    int checked = 0;
    for (size_t i = 0; i < n && checked < 3; i++) {
        if (rows[i].self_j <= 0)
            continue;
        char *line = strstr(top, rows[i].name);
        ck_assert_msg(line != NULL, "pprof -top lacks %s:\n%s", rows[i].name, top);
        char *bol = line;
        while (bol > top && bol[-1] != '\n')
            bol--;
        double uj = strtod(bol, NULL);
        ck_assert_msg(fabs(uj - rows[i].self_j * 1e6) <= 1.0,
                      "%s: pprof %.0f uJ, functions.csv %.6f J", rows[i].name, uj, rows[i].self_j);
        checked++;
    }
    ck_assert_int_eq(checked, 3);
    /* the main binary named (its mapping first), so no warning */
    ck_assert_msg(strstr(top, "File: work-fp\n") != NULL, "no main binary:\n%s", top);
    ck_assert_msg(strstr(top, "Main binary filename not available") == NULL, "%s", top);
    free(top);
    check_pprof_raw(out, pdir);
    pa_test_rmtree(out);
}
END_TEST

/* The line of LINES_C that holds marker (1 the first). */
static int marker_line(const char *marker)
{
    const char *hit = strstr(LINES_C, marker);
    ck_assert(hit != NULL);
    int line = 1;
    for (const char *c = LINES_C; c < hit; c++)
        line += *c == '\n';
    return line;
}

/* The flat and cumulative microjoules of `pprof -lines -top`'s row for
 * "func FILE:line" (0 and 0 when it has none). */
static void lines_row(const char *top, const char *func, const char *file, int line, double *flat,
                      double *cum)
{
    char want[4600];
    snprintf(want, sizeof(want), "  %s %s:%d\n", func, file, line);
    const char *hit = strstr(top, want);
    *flat = *cum = 0;
    if (!hit)
        return;
    const char *bol = hit;
    while (bol > top && bol[-1] != '\n')
        bol--;
    /* "3420900microjoules 66.34% 66.34% 3420900microjoules 66.34%  work ..."
     * or "0     0%   100% 5156779microjoules   100%  main ..." */
    const char *c = bol;
    for (int field = 0; field < 4; field++) {
        c += strspn(c, " ");
        if (field == 0)
            *flat = strtod(c, NULL);
        else if (field == 3)
            *cum = strtod(c, NULL);
        c += strcspn(c, " \n");
    }
}

/* Line-level energy in pprof: `pprof -lines` gives each line of a
 * function its energy (the loop three times as long gets three quarters
 * of the function's), and the caller's line of the call the callee's
 * cumulative energy; functions.csv, the collapsed stacks and the flame
 * graph stay one row or frame per function. */
START_TEST(pprof_lines)
{
    if (!PA_GO[0]) {
        fprintf(stderr, "pprof_lines: SKIPPED: go not found at configure time "
                        "(Debian golang-go, scripts/deps.sh)\n");
        return;
    }
    char *out, pdir[4200], cmd[8192], file[4200];
    snprintf(cmd, sizeof(cmd), "%s/lines 3", dir);
    frow rows[64];
    size_t n = profile_fns("--call-graph dwarf --interval 10ms", cmd, &out, pdir, rows, 64);
    const frow *work = find_fn(rows, n, "work");
    ck_assert_msg(work != NULL && work->self_samples >= 100, "work: %lu samples",
                  work ? work->self_samples : 0);
    snprintf(cmd, sizeof(cmd),
             "HOME=%s GOCACHE=%s/gocache %s tool pprof -lines -top -nodecount=100 -nodefraction=0 "
             "-sample_index=energy %s/profile.pb.gz 2>&1",
             out, out, PA_GO, pdir);
    char *top = NULL;
    ck_assert_int_eq(pa_test_run(cmd, &top), 0);
    snprintf(file, sizeof(file), "%s/lines.c", dir);
    int heavy = marker_line("HEAVY"), light = marker_line("LIGHT");
    double h = 0, l = 0, all = 0, flat, cum;
    /* every line of the function (its prologue and epilogue included: at
     * 500 samples a CPU-second a few land there) */
    for (int line = heavy - 30; line <= light + 30; line++) {
        lines_row(top, "work", file, line, &flat, &cum);
        if (line == heavy || line == heavy + 1)
            h += flat;
        if (line == light || line == light + 1)
            l += flat;
        all += flat;
    }
    fprintf(stderr,
            "pprof_lines: work %.0f uJ (functions.csv %.0f): heavy loop %.0f, "
            "light loop %.0f, share %.3f\n",
            all, work->self_j * 1e6, h, l, h / (h + l));
    /* every sample of work is on one of its lines (integer microjoules
     * per line) */
    ck_assert_msg(fabs(all - work->self_j * 1e6) <= 20,
                  "work's lines %.0f uJ, functions.csv %.6f J:\n%s", all, work->self_j, top);
    ck_assert_msg(h + l >= 0.9 * all, "the loops' lines have %.0f of %.0f uJ:\n%s", h + l, all,
                  top);
    ck_assert_msg(h / (h + l) > 0.62 && h / (h + l) < 0.88,
                  "heavy loop %.3f of the loops' energy, expected 0.75:\n%s", h / (h + l), top);
    /* main's line of the call carries work's energy */
    lines_row(top, "main", file, marker_line("CALL"), &flat, &cum);
    ck_assert_msg(cum >= work->self_j * 1e6 - 20, "main's call line has %.0f uJ, work %.6f J:\n%s",
                  cum, work->self_j, top);
    free(top);
    /* one frame per function in the collapsed stacks */
    snprintf(cmd, sizeof(cmd), "%s/energy.collapsed", pdir);
    char *col = pa_test_slurp(cmd);
    ck_assert(col != NULL);
    const char *first = strstr(col, ";main;work ");
    ck_assert_msg(first && !strstr(first + 1, ";main;work "), "main;work not one stack:\n%s", col);
    free(col);
    char *sum = slurp_in(pdir, "summary.json");
    ck_assert_msg(json_num(sum, "stacks_with_lines") > json_num(sum, "stacks"),
                  "no line-level stacks:\n%s", sum);
    free(sum);
    pa_test_rmtree(out);
}
END_TEST

/* Energy of functions.csv's rows of module [kernel] (all of them "NAME
 * [k]"), and the count of rows. */
static double kernel_self(const frow *rows, size_t n, size_t *count)
{
    double j = 0;
    *count = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].module, "[kernel]")) {
            size_t l = strlen(rows[i].name);
            ck_assert_msg(l > 4 && !strcmp(rows[i].name + l - 4, " [k]"),
                          "a kernel frame not marked [k]: %s", rows[i].name);
            j += rows[i].self_j;
            (*count)++;
        }
    return j;
}

/* functions.csv (512 rows at most) of a run whose summary.json's
 * kernel_frames starts with state; *process_j its process energy. */
static size_t read_kernel_run(const char *pdir, frow *rows, const char *state, double *process_j)
{
    size_t n = read_functions(pdir, rows, 512);
    char *sum = slurp_in(pdir, "summary.json");
    *process_j = json_num(sum, "process_energy_j");
    char want[256];
    snprintf(want, sizeof(want), "\"kernel_frames\": \"%s", state);
    ck_assert_msg(strstr(sum, want) != NULL, "no %s in %s", want, sum);
    free(sum);
    return n;
}

/* Kernel frames: named from /proc/kallsyms and marked [k] when it gives
 * addresses; dropped with a note when its addresses are hidden
 * (kptr_restrict, simulated by a file of zero addresses mounted over
 * /proc/kallsyms in a mount namespace of the command's own). */
START_TEST(kernel_frames)
{
    char *ks = pa_test_slurp("/proc/kallsyms");
    int named = ks && strncmp(ks, "0000000000000000 ", 17) != 0;
    free(ks);
    char *out = pa_test_tmpdir();
    char args[8192], pdir[4200], *log = NULL;
    frow rows[512];
    if (!named) {
        fprintf(stderr, "kernel_frames: named part SKIPPED: /proc/kallsyms gives no "
                        "addresses here\n");
    } else {
        snprintf(args, sizeof(args), "-q --interval 2ms --out %s/p -- %s/kern 1", out, dir);
        ck_assert_msg(run_profile(args, &log) == 0, "%s", log);
        free(log);
        snprintf(pdir, sizeof(pdir), "%s/p", out);
        double process;
        size_t n = read_kernel_run(pdir, rows, "named from /proc/kallsyms", &process), nk;
        /* the workload is mostly kernel time: in the kernel's frames, the
         * driver's read among them */
        double kj = kernel_self(rows, n, &nk);
        ck_assert_msg(kj > 0.5 * process, "kernel frames hold %.3f of %.3f J", kj, process);
        const frow *rz = find_fn(rows, n, "read_zero [k]");
        ck_assert_msg(rz && rz->total_j > 0.3 * process, "read_zero [k] missing or small");
        check_conservation(pdir);
    }
    /* hidden: a mount namespace of its own for the command */
    char *chk = NULL;
    if (pa_test_run("unshare -m true 2>&1", &chk) != 0) {
        fprintf(stderr, "kernel_frames: hidden part SKIPPED: no mount namespace (%s)\n",
                chk ? chk : "");
        free(chk);
        pa_test_rmtree(out);
        return;
    }
    free(chk);
    char hidden[4200];
    snprintf(hidden, sizeof(hidden), "%s/kallsyms", out);
    write_file(hidden, "0000000000000000 T _stext\n0000000000000000 T do_syscall_64\n"
                       "0000000000000000 t read_zero\n0000000000000000 T _etext\n");
    char cmd[16384];
    snprintf(cmd, sizeof(cmd),
             "unshare -m sh -c 'mount --bind %s /proc/kallsyms && exec %s profile "
             "--interval 2ms --out %s/h -- %s/kern 1' 2>&1",
             hidden, CLI_PATH, out, dir);
    ck_assert_msg(pa_test_run(cmd, &log) == 0, "%s", log);
    ck_assert_msg(strstr(log, "profile: kernel frames dropped: kernel addresses hidden "
                              "(kptr_restrict)\n"),
                  "no note on stderr: %s", log);
    free(log);
    snprintf(pdir, sizeof(pdir), "%s/h", out);
    double process;
    size_t n = read_kernel_run(pdir, rows, "dropped: kernel addresses hidden", &process), nk;
    kernel_self(rows, n, &nk);
    ck_assert_msg(nk == 0, "%zu kernel frames with hidden addresses", nk);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(!strstr(rows[i].name, "[k]"), "kernel frame %s kept", rows[i].name);
    /* the kernel's time stays with the user frame that made the call */
    const frow *rd = find_fn(rows, n, "read");
    ck_assert_msg(rd && rd->self_j > 0.5 * process, "read (libc) holds %.3f of %.3f J",
                  rd ? rd->self_j : 0, process);
    check_conservation(pdir);
    pa_test_rmtree(out);
}
END_TEST

/* Bad input: one line, exit 2 (usage) or 1 (the machine's refusal). */
static void expect_one_line(const char *args, int status, const char *needle)
{
    char *log = NULL;
    int rc = run_profile(args, &log);
    ck_assert_msg(rc == status, "'%s': exit %d, expected %d: %s", args, rc, status, log);
    ck_assert_msg(log && strstr(log, needle), "'%s': no '%s' in: %s", args, needle, log);
    ck_assert_msg(strchr(log, '\n') == log + strlen(log) - 1, "'%s': not one line: %s", args, log);
    free(log);
}

/* Issue 31 items 1, 3 and 11, with the defaults a new user gets on a
 * stock Debian system (binaries without frame pointers): `sort` of a
 * large file and the README's example give stacks rooted at the
 * program's entry (through __libc_start_main) or a thread's
 * (__clone3;start_thread) for >= 95 % of their
 * energy, and no frame outside a mapping; a few hundred samples in a
 * one-second run; `-g` alone is the default call graph; a run with no
 * sample says why, in its closing line and in summary.json. */
/* Whether a collapsed stack (root first, no count) starts where its
 * thread began running the program: the program's entry or the dynamic
 * loader's (_start), a thread's (clone3 or clone, then start_thread), or,
 * for a sample taken in the kernel while execve loads the program (no
 * user frame yet), the kernel's system-call entry with only kernel frames
 * after it.  README.md, "rooted". */
static bool rooted_at_entry(const char *l)
{
    if (!strcmp(l, "_start") || !strncmp(l, "_start;", 7) ||
        !strncmp(l, "__clone3;start_thread;", 22) || !strncmp(l, "__clone;start_thread;", 21))
        return true;
    if (strncmp(l, "entry_SYSCALL_64", 16))
        return false;
    for (const char *f = l; f;) {
        const char *e = strchr(f, ';');
        size_t n = e ? (size_t)(e - f) : strlen(f);
        if (n < 4 || strncmp(f + n - 4, " [k]", 4))
            return false;
        f = e ? e + 1 : NULL;
    }
    return true;
}

START_TEST(stock_defaults)
{
    char *out = pa_test_tmpdir(), args[8192], path[4200];
    snprintf(path, sizeof(path), "%s/lines", out);
    snprintf(args, sizeof(args), "seq 3000000 | shuf --random-source=/dev/zero > '%s'", path);
    ck_assert_int_eq(system(args), 0);
    /* a program that mostly runs in the vDSO (clock_gettime), unwound
     * and named through the vDSO's image */
    pa_test_write(out, "clk.c",
                  "#include <time.h>\nint main(void) { struct timespec t; long n = 0;\n"
                  "for (long i = 0; i < 10000000; i++) { clock_gettime(CLOCK_MONOTONIC, &t);"
                  " n += t.tv_nsec & 1; }\nreturn n == 42; }\n");
    snprintf(args, sizeof(args), "cc -O2 -o '%s/clk' '%s/clk.c'", out, out);
    ck_assert_int_eq(system(args), 0);
    const char *cmds[3][2] = {{"sort", "sort -o /dev/null '%s'"},
                              {"readme", "sh -c 'seq 300000 | sort -n | tail -1'"},
                              {"vdso", "'%s/clk'"}};
    /* under the sanitizers the long sort is left out: the same unwinding
     * as the README's sort, a longer run (the suite's time) */
#ifdef PA_SANITIZE_BUILD
    const int first = 1;
#else
    const int first = 0;
#endif
    for (int c = first; c < 3; c++) {
        char cmd[4400];
        snprintf(cmd, sizeof(cmd), cmds[c][1], c == 2 ? out : path);
        snprintf(args, sizeof(args), "-g --out %s/%s -- %s", out, cmds[c][0], cmd);
        char *log = NULL;
        ck_assert_msg(run_profile(args, &log) == 0, "%s", log);
        free(log);
        char dirp[4200];
        snprintf(dirp, sizeof(dirp), "%s/%s", out, cmds[c][0]);
        char *col = slurp_in(dirp, "energy.collapsed");
        char *sum = slurp_in(dirp, "summary.json");
        double all = 0, rooted = 0;
        for (char *l = strtok(col, "\n"); l; l = strtok(NULL, "\n")) {
            char *sp = strrchr(l, ' ');
            double v = sp ? strtod(sp + 1, NULL) : 0;
            if (sp)
                *sp = '\0';
            all += v;
            if (rooted_at_entry(l))
                rooted += v;
            else
                fprintf(stderr, "[defaults] %s: not rooted: %.300s\n", cmds[c][0], l);
            ck_assert_msg(!strstr(l, "[unmapped]"), "%s: a frame outside a mapping: %s", cmds[c][0],
                          l);
        }
        double samples = json_num(sum, "samples");
        fprintf(stderr,
                "[defaults] %s: %.1f%% of the energy in stacks rooted at the entry, "
                "%.0f samples, %.0f lost\n",
                cmds[c][0], all > 0 ? 100 * rooted / all : 0, samples,
                json_num(sum, "samples_lost"));
        /* issue 31 item 3: the README's example (sort -n of 300,000
         * lines, 25 samples or so, its comparison function's 8.6 KiB of
         * stack) as well as the long sort */
        ck_assert_msg(all > 0 && rooted >= 0.95 * all, "%s: %.1f%% rooted", cmds[c][0],
                      all > 0 ? 100 * rooted / all : 0);
        ck_assert_msg(strstr(sum, "\"call_graph\": \"dwarf\""), "%s", sum);
        if (c == 2) {
            char *fcsv = slurp_in(dirp, "functions.csv");
            ck_assert_msg(strstr(fcsv, "clock_gettime,[vdso],"), "vdso: not named:\n%.2000s", fcsv);
            free(fcsv);
        }
        if (c == 0) /* about a second of CPU at 500 a CPU-second */
            ck_assert_msg(samples >= 200, "sort: %.0f samples", samples);
        /* item 9: summary.json's count is functions.csv's rows */
        char *csv = slurp_in(dirp, "functions.csv");
        size_t nrows = 0;
        for (const char *q = csv; (q = strchr(q, '\n')); q++)
            nrows++;
        nrows--; /* the header */
        free(csv);
        ck_assert_msg((double)nrows == json_num(sum, "functions"),
                      "%s: functions.csv %zu rows, summary.json %.0f", cmds[c][0], nrows,
                      json_num(sum, "functions"));
        free(col);
        free(sum);
    }
    /* item 8: the native flame graph, loaded by a real browser (headless
     * Chromium, Debian's): its own title, the legend by module, a search's
     * matched energy, and a bad regular expression said */
#ifdef PA_SANITIZE_BUILD
    /* the browser and the JVM run none of the sanitized code: once, in the
     * plain run (the suite's time) */
    if (0) {
#else
    if (system("command -v chromium >/dev/null 2>&1") == 0) {
#endif
        static const struct {
            const char *hash, *want;
        } pages[] = {
            {"", "<title>powerapi profile energy flame graph (command: sh -c"},
            {"", "a root frame per process (teal)"},
            {"", "colours by module (the executable green"},
            {"#q=sort", "<div id=\"info\">matched: "},
            {"#q=(", "<div id=\"info\">bad regular expression: "},
        };
        for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
            char cmd[8192], *dom = NULL;
            snprintf(cmd, sizeof(cmd),
                     "timeout 60 chromium --headless --no-sandbox --disable-gpu "
                     "--user-data-dir=%s/chromium --dump-dom 'file://%s/readme/flamegraph.html%s' "
                     "2>/dev/null",
                     out, out, pages[i].hash);
            pa_test_run(cmd, &dom);
            ck_assert_msg(dom && strstr(dom, pages[i].want), "page%s: no '%s' in:\n%.2000s",
                          pages[i].hash, pages[i].want, dom ? dom : "");
            free(dom);
        }
    } else {
        fprintf(stderr, "stock_defaults: flame graph in a browser SKIPPED: no chromium "
                        "(scripts/deps.sh installs it)\n");
    }
    /* the page's roots: one frame per process, named and with its pid */
    {
        char rd[4200];
        snprintf(rd, sizeof(rd), "%s/readme", out);
        char *html = slurp_in(rd, "flamegraph.html");
        ck_assert_msg(strstr(html, "\"sort (pid ") && strstr(html, "\"kind\":\"native\""),
                      "no process roots in the flame graph");
        /* every process that has samples and at least the page's smallest
         * node's energy (2e-5 of the total, DESIGN.md) has its root: seq and
         * tail get one or two samples, sometimes none, and the shell's
         * rare sample can carry next to no energy (not asked by name) */
        char *pr = slurp_in(rd, "processes.csv");
        int roots = 0;
        double total = 0;
        for (int pass = 0; pass < 2; pass++)
            for (char *line = strchr(pr, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
                int pid;
                char name[64];
                double j;
                unsigned long samples;
                if (sscanf(line + 1, "%d,%63[^,],%*d,%*f,%lf,%lu", &pid, name, &j, &samples) != 4)
                    continue;
                if (pass == 0) {
                    total += j;
                    continue;
                }
                if (!samples || j < 2e-5 * total * 1.01)
                    continue;
                char want[128];
                snprintf(want, sizeof(want), "\"%s (pid %d)", name, pid);
                ck_assert_msg(strstr(html, want) != NULL,
                              "no root %s (%.6f J of %.6f) in the flame graph", want, j, total);
                roots++;
            }
        ck_assert_int_ge(roots, 1);
        free(pr);
        free(html);
    }
    /* item 4: a JVM without a perf map is named, with what to do */
#ifdef PA_SANITIZE_BUILD
    if (0) {
#else
    if (system("command -v java >/dev/null 2>&1") == 0) {
#endif
        pa_test_write(out, "Spin.java",
                      "public class Spin { public static void main(String[] a) {"
                      " long x = 0, end = System.nanoTime() + 1500000000L;"
                      " while (System.nanoTime() < end) x += x * 31 + 7;"
                      " System.out.println(x == 42 ? \"\" : \"done\"); } }\n");
        snprintf(args, sizeof(args), "--out %s/jvm -- java %s/Spin.java", out, out);
        char *jlog = NULL;
        ck_assert_int_eq(run_profile(args, &jlog), 0);
        ck_assert_msg(strstr(jlog, "is a JVM without a perf map") &&
                          strstr(jlog, "-XX:+DumpPerfMapAtExit") && strstr(jlog, "jalen"),
                      "%s", jlog);
        free(jlog);
        /* with the map written at the JVM's exit, the JIT frames sampled
         * before it are named at the end of the run (read again then) */
        snprintf(args, sizeof(args),
                 "--out %s/jvm2 -- java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit "
                 "%s/Spin.java",
                 out, out);
        ck_assert_int_eq(run_profile(args, &jlog), 0);
        ck_assert_msg(!strstr(jlog, "is a JVM without a perf map"), "%s", jlog);
        free(jlog);
        snprintf(path, sizeof(path), "%s/jvm2", out);
        char *fcsv = slurp_in(path, "functions.csv");
        ck_assert_msg(strstr(fcsv, "Spin::main") || strstr(fcsv, "Spin.main"),
                      "no Spin main among the functions:\n%.3000s", fcsv);
        free(fcsv);
    }
    /* no sample: said, with the reason */
    snprintf(args, sizeof(args), "--out %s/none -- true", out);
    char *log = NULL;
    ck_assert_int_eq(run_profile(args, &log), 0);
    ck_assert_msg(strstr(log, "profile: no stack sample: the targets used"), "%s", log);
    free(log);
    snprintf(path, sizeof(path), "%s/none", out);
    char *sum = slurp_in(path, "summary.json");
    ck_assert_msg(strstr(sum, "\"samples_note\": \"no stack sample: the targets used"), "%s", sum);
    free(sum);
    pa_test_rmtree(out);
}
END_TEST

START_TEST(bad_input)
{
    expect_one_line("--pid 999999999", 2, "invalid pid");
    expect_one_line("--pid 4194000 --duration 1s -q", 1, "no such process");
    expect_one_line("--event instructions -- true", 2, "--event: unknown value 'instructions'");
    expect_one_line("--interval 0 -- true", 2, "--interval");
    expect_one_line("--frequency 99 --interval 1ms -- true", 2, "exclude");
    expect_one_line("", 2, "nothing to profile");
    expect_one_line("--all --pid 1 --duration 1s", 2, "exclude each other");
    expect_one_line("--call-graph lbr -- true", 2, "--call-graph");
    expect_one_line("--window 1ms -- true", 2, "--window");
    expect_one_line("-- /nonexistent/command", 127, "cannot run");
    /* issue 31: an output folder that cannot be written is refused before
     * anything runs (it used to be found out at the end, the profile
     * lost): under /proc, on an existing file; a failed run leaves no
     * folder of its own behind */
    {
        char *d = pa_test_tmpdir(), a[12000], mark[4200], file[4200], made[4200];
        snprintf(mark, sizeof(mark), "%s/ran", d);
        snprintf(file, sizeof(file), "%s/a-file", d);
        pa_test_write(d, "a-file", "x\n");
        const char *outs[] = {"/proc/powerapi-profile-test", file};
        for (int i = 0; i < 2; i++) {
            snprintf(a, sizeof(a), "-q --output %s -- touch %s", outs[i], mark);
            expect_one_line(a, 1, "cannot write the profile there");
            ck_assert_msg(access(mark, F_OK) != 0, "--output %s: the command ran", outs[i]);
        }
        snprintf(made, sizeof(made), "%s/new", d);
        snprintf(a, sizeof(a), "-q --output %s --pid 4194000 --duration 1s", made);
        expect_one_line(a, 1, "no such process");
        ck_assert_msg(access(made, F_OK) != 0, "a failed run left %s behind", made);
        pa_test_rmtree(d);
    }
    /* cycles: the development machines have no PMU; where there
     * is one, the event opens */
    char *log = NULL;
    int rc = run_profile("-q --event cycles -- true", &log);
    if (rc != 0) {
        ck_assert_int_eq(rc, 1);
        ck_assert_msg(strstr(log, "not supported here"), "%s", log);
    }
    free(log);
    if (geteuid() != 0)
        return; /* the rest needs another user */
    /* another user's process, as an unprivileged user */
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "setpriv --reuid=65534 --regid=65534 --clear-groups %s profile -q "
             "--pid 1 --duration 1s --out /tmp 2>&1",
             CLI_PATH);
    rc = pa_test_run(cmd, &log);
    ck_assert_msg(rc == 1 && strstr(log, "permission denied"), "pid 1 as nobody: %d %s", rc, log);
    free(log);
    /* perf_event_paranoid 3 (Debian's "no perf for users") */
    char *fake = pa_test_tmpdir();
    pa_test_write(fake, "sys/kernel/perf_event_paranoid", "3\n");
    chmod(fake, 0755);
    snprintf(cmd, sizeof(cmd),
             "setpriv --reuid=65534 --regid=65534 --clear-groups %s profile -q "
             "--procfs %s -- true 2>&1",
             CLI_PATH, fake);
    rc = pa_test_run(cmd, &log);
    /* with the command that allows it (a new user on Debian meets this
     * first) */
    ck_assert_msg(rc == 1 && strstr(log, "perf_event_paranoid is 3") &&
                      strstr(log, "sudo sysctl kernel.perf_event_paranoid=2"),
                  "paranoid 3: %d %s", rc, log);
    free(log);
    pa_test_rmtree(fake);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("profile");
    TCase *tc = tcase_create("live");
    tcase_add_unchecked_fixture(tc, build_all, remove_all);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, known_answer_fp);
    tcase_add_test(tc, known_answer_dwarf_nofp);
#ifndef PA_SANITIZE_BUILD
    /* the same two unwinders on the other binary: figures, not new code
     * paths, so in the plain run only (the suite's time) */
    tcase_add_test(tc, known_answer_nofp);
    tcase_add_test(tc, known_answer_dwarf_fp);
#endif
    tcase_add_test(tc, stripped_pid);
    tcase_add_test(tc, all_processes);
    tcase_add_test(tc, debuglink);
    tcase_add_test(tc, cxx_demangled);
    tcase_add_test(tc, rust_demangled);
    tcase_add_test(tc, all_short_lived);
    tcase_add_test(tc, jit_perf_map);
    tcase_add_test(tc, command_tree);
    tcase_add_test(tc, c_scopes);
    tcase_add_test(tc, pprof_top);
    tcase_add_test(tc, pprof_lines);
    tcase_add_test(tc, kernel_frames);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, stock_defaults);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
