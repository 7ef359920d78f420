/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_build.c: the programs are built with the hardening a Debian package
 * gets, read back from the binaries themselves with readelf.
 *
 * For bin/tide, bin/tided, bin/jemalloc/tided (all from $TIDE_BIN_DIR) and
 * this test binary (/proc/self/exe, linked like every test), each of:
 *
 *   1. ELF type DYN with FLAGS_1 PIE: a position-independent executable
 *      (-fPIE -pie), so ASLR moves its code too.
 *   2. A GNU_RELRO segment (-z relro) and BIND_NOW in the dynamic section
 *      (FLAGS BIND_NOW or FLAGS_1 NOW, from -z now): every relocation is
 *      resolved at startup and the GOT is read-only afterwards (full RELRO).
 *   3. __stack_chk_fail imported: some function carries a stack canary
 *      (-fstack-protector-strong; tided's request handlers have arrays).
 *   4. At least one fortified __*_chk function imported besides
 *      __stack_chk_fail (-D_FORTIFY_SOURCE=2: snprintf becomes
 *      __snprintf_chk where the buffer size is known). Not in the
 *      sanitizer builds, which leave FORTIFY out on purpose (the Makefile
 *      says why): there the absence is expected and not checked.
 *
 * A binary without one of these fails with the property and what readelf
 * showed instead. The ALLOC=jemalloc build is made by `make check` before
 * the tests run (except under a sanitizer, which has no jemalloc build).
 *
 * And what the build puts where:
 *
 *   5. tide/version.h's TIDE_VERSION begins with its three numbers
 *      ("1.0.0" of TIDE_VERSION_MAJOR, _MINOR, _PATCH), followed by the end
 *      or a "-" suffix; `tide --version` and `tided --version` print it.
 *   6. src/mem/jemalloc_conf.c is in the jemalloc programs only: their
 *      dynamic symbols export malloc_conf, bin/tide's and bin/tided's do
 *      not (where jemalloc is not the allocator the symbol has no business).
 */
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "expect.h"
#include "helpers.h"
#include "tide/version.h"

static void bin_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", th_bin_dir(), name);
}

/* readelf `opts` on `path`; the output is the caller's to free. */
static char *readelf(const char *opts, const char *path)
{
    char cmd[PATH_MAX + 64];
    char *out;
    int rc;

    snprintf(cmd, sizeof cmd, "readelf %s '%s' 2>&1", opts, path);
    rc = th_run(cmd, &out);
    if (rc == 127)
        fail_msg("readelf not found (binutils, which build-essential brings): '%s'", out);
    if (rc != 0)
        fail_msg("readelf %s %s: exit %d: '%s'", opts, path, rc, out);
    return out;
}

/* The line of `text` holding `tag`, into `line` (for the failure
 * message); 1 when found. */
static int line_with(const char *text, const char *tag, char *line, size_t cap)
{
    const char *p = strstr(text, tag), *b, *e;
    size_t n;

    if (p == NULL) return 0;
    for (b = p; b > text && b[-1] != '\n'; b--) {}
    e = strchr(p, '\n');
    n = e != NULL ? (size_t)(e - b) : strlen(b);
    if (n >= cap) n = cap - 1;
    memcpy(line, b, n);
    line[n] = '\0';
    return 1;
}

/* 1 when the dynamic symbols name a fortified __*_chk other than
 * __stack_chk_fail and __stack_chk_guard; its name goes to `name`. */
static int has_fortified(const char *syms, char *name, size_t cap)
{
    const char *p = syms;

    while ((p = strstr(p, "__")) != NULL) {
        const char *e = p + 2;
        size_t n;
        while ((*e >= 'a' && *e <= 'z') || (*e >= '0' && *e <= '9') || *e == '_') e++;
        n = (size_t)(e - p);
        if (n > 4 && memcmp(e - 4, "_chk", 4) == 0 &&
            strncmp(p, "__stack_chk", 11) != 0) {
            if (n >= cap) n = cap - 1;
            memcpy(name, p, n);
            name[n] = '\0';
            return 1;
        }
        p = e;
    }
    return 0;
}

