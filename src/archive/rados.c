/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rados.c: a connection to one pool of a Ceph cluster (rados.h), the only
 * file of Tide that calls librados.
 *
 * Layout: the error table; connect and close; the synchronous calls, one
 * librados call each; the versioned whole-object calls, on an I/O context
 * of their own; the asynchronous write with its completion.
 *
 * Invariants:
 *   1. Every connection has its three timeouts set before it connects, so
 *      no call here waits for an absent cluster longer than timeout_s.
 *   2. The versioned calls (read_full, write_full with a version) run one
 *      at a time on `vio` under `vmu`: librados reports an object's
 *      version as the last one its I/O context saw, which another thread's
 *      call on the same context would change between the call and the
 *      question.
 *   3. An asynchronous write's completion is released by the callback that
 *      reports it, exactly once.
 *   4. librados is loaded (dlopen) at the first connect and never before:
 *      every call below goes through the table L, filled then.
 *
 * Never: let librados retry without a bound; call the completion of a
 *   write whose queueing failed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/rados.h"
#include "util/err.h"

/* librados, loaded when the first connection is made: a node or a tool
 * that never uses the archive never maps it (its constructors alone take
 * 3 MiB of anonymous memory and change the heap the memory labs measure).
 * Every call goes through L (invariant 4). */
#define RADOS_CALLS(X) \
    X(rados_create) \
    X(rados_conf_read_file) \
    X(rados_conf_set) \
    X(rados_connect) \
    X(rados_shutdown) \
    X(rados_ioctx_create) \
    X(rados_ioctx_destroy) \
    X(rados_aio_flush) \
    X(rados_read) \
    X(rados_write) \
    X(rados_write_full) \
    X(rados_create_write_op) \
    X(rados_release_write_op) \
    X(rados_write_op_create) \
    X(rados_write_op_assert_version) \
    X(rados_write_op_write_full) \
    X(rados_write_op_operate) \
    X(rados_get_last_version) \
    X(rados_stat) \
    X(rados_trunc) \
    X(rados_remove) \
    X(rados_setxattr) \
    X(rados_getxattr) \
    X(rados_nobjects_list_open) \
    X(rados_nobjects_list_next) \
    X(rados_nobjects_list_close) \
    X(rados_aio_create_completion2) \
    X(rados_aio_write) \
    X(rados_aio_remove) \
    X(rados_aio_release) \
    X(rados_aio_get_return_value) \
    X(rados_aio_wait_for_complete)

static struct {
#define RADOS_POINTER(n) __typeof__(&n) n;
    RADOS_CALLS(RADOS_POINTER)
#undef RADOS_POINTER
} L;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[256];

