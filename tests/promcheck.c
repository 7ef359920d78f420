/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * promcheck.c: checks of a Prometheus text exposition (see promcheck.h).
 *
 * A line-by-line pass: "# HELP name", "# TYPE name type" and samples
 * "name{labels} value". A family is open from its HELP/TYPE to the next
 * family's; a sample must belong to the open family (its name, or for a
 * histogram or summary the name plus _bucket/_sum/_count). Series are
 * remembered as "name{labels}" text to find duplicates; families to find a
 * second declaration. Quadratic in the number of series, which is fine for
 * a few hundred.
 */
#include "promcheck.h"
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ITEMS 4096

typedef struct seen_set {
    char *item[MAX_ITEMS];
    int n;
} seen_set;

static int seen_add(seen_set *s, const char *text, size_t len)
{
    for (int i = 0; i < s->n; i++)
        if (strlen(s->item[i]) == len && memcmp(s->item[i], text, len) == 0) return 1;
    if (s->n < MAX_ITEMS) s->item[s->n++] = strndup(text, len);
    return 0;
}

static void seen_free(seen_set *s)
{
    for (int i = 0; i < s->n; i++) free(s->item[i]);
    s->n = 0;
}

static int starts_family(const char *name, size_t nlen, const char *family, const char *type)
{
    size_t fl = strlen(family);
    if (nlen == fl && strncmp(name, family, fl) == 0) return 1;
    if (nlen <= fl || strncmp(name, family, fl) != 0) return 0;
    if (strcmp(type, "histogram") == 0 || strcmp(type, "summary") == 0) {
        const char *suf = name + fl;
        size_t sl = nlen - fl;
        return (sl == 7 && !strncmp(suf, "_bucket", 7)) || (sl == 4 && !strncmp(suf, "_sum", 4)) ||
               (sl == 6 && !strncmp(suf, "_count", 6));
    }
    return 0;
}

int th_prom_check(const char *text, char *msg, size_t cap)
{
    seen_set families = { .n = 0 }, series = { .n = 0 };
    char family[160] = "", type[32] = "";
    double last_bucket = -1, inf_bucket = NAN;
    int lineno = 0, rc = -1;
    const char *p = text;

    msg[0] = '\0';
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[2048];
        lineno++;
        if (len >= sizeof line) { snprintf(msg, cap, "line %d: longer than %zu bytes", lineno, sizeof line); goto out; }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (e ? 1 : 0);
        if (len == 0) continue;
        if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0) {
            char name[160], t[32] = "";
            int is_type = line[2] == 'T';
            if (sscanf(line + 7, "%159s %31s", name, t) < 1) { snprintf(msg, cap, "line %d: no name", lineno); goto out; }
            if (strcmp(name, family) != 0) {
                if (seen_add(&families, name, strlen(name))) {
                    snprintf(msg, cap, "line %d: family %s declared a second time (split or repeated)", lineno, name);
                    goto out;
                }
                snprintf(family, sizeof family, "%s", name);
                type[0] = '\0';
                last_bucket = -1;
            } else if (is_type && type[0]) {
                snprintf(msg, cap, "line %d: a second TYPE line for %s", lineno, name);
                goto out;
            }
            if (is_type) snprintf(type, sizeof type, "%s", t);
            continue;
        }
        if (line[0] == '#') continue;
        size_t nlen = strcspn(line, "{ ");
        const char *sp = line[nlen] == '{' ? strchr(line + nlen, '}') : line + nlen;
        if (sp == NULL) { snprintf(msg, cap, "line %d: unterminated labels", lineno); goto out; }
        if (*sp == '}') sp++;
        if (!starts_family(line, nlen, family, type)) {
            snprintf(msg, cap, "line %d: sample %.*s is outside its family (open family: %s)", lineno, (int)nlen,
                     line, family[0] ? family : "none");
            goto out;
        }
        if (seen_add(&series, line, (size_t)(sp - line))) {
            snprintf(msg, cap, "line %d: series %.*s appears twice", lineno, (int)(sp - line), line);
            goto out;
        }
        double v = strtod(sp, NULL);
        if (strstr(sp, "+Inf") == sp + 1) v = INFINITY;
        if (strcmp(type, "histogram") == 0) {
            if (nlen > 7 && strncmp(line + nlen - 7, "_bucket", 7) == 0) {
                if (v < last_bucket) { snprintf(msg, cap, "line %d: bucket below the one before", lineno); goto out; }
                last_bucket = v;
                if (strstr(line, "le=\"+Inf\"")) inf_bucket = v, last_bucket = -1;   /* a labelled histogram's next series */
            } else if (nlen > 6 && strncmp(line + nlen - 6, "_count", 6) == 0) {
                if (!(inf_bucket == v)) {
                    snprintf(msg, cap, "line %d: %s_count %g differs from its +Inf bucket %g", lineno, family, v,
                             inf_bucket);
                    goto out;
                }
                inf_bucket = NAN;
            }
        }
    }
    rc = 0;
out:
    seen_free(&families);
    seen_free(&series);
    return rc;
}

double th_prom_value(const char *text, const char *series)
{
    size_t sl = strlen(series);
    const char *p = text;

    while (p && *p) {
        if (strncmp(p, series, sl) == 0 && p[sl] == ' ') return strtod(p + sl + 1, NULL);
        p = strchr(p, '\n');
        if (p) p++;
    }
    return NAN;
}

int th_promtool_check(const char *text, char *out, size_t cap)
{
    char path[] = "/tmp/tide-promtool-XXXXXX", cmd[256], *all = NULL;
    int fd = mkstemp(path), status;

    out[0] = '\0';
    if (fd < 0) return -1;
    if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) { close(fd); unlink(path); return -1; }
    close(fd);
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
    status = th_run(cmd, &all);   /* dies with the test, unlike popen's child */
    snprintf(out, cap, "%s", all);
    free(all);
    unlink(path);
    return status;
}
