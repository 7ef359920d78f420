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
 *   3. tide_strerror() returns a fixed string for every code from
 *      TIDE_ERROR_MIN to 0, and "unknown error" for anything else. It never
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

int tide_err_set(int code, const char *fmt, ...)
{
    char scratch[TIDE_ERR_MSG_MAX];
    int saved = errno;
    va_list ap;

    va_start(ap, fmt);
    format_into(scratch, sizeof scratch, fmt, ap);
    va_end(ap);
    memcpy(err_msg, scratch, sizeof err_msg);
    errno = saved;
    return code;
}

int tide_err_prefix(int code, const char *fmt, ...)
{
    char scratch[TIDE_ERR_MSG_MAX];
    int saved = errno;
    size_t used;
    va_list ap;
    int n;

    va_start(ap, fmt);
    format_into(scratch, sizeof scratch, fmt, ap);
    va_end(ap);
    used = strlen(scratch);
    if (err_msg[0] != '\0' && used + 1 < sizeof scratch) {
        n = snprintf(scratch + used, sizeof scratch - used, ": %s", err_msg);
        if (n >= 0 && (size_t)n >= sizeof scratch - used)
            mark_truncated(scratch, sizeof scratch);
    }
    memcpy(err_msg, scratch, sizeof err_msg);
    errno = saved;
    return code;
}

int tide_err_sys(int e, const char *fmt, ...)
{
    char scratch[TIDE_ERR_MSG_MAX];
    char ebuf[128];
    const char *etext;
    int saved = errno;
    size_t used;
    va_list ap;
    int n;

    va_start(ap, fmt);
    format_into(scratch, sizeof scratch, fmt, ap);
    va_end(ap);
    etext = strerror_r(e, ebuf, sizeof ebuf); /* GNU strerror_r */
    used = strlen(scratch);
    if (used + 1 < sizeof scratch) {
        n = snprintf(scratch + used, sizeof scratch - used, ": %s", etext);
        if (n >= 0 && (size_t)n >= sizeof scratch - used)
            mark_truncated(scratch, sizeof scratch);
    }
    memcpy(err_msg, scratch, sizeof err_msg);
    errno = saved;
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
    default:             return "unknown error";
    }
}

const char *tide_last_error(void)
{
    return err_msg;
}
