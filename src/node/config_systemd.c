/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_systemd.c: the settings systemd hands tided, and the tokens read
 * from files.
 *
 * Under a unit with StateDirectory=tide, systemd creates /var/lib/tide for
 * the service's user and passes it as $STATE_DIRECTORY (several paths
 * joined by ':' when the unit names several): its first path is data_dir's
 * default (tide_config_apply_state_dir), so a packaged node keeps its
 * store in /var/lib/tide rather than in ./data under / (the service's
 * working directory). Any operator's data_dir (flag, env, file) wins.
 *
 * Tokens. A token's own variable (TIDE_METRICS_TOKEN, TIDE_ADMIN_TOKEN)
 * wins; else its file setting (metrics_token_file, admin_token_file: env,
 * then [http] in the config file; "-FILE" when a missing FILE is no
 * token); else, under systemd's LoadCredential=,
 * $CREDENTIALS_DIRECTORY/metrics_token and admin_token. A token file is a
 * secret at rest, so it is held to what ssh holds a private key to: a
 * regular file, not readable by others, not writable by group or others
 * (0600, or 0640 for a group that reads it too: root:prometheus 0640 is
 * the metrics token Prometheus sends and the unit hands tided), owned by
 * tided's own user or root (another owner could rewrite it). One trailing newline (what an
 * editor or `echo` leaves) is dropped; the rest must be a token a header
 * carries as is (visible ASCII, '!' to '~'), 1 to 255 bytes. A credential
 * is a copy systemd made (mode 0400, readable by the service's user) and
 * is checked all the same but for its owner; an empty one means "no
 * token": the unit declares SetCredential=NAME:\n as the fallback for a missing /etc/tide file,
 * since systemd 252 fails a unit whose LoadCredential= file is missing.
 *
 * Invariants:
 *   1. A token read here is 1..255 bytes of '!'..'~', NUL-terminated in
 *      its tide_config field; on any error the field is left as it was.
 *   2. A token's source is set only with its value.
 *
 * Never: put a token's bytes in a message or the log (a bad byte is named
 * by its position); follow a token setting into reading more than 257
 * bytes; accept a file others can read or another user owns; block on
 * opening a FIFO (the open is non-blocking, the type checked first).
 */
#include "node/config_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tide/error.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/log.h"

/* ---- STATE_DIRECTORY --------------------------------------------------- */

int tide_config_apply_state_dir(tide_config *c, const char *state_directory)
{
    char path[TIDE_CONFIG_DATA_DIR_MAX + 2], what[200];
    size_t n;

    if (state_directory == NULL || state_directory[0] == '\0') return 0;
    if (c->src[TIDE_CFG_DATA_DIR].kind >= TIDE_SRC_FILE) return 0;   /* the operator's wins */
    n = strcspn(state_directory, ":");
    ti_config_show_value(what, sizeof what, "STATE_DIRECTORY=", state_directory);
    if (n > TIDE_CONFIG_DATA_DIR_MAX)
        return tide_err_set(TIDE_EINVAL, "%s: its first path is %zu bytes, longer than %zu", what, n,
                            (size_t)TIDE_CONFIG_DATA_DIR_MAX);
    if (state_directory[0] != '/')
        return tide_err_set(TIDE_EINVAL, "%s: not an absolute path (systemd sets it from "
                            "StateDirectory=)", what);
    memcpy(path, state_directory, n);
    path[n] = '\0';
    return ti_config_set_value(c, TIDE_CFG_DATA_DIR, path, TIDE_SRC_DERIVED, "STATE_DIRECTORY", what);
}

/* ---- token files -------------------------------------------------------- */

/* The longest token (the tide_config fields hold 255 bytes and a NUL). */
#define TOKEN_MAX (sizeof ((tide_config *)0)->metrics_token - 1)

/* The checks on an open token file's metadata: 0, or TIDE_EINVAL naming
 * `label` (how the file was named, with its path). */
