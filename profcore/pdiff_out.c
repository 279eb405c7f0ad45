/*
 * pdiff_out.c - the files of a comparison: diff.csv, diff.json, diff.md
 * (a pull request's comment) and the differential flame graph, and its
 * text summary.
 */
#include "pdiff_int.h"
#include "profcore.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

static const char *const match_words[] = {"name", "module renamed", "unsure", "only in A",
                                          "only in B"};

static const char *sig_word(const pc_change *c)
{
    return c->significant < 0 ? "untested" : c->significant ? "significant" : "within noise";
}

static void csv_change(FILE *f, const pc_change *c)
{
    fprintf(f, ",%.6f,%.6f,%.6f,%.6f,%.6f,%.3f,%.6f,", c->a, c->a_sd, c->b, c->b_sd, c->change,
            c->pct, c->ci95);
    if (c->p >= 0)
        fprintf(f, "%.6g", c->p);
    fprintf(f, ",%s", sig_word(c));
}

static int write_csv(const pc_diff *d, const char *dir)
{
    pc_out o;
    int rc = pc_out_open(&o, dir, "diff.csv");
    if (rc < 0)
        return rc;
    static const char *const parts[] = {"self", "total"};
    fputs("function,module,match", o.f);
    for (int k = 0; k < 2; k++)
        fprintf(o.f, ",%s_a,%s_a_sd,%s_b,%s_b_sd,%s_change,%s_change_pct,%s_ci95,%s_p,%s_verdict",
                parts[k], parts[k], parts[k], parts[k], parts[k], parts[k], parts[k], parts[k],
                parts[k]);
    fputs(",share_of_change_pct,note\n", o.f);
    pc_diff_row tot = {
        .name = "[total]", .module = "", .self = d->total, .total = d->total, .share = 100};
    for (size_t i = 0; i <= d->nrows; i++) {
        const pc_diff_row *r = i ? &d->rows[i - 1] : &tot;
        pa__csv_write(o.f, r->name);
        fputc(',', o.f);
        pa__csv_write(o.f, r->module);
        fprintf(o.f, ",%s", match_words[r->match]);
        csv_change(o.f, &r->self);
        csv_change(o.f, &r->total);
        fprintf(o.f, ",%.3f,", r->share);
        pa__csv_write(o.f, r->note);
        fputc('\n', o.f);
    }
    return pc_out_close(&o);
}

static void json_change(FILE *f, const char *key, const pc_change *c)
{
    fprintf(f,
            "\"%s\": {\"a\": %.6f, \"a_sd\": %.6f, \"b\": %.6f, \"b_sd\": %.6f, "
            "\"change\": %.6f, \"change_pct\": %.3f, \"ci95\": %.6f, \"p\": ",
            key, c->a, c->a_sd, c->b, c->b_sd, c->change, c->pct, c->ci95);
    if (c->p >= 0)
        fprintf(f, "%.6g", c->p);
    else
        fputs("null", f);
    fprintf(f, ", \"significant\": %s}",
            c->significant < 0 ? "null"
            : c->significant   ? "true"
                               : "false");
}

static int write_json(const pc_diff *d, const char *dir, const char *la, const char *lb)
{
    pc_out o;
    int rc = pc_out_open(&o, dir, "diff.json");
    if (rc < 0)
        return rc;
    fputs("{\"a\": ", o.f);
    pa__json_write(o.f, la);
    fputs(", \"b\": ", o.f);
    pa__json_write(o.f, lb);
    fprintf(o.f,
            ", \"tool\": \"%s\", \"unit\": \"%s\", \"runs_a\": %zu, \"runs_b\": %zu, "
            "\"method\": ",
            d->tool, d->unit, d->runs_a, d->runs_b);
    pa__json_write(o.f, d->method);
    fputs(",\n ", o.f);
    json_change(o.f, "total", &d->total);
    fputs(",\n \"functions\": [", o.f);
    for (size_t i = 0; i < d->nrows; i++) {
        const pc_diff_row *r = &d->rows[i];
        fputs(i ? ",\n  {\"function\": " : "\n  {\"function\": ", o.f);
        pa__json_write(o.f, r->name);
        fputs(", \"module\": ", o.f);
        pa__json_write(o.f, r->module);
        fprintf(o.f, ", \"match\": \"%s\", ", match_words[r->match]);
        json_change(o.f, "self", &r->self);
        fputs(", ", o.f);
        json_change(o.f, "total", &r->total);
        fprintf(o.f, ", \"share_of_change_pct\": %.3f, \"note\": ", r->share);
        pa__json_write(o.f, r->note);
        fputc('}', o.f);
    }
    fputs("]}\n", o.f);
    return pc_out_close(&o);
}

/* a Markdown cell: '|' escaped, newlines out */
static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '`')
            fputc('\'', f);
        else
            fputc(*s == '\n' ? ' ' : *s, f);
    }
}

static void md_verdict(FILE *f, const pc_change *c)
{
    if (c->significant < 0)
        fputs("untested", f);
    else
        fprintf(f, "%s (p = %.2g)", c->significant ? "**significant**" : "within noise", c->p);
}

