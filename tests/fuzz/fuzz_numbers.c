/* fuzz_numbers.c - the small parsers of numbers from outside: decimal
 * fields (pa__parse_u64), sysfs CPU lists ("0-3,8"), durations of options
 * and of the command line (pa_parse_duration_ns, cli_parse_duration),
 * counts of the command line (cli_parse_uint).  The input is one
 * string. */
#include "fuzz.h"

#include "cli.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_piece all = {data, size};
    char *s = fz_strdup(&all);
    const char *p = s;
    uint64_t v;
    while (*p && pa__parse_u64(&p, &v) == 0 && *p)
        p++;
    int cpus[64];
    int n = pa__parse_cpulist(s, cpus, 64);
    if (n < 0 || n > 64)
        fz_fail("cpulist: %d CPUs in 64", n);
    uint64_t ns;
    if (pa_parse_duration_ns(s, &ns) == 0 && cli_parse_duration(s, &ns) == 0 && ns == 0)
        fz_fail("duration: 0 accepted by the command line");
    unsigned long u;
    if (cli_parse_uint(s, 1000, &u) == 0 && (u == 0 || u > 1000))
        fz_fail("uint: %lu out of 1..1000", u);
    free(s);
    return 0;
}
