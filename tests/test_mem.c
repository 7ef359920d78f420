/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_mem.c: the memory library: what /proc says, which allocator serves
 * malloc, its options and statistics, one instrumented trim, and the
 * per-consumer byte counters.
 *
 * Some tests run this same binary again as a child (exec of /proc/self/exe
 * with TIDE_TEST_MEM_CHILD set) so that the child starts with another
 * allocator in LD_PRELOAD, or with glibc options in its environment: an
 * allocator is chosen when a process starts, not afterwards. The child
 * prints key=value lines that the parent checks. The tests that need
 * jemalloc, tcmalloc or mimalloc skip when the Debian package is absent and
 * say which one to install.
 *
 * Under AddressSanitizer or ThreadSanitizer the sanitizer's allocator
 * serves malloc; the glibc-only tests skip there, and the detection test
 * checks that the sanitizer is what is reported.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "cache/cache.h"
#include "cache/keycache.h"
#include "mem/account.h"
#include "util/clock.h"
#include "mem/alloc.h"
#include "mem/proc.h"
#include "mem/trim.h"
#include "tide/error.h"
#include "store/full.h"

#define MiB (1024.0 * 1024.0)

extern char **environ;

/* ---- skips ---------------------------------------------------------------- */

static int under_sanitizer(void)
{
    return tide_mem_alloc_family() == TIDE_MEM_ALLOC_SANITIZER;
}

#define SKIP_UNLESS_GLIBC() do { \
        if (tide_mem_alloc_family() != TIDE_MEM_ALLOC_GLIBC) \
            th_skip("malloc is served by %s, not glibc", tide_mem_alloc_family_name(tide_mem_alloc_family())); \
    } while (0)

/* ---- children ------------------------------------------------------------ */

/*
 * Run this binary again with TIDE_TEST_MEM_CHILD=<mode> and the extra
 * environment `extra` (NULL-terminated "NAME=value" strings, replacing any
 * inherited variable of the same name; LD_PRELOAD, MALLOC_CONF and
 * GLIBC_TUNABLES are never inherited). Its stdout goes to out (cap bytes,
 * terminated). Returns the child's exit status, or -1.
 */
static int run_child(const char *mode, const char *const *extra, char *out, size_t cap)
{
    static const char *const dropped[] = { "LD_PRELOAD=", "MALLOC_CONF=", "GLIBC_TUNABLES=",
                                           "TIDE_TEST_MEM_CHILD=", "MALLOC_ARENA_MAX=" };
    char modevar[128];
    const char *envp[512];
    char *argv[] = { (char *)"test_mem", NULL };
    posix_spawn_file_actions_t fa;
    size_t n = 0, have = 0;
    int fds[2], status;
    pid_t pid;

    for (char **e = environ; *e && n < 480; e++) {
        int keep = 1;
        for (size_t i = 0; i < sizeof dropped / sizeof dropped[0]; i++)
            if (strncmp(*e, dropped[i], strlen(dropped[i])) == 0) keep = 0;
        for (size_t i = 0; extra && extra[i]; i++) {
            size_t k = strcspn(extra[i], "=") + 1;
            if (strncmp(*e, extra[i], k) == 0) keep = 0;
        }
        if (keep) envp[n++] = *e;
    }
    snprintf(modevar, sizeof modevar, "TIDE_TEST_MEM_CHILD=%s", mode);
    envp[n++] = modevar;
    for (size_t i = 0; extra && extra[i] && n < 510; i++) envp[n++] = extra[i];
    envp[n] = NULL;

    if (pipe(fds) != 0) return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, (char *const *)envp) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    for (;;) {
        ssize_t r = read(fds[0], out + have, cap - 1 - have);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        have += (size_t)r;
        if (have == cap - 1) break;
    }
    out[have] = '\0';
    close(fds[0]);
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The value of "key=" on a line of the child's output, into val. 1 when found. */
static int child_value(const char *text, const char *key, char *val, size_t cap)
{
    size_t kl = strlen(key);
    const char *p = text;

    while (p && *p) {
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t n = strcspn(p + kl + 1, "\n");
            if (n >= cap) n = cap - 1;
            memcpy(val, p + kl + 1, n);
            val[n] = '\0';
            return 1;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return 0;
}

/* The child's side: report what it sees, one key=value per line. */
static int child_main(const char *mode)
{
    tide_mem_alloc_info in;
    tide_mem_alloc_options o;
    tide_mem_alloc_stats st;
    tide_mem_trim_report r;
    char line[1024];
    int rc, result = 0;

    if (strncmp(mode, "dlopen:", 7) == 0) {
        void *h = dlopen(mode + 7, RTLD_NOW | RTLD_GLOBAL);
        printf("dlopen=%s\n", h ? "ok" : dlerror());
    }
    rc = tide_mem_alloc_detect(&in);
    printf("detect_rc=%d\nfamily=%s\nvia=%s\nversion=%s\nlibrary=%s\nowner_checked=%d\n"
           "evidence=%s\n", rc, tide_mem_alloc_family_name(in.family),
           tide_mem_alloc_via_name(in.via), in.version, in.library, in.owner_checked,
           in.evidence);
    tide_mem_alloc_options_read(in.family, &o);
    for (size_t i = 0; i < o.count; i++)
        printf("opt.%s=%s\nsrc.%s=%s\n", o.opt[i].name, o.opt[i].value, o.opt[i].name,
               o.opt[i].source);
    tide_mem_alloc_options_format(&o, line, sizeof line);
    printf("options=%s\n", line);
    rc = tide_mem_alloc_stats_read(in.family, &st);
    printf("stats_rc=%d\n", rc);
    if (rc == 0) {
        printf("je.allocated=%" PRIu64 "\nje.resident=%" PRIu64 "\nje.dirty=%" PRIu64 "\n"
               "tc.allocated=%" PRIu64 "\ntc.heap_size=%" PRIu64 "\n"
               "mi.current_commit=%" PRIu64 "\nglibc.arena=%" PRIu64 "\n",
               st.jemalloc.allocated, st.jemalloc.resident, st.jemalloc.dirty,
               st.tcmalloc.allocated, st.tcmalloc.heap_size, st.mimalloc.current_commit,
               st.glibc.arena);
    }
    rc = tide_mem_alloc_release(in.family, 0, &result);
    printf("release_rc=%d\nrelease_result=%d\n", rc, result);
    tide_mem_trim(&r);
    tide_mem_trim_format(&r, line, sizeof line);
    printf("trim=%s\n", line);
    fflush(stdout);
    return 0;
}

/* The first of `names` (tried in the usual library directories) that
 * exists, into path. 1 when found. */
static int find_library(const char *soname, char *path, size_t cap)
{
    static const char *const dirs[] = {
        "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
        "/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib",
    };

    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, cap, "%s/%s", dirs[i], soname);
        if (access(path, R_OK) == 0) return 1;
    }
    return 0;
}

/* Run a child with `soname` preloaded (and `extra` environment), or skip
 * `test` naming the Debian package. */
static void run_preloaded(const char *test, const char *soname, const char *package, const char *extra_var,
                          char *out, size_t cap)
{
    char lib[512], preload[600];
    const char *extra[3] = { preload, extra_var, NULL };
    int st;

    if (under_sanitizer()) th_skip_in(test, "a sanitizer runtime must come first; %s cannot be preloaded", soname);
    if (!find_library(soname, lib, sizeof lib))
        th_skip_in(test, "%s not found; install the Debian package %s", soname, package);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", lib);
    st = run_child("detect", extra, out, cap);
    if (st != 0)
        fail_msg("child with %s: expected exit status 0, got %d; its output:\n%s", preload, st,
                 out);
}

/* ---- proc ------------------------------------------------------------------ */

