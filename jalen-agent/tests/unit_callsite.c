/*
 * unit_callsite.c - the PC at which a recovered frame is decoded
 * (callsite.c, issue 32), on code shaped like the method where jalen
 * credited StringBuilder.delete's array copy to append on JDK 17: the call
 * to the arraycopy stub sits in an out-of-line block that jumps back to
 * the main path, and the block laid out after it is append's.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "callsite.h"

static unsigned char code[0x400];
static jl_code c;
#define AT(off) ((uintptr_t)code + (off))

/* Records (offsets): 0x160 delete's code after the copy, on the main path;
 * 0x230 the copy's argument checks (at `invokestatic arraycopy` when
 * invoke says so); 0x278 append's ensureCapacityInternal, the block laid
 * out after the out-of-line one; 0x2a5 a Java call's safepoint record at
 * its return address. */
static const uint32_t pcs[] = {0x100, 0x160, 0x230, 0x278, 0x2a5, 0x2c0};
static const uint8_t no_invoke[] = {0, 0, 0, 0, 1, 0};
static const uint8_t copy_invoke[] = {0, 0, 1, 0, 1, 0};

static void setup(void)
{
    memset(code, 0x90, sizeof(code)); /* nop */
    /* 0x25e: mov r10, stub ... call r10 (41 ff d2) at 0x261, return 0x264,
     * then jmp rel32 back to 0x150 */
    code[0x261] = 0x41, code[0x262] = 0xff, code[0x263] = 0xd2;
    code[0x264] = 0xe9;
    int32_t rel = 0x150 - (0x264 + 5);
    memcpy(&code[0x265], &rel, 4);
    /* 0x300: a call followed by jmp rel8 to 0x310, which jumps (rel32) to
     * 0x180 */
    code[0x305] = 0xeb, code[0x306] = 0x310 - (0x305 + 2);
    code[0x310] = 0xe9;
    rel = 0x180 - (0x310 + 5);
    memcpy(&code[0x311], &rel, 4);
    /* 0x340: a call (ends 0x345), mov r11, r14 (4d 89 f3), mov ebx,
     * [rsp+8] (8b 5c 24 08), then jmp rel8 to 0x150: the registers put
     * back after an arraycopy stub call (Recovery.arraycopyLoop on JDK 17,
     * append's copy); 0x360: the same moves, then no jump */
    static const unsigned char back[] = {0x4d, 0x89, 0xf3, 0x8b, 0x5c, 0x24, 0x08};
    memcpy(&code[0x345], back, sizeof(back));
    code[0x34c] = 0xe9;
    rel = 0x150 - (0x34c + 5);
    memcpy(&code[0x34d], &rel, 4);
    memcpy(&code[0x365], back, sizeof(back));
    /* 0x320: a jump to itself, 0x330: a jump out of the code */
    code[0x320] = 0xeb, code[0x321] = 0xfe;
    code[0x330] = 0xe9;
    rel = 0x1000;
    memcpy(&code[0x331], &rel, 4);
    c = (jl_code){.lo = AT(0), .hi = AT(sizeof(code)), .pcs = pcs, .invoke = no_invoke, .npcs = 6};
}

START_TEST(leaf_call_follows_the_jump_back)
{
    /* HotSpot's own choice at the return address would be 0x278 (append) */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, 1, &c, NULL), AT(0x150));
    /* through two jumps */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x305), 5, 1, &c, NULL), AT(0x180));
    /* without the records, the same (the jump is in the code) */
    jl_code bare = {.lo = AT(0), .hi = AT(sizeof(code))};
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, 1, &bare, NULL), AT(0x150));
}
END_TEST

