/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pressure.h: what the kernel says about memory beyond the process's own
 * RSS: pressure stall information (PSI), and the usage and
 * event counters of the cgroup whose limit applies.
 *
 * PSI: /proc/pressure/memory (the whole machine) and a v2 cgroup's
 * memory.pressure hold two lines,
 *     some avg10=0.00 avg60=0.00 avg300=0.00 total=0
 *     full avg10=0.00 avg60=0.00 avg300=0.00 total=0
 * (avgN: percent of wall time some / all tasks stalled on memory over N
 * seconds; total: microseconds). A trigger ("some 200000 2000000": 200 ms
 * of stall within any 2 s window) written to the file makes the descriptor
 * pollable (POLLPRI) where the kernel permits it. Kernels 6.5 and later
 * refuse (EINVAL) a window that is not a multiple of 2 s from a process
 * without CAP_SYS_RESOURCE: "some 100000 1000000" is refused on this
 * machine (6.18) and "some 200000 2000000" granted. The governor uses a
 * 2 s window.
 *
 * The cgroup: usage is memory.current (v2) or memory.usage_in_bytes (v1),
 * both counting page cache, which the kernel reclaims before it kills
 * anything; so the page cache (memory.stat active_file + inactive_file, v1
 * total_active_file + total_inactive_file) is read too and the governor
 * counts usage less page cache. Events: v2 memory.events (low, high, max,
 * oom, oom_kill); v1 has memory.failcnt (the times usage hit the limit:
 * reported as "max") and memory.oom_control's oom_kill.
 *
 * Thread safety: thread-safe (no shared state). No allocation, no stdio.
 */
#ifndef TIDE_MEM_PRESSURE_H
#define TIDE_MEM_PRESSURE_H

#include <stdint.h>

#define TIDE_MEM_PSI_SYSTEM "/proc/pressure/memory"

typedef struct tide_mem_psi_line {
    double   avg10, avg60, avg300;  /* percent, 0..100 */
    uint64_t total_us;
} tide_mem_psi_line;

typedef struct tide_mem_psi {
    tide_mem_psi_line some, full;
    int has_full;                   /* the file had a "full" line */
} tide_mem_psi;

/*
 * Read a PSI file (TIDE_MEM_PSI_SYSTEM or a cgroup's memory.pressure).
 * Returns 0; TIDE_ENOENT when the file does not exist (a kernel without
 * PSI, or v1); TIDE_ECORRUPT naming the file and line when it does not
 * parse; TIDE_EIO. Cost: one read of a small file.
 */
int tide_mem_psi_read(const char *path, tide_mem_psi *out);

/*
 * Open `path` and write the trigger "some STALL_US WINDOW_US" to it: *fd is
 * then a descriptor that polls POLLPRI when the stall is exceeded (the
 * caller closes it). Returns 0; TIDE_ENOENT (no such file); TIDE_EINVAL when
 * the kernel refuses the trigger (the message gives its errno: EINVAL for
 * a window not a multiple of 2 s without CAP_SYS_RESOURCE on kernels >= 6.5;
 * an unprivileged process may get EPERM or EACCES); TIDE_EIO.
 * The caller falls back to polling the averages on any error.
 */
int tide_mem_psi_trigger_open(const char *path, uint64_t stall_us, uint64_t window_us, int *fd);

/* Events of a cgroup's memory controller; each counter is valid only when
 * its has_ flag is 1 (v1 has max and oom_kill only). */
enum { TIDE_MEM_EV_LOW, TIDE_MEM_EV_HIGH, TIDE_MEM_EV_MAX, TIDE_MEM_EV_OOM, TIDE_MEM_EV_OOM_KILL,
       TIDE_MEM_EV_COUNT };

/* "low", "high", "max", "oom", "oom_kill" (the metrics label). */
const char *tide_mem_event_name(int ev);

typedef struct tide_mem_cgroup_usage {
    uint64_t current_bytes;         /* memory.current / memory.usage_in_bytes */
    uint64_t page_cache_bytes;      /* active_file + inactive_file */
    uint64_t events[TIDE_MEM_EV_COUNT];
    int      has_event[TIDE_MEM_EV_COUNT];
    int      has_psi;               /* v2: memory.pressure was read into psi */
    tide_mem_psi psi;
} tide_mem_cgroup_usage;

/*
 * Read the usage, page cache, events and (v2) pressure of the cgroup
 * directory `path` (tide_mem_cgroup_limit_info.path) of `version` (1 or 2).
 * Returns 0; TIDE_ENOENT when the usage file is missing (the group was
 * removed); TIDE_ECORRUPT naming file and line; TIDE_EIO. A missing event
 * or pressure file is not an error: its has_ flag stays 0.
 * Cost: four or five reads of small files (memory.stat is about 1 KiB v2,
 * 1.5 KiB v1).
 */
int tide_mem_cgroup_usage_read(const char *path, int version, tide_mem_cgroup_usage *out);

#endif