static int check_token_mode(const struct stat *st, const char *label, const char *path, int credential)
{
    unsigned mode = (unsigned)st->st_mode & 07777;

    if (!S_ISREG(st->st_mode))
        return tide_err_set(TIDE_EINVAL, "%s: not a regular file", label);
    /* Whoever owns the file can chmod it and write it: the token is ours
     * only when we or root own it (root can replace it anyway). Not for a
     * credential: systemd may leave its copy root's with an ACL for us,
     * and under PrivateUsers=yes root shows as the overflow uid. */
    if (!credential && st->st_uid != geteuid() && st->st_uid != 0 && geteuid() == 0)
        return tide_err_set(TIDE_EINVAL, "%s: owned by uid %lu, not by root; run as root (the unit's pre-start "
                            "check is), tided accepts only root's token files, since their owner can rewrite "
                            "them: chown root %s (a reader such as Prometheus gets it through the group: "
                            "chgrp prometheus, chmod 640)", label, (unsigned long)st->st_uid, path);
    if (!credential && st->st_uid != geteuid() && st->st_uid != 0)
        return tide_err_set(TIDE_EINVAL, "%s: owned by uid %lu, neither tided's user (uid %lu) nor root, so "
                            "that user controls the token; give it to root or to tided's user: chown root %s",
                            label, (unsigned long)st->st_uid, (unsigned long)geteuid(), path);
    if (st->st_mode & S_IROTH)
        return tide_err_set(TIDE_EINVAL, "%s: mode %04o lets every user read the token; make it private "
                            "to its owner: chmod 600 %s (or 640 to share it with its group only)", label, mode,
                            path);
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return tide_err_set(TIDE_EINVAL, "%s: mode %04o lets %s change the token; make it writable by its "
                            "owner only: chmod 600 %s", label, mode,
                            st->st_mode & S_IWOTH ? "every user" : "its group", path);
    if ((uint64_t)st->st_size > TOKEN_MAX + 1)
        return tide_err_set(TIDE_EINVAL, "%s: %lld bytes, longer than a token may be (%zu bytes and one "
                            "trailing newline)", label, (long long)st->st_size, TOKEN_MAX);
    return 0;
}

/* The token in buf[0..*len): one trailing '\n' dropped, then every byte
 * visible ASCII. 0, or TIDE_EINVAL naming `label`. `empty_ok`: an empty
 * token is no error (a credential's "no token"). */
static int check_token_text(char *buf, size_t *len, const char *label, int empty_ok)
{
    if (*len > 0 && buf[*len - 1] == '\n') buf[--*len] = '\0';
    if (*len == 0)
        return empty_ok ? 0 : tide_err_set(TIDE_EINVAL, "%s: empty (the file must hold the token)", label);
    if (*len > TOKEN_MAX)
        return tide_err_set(TIDE_EINVAL, "%s: %zu bytes, longer than a token may be (%zu bytes)", label, *len,
                            TOKEN_MAX);
    for (size_t i = 0; i < *len; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch < '!' || ch > '~')
            return tide_err_set(TIDE_EINVAL, "%s: byte %zu is %s, which an HTTP header cannot carry in a "
                                "token (a token is visible ASCII, '!' to '~'; one trailing newline is "
                                "dropped)", label, i + 1, ch == ' ' ? "a space" : ch == '\n' ? "a second "
                                "line" : ch == '\r' ? "a carriage return (a DOS line end?)" : ch < ' ' || ch == 127
                                ? "a control byte" : "not ASCII");
    }
    return 0;
}

/* Read the token in `path` into out (TOKEN_MAX + 1 bytes). *found is 0
 * when `missing_ok` and the file does not exist (then nothing is read).
 * A `credential` (systemd's copy) may be empty (no token) and its owner
 * is not checked. 0, or TIDE_EINVAL naming `label`; out is written only
 * on success. */
