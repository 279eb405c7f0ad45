/* fuzz_jalen_options.c - the jalen agent's option string
 * (-agentpath:libjalen.so=OPTIONS), parsed by jl_opts_parse of
 * jalen-agent/src/options.c (compiled into this target). */
#include "fuzz.h"

#include "jalen.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_piece all = {data, size};
    char *s = fz_strdup(&all);
    jl_opts o;
    char err[256] = "";
    int rc = jl_opts_parse(s, 4242, &o, err, sizeof(err));
    if (rc < 0 && rc != -ENOMEM && !err[0])
        fz_fail("jalen options: error %d without a message", rc);
    if (rc == 0) {
        if (!o.out || o.interval_ns < 100000ull || o.top < 1 || !o.formats)
            fz_fail("jalen options: accepted values out of range");
        for (size_t i = 0; i < o.nfilters; i++)
            (void)strlen(o.filters[i]);
    }
    jl_opts_free(&o);
    free(s);
    return 0;
}
