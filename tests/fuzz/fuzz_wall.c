/* fuzz_wall.c - the parsers of the whole machine's meters (issue 46;
 * DESIGN.md section 19): a Redfish resource or a smart plug's JSON
 * (pa_wall_json_number, pa_wall_json_link at the paths the sensors read),
 * a PDU's Prometheus text (pa_wall_prom_number), an hwmon attribute
 * (pa_wall_hwmon_value) and a BMC's DCMI Get Power Reading response
 * (pa_dcmi_power_parse).  The input is cut at "\n~~~\n": the first piece
 * is read as each text, the second (or the first) as the DCMI bytes. */
#include "fuzz.h"

#include "../../sensors/wall.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void json_paths(const char *s, size_t n)
{
    static const char *const paths[] = {"PowerWatts.Reading",
                                        "PowerControl.0.PowerConsumedWatts",
                                        "StatusSNS.ENERGY.Power",
                                        "Members.3",
                                        "a.b.c.d.e.f",
                                        ""};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        double v = NAN;
        int rc = pa_wall_json_number(s, n, paths[i], &v);
        if (rc == 0 && !isfinite(v))
            fz_fail("json %s: %g accepted", paths[i], v);
        if (rc != 0 && rc != -EINVAL && rc != -ENOENT && rc != -ERANGE)
            fz_fail("json %s: %d", paths[i], rc);
        char link[64];
        link[0] = 'x';
        if (pa_wall_json_link(s, n, paths[i], link, sizeof(link)) == 0 &&
            (link[0] != '/' || strnlen(link, sizeof(link)) == sizeof(link)))
            fz_fail("json link %s: not a path", paths[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_piece pc[2];
    size_t np = fz_split(data, size, pc, 2);
    char *s = fz_strdup(&pc[0]);
    size_t n = strlen(s);
    json_paths(s, n);
    double v = NAN;
    if (pa_wall_prom_number(s, n, "pdu_outlet_power_watts{outlet=\"3\"}", &v) == 0 && !isfinite(v))
        fz_fail("prometheus: %g accepted", v);
    if (pa_wall_prom_number(s, n, "node_power", &v) == 0 && !isfinite(v))
        fz_fail("prometheus: %g accepted", v);
    unsigned long long u;
    if (pa_wall_hwmon_value(s, &u) == 0 && (s[0] < '0' || s[0] > '9'))
        fz_fail("hwmon: '%.20s' accepted", s);
    const fz_piece *b = np > 1 ? &pc[1] : &pc[0];
    pa_dcmi_power p;
    int code = -1;
    int rc = pa_dcmi_power_parse(b->p, b->n, &p, &code);
    if (rc == 0 && (b->n < 19 || !p.active))
        fz_fail("dcmi: %zu bytes accepted", b->n);
    if (rc == -EIO && (code <= 0 || code > 255))
        fz_fail("dcmi: completion code %d", code);
    free(s);
    return 0;
}
