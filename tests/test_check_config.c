/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_check_config.c: `tided --check-config` and the sample
 * config contrib/tide.cfg that packaging installs as /etc/tide/tide.cfg.
 *
 * --check-config reads and checks the settings as a start would and prints
 * them; these tests hold it to touching nothing else (a data directory that
 * does not exist stays absent; a port already taken still passes), and to
 * failing where a start would: a data_dir whose parent directory is missing
 * fails the check and the start alike, naming the parent. The
 * sample is held to the settings table: it parses, it changes nothing as
 * installed, it names every setting a file may set in its section with its
 * flag and variable (so a new setting without an entry fails here), its
 * #key=value lines are the real defaults, and its examples parse.
 *
 * The config file itself: a FIFO, a device (/dev/zero, a symlink to it)
 * or a directory is refused at once by --check-config and by a start, and
 * a file over 1 MiB too, while a symlink to a regular file and a file of
 * exactly 1 MiB are read.
 *
 * Every tided here runs under `env -i`, so no TIDE_* variable of the
 * caller's reaches it, and under `timeout` (and, outside a sanitizer
 * build, a 2 GiB address-space limit), so a tided that would hang or read
 * without end fails its test instead of holding it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "node/config.h"

#define SAMPLE "contrib/tide.cfg"   /* the tests run from the repository's root */

/* ---- running tided --check-config ------------------------------------------ */

typedef struct run {
    int   status;   /* exit status, -1 when it did not exit */
    char *out;      /* stdout */
    char *err;      /* stderr */
} run;

static void run_free(run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* The shell's bounds on a tided run here: killed after 120 s, so a tided
 * that hangs (on a FIFO) fails its test with status 137 instead of holding
 * it; at most 2 GiB of address space (not under a sanitizer, which maps
 * terabytes of shadow), so one that reads without end (/dev/zero) fails
 * fast instead of taking the machine's memory. */
#define RUN_TIMEOUT "timeout -s KILL 120 "
#define RUN_BOUND (TH_SANITIZER ? "" : "ulimit -v 2097152; ")

/* `env -i ENV tided ARGS` within RUN_TIMEOUT and RUN_BOUND, stderr into a
 * scratch file. */
static void run_tided(const th_scratch *s, const char *env, const char *args, run *r)
{
    char cmd[16384], err[2200];
    int n;

    th_path(err, sizeof err, s->base, "check.err");
    n = snprintf(cmd, sizeof cmd, "%s" RUN_TIMEOUT "env -i %s '%s/tided' %s 2>'%s'", RUN_BOUND, env, th_bin_dir(),
                 args, err);
    assert_true(n > 0 && (size_t)n < sizeof cmd);
    r->status = th_run(cmd, &r->out);
    r->err = th_slurp(err);
}

/* `env -i ENV tided --check-config ARGS` (run_tided). */
static void check_config(const th_scratch *s, const char *env, const char *args, run *r)
{
    char all[12000];
    int n = snprintf(all, sizeof all, "--check-config %s", args);

    assert_true(n > 0 && (size_t)n < sizeof all);
    run_tided(s, env, all, r);
}

/* The line of setting `name` in --check-config's output ("name=value(src)"),
 * copied into `line`; 0 when there is none; fails the test when there are
 * two. */
static int setting_line(const char *out, const char *name, char *line, size_t cap)
{
    size_t nl = strlen(name);
    int found = 0;

    for (const char *p = out; *p; ) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            if (found++) fail_msg("%s is printed twice", name);
            snprintf(line, cap, "%.*s", (int)len, p);
        }
        p += len + (e != NULL);
    }
    return found;
}

/* The value part of a setting line: between '=' and the first '('. */
static void value_of(const char *line, char *out, size_t cap)
{
    const char *eq = strchr(line, '='), *par = eq ? strchr(eq, '(') : NULL;

    if (eq == NULL || par == NULL) fail_msg("not NAME=VALUE(SOURCE): %s", line);
    snprintf(out, cap, "%.*s", (int)(par - eq - 1), eq + 1);
}

static void expect_passed(const run *r, const char *what)
{
    if (r->status != 0 || strstr(r->out, "\ntided --check-config: OK") == NULL)
        fail_msg("%s: expected exit 0 and the OK line, got %d; stdout: %.2000s; stderr: %.2000s", what, r->status,
                 r->out, r->err);
}

/* ---- --check-config ----------------------------------------------------------- */