static void load_librados(void)
{
    void *h = dlopen("librados.so.2", RTLD_NOW | RTLD_LOCAL);

    if (h == NULL) {
        snprintf(load_error, sizeof load_error, "%s", dlerror());
        return;
    }
#define RADOS_LOAD(n) \
    if ((*(void **)&L.n = dlsym(h, #n)) == NULL) { \
        snprintf(load_error, sizeof load_error, "librados.so.2 has no %s", #n); \
        return; \
    }
    RADOS_CALLS(RADOS_LOAD)
#undef RADOS_LOAD
    loaded = 1;
}

/* 0 once librados is loaded; TIDE_EINVAL saying what is missing. */
static int librados_ready(void)
{
    pthread_once(&load_once, load_librados);
    if (loaded) return 0;
    return tide_err_set(TIDE_EINVAL, "the archive needs librados (Debian's librados2), which cannot be "
                        "loaded: %s", load_error);
}

struct tide_rados {
    rados_t         cluster;
    rados_ioctx_t   io;
    rados_ioctx_t   vio;          /* the versioned calls' own context (invariant 2) */
    pthread_mutex_t vmu;
    int             connected;
    char            pool[128];
};

int tide_rados_code(int neg_errno)
{
    switch (-neg_errno) {
    case 0:            return 0;
    case ETIMEDOUT:
    case ENOTCONN:
    case ESHUTDOWN:
    case EAGAIN:
    case ECONNREFUSED: return TIDE_EUNAVAIL;
    case ENOENT:       return TIDE_ENOENT;
    case EEXIST:       return TIDE_EEXIST;
    case ENOSPC:
    case EDQUOT:       return TIDE_ENOSPC;
    case EFBIG:
    case E2BIG:        return TIDE_ETOOBIG;
    case ERANGE:
    case EOVERFLOW:    return TIDE_EBUSY;
    case ENOMEM:       return TIDE_ENOMEM;
    case EACCES:
    case EPERM:        return TIDE_EACCES;
    default:           return TIDE_EIO;
    }
}

int tide_rados_error(const tide_rados *r, int neg_errno, const char *oid, const char *what)
{
    int code = tide_rados_code(neg_errno);
    const char *hint = code == TIDE_EUNAVAIL ? " (the cluster does not answer)" : "";

    return tide_err_set(code, "rados %s/%s: %s: %s%s", r ? r->pool : "?", oid ? oid : "-", what,
                        strerror(-neg_errno), hint);
}

static int set_conf(rados_t c, const char *key, const char *val)
{
    int rc = L.rados_conf_set(c, key, val);

    if (rc < 0) return tide_err_set(TIDE_EINVAL, "rados: setting %s=%s: %s", key, val, strerror(-rc));
    return 0;
}

int tide_rados_connect(tide_rados **out, const tide_rados_opts *o)
{
    tide_rados *r = NULL;
    char secs[32];
    int rc;

    *out = NULL;
    if ((rc = librados_ready()) != 0) return rc;
    if (o == NULL || o->pool == NULL || o->pool[0] == '\0' || strlen(o->pool) >= sizeof r->pool)
        return tide_err_set(TIDE_EINVAL, "rados: a pool name of 1 to %zu bytes is needed",
                            sizeof r->pool - 1);
    if ((r = calloc(1, sizeof *r)) == NULL) return tide_err_set(TIDE_ENOMEM, "rados: out of memory");
    pthread_mutex_init(&r->vmu, NULL);
    snprintf(r->pool, sizeof r->pool, "%s", o->pool);
    if ((rc = L.rados_create(&r->cluster, o->user && o->user[0] ? o->user : "admin")) < 0) {
        r->cluster = NULL;
        rc = tide_err_set(TIDE_EIO, "rados: creating a cluster handle: %s", strerror(-rc));
        goto out;
    }
    if (o->conf && (rc = L.rados_conf_read_file(r->cluster, o->conf)) < 0) {
        rc = tide_err_set(TIDE_EINVAL, "%s: librados cannot read it as a Ceph configuration: %s",
                          o->conf, strerror(-rc));
        goto out;
    }
    if (o->conf == NULL && (rc = L.rados_conf_read_file(r->cluster, NULL)) < 0) {
        rc = tide_err_set(TIDE_EINVAL, "no Ceph configuration found ($CEPH_CONF, "
                          "/etc/ceph/ceph.conf): %s", strerror(-rc));
        goto out;
    }
    /* Invariant 1: a bound on every wait, the connect's included. */
    snprintf(secs, sizeof secs, "%u", o->timeout_s ? o->timeout_s : 10);
    if ((rc = set_conf(r->cluster, "rados_osd_op_timeout", secs)) != 0) goto out;
    if ((rc = set_conf(r->cluster, "rados_mon_op_timeout", secs)) != 0) goto out;
    if ((rc = set_conf(r->cluster, "client_mount_timeout", secs)) != 0) goto out;
    /* librados' own log goes to stderr by default; Tide logs what it sees. */
    if ((rc = set_conf(r->cluster, "log_to_stderr", "false")) != 0) goto out;
    if ((rc = set_conf(r->cluster, "err_to_stderr", "false")) != 0) goto out;
    if ((rc = L.rados_connect(r->cluster)) < 0) {
        int code = tide_rados_code(rc);

        if (code == TIDE_EIO && (rc == -EINVAL || rc == -ENOENT)) code = TIDE_EINVAL;
        rc = tide_err_set(code == TIDE_EIO ? TIDE_EUNAVAIL : code,
                          "rados: connecting to the cluster%s%s: %s", o->conf ? " of " : "",
                          o->conf ? o->conf : "", strerror(-rc));
        goto out;
    }
    r->connected = 1;
    if ((rc = L.rados_ioctx_create(r->cluster, r->pool, &r->io)) < 0 ||
        (rc = L.rados_ioctx_create(r->cluster, r->pool, &r->vio)) < 0) {
        if (rc == -ENOENT)
            rc = tide_err_set(TIDE_ENOENT, "rados: pool %s does not exist: create it with "
                              "`ceph osd pool create %s`", r->pool, r->pool);
        else
            rc = tide_rados_error(r, rc, NULL, "opening the pool");
        goto out;
    }
    *out = r;
    r = NULL;
    rc = 0;
out:
    tide_rados_close(r);
    return rc;
}

void tide_rados_close(tide_rados *r)
{
    if (r == NULL) return;
    if (r->io) {
        L.rados_aio_flush(r->io);
        L.rados_ioctx_destroy(r->io);
    }
    if (r->vio) L.rados_ioctx_destroy(r->vio);
    if (r->cluster) L.rados_shutdown(r->cluster);
    pthread_mutex_destroy(&r->vmu);
    free(r);
}

const char *tide_rados_pool(const tide_rados *r)
{
    return r->pool;
}

int tide_rados_read(tide_rados *r, const char *oid, uint64_t off, void *buf, size_t len,
                    size_t *got)
{
    int rc;

    if (got) *got = 0;
    if (len == 0) return 0;
    rc = L.rados_read(r->io, oid, buf, len, off);
    if (rc < 0) return tide_rados_error(r, rc, oid, "read");
    if (got) *got = (size_t)rc;
    return 0;
}

int tide_rados_write(tide_rados *r, const char *oid, uint64_t off, const void *buf, size_t len)
{
    int rc = L.rados_write(r->io, oid, buf, len, off);

    return rc < 0 ? tide_rados_error(r, rc, oid, "write") : 0;
}

int tide_rados_write_full(tide_rados *r, const char *oid, const void *buf, size_t len,
                          uint64_t *version)
{
    rados_write_op_t op;
    int rc;

    if (version == NULL) {
        rc = L.rados_write_full(r->io, oid, buf, len);
        return rc < 0 ? tide_rados_error(r, rc, oid, "write_full") : 0;
    }
    if ((op = L.rados_create_write_op()) == NULL) return tide_err_set(TIDE_ENOMEM, "rados: out of memory");
    if (*version == 0) L.rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
    else L.rados_write_op_assert_version(op, *version);
    L.rados_write_op_write_full(op, buf, len);
    pthread_mutex_lock(&r->vmu);            /* invariant 2 */
    rc = L.rados_write_op_operate(op, r->vio, oid, NULL, 0);
    if (rc == 0) *version = L.rados_get_last_version(r->vio);
    pthread_mutex_unlock(&r->vmu);
    L.rados_release_write_op(op);
    if (rc == -EEXIST || rc == -ERANGE || rc == -EOVERFLOW)
        return tide_err_set(TIDE_EBUSY, "rados %s/%s: another writer changed it since version "
                            "%llu was read", r->pool, oid, (unsigned long long)*version);
    return rc < 0 ? tide_rados_error(r, rc, oid, "write_full") : 0;
}

int tide_rados_read_full(tide_rados *r, const char *oid, size_t cap, char **out, size_t *len,
                         uint64_t *version)
{
    uint64_t size = 0;
    time_t mtime;
    char *buf = NULL;
    int rc;

    *out = NULL;
    *len = 0;
    pthread_mutex_lock(&r->vmu);            /* invariant 2 */
    if ((rc = L.rados_stat(r->vio, oid, &size, &mtime)) < 0) {
        rc = tide_rados_error(r, rc, oid, "stat");
        goto out;
    }
    if (size > cap) {
        rc = tide_err_set(TIDE_ETOOBIG, "rados %s/%s: %llu bytes, more than the %zu expected",
                          r->pool, oid, (unsigned long long)size, cap);
        goto out;
    }
    if ((buf = malloc(size + 1)) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "rados %s/%s: out of memory", r->pool, oid);
        goto out;
    }
    rc = size ? L.rados_read(r->vio, oid, buf, size, 0) : 0;
    if (rc < 0) {
        rc = tide_rados_error(r, rc, oid, "read");
        goto out;
    }
    buf[rc] = '\0';
    *len = (size_t)rc;
    if (version) *version = L.rados_get_last_version(r->vio);
    *out = buf;
    buf = NULL;
    rc = 0;
out:
    pthread_mutex_unlock(&r->vmu);
    free(buf);
    return rc;
}

int tide_rados_stat(tide_rados *r, const char *oid, uint64_t *size)
{
    time_t mtime;
    int rc = L.rados_stat(r->io, oid, size, &mtime);

    return rc < 0 ? tide_rados_error(r, rc, oid, "stat") : 0;
}

int tide_rados_truncate(tide_rados *r, const char *oid, uint64_t size)
{
    int rc = L.rados_trunc(r->io, oid, size);

    return rc < 0 ? tide_rados_error(r, rc, oid, "truncate") : 0;
}

int tide_rados_setxattr(tide_rados *r, const char *oid, const char *name, const char *value)
{
    int rc = L.rados_setxattr(r->io, oid, name, value, strlen(value));

    return rc < 0 ? tide_rados_error(r, rc, oid, "setxattr") : 0;
}

int tide_rados_getxattr(tide_rados *r, const char *oid, const char *name, char *buf, size_t cap)
{
    int rc;

    if (cap == 0) return tide_err_set(TIDE_EINVAL, "rados: getxattr into no buffer");
    rc = L.rados_getxattr(r->io, oid, name, buf, cap - 1);
    if (rc == -ENODATA) rc = -ENOENT;
    if (rc < 0) return tide_rados_error(r, rc, oid, "getxattr");
    buf[rc] = '\0';
    return 0;
}

int tide_rados_remove(tide_rados *r, const char *oid)
{
    int rc = L.rados_remove(r->io, oid);

    return rc < 0 && rc != -ENOENT ? tide_rados_error(r, rc, oid, "remove") : 0;
}

int tide_rados_remove_batch(tide_rados *r, const char *const *oids, size_t n)
{
    rados_completion_t *c = calloc(n ? n : 1, sizeof *c);
    size_t queued = 0;
    int rc = 0;

    if (c == NULL) return tide_err_set(TIDE_ENOMEM, "rados %s: out of memory", r->pool);
    for (; queued < n; queued++) {
        int e = L.rados_aio_create_completion2(NULL, NULL, &c[queued]);
        if (e == 0 && (e = L.rados_aio_remove(r->io, oids[queued], c[queued])) < 0) {
            L.rados_aio_release(c[queued]);
            c[queued] = NULL;
        }
        if (e < 0) {
            rc = tide_rados_error(r, e, oids[queued], "aio_remove");
            break;
        }
    }
    for (size_t i = 0; i < queued; i++) {
        int e;
        L.rados_aio_wait_for_complete(c[i]);
        e = L.rados_aio_get_return_value(c[i]);
        if (e < 0 && e != -ENOENT && rc == 0) rc = tide_rados_error(r, e, oids[i], "remove");
        L.rados_aio_release(c[i]);
    }
    free(c);
    return rc;
}

int tide_rados_list(tide_rados *r, const char *prefix, int (*fn)(void *arg, const char *oid),
                    void *arg)
{
    rados_list_ctx_t ctx;
    const char *oid;
    size_t plen = strlen(prefix);
    int rc;

    if ((rc = L.rados_nobjects_list_open(r->io, &ctx)) < 0)
        return tide_rados_error(r, rc, NULL, "listing the pool");
    while ((rc = L.rados_nobjects_list_next(ctx, &oid, NULL, NULL)) == 0) {
        if (strncmp(oid, prefix, plen) != 0) continue;
        if ((rc = fn(arg, oid)) != 0) break;
    }
    L.rados_nobjects_list_close(ctx);
    if (rc == -ENOENT) return 0;            /* the end of the list */
    if (rc < 0 && rc > -4096) return tide_rados_error(r, rc, NULL, "listing the pool");
    return rc;
}

typedef struct async_write {
    rados_completion_t  c;
    tide_rados_done_fn  done;
    void               *arg;
} async_write;

/* librados' completion thread: report, then release (invariant 3). */
static void write_completed(rados_completion_t c, void *arg)
{
    async_write *w = arg;
    int rc = L.rados_aio_get_return_value(c);

    w->done(w->arg, tide_rados_code(rc < 0 ? rc : 0));
    L.rados_aio_release(c);
    free(w);
}

int tide_rados_write_async(tide_rados *r, const char *oid, uint64_t off, const void *buf,
                           size_t len, tide_rados_done_fn done, void *arg)
{
    async_write *w = calloc(1, sizeof *w);
    int rc;

    if (w == NULL) return tide_err_set(TIDE_ENOMEM, "rados %s/%s: out of memory", r->pool, oid);
    w->done = done;
    w->arg = arg;
    if ((rc = L.rados_aio_create_completion2(w, write_completed, &w->c)) < 0) {
        free(w);
        return tide_rados_error(r, rc, oid, "aio_create_completion");
    }
    if ((rc = L.rados_aio_write(r->io, oid, w->c, buf, len, off)) < 0) {
        L.rados_aio_release(w->c);
        free(w);
        return tide_rados_error(r, rc, oid, "aio_write");
    }
    return 0;
}
