/*
 * vm_vsock.h - `powerapi daemon --export-vsock PORT`: each guest's
 * powerapi-vm over AF_VSOCK (report/vmexport.h, rp_vmexport_send; DESIGN.md
 * section 18.1), for guests without a file share.
 */
#ifndef CLI_VM_VSOCK_H
#define CLI_VM_VSOCK_H

#include "vmexport.h"

typedef struct cli_vsock cli_vsock;

/* Listens on AF_VSOCK port (any CID) and answers each connection with its
 * guest's last powerapi-vm (by the peer's CID), on a thread of its own.
 * 0; -errno (the message names the port and the fix in why). */
int cli_vsock_start(rp_vmexport *x, unsigned port, cli_vsock **out, char *why, size_t wl);
/* Stops the thread and closes the socket; NULL is a no-op. */
void cli_vsock_stop(cli_vsock *v);

#endif /* CLI_VM_VSOCK_H */
