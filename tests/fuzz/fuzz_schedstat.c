/* fuzz_schedstat.c - a thread's /proc/<pid>/task/<tid>/schedstat, read by
 * procfs-cpu for a process watched with its threads.  Pieces: the
 * schedstat before tick 0 and 1. */
#include "fuzz.h"

#include "powerapi.h"

static const fz_sensor spec = {
    .fixture = "vm-nocpufreq",
    .modules = {"procfs-cpu", "cpu-tdp"},
    .watch_pid = 1734,
    .watch_flags = PA_WATCH_THREADS,
    .fresh = 1,
    .files = {FZ_F(0, "proc/1734/task/1734/schedstat"), FZ_F(1, "proc/1734/task/1734/schedstat")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
