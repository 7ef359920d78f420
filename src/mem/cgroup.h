/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cgroup.h: the memory limit of the cgroup this process runs in.
 *
 * A part of the process-wide memory limit: when the
 * operator sets none, Tide takes the container's. This module only finds
 * the figure and says where it came from; it decides nothing.
 *
 * Layout read (a fixed one, not /proc/self/mountinfo): `<root>/proc/self/
 * cgroup` names the process's cgroup; v1's memory hierarchy is looked up
 * under `<root>/sys/fs/cgroup/memory`, v2's unified one under
 * `<root>/sys/fs/cgroup`. A machine that mounts them elsewhere reads as
 * "no limit known" (TIDE_ENOENT), never as a wrong limit.
 *
 * Thread safety: thread-safe (no shared state). No allocation, no stdio.
 */
#ifndef TIDE_MEM_CGROUP_H
#define TIDE_MEM_CGROUP_H

#include <stdint.h>

#define TIDE_MEM_CGROUP_PATH_MAX 1024

typedef struct tide_mem_cgroup_limit_info {
    int limited;             /* 1: limit_bytes holds; 0: unlimited up to the root */
    uint64_t limit_bytes;    /* 0 when !limited */
    uint64_t current_bytes;  /* memory.current / memory.usage_in_bytes of `path`; 0 when unknown */
    int version;             /* 1 or 2 */
    /* The cgroup directory the limit came from (the process's own when
     * unlimited), e.g. "/sys/fs/cgroup/memory/tide" with `root` prepended. */
    char path[TIDE_MEM_CGROUP_PATH_MAX];
} tide_mem_cgroup_limit_info;

/*
 * Find the memory limit of this process's cgroup. `root` is prepended to
 * every path read (NULL: "/", the real machine; tests pass a scratch
 * directory with the same layout).
 *
 * v1 is used when /proc/self/cgroup has a line whose controller list holds
 * "memory" (a hybrid machine's memory controller lives there); otherwise v2
 * when it has a "0::/path" line. From the process's cgroup up to the
 * hierarchy's root, the nearest directory whose limit is not unlimited wins
 * (v2 "max"; v1 a value >= 2^62, the page-rounded LONG_MAX the kernel
 * shows). *out is filled only on success.
 *
 * Returns 0; TIDE_ENOENT when no memory controller is found (no line, or no
 * limit file on the walk: "no limit known", not a failure for the caller);
 * TIDE_ECORRUPT when a file holds something unparsable, naming the file and
 * the line; TIDE_EIO when a file cannot be read; TIDE_EINVAL when a path
 * does not fit TIDE_MEM_CGROUP_PATH_MAX. The message is in tide_last_error().
 *
 * Cost: one read of /proc/self/cgroup and two small reads per directory on
 * the walk (a few levels); no allocation.
 */
int tide_mem_cgroup_limit(const char *root, tide_mem_cgroup_limit_info *out);

#endif