static void check_config_prints_every_setting_once_and_never_makes_the_store(void **state)
{
    th_scratch *s = *state;
    char args[4400], line[4500];
    run r;

    snprintf(args, sizeof args, "--data-dir '%s' --cache-budget 512MiB", s->dir);
    check_config(s, "TIDE_ADMIN_TOKEN=s3cret-admin", args, &r);
    expect_passed(&r, "a plain check");
    for (int id = 0; id < TIDE_CFG_COUNT; id++)
        if (!setting_line(r.out, tide_config_name(id), line, sizeof line))
            fail_msg("%s is not printed: %s", tide_config_name(id), r.out);
    setting_line(r.out, "cache_budget", line, sizeof line);
    expect_str(line, "cache_budget=512MiB(flag --cache-budget)", "a flag's setting and its source");
    setting_line(r.out, "admin_token", line, sizeof line);
    expect_str(line, "admin_token=set(env TIDE_ADMIN_TOKEN)", "a token, as set");
    setting_line(r.out, "metrics_token", line, sizeof line);
    expect_str(line, "metrics_token=unset(default)", "a token, as unset");
    if (strstr(r.out, "s3cret") || strstr(r.err, "s3cret")) fail_msg("--check-config printed the admin token");
    if (th_count(r.out, "# ") != TIDE_CFG_GROUP_COUNT) fail_msg("expected a '# GROUP' line per group: %s", r.out);
    if (th_exists(s->dir)) fail_msg("--check-config made the data directory %s", s->dir);
    run_free(&r);
}

static void check_config_passes_with_a_port_another_process_listens_on(void **state)
{
    th_scratch *s = *state;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    char args[4400], line[4500], want[64];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    run r;

    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, len), 0);
    assert_int_equal(listen(fd, 1), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    snprintf(args, sizeof args, "--data-dir '%s' --listen 127.0.0.1:%d", s->dir, ntohs(a.sin_port));
    check_config(s, "", args, &r);
    close(fd);
    expect_passed(&r, "a port already taken");
    snprintf(want, sizeof want, "listen=127.0.0.1:%d(flag --listen)", ntohs(a.sin_port));
    setting_line(r.out, "listen", line, sizeof line);
    expect_str(line, want, "the address, not bound");
    run_free(&r);
}

static void check_config_exits_2_naming_a_bad_value_a_bad_file_line_and_an_unknown_flag(void **state)
{
    th_scratch *s = *state;
    static const char *const cases[][3] = {
        { "", "--sweep-interval=9", "--sweep-interval=9: 9 is outside 10..600" },
        { "TIDE_CACHE_BUDGET=12XB", "", "TIDE_CACHE_BUDGET=12XB: not a size" },
        { "", "--config BAD", "bad.cfg:3: [node] cache_age=0: 0 is outside 1..86400" },
        { "", "--cache-bugdet 1GiB", "--cache-bugdet: unknown flag; did you mean --cache-budget?" },
        { "", "--config SKIPPED", "skipped.cfg:2: [limits] memory_limit=1GiB: memory_limit belongs in [node] or "
          "[memory]; tide does not read [limits]" },
        { "", "--cache-arena-segment=3MiB", "--cache-arena-segment=3MiB: 3145728 bytes is not a power of two" },
        { "TIDE_CACHE_ARENA=sometimes", "", "TIDE_CACHE_ARENA=sometimes: not 1/0, true/false, yes/no or on/off" },
        { "", "--cache-arena-reserve 2000", "--cache-arena-reserve=2000: 2000 is outside 0..1024" },
    };
    char args[4400], cfg[2200], skipped[2200];
    run r;

    th_put_file(s->base, "bad.cfg", "[node]\nlisten=127.0.0.1:9\ncache_age=0\n");
    th_path(cfg, sizeof cfg, s->base, "bad.cfg");
    th_put_file(s->base, "skipped.cfg", "[limits]\nmemory_limit=1GiB\n");
    th_path(skipped, sizeof skipped, s->base, "skipped.cfg");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *a = cases[i][1];
        if (strcmp(a, "--config BAD") == 0) snprintf(args, sizeof args, "--config '%s'", cfg);
        else if (strcmp(a, "--config SKIPPED") == 0) snprintf(args, sizeof args, "--config '%s'", skipped);
        else snprintf(args, sizeof args, "%s", a);
        check_config(s, cases[i][0], args, &r);
        if (r.status != 2 || strstr(r.err, cases[i][2]) == NULL || strstr(r.out, "OK") != NULL
            || strstr(r.err, "--check-config: the settings are not valid") == NULL)
            fail_msg("case %zu: expected exit 2 and '%s' on stderr, got %d; stdout: %s; stderr: %s", i, cases[i][2],
                     r.status, r.out, r.err);
        run_free(&r);
    }
}

