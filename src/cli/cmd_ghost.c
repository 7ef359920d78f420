/*
 * cmd_ghost.c: `tide ghost`, the RSS-ghost matrix.
 *
 * For every selected scenario and variant (src/lab/ghost.h) the parent
 * starts a fresh child: it re-executes its own binary (/proc/self/exe) as
 *     tide ghost --child SCENARIO --variant VARIANT --size F
 * with the variant's environment and LD_PRELOAD, because an allocator is
 * chosen when a process starts. The child checks that the variant took
 * effect (which allocator serves malloc, and its settings), runs the
 * scenario, and prints one JSON object on stdout; the parent reads it
 * through a pipe, and prints a table, one JSON object (--json) or CSV
 * (--csv). A second hidden mode, `tide ghost --child-probe`, prints the
 * allocator a child got and its version, for the header line.
 *
 * Layout: options and lists; the child modes; spawning a child; the
 * machine header; one row; the three outputs; the verb.
 *
 * Invariants:
 *   1. A row is "ok" only when its child exited 0 and printed every figure;
 *      otherwise "failed" with the reason (the child's, or how it died), or
 *      "skipped" with the reason (and the Debian package when a library is
 *      missing). The numbers of a row that is not ok are null.
 *   2. Every child's environment is the parent's minus every allocator
 *      variable (tide_lab_ghost_env_is_allocator), plus the variant's own.
 *   3. ghost_bytes == rss_after_free_bytes - rss_start_bytes - live_bytes
 *      for every ok row, as the child measured them.
 *
 * Never: run a scenario in the parent process (its heap is not fresh), or
 * print anything but the object on a child's stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lab/ghost.h"
#include "mem/alloc.h"
#include "mem/proc.h"
#include "tide/error.h"

extern char **environ;

#define VERB "ghost"
#define MAX_SCENARIOS 16
#define MAX_VARIANTS  16
#define CHILD_TIMEOUT_S 300

enum { OUT_TABLE, OUT_JSON, OUT_CSV };

/* ---- lists ------------------------------------------------------------- */

/* Parse "a,b,c" into indexes of known names (dupes dropped, table order
 * kept by the caller). Returns CLI_OK or CLI_USAGE with a message. */
static int parse_scenarios(const char *text, int *chosen)
{
    char buf[512], *save = NULL, *tok;

    if (strlen(text) >= sizeof buf) return cli_usage(VERB, "--scenario: list too long");
    strcpy(buf, text);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int i = tide_lab_ghost_scenario_find(tok);
        if (i < 0) {
            char names[256] = "";
            for (size_t k = 0; k < tide_lab_ghost_scenario_count(); k++) {
                strcat(names, k ? ", " : "");
                strcat(names, tide_lab_ghost_scenario_name(k));
            }
            return cli_usage(VERB, "--scenario: '%s' is not a scenario (%s)", tok, names);
        }
        chosen[i] = 1;
    }
    return CLI_OK;
}

static int parse_variants(const char *text, int *chosen)
{
    char buf[512], *save = NULL, *tok;

    if (strlen(text) >= sizeof buf) return cli_usage(VERB, "--variant: list too long");
    strcpy(buf, text);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < tide_lab_ghost_variant_count(); i++)
            if (strcmp(tide_lab_ghost_variant_at(i)->name, tok) == 0) break;
        if (i == tide_lab_ghost_variant_count()) {
            char names[256] = "";
            for (size_t k = 0; k < tide_lab_ghost_variant_count(); k++) {
                strcat(names, k ? ", " : "");
                strcat(names, tide_lab_ghost_variant_at(k)->name);
            }
            return cli_usage(VERB, "--variant: '%s' is not a variant (%s)", tok, names);
        }
        chosen[i] = 1;
    }
    return CLI_OK;
}

static int any(const int *chosen, size_t n)
{
    for (size_t i = 0; i < n; i++) if (chosen[i]) return 1;
    return 0;
}

/* ---- the child modes --------------------------------------------------- */

/* Print `obj` as one line on stdout and drop it. */
static void print_json_line(json_t *obj)
{
    char *text = json_dumps(obj, JSON_COMPACT);
    if (text) {
        fputs(text, stdout);
        fputc('\n', stdout);
        free(text);
    }
    json_decref(obj);
    fflush(stdout);
}

