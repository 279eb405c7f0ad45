/* fuzz_sock_diag.c - a netlink sock_diag reply (inet_diag messages with
 * INET_DIAG_INFO attributes), parsed by the nic sensor's parser
 * (pa__nic_diag_parse, the code dump_family runs on each recv()).  The
 * input is one recv()'s bytes; the first 4 bytes are the sequence number
 * the sensor waits for. */
#include "fuzz.h"

#include "../../sensors/nic.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint32_t seq;
    memcpy(&seq, data, 4);
    /* the sensor's recv() buffer is malloc'd: aligned, exactly as long as
     * what the kernel sent as far as the parser may know */
    size_t n = size - 4;
    void *buf = malloc(n ? n : 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 4, n);
    size_t nsock = 0;
    int rc = pa__nic_diag_parse(buf, n, seq, &nsock);
    if (rc > 1 || nsock > n / 16)
        fz_fail("sock_diag: %d, %zu sockets from %zu bytes", rc, nsock, n);
    free(buf);
    return 0;
}