/* The groups the settings print under are sections: a file that writes
 * memory_limit under [memory], as the startup log shows it, passes and
 * the setting is in force. */
static void check_config_reads_a_setting_under_its_groups_section(void **state)
{
    th_scratch *s = *state;
    char args[2400], cfg[2200];
    run r;

    th_put_file(s->base, "groups.cfg", "[memory]\nmemory_limit=1GiB\n[cache]\ncache_budget=128MiB\n");
    th_path(cfg, sizeof cfg, s->base, "groups.cfg");
    snprintf(args, sizeof args, "--data-dir /tmp/tide-check-config-data --config '%s'", cfg);
    check_config(s, "", args, &r);
    expect_passed(&r, "[memory] memory_limit and [cache] cache_budget");
    expect_contains(r.out, "memory_limit=1GiB(file ", "memory_limit from the file");
    expect_contains(r.out, "cache_budget=128MiB(file ", "cache_budget from the file");
    if (strstr(r.err, "not used by tide") != NULL) fail_msg("a group's section was skipped: %s", r.err);
    run_free(&r);
}

/* A slow request's own bounds act inside h2o's bound of the whole request:
 * values that leave one of them nothing to do pass, with a warning that
 * names both settings and their sources; the defaults warn of nothing. */
static void check_config_warns_when_a_slow_requests_bound_cannot_act(void **state)
{
    th_scratch *s = *state;
    run r;

    check_config(s, "", "--data-dir /tmp/tide-check-config-data", &r);
    expect_passed(&r, "the defaults");
    if (strstr(r.err, "http_request_timeout") != NULL) fail_msg("the defaults should not warn: %s", r.err);
    run_free(&r);
    check_config(s, "TIDE_HTTP_BODY_GRACE=40", "--data-dir /tmp/tide-check-config-data --http-request-timeout 30 "
                 "--http-header-timeout 30", &r);
    expect_passed(&r, "bounds above the request timeout");
    expect_contains(r.err, "http_header_timeout=30 (flag --http-header-timeout) is not below "
                    "http_request_timeout=30 (flag --http-request-timeout): a slow head is closed by the request "
                    "timeout, without a 408", "the head's warning");
    expect_contains(r.err, "http_body_grace=40 (env TIDE_HTTP_BODY_GRACE) is not below http_request_timeout=30",
                    "the grace's warning");
    run_free(&r);
}

/* The memory limit's split and the budget rule are checked as at a start:
 * derived budgets print with their share, explicit ones that may hold more
 * than the high mark fail. */
static void check_config_derives_the_budgets_from_the_memory_limit_and_applies_the_budget_rule(void **state)
{
    th_scratch *s = *state;
    char line[4500], args[2400];
    run r;

    snprintf(args, sizeof args, "--data-dir '%s'", s->dir);
    check_config(s, "TIDE_MEMORY_LIMIT=1GiB", args, &r);
    expect_passed(&r, "a memory limit");
    setting_line(r.out, "cache_budget", line, sizeof line);
    expect_str(line, "cache_budget=214748364(memory_limit 20%, 204.8 MiB)", "the derived node cache budget");
    setting_line(r.out, "memory_limit", line, sizeof line);
    expect_str(line, "memory_limit=1GiB(env TIDE_MEMORY_LIMIT)", "the limit and its source");
    run_free(&r);

    check_config(s, "", "--memory-limit 64MiB --cache-budget 1GiB", &r);
    if (r.status != 2 || strstr(r.err, "cache_budget") == NULL || strstr(r.err, "--cache-budget") == NULL)
        fail_msg("expected exit 2 naming cache_budget and its flag, got %d; stderr: %s", r.status, r.err);
    run_free(&r);
}

/* --help (the man page) states both rules of reading a value: a space
 * before a size's unit is fine, one inside the number is not; a TIDE_*
 * variable set but empty is an error, not unset. And a check holds to
 * the second. */
