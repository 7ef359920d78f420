/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * expect.h: assertions that say what was expected and what came back, for
 * the cmocka tests (include after <cmocka.h>, <inttypes.h> and <string.h>;
 * the store's expect_unchanged, expect_inserted and expect_items after
 * helpers.h too).
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

#define expect_ok(got, what) expect_rc((got), 0, (what))

/* expect_rc, and a failure (want != 0) must say something: a non-empty
 * tide_last_error(). */
#define expect_error(got, want, what) do { \
        int egot_ = (got), ewant_ = (want); \
        const char *emsg_ = tide_last_error(); \
        expect_rc(egot_, ewant_, what); \
        if (ewant_ != 0 && (emsg_ == NULL || *emsg_ == '\0')) \
            fail_msg("%s: returned %d (%s) as expected, but tide_last_error() is empty", what, \
                     ewant_, tide_strerror(ewant_)); \
    } while (0)

/* The store's three files in `dir` are byte-identical to the th_snapshot
 * `sn` (helpers.h). */
#define expect_unchanged(dir, sn, what) do { \
        char udiff_[256]; \
        if (th_snapshot_diff((dir), (sn), udiff_, sizeof udiff_) != 0) \
            fail_msg("%s: expected every file byte-identical, got: %s", what, udiff_); \
    } while (0)

/* Items [from, to) of the fixture formula insert (helpers.h). */
#define expect_inserted(s, from, to, key_size, vmin, vmax, what) do { \
        uint64_t ifailed_ = 0; \
        int irc_ = th_store_insert_items((s), (from), (to), (key_size), (vmin), (vmax), &ifailed_); \
        if (irc_ != 0) \
            fail_msg("%s: insert of item %llu: expected 0, got %d %s: %s", what, \
                     (unsigned long long)ifailed_, irc_, tide_strerror(irc_), tide_last_error()); \
    } while (0)

/* Items [from, to) fetch exactly (helpers.h). */
#define expect_items(s, from, to, key_size, vmin, vmax, what) do { \
        char iwhy_[512]; \
        if (th_store_expect_items((s), (from), (to), (key_size), (vmin), (vmax), iwhy_, \
                                  sizeof iwhy_) != 0) \
            fail_msg("%s: %s", what, iwhy_); \
    } while (0)

/* Close the store *sp, setting *sp to NULL first (so a teardown does not
 * close it again), and expect 0. */
#define expect_closed(sp, what) do { \
        tide_store **csp_ = (sp), *cs_ = *csp_; \
        *csp_ = NULL; \
        expect_ok(tide_store_close(cs_), what); \
    } while (0)

/* ---- the harness's additions (tests/helpers.h's owner) ---- */

#define expect_i64(got, want, what) do { \
        int64_t got_ = (int64_t)(got), want_ = (int64_t)(want); \
        if (got_ != want_) \
            fail_msg("%s: expected %" PRId64 ", got %" PRId64, what, want_, got_); \
    } while (0)

#endif
