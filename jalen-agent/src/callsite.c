/*
 * callsite.c - the debug-information record of a call instruction (see
 * callsite.h and DESIGN.md section 11.1).
 */
#include "callsite.h"

/* The index of the first offset >= x in pcs[0..n), n when none. */
static size_t jl_lower_bound(const uint32_t *pcs, size_t n, uint32_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pcs[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

long jl_callsite_desc(const uint32_t *pcs, size_t n, uint32_t ret_off, uint32_t call_len)
{
    if (!pcs || !n || call_len == 0 || call_len > ret_off)
        return -1;
    size_t i = jl_lower_bound(pcs, n, ret_off);
    if (i < n && pcs[i] == ret_off)
        return (long)ret_off;
    /* the last record at or before the call's first byte */
    size_t j = jl_lower_bound(pcs, n, ret_off - call_len + 1);
    return j ? (long)pcs[j - 1] : -1;
}