static void help_states_how_a_size_and_an_empty_variable_are_read_and_the_check_holds_to_it(void **state)
{
    th_scratch *s = *state;
    char *help = NULL, cmd[2400];
    run r;

    snprintf(cmd, sizeof cmd, "'%s/tided' --help", th_bin_dir());
    assert_int_equal(th_run(cmd, &help), 0);
    expect_contains(help, "A space may come\n    between the number and its unit (512 KiB", "--help on a size's space");
    expect_contains(help, "inside the number (1 000) and a fraction (1.5GiB: write 1536MiB) are\n    refused",
                    "--help on a space inside the number");
    expect_contains(help, "A variable\n    that is set but empty (TIDE_MEMORY_LIMIT=, or only blanks) is an error\n"
                    "    naming it, not the default", "--help on an empty variable");
    free(help);
    check_config(s, "TIDE_MEMORY_LIMIT=", "", &r);
    if (r.status != 2 || strstr(r.err, "TIDE_MEMORY_LIMIT is set but empty") == NULL)
        fail_msg("TIDE_MEMORY_LIMIT= should fail the check naming the variable; got %d, stderr: %s", r.status, r.err);
    run_free(&r);
}

/* ---- the config file itself ------------------------------------------------------ */

/* tided (with --check-config when `check`) refuses the config file `path`
 * by exit 2 and a message naming it with `why`, and creates no store. */
static void expect_file_refused(const th_scratch *s, const char *path, int check, const char *why)
{
    char args[4800], want[2400];
    run r;

    snprintf(args, sizeof args, "%s--config '%s' --data-dir '%s' --listen 127.0.0.1:1", check ? "--check-config " : "",
             path, s->dir);
    run_tided(s, "", args, &r);
    snprintf(want, sizeof want, "%s: the config file is %s", path, why);
    if (r.status != 2 || strstr(r.err, want) == NULL || strstr(r.out, "OK") != NULL)
        fail_msg("%s --config %s: expected exit 2 at once and '%s' on stderr, got %d%s; stdout: %.1000s; "
                 "stderr: %.2000s", check ? "--check-config" : "a start", path, want, r.status,
                 r.status == 137 ? " (killed by the timeout)" : "", r.out, r.err);
    if (th_exists(s->dir)) fail_msg("a refused config file %s still let tided create %s", path, s->dir);
    run_free(&r);
}

/* --check-config --config `path` passes, with cache_age=45 read from it. */
static void expect_cache_age_45_from(const th_scratch *s, const char *path, const char *what)
{
    char args[2400], line[4500];
    run r;

    snprintf(args, sizeof args, "--config '%s'", path);
    check_config(s, "", args, &r);
    expect_passed(&r, what);
    setting_line(r.out, "cache_age", line, sizeof line);
    expect_contains(line, "cache_age=45(file ", what);
    run_free(&r);
}

/* A FIFO would block the open until a writer came, /dev/zero would be read
 * without end: tided refuses any config file that is not a regular file,
 * by its type, without waiting or reading; a symlink to a regular file is
 * read. */
static void a_config_file_that_is_no_regular_file_is_refused_at_once_naming_it(void **state)
{
    th_scratch *s = *state;
    char fifo[2200], zero[2200], dir[2200], real[2200], link[2200];

    th_path(fifo, sizeof fifo, s->base, "fifo.cfg");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    th_path(zero, sizeof zero, s->base, "zero.cfg");
    assert_int_equal(symlink("/dev/zero", zero), 0);
    th_path(dir, sizeof dir, s->base, "dir.cfg");
    assert_int_equal(mkdir(dir, 0700), 0);
    expect_file_refused(s, fifo, 1, "a FIFO, not a regular file");
    expect_file_refused(s, fifo, 0, "a FIFO, not a regular file");
    expect_file_refused(s, "/dev/zero", 1, "a character device, not a regular file");
    expect_file_refused(s, zero, 1, "a character device, not a regular file");
    expect_file_refused(s, zero, 0, "a character device, not a regular file");
    expect_file_refused(s, dir, 1, "a directory, not a regular file");

    th_put_file(s->base, "real.cfg", "[node]\ncache_age=45\n");
    th_path(real, sizeof real, s->base, "real.cfg");
    th_path(link, sizeof link, s->base, "link.cfg");
    assert_int_equal(symlink(real, link), 0);
    expect_cache_age_45_from(s, link, "a symlink to a regular file");
}

/* The cap, TIDE_CONFIG_FILE_MAX: a file of exactly 1 MiB is read (its
 * last line counts), one byte more is refused saying the size and the cap. */