START_TEST(leaf_call_jumps_back_after_moves)
{
    /* HotSpot's choice at the return address would be the first record
     * after it, 0x2a5; the moves are skipped, the jump followed */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x345), 5, JL_CALL_ARRAYCOPY, &c, NULL), AT(0x150));
    /* an intrinsic's stub call: its own record after it, the moves not
     * looked past */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x345), 5, JL_CALL_LEAF, &c, NULL), AT(0x344));
    /* moves and no jump: the first record from ra */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x365), 5, JL_CALL_ARRAYCOPY, &c, NULL), AT(0x364));
    /* a call into Java code: its own record, never the jump */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x345), 5, JL_CALL_JAVA, &c, NULL), AT(0x344));
}
END_TEST

START_TEST(jump_back_yields_to_an_inlined_callee)
{
    /* the jump leads to 0x150, decoded at the record 0x160 (delete's
     * count -= len); the first record from ra is 0x278: when its method
     * was inlined by delete (shift, whose copy ends it), it is the call's */
    static const uint32_t chain[] = {1, 0xde1e7e, 2, 0x5eed, 3, 4};
    static const uint32_t parent_in[] = {9, 9, 9, 0xde1e7e, 9, 9};
    static const uint32_t parent_out[] = {9, 9, 9, 0xbeef, 9, 9};
    c.chain = chain;
    c.parent = parent_in;
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, JL_CALL_ARRAYCOPY, &c, NULL), AT(0x263));
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, JL_CALL_LEAF, &c, NULL), AT(0x263));
    /* another subtree after ra (append's code after delete's copy): the jump */
    c.parent = parent_out;
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, JL_CALL_ARRAYCOPY, &c, NULL), AT(0x150));
    /* chains not known (0): the jump */
    static const uint32_t zero[] = {0, 0, 0, 0, 0, 0};
    c.chain = zero;
    c.parent = zero;
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, JL_CALL_ARRAYCOPY, &c, NULL), AT(0x150));
}
END_TEST

START_TEST(leaf_call_takes_the_invoke_just_before)
{
    /* the record before the call is at the invoke of the call, and ends
     * 0x31 bytes before it: the call's scope */
    c.invoke = copy_invoke;
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, JL_CALL_ARRAYCOPY, &c, NULL), AT(0x22f));
    /* not for a call into Java code, nor to another stub (whose scope is
     * in the records after it): the jump */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, JL_CALL_JAVA, &c, NULL), AT(0x263));
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, JL_CALL_LEAF, &c, NULL), AT(0x150));
    /* too far before the call: code scheduled before it (0x230 + 64 =
     * 0x270 < 0x272) */
    code[0x275] = 0x90;
    ck_assert_uint_eq(jl_callsite_pc(AT(0x275), 3, JL_CALL_ARRAYCOPY, &c, NULL), AT(0x274));
    /* an invoke record ending exactly where the call starts */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x235), 5, JL_CALL_ARRAYCOPY, &c, NULL), AT(0x22f));
    /* a record at a bytecode that is no invoke is not taken: the jump */
    c.invoke = no_invoke;
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, JL_CALL_ARRAYCOPY, &c, NULL), AT(0x150));
    /* an invoke record that is an earlier call's (it ends right after a
     * call rel32) is not taken either */
    c.invoke = copy_invoke;
    code[0x22b] = 0xe8;
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, JL_CALL_ARRAYCOPY, &c, NULL), AT(0x150));
}
END_TEST

START_TEST(call_lengths)
{
    static const unsigned char rel32[] = {0x90, 0xe8, 1, 2, 3, 4, 0x90};
    static const unsigned char r10[] = {0x90, 0x90, 0x90, 0x90, 0x90, 0x41, 0xff, 0xd2, 0x90};
    static const unsigned char mem[] = {0x90, 0xff, 0x54, 0x24, 0x08, 0x90}; /* [rsp+8] */
    static const unsigned char none[] = {0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};
    ck_assert_int_eq(jl_call_len(rel32 + 6), 5);
    ck_assert_int_eq(jl_call_len(r10 + 8), 3);
    ck_assert_int_eq(jl_call_len(mem + 5), 4);
    ck_assert_int_eq(jl_call_len(none + 8), 0);
}
END_TEST

