/*
 * acpi_power.c - the "acpi-power" sensor: the whole machine's power from
 * the ACPI power meter (ACPI000D, the kernel's acpi_power_meter driver),
 * a hwmon device named "power_meter" under <sysfs>/class/hwmon (issue 46;
 * DESIGN.md section 19).  Its power1_average is in µW, averaged by the
 * firmware over power1_average_interval ms (Documentation/hwmon/
 * acpi_power_meter.rst, sysfs-interface): the frame gets, under
 * "acpi-power", that average with its window, for the platform formula
 * to align with the tick's windows.
 */
#include "wall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "powerapi_module.h"

typedef struct acpi_mod {
    pa_wall_reading r;
} acpi_mod;

static int acpi_probe(const pa_env *env, char *why, size_t len)
{
    pa_wall_reading r;
    memset(&r, 0, sizeof(r));
    int n = pa_wall_acpi_read(pa_env_sysfs(env), &r, why, len);
    if (n == 0) {
        snprintf(why, len,
                 "acpi-power: no hwmon power_meter under %s/class/hwmon (the machine "
                 "has no ACPI power meter, or the acpi_power_meter module is not loaded)",
                 pa_env_sysfs(env));
        return -ENODEV;
    }
    return n < 0 ? n : 0;
}

static int acpi_start(pa_module *m, const pa_options *o)
{
    (void)o;
    acpi_mod *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    pa_module_set_priv(m, s);
    return 0;
}

static int acpi_sample(pa_module *m, pa_frame *f)
{
    acpi_mod *s = pa_module_priv(m);
    char why[512] = "";
    uint64_t seq = s->r.seq;
    memset(&s->r, 0, sizeof(s->r));
    int n = pa_wall_acpi_read(pa_env_sysfs(pa_module_env(m)), &s->r, why, sizeof(why));
    if (n <= 0) {
        pa_module_errorf(m, "%s", n < 0 ? why : "acpi-power: the power meter is gone");
        return n < 0 ? n : -ENODEV;
    }
    s->r.seq = seq + 1;
    s->r.frame_ns = pa_frame_time_ns(f);
    return pa_frame_put(f, "acpi-power", &s->r, sizeof(s->r));
}

static void acpi_stop(pa_module *m)
{
    free(pa_module_priv(m));
    pa_module_set_priv(m, NULL);
}

const pa_module_ops pa__mod_acpi_power = {
    .abi = PA_MODULE_ABI,
    .name = "acpi-power",
    .kind = PA_SENSOR,
    .description = "the whole machine's power from the ACPI power meter (hwmon power_meter)",
    .probe = acpi_probe,
    .start = acpi_start,
    .sample = acpi_sample,
    .stop = acpi_stop,
};
