/*
 * expect.h: assertions that say what was expected and what came back, for
 * the cmocka tests (include after <cmocka.h>, <inttypes.h> and <string.h>).
 * `what` names the step, so a failure reads as a sentence about Tide.
 */
#ifndef TIDE_TEST_EXPECT_H
#define TIDE_TEST_EXPECT_H

#include "tide/error.h"

#define expect_rc(got, want, what) do { \
        int got_ = (got), want_ = (want); \
        if (got_ != want_) \
            fail_msg("%s: expected %d (%s), got %d (%s); last error: '%s'", what, want_, \
                     tide_strerror(want_), got_, tide_strerror(got_), tide_last_error()); \
    } while (0)

#define expect_u64(got, want, what) do { \
        uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want); \
        if (got_ != want_) \
            fail_msg("%s: expected %" PRIu64 ", got %" PRIu64, what, want_, got_); \
    } while (0)

#define expect_str(got, want, what) do { \
        const char *got_ = (got), *want_ = (want); \
        if (got_ == NULL || strcmp(got_, want_) != 0) \
            fail_msg("%s: expected '%s', got '%s'", what, want_, got_ ? got_ : "(null)"); \
    } while (0)

#define expect_contains(text, part, what) do { \
        const char *text_ = (text), *part_ = (part); \
        if (text_ == NULL || strstr(text_, part_) == NULL) \
            fail_msg("%s: expected the text to contain '%s', got '%s'", what, part_, \
                     text_ ? text_ : "(null)"); \
    } while (0)

/* ---- the harness's additions (tests/helpers.h's owner) ---- */

#define expect_i64(got, want, what) do { \
        int64_t got_ = (int64_t)(got), want_ = (int64_t)(want); \
        if (got_ != want_) \
            fail_msg("%s: expected %" PRId64 ", got %" PRId64, what, want_, got_); \
    } while (0)

#endif