START_TEST(java_call_takes_its_own_record)
{
    /* a record at the return address: one byte before it, jump or not */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x2a5), 5, 1, &c, NULL), AT(0x2a4));
    ck_assert_uint_eq(jl_callsite_pc(AT(0x2a5), 5, 0, &c, NULL), AT(0x2a4));
    /* a call into Java code is not followed through a jump */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, 0, &c, NULL), AT(0x263));
}
END_TEST

START_TEST(no_jump_is_the_first_record_from_ra)
{
    ck_assert_uint_eq(jl_callsite_pc(AT(0x200), 5, 1, &c, NULL), AT(0x1ff));
    ck_assert_uint_eq(jl_callsite_pc(AT(0x200), 5, 0, &c, NULL), AT(0x1ff));
}
END_TEST

START_TEST(jumps_that_lead_nowhere)
{
    ck_assert_uint_eq(jl_callsite_pc(AT(0x320), 2, 1, &c, NULL), AT(0x31f)); /* to itself */
    ck_assert_uint_eq(jl_callsite_pc(AT(0x330), 2, 1, &c, NULL), AT(0x32f)); /* out of the code */
    /* a jump whose bytes run past the end of the code is not read */
    jl_code shortc = {.lo = AT(0), .hi = AT(0x267)};
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, 1, &shortc, NULL), AT(0x263));
    /* a return address outside the code, or no code */
    ck_assert_uint_eq(jl_callsite_pc(AT(0), 5, 1, &c, NULL), AT(0) - 1);
    ck_assert_uint_eq(jl_callsite_pc(AT(0x264), 3, 1, NULL, NULL), AT(0x263));
}
END_TEST

START_TEST(interrupted_pc_takes_the_instruction_before)
{
    /* Recovery.missLoop (issue 32's bench): the load that misses ends the
     * record at 0x160 (missLoad's), the next instruction, interrupted, is
     * the loop's: at a record, the PC before it selects that record */
    ck_assert_uint_eq(jl_interrupted_pc(AT(0x160), &c), AT(0x15f));
    ck_assert_uint_eq(jl_interrupted_pc(AT(0x2a5), &c), AT(0x2a4));
    /* inside a run of one scope: the PC as it is (the same record) */
    ck_assert_uint_eq(jl_interrupted_pc(AT(0x161), &c), AT(0x161));
    ck_assert_uint_eq(jl_interrupted_pc(AT(0x15f), &c), AT(0x15f));
    /* the method's first byte, outside the code, no records: as it is */
    ck_assert_uint_eq(jl_interrupted_pc(AT(0), &c), AT(0));
    ck_assert_uint_eq(jl_interrupted_pc(AT(sizeof(code)), &c), AT(sizeof(code)));
    jl_code bare = {.lo = AT(0), .hi = AT(sizeof(code))};
    ck_assert_uint_eq(jl_interrupted_pc(AT(0x160), &bare), AT(0x160));
    ck_assert_uint_eq(jl_interrupted_pc(AT(0x160), NULL), AT(0x160));
}
END_TEST

/* A leaf call into the VM with no record of its own (issue 32,
 * Recovery's stamp and vstamp, Jetty's ByteBufferPool$Bucket): records at
 * 0x20, 0x40 (ends where movabs r10, javaTimeNanos; call r10 begins) and
 * 0x60 (after the call, which returns to 0x4d); flags: the depth times 2,
 * plus JL_REC_INVOKE. */
