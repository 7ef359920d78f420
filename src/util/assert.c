/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * assert.c: the failure path of TIDE_ASSERT. Writes one line to stderr with
 * write(2) (no stdio, no allocation: the heap may be what is broken) and
 * aborts, so a core dump or the test runner shows where.
 *
 * Invariants:
 *   1. tide_assert_fail never returns: abort() follows the line.
 *   2. The line is "tide: invariant broken: EXPR at FILE:LINE in FUNC()",
 *      written with write(2) alone (a short or failed write cuts it short,
 *      and the abort still comes).
 *
 * Never: allocate, use stdio or take a lock: the heap or a lock may be
 *   what is broken.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/assert.h"

static void put(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

void tide_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    char num[16];
    int i = (int)sizeof num - 1;
    num[i] = '\0';
    do { num[--i] = (char)('0' + line % 10); line /= 10; } while (line > 0 && i > 0);
    put("tide: invariant broken: ");
    put(expr);
    put(" at ");
    put(file);
    put(":");
    put(num + i);
    put(" in ");
    put(func);
    put("()\n");
    abort();
}
