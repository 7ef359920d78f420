/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cgroup.c: the memory limit of the cgroup this process runs in.
 *
 * /proc/self/cgroup gives one line per hierarchy, "id:controllers:path".
 * v1 hierarchies have controllers ("4:memory:/tide"); the v2 unified one
 * has id 0 and none ("0::/tide"). The limit of a cgroup is the smallest of
 * its own and every ancestor's, and the nearest limited one is the one an
 * operator set, so the walk goes from the leaf up and stops at the first
 * limited directory.
 *
 * Invariants:
 *   1. *out is written only on success, and only from a finished walk.
 *   2. A limit is reported only from a file that parsed completely; any
 *      other content is TIDE_ECORRUPT naming file and line, never "unlimited".
 *   3. The walk never leaves the hierarchy's directory (the path is cut at
 *      '/' and ".." is refused).
 *   4. Nothing is allocated: every buffer is on the stack.
 *
 * Never: read mountinfo or guess mount points. A layout other than the
 * fixed one is "no limit known" (TIDE_ENOENT), which the caller logs.
 */
#include "mem/cgroup.h"
#include "mem/cgroup_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tide/error.h"
#include "util/assert.h"
#include "util/err.h"

#define V1_UNLIMITED (1ull << 62)

/* ti_cgroup_read_small: cgroup_impl.h. One extra byte is asked for after a
 * full buffer, so a file longer than the buffer is an error, never a
 * truncated figure. */
int ti_cgroup_read_small(const char *path, char *buf, size_t cap, size_t *len)
{
    size_t n = 0;
    int fd, rc = 0;

    TIDE_ASSERT(cap >= 2);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return tide_err_set(e == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: open: %s", path, strerror(e));
    }
    for (;;) {
        char extra;
        ssize_t r = n < cap - 1 ? read(fd, buf + n, cap - 1 - n) : read(fd, &extra, 1);
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = tide_err_set(TIDE_EIO, "%s: read at offset %zu: %s", path, n, strerror(errno));
            goto out;
        }
        if (r == 0) break;
        if (n == cap - 1) {
            rc = tide_err_set(TIDE_ECORRUPT, "%s: larger than the %zu bytes expected", path, cap - 1);
            goto out;
        }
        n += (size_t)r;
    }
    buf[n] = '\0';
    if (len) *len = n;
out:
    close(fd);
    return rc;
}

/* ti_cgroup_read_value: cgroup_impl.h. */
int ti_cgroup_read_value(const char *path, int allow_max, uint64_t *val, int *unlimited)
{
    char buf[64];
    uint64_t v = 0;
    const char *p;
    int rc;

    rc = ti_cgroup_read_small(path, buf, sizeof buf, NULL);
    if (rc) goto out;
    *unlimited = 0;
    if (allow_max && (strcmp(buf, "max\n") == 0 || strcmp(buf, "max") == 0)) { *unlimited = 1; *val = 0; goto out; }
    for (p = buf; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) break;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (p == buf || (*p != '\n' && *p != '\0') || (*p == '\n' && p[1] != '\0')) {
        rc = tide_err_set(TIDE_ECORRUPT, "%s:1: '%.40s' is not a byte count%s",
                          path, buf, allow_max ? " or \"max\"" : "");
        goto out;
    }
    *val = v;
out:
    return rc;
}

/* Does the comma-separated list ctl[0..n) name "memory"? */
static int names_memory(const char *ctl, size_t n)
{
    size_t i = 0;

    while (i < n) {
        size_t j = i;
        while (j < n && ctl[j] != ',') j++;
        if (j - i == 6 && memcmp(ctl + i, "memory", 6) == 0) return 1;
        i = j + 1;
    }
    return 0;
}

/*
 * Find the memory line of /proc/self/cgroup: the v1 memory controller's
 * path (version 1) if there is one, else the v2 "0::" path (version 2).
 */
