/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proc.h: what the kernel says about this process's memory and I/O.
 *
 * Every reader here opens one small file under /proc/self (/proc/PID for
 * the tide_mem_proc_pid_* readers of another process, or /sys), reads it
 * with read(2) into a buffer on the stack, closes it and parses the
 * numbers. None of them allocate, and none use stdio: a FILE * mallocs its
 * buffer, and a reader that allocates can itself pin a heap page, or move
 * the very figure it is there to report. That makes them safe to call from
 * a sampler thread every 10 ms, from a metrics scrape, or right before and
 * after a malloc_trim().
 *
 * Units: every size is in bytes (the kernel's "kB" fields are multiplied by
 * 1024, page counts by sysconf(_SC_PAGESIZE), sectors by 512).
 *
 * Every function returns 0 or a negative TIDE_E* code, with the file and the
 * reason in tide_last_error(). The structures are filled only on success.
 *
 * Two costs differ in kind, and callers choose by them:
 *   - statm, status, io, and the thread's fault counters are counters the
 *     kernel keeps up to date: reading them costs the same whatever the size
 *     of the process. Safe for every 10 ms and for every trim.
 *   - smaps_rollup walks every page table of the process under its mmap
 *     lock (measured on the development machine: 11 ms with 430 MiB
 *     resident, 2 ms with 44 MiB; statm takes about 10 us, status 25 us).
 *     While it runs, the process's own
 *     mmap, munmap, brk and page faults that need that lock wait. Keep it for
 *     a scrape or a diagnosis, never a hot path or a timer of seconds.
 *
 * Thread safety: all functions are thread-safe (no shared state).
 */
#ifndef TIDE_MEM_PROC_H
#define TIDE_MEM_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The page size in bytes, from sysconf(_SC_PAGESIZE) (4096 on x86-64; 16
 * or 64 KiB on some arm64 and ppc64 kernels, where a freed small chunk is
 * less likely to leave a whole page free for the allocator to return).
 * Never fails: 4096 if sysconf should answer nonsense.
 * Cost: no system call (glibc reads it from the auxiliary vector).
 */
size_t tide_mem_proc_page_size(void);

/*
 * Resident set size from /proc/self/statm (field 2, in pages) in bytes.
 * The cheapest RSS there is: the kernel formats seven numbers.
 * Errors: TIDE_EIO (the file cannot be read), TIDE_ECORRUPT (unparseable).
 * Cost: one open/read/close of a ~40-byte file; no allocation.
 */
int tide_mem_proc_statm_rss(uint64_t *rss_bytes);

/*
 * The same for process `pid` (/proc/PID/statm; 0: this process), e.g. a
 * child the caller started. Errors as above, and TIDE_ENOENT when there is
 * no such process (it exited and was reaped). Cost: the same.
 */
int tide_mem_proc_pid_statm_rss(pid_t pid, uint64_t *rss_bytes);

typedef struct tide_mem_proc_status {
    uint64_t vm_rss;     /* VmRSS: resident now */
    uint64_t vm_hwm;     /* VmHWM: peak resident since start or the last
                            tide_mem_proc_reset_peak() */
    uint64_t rss_anon;   /* RssAnon: heap, stacks, anonymous mmaps */
    uint64_t rss_file;   /* RssFile: mapped files (binary, libraries, mmap'd data) */
    uint64_t rss_shmem;  /* RssShmem: shared memory, tmpfs mappings */
    int      has_split;  /* 1 when RssAnon/RssFile/RssShmem were present
                            (Linux >= 4.5); otherwise those three are 0 */
} tide_mem_proc_status;

/*
 * The memory lines of /proc/self/status, in bytes.
 * Errors: TIDE_EIO (cannot be read), TIDE_ECORRUPT (no VmRSS line).
 * Cost: one open/read/close of a ~1.5 KiB file (the kernel walks no page
 * tables: these are counters); no allocation. Cheap enough for every 10 ms.
 */
int tide_mem_proc_status_read(tide_mem_proc_status *out);

/*
 * The anonymous resident memory of this process: RssAnon + RssShmem of
 * /proc/self/status, or VmRSS on a kernel before 4.5 that has no split.
 * What a memory bound counts: file-backed pages (the binary, libraries, a
 * read-only map of a store's key file) are page cache the kernel reclaims
 * without the process, and which no free or trim gives back.
 * Errors and cost: as tide_mem_proc_status_read.
 */
int tide_mem_proc_anon_rss(uint64_t *bytes);

