/* fuzz_nic_sockets.c - the nic sensor's socket table in its text form
 * (sockfile=, the same records sock_diag gives) and the routing tables
 * that class each socket (/proc/net/route, /proc/net/ipv6_route).
 * Pieces: the socket table before tick 0 and 1, route, ipv6_route. */
#include "fuzz.h"

#include "powerapi.h"

static const fz_sensor spec = {
    .fixture = "net-server",
    .modules = {"procfs-cpu", "nic:sockfile=sockets.txt", "nic-linear"},
    .watch_all = 1,
    .files = {FZ_F(0, "proc/sockets.txt"), FZ_F(1, "proc/sockets.txt"), FZ_F(0, "proc/net/route"),
              FZ_F(0, "proc/net/ipv6_route")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
