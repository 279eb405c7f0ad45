/*
 * ipmi.c - the "ipmi" sensor: the whole machine's power from its BMC by
 * DCMI "Get Power Reading" (DCMI 1.5 section 6.6.1) through the kernel's
 * IPMI device (<devfs>/ipmi0: the ipmi_devintf and ipmi_si modules; its
 * ioctl interface, no ipmitool), polled on a thread of its own (a KCS
 * interface answers in tens of milliseconds, a busy BMC in seconds: the
 * tick takes the latest reading).  Issue 46; DESIGN.md section 19.
 *
 * The response (after the completion code): 0xDC, the current power, the
 * minimum, maximum and average over the statistics period (each 2 bytes,
 * little endian, W), the BMC's timestamp (4 bytes, s), the statistics
 * reporting period (4 bytes, ms) and the reading state (bit 6:
 * measurement active).  The current power is the frame's figure (an
 * instant, at the age of the answer); the average and its period are said.
 */
#include "wall.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/ipmi.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "powerapi_module.h"

static const char *const ipmi_options[] = {"device", "period", "timeout", NULL};

#define DCMI_NETFN 0x2c
#define DCMI_GET_POWER 0x02
#define DCMI_GROUP 0xdc

static unsigned le16(const uint8_t *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int pa_dcmi_power_parse(const uint8_t *b, size_t n, pa_dcmi_power *out, int *code)
{
    if (n >= 1 && b[0] != 0) {
        if (code)
            *code = b[0];
        return -EIO;
    }
    if (n < 19 || b[1] != DCMI_GROUP)
        return -EINVAL;
    pa_dcmi_power p = {le16(b + 2),  le16(b + 4),  le16(b + 6),     le16(b + 8),
                       le32(b + 10), le32(b + 14), (b[18] >> 6) & 1};
    if (!p.active)
        return -ENODATA;
    *out = p;
    return 0;
}

static int sys_ioctl(int fd, unsigned long req, void *arg)
{
    return ioctl(fd, req, arg);
}

static int sys_poll(struct pollfd *fds, unsigned long n, int ms)
{
    return poll(fds, (nfds_t)n, ms);
}

static int sys_open(const char *path, int flags)
{
    return open(path, flags);
}

static const pa_ipmi_fns sys_fns = {sys_open, sys_ioctl, sys_poll, close};

/* Why a completion code: the names of IPMI 2.0 table 5-2. */
static const char *cc_name(int cc)
{
    switch (cc) {
    case 0xc1:
        return "invalid command (the BMC has no DCMI power reading)";
    case 0xc3:
        return "timeout";
    case 0xcc:
        return "invalid data field (the BMC refuses mode 1)";
    case 0xd5:
        return "not supported in present state";
    case 0xd6:
        return "command disabled";
    default:
        return "refused";
    }
}

/* Sends the request and waits for its answer into resp (n: its bytes). */
static int dcmi_exchange(const pa_ipmi_fns *f, int fd, int ms, uint8_t *resp, size_t *n)
{
    struct ipmi_system_interface_addr si = {IPMI_SYSTEM_INTERFACE_ADDR_TYPE, IPMI_BMC_CHANNEL, 0};
    uint8_t data[4] = {DCMI_GROUP, 0x01, 0x00, 0x00};
    struct ipmi_req req = {
        (unsigned char *)&si, sizeof(si), 46, {DCMI_NETFN, DCMI_GET_POWER, 4, data}};
    if (f->ioctl(fd, IPMICTL_SEND_COMMAND, &req) < 0)
        return -errno;
    for (int tries = 0; tries < 8; tries++) { /* skip answers to others' requests */
        struct pollfd pf = {fd, POLLIN, 0};
        int r = f->poll(&pf, 1, ms);
        if (r == 0)
            return -ETIMEDOUT;
        if (r < 0)
            return -errno;
        struct ipmi_addr addr;
        struct ipmi_recv rv = {0, (unsigned char *)&addr, sizeof(addr), 0, {0, 0, 0, resp}};
        rv.msg.data_len = (unsigned short)*n;
        if (f->ioctl(fd, IPMICTL_RECEIVE_MSG_TRUNC, &rv) < 0)
            return -errno;
        if (rv.recv_type == IPMI_RESPONSE_RECV_TYPE && rv.msgid == 46 &&
            rv.msg.netfn == (DCMI_NETFN | 1) && rv.msg.cmd == DCMI_GET_POWER) {
            *n = rv.msg.data_len <= *n ? rv.msg.data_len : *n;
            return 0;
        }
    }
    return -EPROTO;
}

int pa_ipmi_dcmi_read(const pa_ipmi_fns *fns, const char *device, double timeout_s,
                      pa_dcmi_power *out, char *why, size_t len)
{
    const pa_ipmi_fns *f = fns ? fns : &sys_fns;
    int fd = f->open(device, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(why, len, "%s: %s (%s)", device, strerror(e),
                 e == ENOENT   ? "no IPMI device: a BMC needs the ipmi_devintf and ipmi_si "
                                 "modules (modprobe them), a VM has none"
                 : e == EACCES ? "run as root, or give the user access to the device"
                               : "check device=");
        return -e;
    }
    uint8_t resp[64];
    size_t n = sizeof(resp);
    int rc = dcmi_exchange(f, fd, (int)(timeout_s * 1000), resp, &n);
    f->close(fd);
    int cc = 0;
    if (rc == 0)
        rc = pa_dcmi_power_parse(resp, n, out, &cc);
    if (rc == -ENOTTY)
        snprintf(why, len, "%s: not an IPMI device (check device=)", device);
    else if (rc == -ETIMEDOUT)
        snprintf(why, len, "%s: the BMC did not answer within %.1f s (raise timeout=)", device,
                 timeout_s);
    else if (rc == -EIO)
        snprintf(why, len, "%s: DCMI Get Power Reading: completion code 0x%02x, %s", device, cc,
                 cc_name(cc));
    else if (rc == -ENODATA)
        snprintf(why, len, "%s: the BMC's power measurement is not active", device);
    else if (rc < 0)
        snprintf(why, len, "%s: DCMI Get Power Reading: %s", device, strerror(-rc));
    return rc;
}

typedef struct ipmi_mod {
    char device[512];
    double period_s, timeout_s;
    pa_wall_poller *poller;
    pa_wall_reading r;
} ipmi_mod;

static int ipmi_poll(void *user, pa_wall_reading *out, char *err, size_t errlen)
{
    ipmi_mod *s = user;
    pa_dcmi_power p;
    int rc = pa_ipmi_dcmi_read(NULL, s->device, s->timeout_s, &p, err, errlen);
    if (rc < 0)
        return rc;
    out->power_w = p.cur_w;
    out->avg_s = 0;
    snprintf(out->meter, sizeof(out->meter), "%.80s (DCMI)", s->device);
    snprintf(out->how, sizeof(out->how), "current power (average %u W over %.1f s, BMC time %u)",
             p.avg_w, p.period_ms * 1e-3, (unsigned)p.bmc_time_s);
    return 0;
}

static int ipmi_probe(const pa_env *env, char *why, size_t len)
{
    char dev[512];
    snprintf(dev, sizeof(dev), "%s/ipmi0", pa_env_devfs(env));
    if (access(dev, F_OK) == 0)
        return 0;
    int e = errno;
    snprintf(why, len,
             "ipmi: %s: %s (no IPMI device: a BMC needs the ipmi_devintf and ipmi_si "
             "modules, a VM has none)",
             dev, strerror(e));
    return -e;
}

static int ipmi_start(pa_module *m, const pa_options *o)
{
    ipmi_mod *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    const char *dev = pa_options_get(o, "device");
    snprintf(s->device, sizeof(s->device), "%s%s", dev ? "" : pa_env_devfs(pa_module_env(m)),
             dev ? dev : "/ipmi0");
    if (pa_options_get_double(o, "period", 1, &s->period_s) < 0 ||
        pa_options_get_double(o, "timeout", 2, &s->timeout_s) < 0 || s->period_s < 0.1 ||
        s->timeout_s <= 0) {
        free(s);
        pa_module_errorf(m, "ipmi: period= (at least 0.1 s) and timeout= are seconds");
        return -EINVAL;
    }
    int rc = pa_wall_poller_start(s->period_s, ipmi_poll, s, &s->poller);
    if (rc < 0) {
        free(s);
        return rc;
    }
    pa_module_set_priv(m, s);
    return 0;
}

static int ipmi_sample(pa_module *m, pa_frame *f)
{
    ipmi_mod *s = pa_module_priv(m);
    char err[256];
    int rc =
        pa_wall_poller_latest(s->poller, 3 * s->period_s + s->timeout_s, &s->r, err, sizeof(err));
    if (rc < 0) {
        pa_module_errorf(m, "ipmi: %s", err);
        return rc;
    }
    s->r.frame_ns = pa_frame_time_ns(f);
    return rc ? pa_frame_put(f, "ipmi", &s->r, sizeof(s->r)) : 0;
}

static void ipmi_stop(pa_module *m)
{
    ipmi_mod *s = pa_module_priv(m);
    if (s)
        pa_wall_poller_stop(s->poller);
    free(s);
    pa_module_set_priv(m, NULL);
}

const pa_module_ops pa__mod_ipmi = {
    .abi = PA_MODULE_ABI,
    .name = "ipmi",
    .kind = PA_SENSOR,
    .description = "the whole machine's power from its BMC: DCMI Get Power Reading through "
                   "the kernel's IPMI device",
    .options = ipmi_options,
    .probe = ipmi_probe,
    .start = ipmi_start,
    .sample = ipmi_sample,
    .stop = ipmi_stop,
};