/* Append one missing property to `buf` (cap bytes), on a line of its own. */
static void add_missing(char *buf, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(buf);
    va_list ap;

    if (n + 3 >= cap) return;
    buf[n++] = '\n';
    buf[n++] = ' ';
    buf[n++] = ' ';
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

/* Every property of the essay on the binary at `path`; one failure names
 * all that are missing. */
static void expect_hardened(const char *path)
{
    char missing[2048] = "", line[256], sym[64];
    char *hdr, *segs, *dyn, *syms;

    if (access(path, X_OK) != 0)
        fail_msg("%s: not found or not executable (make builds it; make check builds "
                 "bin/jemalloc/ too)", path);
    hdr = readelf("-hW", path);
    segs = readelf("-lW", path);
    dyn = readelf("-dW", path);
    syms = readelf("--dyn-syms -W", path);

    if (!line_with(hdr, "Type:", line, sizeof line))
        add_missing(missing, sizeof missing, "no ELF Type line in readelf -h");
    else if (strstr(line, "DYN") == NULL)
        add_missing(missing, sizeof missing, "not a PIE (-fPIE -pie): '%s'", line);
    if (!line_with(dyn, "(FLAGS_1)", line, sizeof line) || strstr(line, "PIE") == NULL)
        add_missing(missing, sizeof missing, "no FLAGS_1 PIE in the dynamic section (-pie)");
    if (strstr(segs, "GNU_RELRO") == NULL)
        add_missing(missing, sizeof missing, "no GNU_RELRO segment (-Wl,-z,relro)");
    {
        char f[256] = "", f1[256] = "";
        int now = (line_with(dyn, "(FLAGS)", f, sizeof f) && strstr(f, "BIND_NOW") != NULL) ||
                  (line_with(dyn, "(FLAGS_1)", f1, sizeof f1) && strstr(f1, " NOW") != NULL) ||
                  strstr(dyn, "(BIND_NOW)") != NULL;
        if (!now)
            add_missing(missing, sizeof missing, "no BIND_NOW nor FLAGS_1 NOW in the dynamic section (-Wl,-z,now): "
                    "FLAGS '%s', FLAGS_1 '%s'", f, f1);
    }
    if (strstr(syms, "__stack_chk_fail") == NULL)
        add_missing(missing, sizeof missing, "__stack_chk_fail not imported (-fstack-protector-strong)");
    if (!TH_SANITIZER && !has_fortified(syms, sym, sizeof sym))
        add_missing(missing, sizeof missing, "no fortified __*_chk function imported (-D_FORTIFY_SOURCE=2 with -O1 or more)");
    else if (!TH_SANITIZER)
        print_message("%s: PIE, full RELRO, stack protector, fortified (%s, ...)\n", path, sym);
    else
        print_message("%s: PIE, full RELRO, stack protector (FORTIFY left out under a "
                      "sanitizer)\n", path);

    free(hdr);
    free(segs);
    free(dyn);
    free(syms);
    if (missing[0] != '\0')
        fail_msg("%s is not built hardened:%s", path, missing);
}

static void bin_tide_is_a_pie_with_full_relro_canaries_and_fortify(void **state)
{
    char p[PATH_MAX];
    (void)state;
    bin_path(p, sizeof p, "tide");
    expect_hardened(p);
}

static void bin_tided_is_a_pie_with_full_relro_canaries_and_fortify(void **state)
{
    char p[PATH_MAX];
    (void)state;
    bin_path(p, sizeof p, "tided");
    expect_hardened(p);
}

static void the_jemalloc_tided_is_hardened_like_the_glibc_one(void **state)
{
    char p[PATH_MAX];
    (void)state;
    if (TH_SANITIZER) th_skip("sanitizer build: no bin/jemalloc/ (the sanitizer's allocator comes first)");
    bin_path(p, sizeof p, "jemalloc/tided");
    expect_hardened(p);
}

static void the_test_programs_are_linked_hardened_too(void **state)
{
    char p[PATH_MAX];
    ssize_t n;
    (void)state;
    n = readlink("/proc/self/exe", p, sizeof p - 1);
    if (n <= 0) fail_msg("readlink /proc/self/exe failed");
    p[n] = '\0';
    expect_hardened(p);
}

static void the_version_text_begins_with_its_three_numbers(void **state)
{
    char nums[64];
    size_t n;
    (void)state;
    n = (size_t)snprintf(nums, sizeof nums, "%d.%d.%d", TIDE_VERSION_MAJOR, TIDE_VERSION_MINOR,
                         TIDE_VERSION_PATCH);
    if (strncmp(TIDE_VERSION, nums, n) != 0 || (TIDE_VERSION[n] != '\0' && TIDE_VERSION[n] != '-'))
        fail_msg("TIDE_VERSION '%s' does not begin with %s and then the end or '-'",
                 TIDE_VERSION, nums);
}

/* `NAME --version` prints "NAME TIDE_VERSION " first. */
static void expect_prints_version(const char *name)
{
    char p[PATH_MAX], cmd[PATH_MAX + 32], want[128];
    char *out;
    int rc;

    bin_path(p, sizeof p, name);
    snprintf(cmd, sizeof cmd, "'%s' --version 2>&1", p);
    rc = th_run(cmd, &out);
    snprintf(want, sizeof want, "%s %s ", name, TIDE_VERSION);
    if (rc != 0 || strncmp(out, want, strlen(want)) != 0) {
        char got[256];
        snprintf(got, sizeof got, "%s", out);
        free(out);
        fail_msg("%s --version: exit %d, printed '%s'; expected it to begin '%s'", p, rc, got, want);
    }
    free(out);
}

static void both_programs_print_the_version_of_the_header(void **state)
{
    (void)state;
    expect_prints_version("tide");
    expect_prints_version("tided");
}

/* 1 when `path` exports malloc_conf among its dynamic symbols. */
static int exports_malloc_conf(const char *path)
{
    char *syms = readelf("--dyn-syms -W", path);
    int found = 0;
    const char *p = syms;

    while ((p = strstr(p, "malloc_conf")) != NULL) {
        char after = p[strlen("malloc_conf")];
        if (p > syms && p[-1] == ' ' && (after == '\n' || after == '\0' || after == ' ')) found = 1;
        p++;
    }
    free(syms);
    return found;
}

static void jemalloc_options_are_linked_into_the_jemalloc_programs_only(void **state)
{
    const char *plain[] = { "tide", "tided" }, *jem[] = { "jemalloc/tide", "jemalloc/tided" };
    char p[PATH_MAX];
    size_t i;
    (void)state;
    for (i = 0; i < 2; i++) {
        bin_path(p, sizeof p, plain[i]);
        if (exports_malloc_conf(p))
            fail_msg("%s exports malloc_conf: src/mem/jemalloc_conf.c linked outside ALLOC=jemalloc", p);
    }
    if (TH_SANITIZER) th_skip("sanitizer build: no bin/jemalloc/ (the sanitizer's allocator comes first)");
    for (i = 0; i < 2; i++) {
        bin_path(p, sizeof p, jem[i]);
        if (access(p, X_OK) != 0)
            fail_msg("%s: not found or not executable (make check builds bin/jemalloc/)", p);
        if (!exports_malloc_conf(p))
            fail_msg("%s does not export malloc_conf: src/mem/jemalloc_conf.c not linked in, or "
                     "not exported (--export-dynamic-symbol)", p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bin_tide_is_a_pie_with_full_relro_canaries_and_fortify),
        cmocka_unit_test(bin_tided_is_a_pie_with_full_relro_canaries_and_fortify),
        cmocka_unit_test(the_jemalloc_tided_is_hardened_like_the_glibc_one),
        cmocka_unit_test(the_test_programs_are_linked_hardened_too),
        cmocka_unit_test(the_version_text_begins_with_its_three_numbers),
        cmocka_unit_test(both_programs_print_the_version_of_the_header),
        cmocka_unit_test(jemalloc_options_are_linked_into_the_jemalloc_programs_only),
    };
    return cmocka_run_group_tests_name("build", tests, NULL, NULL);
}
