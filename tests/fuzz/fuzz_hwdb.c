/* fuzz_hwdb.c - the hardware database (a user's --hwdb file replaces the
 * installed one): its records parsed by the CPU and NIC lookups, and the
 * volt= tables of cpu-tdp.  Pieces: the file, a cpuinfo model name, a NIC
 * driver name, a volt string. */
#include "fuzz.h"

#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_piece pc[4];
    size_t n = fz_split(data, size, pc, 4);
    const char *root = fz_root(NULL);
    fz_write(root, "hwdb.txt", pc[0].p, pc[0].n);
    char path[4200];
    snprintf(path, sizeof(path), "%s/hwdb.txt", root);
    char *model = fz_strdup(
        n > 1 ? &pc[1]
              : &(fz_piece){(const uint8_t *)"Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz", 39});
    char *driver = fz_strdup(n > 2 ? &pc[2] : &(fz_piece){(const uint8_t *)"e1000e", 6});
    pa_hwdb_cpu cpu;
    int rc = pa__hwdb_cpu(path, model, &cpu);
    if (rc == 0) {
        if (cpu.nvolt > sizeof(cpu.volt) / sizeof(cpu.volt[0]) ||
            !memchr(cpu.match, '\0', sizeof(cpu.match)) ||
            !memchr(cpu.source, '\0', sizeof(cpu.source)))
            fz_fail("hwdb: a CPU record out of its bounds");
    } else if (rc != -ENOENT && !*pa_last_error()) {
        fz_fail("hwdb: error %d without a message", rc);
    }
    pa_hwdb_nic nic;
    rc = pa__hwdb_nic(path, driver, &nic);
    if (rc == 0 && (nic.nstates > sizeof(nic.state) / sizeof(nic.state[0]) ||
                    !memchr(nic.match, '\0', sizeof(nic.match))))
        fz_fail("hwdb: a NIC record out of its bounds");
    if (n > 3) {
        char *volt = fz_strdup(&pc[3]);
        char why[256];
        pa_hwdb_cpu c = {0};
        if (pa__hwdb_parse_volt(volt, &c, why, sizeof(why)) == 0 &&
            c.nvolt > sizeof(c.volt) / sizeof(c.volt[0]))
            fz_fail("hwdb: volt table overflows");
        free(volt);
    }
    free(model);
    free(driver);
    return 0;
}
