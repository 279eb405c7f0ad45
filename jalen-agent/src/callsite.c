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

/* The index of the first record at or after offset off (npcs: none). */
static size_t jl_first_record(const jl_code *c, uintptr_t off)
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

uintptr_t jl_callsite_pc(uintptr_t ra, int call_len, int leaf, const jl_code *code)
{
    if (!code || ra <= code->lo || ra >= code->hi)
        return ra - 1;
    uintptr_t off = ra - code->lo;
    size_t i = code->pcs ? jl_first_record(code, off) : 0;
    if (code->pcs && i < code->npcs && code->pcs[i] == off)
        return ra - 1;
    if (!leaf)
        return ra - 1;
    if (code->pcs && code->invoke && call_len > 0 && (uintptr_t)call_len < off) {
        uintptr_t start = off - (uintptr_t)call_len;
        size_t j = jl_first_record(code, start + 1); /* records after start */
        if (j > 0 && code->invoke[j - 1] && code->pcs[j - 1] >= 1 &&
            start - code->pcs[j - 1] <= JL_CALLSITE_SETUP)
            return code->lo + code->pcs[j - 1] - 1;
    }
    uintptr_t p = ra;
    for (int k = 0; k < 3; k++) {
        const unsigned char *q = (const unsigned char *)p;
        uintptr_t t;
        if (p + 5 <= code->hi && q[0] == 0xe9) /* jmp rel32 */
            t = p + 5 + (uintptr_t)(intptr_t)jl_rel32(q + 1);
        else if (p + 2 <= code->hi && q[0] == 0xeb) /* jmp rel8 */
            t = p + 2 + (uintptr_t)(intptr_t)(int8_t)q[1];
        else
            break;
        if (t < code->lo || t >= code->hi || t == p)
            break;
        p = t;
    }
    return p != ra ? p : ra - 1;
}
