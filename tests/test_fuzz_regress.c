/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_fuzz_regress.c: every saved fuzz input, replayed through its target.
 *
 * `make fuzz` (clang + libFuzzer, never part of `make test`) runs the targets
 * of fuzz/ and leaves what matters in the tree: the seeds in
 * fuzz/corpus/<target>/ and every input that broke a property or crashed in
 * fuzz/crashers/<target>/. This test links the same target code (fuzz/fuzz_X.c,
 * built by the ordinary compiler; no libFuzzer) and runs each of those files
 * through the target it belongs to, so a crasher stays a failing test until
 * the bug is fixed, and a fixed bug stays fixed.
 *
 * The repository root is found from the working directory (tests run from
 * it; a parent holding fuzz/fuzz.h is taken otherwise). Files are run in
 * name order; names starting with '.' and README files are skipped.
 *
 * A target that reports a broken property fails the test with the file's
 * name and the message, after the rest of the directory has run. A crash
 * cannot be carried on from: a signal handler (and, under AddressSanitizer,
 * the sanitizer's death callback) prints the name of the file that was
 * running before cmocka or the sanitizer reports it. Crashers are also named
 * on stdout as they run, since there are few of them and each is a bug.
 * Leaks found by libFuzzer (leak-* files) reproduce under `make asan`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../fuzz/fuzz.h"
#include "helpers.h"
#include "util/log.h"

#if TH_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

typedef int (*target_fn)(const uint8_t *, size_t, fuzz_result *);

/* The file being run, for the crash reports. */
static char current[4096];
static volatile sig_atomic_t running;

static void say_current(void)
{
    static const char pre[] = "\ntest_fuzz_regress: crashed while running ";
    if (!running) return;
    if (write(STDERR_FILENO, pre, sizeof pre - 1) < 0) return;
    if (write(STDERR_FILENO, current, strlen(current)) < 0) return;
    if (write(STDERR_FILENO, "\n", 1) < 0) return;
}

static struct sigaction old_actions[NSIG];
static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };

static void on_crash(int sig)
{
    say_current();
    running = 0;
    /* Hand over to whoever was there before (cmocka, or the default). */
    sigaction(sig, &old_actions[sig], NULL);
    raise(sig);
}

static void catch_crashes(int on)
{
    for (size_t i = 0; i < sizeof crash_signals / sizeof *crash_signals; i++) {
        int sig = crash_signals[i];
        if (on) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_crash;
            sigemptyset(&sa.sa_mask);
            sa.sa_flags = SA_RESETHAND;
            sigaction(sig, &sa, &old_actions[sig]);
        } else {
            sigaction(sig, &old_actions[sig], NULL);
        }
    }
}

/* The repository root: the working directory, or the nearest parent that
 * holds fuzz/fuzz.h. */
