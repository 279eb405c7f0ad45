/*
 * source.c - where a profile's numbers come from: the last report's
 * formula, sensors, CPU source and assumptions, as both tools' summary.json
 * state them.
 */
#include "profcore.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

void pc_source_from_report(pc_source *s, const pa_report *rep)
{
    snprintf(s->formula, sizeof(s->formula), "%s", rep->formula ? rep->formula : "");
    snprintf(s->sensors, sizeof(s->sensors), "%s", rep->sensors ? rep->sensors : "");
    snprintf(s->cpu_source, sizeof(s->cpu_source), "%s", rep->cpu_source ? rep->cpu_source : "");
    snprintf(s->assumed, sizeof(s->assumed), "%s", rep->assumed ? rep->assumed : "");
}

void pc_source_json(FILE *f, const pc_source *s, const char *const *filters, size_t n)
{
    fputs("  \"formula\": ", f);
    pa__json_write(f, s->formula);
    fputs(",\n  \"sensors\": ", f);
    pa__json_write(f, s->sensors);
    fputs(",\n  \"cpu_source\": ", f);
    pa__json_write(f, s->cpu_source);
    fputs(",\n  \"assumed\": [", f);
    pc_out_json_list(f, s->assumed); /* ";"-separated in the report */
    char ci[128];
    if (s->carbon_g_per_kwh > 0 && pa_carbon_assumption(s->carbon_g_per_kwh, ci, sizeof(ci)) > 0) {
        fputs(s->assumed[strspn(s->assumed, " ;")] ? ", " : "", f);
        pa__json_write(f, ci);
    }
    fputc(']', f);
    if (s->carbon_g_per_kwh > 0)
        fprintf(f, ",\n  \"carbon_intensity_g_per_kwh\": %g", s->carbon_g_per_kwh);
    fputs(",\n  \"filter\": [", f);
    pc_out_json_strings(f, filters, n);
    fputc(']', f);
}

void pc_source_carbon_json(FILE *f, const pc_source *s, const char *key, double energy_j)
{
    double g;
    if (s->carbon_g_per_kwh > 0 && pa_carbon_g(energy_j, s->carbon_g_per_kwh, &g) == 0)
        fprintf(f, "  \"%s\": %.9f,\n", key, g);
}

void pc_source_carbon_text(const pc_source *s, double energy_j, char *buf, size_t len)
{
    double g;
    if (len)
        buf[0] = '\0';
    if (s->carbon_g_per_kwh > 0 && pa_carbon_g(energy_j, s->carbon_g_per_kwh, &g) == 0)
        snprintf(buf, len, "CO2e %.6f g at an assumed %g gCO2e/kWh", g, s->carbon_g_per_kwh);
}

void pc_source_carbon_csv_header(FILE *f, const pc_source *s)
{
    if (s->carbon_g_per_kwh > 0)
        fputs(",co2e_g,carbon_intensity_g_per_kwh", f);
}

void pc_source_carbon_csv_row(FILE *f, const pc_source *s, double energy_j)
{
    double g;
    if (s->carbon_g_per_kwh <= 0)
        return;
    if (pa_carbon_g(energy_j, s->carbon_g_per_kwh, &g) == 0)
        fprintf(f, ",%.9f,%g", g, s->carbon_g_per_kwh);
    else
        fprintf(f, ",,%g", s->carbon_g_per_kwh);
}
