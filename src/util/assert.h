/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * assert.h: TIDE_ASSERT, for invariants written down in a file's essay.
 *
 * Unlike assert(3) it stays on in release builds (as Redis' serverAssert
 * does): a broken invariant in a store is a bug that must stop the process
 * before it writes a wrong bucket, not a condition to carry on from. Use it
 * for what the code guarantees, never for what a file or a user supplies
 * (those get an error code).
 */
#ifndef TIDE_ASSERT_H
#define TIDE_ASSERT_H

void tide_assert_fail(const char *expr, const char *file, int line, const char *func)
    __attribute__((noreturn));

#define TIDE_ASSERT(e) \
    ((e) ? (void)0 : tide_assert_fail(#e, __FILE__, __LINE__, __func__))

#endif
