/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pressure.c: pressure stall information, and the usage and events of a
 * cgroup's memory controller (the contract is pressure.h).
 *
 * Every figure comes from a small kernel file read whole onto the stack
 * (ti_cgroup_read_small, shared with cgroup.c) and parsed in place. Three
 * shapes of file:
 *   - one value: memory.current, memory.usage_in_bytes, memory.failcnt
 *     (ti_cgroup_read_value);
 *   - "name count" lines: memory.stat, memory.events, memory.oom_control
 *     (kv_find: the wanted names are picked out, the others skipped, since
 *     kernels add names over time);
 *   - PSI: "some|full avg10=A avg60=B avg300=C total=T" (psi_parse). The
 *     averages are parsed as fixed-point text by hand, not with strtod,
 *     whose decimal point follows the locale.
 *
 * Invariants:
 *   1. *out is written only on success, from a fully parsed set of files.
 *   2. Every line of a file read is checked, the skipped ones included: a
 *      line that does not have its file's shape is TIDE_ECORRUPT naming
 *      "file:line", never a figure of 0.
 *   3. A file longer than its buffer is an error (ti_cgroup_read_small),
 *      never a truncated parse.
 *   4. Nothing is allocated; no stdio stream is opened; a trigger
 *      descriptor that failed is closed before returning.
 *
 * Never: treat a missing usage file as usage 0 (the group was removed:
 * TIDE_ENOENT); read memory.stat's non-hierarchical v1 names (active_file
 * counts the group's own pages only, total_active_file its subtree's, which
 * is what usage_in_bytes counts).
 */
#include "mem/pressure.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mem/cgroup.h"
#include "mem/cgroup_impl.h"
#include "tide/error.h"
#include "util/err.h"

#define STAT_BUF 16384  /* memory.stat: about 1.5 KiB (v1) in practice */
#define SMALL_BUF 1024  /* memory.events, memory.oom_control, PSI files */

/* ---- parsing ------------------------------------------------------------- */

/* Skip the literal `lit` at *p; 0 when it was there. */
static int eat(const char **p, const char *lit)
{
    size_t n = strlen(lit);

    if (strncmp(*p, lit, n) != 0) return -1;
    *p += n;
    return 0;
}

