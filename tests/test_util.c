/* test_util.c - the shared helpers of libpowerapi/src/util.h: hashing,
 * growable arrays and their indexes, hex digits, name suggestions, JSON and CSV
 * escaping (the one set of rules every writer of the project uses). */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a writer of util.h puts out for s, in a string to free. */
static char *written(void (*wr)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    wr(f, s);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

#define ck_assert_written(wr, in, want)                                                            \
    do {                                                                                           \
        char *got_ = written(wr, in);                                                              \
        ck_assert_msg(!strcmp(got_, want), "%s: got [%s], want [%s]", #wr, got_, want);            \
        free(got_);                                                                                \
    } while (0)

/* ---- JSON (RFC 8259) ---- */

START_TEST(test_json_plain_and_null)
{
    ck_assert_written(pa__json_write, "hello world", "\"hello world\"");
    ck_assert_written(pa__json_write, "", "\"\"");
    ck_assert_written(pa__json_write, NULL, "\"\"");
    /* what needs no escape is copied: ' / > & and DEL's neighbours */
    ck_assert_written(pa__json_write, "a'b/c>d&e~", "\"a'b/c>d&e~\"");
}
END_TEST

START_TEST(test_json_quotes_backslashes)
{
    ck_assert_written(pa__json_write, "say \"hi\"", "\"say \\\"hi\\\"\"");
    ck_assert_written(pa__json_write, "C:\\dir\\", "\"C:\\\\dir\\\\\"");
    ck_assert_written(pa__json_write, "\\\"", "\"\\\\\\\"\"");
}
END_TEST

START_TEST(test_json_control_characters)
{
    /* every C0 control and DEL as \u00xx, newline and tab included */
    ck_assert_written(pa__json_write, "a\nb\tc\rd", "\"a\\u000ab\\u0009c\\u000dd\"");
    ck_assert_written(pa__json_write, "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
    ck_assert_written(pa__json_write, "\b\f", "\"\\u0008\\u000c\"");
    for (int c = 1; c < 0x20; c++) {
        char in[2] = {(char)c, 0}, want[16];
        snprintf(want, sizeof(want), "\"\\u%04x\"", c);
        ck_assert_written(pa__json_write, in, want);
    }
}
END_TEST

START_TEST(test_json_script_safe)
{
    ck_assert_written(pa__json_write, "</script>", "\"\\u003c/script>\"");
}
END_TEST

START_TEST(test_json_utf8)
{
    /* valid sequences of 2, 3 and 4 bytes are kept */
    ck_assert_written(pa__json_write, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x8b",
                      "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x8b\"");
    /* each byte that starts no valid sequence is one U+FFFD */
    ck_assert_written(pa__json_write,
                      "a\xff"
                      "b",
                      "\"a\\ufffdb\"");
    ck_assert_written(pa__json_write, "\x80\x80", "\"\\ufffd\\ufffd\"");
    /* truncated sequence: the lead byte replaced, the rest kept */
    ck_assert_written(pa__json_write, "\xe2\x82", "\"\\ufffd\\ufffd\"");
    ck_assert_written(pa__json_write, "\xe2\x82x", "\"\\ufffd\\ufffdx\"");
    /* overlong '/', a UTF-16 surrogate, beyond U+10FFFF */
    ck_assert_written(pa__json_write, "\xc0\xaf", "\"\\ufffd\\ufffd\"");
    ck_assert_written(pa__json_write, "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
    ck_assert_written(pa__json_write, "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    /* the golden comm of the VM fixture: quote, backslash, bad byte, é, ^A */
    ck_assert_written(pa__json_write, "q\"b\\\xfe\xc3\xa9\x01",
                      "\"q\\\"b\\\\\\ufffd\xc3\xa9\\u0001\"");
}
END_TEST

START_TEST(test_utf8_len)
{
    ck_assert_uint_eq(pa__utf8_len((const unsigned char *)"a"), 1);
    ck_assert_uint_eq(pa__utf8_len((const unsigned char *)""), 0);
    ck_assert_uint_eq(pa__utf8_len((const unsigned char *)"\xc3\xa9"), 2);
    ck_assert_uint_eq(pa__utf8_len((const unsigned char *)"\xef\xbf\xbf"), 3);
    ck_assert_uint_eq(pa__utf8_len((const unsigned char *)"\xf4\x8f\xbf\xbf"), 4);
    ck_assert_uint_eq(pa__utf8_len((const unsigned char *)"\xc1\xbf"), 0);
    ck_assert_uint_eq(pa__utf8_len((const unsigned char *)"\xe0\x9f\xbf"), 0);
    ck_assert_uint_eq(pa__utf8_len((const unsigned char *)"\xbf"), 0);
}
END_TEST

/* ---- CSV (RFC 4180) ---- */

START_TEST(test_csv)
{
    ck_assert_written(pa__csv_write, "plain", "plain");
    ck_assert_written(pa__csv_write, "", "");
    ck_assert_written(pa__csv_write, NULL, "");
    ck_assert_written(pa__csv_write, " spaces kept ", " spaces kept ");
    ck_assert_written(pa__csv_write, "a,b", "\"a,b\"");
    ck_assert_written(pa__csv_write, "say \"hi\"", "\"say \"\"hi\"\"\"");
    ck_assert_written(pa__csv_write, "\"", "\"\"\"\"");
    ck_assert_written(pa__csv_write, "two\nlines", "\"two\nlines\"");
    ck_assert_written(pa__csv_write, "cr\r", "\"cr\r\"");
    /* a backslash and a semicolon are plain characters in CSV */
    ck_assert_written(pa__csv_write, "a\\b;c", "a\\b;c");
    ck_assert_written(pa__csv_write, "x,\"y\"\n", "\"x,\"\"y\"\"\n\"");
}
END_TEST

/* ---- growable arrays ---- */

START_TEST(test_grow_doubles)
{
    int *v = NULL;
    size_t cap = 0;
    ck_assert_int_eq(PA__GROW(v, cap, 1, 4), 0);
    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(cap, 4);
    /* large enough: nothing moves */
    int *same = v;
    ck_assert_int_eq(PA__GROW(v, cap, 4, 4), 0);
    ck_assert_ptr_eq(v, same);
    ck_assert_uint_eq(cap, 4);
    /* one element at a time past several doublings, contents kept */
    for (int i = 0; i < 1000; i++) {
        ck_assert_int_eq(PA__GROW(v, cap, (size_t)i + 1, 4), 0);
        v[i] = i * 3;
    }
    ck_assert_uint_eq(cap, 1024); /* 4 doubled eight times */
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(v[i], i * 3);
    /* a jump doubles as many times as it needs at once */
    ck_assert_int_eq(PA__GROW(v, cap, 5000, 4), 0);
    ck_assert_uint_eq(cap, 8192);
    ck_assert_int_eq(v[999], 2997);
    free(v);
}
END_TEST

START_TEST(test_grow_first_and_structs)
{
    struct rec {
        double a, b;
        char name[40];
    } *r = NULL;
    size_t cap = 0;
    ck_assert_int_eq(PA__GROW(r, cap, 300, 256), 0);
    ck_assert_uint_eq(cap, 512);
    snprintf(r[299].name, sizeof(r[299].name), "last");
    ck_assert_int_eq(PA__GROW(r, cap, 513, 256), 0);
    ck_assert_uint_eq(cap, 1024);
    ck_assert_str_eq(r[299].name, "last");
    free(r);
    /* first 0 starts at 1 */
    char *c = NULL;
    size_t ccap = 0;
    ck_assert_int_eq(PA__GROW(c, ccap, 3, 0), 0);
    ck_assert_uint_eq(ccap, 4);
    free(c);
}
END_TEST

START_TEST(test_grow_overflow)
{
    double *v = NULL;
    size_t cap = 0;
    /* a size that overflows: refused, nothing touched */
    ck_assert_int_eq(PA__GROW(v, cap, SIZE_MAX / 4, 16), -ENOMEM);
    ck_assert_ptr_null(v);
    ck_assert_uint_eq(cap, 0);
    ck_assert_int_eq(PA__GROW(v, cap, SIZE_MAX, 16), -ENOMEM);
    ck_assert_uint_eq(cap, 0);
}
END_TEST

/* ---- indexes over growable arrays ---- */

static uint64_t word_hash_at(const void *user, size_t i)
{
    return pa__hash_u64(((const uint64_t *)user)[i]);
}

/* The position of key in the index, or -1 (the callers' probing loop). */
static int index_find(const int *slots, size_t cap, const uint64_t *v, uint64_t key)
{
    for (size_t q = pa__hash_u64(key) & (cap - 1); slots[q]; q = (q + 1) & (cap - 1))
        if (v[slots[q] - 1] == key)
            return slots[q] - 1;
    return -1;
}

START_TEST(test_index_reserve)
{
    uint64_t *v = NULL;
    size_t n = 0, vcap = 0, cap = 0;
    int *slots = NULL;
    for (uint64_t k = 0; k < 3000; k++) {
        uint64_t key = k * 4096; /* only high bits differ */
        ck_assert_int_eq(pa__index_reserve(&slots, &cap, 16, 0, n, word_hash_at, v), 0);
        ck_assert_uint_ge(cap, 2 * (n + 1)); /* at most half full */
        ck_assert_uint_eq(cap & (cap - 1), 0);
        ck_assert_int_eq(index_find(slots, cap, v, key), -1);
        size_t q = pa__hash_u64(key) & (cap - 1);
        while (slots[q])
            q = (q + 1) & (cap - 1);
        ck_assert_int_eq(PA__GROW(v, vcap, n + 1, 16), 0);
        v[n] = key;
        slots[q] = (int)++n;
    }
    ck_assert_uint_eq(cap, 8192); /* 16 doubled nine times */
    for (uint64_t k = 0; k < 3000; k++)
        ck_assert_int_eq(index_find(slots, cap, v, k * 4096), (int)k);
    ck_assert_int_eq(index_find(slots, cap, v, 4095), -1);
    /* enough room: nothing moves */
    int *same = slots;
    ck_assert_int_eq(pa__index_reserve(&slots, &cap, 16, 0, 4000, word_hash_at, v), 0);
    ck_assert_ptr_eq(slots, same);
    free(slots);
    /* entries before from are left out of a rebuilt index */
    slots = NULL;
    cap = 0;
    ck_assert_int_eq(pa__index_reserve(&slots, &cap, 4, 10, 20, word_hash_at, v), 0);
    ck_assert_uint_eq(cap, 32);
    ck_assert_int_eq(index_find(slots, cap, v, 5 * 4096), -1);
    ck_assert_int_eq(index_find(slots, cap, v, 15 * 4096), 15);
    free(slots);
    free(v);
}
END_TEST

/* ---- hex ---- */

START_TEST(test_hexval)
{
    const char *digits = "0123456789abcdef", *upper = "ABCDEF";
    for (int i = 0; i < 16; i++)
        ck_assert_int_eq(pa__hexval(digits[i]), i);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(pa__hexval(upper[i]), 10 + i);
    const char *bad = "gGzZ/:@`x -\n";
    for (const char *p = bad; *p; p++)
        ck_assert_int_eq(pa__hexval(*p), -1);
    ck_assert_int_eq(pa__hexval(0), -1);
    ck_assert_int_eq(pa__hexval(0xe9), -1);
    ck_assert_int_eq(pa__hexval(-1), -1);
}
END_TEST

START_TEST(test_hex_decode)
{
    uint8_t out[4] = {0};
    ck_assert_int_eq(pa__hex_decode("00fFa5C3", out, 4), 0);
    ck_assert_uint_eq(out[0], 0x00);
    ck_assert_uint_eq(out[1], 0xff);
    ck_assert_uint_eq(out[2], 0xa5);
    ck_assert_uint_eq(out[3], 0xc3);
    /* /proc/net/ipv6_route's 32 digits */
    uint8_t a6[16];
    ck_assert_int_eq(pa__hex_decode("fe800000000000000000000000000001", a6, 16), 0);
    ck_assert_uint_eq(a6[0], 0xfe);
    ck_assert_uint_eq(a6[1], 0x80);
    ck_assert_uint_eq(a6[15], 0x01);
    ck_assert_int_eq(pa__hex_decode("0g", out, 1), -EINVAL);
    ck_assert_int_eq(pa__hex_decode("g0", out, 1), -EINVAL);
    ck_assert_int_eq(pa__hex_decode("abc", out, 2), -EINVAL); /* too short */
    ck_assert_int_eq(pa__hex_decode("", out, 0), 0);
}
END_TEST

/* ---- suggestions ---- */

START_TEST(test_suggest_near_misses)
{
    static const char *const keys[] = {"interval", "window",  "tdp", "watts",
                                       "format",   "formula", NULL};
    ck_assert_str_eq(pa__suggest("intervall", keys), "interval"); /* insert */
    ck_assert_str_eq(pa__suggest("interal", keys), "interval");   /* delete */
    ck_assert_str_eq(pa__suggest("windoe", keys), "window");      /* change */
    ck_assert_str_eq(pa__suggest("tpd", keys), "tdp");            /* transposition */
    ck_assert_str_eq(pa__suggest("itnreval", keys), "interval");  /* 2 swaps */
    ck_assert_str_eq(pa__suggest("wats", keys), "watts");
    ck_assert_str_eq(pa__suggest("formule", keys), "formula");
    ck_assert_str_eq(pa__suggest("fromat", keys), "format");
}
END_TEST

START_TEST(test_suggest_none_for_far_names)
{
    static const char *const keys[] = {"interval", "window", "tdp", NULL};
    ck_assert_ptr_null(pa__suggest("frequency", keys));
    ck_assert_ptr_null(pa__suggest("xyz", keys)); /* 3 edits from tdp */
    ck_assert_ptr_null(pa__suggest("", keys));
    ck_assert_ptr_null(pa__suggest("interval-interval", keys));
    static const char *const none[] = {NULL};
    ck_assert_ptr_null(pa__suggest("tdp", none));
    ck_assert_ptr_null(pa__suggest("tdp", NULL));
    char longname[100];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[99] = '\0';
    static const char *const as[] = {"aaaa", NULL};
    ck_assert_ptr_null(pa__suggest(longname, as));
}
END_TEST

START_TEST(test_suggest_nearest_wins)
{
    static const char *const keys[] = {"mode", "node", "nodes", NULL};
    ck_assert_str_eq(pa__suggest("nodes", keys), "nodes"); /* exact: 0 */
    ck_assert_str_eq(pa__suggest("noes", keys), "nodes");  /* 1 beats 2 */
    ck_assert_str_eq(pa__suggest("xode", keys), "mode");   /* first on ties */
}
END_TEST

/* ---- hashing ---- */

/* The longest run of occupied slots when n keys go into a table of cap
 * slots by linear probing: what open addressing pays. */
static size_t longest_probe(const uint64_t *h, size_t n, size_t cap)
{
    unsigned char *used = calloc(cap, 1);
    ck_assert_ptr_nonnull(used);
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        size_t q = h[i] & (cap - 1), probes = 1;
        while (used[q]) {
            q = (q + 1) & (cap - 1);
            probes++;
        }
        used[q] = 1;
        worst = probes > worst ? probes : worst;
    }
    free(used);
    return worst;
}

START_TEST(test_hash_spreads_integers)
{
    enum { N = 2048, CAP = 4096 };
    uint64_t *h = malloc(N * sizeof(*h));
    ck_assert_ptr_nonnull(h);
    /* keys that differ only in high bits (aligned pointers, shifted ids) */
    for (size_t i = 0; i < N; i++)
        h[i] = pa__hash_u64((uint64_t)i << 32);
    ck_assert_uint_lt(longest_probe(h, N, CAP), 40);
    for (size_t i = 0; i < N; i++)
        h[i] = pa__hash_u64(0x7f0000001000ull + 64 * i);
    ck_assert_uint_lt(longest_probe(h, N, CAP), 40);
    /* every bit of the low 12 is used: about half the keys set each one */
    for (int b = 0; b < 12; b++) {
        size_t ones = 0;
        for (size_t i = 0; i < N; i++)
            ones += (h[i] >> b) & 1;
        ck_assert_msg(ones > N * 4 / 10 && ones < N * 6 / 10, "bit %d: %zu of %d", b, ones, N);
    }
    /* one input bit flips about half the output bits */
    for (int b = 0; b < 64; b++) {
        uint64_t d = pa__hash_u64(12345) ^ pa__hash_u64(12345 ^ (1ull << b));
        int flips = __builtin_popcountll(d);
        ck_assert_msg(flips > 16 && flips < 48, "bit %d flips %d", b, flips);
    }
    ck_assert_uint_eq(pa__hash_u64(42), pa__hash_u64(42));
    free(h);
}
END_TEST

START_TEST(test_hash_spreads_strings_and_pairs)
{
    enum { N = 2048, CAP = 4096 };
    uint64_t *h = malloc(N * sizeof(*h));
    ck_assert_ptr_nonnull(h);
    for (size_t i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "java.lang.Thread.run%zu", i);
        h[i] = pa__hash_str(name);
    }
    ck_assert_uint_lt(longest_probe(h, N, CAP), 40);
    ck_assert_uint_eq(pa__hash_str(NULL), pa__hash_str(""));
    ck_assert_uint_ne(pa__hash_str("ab"), pa__hash_str("ba"));
    ck_assert_uint_eq(pa__hash_str("powerapi"), pa__hash_str("powerapi"));
    /* pairs: (parent, child) grids, order matters */
    for (size_t i = 0; i < N; i++)
        h[i] = pa__hash_pair(i / 64, i % 64);
    ck_assert_uint_lt(longest_probe(h, N, CAP), 40);
    ck_assert_uint_ne(pa__hash_pair(1, 2), pa__hash_pair(2, 1));
    ck_assert_uint_ne(pa__hash_pair(0, 0), pa__hash_pair(0, 1));
    free(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("util");
    tcase_add_test(tc, test_json_plain_and_null);
    tcase_add_test(tc, test_json_quotes_backslashes);
    tcase_add_test(tc, test_json_control_characters);
    tcase_add_test(tc, test_json_script_safe);
    tcase_add_test(tc, test_json_utf8);
    tcase_add_test(tc, test_utf8_len);
    tcase_add_test(tc, test_csv);
    tcase_add_test(tc, test_grow_doubles);
    tcase_add_test(tc, test_grow_first_and_structs);
    tcase_add_test(tc, test_grow_overflow);
    tcase_add_test(tc, test_index_reserve);
    tcase_add_test(tc, test_hexval);
    tcase_add_test(tc, test_hex_decode);
    tcase_add_test(tc, test_suggest_near_misses);
    tcase_add_test(tc, test_suggest_none_for_far_names);
    tcase_add_test(tc, test_suggest_nearest_wins);
    tcase_add_test(tc, test_hash_spreads_integers);
    tcase_add_test(tc, test_hash_spreads_strings_and_pairs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
