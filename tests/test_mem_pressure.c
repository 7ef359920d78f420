/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_mem_pressure.c: PSI and a cgroup's usage and events
 * (src/mem/pressure.c).
 *
 * Most tests write the files a kernel would into a scratch directory (a
 * v1 or v2 cgroup directory, a PSI file) and read them back: good ones
 * give the exact figures, corrupt ones TIDE_ECORRUPT naming file and line,
 * missing optional ones clear has_ flags. Three run on the real machine:
 * /proc/pressure/memory parses; a PSI trigger written to it is refused by
 * this kernel and the error says why; a forked child in a v1 memory group
 * of its own (tests/helpers.c's th_cgroup_v1, removed by the teardown
 * whatever the outcome) reads its group's usage and events.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "mem/pressure.h"
#include "tide/error.h"
#include "util/err.h"

#define MIB (1024ull * 1024ull)

static void scratch(char *root, size_t cap)
{
    if (th_scratch_make(root, cap) != 0) fail_msg("cannot make a scratch directory");
}

/* a == b within the rounding of a two-decimal figure. */
static void expect_pct(double got, double want, const char *what)
{
    if (got < want - 1e-9 || got > want + 1e-9) fail_msg("%s: expected %.4f, got %.4f", what, want, got);
}

/* ---- PSI files ------------------------------------------------------------ */

static const char *const psi_text =
    "some avg10=1.50 avg60=0.25 avg300=12.07 total=123456789\n"
    "full avg10=0.00 avg60=100.00 avg300=3 total=42\n";

static void psi_file_gives_both_lines_exactly(void **state)
{
    char root[2048], path[2100];
    tide_mem_psi p;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "memory.pressure", psi_text);
    snprintf(path, sizeof path, "%s/memory.pressure", root);
    expect_ok(tide_mem_psi_read(path, &p), "a good PSI file");
    expect_pct(p.some.avg10, 1.50, "some avg10");
    expect_pct(p.some.avg60, 0.25, "some avg60");
    expect_pct(p.some.avg300, 12.07, "some avg300");
    expect_u64(p.some.total_us, 123456789, "some total");
    expect_u64(p.has_full, 1, "the full line is there");
    expect_pct(p.full.avg10, 0.0, "full avg10");
    expect_pct(p.full.avg60, 100.0, "full avg60");
    expect_pct(p.full.avg300, 3.0, "full avg300 without decimals");
    expect_u64(p.full.total_us, 42, "full total");

    th_put_file(root, "memory.pressure", "some avg10=0.10 avg60=0.00 avg300=0.00 total=7\n");
    expect_ok(tide_mem_psi_read(path, &p), "a PSI file with only 'some' (an old kernel's system file)");
    expect_u64(p.has_full, 0, "no full line");
    expect_u64(p.some.total_us, 7, "some total");
    expect_pct(p.full.avg60, 0.0, "the missing full line reads as zeros");
}

/* read must fail with `want` on `text`, the message holding path + suffix,
 * and leave *out as it was. */
static void psi_refused(const char *root, const char *text, int want, const char *suffix,
                        const char *what)
{
    char path[2100], part[2200];
    tide_mem_psi p, before;

    memset(&p, 0x5a, sizeof p);
    before = p;
    th_put_file(root, "psi", text);
    snprintf(path, sizeof path, "%s/psi", root);
    expect_error(tide_mem_psi_read(path, &p), want, what);
    snprintf(part, sizeof part, "%s%s", path, suffix);
    expect_contains(tide_last_error(), part, what);
    if (memcmp(&p, &before, sizeof p) != 0) fail_msg("%s: a failed read wrote *out", what);
}

static void corrupt_psi_lines_are_named_by_file_and_line(void **state)
{
    char root[2048];
    tide_mem_psi p;
    (void)state;

    scratch(root, sizeof root);
    psi_refused(root, "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=x avg60=0 avg300=0 total=0\n",
                TIDE_ECORRUPT, ":2:", "a letter for a figure on line 2");
    psi_refused(root, "some avg10=0.00 avg60=0.00 total=0\n", TIDE_ECORRUPT, ":1:", "avg300 missing");
    psi_refused(root, "some avg10=0.00 avg60=0.00 avg300=0.00 total=0 extra\n", TIDE_ECORRUPT, ":1:",
                "text after total");
    psi_refused(root, "some avg10=1. avg60=0.00 avg300=0.00 total=0\n", TIDE_ECORRUPT, ":1:",
                "a point without decimals");
    psi_refused(root, "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", TIDE_ECORRUPT, ": no 'some' line",
                "only a full line");
    psi_refused(root, "", TIDE_ECORRUPT, ": no 'some' line", "an empty file");
    expect_error(tide_mem_psi_read("/nonexistent-tide/psi", &p), TIDE_ENOENT, "a missing PSI file");
}