static void a_config_file_over_1_MiB_is_refused_and_one_of_1_MiB_is_read(void **state)
{
    th_scratch *s = *state;
    static const char tail[] = "[node]\ncache_age=45\n";
    char path[2200], want[2400];
    size_t size = TIDE_CONFIG_FILE_MAX, pad = size - (sizeof tail - 1);
    char *text = malloc(size + 2);

    assert_non_null(text);
    for (size_t i = 0; i < pad; i += 64) {       /* comment lines of 64 bytes, the last one shorter */
        size_t n = pad - i < 64 ? pad - i : 64;
        memset(text + i, '#', n);
        text[i + n - 1] = '\n';
    }
    memcpy(text + pad, tail, sizeof tail);
    th_path(path, sizeof path, s->base, "big.cfg");
    assert_int_equal(th_write_file(path, text, size), 0);
    expect_cache_age_45_from(s, path, "a config file of exactly 1 MiB, its last line");

    memcpy(text + size, "\n", 2);
    assert_int_equal(th_write_file(path, text, size + 1), 0);
    free(text);
    snprintf(want, sizeof want, "1048577 bytes, more than the 1048576 (1 MiB) tided reads");
    expect_file_refused(s, path, 1, want);
}

/* An XRP Ledger node's rippled.cfg with online_delete=512 (ledgers): taken
 * for 512 objects it deleted what rippled's operator meant to keep. Both
 * the check and a start refuse it, naming the line and Tide's own key with
 * its unit, and create no store; Tide's own key beside it runs. */
static void rippleds_online_delete_fails_the_check_and_the_start_naming_tides_own_key(void **state)
{
    th_scratch *s = *state;
    char cfg[2200], args[4800], line[4500], want[2600];
    run r;

    th_put_file(s->base, "rippled.cfg", "[server]\nport_peer\n[node_db]\ntype=NuDB\nonline_delete=512\n"
                "advisory_delete=0\n");
    th_path(cfg, sizeof cfg, s->base, "rippled.cfg");
    snprintf(want, sizeof want, "%s:5: [node_db] online_delete=512 is rippled's: it counts the ledgers rippled keeps, "
             "while tide's online_delete counts objects written into the newest generation, so tide does not read "
             "it. Say what tide should do: [node_db] online_delete_objects=N (objects", cfg);
    for (int check = 1; check >= 0; check--) {
        snprintf(args, sizeof args, "%s--config '%s' --data-dir '%s' --listen 127.0.0.1:1",
                 check ? "--check-config " : "", cfg, s->dir);
        run_tided(s, "", args, &r);
        if (r.status != 2 || strstr(r.err, want) == NULL)
            fail_msg("%s: expected exit 2 and '%s', got %d; stderr: %s", check ? "--check-config" : "a start", want,
                     r.status, r.err);
        if (th_exists(s->dir)) fail_msg("a refused rippled online_delete let tided create %s", s->dir);
        run_free(&r);
    }
    th_put_file(s->base, "rippled.cfg", "[node_db]\ntype=NuDB\nonline_delete=512\nonline_delete_objects=1000000\n");
    snprintf(args, sizeof args, "--config '%s'", cfg);
    check_config(s, "", args, &r);
    expect_passed(&r, "rippled's online_delete beside tide's online_delete_objects");
    setting_line(r.out, "online_delete", line, sizeof line);
    snprintf(want, sizeof want, "online_delete=1000000(file %s:4)", cfg);
    expect_str(line, want, "tide's own key, not rippled's");
    run_free(&r);
}

/* tided makes the data directory, never its parents: a data_dir under a
 * directory that does not exist fails the check and the start alike,
 * naming the parent, before any line says a store will be created there;
 * nothing is made. A data_dir that is a file fails too. */