typedef struct tide_mem_proc_smaps {
    uint64_t rss;         /* Rss: resident, summed over every mapping */
    uint64_t pss;         /* Pss: resident, shared pages divided among sharers */
    uint64_t referenced;  /* Referenced: resident pages accessed since the
                             last clear_refs (or since they were mapped) */
    uint64_t anonymous;   /* Anonymous: resident anonymous pages */
    uint64_t lazy_free;   /* LazyFree: pages given back with MADV_FREE that
                             the kernel has not reclaimed yet (they still
                             count in Rss until it does) */
    uint64_t swap;        /* Swap: swapped out */
    int      has_lazy_free; /* 0 on kernels older than 4.12; lazy_free is 0 */
} tide_mem_proc_smaps;

/*
 * The totals of /proc/self/smaps_rollup (Linux >= 4.14), in bytes.
 *
 * Rss - Referenced is memory resident but not touched lately (after
 * tide_mem_proc_pid_reset_referenced(), "since then"); LazyFree is memory an
 * allocator has released with MADV_FREE that still counts in RSS.
 *
 * Errors: TIDE_ENOENT when the kernel has no smaps_rollup (older than 4.14;
 * the message says so), TIDE_EIO when it cannot be read (EACCES under some
 * container policies), TIDE_ECORRUPT when there is no Rss line.
 * Cost: the kernel walks the page tables of every mapping of the process
 * while holding the process's mmap lock for reading: about 25 ms per GiB
 * resident on the development machine, during which mmap/munmap/brk and some page faults of every
 * thread of this process wait. One open/read/close of a ~1 KiB file; no
 * allocation. Not for hot paths (see the top of this file).
 */
int tide_mem_proc_smaps_rollup_read(tide_mem_proc_smaps *out);

/*
 * The same for process `pid` (/proc/PID/smaps_rollup; 0: this process).
 * Reading another process's needs the right to ptrace it (a child of the
 * caller, same user). Errors and cost as above; the page walk and the lock
 * are the other process's, which its own threads then wait on.
 */
int tide_mem_proc_pid_smaps_rollup_read(pid_t pid, tide_mem_proc_smaps *out);

/*
 * Clear the "referenced" bits of every page of process `pid` (0: this
 * process) by writing "1" to /proc/PID/clear_refs, so that a following
 * smaps_rollup's Referenced is what was touched since this call.
 * Errors: TIDE_EIO when the write is refused (EACCES/EPERM in a restricted
 * container, EINVAL on old kernels).
 * Cost: the kernel walks every page table of the process under the mmap
 * lock, like smaps_rollup, and later accesses take soft faults to set the
 * bits again. No allocation.
 */
int tide_mem_proc_pid_reset_referenced(pid_t pid);

typedef struct tide_mem_proc_faults {
    uint64_t minflt;   /* faults served without I/O (first touch of an
                          anonymous page, a page already in the page cache) */
    uint64_t majflt;   /* faults that waited for I/O */
} tide_mem_proc_faults;

/*
 * The page-fault counters of the calling thread (getrusage(RUSAGE_THREAD)),
 * cumulative since the thread started. Take a difference across a call to
 * see what that call cost on this thread: a malloc_trim that returned pages
 * costs minor faults later, when those pages are touched again.
 * Errors: TIDE_EIO when getrusage fails (it does not on Linux >= 2.6.26).
 * Cost: one getrusage(2); no allocation. Thread-safe by nature: each thread
 * reads its own counters.
 */
int tide_mem_proc_thread_faults(tide_mem_proc_faults *out);

typedef struct tide_mem_proc_io {
    uint64_t rchar;        /* bytes passed to read-like calls (page cache hits too) */
    uint64_t wchar;        /* bytes passed to write-like calls */
    uint64_t read_bytes;   /* bytes fetched from the storage layer */
    uint64_t write_bytes;  /* bytes sent (or dirtied for) the storage layer */
    int      has_device_bytes; /* 0 when read_bytes/write_bytes were absent
                                  (no CONFIG_TASK_IO_ACCOUNTING); both are 0 */
} tide_mem_proc_io;

/*
 * The I/O counters of /proc/self/io (all threads of the process, including
 * threads that have exited).
 * Errors: TIDE_EIO when the file is missing or unreadable (some containers
 * and kernels without task I/O accounting), TIDE_ECORRUPT when rchar or
 * wchar is missing.
 * Cost: one open/read/close of a ~100-byte file; no allocation.
 */
int tide_mem_proc_io_read(tide_mem_proc_io *out);

/*
 * Reset the process's peak RSS (VmHWM) to its current RSS by writing "5" to
 * /proc/self/clear_refs (Linux >= 4.0), so that a following VmHWM is the
 * peak of the phase that follows.
 * Errors: TIDE_EIO when the write is not permitted (EACCES, EPERM in a
 * restricted container) or not supported (EINVAL, older kernels); VmHWM is
 * then the lifetime peak and callers should say so.
 * Cost: one open/write/close; no allocation.
 */
int tide_mem_proc_reset_peak(void);

