/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * random.c: randomness from the kernel (getrandom) and from a seed
 * (splitmix64, Steele, Lea and Flood's generator as Java's SplittableRandom
 * defines it: a Weyl sequence of step 0x9e3779b97f4a7c15 and a 64-bit
 * finaliser).
 *
 * Invariants:
 *   1. tide_random_bytes() fills the whole buffer or returns TIDE_EIO with
 *      the reason in tide_last_error(); a short read is continued, never
 *      returned.
 *   2. tide_random_next64(&s) == tide_random_mix64(s before the call), and
 *      advances s by exactly the Weyl step: seeded sequences repeat.
 *
 * Never: seed anything that must not be guessed (salts, tokens) from the
 * splitmix64 functions.
 */
#include <errno.h>
#include <sys/random.h>

#include "util/err.h"
#include "util/random.h"

#define WEYL_STEP 0x9e3779b97f4a7c15ull

int tide_random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;
    size_t off = 0;
    ssize_t n;

    while (off < len) {
        n = getrandom(p + off, len - off, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            tide_err_sys(e, "getrandom: %zu of %zu bytes read", off, len);
            return TIDE_EIO;
        }
        off += (size_t)n;
    }
    return 0;
}

uint64_t tide_random_mix64(uint64_t x)
{
    x += WEYL_STEP;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t tide_random_next64(uint64_t *state)
{
    uint64_t x = *state;

    *state = x + WEYL_STEP;
    return tide_random_mix64(x);
}
