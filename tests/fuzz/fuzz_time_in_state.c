/* fuzz_time_in_state.c - cpufreq time_in_state of a policy (procfs-cpu) and the
 * policy files read with it.  Pieces: policy0 time_in_state before tick 0
 * and 1, policy0 affected_cpus, policy0 base_frequency, policy1
 * time_in_state before tick 0. */
#include "fuzz.h"

#include "powerapi.h"

static const fz_sensor spec = {
    .fixture = "desktop-cpufreq",
    .modules = {"procfs-cpu", "cpu-tdp"},
    .files = {FZ_F(0, "sys/devices/system/cpu/cpufreq/policy0/stats/time_in_state"),
              FZ_F(1, "sys/devices/system/cpu/cpufreq/policy0/stats/time_in_state"),
              FZ_F(0, "sys/devices/system/cpu/cpufreq/policy0/affected_cpus"),
              FZ_F(0, "sys/devices/system/cpu/cpufreq/policy0/base_frequency"),
              FZ_F(0, "sys/devices/system/cpu/cpufreq/policy1/stats/time_in_state")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