/* Decimal digits at *p (at least one, no overflow) into *v. */
static int parse_u64(const char **p, uint64_t *v)
{
    const char *s = *p;
    uint64_t x = 0;

    for (; *s >= '0' && *s <= '9'; s++) {
        if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return -1;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    if (s == *p) return -1;
    *p = s;
    *v = x;
    return 0;
}

/* "12.34" (digits, optionally '.' and digits) at *p into *v. */
static int parse_fixed(const char **p, double *v)
{
    uint64_t whole = 0;
    double frac = 0.0, scale = 0.1;
    const char *s;

    if (parse_u64(p, &whole)) return -1;
    s = *p;
    if (*s == '.') {
        for (s++; *s >= '0' && *s <= '9'; s++, scale /= 10.0) frac += (double)(*s - '0') * scale;
        if (s == *p + 1) return -1;
    }
    *p = s;
    *v = (double)whole + frac;
    return 0;
}

/* One PSI line after its "some " / "full ": the four fields, then the end. */
static int psi_fields(const char *s, tide_mem_psi_line *l)
{
    if (eat(&s, "avg10=") || parse_fixed(&s, &l->avg10)) return -1;
    if (eat(&s, " avg60=") || parse_fixed(&s, &l->avg60)) return -1;
    if (eat(&s, " avg300=") || parse_fixed(&s, &l->avg300)) return -1;
    if (eat(&s, " total=") || parse_u64(&s, &l->total_us)) return -1;
    return *s == '\0' ? 0 : -1;
}

/* Parse PSI text `buf` (modified: lines are cut) read from `path`. */
static int psi_parse(const char *path, char *buf, tide_mem_psi *out)
{
    char *line, *next;
    unsigned lineno = 0;
    int has_some = 0;

    memset(out, 0, sizeof *out);
    for (line = buf; *line; line = next) {
        char *nl = strchr(line, '\n');
        const char *s = line;
        next = nl ? nl + 1 : line + strlen(line);
        if (nl) *nl = '\0';
        lineno++;
        if (eat(&s, "some ") == 0 && psi_fields(s, &out->some) == 0) { has_some = 1; continue; }
        s = line;
        if (eat(&s, "full ") == 0 && psi_fields(s, &out->full) == 0) { out->has_full = 1; continue; }
        return tide_err_set(TIDE_ECORRUPT,
                            "%s:%u: '%.80s' is not 'some|full avg10=N avg60=N avg300=N total=N'",
                            path, lineno, line);
    }
    if (!has_some) return tide_err_set(TIDE_ECORRUPT, "%s: no 'some' line", path);
    return 0;
}

/*
 * Parse "name count" lines of `buf` (modified) read from `path`: vals[i]
 * gets the count of keys[i] and found[i] 1 when that name is there. Every
 * line must have the shape; names not wanted are skipped.
 */
static int kv_find(const char *path, char *buf, const char *const *keys, size_t n,
                   uint64_t *vals, int *found)
{
    char *line, *next;
    unsigned lineno = 0;
    size_t i;

    for (i = 0; i < n; i++) found[i] = 0;
    for (line = buf; *line; line = next) {
        char *nl = strchr(line, '\n'), *sp;
        const char *s;
        uint64_t v;
        next = nl ? nl + 1 : line + strlen(line);
        if (nl) *nl = '\0';
        lineno++;
        sp = strchr(line, ' ');
        s = sp ? sp + 1 : NULL;
        if (sp == NULL || sp == line || parse_u64(&s, &v) || *s != '\0')
            return tide_err_set(TIDE_ECORRUPT, "%s:%u: '%.80s' is not 'name count'", path, lineno, line);
        for (i = 0; i < n; i++)
            if (strlen(keys[i]) == (size_t)(sp - line) && memcmp(keys[i], line, (size_t)(sp - line)) == 0) {
                vals[i] = v;
                found[i] = 1;
            }
    }
    return 0;
}

/* ---- PSI ------------------------------------------------------------------- */

int tide_mem_psi_read(const char *path, tide_mem_psi *out)
{
    char buf[SMALL_BUF];
    tide_mem_psi psi;
    int rc;

    rc = ti_cgroup_read_small(path, buf, sizeof buf, NULL);
    if (rc) goto out;
    rc = psi_parse(path, buf, &psi);
    if (rc) goto out;
    *out = psi;
out:
    return rc;
}

int tide_mem_psi_trigger_open(const char *path, uint64_t stall_us, uint64_t window_us, int *fd)
{
    char text[64];
    int n, f = -1, e, rc = 0;

    if (stall_us == 0 || stall_us > window_us) {
        rc = tide_err_set(TIDE_EINVAL, "psi trigger 'some %" PRIu64 " %" PRIu64 "': the stall must "
                          "be from 1 us to the window", stall_us, window_us);
        goto out;
    }
    n = snprintf(text, sizeof text, "some %" PRIu64 " %" PRIu64, stall_us, window_us);
    f = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) {
        e = errno;
        rc = tide_err_set(e == ENOENT ? TIDE_ENOENT : (e == EACCES || e == EPERM) ? TIDE_EINVAL : TIDE_EIO,
                          "%s: open for a trigger: %s (errno %d)", path, strerror(e), e);
        goto out;
    }
    /* The kernel takes the trigger with its NUL (Documentation/accounting/psi). */
    if (write(f, text, (size_t)n + 1) < 0) {
        e = errno;
        rc = tide_err_set(e == EINVAL || e == EPERM || e == EACCES || e == EOPNOTSUPP ? TIDE_EINVAL : TIDE_EIO,
                          "%s: the kernel refused the trigger '%s': %s (errno %d)", path, text,
                          strerror(e), e);
        goto out;
    }
    *fd = f;
    f = -1;
out:
    if (f >= 0) close(f);
    return rc;
}

/* ---- cgroup usage and events --------------------------------------------- */

const char *tide_mem_event_name(int ev)
{
    static const char *const names[TIDE_MEM_EV_COUNT] = { "low", "high", "max", "oom", "oom_kill" };

    return ev >= 0 && ev < TIDE_MEM_EV_COUNT ? names[ev] : "?";
}

/* dir/name into file; TIDE_EINVAL when it does not fit. */
static int join(char *file, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(file, cap, "%s/%s", dir, name);

    if (n < 0 || (size_t)n >= cap) return tide_err_set(TIDE_EINVAL, "%s/%s: path too long", dir, name);
    return 0;
}

/* The page cache of memory.stat: the sum of the two names, both required. */
static int read_page_cache(const char *dir, const char *const names[2], uint64_t *out)
{
    char file[TIDE_MEM_CGROUP_PATH_MAX + 32], buf[STAT_BUF];
    uint64_t vals[2] = { 0, 0 };
    int found[2], rc;

    rc = join(file, sizeof file, dir, "memory.stat");
    if (rc) goto out;
    rc = ti_cgroup_read_small(file, buf, sizeof buf, NULL);
    if (rc) goto out;
    rc = kv_find(file, buf, names, 2, vals, found);
    if (rc) goto out;
    if (!found[0] || !found[1]) {
        rc = tide_err_set(TIDE_ECORRUPT, "%s: no '%s' line", file, found[0] ? names[1] : names[0]);
        goto out;
    }
    *out = vals[0] + vals[1];
out:
    return rc;
}