static int child_error(const char *what, int rc)
{
    char msg[640];
    snprintf(msg, sizeof msg, "%s: %s", what,
             tide_last_error()[0] ? tide_last_error() : tide_strerror(rc));
    print_json_line(json_pack("{s:s}", "error", msg));
    return CLI_FAIL;
}

static int child_run(const char *scenario, const char *variant, double size)
{
    const tide_lab_ghost_variant *v = tide_lab_ghost_variant_find(variant ? variant : "");
    int si = tide_lab_ghost_scenario_find(scenario);
    tide_lab_ghost_sample s;
    char version[64];
    unsigned arenas = 0;
    json_t *o;
    int rc;

    alarm(CHILD_TIMEOUT_S);   /* a hung allocator must not hang the matrix */
    if (v == NULL || si < 0) {
        print_json_line(json_pack("{s:s}", "error", "unknown scenario or variant"));
        return CLI_USAGE;
    }
    rc = tide_lab_ghost_variant_check(v, version, sizeof version);
    if (rc) return child_error("variant check", rc);
    rc = tide_lab_ghost_scenario_run((size_t)si, size, &v->after, &s);
    if (rc) return child_error(scenario, rc);
    if (v->family == TIDE_MEM_ALLOC_GLIBC) arenas = tide_lab_ghost_glibc_arenas();
    o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:I}",
                  "allocator", tide_mem_alloc_family_name(tide_mem_alloc_family()),
                  "allocator_version", version,
                  "scenario", scenario,
                  "rss_start_bytes", (json_int_t)s.rss_start,
                  "rss_peak_bytes", (json_int_t)s.rss_peak,
                  "rss_after_free_bytes", (json_int_t)s.rss_after_free,
                  "live_bytes", (json_int_t)s.live_bytes,
                  "allocated_bytes", (json_int_t)s.allocated_bytes,
                  "objects", (json_int_t)s.objects,
                  "elapsed_us", (json_int_t)s.elapsed_us,
                  "threads", (int)s.threads,
                  "arenas", (json_int_t)arenas);
    if (o == NULL) return CLI_FAIL;
    json_object_set_new(o, "trim_result", s.trim_result < 0 ? json_null() : json_integer(s.trim_result));
    print_json_line(o);
    return CLI_OK;
}

static int child_probe(void)
{
    tide_mem_alloc_info info;
    int rc = tide_mem_alloc_detect(&info);

    if (rc) return child_error("allocator detection", rc);
    print_json_line(json_pack("{s:s, s:s, s:s}", "allocator", tide_mem_alloc_family_name(info.family),
                              "version", info.version, "library", info.library));
    return CLI_OK;
}

/* ---- spawning a child -------------------------------------------------- */

typedef struct child_out {
    char  *text;       /* all of its stdout, NUL-terminated; caller frees */
    int    status;     /* waitpid's */
} child_out;

/*
 * Run this binary again with `args` (NULL-terminated, after argv[0]),
 * with the environment cleaned of allocator variables, plus `env_add`
 * (NULL-terminated "NAME=value" entries, may be NULL) and, when `preload`
 * is set, LD_PRELOAD=preload. Collects stdout. Returns 0, or -1 with a
 * reason in `why`.
 */
static int spawn_self(const char *const *args, const char *const *env_add, const char *preload,
                      child_out *out, char *why, size_t whycap)
{
    char exe[PATH_MAX], preload_var[PATH_MAX + 16];
    char **envp = NULL, **argv = NULL;
    size_t nenv = 0, nargs = 0, ne = 0, n = 0, cap = 0;
    int fds[2] = { -1, -1 };
    pid_t pid = -1;
    int rc = -1;
    ssize_t len;

    memset(out, 0, sizeof *out);
    len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) { snprintf(why, whycap, "readlink /proc/self/exe: %s", strerror(errno)); goto out; }
    exe[len] = '\0';
    while (environ[nenv]) nenv++;
    while (args[nargs]) nargs++;
    envp = calloc(nenv + 8, sizeof *envp);
    argv = calloc(nargs + 2, sizeof *argv);
    if (envp == NULL || argv == NULL) { snprintf(why, whycap, "out of memory"); goto out; }
    for (size_t i = 0; i < nenv; i++)
        if (!tide_lab_ghost_env_is_allocator(environ[i])) envp[ne++] = environ[i];
    for (size_t i = 0; env_add && env_add[i] && i < 4; i++) envp[ne++] = (char *)env_add[i];
    if (preload) {
        snprintf(preload_var, sizeof preload_var, "LD_PRELOAD=%s", preload);
        envp[ne++] = preload_var;
    }
    argv[0] = exe;
    for (size_t i = 0; i < nargs; i++) argv[i + 1] = (char *)args[i];
    if (pipe(fds) != 0) { snprintf(why, whycap, "pipe: %s", strerror(errno)); goto out; }
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) { snprintf(why, whycap, "fork: %s", strerror(errno)); goto out; }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execve(exe, argv, envp);
        fprintf(stderr, "tide ghost: exec %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    fds[1] = -1;
    for (;;) {
        char *nt;
        ssize_t got;
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            nt = realloc(out->text, cap);
            if (nt == NULL) { snprintf(why, whycap, "out of memory"); break; }
            out->text = nt;
        }
        got = read(fds[0], out->text + n, cap - n - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
    }
    if (out->text) out->text[n] = '\0';
    while (waitpid(pid, &out->status, 0) < 0 && errno == EINTR) { }
    pid = -1;
    rc = out->text ? 0 : -1;
out:
    if (fds[0] >= 0) close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
    free(envp);
    free(argv);
    if (rc) { free(out->text); out->text = NULL; }
    return rc;
}

