/*
 * busy.c - the workload of the first per-function answer (README.md's
 * first screen, run.sh's demo): Busy.java's three kinds of work in C, in
 * fixed amounts: counting primes, sorting and hashing, in about that
 * order of energy.  Built with -g, so that `powerapi profile` names its
 * functions with their source lines.
 *
 * Usage: busy [ROUNDS]   (about 0.1 s of CPU per round)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

/* Counts the primes below n by trial division. */
static __attribute__((noipa)) int count_primes(int n)
{
    int count = 0;
    for (int i = 2; i < n; i++) {
        int prime = 1;
        for (int d = 2; (long)d * d <= i; d++)
            if (i % d == 0) {
                prime = 0;
                break;
            }
        count += prime;
    }
    return count;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts arrays of pseudo-random doubles (xorshift). */
static __attribute__((noipa)) double sort_arrays(uint64_t seed, int arrays, int size)
{
    double s = 0, *a = malloc((size_t)size * sizeof(*a));
    uint64_t x = seed;
    for (int k = 0; a && k < arrays; k++) {
        for (int i = 0; i < size; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            a[i] = (double)(x >> 11) * 0x1.0p-53;
        }
        qsort(a, (size_t)size, sizeof(*a), cmp_double);
        s += a[size / 2];
    }
    free(a);
    return s;
}

/* FNV-1a of a buffer, over and over. */
static __attribute__((noipa)) uint64_t hash_blocks(unsigned char *buf, size_t len, int times)
{
    uint64_t h = 0;
    for (int k = 0; k < times; k++) {
        buf[(size_t)k % len] ^= (unsigned char)h;
        h = 1469598103934665603ull;
        for (size_t i = 0; i < len; i++)
            h = (h ^ buf[i]) * 1099511628211ull;
    }
    return h;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    static unsigned char buf[64 * 1024];
    uint64_t s = 0;
    for (int r = 0; r < rounds; r++) {
        s += (uint64_t)count_primes(400000);
        s += (uint64_t)sort_arrays((uint64_t)r + 1, 2, 50000);
        s += hash_blocks(buf, sizeof(buf), 40);
    }
    sink = s;
    printf("%llu\n", (unsigned long long)(s & 0xff));
    return 0;
}
