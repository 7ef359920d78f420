/* clock.h: time and randomness. Thread-safe. */
#ifndef TIDE_CLOCK_H
#define TIDE_CLOCK_H
#include <stdint.h>
#include <stddef.h>

/* CLOCK_MONOTONIC in microseconds. */
uint64_t tide_clock_mono_us(void);
/* Fill `buf` from getrandom(2). 0 or TIDE_EIO. */
int tide_random_bytes(void *buf, size_t len);
/* Sleep for `us` microseconds (restarts on EINTR). */
void tide_sleep_us(uint64_t us);

#endif
