/*
 * cmd_store.c: the verbs that work on one store: create, info, put, get,
 * visit, verify, recover, rekey.
 *
 * Each verb parses its own options with getopt_long (options may come
 * before or after the positional arguments), checks every argument it can
 * before touching the store, then makes as few store calls as the job
 * needs:
 *
 *   create  mkdir of the last component, tide_store_create, then
 *           tide_store_inspect to print what was made.
 *   info    tide_store_inspect only: no lock, no recovery, no writes.
 *   put     tide_store_inspect (key size, pending recovery) before reading
 *           stdin, so a wrong key fails before the value is read; then
 *           open read-write (which recovers an interrupted commit), insert,
 *           sync, close. The library's lock refuses it (TIDE_EBUSY) while
 *           another Tide process, a node say, has the store open, and its
 *           holders check while any other process (NuDB, which locks
 *           nothing) has one of the files open, unless --force.
 *   get     open read-only (a shared lock). It never recovers: when
 *           nudb.log holds an unfinished commit (a crash's, or a live NuDB
 *           writer's, which no lock reveals) it says so and exits 1 having
 *           written nothing. A Tide writer elsewhere gives TIDE_EBUSY.
 *   visit   tide_store_visit: reads nudb.dat only.
 *   verify  tide_store_verify: a read-only open (a shared lock), one pass
 *           over nudb.key and one over nudb.dat; prints the figures, or the
 *           first problem with its file and offset.
 *   recover a probe of the lock on nudb.key (flock, non-blocking) and of
 *           the processes that have the store's files open (any, NuDB's
 *           included; skipped with --force), so that the log of a live
 *           commit is never touched, a look at the size of nudb.log, then
 *           tide_store_recover_ex; says what it did in words.
 *   rekey   tide_store_inspect, tide_store_recover when nudb.log holds an
 *           interrupted commit (so the size of nudb.dat, which the progress
 *           line divides into passes, is the one the rekey will read), then
 *           tide_store_rekey, which takes the lock itself (TIDE_EBUSY while
 *           a node has the store open). Progress goes to stderr only when
 *           stderr is a terminal, at most ten redraws a second.
 *
 * Invariants:
 *   1. Exit status 2 means nothing in the store was read or changed by a
 *      write: usage errors are found before any open.
 *   2. A directory made by `create` is removed again when the create fails.
 *   3. Every store opened here is closed on every path, and a failing close
 *      is reported (it is the final commit).
 *
 * Values are binary: put reads stdin with read(2) and get writes stdout
 * with write(2); neither adds nor strips anything.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tide/error.h"
#include "tide/store.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/hex.h"
#include "util/size.h"

#define KEY_MAX 65535u
#define LOG_HEADER_BYTES 62   /* NuDB's log header; a shorter nudb.log holds nothing */

/* ---- shared by the verbs ---- */

/* Decode KEYHEX into key[KEY_MAX]; *len gets its size. Prints and returns
 * CLI_USAGE when it is not hex. */
static int decode_key(const char *verb, const char *hex, unsigned char *key, size_t *len)
{
    int rc;

    if (hex[0] == '\0')
        return cli_usage(verb, "the key is empty; give it in hex, 2 digits per byte");
    rc = tide_hex_decode(hex, key, KEY_MAX, len);
    if (rc) {
        tide_err_prefix(rc, "key '%.80s%s'", hex, strlen(hex) > 80 ? "..." : "");
        cli_fail(verb, rc);
        fprintf(stderr, "Try 'tide help %s'.\n", verb);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* The key's length against the store's key size. */
static int check_key_size(const char *verb, const char *hex, size_t len, unsigned key_size)
{
    if (len == key_size) return CLI_OK;
    return cli_usage(verb, "key '%.80s%s' is %zu bytes (%zu hex digits); this store's keys are "
                     "%u bytes (%u hex digits)", hex, strlen(hex) > 80 ? "..." : "",
                     len, 2 * len, key_size, 2 * key_size);
}

static const char *human(uint64_t bytes, char *buf, size_t cap)
{
    return tide_size_format(bytes, buf, cap);
}

/*
 * Before a verb writes (put, recover, rekey): refuse while another process
 * has one of the store's files open, naming up to three of them, unless
 * --force. The library checks again at its open (closing the window); this
 * copy is for the message, which lists the processes and the way out.
 * Returns CLI_OK or CLI_FAIL (printed).
 */
static int refuse_holders(const char *verb, const char *path, int force, const char *doing)
{
    tide_store_holder h[3];
    size_t n = 0;
    char list[400] = "";
    int rc;

    if (force) return CLI_OK;
    rc = tide_store_holders(path, NULL, h, 3, &n);
    if (rc) return cli_fail(verb, rc);
    if (n == 0) return CLI_OK;
    for (size_t i = 0; i < n && i < 3; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s is open in process %d (%s)",
                 i ? ", " : "", h[i].file, h[i].pid, h[i].comm);
    }
    if (n > 3) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, " and %zu more", n - 3);
    }
    return cli_error(verb, "%s: store is busy: %s. A process that has the store's files open may "
                     "be writing them (NuDB takes no lock), and %s now could undo its commits; "
                     "nothing was changed. Stop it first, or pass --force if it only reads the "
                     "store.", path, list, doing);
}

/* ---- create ---- */