static void a_data_dir_whose_parent_is_missing_fails_the_check_and_the_start_naming_the_parent(void **state)
{
    th_scratch *s = *state;
    char missing[2200], data[2400], file[2200], args[4800], want[8000];
    run r;

    th_path(missing, sizeof missing, s->base, "missing");
    snprintf(data, sizeof data, "%s/sub/data", missing);
    snprintf(want, sizeof want, "data_dir=%s (flag --data-dir): its parent directory %s/sub does not exist; tided "
             "creates the data directory but not its parents: mkdir -p %s/sub", data, missing, missing);
    for (int i = 0; i < 3; i++) {
        static const char *const modes[] = { "--check-config", "", "--online-delete 1000" };
        snprintf(args, sizeof args, "%s --data-dir '%s' --listen 127.0.0.1:1", modes[i], data);
        run_tided(s, "", args, &r);
        if (r.status != 2 || strstr(r.err, want) == NULL || strstr(r.out, "OK") != NULL
            || strstr(r.err, "a new store will be created") != NULL)
            fail_msg("%s: expected exit 2 and '%s' before any word of a new store, got %d; stdout: %.500s; "
                     "stderr: %.2000s", i ? "a start" : "--check-config", want, r.status, r.out, r.err);
        if (th_exists(missing)) fail_msg("tided made %s", missing);
        run_free(&r);
    }
    th_put_file(s->base, "file", "not a directory\n");
    th_path(file, sizeof file, s->base, "file");
    snprintf(args, sizeof args, "--data-dir '%s'", file);
    check_config(s, "", args, &r);
    snprintf(want, sizeof want, "data_dir=%s (flag --data-dir) is not a directory", file);
    if (r.status != 2 || strstr(r.err, want) == NULL)
        fail_msg("a data_dir that is a file: expected exit 2 and '%s', got %d; stderr: %s", want, r.status, r.err);
    run_free(&r);
}

static void run_check_in_group(void *arg, int fd)
{
    char cmd[4096];

    snprintf(cmd, sizeof cmd, "env -i '%s/tided' --check-config --data-dir /nonexistent-tide-data >&%d 2>&1",
             th_bin_dir(), fd);
    (void)arg;
    _exit(system(cmd) == 0 ? 0 : 1);
}

/* In a memory cgroup of 512 MiB (systemd's MemoryMax=) the limit is the
 * cgroup's and the budgets derive from it. */
static void check_config_takes_the_cgroups_limit_and_splits_it(void **state)
{
    char dir[320], got[16384], want[400];
    int status;

    (void)state;
    th_cgroup_v1("tide-check-config", 512ull << 20, dir, sizeof dir);
    status = th_cgroup_child(dir, run_check_in_group, NULL, got, sizeof got);
    if (status != 0) fail_msg("--check-config in the group exited %d: %s", status, got);
    snprintf(want, sizeof want, "\nmemory_limit=512MiB(cgroup v1 %s)\n", dir);
    expect_contains(got, want, "the cgroup's limit with its source");
    expect_contains(got, "\ncache_budget=107374182(memory_limit 20%, 102.4 MiB)\n", "the budget derived from it");
}

/* ---- the sample ----------------------------------------------------------------- */

/* One key line of the sample: "#key=value" (a default) or "#   Example:
 * key=value", in `section`, at `line`. */
typedef struct sample_key {
    char name[64], value[256], section[32];
    int  example, line;
} sample_key;

typedef struct sample {
    sample_key keys[128];
    int        n;
    char      *text;
} sample;

/* The setting whose config file key is `key` (tide_config_file_key: its
 * name, or the name with its unit), or -1. */
static int setting_of_key(const char *key)
{
    for (int id = 0; id < TIDE_CFG_COUNT; id++)
        if (tide_config_file_key(id) && strcmp(key, tide_config_file_key(id)) == 0) return id;
    return -1;
}

/* Read the sample's key lines (and its text); fails on an uncommented
 * key=value, which would change a node's settings as installed. */
static void sample_read(sample *sm)
{
    char *copy, *save = NULL, section[32] = "";
    int lineno = 0;

    memset(sm, 0, sizeof *sm);
    sm->text = th_slurp(SAMPLE);
    copy = strdup(sm->text);
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        sample_key *k = &sm->keys[sm->n];
        char *p = l;
        lineno++;
        if (l[0] == '[') { sscanf(l, "[%31[a-z_]]", section); continue; }
        if (l[0] != '#') {
            if (strchr(l, '=')) fail_msg(SAMPLE ": a setting is not commented out: %s", l);
            continue;
        }
        p++;
        if (strncmp(p, "   Example: ", 12) == 0) p += 12, k->example = 1;
        if (sscanf(p, "%63[a-z_]=%255s", k->name, k->value) != 2 || p[strlen(k->name)] != '=') continue;
        snprintf(k->section, sizeof k->section, "%s", section);
        k->line = lineno;
        if (++sm->n == 128) fail_msg(SAMPLE ": more than 128 key lines");
    }
    free(copy);
}

/* The sample with its default lines uncommented (and the examples too
 * when `examples`), into the scratch directory; its path into `out`. */