static void statm_rss_grows_when_64_mib_is_touched_and_shrinks_after_munmap(void **state)
{
    const size_t len = 64u << 20;
    uint64_t r0, r1, r2;
    unsigned char *p;

    (void)state;
    expect_rc(tide_mem_proc_statm_rss(&r0), 0, "statm before the mapping");
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail_msg("mmap of 64 MiB: %s", strerror(errno));
    for (size_t i = 0; i < len; i += 4096) p[i] = (unsigned char)i | 1;
    expect_rc(tide_mem_proc_statm_rss(&r1), 0, "statm after touching 64 MiB");
    munmap(p, len);
    expect_rc(tide_mem_proc_statm_rss(&r2), 0, "statm after munmap");
    printf("    rss: %.1f MiB, touched 64 MiB: %.1f MiB, after munmap: %.1f MiB\n",
           r0 / MiB, r1 / MiB, r2 / MiB);
    if (r1 < r0 + (60u << 20))
        fail_msg("touching 64 MiB: expected RSS to grow by at least 60 MiB, got %.1f -> %.1f MiB",
                 r0 / MiB, r1 / MiB);
    if (r2 + (60u << 20) > r1)
        fail_msg("munmap of 64 MiB: expected RSS to drop by at least 60 MiB, got %.1f -> %.1f MiB",
                 r1 / MiB, r2 / MiB);
}

static void status_fields_parse_and_anon_file_shmem_add_up_to_vm_rss(void **state)
{
    tide_mem_proc_status s;
    uint64_t sum, diff, statm;

    (void)state;
    expect_rc(tide_mem_proc_status_read(&s), 0, "reading /proc/self/status");
    expect_rc(tide_mem_proc_statm_rss(&statm), 0, "reading /proc/self/statm");
    if (!s.has_split) fail_msg("status: expected RssAnon/RssFile/RssShmem (Linux >= 4.5), got none");
    if (s.vm_rss == 0 || s.rss_anon == 0 || s.rss_file == 0)
        fail_msg("status: expected VmRSS, RssAnon and RssFile above 0, got %" PRIu64 ", %" PRIu64
                 ", %" PRIu64, s.vm_rss, s.rss_anon, s.rss_file);
    if (s.vm_hwm < s.vm_rss)
        fail_msg("status: expected VmHWM >= VmRSS, got %" PRIu64 " < %" PRIu64, s.vm_hwm, s.vm_rss);
    sum = s.rss_anon + s.rss_file + s.rss_shmem;
    diff = sum > s.vm_rss ? sum - s.vm_rss : s.vm_rss - sum;
    printf("    VmRSS %" PRIu64 " kB = RssAnon %" PRIu64 " + RssFile %" PRIu64 " + RssShmem %"
           PRIu64 " kB (sum %" PRIu64 " kB); VmHWM %" PRIu64 " kB; statm %" PRIu64 " kB\n",
           s.vm_rss / 1024, s.rss_anon / 1024, s.rss_file / 1024, s.rss_shmem / 1024, sum / 1024,
           s.vm_hwm / 1024, statm / 1024);
    if (diff > s.vm_rss / 100 + 64 * 1024)
        fail_msg("status: expected RssAnon+RssFile+RssShmem within 1%% of VmRSS, got %" PRIu64
                 " vs %" PRIu64 " bytes", sum, s.vm_rss);
    diff = statm > s.vm_rss ? statm - s.vm_rss : s.vm_rss - statm;
    if (diff > s.vm_rss / 20 + (2u << 20))
        fail_msg("status vs statm: expected the same RSS within 5%%, got %" PRIu64 " vs %" PRIu64,
                 s.vm_rss, statm);
}

static void smaps_rollup_is_readable_or_the_error_names_the_kernel(void **state)
{
    tide_mem_proc_smaps m;
    uint64_t statm;
    int rc;

    (void)state;
    rc = tide_mem_proc_smaps_rollup_read(&m);
    if (rc == TIDE_ENOENT) {
        if (strstr(tide_last_error(), "4.14") == NULL)
            fail_msg("smaps_rollup absent: expected the message to name Linux 4.14, got '%s'",
                     tide_last_error());
        th_skip("smaps_rollup absent on this kernel (the error names Linux 4.14, as it should): %s",
                tide_last_error());
    }
    expect_rc(rc, 0, "reading /proc/self/smaps_rollup");
    expect_rc(tide_mem_proc_statm_rss(&statm), 0, "reading /proc/self/statm");
    printf("    smaps_rollup: Rss %" PRIu64 " kB, Pss %" PRIu64 " kB, Referenced %" PRIu64
           " kB, Anonymous %" PRIu64 " kB, LazyFree %" PRIu64 " kB (statm %" PRIu64 " kB)\n",
           m.rss / 1024, m.pss / 1024, m.referenced / 1024, m.anonymous / 1024,
           m.lazy_free / 1024, statm / 1024);
    if (m.rss == 0) fail_msg("smaps_rollup: expected Rss above 0, got 0");
    if (m.anonymous > m.rss || m.referenced > m.rss || m.pss > m.rss)
        fail_msg("smaps_rollup: expected Anonymous, Referenced and Pss <= Rss %" PRIu64
                 ", got %" PRIu64 ", %" PRIu64 ", %" PRIu64, m.rss, m.anonymous, m.referenced,
                 m.pss);
    if (!m.has_lazy_free) fail_msg("smaps_rollup: expected a LazyFree line (Linux >= 4.12)");
    if (m.rss > statm + statm / 10 + (2u << 20) || statm > m.rss + m.rss / 10 + (2u << 20))
        fail_msg("smaps_rollup vs statm: expected the same RSS within 10%%, got %" PRIu64
                 " vs %" PRIu64, m.rss, statm);
}

static void thread_faults_count_the_first_touch_of_fresh_pages(void **state)
{
    const size_t len = 8u << 20, page = tide_mem_proc_page_size();
    tide_mem_proc_faults f0, f1;
    unsigned char *p;

    (void)state;
    if (page != (size_t)sysconf(_SC_PAGESIZE))
        fail_msg("page size: expected sysconf's %ld, got %zu", sysconf(_SC_PAGESIZE), page);
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail_msg("mmap of 8 MiB: %s", strerror(errno));
    madvise(p, len, MADV_NOHUGEPAGE);
    expect_rc(tide_mem_proc_thread_faults(&f0), 0, "faults before");
    for (size_t i = 0; i < len; i += page) p[i] = 1;
    expect_rc(tide_mem_proc_thread_faults(&f1), 0, "faults after");
    munmap(p, len);
    printf("    touching %zu pages of %zu bytes: %" PRIu64 " minor, %" PRIu64 " major faults\n",
           len / page, page, f1.minflt - f0.minflt, f1.majflt - f0.majflt);
    if (f1.minflt - f0.minflt < len / page / 2)
        fail_msg("faults: expected at least %zu minor faults for %zu fresh pages, got %" PRIu64,
                 len / page / 2, len / page, f1.minflt - f0.minflt);
}

/* ---- alloc ----------------------------------------------------------------- */

static void the_allocator_under_the_test_is_detected_with_its_version(void **state)
{
    tide_mem_alloc_info in;

    (void)state;
    expect_rc(tide_mem_alloc_detect(&in), 0, "detecting the allocator");
    printf("    allocator: %s %s via %s (%s): %s\n", tide_mem_alloc_family_name(in.family),
           in.version, tide_mem_alloc_via_name(in.via), in.library, in.evidence);
#if TH_SANITIZER
    expect_str(tide_mem_alloc_family_name(in.family), "sanitizer", "allocator under a sanitizer");
    if (!in.owner_checked) fail_msg("sanitizer: expected the probe block to be checked as owned");
#else
    expect_str(tide_mem_alloc_family_name(in.family), "glibc", "allocator of this test");
    expect_str(in.version, gnu_get_libc_version(), "glibc version");
    expect_str(tide_mem_alloc_via_name(in.via), "libc", "how glibc serves malloc");
    if (strstr(in.library, "libc.so") == NULL)
        fail_msg("glibc: expected malloc to be defined in libc.so.*, got '%s'", in.library);
#endif
    expect_i64(tide_mem_alloc_family(), in.family, "the remembered family");
}

