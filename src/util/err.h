/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * err.h: recording what went wrong, for tide_last_error().
 *
 * Each thread has one message buffer (thread-local, 512 bytes). Library code
 * that fails sets it with tide_err_set() at the place that knows the file and
 * offset, and returns the code. A caller that wraps an error keeps the first
 * message (tide_err_prefix adds context in front of it).
 */
#ifndef TIDE_ERR_H
#define TIDE_ERR_H

#include "tide/error.h"

/* Format the thread's message and return `code`, so failures read
 * `return tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: ...", ...)`. */
int tide_err_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Put "<context>: " in front of the current message; returns `code`. */
int tide_err_prefix(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For a failed system call: format the message, append ": <strerror(e)>",
 * and return tide_err_from_errno(e), so failures read
 * `return tide_err_sys(errno, "%s: pread at offset %llu", path, off)`. */
int tide_err_sys(int e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Empty the thread's message. */
void tide_err_clear(void);

/* Map an errno value to a TIDE_E* code (ENOSPC, EDQUOT -> TIDE_ENOSPC;
 * ENOENT -> TIDE_ENOENT; ENOMEM -> TIDE_ENOMEM; EEXIST -> TIDE_EEXIST;
 * EWOULDBLOCK -> TIDE_EBUSY; others -> TIDE_EIO). */
int tide_err_from_errno(int e);

#endif