static void sample_uncommented(const th_scratch *s, int examples, char *out, size_t cap)
{
    char cmd[8192], *o = NULL;

    th_path(out, cap, s->base, examples ? "examples.cfg" : "defaults.cfg");
    snprintf(cmd, sizeof cmd, "sed -E 's/^#([a-z_]+=)/\\1/%s' " SAMPLE " >'%s'",
             examples ? "; s/^#   Example: ([a-z_]+=)/\\1/" : "", out);
    assert_int_equal(th_run(cmd, &o), 0);
    free(o);
}

static void the_sample_config_passes_check_config_and_changes_nothing_as_installed(void **state)
{
    th_scratch *s = *state;
    run with, without;
    char *a, *b;

    check_config(s, "", "--config " SAMPLE, &with);
    expect_passed(&with, "the sample as installed");
    check_config(s, "", "", &without);
    expect_passed(&without, "no config at all");
    /* the same lines but the last, which names the file */
    a = strstr(with.out, "tided --check-config: OK");
    b = strstr(without.out, "tided --check-config: OK");
    if (a - with.out != b - without.out || memcmp(with.out, without.out, (size_t)(a - with.out)) != 0)
        fail_msg("the sample as installed changed a setting:\n%s\n--- without it:\n%s", with.out, without.out);
    run_free(&with);
    run_free(&without);
}

static void the_sample_names_every_file_setting_once_in_its_section_with_its_flag_and_variable(void **state)
{
    sample sm;

    (void)state;
    sample_read(&sm);
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        const char *section = tide_config_section(id);
        const char *name = section ? tide_config_file_key(id) : tide_config_name(id);
        char heading[80], key[96];
        const char *block, *end, *flag;
        int seen = 0;

        for (int i = 0; i < sm.n; i++) {
            if (strcmp(sm.keys[i].name, name) != 0) continue;
            seen++;
            if (section == NULL) fail_msg(SAMPLE ":%d: %s is env-only, not a file key", sm.keys[i].line, name);
            if (strcmp(sm.keys[i].section, section) != 0)
                fail_msg(SAMPLE ":%d: %s is under [%s], not [%s]", sm.keys[i].line, name, sm.keys[i].section, section);
        }
        if (section == NULL) continue;
        if (seen != 1) fail_msg(SAMPLE ": %s (a [%s] key) has %d entries, not one", name, section, seen);
        /* its comment block: from "# name" to its key line */
        snprintf(heading, sizeof heading, "\n# %s\n", name);
        block = strstr(sm.text, heading);
        if (block == NULL) fail_msg(SAMPLE ": no '# %s' heading before its key", name);
        snprintf(key, sizeof key, "#%s=", name);
        end = strstr(block, key);
        snprintf(key, sizeof key, "#   Example: %s=", name);
        if (end == NULL || (strstr(block, key) && strstr(block, key) < end)) end = strstr(block, key);
        if (end == NULL) fail_msg(SAMPLE ": no key line after the heading of %s", name);
        char *piece = strndup(block, (size_t)(end - block));
        /* a setting without a flag says so */
        flag = tide_config_flag(id) ? tide_config_flag(id) : "No flag";
        if (strstr(piece, flag) == NULL || strstr(piece, tide_config_env(id)) == NULL)
            fail_msg(SAMPLE ": the block of %s does not name '%s' and %s:%s", name, flag, tide_config_env(id),
                     piece);
        free(piece);
    }
    for (int i = 0; i < sm.n; i++)
        if (setting_of_key(sm.keys[i].name) < 0)
            fail_msg(SAMPLE ":%d: %s is no setting", sm.keys[i].line, sm.keys[i].name);
    free(sm.text);
}

/* Uncommented, every #key=value line gives the value tided has without
 * it (both at node_size medium, which the preset lines show): the sample's
 * defaults are the real ones. */
