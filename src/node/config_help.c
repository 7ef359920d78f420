/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_help.c: tided's --help text of each setting, written from its row
 * of the settings table (config_impl.h): the flag and its value's name,
 * the description, the words it takes, its range, its default (a preset's
 * from the row's presets, node_size's from its RAM rule), its environment
 * variable and its file keys. No range or default is written here.
 *
 * Invariants:
 *   1. tide_config_help returns the length the whole text needs, as
 *      snprintf does, whatever fits in the buffer; what it writes is always
 *      NUL-terminated when cap > 0.
 *   2. Descriptions are wrapped at word boundaries to HELP_WIDTH (79)
 *      columns; a word longer than a line stands alone on its own.
 *
 * Never: print a default or range not taken from the tables.
 */
#include "node/config_impl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store/full.h"
#include "util/log.h"

/* A text being built into a caller's buffer: len counts what the whole
 * text needs, as snprintf does, whatever fits. */
typedef struct text { char *buf; size_t cap, len; } text;

static void text_add(text *t, const char *s, size_t n)
{
    if (t->len + 1 < t->cap) {
        size_t room = t->cap - 1 - t->len;
        memcpy(t->buf + t->len, s, n < room ? n : room);
        t->buf[t->len + (n < room ? n : room)] = '\0';
    }
    t->len += n;
}

/* `words` as lines of at most HELP_WIDTH columns, each `indent` spaces in;
 * a word longer than a line stands alone on its own. */
#define HELP_WIDTH 79

static void text_wrapped(text *t, int indent, const char *words)
{
    static const char spaces[] = "                ";
    const char *p = words;
    size_t col = 0;

    while (*p) {
        size_t n;
        while (*p == ' ') p++;
        n = strcspn(p, " ");
        if (n == 0) break;
        if (col > 0 && col + 1 + n > HELP_WIDTH) { text_add(t, "\n", 1); col = 0; }
        if (col == 0) { text_add(t, spaces, (size_t)indent); col = (size_t)indent; }
        else { text_add(t, " ", 1); col++; }
        text_add(t, p, n);
        col += n;
        p += n;
    }
    if (col > 0) text_add(t, "\n", 1);
}

static void text_line(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One sentence of a help entry, printf-formatted, then wrapped. */
static void text_line(text *t, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    text_wrapped(t, 8, line);
}

/* The value setting `st` takes from preset `n`, as describe shows it. */
static void preset_text(const ti_config_setting *st, int n, char *out, size_t cap)
{
    if (st->kind == K_SIZE) ti_config_size_text(st->preset[n], out, cap);
    else snprintf(out, cap, "%" PRIu64, st->preset[n]);
}

/* "Default: ..." of setting `id`, from its row, its presets or the
 * rule that computes it. */
static void default_line(text *t, int id)
{
    const ti_config_setting *st = &ti_config_settings[id];
    char list[512] = "", one[32];
    size_t used = 0;

    if (st->def) { text_line(t, "Default: %s.", st->def); return; }
    if (st->dflt) { text_line(t, "Default: %s.", st->dflt); return; }
    if (id == TIDE_CFG_NODE_SIZE) {
        for (int n = 0; n < TIDE_NODE_SIZE_COUNT - 1; n++) {
            ti_config_size_text(ti_config_node_size_ram_below[n], one, sizeof one);
            used += (size_t)snprintf(list + used, sizeof list - used, "< %s %s, ", one, ti_config_node_size_names[n]);
        }
        text_line(t, "Default: chosen from total RAM (%selse %s).", list,
                  ti_config_node_size_names[TIDE_NODE_SIZE_COUNT - 1]);
        return;
    }
    if (st->from_preset) {
        for (int n = 0; n < TIDE_NODE_SIZE_COUNT && used < sizeof list; n++) {
            preset_text(st, n, one, sizeof one);
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s %s", n ? ", " : "",
                                     ti_config_node_size_names[n], one);
        }
        text_line(t, "Default: node_size's preset (%s).", list);
        return;
    }
    if (st->kind == K_BLOCK) { text_line(t, "Default: %u.", TIDE_BLOCK_SIZE_DEFAULT); return; }
    if (st->kind == K_SECRET) text_line(t, "Default: unset.");
}

/* node_size's description: `lead` and the settings its preset fills. */
static void preset_help(text *t, const char *lead)
{
    char list[256] = "";
    size_t used = 0;
    int count = 0, seen = 0;

    for (int id = 0; id < TIDE_CFG_COUNT; id++) count += ti_config_settings[id].from_preset;
    for (int id = 0; id < TIDE_CFG_COUNT && used < sizeof list; id++) {
        if (!ti_config_settings[id].from_preset) continue;
        seen++;
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", seen == 1 ? "" :
                                 seen == count ? " and " : ", ", ti_config_settings[id].name);
    }
    text_line(t, "%s %s.", lead, list);
}

/* "Values: a, b or c." for the settings that take words. */
static void values_line(text *t, int id)
{
    const char *names[8];
    char list[256] = "";
    size_t used = 0;
    int count = 0;

    if (ti_config_settings[id].kind == K_NODE_SIZE)
        for (int n = 0; n < TIDE_NODE_SIZE_COUNT; n++) names[count++] = ti_config_node_size_names[n];
    else if (ti_config_settings[id].kind == K_LEVEL)
        for (int l = TIDE_LOG_DEBUG; l <= TIDE_LOG_OFF; l++) names[count++] = tide_log_level_name(l);
    else if (ti_config_settings[id].kind == K_LOG_FORMAT)
        for (int f = TIDE_LOG_FORMAT_TEXT; f <= TIDE_LOG_FORMAT_JSON; f++) names[count++] = tide_log_format_name(f);
    if (count == 0) return;
    for (int i = 0; i < count; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i == 0 ? "" :
                                 i == count - 1 ? " or " : ", ", names[i]);
    text_line(t, "Values: %s.", list);
}

size_t tide_config_help(int id, char *buf, size_t cap)
{
    const ti_config_setting *st;
    char dummy[1], range[200], line[256];
    text t;

    if (cap == 0) buf = dummy, cap = 1;      /* length only */
    buf[0] = '\0';
    t = (text){ buf, cap, 0 };
    if (id < 0 || id >= TIDE_CFG_COUNT) return 0;
    st = &ti_config_settings[id];
    if (st->flag) snprintf(line, sizeof line, "    --%s %s\n", st->flag, st->arg ? st->arg : "VALUE");
    else if (st->arg) snprintf(line, sizeof line, "    %s=%s\n", st->env, st->arg);
    else snprintf(line, sizeof line, "    %s\n", st->env);
    text_add(&t, line, strlen(line));
    if (st->kind == K_NODE_SIZE) preset_help(&t, st->help);
    else text_wrapped(&t, 8, st->help ? st->help : "a node setting; the startup log's settings line shows its value.");
    values_line(&t, id);
    if (tide_config_range_text(id, range, sizeof range) > 0) text_line(&t, "Range: %s.", range);
    default_line(&t, id);
    if (st->section == NULL) return t.len;   /* env only: its heading is the variable */
    if (st->alt_section && st->alt_key[0])
        text_line(&t, "Environment %s; file [%s] %s or [%s] %s.", st->env, st->section, tide_config_file_key(id),
                  st->alt_section, st->alt_key);
    else if (st->alt_section)
        text_line(&t, "Environment %s; file [%s] %s or a bare value under [%s].", st->env, st->section,
                  tide_config_file_key(id), st->alt_section);
    else
        text_line(&t, "Environment %s; file [%s] %s.", st->env, st->section, tide_config_file_key(id));
    return t.len;
}
