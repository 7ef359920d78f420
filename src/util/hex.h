/* SPDX-License-Identifier: BSD-2-Clause */
/* hex.h: hexadecimal keys and values. Pure; thread-safe; allocates nothing. */
#ifndef TIDE_HEX_H
#define TIDE_HEX_H
#include <stddef.h>

/* Decode `hex` (even length, 0-9a-fA-F) into `out` (room for `cap` bytes);
 * *len gets the byte count. TIDE_EINVAL, with tide_last_error() naming the
 * position of the first bad character, for odd length or a bad digit or
 * more than `cap` bytes. */
int tide_hex_decode(const char *hex, void *out, size_t cap, size_t *len);

/* The value of hex digit `c` (0-9a-fA-F), or -1. */
int tide_hex_digit(unsigned char c);

/* Encode `len` bytes as lower-case hex into `out` (2 * len + 1 bytes). */
void tide_hex_encode(const void *in, size_t len, char *out);

#endif
