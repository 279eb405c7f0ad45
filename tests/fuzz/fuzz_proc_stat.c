/* fuzz_proc_stat.c - /proc/stat and /proc/uptime, read by procfs-cpu each tick.
 * Pieces: stat before tick 0 and 1, uptime before tick 0 and 1. */
#include "fuzz.h"

#include "powerapi.h"

static const fz_sensor spec = {
    .fixture = "rapl-laptop",
    .modules = {"procfs-cpu", "cpu-tdp"},
    .watch_all = 1,
    .files = {FZ_F(0, "proc/stat"), FZ_F(1, "proc/stat"), FZ_F(0, "proc/uptime"),
              FZ_F(1, "proc/uptime")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