START_TEST(native_call_without_its_own_record)
{
    static unsigned char k[0x80];
    memset(k, 0x90, sizeof(k));
    k[0x40] = 0x49, k[0x41] = 0xba;                 /* movabs r10, imm64 */
    k[0x4a] = 0x41, k[0x4b] = 0xff, k[0x4c] = 0xd2; /* call r10 */
    static const uint32_t kp[] = {0x20, 0x40, 0x60};
    /* stamp@-1 <- loop (depth 2) before, lazySet <- stamp <- loop after:
     * the consumer, inlined by the method before */
    static const uint32_t chain[] = {7, 0x11, 0x22}, parent[] = {1, 7, 0x11};
    static const uint8_t flags[] = {2, 4, 6};
    jl_code n = {.lo = (uintptr_t)k,
                 .hi = (uintptr_t)k + sizeof(k),
                 .pcs = kp,
                 .invoke = flags,
                 .chain = chain,
                 .parent = parent,
                 .npcs = 3};
    uintptr_t ra = (uintptr_t)k + 0x4d;
    int drop = -1;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_NATIVE, &n, &drop), (uintptr_t)k + 0x3f);
    ck_assert_int_eq(drop, 0);
    /* a stub in the code cache, or Java code: the first record from ra */
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_LEAF, &n, &drop), ra - 1);
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_JAVA, &n, &drop), ra - 1);
    /* the loop's code after the call (the method before ended with it) */
    static const uint32_t chain2[] = {7, 0x11, 7}, parent2[] = {1, 7, 1};
    n.chain = chain2, n.parent = parent2;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_NATIVE, &n, &drop), (uintptr_t)k + 0x3f);
    /* an unrelated method after it: the first record from ra */
    static const uint32_t chain3[] = {7, 0x11, 0x33}, parent3[] = {1, 7, 0x44};
    n.chain = chain3, n.parent = parent3;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_NATIVE, &n, &drop), ra - 1);
    ck_assert_int_eq(drop, 0);
    /* the record before at the invoke of stamp (loop@9, depth 1), the one
     * after lazySet <- stamp <- loop (depth 3): decoded after the call,
     * lazySet left out */
    static const uint8_t flags4[] = {2, 2 | JL_REC_INVOKE, 6};
    n.invoke = flags4;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_NATIVE, &n, &drop), ra - 1);
    ck_assert_int_eq(drop, 1);
    /* at the invoke and one scope deeper after it: the call is the invoked
     * method's own, nothing left out */
    static const uint8_t flags5[] = {2, 2 | JL_REC_INVOKE, 4};
    n.invoke = flags5;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_NATIVE, &n, &drop), ra - 1);
    ck_assert_int_eq(drop, 0);
    /* a record before that ends short of the call sequence: not taken */
    static const uint32_t kp2[] = {0x20, 0x3c, 0x60};
    n.pcs = kp2, n.invoke = flags, n.chain = chain, n.parent = parent;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_NATIVE, &n, &drop), ra - 1);
    /* a record at ra: the call's own */
    static const uint32_t kp3[] = {0x20, 0x40, 0x4d};
    n.pcs = kp3;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_NATIVE, &n, &drop), ra - 1);
    ck_assert_int_eq(drop, 0);
}
END_TEST

/* A frame-pointer chain that reads -8 off the stack: the next link is not
 * in the stack (a + 16 wraps to 8, which "fits" below hi; reading
 * [a + 8] = [0] crashed a JVM under the bench). */
/* Recovery.sbdeleteLoop compiled by C2 alone (JDK 17, -XX:-TieredCompilation;
 * offsets as dumped): copies up to 32 bytes inline at 0x57 (masked AVX-512
 * moves, whose record at 0x77 is shift@33, the invoke of System.arraycopy),
 * longer ones through the stub: movabs r10 at 0x134, call r10 at 0x13e,
 * return 0x141, jmp 0x77.  The record after the jump's target is
 * Thread.isAlive@-1 (the loop's next call, inlined), where the agent
 * before credited 84 % of the loop's energy. */