/* ---- the machine header ------------------------------------------------ */

/* The allocators a preloaded variant can bring, each probed once. */
static const struct {
    const char *family;
    const char *file;
    const char *package;
} preloadable[] = {
    { "jemalloc", "libjemalloc.so.2", "libjemalloc2" },
    { "tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4" },
    { "mimalloc", "libmimalloc.so.2", "libmimalloc2.0" },
};

/* Build "machine": page size, kernel, glibc, and each allocator's version
 * (null when its library is missing or the probe did not get it). */
static json_t *machine_read(void)
{
    struct utsname u;
    char kernel[400];
    json_t *m, *allocs;

    if (uname(&u) == 0)
        snprintf(kernel, sizeof kernel, "%s %s %s", u.sysname, u.release, u.machine);
    else
        snprintf(kernel, sizeof kernel, "unknown");
    allocs = json_object();
    json_object_set_new(allocs, "glibc", json_string(gnu_get_libc_version()));
    for (size_t i = 0; i < sizeof preloadable / sizeof preloadable[0]; i++) {
        static const char *const probe_args[] = { "ghost", "--child-probe", NULL };
        char path[PATH_MAX], why[256];
        child_out co;
        json_t *ver = json_null();

        if (tide_lab_ghost_library_find(preloadable[i].file, path, sizeof path) == 0 &&
            spawn_self(probe_args, NULL, path, &co, why, sizeof why) == 0) {
            json_t *o = json_loads(co.text, 0, NULL);
            const char *fam = o ? json_string_value(json_object_get(o, "allocator")) : NULL;
            const char *v = o ? json_string_value(json_object_get(o, "version")) : NULL;
            if (fam && strcmp(fam, preloadable[i].family) == 0 && v)
                ver = json_string(v[0] ? v : "unknown");
            json_decref(o);
            free(co.text);
        }
        json_object_set_new(allocs, preloadable[i].family, ver);
    }
    m = json_pack("{s:I, s:s, s:s, s:s}",
                  "page_size", (json_int_t)tide_mem_proc_page_size(),
                  "kernel", kernel,
                  "glibc", gnu_get_libc_version(),
                  "tide_allocator", tide_mem_alloc_family_name(tide_mem_alloc_family()));
    json_object_set_new(m, "allocators", allocs);
    return m;
}

/* ---- one row ----------------------------------------------------------- */

static const char *const row_numbers[] = {
    "rss_start_bytes", "rss_peak_bytes", "rss_after_free_bytes", "live_bytes",
    "ghost_bytes", "peak_growth_bytes", "allocated_bytes", "objects", "threads",
    "elapsed_ms", NULL
};

static json_t *row_new(const char *scenario, const tide_lab_ghost_variant *v)
{
    json_t *r = json_pack("{s:s, s:s, s:b, s:s, s:n, s:n, s:n, s:n, s:n, s:n, s:i}",
                          "scenario", scenario, "variant", v->name, "skipped", 0,
                          "status", "failed", "reason", "package", "allocator",
                          "allocator_version", "returned", "trim_result",
                          "wait_ms", (int)v->after.wait_ms);
    for (size_t i = 0; row_numbers[i]; i++) json_object_set_new(r, row_numbers[i], json_null());
    json_object_set_new(r, "arenas", json_null());
    return r;
}

