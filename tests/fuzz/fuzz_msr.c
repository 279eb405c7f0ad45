/* fuzz_msr.c - RAPL MSR values (/dev/cpu/N/msr, pread at the register),
 * read by the rapl sensor (path=msr) and priced by rapl-share.  The CPU's
 * vendor in cpuinfo picks the Intel or the AMD registers.  Pieces (8 bytes
 * each, little-endian, zero-padded): POWER_UNIT, PKG before tick 0 and 1,
 * PP0 before tick 0 and 1, DRAM before tick 0 and 1, PLATFORM before tick
 * 0 and 1, AMD POWER_UNIT, AMD PKG before tick 0 and 1; then cpuinfo. */
#include "fuzz.h"

#include "powerapi.h"

#define MSR "dev/cpu/0/msr"

static const fz_sensor spec = {
    .fixture = "rapl-msr",
    .modules = {"rapl:path=msr", "procfs-cpu", "rapl-share"},
    .watch_all = 1,
    .files = {{0, MSR, 0x606},
              {0, MSR, 0x611},
              {1, MSR, 0x611},
              {0, MSR, 0x639},
              {1, MSR, 0x639},
              {0, MSR, 0x619},
              {1, MSR, 0x619},
              {0, MSR, 0x64d},
              {1, MSR, 0x64d},
              {0, MSR, 0xc0010299},
              {0, MSR, 0xc001029b},
              {1, MSR, 0xc001029b},
              FZ_F(0, "proc/cpuinfo")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
