/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * variant.c: the lab's variants: the table of built-ins, the parser of a
 * variant's spec, and the plan's list of variants.
 *
 * A variant is a name and a spec: blank-separated tided flags, and
 * VAR=VALUE words that go to the node's environment. The built-ins are one
 * table, and everything that names them reads it: the --variant parser,
 * the message for an unknown name (tide_lab_variant_names) and the help's
 * VARIANTS lines (tide_lab_variant_help, each the spec with a note).
 *
 * Invariants:
 *   1. The built-ins appear everywhere in the table's order.
 *   2. A parsed variant owns its strings; tide_lab_variant_free releases
 *      them, also after a failed parse.
 *   3. A plan never holds two variants of one name.
 *
 * Never: print; messages go to tide_last_error() for the caller.
 */
#include <stdlib.h>
#include <string.h>

#include "lab/ghost_impl.h"
#include "lab/runner.h"
#include "tide/error.h"
#include "util/err.h"
#include "util/size.h"

/* In a spec, @JEMALLOC@ stands for the jemalloc path (--jemalloc), and
 * @TCMALLOC@ and @MIMALLOC@ for those libraries where Debian installs them
 * (ti_lab_ghost_library_find); the help shows the libraries' file names
 * instead. */
#define JEMALLOC_MARK "@JEMALLOC@"
#define JEMALLOC_SHOWN "libjemalloc.so.2"