static void the_samples_defaults_uncommented_parse_and_are_the_defaults_in_force(void **state)
{
    th_scratch *s = *state;
    char cfg[2200], args[2400], mine[4500], theirs[4500], v1[4200], v2[4200];
    run with, without;
    sample sm;
    int compared = 0;

    sample_read(&sm);
    sample_uncommented(s, 0, cfg, sizeof cfg);
    snprintf(args, sizeof args, "--node-size medium --config '%s'", cfg);
    check_config(s, "", args, &with);
    expect_passed(&with, "the defaults uncommented");
    check_config(s, "", "--node-size medium", &without);
    expect_passed(&without, "no config, medium");
    for (int i = 0; i < sm.n; i++) {
        const char *name;
        if (sm.keys[i].example) continue;
        if (setting_of_key(sm.keys[i].name) < 0)
            fail_msg(SAMPLE ":%d: %s is no setting", sm.keys[i].line, sm.keys[i].name);
        name = tide_config_name(setting_of_key(sm.keys[i].name));    /* --check-config prints the names */
        if (!setting_line(with.out, name, mine, sizeof mine) || !setting_line(without.out, name, theirs, sizeof theirs))
            fail_msg("%s is not printed", name);
        value_of(mine, v1, sizeof v1);
        value_of(theirs, v2, sizeof v2);
        if (strcmp(v1, v2) != 0)
            fail_msg(SAMPLE ":%d: %s=%s is shown as the default, but the default is %s", sm.keys[i].line,
                     sm.keys[i].name, sm.keys[i].value, theirs);
        if (strstr(mine, "(file ") == NULL) fail_msg("%s was not read from the file: %s", sm.keys[i].name, mine);
        compared++;
    }
    if (compared < 30) fail_msg("expected 30 or more default lines in the sample, compared %d", compared);
    run_free(&with);
    run_free(&without);
    free(sm.text);
}

/* The examples too; the token files' examples name files of /etc/tide
 * that a test machine has not got, so they point at a scratch token
 * (chmod 600, as tided demands) instead. */
static void the_samples_examples_uncommented_parse_too(void **state)
{
    th_scratch *s = *state;
    char cfg[2200], token[2200], cmd[8192], args[2400], *o = NULL;
    run r;

    sample_uncommented(s, 1, cfg, sizeof cfg);
    th_put_file(s->base, "token", "s3cret-token\n");
    th_path(token, sizeof token, s->base, "token");
    assert_int_equal(chmod(token, 0600), 0);
    snprintf(cmd, sizeof cmd, "sed -i -E 's#^(metrics_token_file|admin_token_file)=.*#\\1=%s#' '%s'", token, cfg);
    assert_int_equal(th_run(cmd, &o), 0);
    free(o);
    snprintf(args, sizeof args, "--config '%s'", cfg);
    check_config(s, "", args, &r);
    expect_passed(&r, "the defaults and the examples uncommented");
    expect_contains(r.out, "\nadmin_token=set(", "the admin token read from the example's file");
    if (strstr(r.out, "s3cret") || strstr(r.err, "s3cret")) fail_msg("--check-config printed a token");
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(check_config_prints_every_setting_once_and_never_makes_the_store,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(check_config_passes_with_a_port_another_process_listens_on,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(check_config_exits_2_naming_a_bad_value_a_bad_file_line_and_an_unknown_flag,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(check_config_reads_a_setting_under_its_groups_section, th_scratch_setup,
                                        th_scratch_teardown),
        cmocka_unit_test_setup_teardown(check_config_warns_when_a_slow_requests_bound_cannot_act, th_scratch_setup,
                                        th_scratch_teardown),
        cmocka_unit_test_setup_teardown(
            check_config_derives_the_budgets_from_the_memory_limit_and_applies_the_budget_rule,
            th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(
            help_states_how_a_size_and_an_empty_variable_are_read_and_the_check_holds_to_it, th_scratch_setup,
            th_scratch_teardown),
        cmocka_unit_test_setup_teardown(a_config_file_that_is_no_regular_file_is_refused_at_once_naming_it,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(a_config_file_over_1_MiB_is_refused_and_one_of_1_MiB_is_read,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(rippleds_online_delete_fails_the_check_and_the_start_naming_tides_own_key,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(
            a_data_dir_whose_parent_is_missing_fails_the_check_and_the_start_naming_the_parent, th_scratch_setup,
            th_scratch_teardown),
        cmocka_unit_test_teardown(check_config_takes_the_cgroups_limit_and_splits_it, th_teardown),
        cmocka_unit_test_setup_teardown(the_sample_config_passes_check_config_and_changes_nothing_as_installed,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test(the_sample_names_every_file_setting_once_in_its_section_with_its_flag_and_variable),
        cmocka_unit_test_setup_teardown(the_samples_defaults_uncommented_parse_and_are_the_defaults_in_force,
                                        th_scratch_setup, th_scratch_teardown),
        cmocka_unit_test_setup_teardown(the_samples_examples_uncommented_parse_too, th_scratch_setup,
                                        th_scratch_teardown),
    };
    return th_run_group("check_config", tests, NULL, NULL, th_teardown);
}