static void row_skip(json_t *r, const char *reason, const char *package)
{
    json_object_set_new(r, "skipped", json_true());
    json_object_set_new(r, "status", json_string("skipped"));
    json_object_set_new(r, "reason", json_string(reason));
    if (package) json_object_set_new(r, "package", json_string(package));
}

static void row_fail(json_t *r, const char *reason)
{
    json_object_set_new(r, "status", json_string("failed"));
    json_object_set_new(r, "reason", json_string(reason));
}

static int64_t jint(json_t *o, const char *key, int *ok)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) { *ok = 0; return 0; }
    return json_integer_value(v);
}

/* Fill `r` from the child's object. */
static void row_take(json_t *r, json_t *c)
{
    int ok = 1;
    int64_t start = jint(c, "rss_start_bytes", &ok), peak = jint(c, "rss_peak_bytes", &ok);
    int64_t after = jint(c, "rss_after_free_bytes", &ok), live = jint(c, "live_bytes", &ok);
    int64_t alloc = jint(c, "allocated_bytes", &ok), objs = jint(c, "objects", &ok);
    int64_t us = jint(c, "elapsed_us", &ok), threads = jint(c, "threads", &ok);
    int64_t arenas = jint(c, "arenas", &ok);
    const char *fam = json_string_value(json_object_get(c, "allocator"));
    const char *ver = json_string_value(json_object_get(c, "allocator_version"));
    json_t *trim = json_object_get(c, "trim_result");
    tide_lab_ghost_sample s;

    if (!ok || fam == NULL) {
        row_fail(r, "the child's report lacks a figure");
        return;
    }
    memset(&s, 0, sizeof s);
    s.rss_start = (uint64_t)start;
    s.rss_peak = (uint64_t)peak;
    s.rss_after_free = (uint64_t)after;
    s.live_bytes = (uint64_t)live;
    json_object_set_new(r, "status", json_string("ok"));
    json_object_set_new(r, "allocator", json_string(fam));
    json_object_set_new(r, "allocator_version", ver && ver[0] ? json_string(ver) : json_null());
    json_object_set_new(r, "rss_start_bytes", json_integer(start));
    json_object_set_new(r, "rss_peak_bytes", json_integer(peak));
    json_object_set_new(r, "rss_after_free_bytes", json_integer(after));
    json_object_set_new(r, "live_bytes", json_integer(live));
    json_object_set_new(r, "ghost_bytes", json_integer(tide_lab_ghost_bytes(&s)));
    json_object_set_new(r, "peak_growth_bytes", json_integer(peak - start));
    json_object_set_new(r, "returned", json_boolean(tide_lab_ghost_returned(&s)));
    json_object_set_new(r, "allocated_bytes", json_integer(alloc));
    json_object_set_new(r, "objects", json_integer(objs));
    json_object_set_new(r, "threads", json_integer(threads));
    json_object_set_new(r, "elapsed_ms", json_real((double)us / 1000.0));
    json_object_set_new(r, "arenas", arenas > 0 ? json_integer(arenas) : json_null());
    json_object_set_new(r, "trim_result", json_is_integer(trim) ? json_incref(trim) : json_null());
}

/* Run one scenario under one variant in a child; returns the row. */
static json_t *row_run(const char *scenario, const tide_lab_ghost_variant *v, double size,
                       int sanitized)
{
    char path[PATH_MAX], why[512], size_text[32];
    const char *add[3] = { v->env[0], v->env[1], NULL };
    const char *args[] = { "ghost", "--child", scenario, "--variant", v->name, "--size",
                           size_text, NULL };
    json_t *r = row_new(scenario, v), *c = NULL;
    child_out co = { 0 };

    snprintf(size_text, sizeof size_text, "%.17g", size);
    if (sanitized) {
        row_skip(r, "tide is built with a sanitizer, whose allocator serves malloc "
                    "whatever is preloaded", NULL);
        goto out;
    }
    if (v->preload && tide_lab_ghost_library_find(v->preload, path, sizeof path) != 0) {
        snprintf(why, sizeof why, "%s; install the Debian package %s", tide_last_error(),
                 v->package);
        row_skip(r, why, v->package);
        goto out;
    }
    if (spawn_self(args, add, v->preload ? path : NULL, &co, why, sizeof why) != 0) {
        row_fail(r, why);
        goto out;
    }
    c = json_loads(co.text, 0, NULL);
    if (WIFSIGNALED(co.status)) {
        snprintf(why, sizeof why, "the child was killed by signal %d (%s)", WTERMSIG(co.status),
                 strsignal(WTERMSIG(co.status)));
        row_fail(r, why);
    } else if (c && json_is_string(json_object_get(c, "error"))) {
        row_fail(r, json_string_value(json_object_get(c, "error")));
    } else if (!WIFEXITED(co.status) || WEXITSTATUS(co.status) != 0) {
        snprintf(why, sizeof why, "the child exited with status %d", WEXITSTATUS(co.status));
        row_fail(r, why);
    } else if (c == NULL) {
        row_fail(r, "the child printed no JSON object");
    } else {
        row_take(r, c);
    }
out:
    json_decref(c);
    free(co.text);
    return r;
}