START_TEST(jump_to_the_copy_inline_takes_its_record)
{
    static unsigned char k[0x200];
    memset(k, 0x90, sizeof(k));
    k[0x13e] = 0x41, k[0x13f] = 0xff, k[0x140] = 0xd2; /* call r10 */
    k[0x141] = 0xe9;
    int32_t rel = 0x77 - (0x141 + 5);
    memcpy(&k[0x142], &rel, 4);
    /* 0x10d shift@33, 0x11d shift@1 (lea: the call's arguments), 0x77
     * shift@33 (the inline copy), 0x7b isAlive@-1, 0x168 shift@33 (an
     * uncommon trap's call) */
    static const uint32_t kp[] = {0x77, 0x7b, 0x10d, 0x11d, 0x168};
    static const uint8_t inv[] = {1 | 8, 0 | 4, 1 | 8, 0 | 8, 1 | 8};
    static const uint32_t shift = 0x5417, alive = 0xa11e;
    uint32_t ch[] = {shift, alive, shift, shift, shift};
    static const uint32_t par[] = {0xde1e7e, 0x100b, 0xde1e7e, 0xde1e7e, 0xde1e7e};
    jl_code n = {.lo = (uintptr_t)k,
                 .hi = (uintptr_t)k + sizeof(k),
                 .pcs = kp,
                 .invoke = inv,
                 .chain = ch,
                 .parent = par,
                 .npcs = 5};
    uintptr_t ra = (uintptr_t)k + 0x141;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_ARRAYCOPY, &n, NULL), (uintptr_t)k + 0x76);
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_LEAF, &n, NULL), (uintptr_t)k + 0x76);
    /* the record at the target in another method: the target, as before */
    ch[0] = alive;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_ARRAYCOPY, &n, NULL), (uintptr_t)k + 0x77);
    ch[0] = shift;
    /* a call's safepoint record at the target (a call rel32 ends there) */
    k[0x72] = 0xe8;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_ARRAYCOPY, &n, NULL), (uintptr_t)k + 0x77);
    k[0x72] = 0x90;
    /* chains not known: the target */
    n.chain = NULL;
    ck_assert_uint_eq(jl_callsite_pc(ra, 3, JL_CALL_ARRAYCOPY, &n, NULL), (uintptr_t)k + 0x77);
}
END_TEST

START_TEST(stack_bounds_without_overflow)
{
    uintptr_t lo = 0x7f0000000000, hi = 0x7f0000100000;
    ck_assert(jl_stack_ok(lo, lo, hi));
    ck_assert(jl_stack_ok(hi - 16, lo, hi));
    ck_assert(!jl_stack_ok(hi - 8, lo, hi));
    ck_assert(!jl_stack_ok(hi, lo, hi));
    ck_assert(!jl_stack_ok(lo - 8, lo, hi));
    ck_assert(!jl_stack_ok(lo + 4, lo, hi));
    ck_assert(!jl_stack_ok((uintptr_t)-8, lo, hi));
    ck_assert(!jl_stack_ok((uintptr_t)-16, lo, hi));
    ck_assert(!jl_stack_ok(0, lo, hi));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_callsite");
    TCase *tc = tcase_create("callsite");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, leaf_call_follows_the_jump_back);
    tcase_add_test(tc, leaf_call_takes_the_invoke_just_before);
    tcase_add_test(tc, leaf_call_jumps_back_after_moves);
    tcase_add_test(tc, jump_back_yields_to_an_inlined_callee);
    tcase_add_test(tc, call_lengths);
    tcase_add_test(tc, java_call_takes_its_own_record);
    tcase_add_test(tc, no_jump_is_the_first_record_from_ra);
    tcase_add_test(tc, jumps_that_lead_nowhere);
    tcase_add_test(tc, interrupted_pc_takes_the_instruction_before);
    tcase_add_test(tc, native_call_without_its_own_record);
    tcase_add_test(tc, jump_to_the_copy_inline_takes_its_record);
    tcase_add_test(tc, stack_bounds_without_overflow);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
