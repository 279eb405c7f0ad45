/* fuzz_powercap.c - powercap RAPL zones (energy_uj, max_energy_range_uj,
 * name) and the CPU topology, read by the rapl sensor (path=powercap) and
 * priced by rapl-share.  Pieces: package energy_uj before tick 0 and 1,
 * its max_energy_range_uj, its name, core energy_uj before tick 0 and 1,
 * core name, cpu0 physical_package_id, online CPUs. */
#include "fuzz.h"

#include "powerapi.h"

static const fz_sensor spec = {
    .fixture = "rapl-laptop",
    .modules = {"rapl:path=powercap", "procfs-cpu", "rapl-share"},
    .watch_all = 1,
    .files = {FZ_F(0, "sys/class/powercap/intel-rapl:0/energy_uj"),
              FZ_F(1, "sys/class/powercap/intel-rapl:0/energy_uj"),
              FZ_F(0, "sys/class/powercap/intel-rapl:0/max_energy_range_uj"),
              FZ_F(0, "sys/class/powercap/intel-rapl:0/name"),
              FZ_F(0, "sys/class/powercap/intel-rapl:0:0/energy_uj"),
              FZ_F(1, "sys/class/powercap/intel-rapl:0:0/energy_uj"),
              FZ_F(0, "sys/class/powercap/intel-rapl:0:0/name"),
              FZ_F(0, "sys/devices/system/cpu/cpu0/topology/physical_package_id"),
              FZ_F(0, "sys/devices/system/cpu/online")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
