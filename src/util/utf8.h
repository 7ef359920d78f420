/* SPDX-License-Identifier: BSD-2-Clause */
/* utf8.h: well-formed UTF-8. Pure; thread-safe; allocates nothing. */
#ifndef TIDE_UTF8_H
#define TIDE_UTF8_H
#include <stddef.h>

/* The length (1 to 4) of the well-formed UTF-8 sequence at `s`, which has
 * `left` bytes (at least 1), or 0 when the bytes there are not one: RFC
 * 3629, so no overlong form, no surrogate, nothing above U+10FFFF (what
 * jansson accepts). Reads at most 4 bytes, never past `left`. */
size_t tide_utf8_seq(const unsigned char *s, size_t left);

#endif