typedef struct tide_mem_proc_blockdev {
    unsigned major, minor;         /* the block device that holds the file */
    char     name[64];             /* its kernel name, e.g. "nvme0n1p2" */
    uint64_t bytes_read;           /* stat field 3 (sectors read) * 512 */
    uint64_t bytes_written;        /* stat field 7 (sectors written) * 512 */
    uint64_t reads, writes;        /* stat fields 1 and 5: I/Os completed (the
                                      block layer's, after its merges) */
    int      is_partition;         /* 1 when it is a partition of a disk; */
    unsigned parent_major, parent_minor;   /* then the whole disk's */
    char     parent_name[64];
    uint64_t parent_bytes_read, parent_bytes_written;
    uint64_t parent_reads, parent_writes;
} tide_mem_proc_blockdev;

/*
 * The cumulative block-device counters of the device that holds `path` (a
 * file or directory): stat(path).st_dev gives MAJ:MIN, and
 * /sys/dev/block/MAJ:MIN/stat gives the counters; when that device is a
 * partition, the whole disk's counters are read too. When st_dev is not a
 * block device (btrfs and other file systems that report an anonymous
 * device), the mount with that st_dev is looked up in /proc/self/mountinfo
 * and its source (e.g. /dev/nvme0n1p2) is used when it is a block device.
 *
 * The counters are for the whole device: every process's writes count, and
 * the file system's journal and metadata too. Take a difference across a
 * phase on an otherwise quiet machine.
 *
 * Errors: TIDE_ENOENT when `path` does not exist or lives on no block
 * device (tmpfs, overlayfs, NFS), TIDE_EIO when /sys cannot be read,
 * TIDE_ECORRUPT when a stat file cannot be parsed.
 * Cost: one stat(2), one or two readlink(2), and one open/read/close per
 * stat file (two for a partition); the mountinfo fallback adds one
 * sequential read of /proc/self/mountinfo in 4 KiB pieces. No allocation.
 */
int tide_mem_proc_blockdev_read(const char *path, tide_mem_proc_blockdev *out);

/* The figures behind Prometheus' standard process_* families. */
typedef struct tide_mem_proc_process {
    double   cpu_seconds;        /* utime + stime of every thread */
    double   start_time_seconds; /* Unix time the process started: the
                                    boot time (btime of /proc/stat) plus
                                    its starttime, as the official clients */
    uint64_t virtual_bytes;      /* vsize */
    uint64_t open_fds;           /* entries of /proc/self/fd */
    uint64_t max_fds;            /* RLIMIT_NOFILE soft limit */
    uint64_t virtual_max_bytes;  /* RLIMIT_AS soft limit; UINT64_MAX: none */
} tide_mem_proc_process;

/*
 * Read them. Errors: TIDE_EIO / TIDE_ECORRUPT naming the file.
 * Cost: reads of /proc/self/stat and /proc/stat (once per process, for the
 * boot time), getrlimit twice, and a walk of /proc/self/fd with
 * getdents64 into a stack buffer (no opendir, so no malloc): O(open fds).
 */
int tide_mem_proc_process_read(tide_mem_proc_process *out);

/*
 * RSS in the three parts an operator needs to read `ps` and `top` right:
 * the process's own memory, and the store files' pages that RSS shows
 * although the kernel reclaims them as page cache.
 *   anonymous    RssAnon + RssShmem: heap, stacks, anonymous maps; what
 *                memory_limit counts (with the cgroup's usage less page
 *                cache, when that is larger);
 *   store_maps   the pages of nudb.dat's and nudb.key's read-only maps this
 *                process has mapped in (`maps_resident`, from pagemap), at
 *                most RssFile: page cache, not counted;
 *   other_files  the rest of RssFile: the binary, the libraries.
 * They add up to VmRSS. TIDE_EINVAL (nothing written) when `st` has no
 * RssAnon/RssFile split (a kernel before 4.5). No I/O.
 */
typedef struct tide_mem_rss_parts {
    uint64_t rss, anonymous, store_maps, other_files;
} tide_mem_rss_parts;

int tide_mem_rss_parts_of(const tide_mem_proc_status *st, uint64_t maps_resident, tide_mem_rss_parts *out);

/*
 * The parts as one line for a person, into out (always NUL-terminated):
 * "RSS 647.0 MiB = 69.0 MiB process memory (anonymous, counted against
 * memory_limit) + 578.0 MiB of nudb.dat/nudb.key mapped read-only (page
 * cache the kernel reclaims; not counted) + 0.4 MiB code and libraries".
 * `limited` 0 says "what a memory_limit would count" instead. No I/O.
 */
void tide_mem_rss_parts_text(const tide_mem_rss_parts *p, int limited, char *out, size_t cap);

#endif
