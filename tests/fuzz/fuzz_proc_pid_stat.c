/* fuzz_proc_pid_stat.c - /proc/<pid>/stat and a thread's stat (proc(5)), read
 * by the procfs-cpu sensor over two windows.  Pieces: the process's stat
 * before tick 0 and 1, its thread's stat before tick 0 and 1. */
#include "fuzz.h"

#include "powerapi.h"

static const fz_sensor spec = {
    .fixture = "rapl-laptop",
    .modules = {"procfs-cpu", "cpu-tdp"},
    .keep = 2, /* the stat files are read at ticks, never at a start */
    .watch_all = 1 | PA_WATCH_ALL_THREADS,
    .files = {FZ_F(0, "proc/300/stat"), FZ_F(1, "proc/300/stat"), FZ_F(0, "proc/300/task/300/stat"),
              FZ_F(1, "proc/300/task/300/stat")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
