/*
 * unit_callsite.c - which debug record describes a call (callsite.c,
 * issue 32), on the records of the method where jalen credited
 * StringBuilder.delete's array copy to append on JDK 17: the copy's
 * record ends before the call to the stub, the next record after the call
 * is append's code laid out after it.
 */
#include <check.h>
#include <stdlib.h>

#include "callsite.h"

/* Offsets of that method's records around the call (from
 * -XX:CompileCommand=print): 0x230 arraycopy's argument checks, the call
 * r10 at 0x261-0x264 (3 bytes, return 0x264), 0x278 append's
 * ensureCapacityInternal; a Java call at 0x2a0-0x2a5 with its safepoint
 * record at its return address 0x2a5. */
static const uint32_t pcs[] = {0x200, 0x230, 0x278, 0x290, 0x2a5, 0x2c0};
#define N (sizeof(pcs) / sizeof(pcs[0]))

START_TEST(stub_call_takes_the_record_before)
{
    /* HotSpot's own choice for the return address would be 0x278 */
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x264, 3), 0x230);
    /* a call rel32 (5 bytes) whose first byte is right after a record */
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x235, 5), 0x230);
}
END_TEST

START_TEST(java_call_takes_its_own_record)
{
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x2a5, 5), 0x2a5);
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x2c0, 2), 0x2c0);
}
END_TEST

START_TEST(record_ending_at_the_call)
{
    /* the instruction before the call ends exactly where the call starts */
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x27d, 5), 0x278);
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x295, 5), 0x290);
}
END_TEST

START_TEST(no_record_before)
{
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x105, 5), -1);
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x204, 5), -1); /* call starts at 0x1ff */
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x205, 5), 0x200);
}
END_TEST

START_TEST(bad_arguments)
{
    ck_assert_int_eq(jl_callsite_desc(NULL, 3, 0x264, 3), -1);
    ck_assert_int_eq(jl_callsite_desc(pcs, 0, 0x264, 3), -1);
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x264, 0), -1);
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 2, 3), -1); /* call before the code */
}
END_TEST

START_TEST(past_the_last_record)
{
    ck_assert_int_eq(jl_callsite_desc(pcs, N, 0x400, 5), 0x2c0);
    static const uint32_t one[] = {0x40};
    ck_assert_int_eq(jl_callsite_desc(one, 1, 0x40, 5), 0x40);
    ck_assert_int_eq(jl_callsite_desc(one, 1, 0x44, 5), -1);
    ck_assert_int_eq(jl_callsite_desc(one, 1, 0x45, 5), 0x40);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_callsite");
    TCase *tc = tcase_create("callsite");
    tcase_add_test(tc, stub_call_takes_the_record_before);
    tcase_add_test(tc, java_call_takes_its_own_record);
    tcase_add_test(tc, record_ending_at_the_call);
    tcase_add_test(tc, no_record_before);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, past_the_last_record);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
