/* SPDX-License-Identifier: BSD-2-Clause */
/* clock.h: time. Thread-safe; no allocation; each call is one
 * clock_gettime(2) (a vDSO call, no system call on x86-64 Linux). */
#ifndef TIDE_CLOCK_H
#define TIDE_CLOCK_H
#include <stdint.h>
#include <stddef.h>
#include <time.h>

/* CLOCK_MONOTONIC, for durations and timeouts: never goes backwards. */
uint64_t tide_clock_mono_ns(void);
uint64_t tide_clock_mono_us(void);
/* CLOCK_REALTIME (Unix time), for log lines, reports and names only: it
 * jumps when the wall clock is set, so never measure a duration with it. */
uint64_t tide_clock_real_ns(void);
uint64_t tide_clock_real_us(void);
void tide_clock_real_timespec(struct timespec *out);
/* Sleep for `us` microseconds at least (a signal resumes the sleep with the
 * time remaining). */
void tide_clock_sleep_us(uint64_t us);

#endif
