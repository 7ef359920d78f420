/* SPDX-License-Identifier: BSD-2-Clause */
/* size.h: byte sizes written for people: "512MB", "1GiB", "4096". */
#ifndef TIDE_SIZE_H
#define TIDE_SIZE_H
#include <stdint.h>
#include <stddef.h>

/* Parse a size: digits, optionally followed by K, KB, KiB, M, MB, MiB, G, GB,
 * GiB, T, TB, TiB, P, PB, PiB (case-insensitive; decimal units are powers of
 * 1000, binary of 1024; a bare K/M/G/T/P is binary) or B. Whitespace around is allowed,
 * and between the number and the unit ("512 KiB"), never inside the number
 * ("1 000" is TIDE_EINVAL, its message showing the accepted forms).
 * Fractions are rejected: "1.5GiB" is TIDE_EINVAL (write "1536MiB"), so every
 * accepted size is an exact byte count with no rounding rule.
 * TIDE_EINVAL (with the reason in tide_last_error()) for anything else,
 * including overflow and negative numbers. */
int tide_size_parse(const char *text, uint64_t *out);

/* "1.5 GiB", "512 KiB", "12 B" into `out` (cap bytes). Returns out.
 * For people, not for parsing back: binary units, one decimal shown only
 * when the value is not a whole number of the unit (then it is rounded). */
char *tide_size_format(uint64_t bytes, char *out, size_t cap);

#endif