int cli_cmd_create(int argc, char **argv)
{
    static const struct option opts[] = {
        { "key-size",    required_argument, NULL, 'k' },
        { "block-size",  required_argument, NULL, 'b' },
        { "load-factor", required_argument, NULL, 'f' },
        { "appnum",      required_argument, NULL, 'a' },
        { "help",        no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    tide_store_create_opts o;
    tide_store_info info;
    struct stat st;
    const char *path;
    char warning[256];
    uint64_t v;
    int c, rc, made_dir = 0;

    tide_store_create_opts_init(&o);
    o.key_size = 32;
    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
            if (cli_parse_u64(optarg, 1, KEY_MAX, &v) != 0)
                return cli_usage("create", "--key-size '%s' is not a whole number from 1 to %u",
                                 optarg, KEY_MAX);
            o.key_size = (unsigned)v;
            break;
        case 'b':
            o.block_size = tide_block_size_parse(optarg, warning, sizeof warning);
            if (warning[0]) fprintf(stderr, "tide create: warning: %s\n", warning);
            break;
        case 'f':
            if (cli_parse_double(optarg, &o.load_factor) != 0 ||
                !(o.load_factor > 0.0 && o.load_factor <= 1.0))
                return cli_usage("create", "--load-factor '%s' is not a number greater than 0 "
                                 "and at most 1", optarg);
            break;
        case 'a':
            if (cli_parse_u64(optarg, 0, UINT64_MAX, &v) != 0)
                return cli_usage("create", "--appnum '%s' is not a whole number from 0 to "
                                 "18446744073709551615 (decimal or 0x hex)", optarg);
            o.appnum = v;
            break;
        case 'h':
            cli_help("create", stdout);
            return CLI_OK;
        default:
            return cli_option_error("create", c, argv);
        }
    }
    if (optind >= argc) return cli_usage("create", "no PATH given");
    if (argc - optind > 1) return cli_usage("create", "one PATH only (got '%s' too)", argv[optind + 1]);
    path = argv[optind];
    if (path[0] == '\0') return cli_usage("create", "PATH is empty");

    /* The directory: make only its last component. */
    if (stat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return cli_error("create", "%s: exists and is not a directory", path);
    } else if (errno != ENOENT) {
        return cli_error("create", "%s: %s", path, strerror(errno));
    } else if (mkdir(path, 0755) != 0) {
        int e = errno;
        if (e == ENOENT) {
            char copy[4096];
            snprintf(copy, sizeof copy, "%s", path);
            return cli_error("create", "cannot create directory '%s': its parent '%s' does not exist "
                             "(tide create makes only the last component)", path, dirname(copy));
        }
        return cli_error("create", "cannot create directory '%s': %s", path, strerror(e));
    } else {
        made_dir = 1;
    }

    rc = tide_store_create(path, &o);
    if (rc) {
        if (made_dir) rmdir(path);
        if (rc == TIDE_EEXIST)
            return cli_error("create", "%s: a store is already there (nudb.dat or nudb.key exists); "
                             "nothing was changed", path);
        return cli_fail("create", rc);
    }
    rc = tide_store_inspect(path, NULL, &info);
    if (rc) return cli_fail("create", rc);
    printf("created %s: key size %u, block size %u, load factor %.4g (%u/65536), appnum %llu, "
           "uid 0x%016llx, salt 0x%016llx\n",
           path, info.key_size, info.block_size, info.load_factor, info.load_factor_raw,
           (unsigned long long)info.appnum, (unsigned long long)info.uid,
           (unsigned long long)info.salt);
    return CLI_OK;
}

/* ---- info ---- */

static json_t *json_hex64(uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "0x%016llx", (unsigned long long)v);
    return json_string(buf);
}

static int info_json(const char *path, const tide_store_info *in)
{
    json_t *o = json_object();
    int rc;

    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "type", json_string("nudb"));
    json_object_set_new(o, "version", json_integer(in->version));
    json_object_set_new(o, "uid", json_hex64(in->uid));
    json_object_set_new(o, "appnum", in->appnum <= (uint64_t)INT64_MAX
                        ? json_integer((json_int_t)in->appnum) : json_hex64(in->appnum));
    json_object_set_new(o, "key_size", json_integer(in->key_size));
    json_object_set_new(o, "salt", json_hex64(in->salt));
    json_object_set_new(o, "pepper", json_hex64(in->pepper));
    json_object_set_new(o, "block_size", json_integer(in->block_size));
    json_object_set_new(o, "load_factor_raw", json_integer(in->load_factor_raw));
    json_object_set_new(o, "load_factor", json_real(in->load_factor));
    json_object_set_new(o, "capacity", json_integer(in->capacity));
    json_object_set_new(o, "buckets", json_integer((json_int_t)in->buckets));
    json_object_set_new(o, "dat_file_bytes", json_integer((json_int_t)in->dat_file_bytes));
    json_object_set_new(o, "key_file_bytes", json_integer((json_int_t)in->key_file_bytes));
    json_object_set_new(o, "log_file_bytes", json_integer((json_int_t)in->log_file_bytes));
    json_object_set_new(o, "needs_recovery", json_boolean(in->needs_recovery));
    rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (rc != 0) return cli_error("info", "cannot write the JSON output");
    putchar('\n');
    return CLI_OK;
}