static int read_token_file(const char *path, const char *label, int missing_ok, int credential, char *out,
                           int *found)
{
    char buf[TOKEN_MAX + 3];
    struct stat st;
    size_t len = 0;
    ssize_t n;
    int fd, rc = 0;

    *found = 0;
    /* O_NONBLOCK: a FIFO (or a device) named as a token file must not
     * block the open (start, --check-config, SIGHUP's loop 0): it is
     * refused by its type just below, before anything is read. On a
     * regular file the flag changes nothing. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT && missing_ok) return 0;
    if (fd < 0)
        return tide_err_set(TIDE_EINVAL, "%s: cannot open it: %s", label, strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = tide_err_set(TIDE_EINVAL, "%s: cannot stat it: %s", label, strerror(errno));
        goto out;
    }
    rc = check_token_mode(&st, label, path, credential);
    if (rc) goto out;
    /* The size checked above may change under us: read at most one byte
     * past the longest content, so a longer file still reads as too long. */
    while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = tide_err_set(TIDE_EINVAL, "%s: cannot read it: %s", label, strerror(errno));
            goto out;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    if (len > TOKEN_MAX + 1) {
        rc = tide_err_set(TIDE_EINVAL, "%s: longer than a token may be (%zu bytes and one trailing newline)",
                          label, TOKEN_MAX);
        goto out;
    }
    rc = check_token_text(buf, &len, label, credential);
    if (rc) goto out;
    TIDE_ASSERT(len <= TOKEN_MAX);
    memcpy(out, buf, len + 1);
    *found = len > 0;
out:
    memset(buf, 0, sizeof buf);     /* no copy of the token left on the stack */
    close(fd);
    return rc;
}

/* One token: its variable's value wins, then its file setting, then the
 * credential `cred` under `credentials_directory`. */
static int load_token(tide_config *c, int token_id, int file_id, const char *file, const char *cred,
                      const char *credentials_directory, char *token)
{
    char label[4500], source[160], path[4200];
    int found = 0, rc;

    if (c->src[token_id].kind != TIDE_SRC_DEFAULT) {
        if (file[0] != '\0')
            tide_log(TIDE_LOG_WARN, "%s is set, so %s (%s) is not read", tide_config_env(token_id),
                     tide_config_name(file_id), file);
        return 0;
    }
    if (file[0] != '\0') {
        /* "-FILE": a missing FILE is no token (systemd's own "-" for an
         * optional file): the unit's pre-start check of the credentials'
         * sources, which may be absent. */
        int optional = file[0] == '-';
        tide_config_source_text(c, file_id, source, sizeof source);
        snprintf(label, sizeof label, "%s %s (%s)", tide_config_name(file_id), file + optional, source);
        rc = read_token_file(file + optional, label, optional, 0, token, &found);
        if (rc == 0 && found)
            ti_config_set_source(c, token_id, c->src[file_id].kind, "%s", c->src[file_id].where);
        return rc;
    }
    if (credentials_directory == NULL || credentials_directory[0] == '\0') return 0;
    snprintf(path, sizeof path, "%s/%s", credentials_directory, cred);
    snprintf(label, sizeof label, "credential %s (CREDENTIALS_DIRECTORY=%s)", path, credentials_directory);
    rc = read_token_file(path, label, 1, 1, token, &found);
    if (rc == 0 && found) ti_config_set_source(c, token_id, TIDE_SRC_DERIVED, "credential %s", cred);
    return rc;
}

int tide_config_load_tokens(tide_config *c, const char *credentials_directory)
{
    int rc = load_token(c, TIDE_CFG_METRICS_TOKEN, TIDE_CFG_METRICS_TOKEN_FILE, c->metrics_token_file,
                        "metrics_token", credentials_directory, c->metrics_token);
    if (rc == 0)
        rc = load_token(c, TIDE_CFG_ADMIN_TOKEN, TIDE_CFG_ADMIN_TOKEN_FILE, c->admin_token_file,
                        "admin_token", credentials_directory, c->admin_token);
    return rc;
}
