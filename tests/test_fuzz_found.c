/* test_fuzz_found.c - one named test per bug the fuzz targets found
 * (tests/fuzz/): the crashing input, in its smallest form, and what the
 * code must do with it.  The raw input is also in the target's corpus. */
#include "../sensors/nic.h"
#include "cli.h"
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <linux/netlink.h>
#include <stdlib.h>
#include <string.h>

/* fuzz_numbers: "18446744073709551615" (strtol saturates at LONG_MAX, and
 * the range loop then overflowed a signed long: UBSan). */
START_TEST(cpulist_number_beyond_any_cpu_is_skipped)
{
    int cpus[8];
    ck_assert_int_eq(pa__parse_cpulist("18446744073709551615", cpus, 8), 0);
    ck_assert_int_eq(pa__parse_cpulist("9223372036854775807", cpus, 8), 0);
    ck_assert_int_eq(pa__parse_cpulist("0-1,2147483648-2147483650,5", cpus, 8), 3);
    ck_assert_int_eq(cpus[0], 0);
    ck_assert_int_eq(cpus[1], 1);
    ck_assert_int_eq(cpus[2], 5);
    ck_assert_int_eq(pa__parse_cpulist("2147483647", cpus, 8), 1);
    ck_assert_int_eq(cpus[0], INT_MAX);
    /* ordinary lists unchanged */
    ck_assert_int_eq(pa__parse_cpulist("0-3,8,10-11\n", cpus, 8), 7);
    ck_assert_int_eq(cpus[6], 11);
    ck_assert_int_eq(pa__parse_cpulist("3-1", cpus, 8), 0);
}
END_TEST

static size_t put_msg(unsigned char *buf, uint16_t type, uint32_t seq, uint32_t len,
                      const void *payload, size_t plen)
{
    struct nlmsghdr h = {.nlmsg_len = len, .nlmsg_type = type, .nlmsg_seq = seq};
    memcpy(buf, &h, sizeof(h));
    memcpy(buf + sizeof(h), payload, plen);
    return NLMSG_ALIGN(sizeof(h) + plen);
}

/* fuzz_sock_diag: an NLMSG_ERROR whose error is positive (33554432) was
 * taken for the end of the dump (success). */
START_TEST(sock_diag_error_reply_that_is_no_errno_is_eio)
{
    unsigned char *buf = calloc(1, 64);
    ck_assert_ptr_nonnull(buf);
    size_t n;
    struct nlmsgerr e = {.error = 33554432};
    size_t len = put_msg(buf, NLMSG_ERROR, 7, NLMSG_LENGTH(sizeof(e)), &e, sizeof(e));
    ck_assert_int_eq(pa__nic_diag_parse(buf, len, 7, &n), -EIO);
    e.error = -EACCES;
    len = put_msg(buf, NLMSG_ERROR, 7, NLMSG_LENGTH(sizeof(e)), &e, sizeof(e));
    ck_assert_int_eq(pa__nic_diag_parse(buf, len, 7, &n), -EACCES);
    /* an error message too short to hold its error */
    len = put_msg(buf, NLMSG_ERROR, 7, NLMSG_LENGTH(2), &e, 2);
    ck_assert_int_eq(pa__nic_diag_parse(buf, len, 7, &n), -EIO);
    /* another sequence's error is not ours; a done of ours ends */
    len = put_msg(buf, NLMSG_ERROR, 8, NLMSG_LENGTH(sizeof(e)), &e, sizeof(e));
    int zero = 0;
    len += put_msg(buf + len, NLMSG_DONE, 7, NLMSG_LENGTH(4), &zero, 4);
    ck_assert_int_eq(pa__nic_diag_parse(buf, len, 7, &n), 1);
    ck_assert_uint_eq(n, 0);
    free(buf);
}
END_TEST

/* A last message whose aligned length passes the end of the reply: the
 * walk must stop inside the buffer (NLMSG_NEXT made the remaining length
 * negative, and NLMSG_OK, given it as a size_t, read on).  The buffer is
 * exactly the reply's size so that ASan sees any read past it. */
START_TEST(sock_diag_unaligned_last_message_stays_in_the_reply)
{
    unsigned char *buf = calloc(1, 18);
    ck_assert_ptr_nonnull(buf);
    struct nlmsghdr h = {.nlmsg_len = 17, .nlmsg_type = 20, .nlmsg_seq = 7};
    memcpy(buf, &h, sizeof(h));
    size_t n = 99;
    ck_assert_int_eq(pa__nic_diag_parse(buf, 18, 7, &n), 0);
    ck_assert_uint_eq(n, 0);
    free(buf);
}
END_TEST

/* fuzz_serve: a cgroup path with the byte 0xf6 (no UTF-8 sequence starts
 * with 0xf5..0xff) went out as a 3-byte sequence: invalid UTF-8 in a
 * label, and Prometheus drops the whole scrape. */
START_TEST(serve_label_with_f6_lead_byte_is_replaced)
{
    pa_target_info t[2];
    memset(t, 0, sizeof(t));
    t[0].type = PA_TARGET_PROCESS;
    t[0].pid = 100;
    memcpy(t[0].comm, "a\xf8\x88\x80\x80\x80z", 8);
    t[0].cgroup = "/x";
    t[0].power.total_w = 2.0;
    t[1].type = PA_TARGET_CGROUP;
    t[1].cgroup = "/\xf6\x81\x81\x88/\xc3\xa9";
    t[1].power.total_w = 2.0;
    pa_report r = {.tick = 2,
                   .interval_s = 1.0,
                   .formula = "cpu-tdp",
                   .sensors = "procfs-cpu",
                   .cpu_source = "model",
                   .assumed = "",
                   .ntargets = 2,
                   .targets = t};
    static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    char *resp = NULL;
    size_t len = 0;
    ck_assert_int_eq(cli_serve_exchange(&r, req, sizeof(req) - 1, &resp, &len), 0);
    ck_assert_ptr_nonnull(resp);
    ck_assert_msg(strncmp(resp, "HTTP/1.1 200", 12) == 0, "%.40s", resp);
    static const char cg[] = "cgroup=\"/\xef\xbf\xbd\xef\xbf\xbd"
                             "\xef\xbf\xbd\xef\xbf\xbd/\xc3\xa9\"";
    static const char comm[] = "comm=\"a\xef\xbf\xbd";
    ck_assert_ptr_nonnull(memmem(resp, len, cg, sizeof(cg) - 1));
    ck_assert_ptr_nonnull(memmem(resp, len, comm, sizeof(comm) - 1));
    for (size_t i = 0; i < len; i++)
        ck_assert_msg((unsigned char)resp[i] < 0xf5, "byte 0x%02x at %zu", (unsigned char)resp[i],
                      i);
    free(resp);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fuzz_found");
    TCase *tc = tcase_create("fuzz_found");
    tcase_add_test(tc, cpulist_number_beyond_any_cpu_is_skipped);
    tcase_add_test(tc, sock_diag_error_reply_that_is_no_errno_is_eio);
    tcase_add_test(tc, sock_diag_unaligned_last_message_stays_in_the_reply);
    tcase_add_test(tc, serve_label_with_f6_lead_byte_is_replaced);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