static void mallopt_wrapper_is_recorded_and_shown_in_the_effective_options(void **state)
{
    tide_mem_alloc_options o;
    char text[1024];
    const char *v;

    (void)state;
    if (under_sanitizer()) {
        /* The call would reach a glibc allocator nobody uses: refused. */
        expect_rc(tide_mem_alloc_mallopt(M_MMAP_THRESHOLD, 131072), TIDE_EINVAL,
                  "mallopt when glibc does not serve malloc");
        th_skip("the sanitizer's allocator serves malloc: mallopt was refused as it should be (%s); "
                "the record of an accepted call needs glibc", tide_last_error());
    }
    SKIP_UNLESS_GLIBC();
    /* 64 KiB, then 128 KiB (glibc's default, so the tests after this one
     * run as before): the later call is the one shown. */
    expect_rc(tide_mem_alloc_mallopt(M_MMAP_THRESHOLD, 65536), 0, "mallopt(M_MMAP_THRESHOLD, 64 KiB)");
    expect_rc(tide_mem_alloc_mallopt(M_MMAP_THRESHOLD, 131072), 0, "mallopt(M_MMAP_THRESHOLD, 128 KiB)");
    /* M_MXFAST above MAX_FAST_SIZE (160 bytes on 64-bit): glibc refuses. */
    expect_rc(tide_mem_alloc_mallopt(M_MXFAST, 100000), TIDE_EINVAL, "mallopt(M_MXFAST, 100000)");
    if (strstr(tide_last_error(), "mxfast") == NULL)
        fail_msg("refused mallopt: expected the message to name mxfast, got '%s'",
                 tide_last_error());
    expect_rc(tide_mem_alloc_mallopt(12345, 1), TIDE_EINVAL, "mallopt of an unknown parameter");
    expect_rc(tide_mem_alloc_options_read(tide_mem_alloc_family(), &o), 0, "reading the options");
    tide_mem_alloc_options_format(&o, text, sizeof text);
    printf("    glibc options: %s\n", text);
    v = tide_mem_alloc_option_get(&o, "mmap_threshold");
    expect_str(v, "131072", "mmap_threshold in the effective options (the last accepted value)");
    if (tide_mem_alloc_option_get(&o, "mxfast") != NULL)
        fail_msg("options: expected the refused mxfast to be left out, got mxfast=%s",
                 tide_mem_alloc_option_get(&o, "mxfast"));
    for (size_t i = 0; i < o.count; i++)
        if (strcmp(o.opt[i].name, "mmap_threshold") == 0)
            expect_str(o.opt[i].source, "mallopt", "source of mmap_threshold");
    if (strstr(text, "mmap_threshold=131072") == NULL)
        fail_msg("options line: expected 'mmap_threshold=131072', got '%s'", text);
}

static void glibc_options_from_the_environment_are_reported(void **state)
{
    const char *extra[] = { "MALLOC_ARENA_MAX=2",
                            "GLIBC_TUNABLES=glibc.malloc.trim_threshold=262144:glibc.rtld.nns=4",
                            NULL };
    char out[16384], v[256];
    int st;

    (void)state;
    SKIP_UNLESS_GLIBC();
    st = run_child("detect", extra, out, sizeof out);
    if (st != 0) fail_msg("child: expected exit status 0, got %d; output:\n%s", st, out);
    if (!child_value(out, "options", v, sizeof v)) fail_msg("child: no options line in:\n%s", out);
    printf("    child's glibc options: %s\n", v);
    if (!child_value(out, "opt.MALLOC_ARENA_MAX", v, sizeof v) || strcmp(v, "2") != 0)
        fail_msg("child: expected MALLOC_ARENA_MAX=2 among the options, got:\n%s", out);
    if (!child_value(out, "opt.glibc.malloc.trim_threshold", v, sizeof v) || strcmp(v, "262144"))
        fail_msg("child: expected glibc.malloc.trim_threshold=262144 from GLIBC_TUNABLES, got:\n%s",
                 out);
    if (child_value(out, "opt.glibc.rtld.nns", v, sizeof v))
        fail_msg("child: expected only glibc.malloc.* tunables, got glibc.rtld.nns in:\n%s", out);
}

static void mallinfo2_stats_are_plausible_and_in_use_grows_after_10_mb_of_small_mallocs(void **state)
{
    enum { N = 100000, SZ = 100 };
    tide_mem_alloc_stats a, b;
    void **blocks;
    int family = tide_mem_alloc_family();
    uint64_t grew;

    (void)state;
    if (family != TIDE_MEM_ALLOC_GLIBC && family != TIDE_MEM_ALLOC_SANITIZER) SKIP_UNLESS_GLIBC();
    blocks = malloc(N * sizeof *blocks);
    assert_non_null(blocks);
    expect_rc(tide_mem_alloc_stats_read(family, &a), 0, "statistics before");
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(SZ);
        assert_non_null(blocks[i]);
        memset(blocks[i], 0x11, SZ);
    }
    expect_rc(tide_mem_alloc_stats_read(family, &b), 0, "statistics after");
    for (int i = 0; i < N; i++) free(blocks[i]);
    free(blocks);
    if (family == TIDE_MEM_ALLOC_SANITIZER) {
        grew = b.sanitizer.allocated - a.sanitizer.allocated;
        printf("    sanitizer allocated: %.1f -> %.1f MiB\n", a.sanitizer.allocated / MiB,
               b.sanitizer.allocated / MiB);
    } else {
        grew = b.glibc.in_use - a.glibc.in_use;
        printf("    mallinfo2 before: arena %.1f MiB, in_use %.1f MiB, free %.1f MiB, mmap %.1f MiB, "
               "arenas %u\n", a.glibc.arena / MiB, a.glibc.in_use / MiB, a.glibc.free / MiB,
               a.glibc.mmap / MiB, a.glibc.arenas);
        printf("    after 10 MB:      arena %.1f MiB, in_use %.1f MiB, free %.1f MiB, mmap %.1f MiB, "
               "arenas %u\n", b.glibc.arena / MiB, b.glibc.in_use / MiB, b.glibc.free / MiB,
               b.glibc.mmap / MiB, b.glibc.arenas);
        if (!b.glibc.has_arenas || b.glibc.arenas < 1)
            fail_msg("glibc: expected at least one arena counted by malloc_info, got %u (has %d)",
                     b.glibc.arenas, b.glibc.has_arenas);
        if (b.glibc.in_use + b.glibc.free > b.glibc.arena + b.glibc.mmap + (1u << 20))
            fail_msg("glibc: expected in_use + free (%" PRIu64 ") within arena + mmap (%" PRIu64 ")",
                     b.glibc.in_use + b.glibc.free, b.glibc.arena + b.glibc.mmap);
    }
    if (grew < (uint64_t)N * SZ)
        fail_msg("in-use bytes: expected growth of at least %d bytes after %d mallocs of %d, got %"
                 PRIu64, N * SZ, N, SZ, grew);
}

static void release_of_an_absent_family_is_refused_by_name(void **state)
{
    int result = 7;
    tide_mem_alloc_stats st;

    (void)state;
    expect_rc(tide_mem_alloc_release(TIDE_MEM_ALLOC_UNKNOWN, 0, &result), TIDE_EINVAL,
              "release for an unknown allocator");
    expect_i64(result, 0, "result of a refused release");
    if (dlsym(RTLD_DEFAULT, "mallctl") == NULL) {
        expect_rc(tide_mem_alloc_release(TIDE_MEM_ALLOC_JEMALLOC, 0, &result), TIDE_EINVAL,
                  "jemalloc release without jemalloc");
        if (strstr(tide_last_error(), "jemalloc") == NULL)
            fail_msg("expected the message to name jemalloc, got '%s'", tide_last_error());
        expect_rc(tide_mem_alloc_stats_read(TIDE_MEM_ALLOC_JEMALLOC, &st), TIDE_EINVAL,
                  "jemalloc statistics without jemalloc");
    }
}

/* ---- the point: trim returns what interleaved lifetimes leave behind ------- */

/*
 * Each worker allocates short-lived blocks of 256..368 bytes with one
 * long-lived block after every 32 of them, then frees the short-lived ones.
 * The long-lived blocks pin the top of each thread's arena, so glibc's own
 * trimming (which only shrinks the top) gives nothing back, and every run
 * of 32 freed blocks (about 10 KiB, at least one whole page) stays resident
 * until malloc_trim returns its whole pages.
 */
enum { POINT_THREADS = 4, POINT_EVERY = 32 };