int cli_cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    tide_store_info in;
    const char *path;
    char b1[32], b2[32], b3[32];
    int c, rc, json = 0;

    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'h': cli_help("info", stdout); return CLI_OK;
        default:  return cli_option_error("info", c, argv);
        }
    }
    if (optind >= argc) return cli_usage("info", "no PATH given");
    if (argc - optind > 1) return cli_usage("info", "one PATH only (got '%s' too)", argv[optind + 1]);
    path = argv[optind];
    rc = cli_check_store_dir("info", path);
    if (rc) return rc;
    rc = tide_store_inspect(path, NULL, &in);
    if (rc) return cli_fail("info", rc);
    if (json) return info_json(path, &in);

    printf("store         %s\n", path);
    printf("type          nudb.dat + nudb.key, format version %u\n", in.version);
    printf("uid           0x%016llx\n", (unsigned long long)in.uid);
    printf("appnum        %llu\n", (unsigned long long)in.appnum);
    printf("key_size      %u bytes\n", in.key_size);
    printf("salt          0x%016llx\n", (unsigned long long)in.salt);
    printf("pepper        0x%016llx\n", (unsigned long long)in.pepper);
    printf("block_size    %u bytes%s\n", in.block_size,
           tide_block_size_valid(in.block_size) ? ""
           : " (outside the 4096..32768 that Tide creates; any NuDB size opens)");
    printf("load_factor   %u/65536 = %.4f\n", in.load_factor_raw, in.load_factor);
    printf("capacity      %u entries per bucket\n", in.capacity);
    printf("buckets       %llu\n", (unsigned long long)in.buckets);
    printf("nudb.dat      %llu bytes (%s)\n", (unsigned long long)in.dat_file_bytes,
           human(in.dat_file_bytes, b1, sizeof b1));
    printf("nudb.key      %llu bytes (%s)\n", (unsigned long long)in.key_file_bytes,
           human(in.key_file_bytes, b2, sizeof b2));
    if (in.log_file_bytes == 0)
        printf("nudb.log      0 bytes (absent or empty)\n");
    else
        printf("nudb.log      %llu bytes (%s)\n", (unsigned long long)in.log_file_bytes,
               human(in.log_file_bytes, b3, sizeof b3));
    if (in.needs_recovery)
        printf("recovery      PENDING: nudb.log holds an unfinished commit (a crash's, or a live "
               "writer's); run 'tide recover' when no process writes the store\n");
    else
        printf("recovery      not needed\n");
    return CLI_OK;
}

/* ---- put ---- */

/* Read all of fd 0, up to TIDE_VALUE_MAX + 1 bytes. */
static int read_stdin(unsigned char **out, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);

    if (buf == NULL) return -1;
    for (;;) {
        ssize_t r;
        if (n == cap) {
            unsigned char *nb;
            if (cap > TIDE_VALUE_MAX) break;     /* over the limit: stop */
            cap *= 2;
            nb = realloc(buf, cap);
            if (nb == NULL) { free(buf); errno = ENOMEM; return -1; }
            buf = nb;
        }
        r = read(0, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR) continue;
            free(buf);
            return -1;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    *out = buf;
    *len = n;
    return 0;
}

int cli_cmd_put(int argc, char **argv)
{
    static const struct option opts[] = {
        { "force", no_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static unsigned char key[KEY_MAX];
    tide_store_opts so;
    tide_store_info in;
    tide_store *s = NULL;
    unsigned char *value = NULL;
    const char *path, *hex;
    size_t klen, vlen;
    int c, rc, ret, force = 0;

    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'f': force = 1; break;
        case 'h': cli_help("put", stdout); return CLI_OK;
        default:  return cli_option_error("put", c, argv);
        }
    }
    if (argc - optind != 2)
        return cli_usage("put", "expected PATH KEYHEX (and the value on stdin), got %d argument%s",
                         argc - optind, argc - optind == 1 ? "" : "s");
    path = argv[optind];
    hex = argv[optind + 1];
    ret = decode_key("put", hex, key, &klen);
    if (ret) return ret;
    ret = cli_check_store_dir("put", path);
    if (ret) return ret;
    rc = tide_store_inspect(path, NULL, &in);
    if (rc) return cli_fail("put", rc);
    ret = check_key_size("put", hex, klen, in.key_size);
    if (ret) return ret;
    ret = refuse_holders("put", path, force, "a write");
    if (ret) return ret;

    if (isatty(0))
        fprintf(stderr, "tide put: reading the value from the terminal; end it with Ctrl-D\n");
    if (read_stdin(&value, &vlen) != 0)
        return cli_error("put", "reading the value from stdin: %s", strerror(errno));
    if (vlen == 0) {
        ret = cli_usage("put", "the value is empty (stdin gave 0 bytes); values are 1 byte to "
                        "4 GiB - 1");
        goto out;
    }
    if (vlen > TIDE_VALUE_MAX) {
        ret = cli_error("put", "the value on stdin is larger than %llu bytes, the most a value "
                        "can hold", (unsigned long long)TIDE_VALUE_MAX);
        goto out;
    }
    if (in.needs_recovery)
        fprintf(stderr, "tide put: note: %s/nudb.log holds an interrupted commit; opening "
                        "read-write recovers it first\n", path);
    tide_store_opts_init(&so);
    so.ignore_holders = force;
    rc = tide_store_open(&s, path, &so);
    if (rc == TIDE_EBUSY) {
        ret = cli_error("put", "%s: store is busy: another process (a node?) has it open; "
                        "nothing was written (%s)", path, tide_last_error());
        goto out;
    }
    if (rc) { ret = cli_fail("put", rc); goto out; }
    rc = tide_store_insert(s, key, value, vlen);
    if (rc == TIDE_EEXIST) {
        ret = cli_error("put", "%s: key already exists (the stored value is unchanged)", hex);
        goto out;
    }
    if (rc) { ret = cli_fail("put", rc); goto out; }
    rc = tide_store_sync(s);
    if (rc) { ret = cli_fail("put", rc); goto out; }
    ret = CLI_OK;
out:
    if (s) {
        rc = tide_store_close(s);
        if (rc && ret == CLI_OK) ret = cli_fail("put", rc);
    }
    free(value);
    return ret;
}