/* ---- output ------------------------------------------------------------ */

static double mib(json_t *r, const char *key)
{
    return (double)json_integer_value(json_object_get(r, key)) / (1024.0 * 1024.0);
}

static const char *str_or(json_t *r, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(r, key));
    return s ? s : dflt;
}

static void table_header(json_t *m, double size)
{
    json_t *a = json_object_get(m, "allocators");
    const char *name;
    json_t *v;

    printf("tide ghost: page %" PRId64 " B, kernel %s, glibc %s",
           (int64_t)json_integer_value(json_object_get(m, "page_size")),
           str_or(m, "kernel", "?"), str_or(m, "glibc", "?"));
    json_object_foreach(a, name, v) {
        if (strcmp(name, "glibc") == 0) continue;
        printf(", %s %s", name, json_is_string(v) ? json_string_value(v) : "(absent)");
    }
    printf("; size %g\n", size);
    printf("RSS in MiB; ghost = after - start - live; back = ghost under 10%% of (peak - start)\n\n");
    printf("%-13s %-14s %8s %8s %8s %8s %8s  %s\n", "scenario", "variant", "start", "peak",
           "after", "live", "ghost", "back");
}

static void table_row(json_t *r)
{
    const char *st = str_or(r, "status", "failed");

    printf("%-13s %-14s ", str_or(r, "scenario", "?"), str_or(r, "variant", "?"));
    if (strcmp(st, "ok") == 0) {
        printf("%8.2f %8.2f %8.2f %8.2f %8.2f  %s\n", mib(r, "rss_start_bytes"),
               mib(r, "rss_peak_bytes"), mib(r, "rss_after_free_bytes"), mib(r, "live_bytes"),
               mib(r, "ghost_bytes"),
               json_is_true(json_object_get(r, "returned")) ? "yes" : "NO");
    } else if (strcmp(st, "skipped") == 0) {
        const char *pkg = str_or(r, "package", NULL);
        if (pkg) printf("skipped: install %s\n", pkg);
        else printf("skipped: %s\n", str_or(r, "reason", "?"));
    } else {
        printf("FAILED: %s\n", str_or(r, "reason", "?"));
    }
    fflush(stdout);
}

static void csv_text(const char *s)
{
    if (s == NULL) return;
    if (strpbrk(s, ",\"\n") == NULL) { fputs(s, stdout); return; }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s == '\n' ? ' ' : *s);
    }
    putchar('"');
}

static const char *const csv_columns[] = {
    "scenario", "variant", "skipped", "status", "allocator", "allocator_version",
    "rss_start_bytes", "rss_peak_bytes", "rss_after_free_bytes", "live_bytes", "ghost_bytes",
    "peak_growth_bytes", "returned", "allocated_bytes", "objects", "threads", "arenas",
    "trim_result", "wait_ms", "elapsed_ms", "package", "reason", NULL
};

static void csv_row(json_t *r)
{
    for (size_t i = 0; csv_columns[i]; i++) {
        json_t *v = json_object_get(r, csv_columns[i]);
        if (i) putchar(',');
        if (json_is_string(v)) csv_text(json_string_value(v));
        else if (json_is_boolean(v)) fputs(json_is_true(v) ? "true" : "false", stdout);
        else if (json_is_integer(v)) printf("%" PRId64, (int64_t)json_integer_value(v));
        else if (json_is_real(v)) printf("%.3f", json_real_value(v));
    }
    putchar('\n');
}