static int find_cgroup(const char *file, char *path, size_t cap, int *version)
{
    char buf[8192];
    char *line, *next;
    unsigned lineno = 0;
    int rc, found = 0;

    rc = ti_cgroup_read_small(file, buf, sizeof buf, NULL);
    if (rc) goto out;
    for (line = buf; *line; line = next) {
        char *c1, *c2, *nl = strchr(line, '\n');
        int v;
        next = nl ? nl + 1 : line + strlen(line);
        if (nl) *nl = '\0';
        lineno++;
        if (*line == '\0') continue;
        c1 = strchr(line, ':');
        c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL || c2[1] != '/') {
            rc = tide_err_set(TIDE_ECORRUPT, "%s:%u: '%.60s' is not id:controllers:/path",
                              file, lineno, line);
            goto out;
        }
        if (names_memory(c1 + 1, (size_t)(c2 - c1 - 1))) v = 1;
        else if (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1) v = 2;
        else continue;
        if (found == 1) continue; /* a v1 memory line wins over the unified one */
        if (strlen(c2 + 1) >= cap || strstr(c2 + 1, "/..")) {
            rc = tide_err_set(TIDE_ECORRUPT, "%s:%u: path too long or with '..'", file, lineno);
            goto out;
        }
        strcpy(path, c2 + 1);
        found = v;
    }
    if (!found) rc = tide_err_set(TIDE_ENOENT, "%s: no memory controller (no v1 memory line, no 0:: line)", file);
    *version = found;
out:
    return rc;
}

/*
 * Walk from base+rel up to base: the nearest limited directory goes to
 * *out; when none is limited, the leaf's figures. TIDE_ENOENT when no
 * directory on the walk has a limit file.
 */
static int walk(const char *base, char *rel, int version, tide_mem_cgroup_limit_info *out)
{
    const char *limit_name = version == 2 ? "memory.max" : "memory.limit_in_bytes";
    const char *cur_name = version == 2 ? "memory.current" : "memory.usage_in_bytes";
    char dir[TIDE_MEM_CGROUP_PATH_MAX], file[TIDE_MEM_CGROUP_PATH_MAX + 32];
    int rc = 0, seen = 0;

    for (;;) {
        uint64_t v = 0, cur = 0;
        int unl = 0, n;
        size_t len = strlen(rel);
        while (len > 1 && rel[len - 1] == '/') rel[--len] = '\0';
        n = snprintf(dir, sizeof dir, "%s%s", base, strcmp(rel, "/") == 0 ? "" : rel);
        if (n < 0 || (size_t)n >= sizeof dir) {
            rc = tide_err_set(TIDE_EINVAL, "%s%s: cgroup path too long", base, rel);
            goto out;
        }
        snprintf(file, sizeof file, "%s/%s", dir, limit_name);
        rc = ti_cgroup_read_value(file, version == 2, &v, &unl);
        if (rc && rc != TIDE_ENOENT) goto out;
        if (rc == 0) {
            if (version == 1 && v >= V1_UNLIMITED) unl = 1;
            snprintf(file, sizeof file, "%s/%s", dir, cur_name);
            if (ti_cgroup_read_value(file, 0, &cur, &(int){0}) != 0) cur = 0;
            if (!seen || !unl) {
                out->limited = !unl;
                out->limit_bytes = unl ? 0 : v;
                out->current_bytes = cur;
                memcpy(out->path, dir, (size_t)n + 1);
            }
            seen = 1;
            if (!unl) break;
        }
        rc = 0;
        if (strcmp(rel, "/") == 0) break;
        *strrchr(rel, '/') = '\0';
        if (rel[0] == '\0') strcpy(rel, "/");
    }
    if (!seen) rc = tide_err_set(TIDE_ENOENT, "%s%s: no %s from the cgroup up to the root", base, rel, limit_name);
out:
    return rc;
}

int tide_mem_cgroup_limit(const char *root, tide_mem_cgroup_limit_info *out)
{
    tide_mem_cgroup_limit_info info;
    char file[TIDE_MEM_CGROUP_PATH_MAX], base[TIDE_MEM_CGROUP_PATH_MAX];
    char rel[TIDE_MEM_CGROUP_PATH_MAX];
    int rc, version = 0, n;

    if (root == NULL || strcmp(root, "/") == 0) root = "";
    memset(&info, 0, sizeof info);
    n = snprintf(file, sizeof file, "%s/proc/self/cgroup", root);
    if (n < 0 || (size_t)n >= sizeof file) { rc = tide_err_set(TIDE_EINVAL, "%s: root too long", root); goto out; }
    rc = find_cgroup(file, rel, sizeof rel, &version);
    if (rc) goto out;
    snprintf(base, sizeof base, "%s/sys/fs/cgroup%s", root, version == 1 ? "/memory" : "");
    info.version = version;
    rc = walk(base, rel, version, &info);
    if (rc) goto out;
    *out = info;
out:
    return rc;
}
