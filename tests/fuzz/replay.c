/*
 * replay.c - runs files (or every file of folders) through a fuzz
 * target's LLVMFuzzerTestOneInput: the corpus as a regression test, with
 * any compiler.  Prints one line per folder; a crash is the test failing.
 * Each input runs on a fresh context unless PA_FUZZ_FRESH=0 (fuzz.h).
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0, n;
    uint8_t *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: out of memory\n");
        return -1;
    }
    /* libFuzzer hands a buffer of exactly the input's size */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    /* each input on its own, as it was found (fuzz.h); PA_FUZZ_FRESH=0
     * replays the files in order on one context, as a campaign ran them */
    setenv("PA_FUZZ_FRESH", "1", 0);
    int failed = 0;
    for (int a = 1; a < argc; a++) {
        struct stat st;
        if (stat(argv[a], &st) < 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[a], strerror(errno));
            failed = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed |= run_file(argv[a]) < 0;
            continue;
        }
        DIR *d = opendir(argv[a]);
        if (!d) {
            failed = 1;
            continue;
        }
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char **nn = realloc(names, (n + 1) * sizeof(*names));
            if (!nn)
                break;
            names = nn;
            names[n] = malloc(strlen(argv[a]) + strlen(e->d_name) + 2);
            if (!names[n])
                break;
            sprintf(names[n], "%s/%s", argv[a], e->d_name);
            n++;
        }
        closedir(d);
        qsort(names, n, sizeof(*names), by_name);
        for (size_t i = 0; i < n; i++) {
            failed |= run_file(names[i]) < 0;
            free(names[i]);
        }
        free(names);
        printf("replay: %zu inputs of %s\n", n, argv[a]);
        if (n == 0) {
            fprintf(stderr, "replay: %s is empty\n", argv[a]);
            failed = 1;
        }
    }
    return failed;
}
