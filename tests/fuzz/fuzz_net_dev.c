/* fuzz_net_dev.c - /proc/net/dev, the nic sensor's counters when sysfs has no
 * class/net.  Pieces: net/dev before tick 0 and 1. */
#include "fuzz.h"

#include "powerapi.h"

static const fz_sensor spec = {
    .fixture = "rapl-laptop",
    .modules = {"procfs-cpu", "nic:sockdiag=off", "nic-linear"},
    .keep = 1,
    .files = {FZ_F(0, "proc/net/dev"), FZ_F(1, "proc/net/dev")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