/* 1 when another process (or handle) holds a lock on nudb.key that an
 * exclusive lock (a writer's) or, with `writer_only`, a shared one (a
 * reader's) would conflict with, as every open store does; 0 otherwise,
 * also when nudb.key is missing. */
static int store_is_held(const char *path, int writer_only)
{
    char key[4096];
    int fd, held = 0;

    snprintf(key, sizeof key, "%s/nudb.key", path);
    /* Non-blocking: a FIFO there must not hang the probe (the library
     * then refuses it by name). */
    fd = open(key, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return 0;
    if (flock(fd, (writer_only ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) held = errno == EWOULDBLOCK;
    close(fd);                  /* releases the probe's lock */
    return held;
}

/* ---- get ---- */

int cli_cmd_get(int argc, char **argv)
{
    static const struct option opts[] = {
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static unsigned char key[KEY_MAX];
    tide_store_opts so;
    tide_store_info in;
    tide_store *s = NULL;
    void *value = NULL;
    const char *path, *hex;
    size_t klen, vlen = 0;
    int c, rc, ret;

    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': cli_help("get", stdout); return CLI_OK;
        default:  return cli_option_error("get", c, argv);
        }
    }
    if (argc - optind != 2)
        return cli_usage("get", "expected PATH KEYHEX, got %d argument%s",
                         argc - optind, argc - optind == 1 ? "" : "s");
    path = argv[optind];
    hex = argv[optind + 1];
    ret = decode_key("get", hex, key, &klen);
    if (ret) return ret;
    ret = cli_check_store_dir("get", path);
    if (ret) return ret;

    tide_store_opts_init(&so);
    so.read_only = 1;
    rc = tide_store_open(&s, path, &so);
    if (rc == TIDE_EBUSY && !store_is_held(path, 1) && tide_store_inspect(path, NULL, &in) == 0 &&
        in.needs_recovery)
        /* A crash's log, or a live NuDB writer's commit (it takes no lock):
         * a reader cannot tell, so it never recovers. */
        return cli_error("get", "%s/nudb.log holds an unfinished commit of %llu bytes; run "
                         "'tide recover %s' when no process writes the store (nothing was read "
                         "or written)", path, (unsigned long long)in.log_file_bytes, path);
    if (rc == TIDE_EBUSY)
        return cli_error("get", "%s: store is busy: another process (a node?) has it open for "
                         "writing; read through it instead", path);
    if (rc) return cli_fail("get", rc);
    tide_store_get_info(s, &in);
    ret = check_key_size("get", hex, klen, in.key_size);
    if (ret) goto out;
    rc = tide_store_fetch(s, key, &value, &vlen);
    if (rc == TIDE_ENOTFOUND) {
        fprintf(stderr, "tide get: %s: not found\n", hex);
        ret = CLI_FAIL;
        goto out;
    }
    if (rc) { ret = cli_fail("get", rc); goto out; }
    if (cli_write_all(1, value, vlen) != 0) {
        ret = cli_error("get", "writing %zu bytes to stdout: %s", vlen, strerror(errno));
        goto out;
    }
    ret = CLI_OK;
out:
    free(value);
    rc = tide_store_close(s);
    if (rc && ret == CLI_OK) ret = cli_fail("get", rc);
    return ret;
}

/* ---- visit ---- */

typedef struct visit_ctx {
    unsigned key_size;
    int hex;
    uint64_t hist[64];          /* hist[k]: values of [2^k, 2^(k+1)) bytes */
    uint64_t min, max;
} visit_ctx;

static int floor_log2(uint64_t v)
{
    return 63 - __builtin_clzll(v);
}

static void put_hex(const void *p, uint64_t len)
{
    static char buf[2 * 32768 + 1];
    const unsigned char *b = p;

    while (len > 0) {
        size_t n = len > 32768 ? 32768 : (size_t)len;
        tide_hex_encode(b, n, buf);
        fwrite(buf, 1, 2 * n, stdout);
        b += n;
        len -= n;
    }
}

static int visit_cb(void *arg, uint64_t offset, const void *key, unsigned key_size,
                    const void *value, uint64_t len)
{
    visit_ctx *v = arg;

    (void)offset;
    v->key_size = key_size;
    if (v->hex) {
        put_hex(key, v->key_size);
        putchar(' ');
        put_hex(value, len);
        putchar('\n');
        return ferror(stdout) ? TIDE_EIO : 0;
    }
    if (len > 0) v->hist[floor_log2(len)]++;
    if (len < v->min) v->min = len;
    if (len > v->max) v->max = len;
    return 0;
}

int cli_cmd_visit(int argc, char **argv)
{
    static const struct option opts[] = {
        { "hex",  no_argument, NULL, 'x' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    visit_ctx v;
    tide_visit_stats st;
    tide_store_info in;
    const char *path;
    char b1[32];
    int c, rc, lo, hi;
    uint64_t top = 0;

    memset(&v, 0, sizeof v);
    v.min = UINT64_MAX;
    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'x': v.hex = 1; break;
        case 'h': cli_help("visit", stdout); return CLI_OK;
        default:  return cli_option_error("visit", c, argv);
        }
    }
    if (optind >= argc) return cli_usage("visit", "no PATH given");
    if (argc - optind > 1) return cli_usage("visit", "one PATH only (got '%s' too)", argv[optind + 1]);
    path = argv[optind];
    rc = cli_check_store_dir("visit", path);
    if (rc) return rc;
    rc = tide_store_inspect(path, NULL, &in);
    if (rc) return cli_fail("visit", rc);
    if (in.needs_recovery)
        fprintf(stderr, "tide visit: warning: %s/nudb.log holds an interrupted commit; the walk "
                        "includes the records a recovery would cut off\n", path);
    v.key_size = in.key_size;
    memset(&st, 0, sizeof st);
    rc = tide_store_visit(path, NULL, visit_cb, &v, &st);
    if (v.hex) {
        if (fflush(stdout) != 0 && rc == 0)
            return cli_error("visit", "writing to stdout: %s", strerror(errno));
    }
    if (rc) return cli_fail("visit", rc);
    if (v.hex) return CLI_OK;

    printf("store           %s\n", path);
    printf("nudb.dat        %llu bytes (%s)\n", (unsigned long long)st.file_bytes,
           human(st.file_bytes, b1, sizeof b1));
    printf("data records    %llu (%llu bytes: keys %llu, values %llu, size fields %llu)\n",
           (unsigned long long)st.data_records, (unsigned long long)st.data_bytes,
           (unsigned long long)(st.data_records * in.key_size),
           (unsigned long long)st.value_bytes, (unsigned long long)(st.data_records * 6));
    if (st.data_records > 0)
        printf("value size      min %llu, mean %.1f, max %llu bytes\n",
               (unsigned long long)v.min, (double)st.value_bytes / (double)st.data_records,
               (unsigned long long)v.max);
    printf("spill records   %llu (%llu bytes)\n", (unsigned long long)st.spill_records,
           (unsigned long long)st.spill_bytes);
    if (st.data_records == 0) return CLI_OK;

    lo = floor_log2(v.min);
    hi = floor_log2(v.max);
    for (int k = lo; k <= hi; k++)
        if (v.hist[k] > top) top = v.hist[k];
    printf("value sizes     (bytes, power-of-two buckets)\n");
    for (int k = lo; k <= hi; k++) {
        char range[48];
        int bar = top ? (int)((v.hist[k] * 40 + top - 1) / top) : 0;
        snprintf(range, sizeof range, "[%llu, %llu)", 1ull << k,
                 k == 63 ? 0ull : 1ull << (k + 1));
        printf("  %-22s %10llu  %5.1f%%  %.*s\n", range, (unsigned long long)v.hist[k],
               100.0 * (double)v.hist[k] / (double)st.data_records, bar,
               "########################################");
    }
    return CLI_OK;
}

/* ---- verify ---- */

static int verify_json(const char *path, const tide_verify_report *r, int rc)
{
    json_t *o = json_object();
    int wrc;

    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "sound", json_boolean(rc == 0));
    json_object_set_new(o, "error", rc == 0 ? json_null() : json_string(tide_strerror(rc)));
    json_object_set_new(o, "problem", rc == 0 ? json_null() : json_string(tide_last_error()));
    json_object_set_new(o, "keys", json_integer((json_int_t)r->keys));
    json_object_set_new(o, "value_bytes", json_integer((json_int_t)r->value_bytes));
    json_object_set_new(o, "data_records", json_integer((json_int_t)r->data_records));
    json_object_set_new(o, "buckets", json_integer((json_int_t)r->buckets));
    json_object_set_new(o, "capacity", json_integer(r->capacity));
    json_object_set_new(o, "block_size", json_integer(r->block_size));
    json_object_set_new(o, "load", json_real(r->load));
    json_object_set_new(o, "spill_records_reachable",
                        json_integer((json_int_t)r->spill_records_reachable));
    json_object_set_new(o, "spill_records_written",
                        json_integer((json_int_t)r->spill_records_written));
    json_object_set_new(o, "spill_records_foreign",
                        json_integer((json_int_t)r->spill_records_foreign));
    json_object_set_new(o, "waste_bytes", json_integer((json_int_t)r->waste_bytes));
    json_object_set_new(o, "waste", json_real(r->waste));
    json_object_set_new(o, "avg_fetch_reads", json_real(r->avg_fetch_reads));
    json_object_set_new(o, "dat_file_bytes", json_integer((json_int_t)r->dat_file_bytes));
    json_object_set_new(o, "key_file_bytes", json_integer((json_int_t)r->key_file_bytes));
    wrc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(o);
    if (wrc != 0) return cli_error("verify", "cannot write the JSON output");
    putchar('\n');
    return CLI_OK;
}

static void verify_text(const char *path, const tide_verify_report *r, int foreign)
{
    char b1[32], b2[32], b3[32];

    printf("store            %s\n", path);
    if (foreign)
        printf("verdict          NOT SOUND for NuDB's verify: %llu spill records of another block "
               "size (unreachable waste; every entry reaches its record, every record is reached "
               "once)\n", (unsigned long long)r->spill_records_foreign);
    else
        printf("verdict          sound: every entry reaches its record, every record is reached "
               "once\n");
    printf("keys             %llu\n", (unsigned long long)r->keys);
    printf("value bytes      %llu (%s)\n", (unsigned long long)r->value_bytes,
           human(r->value_bytes, b1, sizeof b1));
    printf("data records     %llu\n", (unsigned long long)r->data_records);
    printf("buckets          %llu of %u bytes\n", (unsigned long long)r->buckets, r->block_size);
    printf("capacity         %u entries per bucket\n", r->capacity);
    printf("load             %.4f (keys / (buckets x capacity))\n", r->load);
    printf("spill records    %llu reachable, %llu written\n",
           (unsigned long long)r->spill_records_reachable,
           (unsigned long long)r->spill_records_written);
    printf("waste            %llu bytes, %.2f%% of nudb.dat (spill records no chain reaches)\n",
           (unsigned long long)r->waste_bytes, 100.0 * r->waste);
    printf("avg fetch reads  %.3f bucket reads per fetch of a present key\n", r->avg_fetch_reads);
    printf("nudb.dat         %llu bytes (%s)\n", (unsigned long long)r->dat_file_bytes,
           human(r->dat_file_bytes, b2, sizeof b2));
    printf("nudb.key         %llu bytes (%s)\n", (unsigned long long)r->key_file_bytes,
           human(r->key_file_bytes, b3, sizeof b3));
}

int cli_cmd_verify(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    tide_verify_report r;
    const char *path;
    int c, rc, ret, json = 0;

    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'h': cli_help("verify", stdout); return CLI_OK;
        default:  return cli_option_error("verify", c, argv);
        }
    }
    if (optind >= argc) return cli_usage("verify", "no PATH given");
    if (argc - optind > 1)
        return cli_usage("verify", "one PATH only (got '%s' too)", argv[optind + 1]);
    path = argv[optind];
    ret = cli_check_store_dir("verify", path);
    if (ret) return ret;

    memset(&r, 0, sizeof r);
    rc = tide_store_verify(path, NULL, &r);
    if (rc == 0) {
        if (json) return verify_json(path, &r, 0);
        verify_text(path, &r, 0);
        return CLI_OK;
    }
    /* A verdict of unsound is still a result: --json prints it. A store
     * that could not be checked at all (missing, busy, needing recovery)
     * gives no verdict, only the error. */
    if (json && rc == TIDE_ECORRUPT) verify_json(path, &r, rc);
    else if (rc == TIDE_ECORRUPT && r.foreign_spills_only) verify_text(path, &r, 1);
    ret = cli_fail("verify", rc);
    return ret == CLI_USAGE ? CLI_FAIL : ret;
}

