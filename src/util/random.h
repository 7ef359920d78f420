/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * random.h: randomness, from the kernel and from a seed.
 *
 * tide_random_bytes() is for what must not be guessed or repeated across
 * runs (store salts, tokens, the sweeper's jitter). The splitmix64 pair is
 * for what must repeat exactly from a seed (workloads, test data, bench
 * keys): the same seed gives the same sequence on every machine.
 * Thread-safe: the seeded functions touch only the state passed in.
 */
#ifndef TIDE_RANDOM_H
#define TIDE_RANDOM_H
#include <stddef.h>
#include <stdint.h>

/* Fill `buf` from getrandom(2). 0 or TIDE_EIO (the reason in
 * tide_last_error()). Blocks only until the kernel's pool is first
 * initialised at boot. Allocates nothing. */
int tide_random_bytes(void *buf, size_t len);

/* splitmix64's output function applied to x + 0x9e3779b97f4a7c15: a
 * well-mixed 64-bit value of one input. Pure; O(1). */
uint64_t tide_random_mix64(uint64_t x);

/* The next value of the splitmix64 sequence whose state is *state (which
 * advances by one step). Equal to tide_random_mix64(old *state). O(1). */
uint64_t tide_random_next64(uint64_t *state);

#endif
