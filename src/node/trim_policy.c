/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trim_policy.c: the text of a trim policy (node.h's TIDE_TRIM_*), read and
 * written: "always", "never", "every:N", "freed:SIZE", "free-pct:P".
 *
 * The node's sweeper decides with the parsed policy (sweeper.c); config.c
 * reads --trim-policy through tide_trim_policy_parse, and describe and the
 * status page write it back with tide_trim_policy_format.
 *
 * Invariants:
 *   1. A policy parse accepts is in its range: every:1..TIDE_TRIM_EVERY_MAX,
 *      freed:1..TIDE_CONFIG_BYTES_MAX, free-pct:1..TIDE_TRIM_FREE_PCT_MAX.
 *   2. format(parse(t)) parses back to the same policy and parameter.
 *
 * Never: accept a policy with trailing text, or a zero parameter.
 */
#include "node/node.h"
#include "node/config.h"            /* TIDE_CONFIG_BYTES_MAX */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/error.h"
#include "util/err.h"
#include "util/size.h"   /* tide_size_parse */

int tide_trim_policy_parse(const char *text, int *policy, uint64_t *param)
{
    const char *colon = strchr(text, ':');
    char *end;
    uint64_t v = 0;

    *param = 0;
    if (strcmp(text, "always") == 0) { *policy = TIDE_TRIM_ALWAYS; return 0; }
    if (strcmp(text, "never") == 0) { *policy = TIDE_TRIM_NEVER; return 0; }
    if (colon == NULL || colon[1] == '\0')
        return tide_err_set(TIDE_EINVAL, "not a trim policy (always, never, every:N, freed:SIZE or free-pct:P)");
    if (strncmp(text, "freed:", 6) == 0) {
        if (tide_size_parse(colon + 1, &v) != 0 || v == 0)
            return tide_err_set(TIDE_EINVAL, "freed:SIZE needs a size above 0, e.g. freed:64MiB");
        if (v > TIDE_CONFIG_BYTES_MAX)
            return tide_err_set(TIDE_EINVAL, "freed:%" PRIu64 " is above freed:4PiB (%" PRIu64 " bytes), "
                                "more than any machine's memory", v, TIDE_CONFIG_BYTES_MAX);
        *policy = TIDE_TRIM_FREED;
    } else {
        errno = 0;
        v = strtoull(colon + 1, &end, 10);
        if (errno || *end != '\0' || colon[1] < '0' || colon[1] > '9')
            return tide_err_set(TIDE_EINVAL, "'%s' is not a whole number", colon + 1);
        if (strncmp(text, "every:", 6) == 0) {
            if (v < 1 || v > TIDE_TRIM_EVERY_MAX)
                return tide_err_set(TIDE_EINVAL, "every:N needs N from 1 to %u", TIDE_TRIM_EVERY_MAX);
            *policy = TIDE_TRIM_EVERY;
        } else if (strncmp(text, "free-pct:", 9) == 0) {
            if (v < 1 || v > TIDE_TRIM_FREE_PCT_MAX)
                return tide_err_set(TIDE_EINVAL, "free-pct:P needs P from 1 to %u", TIDE_TRIM_FREE_PCT_MAX);
            *policy = TIDE_TRIM_FREE_PCT;
        } else {
            return tide_err_set(TIDE_EINVAL, "not a trim policy (always, never, every:N, freed:SIZE or free-pct:P)");
        }
    }
    *param = v;
    return 0;
}

void tide_trim_policy_format(int policy, uint64_t param, char *buf, size_t cap)
{
    static const char *const unit[] = { "", "KiB", "MiB", "GiB", "TiB" };
    uint64_t v = param;
    int u = 0;

    while (v != 0 && v % 1024 == 0 && u < 4) v /= 1024, u++;
    switch (policy) {
    case TIDE_TRIM_NEVER:    snprintf(buf, cap, "never"); break;
    case TIDE_TRIM_EVERY:    snprintf(buf, cap, "every:%" PRIu64, param); break;
    case TIDE_TRIM_FREED:    snprintf(buf, cap, "freed:%" PRIu64 "%s", v, unit[u]); break;
    case TIDE_TRIM_FREE_PCT: snprintf(buf, cap, "free-pct:%" PRIu64, param); break;
    default:                 snprintf(buf, cap, "always"); break;
    }
}