/* ---- recover ---- */

int cli_cmd_recover(int argc, char **argv)
{
    static const struct option opts[] = {
        { "force", no_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    tide_recover_report rep;
    struct stat st;
    const char *path;
    char log[4096];
    long long log_bytes = -1;
    int c, rc, ret, force = 0;

    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'f': force = 1; break;
        case 'h': cli_help("recover", stdout); return CLI_OK;
        default:  return cli_option_error("recover", c, argv);
        }
    }
    if (optind >= argc) return cli_usage("recover", "no PATH given");
    if (argc - optind > 1)
        return cli_usage("recover", "one PATH only (got '%s' too)", argv[optind + 1]);
    path = argv[optind];
    ret = cli_check_store_dir("recover", path);
    if (ret) return ret;

    /* An open store keeps nudb.log (empty between commits, the undo records
     * of the commit in progress during one): that log is not ours to apply
     * or delete. */
    if (store_is_held(path, 0))
        return cli_error("recover", "%s: store is busy: another process (a node?) has it open, "
                         "so a nudb.log there belongs to a live commit; nothing was changed", path);
    ret = refuse_holders("recover", path, force, "a recovery");
    if (ret) return ret;
    snprintf(log, sizeof log, "%s/nudb.log", path);
    if (stat(log, &st) == 0) log_bytes = (long long)st.st_size;

    memset(&rep, 0, sizeof rep);
    rc = tide_store_recover_ex(path, NULL, force ? TIDE_RECOVER_FORCE : 0, &rep);
    if (rc == TIDE_EBUSY)
        return cli_error("recover", "%s: store is busy: another process opened it meanwhile (%s); "
                         "nothing was changed", path, tide_last_error());
    if (rc) {
        ret = cli_fail("recover", rc);
        return ret == CLI_USAGE ? CLI_FAIL : ret;
    }
    if (rep.key_removed) {
        printf("%s: %s; removed a nudb.key of %llu bytes that held no complete bucket (what a "
               "key-file rebuild killed after writing its header leaves; no committed store is "
               "that small); nudb.dat is unchanged: run tide rekey to build the key file from it\n",
               path, !rep.had_log ? "no nudb.log" : rep.log_was_partial ? "deleted a partial log"
               : "deleted an empty nudb.log", (unsigned long long)rep.key_removed_bytes);
    } else if (!rep.had_log) {
        printf("%s: no nudb.log: nothing to recover\n", path);
    } else if (rep.log_was_partial) {
        printf("%s: deleted a partial log of %lld bytes (shorter than its %d-byte header: the "
               "crash came before the commit changed anything); nudb.dat and nudb.key are "
               "unchanged\n", path, log_bytes, LOG_HEADER_BYTES);
    } else if (rep.rebuild_interrupted) {
        printf("%s: an interrupted key-file rebuild: nudb.dat truncated to %llu bytes (from "
               "%llu), nudb.key deleted; run tide rekey to build it again from nudb.dat\n", path,
               (unsigned long long)rep.dat_truncated_to,
               (unsigned long long)rep.dat_truncated_from);
    } else if (rep.key_truncated_to == 0) {
        printf("%s: deleted an empty nudb.log (the store was closed uncleanly between "
               "commits): nothing to undo\n", path);
    } else {
        printf("%s: undid an interrupted commit: %llu bucket%s restored from nudb.log; "
               "nudb.key %llu -> %llu bytes; nudb.dat %llu -> %llu bytes\n", path,
               (unsigned long long)rep.buckets_restored, rep.buckets_restored == 1 ? "" : "s",
               (unsigned long long)rep.key_truncated_from,
               (unsigned long long)rep.key_truncated_to,
               (unsigned long long)rep.dat_truncated_from,
               (unsigned long long)rep.dat_truncated_to);
    }
    return CLI_OK;
}

