/*
 * callsite.c - where a frame that returns to compiled Java code is decoded
 * (see callsite.h and DESIGN.md section 11.1).
 */
#include "callsite.h"

static int32_t jl_rel32(const unsigned char *q)
{
    return (int32_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                     (uint32_t)q[3] << 24);
}

/* The length of call r/m64 (ff /2) whose ModRM byte is at q[1]: its
 * ModRM, SIB and displacement decoded. */
static int jl_ff_len(const unsigned char *q)
{
    int mod = q[1] >> 6, rm = q[1] & 7, n = 2;
    if (mod == 3)
        return n;
    if (rm == 4) {
        n++; /* SIB */
        if (mod == 0 && (q[2] & 7) == 5)
            n += 4;
    } else if (mod == 0 && rm == 5) {
        n += 4; /* rip + disp32 */
    }
    return n + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
}

int jl_call_len(const unsigned char *p)
{
    if (p[-5] == 0xe8) /* call rel32 */
        return 5;
    /* call r/m64, with an optional REX prefix */
    for (int len = 2; len <= 7; len++) {
        const unsigned char *q = p - len;
        if (q[0] == 0xff && ((q[1] >> 3) & 7) == 2 && jl_ff_len(q) == len)
            return (q[-1] & 0xf0) == 0x40 ? len + 1 : len;
    }
    return 0;
}

/* The length of the move at p (below end) that puts a register back after
 * a call: mov r, r or mov r, [rsp+d] (89 or 8b, with or without a REX
 * prefix); 0 when there is none. */
static int jl_move_len(uintptr_t p, uintptr_t end)
{
    const unsigned char *q = (const unsigned char *)p;
    int n = 0;
    if (p + 8 > end)
        return 0;
    if ((q[0] & 0xf0) == 0x40)
        n = 1;
    if (q[n] != 0x89 && q[n] != 0x8b)
        return 0;
    int mod = q[n + 1] >> 6, rm = q[n + 1] & 7;
    if (mod == 3)
        return n + 2;
    if (rm == 4 && q[n + 2] == 0x24) /* [rsp + disp] */
        return mod == 1 ? n + 4 : mod == 2 ? n + 7 : 0;
    return 0;
}

