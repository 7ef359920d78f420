/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * size.c: byte sizes written for people.
 *
 * Configuration and flags take sizes like "512MB", "1GiB" or "4096". The
 * grammar is:
 *
 *     [space] digits [space] [unit] [space]
 *
 * where unit is one of B, K, KB, KiB, M, MB, MiB, G, GB, GiB, T, TB, TiB, P,
 * PB, PiB in any case. KB, MB, GB, TB, PB are powers of 1000; KiB, MiB, GiB,
 * TiB, PiB and the bare K, M, G, T, P are powers of 1024 (a bare "512M" in a
 * config file means what the operator's tools mean by it). The petabyte
 * units exist so that the node's largest size setting can be written the
 * way it is stated ("4PiB", node/config.h), not as 4096TiB.
 *
 * A space between the number and the unit is accepted ("512 KiB"): that is
 * how tide_size_format, the logs and people write sizes, and it cannot
 * change the value. A space inside the number ("1 000", "1 000MiB") is
 * refused, and the refusal shows the accepted forms: it may be a
 * thousands separator or two values run together, and guessing either
 * would change the byte count.
 *
 * Invariants:
 *   1. A size that parses is exact: fractions ("1.5GiB") are rejected rather
 *      than rounded, so the byte count never depends on a rounding rule.
 *   2. Every rejection (empty, negative, fraction, unknown unit, trailing
 *      text, more than UINT64_MAX bytes) returns TIDE_EINVAL with a message
 *      that quotes the text and says what was expected.
 *   3. tide_size_format() is for reading, not for parsing back: it rounds to
 *      one decimal, and shows the decimal only when the value is not a whole
 *      number of the unit ("512 KiB" is exact, "1.5 GiB" and "1.0 MiB" are
 *      rounded).
 *
 * Never: allocate, or round a size that is parsed.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/err.h"
#include "util/size.h"

#define KIB 1024ULL
#define MIB (KIB * 1024ULL)
#define GIB (MIB * 1024ULL)
#define TIB (GIB * 1024ULL)
#define PIB (TIB * 1024ULL)

static const struct { const char *name; uint64_t mult; } units[] = {
    { "",    1 },            { "b",   1 },
    { "k",   KIB },          { "kib", KIB },  { "kb", 1000ULL },
    { "m",   MIB },          { "mib", MIB },  { "mb", 1000ULL * 1000 },
    { "g",   GIB },          { "gib", GIB },  { "gb", 1000ULL * 1000 * 1000 },
    { "t",   TIB },          { "tib", TIB },  { "tb", 1000ULL * 1000 * 1000 * 1000 },
    { "p",   PIB },          { "pib", PIB },  { "pb", 1000ULL * 1000 * 1000 * 1000 * 1000 },
};

#define UNIT_LIST "B, K, KB, KiB, M, MB, MiB, G, GB, GiB, T, TB, TiB, P, PB or PiB"
/* What a refusal of stray text shows: the forms that are accepted. */
#define ACCEPTED_FORMS "a size is a whole number with no separators inside, then an optional unit, " \
                       "a space before it allowed: 4096, 1000000, 512MB, 1GiB or 512 KiB"

int tide_size_parse(const char *text, uint64_t *out)
{
    const char *p = text, *unit;
    uint64_t value = 0, mult = 0;
    size_t unit_len, i;

    if (text == NULL)
        return tide_err_set(TIDE_EINVAL, "size: no text given");
    while (isspace((unsigned char)*p)) p++;
    if (*p == '\0')
        return tide_err_set(TIDE_EINVAL,
                            "size: empty; expected a byte count such as 4096, 512MB or 1GiB");
    if (*p == '-')
        return tide_err_set(TIDE_EINVAL, "size: '%.64s': a size cannot be negative", text);
    if (!isdigit((unsigned char)*p))
        return tide_err_set(TIDE_EINVAL,
                            "size: '%.64s': position %zu: expected a digit, found '%c'",
                            text, (size_t)(p - text), *p);
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (value > (UINT64_MAX - d) / 10)
            return tide_err_set(TIDE_EINVAL,
                                "size: '%.64s': more than %" PRIu64 " bytes", text, UINT64_MAX);
        value = value * 10 + d;
    }
    if (*p == '.' || *p == ',')
        return tide_err_set(TIDE_EINVAL,
                            "size: '%.64s': position %zu: fractions are not accepted; "
                            "write a whole number of a smaller unit (1536MiB, not 1.5GiB)",
                            text, (size_t)(p - text));
    while (isspace((unsigned char)*p)) p++;
    unit = p;
    while (isalpha((unsigned char)*p)) p++;
    unit_len = (size_t)(p - unit);
    for (i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].name) == unit_len &&
            strncasecmp(unit, units[i].name, unit_len) == 0) {
            mult = units[i].mult;
            break;
        }
    }
    if (mult == 0)
        return tide_err_set(TIDE_EINVAL, "size: '%.64s': unknown unit '%.*s'; expected " UNIT_LIST,
                            text, (int)(unit_len > 16 ? 16 : unit_len), unit);
    while (isspace((unsigned char)*p)) p++;
    if (*p != '\0')
        return tide_err_set(TIDE_EINVAL,
                            "size: '%.64s': position %zu: unexpected '%c' after the size; " ACCEPTED_FORMS,
                            text, (size_t)(p - text), *p);
    if (value > UINT64_MAX / mult)
        return tide_err_set(TIDE_EINVAL,
                            "size: '%.64s': more than %" PRIu64 " bytes", text, UINT64_MAX);
    *out = value * mult;
    return 0;
}

char *tide_size_format(uint64_t bytes, char *out, size_t cap)
{
    static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    uint64_t unit = 1, whole, rem;
    unsigned tenths;
    size_t u = 0;

    if (cap == 0) return out;
    while (u + 1 < sizeof names / sizeof names[0] && bytes / unit >= 1024) {
        unit *= 1024;
        u++;
    }
    whole = bytes / unit;
    rem = bytes % unit;
    if (rem == 0) {
        snprintf(out, cap, "%" PRIu64 " %s", whole, names[u]);
        return out;
    }
    tenths = (unsigned)((double)rem * 10.0 / (double)unit + 0.5);
    if (tenths >= 10) {
        whole++;
        tenths = 0;
    }
    if (whole >= 1024 && u + 1 < sizeof names / sizeof names[0]) {
        /* 1023.96 KiB rounds to 1024.0 KiB: say 1.0 MiB instead. */
        whole /= 1024;
        u++;
    }
    snprintf(out, cap, "%" PRIu64 ".%u %s", whole, tenths, names[u]);
    return out;
}
