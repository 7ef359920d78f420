/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * err.c: error codes, their names, and the per-thread failure message.
 *
 * Tide's library functions return 0 or a negative TIDE_E* code. The code says
 * what kind of failure it was; the message says where: which file, which
 * offset, which value. The place that detects a failure records the message
 * with tide_err_set() and returns the code in the same statement, so a
 * caller several frames up can print tide_last_error() and the user sees
 * "nudb.key: offset 44: block size 0 is below 104".
 *
 * Invariants:
 *   1. Each thread owns one message buffer of TIDE_ERR_MSG_MAX bytes. It is
 *      always NUL-terminated; an overlong message is cut and ends in "...".
 *   2. tide_err_set() and tide_err_prefix() may be given the current message
 *      as one of their own arguments (e.g. "%s", tide_last_error()): both
 *      format into a scratch buffer first and copy it in afterwards.
 *   3. tide_strerror() returns a fixed string for 0 and every code from
 *      TIDE_ERROR_MIN to TIDE_ERROR_MAX, and "unknown error" for anything
 *      else (a negative errno included). It never
 *      returns NULL and never allocates.
 *   4. Nothing here changes errno, so a caller can record a message and
 *      still look at errno afterwards.
 *
 * Never: allocate. Recording a failure must work when the failure is
 * TIDE_ENOMEM.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/err.h"

#define TIDE_ERR_MSG_MAX 512

static _Thread_local char err_msg[TIDE_ERR_MSG_MAX];

/* Mark a cut message with "..." so a reader knows there was more. */
static void mark_truncated(char *buf, size_t cap)
{
    if (cap >= 4) memcpy(buf + cap - 4, "...", 4);
}

/* Format into `buf` (cap bytes, always terminated), marking a cut. */
static void format_into(char *buf, size_t cap, const char *fmt, va_list ap)
{
    int n = vsnprintf(buf, cap, fmt, ap);

    if (n < 0) buf[0] = '\0';
    else if ((size_t)n >= cap) mark_truncated(buf, cap);
}

/* Append ": `reason`" to the message in `buf` (cap bytes) when it has room
 * for more than its NUL, marking a cut. */
static void append_reason(char *buf, size_t cap, const char *reason)
{
    size_t used = strlen(buf);
    int n;

    if (used + 1 >= cap) return;
    n = snprintf(buf + used, cap - used, ": %s", reason);
    if (n >= 0 && (size_t)n >= cap - used) mark_truncated(buf, cap);
}

/* Make `fmt` (with `ap`), then ": `reason`" when reason is given and not
 * empty, the thread's message. Formatted in a scratch buffer first, so an
 * argument may be the current message itself (tide_err_prefix). errno is
 * kept (4). */
static void record(const char *reason, const char *fmt, va_list ap)
{
    char scratch[TIDE_ERR_MSG_MAX];
    int saved = errno;

    format_into(scratch, sizeof scratch, fmt, ap);
    if (reason != NULL && reason[0] != '\0') append_reason(scratch, sizeof scratch, reason);
    memcpy(err_msg, scratch, sizeof err_msg);
    errno = saved;
}

int tide_err_set(int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    record(NULL, fmt, ap);
    va_end(ap);
    return code;
}

int tide_err_prefix(int code, const char *fmt, ...)
{
    char old[TIDE_ERR_MSG_MAX];
    va_list ap;

    memcpy(old, err_msg, sizeof old);
    va_start(ap, fmt);
    record(old, fmt, ap);
    va_end(ap);
    return code;
}

int tide_err_sys(int e, const char *fmt, ...)
{
    char ebuf[128];
    int saved = errno;
    const char *etext = strerror_r(e, ebuf, sizeof ebuf); /* GNU strerror_r */
    va_list ap;

    errno = saved;
    va_start(ap, fmt);
    record(etext, fmt, ap);
    va_end(ap);
    return tide_err_from_errno(e);
}

void tide_err_clear(void)
{
    err_msg[0] = '\0';
}

int tide_err_from_errno(int e)
{
    /* e == 0 still means a failure was seen (errno was lost on the way):
     * TIDE_EIO, never TIDE_OK. */
    switch (e) {
    case ENOSPC:
    case EDQUOT:  return TIDE_ENOSPC;
    case ENOENT:  return TIDE_ENOENT;
    case ENOMEM:  return TIDE_ENOMEM;
    case EEXIST:  return TIDE_EEXIST;
    case EWOULDBLOCK: return TIDE_EBUSY; /* == EAGAIN on Linux */
    case EACCES:
    case EPERM:   return TIDE_EACCES;
    case EROFS:   return TIDE_EROFS;
    default:      return TIDE_EIO;
    }
}

const char *tide_strerror(int code)
{
    switch (code) {
    case TIDE_OK:        return "success";
    case TIDE_EINVAL:    return "invalid argument";
    case TIDE_ENOMEM:    return "out of memory";
    case TIDE_EIO:       return "input/output error";
    case TIDE_ENOSPC:    return "no space left on device";
    case TIDE_ECORRUPT:  return "file is corrupt";
    case TIDE_ENOTFOUND: return "key not found";
    case TIDE_EEXIST:    return "already exists";
    case TIDE_ENOENT:    return "no such file or directory";
    case TIDE_EMISMATCH: return "files belong to different stores";
    case TIDE_EVERSION:  return "unsupported format version";
    case TIDE_EHASH:     return "hash function does not match the key file";
    case TIDE_EBUSY:     return "store is in use by another process";
    case TIDE_ECLOSED:   return "store is closed or has failed";
    case TIDE_ETOOBIG:   return "value too large";
    case TIDE_EKEYSIZE:  return "wrong key size";
    case TIDE_ENOTSTORE: return "not a NuDB file";
    case TIDE_ENOTEMPTY: return "directory not empty";
    case TIDE_EOVERLOAD: return "over the memory limit's level for writes";
    case TIDE_EACCES:    return "permission denied";
    case TIDE_EROFS:     return "read-only file system";
    case TIDE_EUNAVAIL:  return "service unavailable, try again later";
    default:             return "unknown error";
    }
}

const char *tide_last_error(void)
{
    return err_msg;
}
