/* fuzz_pdiff.c - what `powerapi diff` reads (profcore/pdiff_load.c): a
 * result folder's functions.csv, summary.json and energy.collapsed
 * (pieces 1 to 3) and a pprof file (piece 4, gzipped or not), then the
 * comparison of each side with itself and its files.  Contract: an error
 * has its one line; a side compared with itself changes by nothing. */
#include "fuzz.h"

#include "pdiff.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static void check_self(const pc_side *s, const char *root, const char *what)
{
    char err[512] = "", out[4200];
    pc_diff *d;
    int rc = pc_diff_new(s, s, 5, &d, err, sizeof(err));
    if (rc < 0) {
        if (rc != -ENOMEM)
            fz_fail("%s: compared with itself: %d (%s)", what, rc, err);
        return;
    }
    if (pc_diff_total(d)->change != 0)
        fz_fail("%s: the total changed against itself", what);
    size_t n;
    const pc_diff_row *r = pc_diff_rows(d, &n);
    for (size_t i = 0; i < n; i++)
        if (r[i].self.change != 0 || r[i].total.change != 0 || r[i].self.significant == 1)
            fz_fail("%s: %s changed against itself", what, r[i].name);
    snprintf(out, sizeof(out), "%s/out", root);
    (void)pc_diff_write(d, out, "a", "a");
    pc_diff_free(d);
}

static void load(const char *root, const char *rel, const char *what)
{
    char path[4200], err[512] = "";
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    pc_side *s;
    int rc = pc_side_load(path, &s, err, sizeof(err));
    if (rc < 0) {
        if (!err[0])
            fz_fail("%s: error %d without a message", what, rc);
        return;
    }
    check_self(s, root, what);
    pc_side_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const files[] = {"a/functions.csv", "a/summary.json", "a/energy.collapsed",
                                        "p.pb"};
    fz_piece pc[FZ_MAX_PIECES];
    size_t n = fz_split(data, size, pc, 4);
    const char *root = fz_root(NULL);
    for (size_t i = 0; i < 4; i++)
        fz_write(root, files[i], i < n ? pc[i].p : (const uint8_t *)"", i < n ? pc[i].n : 0);
    load(root, "a", "folder");
    load(root, "p.pb", "pprof");
    return 0;
}
