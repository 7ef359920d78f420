/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tide/error.h: Tide's error codes.
 *
 * Every library function returns an int: 0 (TIDE_OK) on success or one of
 * the negative constants below, from TIDE_ERROR_MIN to TIDE_ERROR_MAX. tide_strerror() names a code in a fixed
 * string; tide_last_error() gives the calling thread's detailed message for
 * the most recent failure (which file, which offset, what was wrong).
 */
#ifndef TIDE_ERROR_H
#define TIDE_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

enum {
    TIDE_OK        = 0,
    /* The codes sit in a range of their own, TIDE_ERROR_MIN to
     * TIDE_ERROR_MAX, so that a program never takes one for a negative
     * errno (-1 to -133 on Linux) or another library's code. */
    TIDE_ERROR_MAX = -30501,
    TIDE_EINVAL    = -30501, /* an argument or option is out of range */
    TIDE_ENOMEM    = -30502, /* an allocation failed */
    TIDE_EIO       = -30503, /* a read, write or sync failed */
    TIDE_ENOSPC    = -30504, /* the disk is full */
    TIDE_ECORRUPT  = -30505, /* a file does not hold what the format says */
    TIDE_ENOTFOUND = -30506, /* the key is absent */
    TIDE_EEXIST    = -30507, /* the key (or the store) already exists */
    TIDE_ENOENT    = -30508, /* a file or directory does not exist */
    TIDE_EMISMATCH = -30509, /* the files belong to different stores */
    TIDE_EVERSION  = -30510, /* an unsupported format version */
    TIDE_EHASH     = -30511, /* the key file's pepper does not match XXH64 */
    TIDE_EBUSY     = -30512, /* another process holds the store */
    TIDE_ECLOSED   = -30513, /* the store is closing or has failed */
    TIDE_ETOOBIG   = -30514, /* a value is larger than the format allows */
    TIDE_EKEYSIZE  = -30515, /* a key of the wrong length */
    TIDE_ENOTSTORE = -30516, /* the file is not a NuDB file */
    TIDE_ENOTEMPTY = -30517, /* a directory to remove still has entries */
    TIDE_EOVERLOAD = -30518, /* the node is over its memory level for writes */
    TIDE_EACCES    = -30519, /* the files' permissions refuse this user */
    TIDE_EROFS     = -30520, /* the file system is mounted read-only */
    TIDE_EUNAVAIL  = -30521, /* a remote service (the archive's cluster) does
                                not answer now: try again later */
    TIDE_ERROR_MIN = -30521
};

/* The fixed name and meaning of `code`, e.g. "key not found". Never NULL;
 * unknown codes give "unknown error". Thread-safe; allocates nothing. */
const char *tide_strerror(int code);

/* The calling thread's message for the most recent failure that recorded
 * one, e.g. "nudb.key: offset 44: block size 0 is below 104". Empty when
 * nothing was recorded. Valid until the thread's next failing call. */
const char *tide_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