/* ---- the verb ---------------------------------------------------------- */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cli_cmd_ghost(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json",        no_argument,       NULL, 'j' },
        { "csv",         no_argument,       NULL, 'c' },
        { "scenario",    required_argument, NULL, 's' },
        { "variant",     required_argument, NULL, 'v' },
        { "size",        required_argument, NULL, 'z' },
        { "help",        no_argument,       NULL, 'h' },
        { "child",       required_argument, NULL, 'C' },
        { "child-probe", no_argument,       NULL, 'P' },
        { NULL, 0, NULL, 0 },
    };
    int want_s[MAX_SCENARIOS] = { 0 }, want_v[MAX_VARIANTS] = { 0 };
    const char *child = NULL, *variant_text = NULL;
    int out = OUT_TABLE, probe = 0, failed = 0, sanitized, c, rc;
    double size = 1.0, t0;
    json_t *machine = NULL, *results = NULL, *doc;

    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': out = OUT_JSON; break;
        case 'c': out = OUT_CSV; break;
        case 's':
            rc = parse_scenarios(optarg, want_s);
            if (rc) return rc;
            break;
        case 'v':
            variant_text = optarg;
            rc = parse_variants(optarg, want_v);
            if (rc) return rc;
            break;
        case 'z':
            if (cli_parse_double(optarg, &size) != 0 || !(size > 0.0 && size <= 64.0))
                return cli_usage(VERB, "--size '%s' is not a number greater than 0 and at most 64",
                                 optarg);
            break;
        case 'h': cli_help(VERB, stdout); return CLI_OK;
        case 'C': child = optarg; break;
        case 'P': probe = 1; break;
        default: return cli_option_error(VERB, c, argv);
        }
    }
    if (optind < argc) return cli_usage(VERB, "unexpected argument '%s'", argv[optind]);
    if (probe) return child_probe();
    if (child) return child_run(child, variant_text, size);
    if (!any(want_s, tide_lab_ghost_scenario_count()))
        for (size_t i = 0; i < tide_lab_ghost_scenario_count(); i++) want_s[i] = 1;
    if (!any(want_v, tide_lab_ghost_variant_count()))
        for (size_t i = 0; i < tide_lab_ghost_variant_count(); i++) want_v[i] = 1;

    t0 = wall_now();
    sanitized = tide_mem_alloc_family() == TIDE_MEM_ALLOC_SANITIZER;
    machine = machine_read();
    results = json_array();
    if (machine == NULL || results == NULL) { rc = cli_error(VERB, "out of memory"); goto done; }
    if (out == OUT_TABLE) table_header(machine, size);
    if (out == OUT_CSV)
        for (size_t i = 0; csv_columns[i]; i++) printf("%s%s", i ? "," : "", csv_columns[i]);
    if (out == OUT_CSV) putchar('\n');
    for (size_t si = 0; si < tide_lab_ghost_scenario_count(); si++) {
        if (!want_s[si]) continue;
        for (size_t vi = 0; vi < tide_lab_ghost_variant_count(); vi++) {
            json_t *r;
            if (!want_v[vi]) continue;
            r = row_run(tide_lab_ghost_scenario_name(si), tide_lab_ghost_variant_at(vi), size,
                        sanitized);
            if (strcmp(str_or(r, "status", ""), "failed") == 0) {
                failed++;
                fprintf(stderr, "tide ghost: %s under %s: %s\n", str_or(r, "scenario", "?"),
                        str_or(r, "variant", "?"), str_or(r, "reason", "?"));
            }
            if (out == OUT_TABLE) table_row(r);
            if (out == OUT_CSV) csv_row(r);
            json_array_append_new(results, r);
        }
    }
    if (out == OUT_TABLE)
        printf("\n%zu rows, %d failed, %.1f s\n", json_array_size(results), failed,
               wall_now() - t0);
    if (out == OUT_JSON) {
        doc = json_pack("{s:O, s:f, s:f, s:O}", "machine", machine, "size", size,
                        "wall_seconds", wall_now() - t0, "results", results);
        if (doc == NULL || json_dumpf(doc, stdout, JSON_INDENT(2)) != 0) {
            json_decref(doc);
            rc = cli_error(VERB, "could not write the JSON document");
            goto done;
        }
        putchar('\n');
        json_decref(doc);
    }
    rc = failed ? CLI_FAIL : CLI_OK;
done:
    json_decref(machine);
    json_decref(results);
    return rc;
}