static const char *repo_root(void)
{
    static char root[4096];
    struct stat st;

    if (getcwd(root, sizeof root - 32) == NULL) return ".";
    for (;;) {
        char probe[4096 + 32];
        snprintf(probe, sizeof probe, "%s/fuzz/fuzz.h", root);
        if (stat(probe, &st) == 0) return root;
        char *slash = strrchr(root, '/');
        if (slash == NULL || slash == root) break;
        *slash = '\0';
    }
    return ".";
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of `dir`, sorted; *n of them (0 when `dir` is absent). */
static char **list_dir(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t cap = 0;

    *n = 0;
    if (d == NULL) return NULL;
    while ((e = readdir(d)) != NULL) {
        char path[8192];
        struct stat st;
        if (e->d_name[0] == '.' || strncmp(e->d_name, "README", 6) == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof *names);
            assert_non_null(names);
        }
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    if (*n > 1) qsort(names, *n, sizeof *names, cmp_names);
    return names;
}

typedef struct replay {
    size_t inputs, failures;
    char report[8192];     /* the first failures, one line each */
} replay;

/* Run every file of `root`/`rel` through `fn` (of `target`). `loud`: name
 * each file and its outcome. */
static void replay_dir(const char *root, const char *rel, const char *target, target_fn fn,
                       int loud, replay *rp)
{
    char dir[4096 + 64];
    size_t n;
    char **names;

    snprintf(dir, sizeof dir, "%s/%s", root, rel);
    names = list_dir(dir, &n);
    for (size_t i = 0; i < n; i++) {
        char path[8192];
        uint8_t *data = NULL;
        size_t len = 0;
        fuzz_result res = { .msg = "", .failed = 0 };
        int rc;

        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        snprintf(current, sizeof current, "%s/%s", rel, names[i]);
        if (th_read_file(path, &data, &len) != 0)
            fail_msg("%s/%s: cannot read the file", rel, names[i]);
        if (loud) printf("    replaying %s (%zu bytes)\n", current, len);
        running = 1;
        rc = fn(data, len, &res);
        running = 0;
        free(data);
        rp->inputs++;
        if (rc != 0 || res.failed) {
            size_t at = strlen(rp->report);
            rp->failures++;
            if (loud) printf("    %s: FAILED: %s\n", current, res.msg);
            if (at + 64 < sizeof rp->report)
                snprintf(rp->report + at, sizeof rp->report - at, "\n  %s: %s", current,
                         res.msg[0] ? res.msg : "(the target failed without a message)");
        } else if (loud) {
            /* Fixed, or a finding only clang's sanitizers see (e.g. UBSan's
             * "applying zero offset to null pointer", which gcc does not
             * check): the fuzz binary is the judge of that. */
            printf("    %s: passes in this build (fixed, or only the clang fuzz binary sees "
                   "it: build/fuzz/%s %s)\n", current, target, current);
        }
        free(names[i]);
    }
    free(names);
}

static void replay_target(const char *target, target_fn fn)
{
    const char *root = repo_root();
    char corpus[256], crashers[256];
    replay seeds = { 0 }, crashes = { 0 };
    double t0 = th_now_ms();

    snprintf(corpus, sizeof corpus, "fuzz/corpus/%s", target);
    snprintf(crashers, sizeof crashers, "fuzz/crashers/%s", target);
    tide_log_set_level(TIDE_LOG_OFF);
    catch_crashes(1);
    replay_dir(root, corpus, target, fn, 0, &seeds);
    replay_dir(root, crashers, target, fn, 1, &crashes);
    catch_crashes(0);
    tide_log_set_level(TIDE_LOG_WARN);
    printf("    %s: %zu seeds, %zu crashers replayed in %.0f ms\n", target, seeds.inputs,
           crashes.inputs, th_now_ms() - t0);
    if (seeds.inputs == 0)
        fail_msg("%s/%s: no seed inputs (expected the corpus `make fuzz-seeds` writes)", root,
                 corpus);
    if (seeds.failures || crashes.failures)
        fail_msg("%zu of %zu inputs of %s broke a property, expected none:%s%s", seeds.failures +
                 crashes.failures, seeds.inputs + crashes.inputs, target, seeds.report,
                 crashes.report);
}

#if TH_ASAN
static void on_sanitizer_death(void)
{
    say_current();
}
#endif

static int setup(void **state)
{
    (void)state;
#if TH_ASAN
    __sanitizer_set_death_callback(on_sanitizer_death);
#endif
    return 0;
}

static void every_saved_header_input_decodes_and_reencodes_to_the_same_header(void **state)
{
    (void)state;
    replay_target("fuzz_headers", fuzz_headers_one);
}

static void every_saved_bucket_input_is_checked_and_searched_within_its_buffer(void **state)
{
    (void)state;
    replay_target("fuzz_bucket", fuzz_bucket_one);
}

static void every_saved_store_image_is_read_with_errors_or_correct_answers(void **state)
{
    (void)state;
    replay_target("fuzz_store_image", fuzz_store_image_one);
}

static void every_saved_store_script_runs_with_errors_or_correct_answers(void **state)
{
    (void)state;
    replay_target("fuzz_store_script", fuzz_store_script_one);
}

static void every_saved_http_input_gets_well_formed_answers_and_never_a_500(void **state)
{
    (void)state;
    replay_target("fuzz_http", fuzz_http_one);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_saved_header_input_decodes_and_reencodes_to_the_same_header),
        cmocka_unit_test(every_saved_bucket_input_is_checked_and_searched_within_its_buffer),
        cmocka_unit_test(every_saved_store_image_is_read_with_errors_or_correct_answers),
        cmocka_unit_test(every_saved_store_script_runs_with_errors_or_correct_answers),
        cmocka_unit_test(every_saved_http_input_gets_well_formed_answers_and_never_a_500),
    };
    setbuf(stdout, NULL);
    return cmocka_run_group_tests(tests, setup, NULL);
}
