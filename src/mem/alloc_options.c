/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc_options.c: the options in force for an allocator family, as text
 * (tide_mem_alloc_options_read in alloc.h has the list per family).
 *
 * What the allocator can say about itself is read back from it (jemalloc's
 * mallctl, tcmalloc's properties); what it cannot is read from where it
 * read it (the environment, GLIBC_TUNABLES) or from Tide's own record
 * (alloc_mallopt.c).
 *
 * Invariants:
 *   1. out->count <= TIDE_MEM_ALLOC_OPTIONS_MAX; whatever did not fit sets
 *      truncated, never overruns.
 *   2. An option that cannot be read is left out, not guessed.
 *
 * Never: allocate (the options are read into the caller's struct).
 */
#include "mem/alloc_impl.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "tide/error.h"
#include "util/err.h"

extern char **environ;

static void add_option(tide_mem_alloc_options *o, const char *name, size_t name_len,
                       const char *value, const char *source)
{
    tide_mem_alloc_option *op;

    if (o->count == TIDE_MEM_ALLOC_OPTIONS_MAX) {
        o->truncated = 1;
        return;
    }
    op = &o->opt[o->count++];
    if (name_len >= sizeof op->name) {
        name_len = sizeof op->name - 1;
        o->truncated = 1;
    }
    memcpy(op->name, name, name_len);
    op->name[name_len] = '\0';
    if (strlen(value) >= sizeof op->value) o->truncated = 1;
    ti_alloc_copy_str(op->value, sizeof op->value, value);
    ti_alloc_copy_str(op->source, sizeof op->source, source);
}

static void add_env(tide_mem_alloc_options *o, const char *var)
{
    const char *v = getenv(var);

    if (v) add_option(o, var, strlen(var), v, "env");
}

/* Every environment variable whose name starts with `prefix`. */
static void add_env_prefixed(tide_mem_alloc_options *o, const char *prefix)
{
    size_t pl = strlen(prefix);

    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq && strncmp(*e, prefix, pl) == 0)
            add_option(o, *e, (size_t)(eq - *e), eq + 1, "env");
    }
}

/* The glibc.malloc.* items of GLIBC_TUNABLES ("a.b.c=v:d.e.f=w"). */
static void add_tunables(tide_mem_alloc_options *o)
{
    const char *t = getenv("GLIBC_TUNABLES");
    char value[80];

    while (t && *t) {
        size_t n = strcspn(t, ":");
        const char *eq = memchr(t, '=', n);
        if (eq && n > 13 && strncmp(t, "glibc.malloc.", 13) == 0) {
            size_t vl = n - (size_t)(eq + 1 - t);
            if (vl >= sizeof value) { vl = sizeof value - 1; o->truncated = 1; }
            memcpy(value, eq + 1, vl);
            value[vl] = '\0';
            add_option(o, t, (size_t)(eq - t), value, "tunables");
        }
        t += n;
        if (*t) t++;
    }
}

/* The type of a jemalloc opt.* value, for add_jemalloc. */
enum je_type { JE_BOOL, JE_SSIZE, JE_UNSIGNED };

/* The jemalloc option `ctl` read back with mallctl, as `name`. */
static void add_jemalloc(tide_mem_alloc_options *o, const char *ctl, const char *name, enum je_type type)
{
    union { bool b; ssize_t z; unsigned u; } v;
    size_t sz = type == JE_BOOL ? sizeof v.b : type == JE_SSIZE ? sizeof v.z : sizeof v.u;
    char text[32];

    if (ti_alloc_syms.mallctl(ctl, &v, &sz, NULL, 0) != 0) return;
    switch (type) {
    case JE_BOOL:     snprintf(text, sizeof text, "%s", v.b ? "true" : "false"); break;
    case JE_SSIZE:    snprintf(text, sizeof text, "%zd", v.z); break;
    case JE_UNSIGNED: snprintf(text, sizeof text, "%u", v.u); break;
    }
    add_option(o, name, strlen(name), text, "mallctl");
}

static void add_tc_property(tide_mem_alloc_options *o, const char *prop)
{
    size_t v = 0;
    char text[32];

    if (ti_alloc_syms.tc_get_prop(prop, &v)) {
        snprintf(text, sizeof text, "%zu", v);
        add_option(o, prop, strlen(prop), text, "property");
    }
}

/* One recorded mallopt call (ti_alloc_mallopt_each). */
static void add_mallopt(void *arg, const char *name, int value)
{
    char text[32];

    snprintf(text, sizeof text, "%d", value);
    add_option(arg, name, strlen(name), text, "mallopt");
}

int tide_mem_alloc_options_read(int family, tide_mem_alloc_options *out)
{
    ti_alloc_get_syms();
    memset(out, 0, sizeof *out);
    out->family = family;
    switch (family) {
    case TIDE_MEM_ALLOC_JEMALLOC:
        if (ti_alloc_syms.mallctl) {
            add_jemalloc(out, "opt.background_thread", "background_thread", JE_BOOL);
            add_jemalloc(out, "opt.dirty_decay_ms", "dirty_decay_ms", JE_SSIZE);
            add_jemalloc(out, "opt.muzzy_decay_ms", "muzzy_decay_ms", JE_SSIZE);
            add_jemalloc(out, "opt.narenas", "narenas", JE_UNSIGNED);
            add_jemalloc(out, "background_thread", "background_thread_now", JE_BOOL);
        }
        add_env(out, "MALLOC_CONF");
        break;
    case TIDE_MEM_ALLOC_GLIBC: {
        static const char *const vars[] = {
            "MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST", "MALLOC_MMAP_THRESHOLD_",
            "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
            "MALLOC_PERTURB_", "MALLOC_CHECK_",
        };
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) add_env(out, vars[i]);
        add_tunables(out);
        ti_alloc_mallopt_each(add_mallopt, out);
        break;
    }
    case TIDE_MEM_ALLOC_TCMALLOC:
        if (ti_alloc_syms.tc_get_prop) {
            add_tc_property(out, "tcmalloc.max_total_thread_cache_bytes");
            add_tc_property(out, "tcmalloc.aggressive_memory_decommit");
        }
        add_env_prefixed(out, "TCMALLOC_");
        break;
    case TIDE_MEM_ALLOC_MIMALLOC:
        add_env_prefixed(out, "MIMALLOC_");
        break;
    case TIDE_MEM_ALLOC_SANITIZER:
        add_env(out, "ASAN_OPTIONS");
        add_env(out, "TSAN_OPTIONS");
        add_env(out, "MSAN_OPTIONS");
        add_env(out, "LSAN_OPTIONS");
        break;
    case TIDE_MEM_ALLOC_UNKNOWN:
        break;
    default:
        return tide_err_set(TIDE_EINVAL, "allocator options: family %d is out of range", family);
    }
    return 0;
}

const char *tide_mem_alloc_option_get(const tide_mem_alloc_options *o, const char *name)
{
    for (size_t i = 0; i < o->count; i++)
        if (strcmp(o->opt[i].name, name) == 0) return o->opt[i].value;
    return NULL;
}

int tide_mem_alloc_options_format(const tide_mem_alloc_options *o, char *buf, size_t cap)
{
    size_t used = 0;

    if (cap) buf[0] = '\0';
    if (o->count == 0) return snprintf(buf, cap, "(none)");
    for (size_t i = 0; i < o->count; i++) {
        int n = snprintf(used < cap ? buf + used : NULL, used < cap ? cap - used : 0,
                         "%s%s=%s", i ? " " : "", o->opt[i].name, o->opt[i].value);
        if (n < 0) return n;
        used += (size_t)n;
    }
    return (int)used;
}
