/*
 * ipmi_standin.c - a stand-in for the kernel's IPMI device (issue 46;
 * DESIGN.md section 19), preloaded (LD_PRELOAD) into a powerapi run by
 * test_ipmi: there is no /dev/ipmi0 on the development machines.  The
 * ipmi sensor opens device= (here a regular file whose name contains
 * "ipmi-standin": poll says it is readable at once) and calls ioctl on it;
 * this library's ioctl answers those calls as a BMC would, with the DCMI
 * 1.5 Get Power Reading response of the specification's layout: current
 * $PA_IPMI_STANDIN_WATTS W (default 150), minimum 100, maximum 200,
 * average 140 over a 1000 ms period, timestamp 0x67452301, measurement
 * active.  Every other ioctl goes to the C library's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/ipmi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int ioctl(int fd, unsigned long req, ...);

static long last_msgid = -1;

static int is_standin(int fd)
{
    char link[64], target[512];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    return strstr(target, "ipmi-standin") != NULL;
}

static int answer(unsigned long req, void *arg)
{
    if (req == IPMICTL_SEND_COMMAND) {
        struct ipmi_req *r = arg;
        if (r->msg.netfn != 0x2c || r->msg.cmd != 0x02 || r->msg.data_len < 2 ||
            r->msg.data[0] != 0xdc) {
            errno = EINVAL;
            return -1;
        }
        last_msgid = r->msgid;
        return 0;
    }
    if (req != IPMICTL_RECEIVE_MSG_TRUNC || last_msgid < 0) {
        errno = req == IPMICTL_RECEIVE_MSG_TRUNC ? EAGAIN : ENOTTY;
        return -1;
    }
    const char *e = getenv("PA_IPMI_STANDIN_WATTS");
    unsigned w = e ? (unsigned)atoi(e) : 150;
    unsigned char b[19] = {0x00, 0xdc, w & 0xff, w >> 8, 0x64, 0x00, 0xc8, 0x00, 0x8c, 0x00,
                           0x01, 0x23, 0x45,     0x67,   0xe8, 0x03, 0x00, 0x00, 0x40};
    struct ipmi_recv *rv = arg;
    rv->recv_type = IPMI_RESPONSE_RECV_TYPE;
    rv->msgid = last_msgid;
    rv->msg.netfn = 0x2d;
    rv->msg.cmd = 0x02;
    size_t n = rv->msg.data_len < sizeof(b) ? rv->msg.data_len : sizeof(b);
    memcpy(rv->msg.data, b, n);
    rv->msg.data_len = (unsigned short)n;
    last_msgid = -1;
    return 0;
}

int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (is_standin(fd))
        return answer(req, arg);
    int (*real)(int, unsigned long, ...) =
        (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    return real ? real(fd, req, arg) : (errno = ENOSYS, -1);
}
