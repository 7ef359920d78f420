/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_mem_cgroup.c: the cgroup memory limit (src/mem/cgroup.c).
 *
 * Most tests build a scratch directory with the layout the module reads
 * (proc/self/cgroup, sys/fs/cgroup[/memory]/...) and pass it as the root.
 * One test runs on the real machine: it makes a v1 memory group with a
 * 200 MiB limit, moves a forked child into it, and has the child report
 * what tide_mem_cgroup_limit(NULL, ...) found through a pipe (tests/helpers.c's
 * th_cgroup_v1 and th_cgroup_child). Its teardown reaps the child and
 * removes the group whatever the outcome.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "mem/cgroup.h"
#include "tide/error.h"
#include "util/err.h"

#define MIB (1024ull * 1024ull)

/* ---- scratch layouts ------------------------------------------------------ */

static void scratch(char *root, size_t cap)
{
    if (th_scratch_make(root, cap) != 0) fail_msg("cannot make a scratch directory");
}

/* What a call must have found: each field, and the directory the limit
 * came from relative to root (NULL: not compared). */
typedef struct want_info {
    uint64_t version, limited, limit, current;
    const char *dir;
} want_info;

static void expect_info(const char *root, const tide_mem_cgroup_limit_info *got, want_info w,
                        const char *what)
{
    char path[2200];

    expect_u64(got->version, w.version, what);
    expect_u64(got->limited, w.limited, what);
    expect_u64(got->limit_bytes, w.limit, what);
    expect_u64(got->current_bytes, w.current, what);
    if (w.dir == NULL) return;
    snprintf(path, sizeof path, "%s/%s", root, w.dir);
    expect_str(got->path, path, what);
}

/* ---- v2 ------------------------------------------------------------------ */

static void v2_limit_at_the_leaf_is_reported_with_its_directory(void **state)
{
    char root[2048];
    tide_mem_cgroup_limit_info info;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "proc/self/cgroup", "0::/a/b\n");
    th_put_file(root, "sys/fs/cgroup/a/memory.max", "max\n");
    th_put_file(root, "sys/fs/cgroup/a/b/memory.max", "104857600\n");
    th_put_file(root, "sys/fs/cgroup/a/b/memory.current", "4096\n");
    expect_ok(tide_mem_cgroup_limit(root, &info), "a v2 leaf with a limit");
    expect_info(root, &info, (want_info){ 2, 1, 100 * MIB, 4096, "sys/fs/cgroup/a/b" },
                "the leaf's limit, usage and directory");
}

static void v2_nearest_limited_ancestor_wins_over_the_ones_above(void **state)
{
    char root[2048];
    tide_mem_cgroup_limit_info info;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "proc/self/cgroup", "0::/a/b/c\n");
    th_put_file(root, "sys/fs/cgroup/a/memory.max", "1073741824\n");
    th_put_file(root, "sys/fs/cgroup/a/b/memory.max", "209715200\n");
    th_put_file(root, "sys/fs/cgroup/a/b/memory.current", "8192\n");
    th_put_file(root, "sys/fs/cgroup/a/b/c/memory.max", "max\n");
    expect_ok(tide_mem_cgroup_limit(root, &info), "a v2 limit two levels up");
    expect_info(root, &info, (want_info){ 2, 1, 200 * MIB, 8192, "sys/fs/cgroup/a/b" },
                "the nearest limit (b's, not a's 1 GiB), b's memory.current and directory");
}

static void v2_max_everywhere_is_unlimited_at_the_leaf(void **state)
{
    char root[2048];
    tide_mem_cgroup_limit_info info;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "proc/self/cgroup", "0::/a/b\n");
    th_put_file(root, "sys/fs/cgroup/a/memory.max", "max\n");
    th_put_file(root, "sys/fs/cgroup/a/b/memory.max", "max\n");
    th_put_file(root, "sys/fs/cgroup/a/b/memory.current", "12288\n");
    expect_ok(tide_mem_cgroup_limit(root, &info), "v2 with max everywhere");
    expect_info(root, &info, (want_info){ 2, 0, 0, 12288, "sys/fs/cgroup/a/b" },
                "unlimited, with the leaf's memory.current and directory");
}

static void v2_garbage_in_memory_max_is_corrupt_naming_the_file(void **state)
{
    char root[2048], want[2200];
    tide_mem_cgroup_limit_info info;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "proc/self/cgroup", "0::/a\n");
    th_put_file(root, "sys/fs/cgroup/a/memory.max", "12x4\n");
    expect_error(tide_mem_cgroup_limit(root, &info), TIDE_ECORRUPT, "memory.max of '12x4'");
    snprintf(want, sizeof want, "%s/sys/fs/cgroup/a/memory.max:1", root);
    expect_contains(tide_last_error(), want, "the message names the file and line");
}

/* ---- v1 ------------------------------------------------------------------ */