struct point_worker {
    size_t n;             /* short-lived blocks */
    void **longb;
    size_t nlong;
    uint64_t freed;       /* bytes requested by the freed blocks */
    pthread_barrier_t *allocated, *measured;
};

static void *point_run(void *arg)
{
    struct point_worker *w = arg;
    void **shortb = malloc(w->n * sizeof *shortb);

    w->longb = malloc((w->n / POINT_EVERY + 1) * sizeof *w->longb);
    if (shortb == NULL || w->longb == NULL) abort();
    w->nlong = 0;
    for (size_t i = 0; i < w->n; i++) {
        size_t sz = 256 + (i % 8) * 16;
        shortb[i] = malloc(sz);
        if (shortb[i] == NULL) abort();
        memset(shortb[i], 0xA5, sz);
        if (i % POINT_EVERY == POINT_EVERY - 1) {
            w->longb[w->nlong] = malloc(256);
            if (w->longb[w->nlong] == NULL) abort();
            memset(w->longb[w->nlong], 0x5A, 256);
            w->nlong++;
        }
    }
    pthread_barrier_wait(w->allocated);
    pthread_barrier_wait(w->measured);
    w->freed = 0;
    for (size_t i = 0; i < w->n; i++) {
        w->freed += 256 + (i % 8) * 16;
        free(shortb[i]);
    }
    free(shortb);
    return NULL;
}

static void glibc_trim_returns_memory_freed_in_an_interleaved_pattern_on_four_threads(void **state)
{
    const int rounds = 3;
    const size_t n = th_small() ? 20000 : 200000;

    (void)state;
    SKIP_UNLESS_GLIBC();
    for (int round = 1; round <= rounds; round++) {
        struct point_worker w[POINT_THREADS];
        pthread_t t[POINT_THREADS];
        pthread_barrier_t allocated, measured;
        tide_mem_trim_report r;
        uint64_t rss_full, rss_freed, freed = 0, drop, want;
        char line[256];

        pthread_barrier_init(&allocated, NULL, POINT_THREADS + 1);
        pthread_barrier_init(&measured, NULL, POINT_THREADS + 1);
        for (int i = 0; i < POINT_THREADS; i++) {
            w[i] = (struct point_worker){ .n = n, .allocated = &allocated, .measured = &measured };
            if (pthread_create(&t[i], NULL, point_run, &w[i]) != 0) fail_msg("pthread_create failed");
        }
        pthread_barrier_wait(&allocated);
        expect_rc(tide_mem_proc_statm_rss(&rss_full), 0, "statm with everything allocated");
        pthread_barrier_wait(&measured);
        for (int i = 0; i < POINT_THREADS; i++) {
            pthread_join(t[i], NULL);
            freed += w[i].freed;
        }
        pthread_barrier_destroy(&allocated);
        pthread_barrier_destroy(&measured);
        expect_rc(tide_mem_proc_statm_rss(&rss_freed), 0, "statm after the frees");

        expect_rc(tide_mem_trim(&r), 0, "tide_mem_trim");
        tide_mem_trim_format(&r, line, sizeof line);
        drop = r.rss_before > r.rss_after ? r.rss_before - r.rss_after : 0;
        printf("    round %d: %d threads x %zu blocks, freed %.1f MiB; RSS allocated %.1f MiB, "
               "after free %.1f MiB (free alone returned %.1f MiB), after trim %.1f MiB: "
               "trim returned %.1f MiB = %.0f%% of freed\n      %s\n",
               round, POINT_THREADS, n, freed / MiB, rss_full / MiB, rss_freed / MiB,
               rss_full > rss_freed ? (rss_full - rss_freed) / MiB : 0.0, r.rss_after / MiB,
               drop / MiB, 100.0 * (double)drop / (double)freed, line);
        for (int i = 0; i < POINT_THREADS; i++) {
            for (size_t j = 0; j < w[i].nlong; j++) free(w[i].longb[j]);
            free(w[i].longb);
        }
        expect_i64(r.result, 1, "malloc_trim's result (1: memory was released)");
        /* Each run of 32 freed chunks is ~10.5 KiB, so it holds at least one
         * whole 4 KiB page: 39% of the freed bytes are guaranteed to be
         * returnable. 64% is returned on this machine, every time. Ask for
         * 25%, which only a trim that does not work can miss. */
        want = freed / 4;
        if (drop < want)
            fail_msg("trim after interleaved frees: expected RSS to drop by at least %.1f MiB "
                     "(25%% of %.1f MiB freed), got %.1f MiB (%.1f -> %.1f MiB)", want / MiB,
                     freed / MiB, drop / MiB, r.rss_before / MiB, r.rss_after / MiB);
    }
}

/* ---- trim --------------------------------------------------------------------- */

/* The child of the pad test: 48 MiB of 1 KiB blocks on the main heap, all
 * freed (no trim on free: the threshold is raised), then a trim with a
 * 16 MiB pad and one with none (both with the heap's free space in its top
 * chunk). Exit 0 when the pad kept 12..24 MiB
 * resident above the start and the second trim returned at least 12 MiB
 * of it; else the step that failed. */
static int pad_child(void)
{
    enum { N = 48 * 1024, SIZE = 1024 };
    static void *p[N];
    uint64_t rss0 = 0, rss1 = 0, rss2 = 0;
    tide_mem_trim_report r;

    if (mallopt(M_TRIM_THRESHOLD, 1 << 30) != 1 || mallopt(M_MMAP_THRESHOLD, 1 << 20) != 1) return 2;
    if (tide_mem_proc_statm_rss(&rss0) != 0) return 3;
    for (int i = 0; i < N; i++) {
        p[i] = malloc(SIZE);
        if (p[i] == NULL) return 4;
        memset(p[i], 0x5a, SIZE);
    }
    /* In order: the first few go to the thread cache, the rest coalesce
     * with each other and, at the last, with the top chunk, which is what
     * the pad applies to (free chunks inside the heap are returned
     * whatever it says). */
    for (int i = 0; i < N; i++) free(p[i]);
    if (tide_mem_trim_pad((size_t)16 << 20, &r) != 0) return 5;
    rss1 = r.rss_after;
    if (tide_mem_trim_pad(0, &r) != 0) return 6;
    rss2 = r.rss_after;
    printf("rss0=%" PRIu64 " rss1=%" PRIu64 " rss2=%" PRIu64 "\n", rss0, rss1, rss2);
    if (rss1 < rss0 + (12u << 20) || rss1 > rss0 + (24u << 20)) return 7;
    if (rss1 < rss2 + (12u << 20)) return 8;
    return 0;
}

/* glibc's malloc_trim(pad) leaves `pad` bytes at the top of the main heap
 * (trim_pad), and a trim without one returns them. In a child: its heap is
 * its own, and its mallopt settings go with it. */
static void a_trim_pad_keeps_that_much_at_the_top_of_the_main_heap(void **state)
{
    char out[512];
    int st;

    (void)state;
    SKIP_UNLESS_GLIBC();
    st = run_child("pad", NULL, out, sizeof out);
    if (st != 0) fail_msg("the pad child: expected exit 0, got %d; it said: %s", st, out);
}

static void trim_line_has_the_exact_format(void **state)
{
    tide_mem_trim_report r;
    char line[256];
    int n;

    (void)state;
    memset(&r, 0, sizeof r);
    r.family = TIDE_MEM_ALLOC_GLIBC;
    r.result = 1;
    r.rss_before = 19ull << 30;                    /* 19 GiB */
    r.rss_after = (19ull << 30) - (75ull << 20);   /* 75 MiB less */
    r.rss_delta = (int64_t)r.rss_after - (int64_t)r.rss_before;
    r.duration_ns = 141234567;
    r.minflt = 12;
    r.majflt = 0;
    n = tide_mem_trim_format(&r, line, sizeof line);
    expect_str(line, "trim allocator=glibc result=1 rss_before=19922944kB rss_after=19846144kB "
               "delta=-76800kB duration_us=141234 minflt=12 majflt=0", "trim line");
    expect_i64(n, (int64_t)strlen(line), "returned length");

    r.family = TIDE_MEM_ALLOC_JEMALLOC;
    r.rss_after = r.rss_before + 8192;
    r.result = 1;
    r.duration_ns = 999;
    tide_mem_trim_format(&r, line, sizeof line);
    expect_str(line, "trim allocator=jemalloc result=1 rss_before=19922944kB "
               "rss_after=19922952kB delta=8kB duration_us=0 minflt=12 majflt=0",
               "trim line with RSS grown");

    n = tide_mem_trim_format(&r, line, 20);
    if ((size_t)n < 20 || strlen(line) != 19)
        fail_msg("cut line: expected the full length (> 20) returned and 19 characters kept, "
                 "got %d and %zu", n, strlen(line));
}