static void a_file_larger_than_its_buffer_is_corrupt_not_truncated(void **state)
{
    char root[2048], *big;
    size_t cap = 8192, len;
    (void)state;

    /* A valid some line, then more valid full lines than the 1 KiB buffer
     * holds: a truncated read would parse a cut line or miss the end. */
    big = malloc(cap);
    if (big == NULL) fail_msg("malloc");
    len = (size_t)snprintf(big, cap, "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    while (len + 64 < cap)
        len += (size_t)snprintf(big + len, cap - len, "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    scratch(root, sizeof root);
    psi_refused(root, big, TIDE_ECORRUPT, ": larger than", "an 8 KiB PSI file");
    free(big);
}

/* ---- the real machine's PSI ----------------------------------------------- */

static void the_system_psi_file_parses(void **state)
{
    tide_mem_psi p;
    int rc;
    (void)state;

    rc = tide_mem_psi_read(TIDE_MEM_PSI_SYSTEM, &p);
    if (rc == TIDE_ENOENT) th_skip("no %s (a kernel without PSI): %s", TIDE_MEM_PSI_SYSTEM, tide_last_error());
    expect_ok(rc, "reading " TIDE_MEM_PSI_SYSTEM);
    expect_u64(p.has_full, 1, "a memory PSI file has a full line");
    if (p.some.avg10 < 0 || p.some.avg10 > 100 || p.full.avg300 < 0 || p.full.avg300 > 100)
        fail_msg("averages out of 0..100: some avg10 %.2f, full avg300 %.2f", p.some.avg10, p.full.avg300);
    if (p.full.total_us > p.some.total_us)
        fail_msg("full stall %" PRIu64 " us above some stall %" PRIu64 " us", p.full.total_us, p.some.total_us);
}

/* Invalid triggers are refused with a reason; the kernel's own refusal is a
 * 1 s window (kernels >= 6.5, no CAP_SYS_RESOURCE: windows must be
 * multiples of 2 s), and a stall the kernel cannot parse. */
static void invalid_triggers_are_refused_and_say_why(void **state)
{
    int fd = -1, rc;
    (void)state;

    expect_error(tide_mem_psi_trigger_open(TIDE_MEM_PSI_SYSTEM, 0, 2000000, &fd), TIDE_EINVAL,
                 "a stall of 0");
    expect_contains(tide_last_error(), "the stall must be from 1 us to the window", "stall 0");
    expect_error(tide_mem_psi_trigger_open(TIDE_MEM_PSI_SYSTEM, 3000000, 2000000, &fd), TIDE_EINVAL,
                 "a stall above the window");
    expect_error(tide_mem_psi_trigger_open("/nonexistent-tide/pressure", 100000, 2000000, &fd),
                 TIDE_ENOENT, "a missing file");
    expect_u64(fd, (uint64_t)-1, "no descriptor from a failed open");

    /* a window of 100 s: above the kernel's 10 s maximum on every version */
    rc = tide_mem_psi_trigger_open(TIDE_MEM_PSI_SYSTEM, 100000, 100000000, &fd);
    if (rc == TIDE_ENOENT) th_skip("no %s: %s", TIDE_MEM_PSI_SYSTEM, tide_last_error());
    expect_error(rc, TIDE_EINVAL, "the kernel's answer to a 100 s window (its maximum is 10 s)");
    expect_contains(tide_last_error(), TIDE_MEM_PSI_SYSTEM, "the message names the file");
    expect_contains(tide_last_error(), "'some 100000 100000000'", "the message gives the trigger");
    expect_contains(tide_last_error(), strerror(EINVAL), "the message gives the kernel's errno text");
    expect_u64(fd, (uint64_t)-1, "no descriptor from a refused trigger");
}

/* The governor's trigger, "some 200000 2000000" (10% of a 2 s window), is
 * granted where PSI exists, and its descriptor polls. */
static void a_two_second_trigger_is_granted(void **state)
{
    int fd = -1, rc;
    struct pollfd p;
    (void)state;

    rc = tide_mem_psi_trigger_open(TIDE_MEM_PSI_SYSTEM, 200000, 2000000, &fd);
    if (rc == TIDE_ENOENT) th_skip("no %s (a kernel without PSI): %s", TIDE_MEM_PSI_SYSTEM, tide_last_error());
    expect_ok(rc, "the trigger 'some 200000 2000000'");
    if (fd < 0) fail_msg("no descriptor from a granted trigger");
    p = (struct pollfd){ fd, POLLPRI, 0 };
    rc = poll(&p, 1, 0);
    close(fd);
    if (rc < 0) fail_msg("poll(POLLPRI) on the trigger: %s", strerror(errno));
    if (p.revents & (POLLERR | POLLNVAL)) fail_msg("the trigger polls an error: revents %#x", p.revents);
}

/* ---- scratch cgroup directories ------------------------------------------- */

/* A v1 memory.stat holds the group's own figures and the subtree's
 * total_ ones; only the total_ ones count. */
static const char *const v1_stat =
    "cache 9490432\nrss 8146944\ninactive_file 16384\nactive_file 303104\n"
    "total_cache 558338048\ntotal_inactive_file 173211648\ntotal_active_file 1000\n";

static void v1_layout_gives_usage_page_cache_failcnt_and_oom_kill(void **state)
{
    char root[2048];
    tide_mem_cgroup_usage u;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "memory.usage_in_bytes", "314572800\n");
    th_put_file(root, "memory.stat", v1_stat);
    th_put_file(root, "memory.failcnt", "17\n");
    th_put_file(root, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
    expect_ok(tide_mem_cgroup_usage_read(root, 1, &u), "a v1 group");
    expect_u64(u.current_bytes, 314572800, "memory.usage_in_bytes");
    expect_u64(u.page_cache_bytes, 173211648 + 1000, "total_active_file + total_inactive_file");
    expect_u64(u.has_event[TIDE_MEM_EV_MAX], 1, "failcnt read");
    expect_u64(u.events[TIDE_MEM_EV_MAX], 17, "failcnt as the max event");
    expect_u64(u.has_event[TIDE_MEM_EV_OOM_KILL], 1, "oom_kill read");
    expect_u64(u.events[TIDE_MEM_EV_OOM_KILL], 3, "oom_control's oom_kill");
    expect_u64(u.has_event[TIDE_MEM_EV_LOW] + u.has_event[TIDE_MEM_EV_HIGH] + u.has_event[TIDE_MEM_EV_OOM],
               0, "v1 has no low, high or oom counters");
    expect_u64(u.has_psi, 0, "v1 has no memory.pressure");
}

static void v2_layout_gives_usage_page_cache_events_and_pressure(void **state)
{
    char root[2048];
    tide_mem_cgroup_usage u;
    int ev;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "memory.current", "104857600\n");
    th_put_file(root, "memory.stat", "anon 1000\nfile 9000\nactive_file 4096\ninactive_file 8192\n"
                                     "total_active_file 1\n");
    th_put_file(root, "memory.events", "low 1\nhigh 2\nmax 3\noom 4\noom_kill 5\noom_group_kill 6\n");
    th_put_file(root, "memory.pressure", psi_text);
    expect_ok(tide_mem_cgroup_usage_read(root, 2, &u), "a v2 group");
    expect_u64(u.current_bytes, 104857600, "memory.current");
    expect_u64(u.page_cache_bytes, 4096 + 8192, "active_file + inactive_file (not total_active_file)");
    for (ev = 0; ev < TIDE_MEM_EV_COUNT; ev++) {
        expect_u64(u.has_event[ev], 1, tide_mem_event_name(ev));
        expect_u64(u.events[ev], (uint64_t)ev + 1, tide_mem_event_name(ev));
    }
    expect_u64(u.has_psi, 1, "memory.pressure read");
    expect_u64(u.psi.some.total_us, 123456789, "the group's some stall");
    expect_u64(u.psi.full.total_us, 42, "the group's full stall");
}

static void missing_optional_files_leave_their_flags_clear(void **state)
{
    char root[2048];
    tide_mem_cgroup_usage u;
    int ev;
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "v1/memory.usage_in_bytes", "4096\n");
    th_put_file(root, "v1/memory.stat", "total_active_file 1\ntotal_inactive_file 2\n");
    th_put_file(root, "v2/memory.current", "8192\n");
    th_put_file(root, "v2/memory.stat", "active_file 3\ninactive_file 4\n");
    th_put_file(root, "v1old/memory.usage_in_bytes", "4096\n");
    th_put_file(root, "v1old/memory.stat", "total_active_file 1\ntotal_inactive_file 2\n");
    th_put_file(root, "v1old/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
    for (int v = 1; v <= 2; v++) {
        char dir[2100];
        snprintf(dir, sizeof dir, "%s/v%d", root, v);
        memset(&u, 0x5a, sizeof u);
        expect_ok(tide_mem_cgroup_usage_read(dir, v, &u), v == 1 ? "v1 without events" : "v2 without events");
        expect_u64(u.current_bytes, v == 1 ? 4096 : 8192, "usage");
        expect_u64(u.page_cache_bytes, v == 1 ? 3 : 7, "page cache");
        for (ev = 0; ev < TIDE_MEM_EV_COUNT; ev++) {
            expect_u64(u.has_event[ev], 0, tide_mem_event_name(ev));
            expect_u64(u.events[ev], 0, tide_mem_event_name(ev));
        }
        expect_u64(u.has_psi, 0, "no memory.pressure");
    }
    {
        char dir[2100];
        snprintf(dir, sizeof dir, "%s/v1old", root);
        expect_ok(tide_mem_cgroup_usage_read(dir, 1, &u), "an older kernel's oom_control without oom_kill");
        expect_u64(u.has_event[TIDE_MEM_EV_OOM_KILL], 0, "no oom_kill line: not counted");
    }
}

/* usage_read of root/sub must fail with `want` naming `file_line` (relative
 * to root/sub) and leave *out as it was. */
static void usage_refused(const char *root, const char *sub, int version, int want,
                          const char *file_line, const char *what)
{
    char dir[2100], part[2300];
    tide_mem_cgroup_usage u, before;

    snprintf(dir, sizeof dir, "%s/%s", root, sub);
    memset(&u, 0x5a, sizeof u);
    before = u;
    expect_error(tide_mem_cgroup_usage_read(dir, version, &u), want, what);
    snprintf(part, sizeof part, "%s/%s", dir, file_line);
    expect_contains(tide_last_error(), part, what);
    if (memcmp(&u, &before, sizeof u) != 0) fail_msg("%s: a failed read wrote *out", what);
}

static void corrupt_lines_name_file_and_line_and_a_missing_usage_file_is_enoent(void **state)
{
    char root[2048];
    (void)state;

    scratch(root, sizeof root);
    th_put_file(root, "a/memory.current", "12x4\n");
    usage_refused(root, "a", 2, TIDE_ECORRUPT, "memory.current:1:", "memory.current of '12x4'");

    th_put_file(root, "b/memory.current", "4096\n");
    th_put_file(root, "b/memory.stat", "anon 1\nactive_file 2\ninactive_file\n");
    usage_refused(root, "b", 2, TIDE_ECORRUPT, "memory.stat:3:", "a count missing on line 3");

    th_put_file(root, "c/memory.current", "4096\n");
    th_put_file(root, "c/memory.stat", "anon 1\nactive_file 2\n");
    usage_refused(root, "c", 2, TIDE_ECORRUPT, "memory.stat: no 'inactive_file' line", "inactive_file absent");

    th_put_file(root, "d/memory.current", "4096\n");
    th_put_file(root, "d/memory.stat", "active_file 2\ninactive_file 3\n");
    th_put_file(root, "d/memory.events", "low 0\nhigh -1\n");
    usage_refused(root, "d", 2, TIDE_ECORRUPT, "memory.events:2:", "a negative event count");

    th_put_file(root, "e/memory.current", "4096\n");
    th_put_file(root, "e/memory.stat", "active_file 2\ninactive_file 3\n");
    th_put_file(root, "e/memory.pressure", "some avg10=0 avg60=0 avg300=0\n");
    usage_refused(root, "e", 2, TIDE_ECORRUPT, "memory.pressure:1:", "a PSI line without total");

    th_put_file(root, "f/memory.usage_in_bytes", "4096\n");
    th_put_file(root, "f/memory.stat", v1_stat);
    th_put_file(root, "f/memory.failcnt", "many\n");
    usage_refused(root, "f", 1, TIDE_ECORRUPT, "memory.failcnt:1:", "failcnt of 'many'");

    th_put_file(root, "g/memory.usage_in_bytes", "4096\n");
    th_put_file(root, "g/memory.stat", v1_stat);
    th_put_file(root, "g/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3 4\n");
    usage_refused(root, "g", 1, TIDE_ECORRUPT, "memory.oom_control:3:", "two counts on a line");

    th_put_file(root, "h/memory.stat", v1_stat);
    usage_refused(root, "h", 1, TIDE_ENOENT, "memory.usage_in_bytes", "v1 without a usage file");
    th_put_file(root, "i/memory.stat", "active_file 1\ninactive_file 1\n");
    usage_refused(root, "i", 2, TIDE_ENOENT, "memory.current", "v2 without a usage file");
    usage_refused(root, "no-such-group", 2, TIDE_ENOENT, "memory.current", "a removed group");
    {
        tide_mem_cgroup_usage u;
        expect_error(tide_mem_cgroup_usage_read(root, 3, &u), TIDE_EINVAL, "version 3");
        expect_contains(tide_last_error(), "cgroup version 3 (1 or 2)", "the message names the version");
    }
}

static void event_names_are_the_metrics_labels(void **state)
{
    (void)state;
    expect_str(tide_mem_event_name(TIDE_MEM_EV_LOW), "low", "low");
    expect_str(tide_mem_event_name(TIDE_MEM_EV_HIGH), "high", "high");
    expect_str(tide_mem_event_name(TIDE_MEM_EV_MAX), "max", "max");
    expect_str(tide_mem_event_name(TIDE_MEM_EV_OOM), "oom", "oom");
    expect_str(tide_mem_event_name(TIDE_MEM_EV_OOM_KILL), "oom_kill", "oom_kill");
    expect_str(tide_mem_event_name(TIDE_MEM_EV_COUNT), "?", "past the end");
    expect_str(tide_mem_event_name(-1), "?", "negative");
}

/* ---- a real v1 group -------------------------------------------------------- */

#define CHILD_TOUCH (16 * MIB)

/* The child, inside the group: touch CHILD_TOUCH bytes (charged to the
 * group), then report what usage_read says of its own group. */
static void child_reads_its_group(void *arg, int fd)
{
    const char *dir = arg;
    tide_mem_cgroup_usage u;
    char line[256];
    volatile char *mem = malloc(CHILD_TOUCH);
    int rc, n;

    if (mem == NULL) _exit(5);
    for (size_t i = 0; i < CHILD_TOUCH; i += 4096) mem[i] = 1;
    memset(&u, 0, sizeof u);
    rc = tide_mem_cgroup_usage_read(dir, 1, &u);
    n = snprintf(line, sizeof line, "%d %" PRIu64 " %" PRIu64 " %d %d %d\n%s\n", rc, u.current_bytes,
                 u.page_cache_bytes, u.has_event[TIDE_MEM_EV_MAX], u.has_event[TIDE_MEM_EV_OOM_KILL],
                 u.has_psi, rc ? tide_last_error() : "");
    if (write(fd, line, (size_t)n) != n) _exit(4);
}

static void a_child_in_a_real_v1_group_reads_its_usage_and_events(void **state)
{
    char dir[256], got[512] = "";
    unsigned long long cur = 0, cache = 0;
    int status, rc = 1, has_max = 0, has_kill = 0, has_psi = 1;
    (void)state;

    th_cgroup_v1("tide-test-pressure", 256 * MIB, dir, sizeof dir);
    status = th_cgroup_child(dir, child_reads_its_group, dir, got, sizeof got);
    if (status != 0) fail_msg("the child did not exit 0 (status %d: 3 = cannot join the group)", status);
    if (sscanf(got, "%d %llu %llu %d %d %d", &rc, &cur, &cache, &has_max, &has_kill, &has_psi) != 6)
        fail_msg("the child reported '%s', expected 'rc current cache has_max has_oom_kill has_psi'", got);
    if (rc != 0) fail_msg("usage_read in the child: %d (%s): %s", rc, tide_strerror(rc), got);
    if (cur < CHILD_TOUCH)
        fail_msg("the group's usage %llu is below the %llu bytes its one task touched", cur, CHILD_TOUCH);
    if (cache > cur) fail_msg("page cache %llu above usage %llu", cache, cur);
    expect_u64(has_max, 1, "memory.failcnt read");
    expect_u64(has_kill, 1, "memory.oom_control's oom_kill read");
    expect_u64(has_psi, 0, "v1: no memory.pressure");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(psi_file_gives_both_lines_exactly),
        cmocka_unit_test(corrupt_psi_lines_are_named_by_file_and_line),
        cmocka_unit_test(a_file_larger_than_its_buffer_is_corrupt_not_truncated),
        cmocka_unit_test(the_system_psi_file_parses),
        cmocka_unit_test(invalid_triggers_are_refused_and_say_why),
        cmocka_unit_test(a_two_second_trigger_is_granted),
        cmocka_unit_test(v1_layout_gives_usage_page_cache_failcnt_and_oom_kill),
        cmocka_unit_test(v2_layout_gives_usage_page_cache_events_and_pressure),
        cmocka_unit_test(missing_optional_files_leave_their_flags_clear),
        cmocka_unit_test(corrupt_lines_name_file_and_line_and_a_missing_usage_file_is_enoent),
        cmocka_unit_test(event_names_are_the_metrics_labels),
        cmocka_unit_test(a_child_in_a_real_v1_group_reads_its_usage_and_events),
    };

    return th_run_group("mem_pressure", tests, NULL, NULL, th_teardown);
}
