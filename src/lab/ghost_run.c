/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ghost_run.c: the RSS-ghost matrix's processes (ghost_run.h): the parent
 * that starts a fresh child per scenario and variant and makes its row,
 * and the child's side of the conversation.
 *
 * Layout: the child's reports; spawning a child; the machine; one row.
 *
 * Invariants:
 *   1. A row is "ok" only when its child exited 0 and printed every figure;
 *      otherwise "failed" with the reason (the child's, or how it died), or
 *      "skipped" with the reason (and the Debian package when a library is
 *      missing). The numbers of a row that is not ok are null.
 *   2. Every child's environment is the parent's minus every allocator
 *      variable (ti_lab_ghost_env_is_allocator), plus the variant's own.
 *   3. ghost_bytes == rss_after_free_bytes - rss_start_bytes - live_bytes
 *      for every ok row, as the child measured them.
 *   4. Every child started is waited for before its row is returned.
 *
 * Never: run a scenario in the parent process (its heap is not fresh), or
 * print: the child's caller prints the report, the parent's the rows.
 */
#include <errno.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/ghost_impl.h"
#include "lab/ghost_run.h"
#include "mem/alloc.h"
#include "mem/proc.h"
#include "tide/error.h"

extern char **environ;

/* ---- the child's reports ------------------------------------------------------- */

/* {"error": "<what>: <why>"} in *out; returns rc. */
static int child_error(const char *what, int rc, json_t **out)
{
    char msg[640];
    snprintf(msg, sizeof msg, "%s: %s", what,
             tide_last_error()[0] ? tide_last_error() : tide_strerror(rc));
    *out = json_pack("{s:s}", "error", msg);
    return rc;
}

int tide_lab_ghost_child(const char *scenario, const char *variant, double size, json_t **out)
{
    const tide_lab_ghost_variant *v = ti_lab_ghost_variant_find(variant ? variant : "");
    int si = tide_lab_ghost_scenario_find(scenario);
    tide_lab_ghost_sample s;
    char version[64];
    unsigned arenas = 0;
    json_t *o;
    int rc;

    *out = NULL;
    alarm(TIDE_LAB_GHOST_CHILD_TIMEOUT_S);   /* a hung allocator must not hang the matrix */
    if (v == NULL || si < 0) {
        *out = json_pack("{s:s}", "error", "unknown scenario or variant");
        return TIDE_EINVAL;
    }
    rc = ti_lab_ghost_variant_check(v, version, sizeof version);
    if (rc) return child_error("variant check", rc, out);
    rc = ti_lab_ghost_scenario_run((size_t)si, size, &v->after, &s);
    if (rc) return child_error(scenario, rc, out);
    if (v->family == TIDE_MEM_ALLOC_GLIBC) arenas = ti_lab_ghost_glibc_arenas();
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
    if (o == NULL) return TIDE_ENOMEM;
    json_object_set_new(o, "trim_result", s.trim_result < 0 ? json_null() : json_integer(s.trim_result));
    *out = o;
    return 0;
}

int tide_lab_ghost_probe(json_t **out)
{
    tide_mem_alloc_info info;
    int rc = tide_mem_alloc_detect(&info);

    if (rc) return child_error("allocator detection", rc, out);
    *out = json_pack("{s:s, s:s, s:s}", "allocator", tide_mem_alloc_family_name(info.family),
                     "version", info.version, "library", info.library);
    return 0;
}

/* ---- spawning a child ----------------------------------------------------------- */

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
        if (!ti_lab_ghost_env_is_allocator(environ[i])) envp[ne++] = environ[i];
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


/* ---- the machine ---------------------------------------------------------------- */

/* The version the allocator preloaded from `path` reports in a probe child,
 * when it is `family` (json null otherwise). */
static json_t *probe_version(const char *path, const char *family)
{
    static const char *const probe_args[] = { "ghost", "--child-probe", NULL };
    char why[256];
    child_out co;
    json_t *ver = json_null(), *o;
    const char *fam, *v;

    if (spawn_self(probe_args, NULL, path, &co, why, sizeof why) != 0) return ver;
    o = json_loads(co.text, 0, NULL);
    fam = o ? json_string_value(json_object_get(o, "allocator")) : NULL;
    v = o ? json_string_value(json_object_get(o, "version")) : NULL;
    if (fam && strcmp(fam, family) == 0 && v) {
        json_decref(ver);
        ver = json_string(v[0] ? v : "unknown");
    }
    json_decref(o);
    free(co.text);
    return ver;
}

/* The allocators the variants can preload (each library once, in the
 * variants' order), each probed. */
static json_t *allocators_read(void)
{
    json_t *allocs = json_object();

    json_object_set_new(allocs, "glibc", json_string(gnu_get_libc_version()));
    for (size_t i = 0; i < tide_lab_ghost_variant_count(); i++) {
        const tide_lab_ghost_variant *v = tide_lab_ghost_variant_at(i);
        const char *family = tide_mem_alloc_family_name(v->family);
        char path[PATH_MAX];
        int seen = 0;

        if (v->preload == NULL) continue;
        for (size_t j = 0; j < i; j++) {
            const char *pj = tide_lab_ghost_variant_at(j)->preload;
            seen |= pj && strcmp(pj, v->preload) == 0;
        }
        if (seen) continue;
        json_object_set_new(allocs, family, ti_lab_ghost_library_find(v->preload, path, sizeof path) == 0
                                            ? probe_version(path, family) : json_null());
    }
    return allocs;
}

json_t *tide_lab_ghost_machine(void)
{
    struct utsname u;
    char kernel[400];
    json_t *m;

    if (uname(&u) == 0)
        snprintf(kernel, sizeof kernel, "%s %s %s", u.sysname, u.release, u.machine);
    else
        snprintf(kernel, sizeof kernel, "unknown");
    m = json_pack("{s:I, s:s, s:s, s:s}",
                  "page_size", (json_int_t)tide_mem_proc_page_size(),
                  "kernel", kernel,
                  "glibc", gnu_get_libc_version(),
                  "tide_allocator", tide_mem_alloc_family_name(tide_mem_alloc_family()));
    if (m) json_object_set_new(m, "allocators", allocators_read());
    return m;
}

/* ---- one row ---------------------------------------------------------------------- */

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
    json_object_set_new(r, "ghost_bytes", json_integer(ti_lab_ghost_bytes(&s)));
    json_object_set_new(r, "peak_growth_bytes", json_integer(peak - start));
    json_object_set_new(r, "returned", json_boolean(ti_lab_ghost_returned(&s)));
    json_object_set_new(r, "allocated_bytes", json_integer(alloc));
    json_object_set_new(r, "objects", json_integer(objs));
    json_object_set_new(r, "threads", json_integer(threads));
    json_object_set_new(r, "elapsed_ms", json_real((double)us / 1000.0));
    json_object_set_new(r, "arenas", arenas > 0 ? json_integer(arenas) : json_null());
    json_object_set_new(r, "trim_result", json_is_integer(trim) ? json_incref(trim) : json_null());
}

json_t *tide_lab_ghost_row(const char *scenario, const tide_lab_ghost_variant *v, double size, int sanitized)
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
    if (v->preload && ti_lab_ghost_library_find(v->preload, path, sizeof path) != 0) {
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