/* ---- rekey ---- */

#define REKEY_BUFFER_DEFAULT ((uint64_t)64 << 20)
#define PROGRESS_EVERY_US 100000u      /* at most ten redraws a second */

typedef struct rekey_progress {
    uint64_t dat_bytes;         /* nudb.dat as the rekey reads it: one pass */
    uint64_t start_us, last_us;
    int drawn;                  /* a progress line is on the terminal */
} rekey_progress;

/* The library's tide_progress_fn: done/total count bytes of nudb.dat read
 * over all passes, so a pass is dat_bytes of them. */
static void rekey_progress_cb(void *arg, uint64_t done, uint64_t total)
{
    rekey_progress *p = arg;
    uint64_t now = tide_clock_mono_us(), passes, pass, in_pass;
    double secs, rate;
    char b1[32], b2[32], b3[32];

    if (done < total && p->drawn && now - p->last_us < PROGRESS_EVERY_US) return;
    p->last_us = now;
    passes = p->dat_bytes ? (total + p->dat_bytes / 2) / p->dat_bytes : 1;
    if (passes == 0) passes = 1;
    pass = p->dat_bytes ? done / p->dat_bytes + 1 : 1;
    if (pass > passes) pass = passes;
    in_pass = done - (pass - 1) * p->dat_bytes;
    if (in_pass > p->dat_bytes) in_pass = p->dat_bytes;
    secs = (double)(now - p->start_us) / 1e6;
    rate = secs > 0 ? (double)done / secs : 0;
    fprintf(stderr, "\rrekey: pass %llu/%llu  %3.0f%%  %s of %s read",
            (unsigned long long)pass, (unsigned long long)passes,
            total ? 100.0 * (double)done / (double)total : 100.0,
            human(in_pass, b1, sizeof b1), human(p->dat_bytes, b2, sizeof b2));
    if (secs >= 0.25)           /* a rate from the first few reads means nothing */
        fprintf(stderr, "  %s/s", human((uint64_t)rate, b3, sizeof b3));
    fputs("\033[K", stderr);
    fflush(stderr);
    p->drawn = 1;
}

