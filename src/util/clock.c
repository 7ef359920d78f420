/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock.c: time.
 *
 * Durations and timeouts use CLOCK_MONOTONIC, which never jumps when the
 * wall clock is set; wall-clock time (CLOCK_REALTIME) appears only in log
 * lines, reports and file names. Randomness is in random.c.
 *
 * Invariants:
 *   1. tide_clock_mono_us() never goes backwards within the process.
 *   2. tide_clock_sleep_us() sleeps at least the time asked for: a signal that
 *      interrupts it resumes the sleep with the time remaining.
 *
 * Never: measure a duration as the difference of two wall-clock readings.
 */
#include <errno.h>
#include <time.h>

#include "util/clock.h"

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t tide_clock_mono_ns(void) { return read_ns(CLOCK_MONOTONIC); }
uint64_t tide_clock_mono_us(void) { return read_ns(CLOCK_MONOTONIC) / 1000u; }
uint64_t tide_clock_real_ns(void) { return read_ns(CLOCK_REALTIME); }
uint64_t tide_clock_real_us(void) { return read_ns(CLOCK_REALTIME) / 1000u; }

void tide_clock_real_timespec(struct timespec *out)
{
    clock_gettime(CLOCK_REALTIME, out);
}

void tide_clock_sleep_us(uint64_t us)
{
    struct timespec req, rem;

    req.tv_sec = (time_t)(us / 1000000u);
    req.tv_nsec = (long)(us % 1000000u) * 1000L;
    while (nanosleep(&req, &rem) != 0 && errno == EINTR)
        req = rem;
}