static void a_real_trim_reports_rss_before_and_after_and_a_duration(void **state)
{
    tide_mem_trim_report r;
    char line[256], name[32];
    long long before, after, delta, us, minflt, majflt;
    int result;

    struct timespec res;
    uint64_t outer0, outer_ns;

    (void)state;
    outer0 = tide_clock_mono_ns();
    expect_rc(tide_mem_trim(&r), 0, "tide_mem_trim");
    outer_ns = tide_clock_mono_ns() - outer0;
    tide_mem_trim_format(&r, line, sizeof line);
    printf("    %s\n", line);
    if (r.rss_before == 0 || r.rss_after == 0)
        fail_msg("trim: expected RSS before and after above 0, got %" PRIu64 " and %" PRIu64,
                 r.rss_before, r.rss_after);
    expect_i64(r.rss_delta, (int64_t)r.rss_after - (int64_t)r.rss_before, "rss_delta");
    expect_i64(r.family, tide_mem_alloc_family(), "trim's family");
    if (sscanf(line, "trim allocator=%31s result=%d rss_before=%lldkB rss_after=%lldkB delta=%lldkB "
               "duration_us=%lld minflt=%lld majflt=%lld", name, &result, &before, &after, &delta,
               &us, &minflt, &majflt) != 8)
        fail_msg("trim line: expected the eight fields of the format, got '%s'", line);
    expect_str(name, tide_mem_alloc_family_name(r.family), "allocator in the line");
    expect_i64(delta, after - before, "delta in the line");
    /* The duration is the release call's, on the monotonic clock: inside
     * the whole tide_mem_trim call measured here on the same clock, and the
     * line shows it in microseconds. */
    if (r.duration_ns > outer_ns)
        fail_msg("trim: expected the release's duration within the whole call's %" PRIu64 " ns, got %"
                 PRIu64 " ns", outer_ns, r.duration_ns);
    expect_i64(us, (int64_t)(r.duration_ns / 1000), "duration_us in the line");
    /* glibc's malloc_trim locks and walks every arena: on a clock that
     * counts nanoseconds it cannot take none. Another allocator's release
     * may be a no-op (a sanitizer without purge), and a coarse clock may
     * not tick across a short call: there a zero proves nothing. */
    clock_getres(CLOCK_MONOTONIC, &res);
    if (r.family != TIDE_MEM_ALLOC_GLIBC || res.tv_sec != 0 || res.tv_nsec > 1000)
        th_skip("no nonzero-duration check: %s", r.family != TIDE_MEM_ALLOC_GLIBC
                ? "malloc is not glibc's, whose release may do nothing" : "CLOCK_MONOTONIC is coarser than 1 us");
    if (r.duration_ns == 0) fail_msg("trim: expected glibc's malloc_trim to take more than 0 ns, got 0");
}

/* ---- account -------------------------------------------------------------------- */

enum { ACCOUNT_THREADS = 4, ACCOUNT_OPS = 250000 };

struct account_worker { int id, seed; };

static void *account_run(void *arg)
{
    const struct account_worker *w = arg;

    for (int i = 0; i < ACCOUNT_OPS; i++) {
        int64_t v = (i * 7 + w->seed) % 1000 + 1;
        tide_mem_account_add(w->id, v);
        tide_mem_account_add(TIDE_MEM_NODE_CACHE, v);
        if (i % 3 == 0) {
            tide_mem_account_sub(w->id, v);
            tide_mem_account_sub(TIDE_MEM_NODE_CACHE, v);
        }
    }
    return NULL;
}

static void account_counters_updated_from_several_threads_sum_exactly(void **state)
{
    struct account_worker w[ACCOUNT_THREADS];
    pthread_t t[ACCOUNT_THREADS];
    int64_t want = 0, start_node;
    int id;

    (void)state;
    expect_rc(tide_mem_account_register("test_threads", &id), 0, "registering test_threads");
    tide_mem_account_set(id, 0);
    start_node = tide_mem_account_get(TIDE_MEM_NODE_CACHE);
    for (int k = 0; k < ACCOUNT_THREADS; k++) {
        w[k] = (struct account_worker){ .id = id, .seed = k * 13 };
        for (int i = 0; i < ACCOUNT_OPS; i++)
            if (i % 3 != 0) want += (i * 7 + w[k].seed) % 1000 + 1;
    }
    for (int k = 0; k < ACCOUNT_THREADS; k++)
        if (pthread_create(&t[k], NULL, account_run, &w[k]) != 0) fail_msg("pthread_create failed");
    for (int k = 0; k < ACCOUNT_THREADS; k++) pthread_join(t[k], NULL);
    expect_i64(tide_mem_account_get(id), want, "test_threads after 4 threads' adds and subs");
    expect_i64(tide_mem_account_get(TIDE_MEM_NODE_CACHE) - start_node, want,
               "node_cache after 4 threads' adds and subs");
    tide_mem_account_sub(TIDE_MEM_NODE_CACHE, want);
}

/* ---- churn totals ----------------------------------------------------------------- */

/* A consumer of the test's own, registered (or found) by name. */
static int churn_consumer(const char *name)
{
    int id = -1;

    expect_rc(tide_mem_account_register(name, &id), 0, name);
    return id;
}

typedef struct totals { uint64_t n, bytes; } totals;

static totals totals_of(int id)
{
    totals t;

    tide_mem_account_totals(id, &t.n, &t.bytes);
    return t;
}

/* Every consumer's totals, to show a change touched no other one. */
static void all_totals(totals out[TIDE_MEM_ACCOUNT_MAX])
{
    for (int i = 0; i < TIDE_MEM_ACCOUNT_MAX; i++) out[i] = totals_of(i);
}

/* Every consumer's totals but those of ids a and b are as in `before`. */
static void expect_totals_unchanged_but(const totals before[TIDE_MEM_ACCOUNT_MAX], int a, int b, const char *what)
{
    for (int i = 0; i < TIDE_MEM_ACCOUNT_MAX; i++) {
        totals now = totals_of(i);
        if (i == a || i == b) continue;
        if (now.n != before[i].n || now.bytes != before[i].bytes)
            fail_msg("%s: consumer %d (%s) totals moved from %" PRIu64 "/%" PRIu64 " to %" PRIu64 "/%" PRIu64,
                     what, i, tide_mem_account_name(i) ? tide_mem_account_name(i) : "?", before[i].n,
                     before[i].bytes, now.n, now.bytes);
    }
}

