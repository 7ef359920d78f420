/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rados.h: one connection to a Ceph cluster's pool, through librados' C
 * API, with Tide's error codes and a bound on every wait.
 *
 * A connection is a librados cluster handle and one I/O context on the
 * pool. librados retries an operation for as long as the cluster is away,
 * unless told otherwise: every connection here sets the client's
 * operation timeouts (rados_osd_op_timeout, rados_mon_op_timeout and
 * client_mount_timeout) to `timeout_s`, so a call that the cluster does
 * not answer returns TIDE_EUNAVAIL after at most that long, instead of
 * holding a request or a rotation forever.
 *
 * Errors: every call returns 0 or a negative TIDE_E* code, with
 * "rados POOL/OBJECT: operation: strerror" in tide_last_error():
 *   - ETIMEDOUT, ENOTCONN, ESHUTDOWN, EAGAIN, ECONNREFUSED: TIDE_EUNAVAIL
 *     (the cluster does not answer now);
 *   - ENOENT: TIDE_ENOENT; EEXIST: TIDE_EEXIST; ENOSPC, EDQUOT:
 *     TIDE_ENOSPC (the pool or a quota is full); EFBIG, E2BIG: TIDE_ETOOBIG
 *     (past osd_max_object_size); ERANGE: TIDE_EBUSY (an asserted version
 *     moved: another writer changed the object); ENOMEM: TIDE_ENOMEM;
 *     anything else TIDE_EIO.
 *
 * Thread safety: librados' handles are thread-safe, and so is every call
 * here on one connection, open and close excepted.
 */
#ifndef TIDE_ARCHIVE_RADOS_H
#define TIDE_ARCHIVE_RADOS_H

#include <stddef.h>
#include <stdint.h>

typedef struct tide_rados tide_rados;

typedef struct tide_rados_opts {
    const char *conf;      /* a ceph.conf: where the monitors are, and the
                              client's keyring; NULL: librados' own search
                              ($CEPH_CONF, /etc/ceph/ceph.conf, ...) */
    const char *user;      /* the client's id without "client."; NULL: "admin" */
    const char *pool;      /* the pool; must exist (Tide never creates one) */
    unsigned    timeout_s; /* the longest any call waits for the cluster;
                              0: 10 */
} tide_rados_opts;

/*
 * Connect to the cluster and open the pool. Returns 0 with *out owning the
 * connection; TIDE_EUNAVAIL when no monitor answered within timeout_s;
 * TIDE_ENOENT when the pool does not exist ("pool P does not exist: create
 * it with `ceph osd pool create P`"); TIDE_EINVAL for a conf file librados
 * cannot read (the message names it); TIDE_EACCES when the cluster
 * refuses the user's key; TIDE_EIO otherwise.
 * Cost: reading the conf file and the monmap, one round trip to a monitor
 * and to the OSD map: milliseconds on a healthy cluster, up to timeout_s
 * when it is away. Allocates librados' own handles (threads, buffers: a
 * few MiB of its own, not counted by Tide).
 */
int tide_rados_connect(tide_rados **out, const tide_rados_opts *opts);

/* Shut the connection down; operations still in flight are waited for
 * first (librados' shutdown). NULL is a no-op. */
void tide_rados_close(tide_rados *r);

/* The pool's name, for messages. */
const char *tide_rados_pool(const tide_rados *r);

/* Read `len` bytes at `off` of object `oid` into buf; *got (may be NULL)
 * gets how many there were (fewer at the object's end: 0 past it).
 * Errors as above (TIDE_ENOENT: no such object). Cost: one round trip. */
int tide_rados_read(tide_rados *r, const char *oid, uint64_t off, void *buf, size_t len,
                    size_t *got);

/* Write `len` bytes at `off` of `oid`, creating it when missing. Durable
 * on every replica when it returns 0 (RADOS acknowledges a write once it
 * is committed). Cost: one round trip. */
int tide_rados_write(tide_rados *r, const char *oid, uint64_t off, const void *buf, size_t len);

/* Replace the whole object with buf (atomically: a reader sees the old
 * content or the new). When `version` is not NULL, *version is the
 * object's version the writer last saw (tide_rados_read_full's): the write
 * is refused with TIDE_EBUSY when the object has changed since, and 0 asks
 * that the object not exist yet; on success *version becomes the new one.
 * Cost: one round trip. */
int tide_rados_write_full(tide_rados *r, const char *oid, const void *buf, size_t len,
                          uint64_t *version);

/* Read the whole object (up to `cap` bytes; TIDE_ETOOBIG past it) into a
 * malloc'd buffer *out of *len bytes plus a NUL the length leaves out; the
 * caller frees it. *version (may be NULL) gets the object's version.
 * Cost: two round trips (a stat, then the read). */
int tide_rados_read_full(tide_rados *r, const char *oid, size_t cap, char **out, size_t *len,
                         uint64_t *version);

/* The object's size. TIDE_ENOENT when there is none. One round trip. */
int tide_rados_stat(tide_rados *r, const char *oid, uint64_t *size);

/* Cut (or extend with zeros) the object to `size`. One round trip. */
int tide_rados_truncate(tide_rados *r, const char *oid, uint64_t size);

/* An extended attribute of the object: set `value` (a string) under
 * `name`, or read it into buf (cap bytes, NUL-terminated; TIDE_ENOENT
 * when the object or the attribute is missing). One round trip each. */
int tide_rados_setxattr(tide_rados *r, const char *oid, const char *name, const char *value);
int tide_rados_getxattr(tide_rados *r, const char *oid, const char *name, char *buf, size_t cap);

/* Remove the object; a missing one is 0 (the aim is its absence). */
int tide_rados_remove(tide_rados *r, const char *oid);

/* Remove n objects at once (asynchronous removes, all waited for): 0, or
 * the first failure other than a missing object. Cost: one round trip's
 * wait for the batch; n completions allocated and freed. */
int tide_rados_remove_batch(tide_rados *r, const char *const *oids, size_t n);

/* Call fn(arg, oid) for each object of the pool whose name starts with
 * `prefix`, in no particular order; stop at fn's first non-zero return and
 * return it. Cost: a walk of the whole pool's object list (librados has
 * no listing by name): for tools and tests, never on a request's path. */
int tide_rados_list(tide_rados *r, const char *prefix, int (*fn)(void *arg, const char *oid),
                    void *arg);

/*
 * An asynchronous write of `len` bytes at `off` of `oid`: returns 0 once
 * it is queued, and later calls done(arg, rc) on one of librados' threads
 * with its result (0 or a TIDE_E* code; tide_last_error() is not set on
 * that thread: the code says what happened). `buf` must stay valid and
 * unchanged until done is called. done must not block for long and must
 * not call tide_rados_close. Errors from the queueing itself (TIDE_ENOMEM,
 * TIDE_EIO): done is then never called. Writes to one object from one
 * connection are applied in the order they were queued.
 */
typedef void (*tide_rados_done_fn)(void *arg, int rc);
int tide_rados_write_async(tide_rados *r, const char *oid, uint64_t off, const void *buf,
                           size_t len, tide_rados_done_fn done, void *arg);

/* A librados error (a negative errno) as a TIDE_E* code, with the message
 * "rados POOL/OID: what: strerror" recorded; see the table above. */
int tide_rados_error(const tide_rados *r, int neg_errno, const char *oid, const char *what);

/* The code alone (no message): for completions on librados' threads. */
int tide_rados_code(int neg_errno);

#endif