static const struct mark {
    const char *mark, *file, *package;
} marks[] = {
    { "@TCMALLOC@", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4" },
    { "@MIMALLOC@", "libmimalloc.so.2", "libmimalloc2.0" },
};

/* The rotation variants' trigger: objects written into the newest
 * generation, 240,000 = the default load's 2000 a ledger over one wave of
 * 120 ledgers, so that a node rotates about every two minutes (reads that
 * copy objects forward make it a little sooner). */
#define ROT_OBJECTS "240000"

static const struct builtin {
    const char *name, *spec;
    const char *note;       /* after the spec in the help; a '\n' starts a
                               continuation line */
} builtins[] = {
    { "trim",      "--trim-policy always",      " (the node's default)" },
    { "notrim",    "--trim-policy never",       "" },
    { "every2",    "--trim-policy every:2",     "" },
    { "every4",    "--trim-policy every:4",     "" },
    { "freed8m",   "--trim-policy freed:8MiB",  "" },
    { "freed64m",  "--trim-policy freed:64MiB", "" },
    { "freepct10", "--trim-policy free-pct:10", "" },
    { "mmap16k",   "--mmap-threshold 16KiB --trim-policy never", "" },
    { "jemalloc",  "LD_PRELOAD=" JEMALLOC_MARK " MALLOC_CONF=background_thread:true",
                   ",\nthe node's default policy" },
    /* The caches' segment arena (docs/MEMORY-LIMIT.md) off and on under
     * each allocator: the "noarena" variants keep the caches' objects and
     * entries on malloc, the others are the node's default. */
    { "noarena",   "--cache-arena off",         " (the caches on malloc: the arena's\nbaseline under glibc)" },
    { "jemalloc-noarena", "LD_PRELOAD=" JEMALLOC_MARK " MALLOC_CONF=background_thread:true --cache-arena off", "" },
    { "tcmalloc",  "LD_PRELOAD=@TCMALLOC@",     "" },
    { "tcmalloc-noarena", "LD_PRELOAD=@TCMALLOC@ --cache-arena off", "" },
    { "mimalloc",  "LD_PRELOAD=@MIMALLOC@",     "" },
    { "mimalloc-noarena", "LD_PRELOAD=@MIMALLOC@ --cache-arena off", "" },
    /* Online delete (docs/ROTATION.md): a rotation after ROT_OBJECTS objects
     * written into the newest generation, two minutes of the default load
     * (one wave); the sweeps never trim, so that the trim after rotation
     * is the only one and its effect shows against rot2-notrim. */
    { "rot2",      "--online-delete " ROT_OBJECTS " --generations 2 --trim-policy never",
                   "\n(online delete; the trim after rotation is the only trim)" },
    { "rot2-notrim", "--online-delete " ROT_OBJECTS " --generations 2 --trim-policy never "
                   "--trim-after-rotation 0", "" },
    { "rot4",      "--online-delete " ROT_OBJECTS " --generations 4 --trim-policy never", "" },
    /* The memory limit (docs/MEMORY-LIMIT.md): the same node told 64, 128
     * or 256 MiB, beside one told nothing (run with --baseline unlimited:
     * the GET rates are compared with its). */
    { "limit64",   "--memory-limit 64MiB",      "\n(a process memory limit: graded shedding)" },
    { "limit128",  "--memory-limit 128MiB",     "" },
    { "limit256",  "--memory-limit 256MiB",     "" },
    { "unlimited", "--trim-policy always",      " (no memory limit: the baseline\nof the limit variants)" },
};
#define NBUILTINS (sizeof builtins / sizeof *builtins)

const char *tide_lab_builtin_spec(const char *name)
{
    for (size_t b = 0; b < NBUILTINS; b++)
        if (strcmp(builtins[b].name, name) == 0) return builtins[b].spec;
    return NULL;
}

int tide_lab_variant_names(char *buf, size_t cap)
{
    size_t at = 0;

    if (cap == 0) return TIDE_EINVAL;
    buf[0] = '\0';
    for (size_t b = 0; b < NBUILTINS; b++) {
        int n = snprintf(buf + at, cap - at, "%s%s", b ? ", " : "", builtins[b].name);
        if (n < 0 || (size_t)n >= cap - at) return TIDE_EINVAL;
        at += (size_t)n;
    }
    return 0;
}

int tide_lab_variant_help(FILE *f)
{
    for (size_t b = 0; b < NBUILTINS; b++) {
        const char *spec = builtins[b].spec, *mark = strstr(spec, JEMALLOC_MARK);
        const char *shown = JEMALLOC_SHOWN, *mark_text = JEMALLOC_MARK;

        for (size_t m = 0; mark == NULL && m < sizeof marks / sizeof marks[0]; m++) {
            mark = strstr(spec, marks[m].mark);
            shown = marks[m].file;
            mark_text = marks[m].mark;
        }
        fprintf(f, "    %-10s ", builtins[b].name);
        if (mark)
            fprintf(f, "%.*s%s%s", (int)(mark - spec), spec, shown, mark + strlen(mark_text));
        else
            fputs(spec, f);
        for (const char *p = builtins[b].note; *p; p++) {
            if (*p == '\n') fprintf(f, "\n    %-10s ", "");
            else fputc(*p, f);
        }
        fputc('\n', f);
    }
    return ferror(f) ? tide_err_set(TIDE_EIO, "lab: writing the variants' help failed") : 0;
}

int tide_lab_variant_parse(tide_lab_variant *v, const char *name, const char *spec, const char *jemalloc)
{
    char buf[sizeof v->spec], *save = NULL, *tok;
    int rc = 0;

    memset(v, 0, sizeof *v);
    if (strlen(name) == 0 || strlen(name) >= sizeof v->name || strspn(name,
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != strlen(name)) {
        rc = tide_err_set(TIDE_EINVAL, "variant name '%s' must be 1 to 31 letters, digits, '-', '_' or '.'", name);
        goto out;
    }
    snprintf(v->name, sizeof v->name, "%s", name);
    snprintf(v->spec, sizeof v->spec, "%s", spec);
    snprintf(buf, sizeof buf, "%s", spec);
    for (tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        char tmp[PATH_MAX + 64], *copy;
        if (strstr(tok, JEMALLOC_MARK)) {
            snprintf(tmp, sizeof tmp, "LD_PRELOAD=%s", jemalloc);
            tok = tmp;
        }
        for (size_t m = 0; m < sizeof marks / sizeof marks[0]; m++) {
            char lib[PATH_MAX];
            if (strstr(tok, marks[m].mark) == NULL) continue;
            if (ti_lab_ghost_library_find(marks[m].file, lib, sizeof lib) != 0) {
                rc = tide_err_set(TIDE_ENOENT, "variant '%s': %s not found; install the Debian package %s",
                                  name, marks[m].file, marks[m].package);
                goto out;
            }
            snprintf(tmp, sizeof tmp, "LD_PRELOAD=%s", lib);
            tok = tmp;
        }
        if (tok[0] != '-' && strchr(tok, '=')) {
            if (v->nenv >= TIDE_LAB_MAX_ENV) {
                rc = tide_err_set(TIDE_EINVAL, "variant '%s': too many VAR=VALUE settings", name);
                goto out;
            }
            if ((copy = strdup(tok)) == NULL) { rc = tide_err_set(TIDE_ENOMEM, "out of memory"); goto out; }
            v->env[v->nenv++] = copy;
        } else {
            if (v->nargs >= TIDE_LAB_MAX_ARGS) {
                rc = tide_err_set(TIDE_EINVAL, "variant '%s': too many flags", name);
                goto out;
            }
            if ((copy = strdup(tok)) == NULL) { rc = tide_err_set(TIDE_ENOMEM, "out of memory"); goto out; }
            v->args[v->nargs++] = copy;
        }
    }
out:
    if (rc) tide_lab_variant_free(v);       /* invariant 2 */
    return rc;
}

/* 1 when `word` (at argv[i] of n) turns online delete on: --online-delete
 * with a value other than 0 (next word or after '='). */
static int online_delete_flag(char *const *argv, int n, int i)
{
    const char *w = argv[i], *val = NULL;

    if (strcmp(w, "--online-delete") == 0) val = i + 1 < n ? argv[i + 1] : NULL;
    else if (strncmp(w, "--online-delete=", 16) == 0) val = w + 16;
    return val != NULL && strcmp(val, "0") != 0;
}

int tide_lab_variant_rotates(const tide_lab_variant *v, const char *node_args)
{
    char buf[512], *words[64], *save = NULL;
    int n = 0;

    for (int i = 0; i < v->nargs; i++) if (online_delete_flag(v->args, v->nargs, i)) return 1;
    for (int i = 0; i < v->nenv; i++)
        if (strncmp(v->env[i], "TIDE_ONLINE_DELETE=", 19) == 0 && strcmp(v->env[i] + 19, "0") != 0) return 1;
    snprintf(buf, sizeof buf, "%s", node_args ? node_args : "");
    for (char *t = strtok_r(buf, " \t", &save); t && n < 64; t = strtok_r(NULL, " \t", &save)) words[n++] = t;
    for (int i = 0; i < n; i++) if (online_delete_flag(words, n, i)) return 1;
    return 0;
}

/* The value of --memory-limit at argv[i] of n (next word or after '='),
 * or NULL when argv[i] is not that flag. */
static const char *memory_limit_flag(char *const *argv, int n, int i)
{
    const char *w = argv[i];

    if (strcmp(w, "--memory-limit") == 0) return i + 1 < n ? argv[i + 1] : NULL;
    if (strncmp(w, "--memory-limit=", 15) == 0) return w + 15;
    return NULL;
}

uint64_t tide_lab_variant_limit(const tide_lab_variant *v, const char *node_args)
{
    char buf[512], *words[64], *save = NULL;
    const char *val = NULL;
    uint64_t bytes = 0;
    int n = 0;

    snprintf(buf, sizeof buf, "%s", node_args ? node_args : "");
    for (char *t = strtok_r(buf, " \t", &save); t && n < 64; t = strtok_r(NULL, " \t", &save)) words[n++] = t;
    for (int i = 0; i < n; i++) if (memory_limit_flag(words, n, i)) val = memory_limit_flag(words, n, i);
    for (int i = 0; i < v->nenv; i++)       /* the variable, then the flag: tided's order */
        if (strncmp(v->env[i], "TIDE_MEMORY_LIMIT=", 18) == 0) val = v->env[i] + 18;
    for (int i = 0; i < v->nargs; i++) if (memory_limit_flag(v->args, v->nargs, i)) val = memory_limit_flag(v->args, v->nargs, i);
    if (val == NULL || tide_size_parse(val, &bytes) != 0) return 0;
    return bytes;
}

void tide_lab_variant_free(tide_lab_variant *v)
{
    for (int i = 0; i < v->nargs; i++) free(v->args[i]);
    for (int i = 0; i < v->nenv; i++) free(v->env[i]);
    v->nargs = v->nenv = 0;
}

/* ---- the plan ---------------------------------------------------------------- */

void tide_lab_plan_init(tide_lab_plan *p)
{
    memset(p, 0, sizeof *p);
    tide_lab_workload_init(&p->w);
    p->duration = 300;
    p->interval = 1;
    p->sample_interval = 1;
    p->heartbeat = 10;
    p->clients = 4;
    p->repeat = 1;
    p->sweep_interval = 10;
    p->node_size = "tiny";
    p->out = "lab-out";
    p->prefix = "lab";
    p->jemalloc = TIDE_LAB_DEFAULT_JEMALLOC;
    p->baseline = "notrim";
    p->report = stderr;
}

/* Add a variant unless one of its name is there (invariant 3). */
static int plan_add(tide_lab_plan *p, const char *name, const char *spec)
{
    int rc;

    for (size_t i = 0; i < p->nv; i++)
        if (strcmp(p->v[i].name, name) == 0) return 0;
    if (p->nv >= TIDE_LAB_MAX_VARIANTS)
        return tide_err_set(TIDE_EINVAL, "at most %d variants", TIDE_LAB_MAX_VARIANTS);
    rc = tide_lab_variant_parse(&p->v[p->nv], name, spec, p->jemalloc);
    if (rc == 0) p->nv++;
    return rc;
}

/* The spec of `name` among the customs ("NAME=SPEC"), or NULL. */
static const char *custom_spec(const char *name, const char *const *customs, size_t ncustom)
{
    for (size_t i = 0; i < ncustom; i++) {
        const char *eq = strchr(customs[i], '=');
        if ((size_t)(eq - customs[i]) == strlen(name) && strncmp(customs[i], name, strlen(name)) == 0)
            return eq + 1;
    }
    return NULL;
}

int tide_lab_plan_variants(tide_lab_plan *p, const char *list, const char *const *customs, size_t ncustom)
{
    char buf[512], name[64], names[512], *save = NULL;
    int rc = 0;

    for (size_t i = 0; i < ncustom; i++) {
        const char *eq = strchr(customs[i], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - customs[i]), customs[i]);
        if (tide_lab_builtin_spec(name))
            return tide_err_set(TIDE_EINVAL, "--custom '%s': '%s' is a built-in variant's name", customs[i], name);
    }
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char *spec = tide_lab_builtin_spec(t);
        if (spec == NULL) spec = custom_spec(t, customs, ncustom);
        if (spec == NULL) {
            (void)tide_lab_variant_names(names, sizeof names);
            return tide_err_set(TIDE_EINVAL, "--variant '%s' is not a variant (%s, or a --custom NAME)", t, names);
        }
        if ((rc = plan_add(p, t, spec))) return rc;
    }
    for (size_t i = 0; i < ncustom; i++) {      /* customs not named in the list run too */
        const char *eq = strchr(customs[i], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - customs[i]), customs[i]);
        if ((rc = plan_add(p, name, eq + 1))) return rc;
    }
    if (p->nv == 0) return tide_err_set(TIDE_EINVAL, "--variant '%s' names no variant", list);
    return 0;
}

void tide_lab_plan_free(tide_lab_plan *p)
{
    for (size_t i = 0; i < p->nv; i++) tide_lab_variant_free(&p->v[i]);
    p->nv = 0;
}