/* Read the "name count" file dir/name for events (ev[i] <- keys[i]); a
 * missing file leaves every has_ flag 0. */
static int read_events(const char *dir, const char *name, const char *const *keys, const int *ev,
                       size_t n, tide_mem_cgroup_usage *u)
{
    char file[TIDE_MEM_CGROUP_PATH_MAX + 32], buf[SMALL_BUF];
    uint64_t vals[TIDE_MEM_EV_COUNT];
    int found[TIDE_MEM_EV_COUNT], rc;
    size_t i;

    rc = join(file, sizeof file, dir, name);
    if (rc) goto out;
    rc = ti_cgroup_read_small(file, buf, sizeof buf, NULL);
    if (rc == TIDE_ENOENT) { rc = 0; goto out; }
    if (rc) goto out;
    rc = kv_find(file, buf, keys, n, vals, found);
    if (rc) goto out;
    for (i = 0; i < n; i++)
        if (found[i]) { u->events[ev[i]] = vals[i]; u->has_event[ev[i]] = 1; }
out:
    return rc;
}

/* The usage file (required) and the page cache of memory.stat. */
static int read_usage(const char *dir, const char *usage_name, const char *const stat_names[2],
                      tide_mem_cgroup_usage *u)
{
    char file[TIDE_MEM_CGROUP_PATH_MAX + 32];
    int rc, unl = 0;

    rc = join(file, sizeof file, dir, usage_name);
    if (rc) goto out;
    rc = ti_cgroup_read_value(file, 0, &u->current_bytes, &unl);
    if (rc) goto out;
    rc = read_page_cache(dir, stat_names, &u->page_cache_bytes);
out:
    return rc;
}

static int usage_v1(const char *dir, tide_mem_cgroup_usage *u)
{
    static const char *const stat_names[2] = { "total_active_file", "total_inactive_file" };
    static const char *const oom_keys[1] = { "oom_kill" };
    static const int oom_ev[1] = { TIDE_MEM_EV_OOM_KILL };
    char file[TIDE_MEM_CGROUP_PATH_MAX + 32];
    int rc, unl = 0;

    rc = read_usage(dir, "memory.usage_in_bytes", stat_names, u);
    if (rc) goto out;
    /* v1's failcnt: the times usage hit the limit, v2's "max" event. */
    rc = join(file, sizeof file, dir, "memory.failcnt");
    if (rc) goto out;
    rc = ti_cgroup_read_value(file, 0, &u->events[TIDE_MEM_EV_MAX], &unl);
    if (rc == 0) u->has_event[TIDE_MEM_EV_MAX] = 1;
    else if (rc == TIDE_ENOENT) rc = 0;
    else goto out;
    rc = read_events(dir, "memory.oom_control", oom_keys, oom_ev, 1, u);
out:
    return rc;
}

static int usage_v2(const char *dir, tide_mem_cgroup_usage *u)
{
    static const char *const stat_names[2] = { "active_file", "inactive_file" };
    static const char *const ev_keys[TIDE_MEM_EV_COUNT] = { "low", "high", "max", "oom", "oom_kill" };
    static const int ev_ids[TIDE_MEM_EV_COUNT] = { TIDE_MEM_EV_LOW, TIDE_MEM_EV_HIGH, TIDE_MEM_EV_MAX,
                                                   TIDE_MEM_EV_OOM, TIDE_MEM_EV_OOM_KILL };
    char file[TIDE_MEM_CGROUP_PATH_MAX + 32];
    int rc;

    rc = read_usage(dir, "memory.current", stat_names, u);
    if (rc) goto out;
    rc = read_events(dir, "memory.events", ev_keys, ev_ids, TIDE_MEM_EV_COUNT, u);
    if (rc) goto out;
    rc = join(file, sizeof file, dir, "memory.pressure");
    if (rc) goto out;
    rc = tide_mem_psi_read(file, &u->psi);
    if (rc == 0) u->has_psi = 1;
    else if (rc == TIDE_ENOENT) rc = 0;
out:
    return rc;
}

int tide_mem_cgroup_usage_read(const char *path, int version, tide_mem_cgroup_usage *out)
{
    tide_mem_cgroup_usage u;
    int rc;

    memset(&u, 0, sizeof u);
    if (version == 1) rc = usage_v1(path, &u);
    else if (version == 2) rc = usage_v2(path, &u);
    else rc = tide_err_set(TIDE_EINVAL, "%s: cgroup version %d (1 or 2)", path, version);
    if (rc) goto out;
    *out = u;
out:
    return rc;
}
