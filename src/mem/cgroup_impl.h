/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cgroup_impl.h: the small-file reading that cgroup.c (the limit) and
 * pressure.c (usage, events, PSI) share. Nothing outside src/mem includes
 * it; cgroup.h and pressure.h are the contracts.
 *
 * Both read kernel files of a few KiB at most, on the stack, without
 * stdio or allocation; both name the file (and the line) in every error.
 */
#ifndef TIDE_MEM_CGROUP_IMPL_H
#define TIDE_MEM_CGROUP_IMPL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Read the whole of `path` into buf (at most cap - 1 bytes), NUL-terminated;
 * *len (may be NULL) gets the byte count. Returns 0; TIDE_ENOENT when the
 * file does not exist; TIDE_ECORRUPT when it holds more than cap - 1 bytes
 * (a truncated read would parse as a wrong figure); TIDE_EIO otherwise.
 * cap >= 2.
 */
int ti_cgroup_read_small(const char *path, char *buf, size_t cap, size_t *len);

/*
 * Read a one-line value file: decimal digits and an optional newline, or
 * (when allow_max) "max", which gives *unlimited = 1 and *val = 0.
 * Returns 0; the errors of ti_cgroup_read_small; TIDE_ECORRUPT naming
 * "path:1" for anything else.
 */
int ti_cgroup_read_value(const char *path, int allow_max, uint64_t *val, int *unlimited);

#endif
