/* fuzz_cgroup.c - /proc/<pid>/cgroup (the cgroup v2 line), read by procfs-cpu
 * when a process is first seen, with cgroup reports on.  Pieces: the
 * cgroup files of two processes. */
#include "fuzz.h"

#include "powerapi.h"

static const fz_sensor spec = {
    .fixture = "cgroups-server",
    .modules = {"procfs-cpu", "cpu-tdp"},
    .watch_all = 1,
    .fresh = 1,
    .cgroups = 1,
    .files = {FZ_F(0, "proc/3001/cgroup"), FZ_F(0, "proc/5001/cgroup")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