static void account_totals_count_allocations_and_their_bytes_not_frees(void **state)
{
    tide_mem_account_entry e[TIDE_MEM_ACCOUNT_MAX];
    totals t, others[TIDE_MEM_ACCOUNT_MAX];
    int id = churn_consumer("churn_test");
    int64_t held;
    size_t n;

    (void)state;
    t = totals_of(id);
    expect_u64(t.n, 0, "a new consumer has made no allocation");
    expect_u64(t.bytes, 0, "a new consumer has asked for no bytes");
    held = tide_mem_account_get(id);
    all_totals(others);

    tide_mem_account_alloc(id, 100);
    tide_mem_account_alloc(id, 50);
    expect_i64(tide_mem_account_get(id), held + 150, "alloc adds to the bytes held");
    t = totals_of(id);
    expect_u64(t.n, 2, "two allocs");
    expect_u64(t.bytes, 150, "100 + 50 bytes asked for");

    tide_mem_account_free(id, 30);
    expect_i64(tide_mem_account_get(id), held + 120, "free subtracts from the bytes held");
    t = totals_of(id);
    expect_u64(t.n, 2, "a free is not an allocation");
    expect_u64(t.bytes, 150, "a free takes nothing from the totals");

    tide_mem_account_note_alloc(id, 7);
    tide_mem_account_note_alloc(id, 0);
    expect_i64(tide_mem_account_get(id), held + 120, "note_alloc leaves the bytes held alone");
    t = totals_of(id);
    expect_u64(t.n, 4, "two notes: two more allocations (one of 0 bytes)");
    expect_u64(t.bytes, 157, "and 7 more bytes");

    tide_mem_account_add(id, 1000);
    tide_mem_account_sub(id, 10);
    tide_mem_account_set(id, 5);
    t = totals_of(id);
    expect_u64(t.n, 4, "add, sub and set are not allocations");
    expect_u64(t.bytes, 157, "nor bytes asked for");
    expect_totals_unchanged_but(others, id, -1, "another consumer's updates");

    n = tide_mem_account_snapshot(e, TIDE_MEM_ACCOUNT_MAX);
    if (n <= (size_t)id) fail_msg("snapshot of %zu consumers lacks id %d", n, id);
    expect_str(e[id].name, "churn_test", "snapshot name");
    expect_i64(e[id].bytes, 5, "snapshot bytes");
    expect_u64(e[id].allocations, 4, "snapshot allocations");
    expect_u64(e[id].allocated_bytes, 157, "snapshot allocated bytes");
    tide_mem_account_set(id, 0);
}

enum { CHURN_THREADS = 4, CHURN_OPS = 100000 };

static void *churn_run(void *arg)
{
    int id = *(const int *)arg;

    for (int i = 0; i < CHURN_OPS; i++) {
        tide_mem_account_alloc(id, i % 64 + 1);
        tide_mem_account_free(id, i % 64 + 1);
        tide_mem_account_note_alloc(id, 3);
    }
    return NULL;
}

static void account_totals_from_several_threads_are_exact(void **state)
{
    pthread_t t[CHURN_THREADS];
    int id = churn_consumer("churn_threads");
    uint64_t want_bytes = 0;
    totals before = totals_of(id), after;
    int64_t held = tide_mem_account_get(id);

    (void)state;
    for (int i = 0; i < CHURN_OPS; i++) want_bytes += (uint64_t)(i % 64 + 1) + 3;
    for (int k = 0; k < CHURN_THREADS; k++)
        if (pthread_create(&t[k], NULL, churn_run, &id) != 0) fail_msg("pthread_create failed");
    for (int k = 0; k < CHURN_THREADS; k++) pthread_join(t[k], NULL);
    after = totals_of(id);
    expect_u64(after.n - before.n, 2ull * CHURN_OPS * CHURN_THREADS, "allocations of 4 threads");
    expect_u64(after.bytes - before.bytes, want_bytes * CHURN_THREADS, "bytes of 4 threads");
    expect_i64(tide_mem_account_get(id), held, "every alloc freed: held back where it was");
}

/* ---- the consumers' totals --------------------------------------------------------- */

static uint8_t churn_key[32];

static const uint8_t *key_of_i(unsigned i)
{
    memset(churn_key, 0, sizeof churn_key);
    memcpy(churn_key, &i, sizeof i);
    churn_key[31] = 0x5a;
    return churn_key;
}

static void node_cache_totals_grow_by_its_struct_slots_and_one_entry_per_insert(void **state)
{
    tide_cache_opts o;
    tide_cache *c = NULL;
    tide_cache_obj *obj = NULL;
    totals others[TIDE_MEM_ACCOUNT_MAX], t0, t1, t2;
    int id = churn_consumer("churn_cache");
    uint64_t per;

    (void)state;
    tide_cache_opts_init(&o);
    expect_i64(o.account_id, -1, "the default account_id is none");
    o.target_size = 64;
    o.account_id = id;
    t0 = totals_of(id);
    all_totals(others);
    expect_ok(tide_cache_create(&c, &o), "create a cache counted in churn_cache");
    t1 = totals_of(id);
    expect_u64(t1.n - t0.n, 2, "create: the cache struct and its slot array");
    if (t1.bytes - t0.bytes < 64 * sizeof(void *))
        fail_msg("create asked for %" PRIu64 " bytes, below 64 slots of %zu", t1.bytes - t0.bytes, sizeof(void *));
    expect_ok(tide_cache_obj_new(&obj, "value", 5, NULL), "an object");
    for (unsigned i = 0; i < 10; i++) expect_ok(tide_cache_insert(c, key_of_i(i), obj), "insert");
    t2 = totals_of(id);
    expect_u64(t2.n - t1.n, 10, "ten inserts below the slot count: ten entries");
    per = (t2.bytes - t1.bytes) / 10;
    expect_u64(t2.bytes - t1.bytes, per * 10, "every entry asks for the same bytes");
    if (per <= 32 || per > 32 + 128) fail_msg("an entry of a 32-byte key asked for %" PRIu64 " bytes", per);
    for (unsigned i = 10; i < 1000; i++) expect_ok(tide_cache_insert(c, key_of_i(i), obj), "insert");
    t1 = totals_of(id);
    if (t1.n - t2.n <= 990 || t1.n - t2.n > 990 + 10)
        fail_msg("990 more inserts past 64 slots: expected 990 entries and 1 to 10 slot arrays, got %" PRIu64
                 " allocations", t1.n - t2.n);
    if (t1.bytes - t2.bytes < 990 * per + 128 * sizeof(void *))
        fail_msg("990 entries and a doubled table asked for only %" PRIu64 " bytes", t1.bytes - t2.bytes);
    expect_totals_unchanged_but(others, id, -1, "a cache counted in churn_cache");
    tide_cache_obj_release(obj);
    tide_cache_destroy(c);
    expect_u64(totals_of(id).n, t1.n, "destroy is no allocation");

    /* The default: counted nowhere (a zeroed id would have gone to node_cache). */
    tide_cache_opts_init(&o);
    all_totals(others);
    expect_ok(tide_cache_create(&c, &o), "create a cache with the defaults");
    expect_ok(tide_cache_obj_new(&obj, "v", 1, NULL), "an object");
    expect_ok(tide_cache_insert(c, key_of_i(1), obj), "insert");
    expect_totals_unchanged_but(others, -1, -1, "a cache with account_id -1");
    tide_cache_obj_release(obj);
    tide_cache_destroy(c);
}

static void key_cache_totals_grow_by_its_struct_slots_and_one_entry_per_insert(void **state)
{
    tide_keycache_opts o;
    tide_keycache *k = NULL;
    totals others[TIDE_MEM_ACCOUNT_MAX], t0, t1, t2;
    int id = churn_consumer("churn_keycache");

    (void)state;
    tide_keycache_opts_init(&o);
    expect_i64(o.account_id, -1, "the default account_id is none");
    o.target_size = 64;
    o.account_id = id;
    t0 = totals_of(id);
    all_totals(others);
    expect_ok(tide_keycache_create(&k, &o), "create a key cache counted in churn_keycache");
    t1 = totals_of(id);
    expect_u64(t1.n - t0.n, 2, "create: the struct and its slot array");
    for (unsigned i = 0; i < 10; i++) expect_ok(tide_keycache_insert(k, key_of_i(i)), "insert");
    expect_ok(tide_keycache_insert(k, key_of_i(3)), "insert of a key already there");
    t2 = totals_of(id);
    expect_u64(t2.n - t1.n, 11, "eleven inserts: eleven entries (the refresh allocates, then frees)");
    expect_u64((t2.bytes - t1.bytes) % 11, 0, "every entry asks for the same bytes");
    if ((t2.bytes - t1.bytes) / 11 <= 32) fail_msg("a key entry asked for %" PRIu64 " bytes", (t2.bytes - t1.bytes) / 11);
    expect_totals_unchanged_but(others, id, -1, "a key cache counted in churn_keycache");
    tide_keycache_destroy(k);

    tide_keycache_opts_init(&o);
    all_totals(others);
    expect_ok(tide_keycache_create(&k, &o), "create a key cache with the defaults");
    expect_ok(tide_keycache_insert(k, key_of_i(1)), "insert");
    expect_totals_unchanged_but(others, -1, -1, "a key cache with account_id -1");
    tide_keycache_destroy(k);
}

