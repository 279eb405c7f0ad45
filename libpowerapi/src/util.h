/*
 * util.h - the small helpers that every layer shares: hashing, growable
 * arrays and the open-addressing indexes over them, hex digits, name
 * suggestions, JSON and CSV escaping.
 *
 * Not installed, not part of powerapi.h.  The one home of these helpers
 * (issue 26, item 5): the library, its sensors and formulas, profcore/,
 * engines/, the CLI and the jalen agent include this header (it needs only libc)
 * and link the library's objects.  Names are pa__*.
 *
 * All of them are thread-safe (no shared state).  The inline hashes and
 * pa__hexval touch no memory but their arguments: they may be called
 * from a signal handler.  pa__grow and pa__index_reserve allocate and the
 * writers take the FILE's lock: never from a signal handler.
 */
#ifndef PA_UTIL_H
#define PA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------ */
/* Hashing (for open-addressing tables indexed with hash & (cap - 1))   */
/* ------------------------------------------------------------------ */

/* A 64-bit integer key spread over all 64 bits (MurmurHash3's fmix64:
 * every input bit flips about half of the output bits), so that the low
 * bits of pointers, pids and indices make good table slots. */
static inline uint64_t pa__hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Two keys combined into one hash (e.g. a parent index and a function,
 * a key and a line number). */
static inline uint64_t pa__hash_pair(uint64_t a, uint64_t b)
{
    return pa__hash_u64(a ^ pa__hash_u64(b + 0x9e3779b97f4a7c15ull));
}

/* A NUL-terminated string (NULL hashes as ""): FNV-1a, then spread. */
static inline uint64_t pa__hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return pa__hash_u64(h);
}

/* ------------------------------------------------------------------ */
/* Growable arrays                                                     */
/* ------------------------------------------------------------------ */

/* Makes the array *arrp (elem bytes an element, *cap elements) hold at
 * least need elements: the capacity doubles (from first when it is 0)
 * until it does, and the array is reallocated; its contents are kept.
 * Returns 0 (also when it was large enough), or -ENOMEM (allocation
 * failure or size overflow) with *arrp and *cap untouched.  arrp is the
 * address of a pointer of any object type: use PA__GROW. */
int pa__grow(void *arrp, size_t *cap, size_t need, size_t elem, size_t first);
#define PA__GROW(arr, cap, need, first) pa__grow(&(arr), &(cap), (need), sizeof(*(arr)), (first))

/* The hash of entry i of the caller's array (user: the array's owner). */
typedef uint64_t (*pa__index_hash)(const void *user, size_t i);

/* An index over a growable array: slots[*cap] (a power of two, linear
 * probing from hash & (cap - 1)) hold an entry's position + 1, 0 when
 * empty, and are kept at most half full.  Called before the caller adds
 * its entry n, when entries from..n-1 are indexed: if one more would fill
 * more than half, the slots are replaced by twice as many (first when
 * there are none) and entries from..n-1 put back at hash(user, i).
 * Returns 0, or -ENOMEM with the index untouched. */
int pa__index_reserve(int **slots, size_t *cap, size_t first, size_t from, size_t n,
                      pa__index_hash hash, const void *user);

/* ------------------------------------------------------------------ */
/* Hex digits                                                          */
/* ------------------------------------------------------------------ */

/* The value of a hex digit ('0'-'9', 'a'-'f', 'A'-'F'), or -1. */
static inline int pa__hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes 2 * n hex digits of s (either case) into out[n]; -EINVAL (out
 * partly written) at the first character that is not a hex digit,
 * including the NUL of a string that is too short. */
int pa__hex_decode(const char *s, uint8_t *out, size_t n);

/* ------------------------------------------------------------------ */
/* Name suggestions                                                    */
/* ------------------------------------------------------------------ */

/* The candidate nearest to name (NULL-terminated list), for "did you
 * mean ...?": the one at the smallest edit distance (insertions,
 * deletions, substitutions and transpositions of two neighbours count
 * one each), if that distance is at most 2 (0: name is a candidate);
 * the first such on ties.  NULL when none is that close, or for names
 * over 63 bytes. */
const char *pa__suggest(const char *name, const char *const *candidates);

/* ------------------------------------------------------------------ */
/* JSON and CSV                                                        */
/* ------------------------------------------------------------------ */

/* The length of the UTF-8 sequence at p (RFC 3629: no overlong forms,
 * no surrogates, at most U+10FFFF), or 0 when p does not start one (a
 * NUL, a stray continuation byte, a truncated or invalid sequence). */
size_t pa__utf8_len(const unsigned char *p);

/* Writes s (NULL as "") to f as a JSON string (RFC 8259), with its
 * double quotes:
 *   "  -> \"          \  -> \\
 *   U+0000-U+001F and U+007F -> \u00xx (lowercase hex; no \n or \t forms)
 *   <  -> \u003c      (so that the text is safe inside an HTML <script>)
 *   valid UTF-8 sequences (pa__utf8_len) are copied as they are;
 *   every other byte >= 0x80 -> \ufffd (one per byte), so the output is
 *   always valid UTF-8 and valid JSON, whatever bytes s holds.
 * Everything else is copied. */
void pa__json_write(FILE *f, const char *s);

/* Writes s (NULL as "") to f as one CSV field (RFC 4180): as it is,
 * unless it holds a comma, a double quote, CR or LF; then between double
 * quotes, each double quote doubled.  Bytes are not changed otherwise. */
void pa__csv_write(FILE *f, const char *s);

#endif