static void v1_memory_line_wins_over_the_unified_one_and_gives_the_limit(void **state)
{
    char root[2048];
    tide_mem_cgroup_limit_info info;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "proc/self/cgroup", "5:devices:/\n4:cpu,memory:/tide\n0::/\n");
    th_put_file(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    th_put_file(root, "sys/fs/cgroup/memory/tide/memory.limit_in_bytes", "314572800\n");
    th_put_file(root, "sys/fs/cgroup/memory/tide/memory.usage_in_bytes", "65536\n");
    expect_ok(tide_mem_cgroup_limit(root, &info), "a v1 limit");
    expect_info(root, &info, (want_info){ 1, 1, 300 * MIB, 65536, "sys/fs/cgroup/memory/tide" },
                "v1's limit, memory.usage_in_bytes and directory");
}

static void v1_page_rounded_long_max_up_to_the_root_is_unlimited(void **state)
{
    char root[2048];
    tide_mem_cgroup_limit_info info;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "proc/self/cgroup", "4:memory:/tide\n");
    th_put_file(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    th_put_file(root, "sys/fs/cgroup/memory/tide/memory.limit_in_bytes", "9223372036854771712\n");
    expect_ok(tide_mem_cgroup_limit(root, &info), "v1 unlimited");
    expect_info(root, &info, (want_info){ 1, 0, 0, 0, NULL }, "v1 unlimited; no usage file: unknown");
}

static void no_memory_controller_is_enoent(void **state)
{
    char root[2048];
    tide_mem_cgroup_limit_info info;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "proc/self/cgroup", "5:devices:/\n3:cpu:/x\n");
    expect_error(tide_mem_cgroup_limit(root, &info), TIDE_ENOENT, "no memory line");
    th_put_file(root, "proc/self/cgroup", "0::/a\n");
    expect_error(tide_mem_cgroup_limit(root, &info), TIDE_ENOENT, "a 0:: line but no memory.max");
}

static void a_line_without_two_colons_is_corrupt_naming_the_line(void **state)
{
    char root[2048], want[2200];
    tide_mem_cgroup_limit_info info;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "proc/self/cgroup", "5:devices:/\nnonsense\n");
    expect_error(tide_mem_cgroup_limit(root, &info), TIDE_ECORRUPT, "a bad /proc/self/cgroup");
    snprintf(want, sizeof want, "%s/proc/self/cgroup:2:", root);
    expect_contains(tide_last_error(), want, "the message names the file and line");
}

/* ---- the real machine ---------------------------------------------------- */

/* The child: report what tide_mem_cgroup_limit(NULL, ...) found. */
static void child_reports(void *arg, int fd)
{
    tide_mem_cgroup_limit_info info;
    char line[128];
    int rc, n;

    (void)arg;
    rc = tide_mem_cgroup_limit(NULL, &info);
    n = snprintf(line, sizeof line, "%d %d %d %" PRIu64 "\n", rc, info.version, info.limited,
                 rc == 0 ? info.limit_bytes : 0);
    if (write(fd, line, (size_t)n) != n) _exit(4);
}

static void a_child_in_a_v1_group_of_200_mib_sees_that_limit(void **state)
{
    char dir[256], got[128] = "";
    int status, rc = 0, version = 0, limited = 0;
    unsigned long long limit = 0;
    (void)state;

    th_cgroup_v1("tide-test", 200 * MIB, dir, sizeof dir);
    status = th_cgroup_child(dir, child_reports, NULL, got, sizeof got);
    if (status != 0)
        fail_msg("the child did not exit 0 (status %d: 3 = cannot join the group)", status);
    if (sscanf(got, "%d %d %d %llu", &rc, &version, &limited, &limit) != 4)
        fail_msg("the child reported '%s', expected 'rc version limited bytes'", got);
    expect_ok(rc, "tide_mem_cgroup_limit(NULL) in the child");
    expect_u64(version, 1, "version");
    expect_u64(limited, 1, "limited");
    expect_u64(limit, 200 * MIB, "the group's limit");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(v2_limit_at_the_leaf_is_reported_with_its_directory, th_teardown),
        cmocka_unit_test_teardown(v2_nearest_limited_ancestor_wins_over_the_ones_above, th_teardown),
        cmocka_unit_test_teardown(v2_max_everywhere_is_unlimited_at_the_leaf, th_teardown),
        cmocka_unit_test_teardown(v2_garbage_in_memory_max_is_corrupt_naming_the_file, th_teardown),
        cmocka_unit_test_teardown(v1_memory_line_wins_over_the_unified_one_and_gives_the_limit, th_teardown),
        cmocka_unit_test_teardown(v1_page_rounded_long_max_up_to_the_root_is_unlimited, th_teardown),
        cmocka_unit_test_teardown(no_memory_controller_is_enoent, th_teardown),
        cmocka_unit_test_teardown(a_line_without_two_colons_is_corrupt_naming_the_line, th_teardown),
        cmocka_unit_test_teardown(a_child_in_a_v1_group_of_200_mib_sees_that_limit, th_teardown),
    };

    return cmocka_run_group_tests_name("mem_cgroup", tests, NULL, NULL);
}