static void store_pool_and_commit_totals_grow_by_the_chunks_tables_and_buffers_they_map(void **state)
{
    tide_store_create_opts co;
    tide_store_opts so;
    tide_store *s = NULL;
    char dir[2048];
    uint8_t val[100];
    totals others[TIDE_MEM_ACCOUNT_MAX], p0, p1, c0, c1;
    int pool = churn_consumer("churn_pool"), commit = churn_consumer("churn_commit");

    (void)state;
    if (th_scratch_make(dir, sizeof dir) != 0) fail_msg("scratch directory");
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    expect_ok(tide_store_create(dir, &co), "create a store");
    th_store_opts(&so);
    expect_i64(so.pool_account_id, -1, "the default pool id is none");
    expect_i64(so.commit_account_id, -1, "the default commit id is none");
    so.commit_interval_ms = 3600 * 1000;      /* commits only when the test syncs */
    so.note_alloc = tide_mem_account_note_alloc;
    so.pool_account_id = pool;
    so.commit_account_id = commit;
    expect_ok(tide_store_open(&s, dir, &so), "open it with churn totals");
    p0 = totals_of(pool);
    c0 = totals_of(commit);
    all_totals(others);
    memset(val, 7, sizeof val);
    for (unsigned i = 0; i < 10; i++) expect_ok(tide_store_insert(s, key_of_i(i), val, sizeof val), "insert");
    p1 = totals_of(pool);
    /* The first insert maps the table (1024 slots of 8 bytes) and an arena
     * chunk (an eighth of the 16 MiB burst, at most 1 MiB); ten small items
     * fit in them. */
    expect_u64(p1.n - p0.n, 2, "ten inserts into an empty pool: its table and one chunk");
    expect_u64(p1.bytes - p0.bytes, 1024 * 8 + (1u << 20), "a 8 KiB table and a 1 MiB chunk");
    expect_u64(totals_of(commit).n, c0.n, "no commit yet");
    expect_ok(tide_store_sync(s), "commit the ten");
    c1 = totals_of(commit);
    /* block, two 1 MiB write buffers, entries, the range of pre-images and
     * the read run (commit.c's ranged commit: no touched, split or log
     * arrays); more when a bucket is rebuilt
     * (its entry vector), splits or spills. */
    if (c1.n - c0.n < 6) fail_msg("a commit made %" PRIu64 " allocations, expected at least 6", c1.n - c0.n);
    if (c1.bytes - c0.bytes < 2u << 20)
        fail_msg("a commit asked for %" PRIu64 " bytes, below its two 1 MiB write buffers", c1.bytes - c0.bytes);
    expect_ok(tide_store_insert(s, key_of_i(100), val, sizeof val), "an insert after the commit");
    expect_u64(totals_of(pool).n - p1.n, 2, "the emptied pool maps a table and a chunk again");
    expect_totals_unchanged_but(others, pool, commit, "a store counted in churn_pool");
    expect_ok(tide_store_close(s), "close");
}

static void account_has_the_six_consumers_and_registers_up_to_sixteen(void **state)
{
    static const char *const builtin[] = { "node_cache", "key_cache", "store_insert_pool",
                                           "store_commit", "http", "store_tail_index" };
    tide_mem_account_entry e[TIDE_MEM_ACCOUNT_MAX + 4];
    char name[32];
    size_t n;
    int id, id2;

    (void)state;
    for (int i = 0; i < TIDE_MEM_ACCOUNT_BUILTIN; i++)
        expect_str(tide_mem_account_name(i), builtin[i], "built-in consumer name");
    expect_rc(tide_mem_account_register("key_cache", &id), 0, "registering a built-in name");
    expect_i64(id, TIDE_MEM_KEY_CACHE, "id of key_cache");
    expect_rc(tide_mem_account_register("wal_buffers", &id), 0, "registering wal_buffers");
    expect_rc(tide_mem_account_register("wal_buffers", &id2), 0, "registering it again");
    expect_i64(id2, id, "same name, same id");
    expect_rc(tide_mem_account_register("Bad-Name", &id2), TIDE_EINVAL, "a name with '-' and capitals");
    expect_rc(tide_mem_account_register("", &id2), TIDE_EINVAL, "an empty name");
    expect_rc(tide_mem_account_register("a_name_that_is_far_too_long_to_keep", &id2), TIDE_EINVAL,
              "a 35-character name");

    tide_mem_account_set(id, 4096);
    tide_mem_account_add(id, 100);
    tide_mem_account_sub(id, 96);
    n = tide_mem_account_snapshot(e, sizeof e / sizeof e[0]);
    if (n < TIDE_MEM_ACCOUNT_BUILTIN + 1)
        fail_msg("snapshot: expected at least 7 consumers, got %zu", n);
    expect_str(e[id].name, "wal_buffers", "snapshot name");
    expect_i64(e[id].bytes, 4100, "snapshot bytes of wal_buffers");

    for (int i = 0; (int)n < TIDE_MEM_ACCOUNT_MAX; i++, n++) {
        snprintf(name, sizeof name, "filler_%d", i);
        expect_rc(tide_mem_account_register(name, &id2), 0, "registering a filler");
    }
    expect_rc(tide_mem_account_register("one_too_many", &id2), TIDE_ENOMEM,
              "registering past TIDE_MEM_ACCOUNT_MAX");
    if (strstr(tide_last_error(), "16") == NULL)
        fail_msg("table full: expected the message to give the limit 16, got '%s'", tide_last_error());
    expect_i64((int64_t)tide_mem_account_snapshot(e, 2), TIDE_MEM_ACCOUNT_MAX,
               "snapshot count with a short buffer");
    if (tide_mem_account_name(TIDE_MEM_ACCOUNT_MAX) != NULL)
        fail_msg("name of id 16: expected NULL, got '%s'", tide_mem_account_name(TIDE_MEM_ACCOUNT_MAX));
}

/* ---- other allocators, in children ------------------------------------------------ */

static void jemalloc_preloaded_is_detected_with_its_version_and_background_thread(void **state)
{
    char out[16384], v[256];

    (void)state;
    run_preloaded(__func__, "libjemalloc.so.2", "libjemalloc2", "MALLOC_CONF=background_thread:true",
                  out, sizeof out);
    child_value(out, "evidence", v, sizeof v);
    printf("    child: %s\n", v);
    if (!child_value(out, "family", v, sizeof v) || strcmp(v, "jemalloc") != 0)
        fail_msg("preloaded jemalloc: expected family=jemalloc, got:\n%s", out);
    if (!child_value(out, "via", v, sizeof v) || strcmp(v, "preload") != 0)
        fail_msg("preloaded jemalloc: expected via=preload, got:\n%s", out);
    if (!child_value(out, "version", v, sizeof v) || !(v[0] >= '3' && v[0] <= '9' && v[1] == '.'))
        fail_msg("preloaded jemalloc: expected a version like 5.3.0-..., got:\n%s", out);
    printf("    jemalloc version %s\n", v);
    if (!child_value(out, "opt.background_thread", v, sizeof v) || strcmp(v, "true") != 0)
        fail_msg("preloaded jemalloc with MALLOC_CONF=background_thread:true: expected "
                 "opt.background_thread=true read back, got:\n%s", out);
    if (!child_value(out, "opt.dirty_decay_ms", v, sizeof v))
        fail_msg("preloaded jemalloc: expected opt.dirty_decay_ms, got:\n%s", out);
    child_value(out, "options", v, sizeof v);
    printf("    options: %s\n", v);
    if (!child_value(out, "stats_rc", v, sizeof v) || strcmp(v, "0") != 0 ||
        !child_value(out, "je.allocated", v, sizeof v) || strtoull(v, NULL, 10) == 0)
        fail_msg("preloaded jemalloc: expected statistics with allocated > 0, got:\n%s", out);
    if (!child_value(out, "release_result", v, sizeof v) || strcmp(v, "1") != 0)
        fail_msg("preloaded jemalloc: expected arena.<all>.purge to succeed, got:\n%s", out);
    child_value(out, "trim", v, sizeof v);
    if (strncmp(v, "trim allocator=jemalloc result=1 ", 33) != 0)
        fail_msg("preloaded jemalloc: expected a trim line for jemalloc, got '%s'", v);
}

