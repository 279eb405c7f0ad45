/* fuzz_nic_sysfs.c - sysfs NIC statistics and attributes (class/net/<if>),
 * read by the nic sensor.  Pieces: eth0 rx_bytes before tick 0 and 1,
 * tx_bytes before tick 0 and 1, rx_packets, tx_packets, speed, type,
 * operstate, and lo's type. */
#include "fuzz.h"

#include "powerapi.h"

static const fz_sensor spec = {
    .fixture = "net-server",
    .modules = {"nic:sockdiag=off", "nic-linear"},
    .files = {FZ_F(0, "sys/class/net/eth0/statistics/rx_bytes"),
              FZ_F(1, "sys/class/net/eth0/statistics/rx_bytes"),
              FZ_F(0, "sys/class/net/eth0/statistics/tx_bytes"),
              FZ_F(1, "sys/class/net/eth0/statistics/tx_bytes"),
              FZ_F(0, "sys/class/net/eth0/statistics/rx_packets"),
              FZ_F(0, "sys/class/net/eth0/statistics/tx_packets"),
              FZ_F(0, "sys/class/net/eth0/speed"), FZ_F(0, "sys/class/net/eth0/type"),
              FZ_F(0, "sys/class/net/eth0/operstate"), FZ_F(0, "sys/class/net/lo/type")},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_sensor(&spec, data, size);
    return 0;
}
