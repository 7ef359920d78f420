/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_cli_progress.c: the progress line of tide verify, visit and rekey
 * (src/cli/cli_progress.c, linked from the CLI's objects) with a clock the
 * test gives: the rate is done over the time of its own measure, so a
 * second step (verify's nudb.dat after nudb.key) is not divided by the
 * first step's time as well.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "expect.h"

#define MIB (1024u * 1024u)

static void the_rate_is_of_the_measure_since_its_own_start(void **state)
{
    cli_progress p;
    char line[256];

    (void)state;
    cli_progress_start(&p, "verify", CLI_PROGRESS_OFF);
    p.start_us = 1000000;                                       /* the verb began at 1 s */
    cli_progress_format(&p, "step 1/2, nudb.key", 50, 100, "buckets", 9000000, line, sizeof line);
    expect_str(line, "tide verify: step 1/2, nudb.key   50%  50 of 100 buckets", "a count: no rate");
    /* step 1 took 9 s; step 2 begins at 10 s and reads 100 MiB by 11 s */
    cli_progress_restart(&p, 10000000);
    cli_progress_format(&p, "step 2/2, nudb.dat", 100ull * MIB, 200ull * MIB, NULL, 11000000, line, sizeof line);
    expect_contains(line, "tide verify: step 2/2, nudb.dat   50%  100 MiB of 200 MiB  100 MiB/s",
                    "100 MiB in the step's 1 s (before: over the verb's 10 s, 10 MiB/s)");
    /* too soon after the step's start for a rate that means anything */
    cli_progress_format(&p, "step 2/2, nudb.dat", MIB, 200ull * MIB, NULL, 10100000, line, sizeof line);
    if (strstr(line, "/s") != NULL) fail_msg("a rate 0.1 s into the step: %s", line);
    cli_progress_end(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_rate_is_of_the_measure_since_its_own_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
