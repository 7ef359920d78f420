/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * utf8.c: one well-formed UTF-8 sequence at a time, for the writers of
 * JSON (the log's json format, the server's answers), which must not pass
 * on bytes a JSON reader refuses.
 *
 * Invariants:
 *   1. A sequence accepted here decodes to one code point of U+0000 to
 *      U+10FFFF that is no surrogate, written in its shortest form.
 *
 * Never: read past `left` bytes.
 */
#include <stdint.h>

#include "util/utf8.h"

size_t tide_utf8_seq(const unsigned char *s, size_t left)
{
    unsigned char c = s[0];
    uint32_t cp;
    size_t n;

    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07;
    else return 0;
    if (left < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}
