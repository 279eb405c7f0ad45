/*
 * test_ipmi.c - the ipmi sensor's DCMI reader (issue 46; DESIGN.md section
 * 19) against a stand-in for the kernel's IPMI device (there is no
 * /dev/ipmi0 on the development machines): the reader's open, ioctl and
 * poll calls go to a table that checks the request as DCMI 1.5 section
 * 6.6.1 writes it (NetFn 0x2C, command 0x02, group 0xDC, mode 1, to the
 * BMC's system interface) and answers the response bytes of the same
 * section: the fields, an answer to another request skipped, a completion
 * code named, an inactive measurement, a BMC that does not answer.  Then
 * the module on this machine: no device, and a file that is not one; and
 * powerapi monitor reading a preloaded stand-in's answers through the
 * kernel's ioctl interface (tests/ipmi_standin.c).
 */
#include "../sensors/wall.h"
#include "testutil.h"

#include <errno.h>
#include <linux/ipmi.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

/* DCMI 1.5 table 6-16, Get Power Reading response: completion code, group
 * extension 0xDC, current 150 W, minimum 100 W, maximum 200 W, average
 * 140 W (2 bytes each, LSB first), timestamp 0x67452301 s, statistics
 * period 1000 ms (4 bytes each, LSB first), state 0x40 (measurement
 * active). */
static const uint8_t answer[] = {0x00, 0xdc, 0x96, 0x00, 0x64, 0x00, 0xc8, 0x00, 0x8c, 0x00,
                                 0x01, 0x23, 0x45, 0x67, 0xe8, 0x03, 0x00, 0x00, 0x40};

static struct {
    int sent, stranger, silent;
    uint8_t resp[32];
    size_t n;
    long msgid;
} bmc;

static int standin_open(const char *path, int flags)
{
    (void)flags;
    ck_assert_str_eq(path, "/dev/ipmi-standin");
    return 1000;
}

static int standin_close(int fd)
{
    ck_assert_int_eq(fd, 1000);
    return 0;
}

static int standin_poll(struct pollfd *fds, unsigned long n, int ms)
{
    ck_assert_int_eq(n, 1);
    ck_assert_int_gt(ms, 0);
    fds[0].revents = bmc.silent ? 0 : POLLIN;
    return bmc.silent ? 0 : 1;
}

static int standin_ioctl(int fd, unsigned long req, void *arg)
{
    ck_assert_int_eq(fd, 1000);
    if (req == IPMICTL_SEND_COMMAND) {
        struct ipmi_req *r = arg;
        const struct ipmi_system_interface_addr *si = (const void *)r->addr;
        ck_assert_int_eq(si->addr_type, IPMI_SYSTEM_INTERFACE_ADDR_TYPE);
        ck_assert_int_eq(si->channel, IPMI_BMC_CHANNEL);
        ck_assert_int_eq(r->msg.netfn, 0x2c);
        ck_assert_int_eq(r->msg.cmd, 0x02);
        ck_assert_int_eq(r->msg.data_len, 4);
        ck_assert(r->msg.data[0] == 0xdc && r->msg.data[1] == 0x01 && r->msg.data[2] == 0 &&
                  r->msg.data[3] == 0);
        bmc.msgid = r->msgid;
        bmc.sent++;
        return 0;
    }
    ck_assert(req == IPMICTL_RECEIVE_MSG_TRUNC);
    struct ipmi_recv *rv = arg;
    rv->recv_type = IPMI_RESPONSE_RECV_TYPE;
    rv->msgid = bmc.stranger-- > 0 ? bmc.msgid + 1 : bmc.msgid; /* another's answer first */
    rv->msg.netfn = 0x2d;
    rv->msg.cmd = 0x02;
    ck_assert_int_ge(rv->msg.data_len, bmc.n);
    memcpy(rv->msg.data, bmc.resp, bmc.n);
    rv->msg.data_len = (unsigned short)bmc.n;
    return 0;
}

static const pa_ipmi_fns standin = {standin_open, standin_ioctl, standin_poll, standin_close};

static void bmc_answers(const uint8_t *b, size_t n)
{
    memset(&bmc, 0, sizeof(bmc));
    memcpy(bmc.resp, b, n);
    bmc.n = n;
}

START_TEST(dcmi_fields)
{
    pa_dcmi_power p;
    char why[256] = "";
    bmc_answers(answer, sizeof(answer));
    bmc.stranger = 1;
    ck_assert_int_eq(pa_ipmi_dcmi_read(&standin, "/dev/ipmi-standin", 1, &p, why, sizeof(why)), 0);
    ck_assert_int_eq(bmc.sent, 1);
    ck_assert_uint_eq(p.cur_w, 150);
    ck_assert_uint_eq(p.min_w, 100);
    ck_assert_uint_eq(p.max_w, 200);
    ck_assert_uint_eq(p.avg_w, 140);
    ck_assert_uint_eq(p.bmc_time_s, 0x67452301u);
    ck_assert_uint_eq(p.period_ms, 1000);
    ck_assert_int_eq(p.active, 1);
}
END_TEST