static void tcmalloc_preloaded_is_detected_with_its_version(void **state)
{
    char out[16384], v[256];

    (void)state;
    run_preloaded(__func__, "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", NULL, out, sizeof out);
    if (!child_value(out, "family", v, sizeof v) || strcmp(v, "tcmalloc") != 0)
        fail_msg("preloaded tcmalloc: expected family=tcmalloc, got:\n%s", out);
    if (!child_value(out, "version", v, sizeof v) || strstr(v, "gperftools") == NULL)
        fail_msg("preloaded tcmalloc: expected a 'gperftools X.Y' version, got:\n%s", out);
    printf("    tcmalloc version %s\n", v);
    if (!child_value(out, "tc.heap_size", v, sizeof v) || strtoull(v, NULL, 10) == 0)
        fail_msg("preloaded tcmalloc: expected generic.heap_size > 0, got:\n%s", out);
    if (!child_value(out, "release_result", v, sizeof v) || strcmp(v, "1") != 0)
        fail_msg("preloaded tcmalloc: expected ReleaseFreeMemory to be called, got:\n%s", out);
}

static void mimalloc_preloaded_is_detected_with_its_version(void **state)
{
    char out[16384], v[256];

    (void)state;
    run_preloaded(__func__, "libmimalloc.so.2", "libmimalloc2.0", NULL, out, sizeof out);
    if (!child_value(out, "family", v, sizeof v) || strcmp(v, "mimalloc") != 0)
        fail_msg("preloaded mimalloc: expected family=mimalloc, got:\n%s", out);
    if (!child_value(out, "version", v, sizeof v) || strchr(v, '.') == NULL)
        fail_msg("preloaded mimalloc: expected a version like 2.0.9, got:\n%s", out);
    printf("    mimalloc version %s\n", v);
    if (!child_value(out, "release_result", v, sizeof v) || strcmp(v, "1") != 0)
        fail_msg("preloaded mimalloc: expected mi_collect to be called, got:\n%s", out);
}

static void an_allocator_loaded_but_not_serving_malloc_is_not_mistaken(void **state)
{
    static const struct { const char *soname, *package, *family; } libs[] = {
        { "libmimalloc.so.2", "libmimalloc2.0", "mimalloc" },
        { "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", "tcmalloc" },
    };
    char lib[512], mode[600], out[16384], v[256];
    int tried = 0, st;

    (void)state;
    if (under_sanitizer()) th_skip("the child would run under the sanitizer's allocator");
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        if (!find_library(libs[i].soname, lib, sizeof lib)) continue;
        tried++;
        snprintf(mode, sizeof mode, "dlopen:%s", lib);
        st = run_child(mode, NULL, out, sizeof out);
        if (st != 0) fail_msg("child with %s: expected exit 0, got %d:\n%s", mode, st, out);
        if (!child_value(out, "dlopen", v, sizeof v) || strcmp(v, "ok") != 0)
            fail_msg("child: expected dlopen of %s to work, got:\n%s", lib, out);
        if (!child_value(out, "family", v, sizeof v) || strcmp(v, "glibc") != 0)
            fail_msg("%s loaded with dlopen (its symbols present, its malloc unused): expected "
                     "family=glibc, got:\n%s", libs[i].family, out);
        printf("    %s loaded, glibc still detected\n", lib);
    }
    if (!tried)
        th_skip("neither libmimalloc.so.2 nor libtcmalloc_minimal.so.4 found; install the Debian package "
                "libmimalloc2.0 or libtcmalloc-minimal4");
}

/* ---- the heap report ---------------------------------------------------- */

static void a_heap_report_under_glibc_is_malloc_info_xml_and_tcmalloc_mimalloc_have_none(void **state)
{
    char *out = NULL;
    size_t len = 0;
    int kind = -1;
    (void)state;

    SKIP_UNLESS_GLIBC();
    assert_int_equal(tide_mem_alloc_heap_report(TIDE_MEM_ALLOC_GLIBC, NULL, &out, &len, &kind), 0);
    expect_u64((uint64_t)kind, TIDE_MEM_HEAP_GLIBC_INFO, "glibc's report kind");
    if (out == NULL || len < 20 || strncmp(out, "<malloc", 7) != 0 || out[len] != '\0'
        || strstr(out, "</malloc>") == NULL)
        fail_msg("glibc's heap report should be malloc_info's whole XML (<malloc ... </malloc>), NUL-terminated; "
                 "got %zu bytes: '%.80s'", len, out ? out : "(null)");
    free(out);
    for (int f = TIDE_MEM_ALLOC_TCMALLOC; f <= TIDE_MEM_ALLOC_SANITIZER; f++) {
        out = (char *)1;
        assert_int_equal(tide_mem_alloc_heap_report(f, NULL, &out, &len, &kind), 0);
        expect_u64((uint64_t)kind, TIDE_MEM_HEAP_NONE, tide_mem_alloc_family_name(f));
        if (out != NULL || len != 0) fail_msg("%s: no report, so *out NULL and *len 0", tide_mem_alloc_family_name(f));
    }
    /* jemalloc's family asked where jemalloc is not loaded: no mallctl, so
     * no profiling to dump. */
    assert_int_equal(tide_mem_alloc_heap_report(TIDE_MEM_ALLOC_JEMALLOC, NULL, &out, &len, &kind), 0);
    expect_u64((uint64_t)kind, TIDE_MEM_HEAP_PROF_OFF, "jemalloc absent");
    assert_null(out);
}

int main(void)
{
    const char *child = getenv("TIDE_TEST_MEM_CHILD");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(statm_rss_grows_when_64_mib_is_touched_and_shrinks_after_munmap),
        cmocka_unit_test(status_fields_parse_and_anon_file_shmem_add_up_to_vm_rss),
        cmocka_unit_test(smaps_rollup_is_readable_or_the_error_names_the_kernel),
        cmocka_unit_test(thread_faults_count_the_first_touch_of_fresh_pages),
        cmocka_unit_test(the_allocator_under_the_test_is_detected_with_its_version),
        cmocka_unit_test(mallopt_wrapper_is_recorded_and_shown_in_the_effective_options),
        cmocka_unit_test(glibc_options_from_the_environment_are_reported),
        cmocka_unit_test(mallinfo2_stats_are_plausible_and_in_use_grows_after_10_mb_of_small_mallocs),
        cmocka_unit_test(release_of_an_absent_family_is_refused_by_name),
        cmocka_unit_test(glibc_trim_returns_memory_freed_in_an_interleaved_pattern_on_four_threads),
        cmocka_unit_test(a_trim_pad_keeps_that_much_at_the_top_of_the_main_heap),
        cmocka_unit_test(trim_line_has_the_exact_format),
        cmocka_unit_test(a_real_trim_reports_rss_before_and_after_and_a_duration),
        cmocka_unit_test(account_counters_updated_from_several_threads_sum_exactly),
        cmocka_unit_test(account_totals_count_allocations_and_their_bytes_not_frees),
        cmocka_unit_test(account_totals_from_several_threads_are_exact),
        cmocka_unit_test(node_cache_totals_grow_by_its_struct_slots_and_one_entry_per_insert),
        cmocka_unit_test(key_cache_totals_grow_by_its_struct_slots_and_one_entry_per_insert),
        cmocka_unit_test_teardown(store_pool_and_commit_totals_grow_by_the_chunks_tables_and_buffers_they_map,
                                  th_teardown),
        cmocka_unit_test(account_has_the_six_consumers_and_registers_up_to_sixteen),
        cmocka_unit_test(jemalloc_preloaded_is_detected_with_its_version_and_background_thread),
        cmocka_unit_test(tcmalloc_preloaded_is_detected_with_its_version),
        cmocka_unit_test(mimalloc_preloaded_is_detected_with_its_version),
        cmocka_unit_test(an_allocator_loaded_but_not_serving_malloc_is_not_mistaken),
        cmocka_unit_test(a_heap_report_under_glibc_is_malloc_info_xml_and_tcmalloc_mimalloc_have_none),
    };

    if (child && strcmp(child, "pad") == 0) return pad_child();
    if (child) return child_main(child);
    return cmocka_run_group_tests_name("mem", tests, NULL, NULL);
}
