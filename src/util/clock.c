/*
 * clock.c: time and randomness.
 *
 * Durations and timeouts use CLOCK_MONOTONIC, which never jumps when the
 * wall clock is set; wall-clock time appears only in log lines. Randomness
 * (store salts, the sweeper's jitter) comes from getrandom(2), which blocks
 * only until the kernel's pool is first initialised at boot.
 *
 * Invariants:
 *   1. tide_clock_mono_us() never goes backwards within the process.
 *   2. tide_random_bytes() fills the whole buffer or returns TIDE_EIO with
 *      the reason in tide_last_error(); a short read is continued, never
 *      returned.
 *   3. tide_sleep_us() sleeps at least the time asked for: a signal that
 *      interrupts it resumes the sleep with the time remaining.
 */
#include <errno.h>
#include <sys/random.h>
#include <time.h>

#include "util/clock.h"
#include "util/err.h"

uint64_t tide_clock_mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

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

void tide_sleep_us(uint64_t us)
{
    struct timespec req, rem;

    req.tv_sec = (time_t)(us / 1000000u);
    req.tv_nsec = (long)(us % 1000000u) * 1000L;
    while (nanosleep(&req, &rem) != 0 && errno == EINTR)
        req = rem;
}
