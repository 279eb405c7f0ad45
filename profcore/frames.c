/*
 * frames.c - interned strings and frames: names, modules and files are
 * kept once for the whole run, so that a frame's strings compare by
 * pointer (the function table's key).
 */
#include "profcore.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static char **in_v;
static size_t in_cap, in_n, in_bytes;

static int intern_grow(void)
{
    size_t ncap = in_cap ? in_cap * 2 : 1024;
    char **nv = calloc(ncap, sizeof(*nv));
    if (!nv)
        return -1;
    for (size_t i = 0; i < in_cap; i++) {
        if (!in_v[i])
            continue;
        size_t k = pa__hash_str(in_v[i]) & (ncap - 1);
        while (nv[k])
            k = (k + 1) & (ncap - 1);
        nv[k] = in_v[i];
    }
    free(in_v);
    in_v = nv;
    in_cap = ncap;
    return 0;
}

const char *pc_intern(const char *s)
{
    if (!s)
        s = "";
    if ((in_n + 1) * 2 > in_cap && intern_grow() < 0)
        return "";
    size_t k = pa__hash_str(s) & (in_cap - 1);
    while (in_v[k]) {
        if (!strcmp(in_v[k], s))
            return in_v[k];
        k = (k + 1) & (in_cap - 1);
    }
    char *d = strdup(s);
    if (!d)
        return "";
    in_v[k] = d;
    in_n++;
    in_bytes += strlen(s) + 1;
    return d;
}

void pc_intern_free(void)
{
    for (size_t i = 0; i < in_cap; i++)
        free(in_v[i]);
    free(in_v);
    in_v = NULL;
    in_cap = in_n = in_bytes = 0;
}

size_t pc_intern_memory(void)
{
    return in_cap * sizeof(char *) + in_bytes;
}

pc_frame pc_frame_pseudo(const char *name)
{
    return (pc_frame){.name = pc_intern(name),
                      .module = pc_intern(""),
                      .source = pc_intern(""),
                      .file = pc_intern(""),
                      .path = pc_intern(""),
                      .build_id = pc_intern("")};
}
