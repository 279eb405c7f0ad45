/*
 * carbon.c - grams of CO2e from joules at a carbon intensity the user
 * states: the one conversion of every output (DESIGN.md section 17).
 */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FORMS                                                                                      \
    "give grams of CO2e per kWh, a number more than 0 and at most 5000: 385, 56.5 or "             \
    "385g/kWh"

static int intensity_ok(double g)
{
    return isfinite(g) && g > 0 && g <= PA_CARBON_MAX_G_PER_KWH;
}

int pa_carbon_intensity_parse(const char *s, double *out_g_per_kwh)
{
    if (!s || !out_g_per_kwh)
        return pa__err(-EINVAL, "carbon intensity: none given (" FORMS ")");
    char *end;
    errno = 0;
    double g = strtod(s, &end);
    /* strtod takes "nan", "inf" and hex: only a decimal number is a
     * figure a person typed */
    int bad = end == s || strspn(s, " \t+-.0123456789eE") < (size_t)(end - s);
    if (!bad && *end && strcasecmp(end, "g/kWh") && strcasecmp(end, "gCO2e/kWh"))
        bad = 1;
    if (bad)
        return pa__err(-EINVAL, "carbon intensity '%s' is not a number (" FORMS ")", s);
    if (!intensity_ok(g) || errno == ERANGE)
        return pa__err(-ERANGE, "carbon intensity '%s' is out of range (" FORMS ")", s);
    *out_g_per_kwh = g;
    return 0;
}

int pa_carbon_g(double energy_j, double g_per_kwh, double *out_g)
{
    if (!out_g)
        return pa__err(-EINVAL, "pa_carbon_g: out_g is NULL");
    if (!intensity_ok(g_per_kwh))
        return pa__err(-ERANGE, "carbon intensity %g is out of range (" FORMS ")", g_per_kwh);
    if (!isfinite(energy_j))
        return pa__err(-EDOM, "pa_carbon_g: the energy is not a finite number");
    *out_g = energy_j / PA_J_PER_KWH * g_per_kwh;
    return 0;
}

int pa_carbon_assumption(double g_per_kwh, char *buf, size_t len)
{
    if (!buf && len)
        return pa__err(-EINVAL, "pa_carbon_assumption: buf is NULL");
    if (!intensity_ok(g_per_kwh))
        return pa__err(-ERANGE, "carbon intensity %g is out of range (" FORMS ")", g_per_kwh);
    return snprintf(buf, len, "carbon intensity %g gCO2e/kWh (given, not measured)", g_per_kwh);
}