static int write_md(const pc_diff *d, const char *dir, const char *la, const char *lb, size_t max)
{
    pc_out o;
    int rc = pc_out_open(&o, dir, "diff.md");
    if (rc < 0)
        return rc;
    const pc_change *t = &d->total;
    const char *u = d->unit;
    fputs("### Energy: ", o.f);
    md_cell(o.f, la);
    fputs(" → ", o.f);
    md_cell(o.f, lb);
    fprintf(o.f, "\n\n**Total: %.3f %s → %.3f %s, %+.3f %s (%+.1f %%)**", t->a, u, t->b, u,
            t->change, u, t->pct);
    if (t->ci95 > 0)
        fprintf(o.f, ", 95 %% CI ±%.3f %s", t->ci95, u);
    fputs(": ", o.f);
    md_verdict(o.f, t);
    fprintf(o.f, "\n\nMethod: %s.\n\n", d->method);
    fprintf(o.f,
            "| function | self A (%s) | self B (%s) | self change | share of change | "
            "total change | verdict | note |\n|---|---:|---:|---:|---:|---:|---|---|\n",
            u, u);
    for (size_t i = 0; i < d->nrows && i < max; i++) {
        const pc_diff_row *r = &d->rows[i];
        fputs("| `", o.f);
        md_cell(o.f, r->name);
        fprintf(o.f, "` | %.3f | %.3f | %+.3f (%+.1f %%) | %.1f %% | %+.3f | ", r->self.a,
                r->self.b, r->self.change, r->self.pct, r->share, r->total.change);
        md_verdict(o.f, &r->self);
        fputs(" | ", o.f);
        md_cell(o.f, r->note);
        fputs(" |\n", o.f);
    }
    if (d->nrows > max)
        fprintf(o.f, "\n%zu more functions in diff.csv.\n", d->nrows - max);
    return pc_out_close(&o);
}

static const char *node_name(const void *ctx, int func)
{
    return ((const pc_diff *)ctx)->nodes[func].name;
}

static int write_flamegraph(const pc_diff *d, const char *dir, const char *la, const char *lb)
{
    size_t n = d->nnodes;
    pc_tree_node *nodes = calloc(n ? n : 1, sizeof(*nodes));
    double *a = malloc((n ? n : 1) * sizeof(double)), *b = malloc((n ? n : 1) * sizeof(double));
    int rc = nodes && a && b ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const pdiff_node *s = &d->nodes[i];
        nodes[i] = (pc_tree_node){.func = (int)i,
                                  .parent = s->parent,
                                  .first_child = s->first_child,
                                  .next_sibling = s->next_sibling,
                                  .self_j = (s->a_self + s->b_self) / 2};
        a[i] = s->a_total;
        b[i] = s->b_total;
    }
    if (rc == 0) {
        pc_tree_totals(nodes, n);
        pc_tree t = {.nodes = nodes,
                     .n = n,
                     .nfuncs = n,
                     .ctx = d,
                     .name = node_name,
                     .diff_a_j = a,
                     .diff_b_j = b};
        char title[512];
        snprintf(title, sizeof(title), "energy diff: %s -> %s", la, lb);
        rc = pc_tree_write_flamegraph(&t, dir, title, d->total.b, 0);
    }
    free(nodes);
    free(a);
    free(b);
    return rc;
}

int pc_diff_write(const pc_diff *d, const char *dir, const char *la, const char *lb)
{
    int rc = pc_out_mkdirs(dir, 0755);
    if (rc == 0)
        rc = write_csv(d, dir);
    if (rc == 0)
        rc = write_json(d, dir, la, lb);
    if (rc == 0)
        rc = write_md(d, dir, la, lb, 20);
    if (rc == 0)
        rc = write_flamegraph(d, dir, la, lb);
    return rc;
}

void pc_diff_print(const pc_diff *d, FILE *f, size_t max)
{
    const pc_change *t = &d->total;
    const char *u = d->unit;
    fprintf(f, "total: %.3f %s -> %.3f %s: %+.3f %s (%+.1f %%)", t->a, u, t->b, u, t->change, u,
            t->pct);
    if (t->ci95 > 0)
        fprintf(f, ", 95 %% CI %+.3f..%+.3f %s", t->change - t->ci95, t->change + t->ci95, u);
    fprintf(f, ", %s", sig_word(t));
    if (t->p >= 0)
        fprintf(f, " (p = %.2g)", t->p);
    fprintf(f, "\nmethod: %s\n\n%-36s %9s %9s %9s %8s %7s %9s  %s\n", d->method, "function",
            "self A", "self B", "change", "%", "share", "total chg", "verdict");
    for (size_t i = 0; i < d->nrows && i < max; i++) {
        const pc_diff_row *r = &d->rows[i];
        char pct[16];
        snprintf(pct, sizeof(pct), r->self.a > 0 ? "%+.1f%%" : "-", r->self.pct);
        fprintf(f, "%-36.36s %9.3f %9.3f %+9.3f %8s %6.1f%% %+9.3f  %s%s%s\n", r->name, r->self.a,
                r->self.b, r->self.change,
                r->match == PC_MATCH_ONLY_A   ? "gone"
                : r->match == PC_MATCH_ONLY_B ? "new"
                                              : pct,
                r->share, r->total.change, sig_word(&r->self), r->note[0] ? "; " : "", r->note);
    }
    if (d->nrows > max)
        fprintf(f, "(%zu more in diff.csv)\n", d->nrows - max);
}