START_TEST(dcmi_errors)
{
    pa_dcmi_power p;
    char why[256] = "";
    uint8_t b[sizeof(answer)];
    /* a completion code: 0xC1, invalid command */
    const uint8_t cc[] = {0xc1};
    bmc_answers(cc, sizeof(cc));
    ck_assert_int_eq(pa_ipmi_dcmi_read(&standin, "/dev/ipmi-standin", 1, &p, why, sizeof(why)),
                     -EIO);
    ck_assert_ptr_nonnull(strstr(why, "completion code 0xc1, invalid command"));
    /* measurement not active (state bit 6 clear) */
    memcpy(b, answer, sizeof(b));
    b[18] = 0;
    bmc_answers(b, sizeof(b));
    ck_assert_int_eq(pa_ipmi_dcmi_read(&standin, "/dev/ipmi-standin", 1, &p, why, sizeof(why)),
                     -ENODATA);
    ck_assert_ptr_nonnull(strstr(why, "not active"));
    /* not the DCMI group; too short */
    b[18] = 0x40;
    b[1] = 0xdd;
    ck_assert_int_eq(pa_dcmi_power_parse(b, sizeof(b), &p, NULL), -EINVAL);
    ck_assert_int_eq(pa_dcmi_power_parse(answer, sizeof(answer) - 1, &p, NULL), -EINVAL);
    /* a BMC that never answers */
    bmc_answers(answer, sizeof(answer));
    bmc.silent = 1;
    ck_assert_int_eq(pa_ipmi_dcmi_read(&standin, "/dev/ipmi-standin", 0.5, &p, why, sizeof(why)),
                     -ETIMEDOUT);
    ck_assert_ptr_nonnull(strstr(why, "raise timeout="));
}
END_TEST

/* The module on this machine: no device (said with the modules to load),
 * and a regular file (not an IPMI device). */
START_TEST(module_errors)
{
    char *root = pa_test_fixture_copy("rapl-server2s");
    pa_ctx *ctx = pa_test_ctx(root);
    char opts[4200], file[4200];
    snprintf(opts, sizeof(opts), "device=%s/dev/ipmi0,period=0.1,timeout=0.2", root);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "ipmi", opts), 0);
    pa_module_info mi;
    for (int i = 0; i < 100 && pa_module_get(ctx, "ipmi", &mi) == 0 && !mi.why[0]; i++) {
        pa_tick_at(ctx, (uint64_t)(i + 1) * NS_PER_S);
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    ck_assert_msg(strstr(mi.why, "ipmi_devintf") != NULL, "%s", mi.why);
    pa_test_write(root, "not-ipmi", "x\n");
    snprintf(file, sizeof(file), "%s/not-ipmi", root);
    pa_dcmi_power p;
    ck_assert_int_eq(pa_ipmi_dcmi_read(NULL, file, 0.2, &p, mi.why, sizeof(mi.why)), -ENOTTY);
    ck_assert_ptr_nonnull(strstr(mi.why, "not an IPMI device"));
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* The whole path through the kernel's interface: powerapi monitor with
 * the ipmi sensor on a file the preloaded stand-in (tests/ipmi_standin.c)
 * answers for: 150 W, the BMC's average and period said, and platform the
 * wall less the cpu model. */
START_TEST(monitor_through_standin)
{
    char *dir = pa_test_tmpdir(), dev[4200], sensor[4400];
    pa_test_write(dir, "ipmi-standin", "\n");
    snprintf(dev, sizeof(dev), "%s/ipmi-standin", dir);
    snprintf(sensor, sizeof(sensor), "ipmi:device=%s,period=0.1", dev);
    setenv("LD_PRELOAD", PA_IPMI_STANDIN, 1);
    /* a sanitizer build's binary: its runtime need not come first */
    setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
    setenv("PA_IPMI_STANDIN_WATTS", "150", 1);
    char *args[] = {"monitor", "--all",    "--top", "1",         "--count",  "1", "--interval",
                    "500ms",   "--sensor", sensor,  "--formula", "platform", NULL};
    pa_test_cli_run r;
    pa_test_cli(&r, args);
    unsetenv("LD_PRELOAD");
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "wall      150.00 W") != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.out, "current power (average 140 W over 1.0 s, BMC time 1732584193)"),
                  "%s", r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "platform = wall 150.00 W (ipmi:"));
    pa_test_cli_free(&r);
    pa_test_rmtree(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ipmi");
    TCase *tc = tcase_create("ipmi");
    tcase_add_test(tc, dcmi_fields);
    tcase_add_test(tc, dcmi_errors);
    tcase_add_test(tc, module_errors);
    tcase_add_test(tc, monitor_through_standin);
    suite_add_tcase(s, tc);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = pa_test_main(s);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("test_ipmi: %.2f s\n",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return rc;
}
