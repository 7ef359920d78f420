/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hex.c: hexadecimal keys and values.
 *
 * Keys reach Tide as hex on the command line and in URLs, so a bad one must
 * be reported precisely: tide_hex_decode() names the position (counting from
 * 0) of the first character it cannot use, and shows that character.
 *
 * Invariants:
 *   1. Decoding checks everything before writing anything: on failure `out`
 *      and *len are untouched.
 *   2. The checks run in a fixed order, so the same text always gives the
 *      same message: odd length, then too long for `cap`, then the first bad
 *      digit from the left.
 *   3. Encoding is lower-case and always NUL-terminated.
 *
 * Never: allocate: the caller gives every buffer.
 */
#include <string.h>

#include "util/err.h"
#include "util/hex.h"

int tide_hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int tide_hex_decode(const char *hex, void *out, size_t cap, size_t *len)
{
    unsigned char *o = out;
    size_t n, i;

    if (hex == NULL)
        return tide_err_set(TIDE_EINVAL, "hex: no text given");
    n = strlen(hex);
    if (n % 2 != 0)
        return tide_err_set(TIDE_EINVAL,
                            "hex: odd length %zu: the digit at position %zu has no pair "
                            "(two digits make one byte)", n, n - 1);
    if (n / 2 > cap)
        return tide_err_set(TIDE_EINVAL,
                            "hex: too long: %zu digits make %zu bytes, at most %zu fit; "
                            "position %zu is the first digit past the limit",
                            n, n / 2, cap, cap * 2);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)hex[i];
        if (tide_hex_digit(c) >= 0) continue;
        if (c > 0x20 && c < 0x7f)
            return tide_err_set(TIDE_EINVAL,
                                "hex: position %zu: '%c' is not a hexadecimal digit", i, c);
        return tide_err_set(TIDE_EINVAL,
                            "hex: position %zu: byte 0x%02x is not a hexadecimal digit", i, c);
    }
    for (i = 0; i < n; i += 2)
        o[i / 2] = (unsigned char)(tide_hex_digit((unsigned char)hex[i]) << 4 |
                                   tide_hex_digit((unsigned char)hex[i + 1]));
    *len = n / 2;
    return 0;
}

void tide_hex_encode(const void *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = in;
    size_t i;

    for (i = 0; i < len; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 0x0f];
    }
    out[2 * len] = '\0';
}