int cli_cmd_rekey(int argc, char **argv)
{
    static const struct option opts[] = {
        { "block-size",  required_argument, NULL, 'b' },
        { "load-factor", required_argument, NULL, 'f' },
        { "buffer",      required_argument, NULL, 'm' },
        { "force",       no_argument,       NULL, 'F' },
        { "help",        no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    tide_rekey_opts o;
    tide_rekey_report rep;
    tide_recover_report rec;
    tide_store_info in, after;
    rekey_progress prog;
    const char *path;
    char b1[32], b2[32], b3[32];
    uint64_t v, t0;
    int c, rc, have_block = 0;

    tide_rekey_opts_init(&o);
    o.buffer_bytes = (size_t)REKEY_BUFFER_DEFAULT;
    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            /* No fall-back here, unlike create: a typo must not rewrite a
             * store at a block size nobody asked for. */
            if (cli_parse_u64(optarg, 0, UINT32_MAX, &v) != 0 || !tide_block_size_valid((long long)v))
                return cli_usage("rekey", "--block-size '%s' is not a power of two from 4096 to "
                                 "32768 (4096, 8192, 16384 or 32768); nothing was changed", optarg);
            o.block_size = (unsigned)v;
            have_block = 1;
            break;
        case 'f':
            if (cli_parse_double(optarg, &o.load_factor) != 0 ||
                !(o.load_factor > 0.0 && o.load_factor <= 1.0))
                return cli_usage("rekey", "--load-factor '%s' is not a number greater than 0 "
                                 "and at most 1", optarg);
            break;
        case 'm':
            if (tide_size_parse(optarg, &v) != 0 || v == 0 || v > SIZE_MAX)
                return cli_usage("rekey", "--buffer '%s' is not a size of at least 1 byte "
                                 "(e.g. 512MiB, 64MB, 1048576)", optarg);
            o.buffer_bytes = (size_t)v;
            break;
        case 'F':
            o.ignore_holders = 1;
            break;
        case 'h':
            cli_help("rekey", stdout);
            return CLI_OK;
        default:
            return cli_option_error("rekey", c, argv);
        }
    }
    if (optind >= argc) return cli_usage("rekey", "no PATH given");
    if (argc - optind > 1) return cli_usage("rekey", "one PATH only (got '%s' too)", argv[optind + 1]);
    path = argv[optind];
    rc = cli_check_store_dir("rekey", path);
    if (rc) return rc;

    memset(&in, 0, sizeof in);
    rc = tide_store_inspect(path, NULL, &in);
    if (rc == 0 && !have_block)
        return cli_usage("rekey", "--block-size is required: the new block size, a power of two "
                         "from 4096 to 32768");
    if (rc == TIDE_ECORRUPT || rc == TIDE_ENOTSTORE || rc == TIDE_EVERSION || rc == TIDE_EHASH ||
        rc == TIDE_EMISMATCH || rc == TIDE_ENOENT) {
        /* The key file may be what is wrong (missing, grown, cut, holding
         * no bucket): the library rebuilds it from nudb.dat if nudb.dat is
         * sound, and says otherwise. */
        struct stat st;
        char dat[4096];
        snprintf(dat, sizeof dat, "%s/nudb.dat", path);
        if (stat(dat, &st) == 0) in.dat_file_bytes = (uint64_t)st.st_size;
        rc = 0;
    } else if (rc) {
        rc = cli_fail("rekey", rc);
        return rc == CLI_USAGE ? CLI_FAIL : rc;
    }
    rc = refuse_holders("rekey", path, o.ignore_holders, "a rekey");
    if (rc) return rc;
    o.ignore_holders = 1;   /* scanned just now: recovery and the library need not again */
    if (in.needs_recovery) {
        fprintf(stderr, "tide rekey: note: %s/nudb.log holds an interrupted commit; recovering "
                        "it first\n", path);
        rc = tide_store_recover_ex(path, NULL, o.ignore_holders ? TIDE_RECOVER_FORCE : 0, &rec);
        if (rc == 0) rc = tide_store_inspect(path, NULL, &in);
        if (rc == TIDE_EBUSY) goto busy;
        if (rc) {
            rc = cli_fail("rekey", rc);
            return rc == CLI_USAGE ? CLI_FAIL : rc;
        }
    }

    memset(&prog, 0, sizeof prog);
    prog.dat_bytes = in.dat_file_bytes;
    prog.start_us = t0 = tide_clock_mono_us();
    if (isatty(2)) {
        o.progress = rekey_progress_cb;
        o.progress_arg = &prog;
    }
    memset(&rep, 0, sizeof rep);
    rc = tide_store_rekey(path, &o, &rep);
    if (prog.drawn) fputs("\r\033[K", stderr);
    if (rc == TIDE_EBUSY) goto busy;
    if (rc) {
        rc = cli_fail("rekey", rc);
        return rc == CLI_USAGE ? CLI_FAIL : rc;
    }

    memset(&after, 0, sizeof after);
    if (tide_store_inspect(path, NULL, &after) != 0) after = in;
    printf("rekeyed %s in %.2f s: %llu records indexed afresh from nudb.dat\n", path,
           (double)(tide_clock_mono_us() - t0) / 1e6, (unsigned long long)rep.records);
    if (rep.key_rebuilt) {
        /* Nothing of the old key file was usable but, perhaps, its salt. */
        printf("nudb.key       unusable, so built again from nudb.dat alone (%s)\n", rep.key_problem);
        if (rep.old_block_size)
            printf("block size     %u -> %u bytes (capacity %u entries per bucket)\n",
                   rep.old_block_size, rep.new_block_size, after.capacity);
        else
            printf("block size     (none) -> %u bytes (capacity %u entries per bucket)\n",
                   rep.new_block_size, after.capacity);
        printf("load factor    %u/65536 = %.4f\n", after.load_factor_raw, after.load_factor);
    } else {
        printf("block size     %u -> %u bytes (capacity %u -> %u entries per bucket)\n",
               rep.old_block_size, rep.new_block_size, in.capacity, after.capacity);
        printf("load factor    %u/65536 = %.4f -> %u/65536 = %.4f\n", in.load_factor_raw,
               in.load_factor, after.load_factor_raw, after.load_factor);
    }
    printf("buckets        %llu -> %llu\n", (unsigned long long)rep.old_buckets,
           (unsigned long long)rep.new_buckets);
    printf("passes         %u (walks of nudb.dat; buffer %s)\n", rep.passes,
           human(o.buffer_bytes, b1, sizeof b1));
    printf("spill records  %llu appended to nudb.dat\n", (unsigned long long)rep.spill_records);
    if (rep.foreign_spill_records)
        printf("old spills     %llu spill records of another block size stay in nudb.dat, "
               "unreachable: Tide and NuDB read and write the store as before, but NuDB's verify "
               "(and tide verify) reject it for them ('invalid size in spill'); only rewriting "
               "nudb.dat would remove them\n", (unsigned long long)rep.foreign_spill_records);
    printf("nudb.key       %llu -> %llu bytes (%s)\n", (unsigned long long)rep.old_key_file_bytes,
           (unsigned long long)rep.new_key_file_bytes, human(rep.new_key_file_bytes, b2, sizeof b2));
    printf("nudb.dat       %llu -> %llu bytes (%s)\n",
           (unsigned long long)rep.dat_file_bytes_before,
           (unsigned long long)rep.dat_file_bytes_after,
           human(rep.dat_file_bytes_after, b3, sizeof b3));
    return CLI_OK;

busy:
    return cli_error("rekey", "%s: store is busy: another process (a node?) has it open; "
                     "nothing was changed (%s)", path, tide_last_error());
}
