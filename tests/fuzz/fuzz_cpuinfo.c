/* fuzz_cpuinfo.c - /proc/cpuinfo (model name, cpu MHz: procfs-cpu; the model is
 * then looked up in the hardware database by cpu-tdp) and the online CPU
 * list of sysfs.  Pieces: cpuinfo, devices/system/cpu/online. */
#include "fuzz.h"

#include "powerapi.h"

static const fz_sensor spec = {
    .fixture = "rapl-laptop",
    .modules = {"procfs-cpu", "cpu-tdp"},
    .files = {FZ_F(0, "proc/cpuinfo"), FZ_F(0, "sys/devices/system/cpu/online")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
