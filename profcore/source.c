/*
 * source.c - where a profile's numbers come from: the last report's
 * formula, sensors, CPU source and assumptions, as both tools' summary.json
 * state them.
 */
#include "profcore.h"

#include <stdio.h>

#include "util.h"

void pa_psource_from_report(pa_psource *s, const pa_report *rep)
{
    snprintf(s->formula, sizeof(s->formula), "%s", rep->formula ? rep->formula : "");
    snprintf(s->sensors, sizeof(s->sensors), "%s", rep->sensors ? rep->sensors : "");
    snprintf(s->cpu_source, sizeof(s->cpu_source), "%s", rep->cpu_source ? rep->cpu_source : "");
    snprintf(s->assumed, sizeof(s->assumed), "%s", rep->assumed ? rep->assumed : "");
}

void pa_psource_json(FILE *f, const pa_psource *s, const char *const *filters, size_t n)
{
    fputs("  \"formula\": ", f);
    pa__json_write(f, s->formula);
    fputs(",\n  \"sensors\": ", f);
    pa__json_write(f, s->sensors);
    fputs(",\n  \"cpu_source\": ", f);
    pa__json_write(f, s->cpu_source);
    fputs(",\n  \"assumed\": [", f);
    pa_pout_json_list(f, s->assumed); /* ";"-separated in the report */
    fputs("],\n  \"filter\": [", f);
    pa_pout_json_strings(f, filters, n);
    fputc(']', f);
}