size_t jl_first_record(const jl_code *c, uintptr_t off)
{
    size_t lo = 0, hi = c->npcs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->pcs[mid] < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* callsite.h's rule for a native leaf call with no record of its own:
 * the PC to give, 0 when the rule does not apply. */
static uintptr_t jl_native_call_pc(uintptr_t off, int call_len, size_t i, const jl_code *c,
                                   int *drop)
{
    if (!c->pcs || !c->chain || !c->parent || !c->invoke || i == 0 || i >= c->npcs ||
        call_len <= 0 || (uintptr_t)call_len + 10 >= off)
        return 0;
    uintptr_t start = off - (uintptr_t)call_len;
    const unsigned char *m = (const unsigned char *)(c->lo + start - 10);
    if (m[0] == 0x49 && m[1] == 0xba) /* movabs r10, imm64 */
        start -= 10;
    size_t b = i - 1;
    if (c->pcs[b] != start || !c->chain[b] || !c->chain[i])
        return 0;
    int db = JL_REC_DEPTH(c->invoke[b]), da = JL_REC_DEPTH(c->invoke[i]);
    if (!(c->invoke[b] & JL_REC_INVOKE)) {
        if (c->parent[i] == c->chain[b] || c->parent[b] == c->chain[i])
            return c->lo + start - 1;
        return 0;
    }
    if (db > 0 && da == db + 2) {
        *drop = 1;
        return c->lo + off - 1;
    }
    return 0;
}

/* callsite.h's rule for a jump whose target has a record of its own: that
 * record describes the code laid out just before the target, and is the
 * call's scope when it is an invoke in the method of the last record
 * before the call (start) and no earlier call's safepoint record. */
static int jl_merge_is_the_call(uintptr_t p, uintptr_t start, const jl_code *c)
{
    if (!c->pcs || !c->invoke || !c->chain || start <= c->lo || p < c->lo + 8)
        return 0;
    size_t at = jl_first_record(c, p - c->lo);
    size_t b = jl_first_record(c, start - c->lo + 1);
    if (at >= c->npcs || c->pcs[at] != p - c->lo || b == 0 || b - 1 == at)
        return 0;
    return (c->invoke[at] & JL_REC_INVOKE) && c->chain[at] && c->chain[at] == c->chain[b - 1] &&
           !jl_call_len((const unsigned char *)p);
}

uintptr_t jl_callsite_pc(uintptr_t ra, int call_len, int leaf, const jl_code *code, int *drop)
{
    int dropped;
    if (!drop)
        drop = &dropped;
    *drop = 0;
    if (!code || ra <= code->lo || ra >= code->hi)
        return ra - 1;
    uintptr_t off = ra - code->lo;
    size_t i = code->pcs ? jl_first_record(code, off) : 0;
    if (code->pcs && i < code->npcs && code->pcs[i] == off)
        return ra - 1;
    if (!leaf)
        return ra - 1;
    if (leaf == JL_CALL_ARRAYCOPY && code->pcs && code->invoke && call_len > 0 &&
        (uintptr_t)call_len < off) {
        uintptr_t start = off - (uintptr_t)call_len;
        size_t j = jl_first_record(code, start + 1); /* records after start */
        uintptr_t b = j > 0 ? code->pcs[j - 1] : 0;
        if (j > 0 && (code->invoke[j - 1] & JL_REC_INVOKE) && b >= 8 &&
            start - b <= JL_CALLSITE_SETUP && !jl_call_len((const unsigned char *)(code->lo + b)))
            return code->lo + b - 1;
    }
    if (leaf == JL_CALL_NATIVE) {
        uintptr_t at = jl_native_call_pc(off, call_len, i, code, drop);
        if (at)
            return at;
    }
    uintptr_t p = ra;
    for (int k = 0; k < 3; k++) {
        /* the registers an arraycopy call saved, put back before the jump
         * (an intrinsic's stub call has its own record after it: no moves
         * are looked past there) */
        uintptr_t j = p;
        for (int m = 0, n; leaf == JL_CALL_ARRAYCOPY && m < JL_CALLSITE_MOVES &&
                           (n = jl_move_len(j, code->hi)) > 0;
             m++)
            j += (uintptr_t)n;
        const unsigned char *q = (const unsigned char *)j;
        uintptr_t t;
        if (j + 5 <= code->hi && q[0] == 0xe9) /* jmp rel32 */
            t = j + 5 + (uintptr_t)(intptr_t)jl_rel32(q + 1);
        else if (j + 2 <= code->hi && q[0] == 0xeb) /* jmp rel8 */
            t = j + 2 + (uintptr_t)(intptr_t)(int8_t)q[1];
        else
            break;
        if (t < code->lo || t >= code->hi || t == j)
            break;
        p = t;
    }
    if (p == ra)
        return ra - 1;
    if (call_len > 0 && (uintptr_t)call_len < off &&
        jl_merge_is_the_call(p, ra - (uintptr_t)call_len, code))
        return p - 1;
    /* the record after ra, of a method that the one p returns to inlined:
     * the call's own (p is where that method's caller goes on) */
    size_t c = jl_first_record(code, p - code->lo + 1);
    if (code->chain && code->parent && i < code->npcs && c < code->npcs && code->chain[c] &&
        code->parent[i] == code->chain[c])
        return ra - 1;
    return p;
}

uintptr_t jl_interrupted_pc(uintptr_t pc, const jl_code *code)
{
    if (!code || !code->pcs || pc <= code->lo || pc >= code->hi)
        return pc;
    uintptr_t off = pc - code->lo;
    size_t i = jl_first_record(code, off);
    return i < code->npcs && code->pcs[i] == off ? pc - 1 : pc;
}

int jl_stack_ok(uintptr_t a, uintptr_t lo, uintptr_t hi)
{
    return (a & 7) == 0 && a >= lo && a < hi && hi - a >= 16;
}
