/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_mem.c: the memory limit's settings (docs/MEMORY-LIMIT.md):
 * where the limit comes from, and the budgets it gives.
 *
 * The limit is the operator's memory_limit (flag, env, file) or, left
 * unset, the cgroup's (tide_config_apply_cgroup, through
 * tide_mem_cgroup_limit: v2 memory.max, v1 memory.limit_in_bytes, the
 * nearest limited ancestor). An operator's value above the cgroup's is
 * lowered to it with one warning: the kernel enforces the cgroup's whatever
 * tided is told, and a node that plans for more than it may have is
 * OOM-killed instead of shedding. A value below the cgroup's is kept (the
 * operator may want headroom); the cgroup's usage then counts too.
 *
 * With a limit L, finish derives each budget the operator did not set (its
 * source the default or the preset) from it, source "memory_limit N%",
 * rounded down to a byte:
 *
 *     cache_budget          L x 20 / 100   (its hard limit, twice it: 40%)
 *     key_cache_hard_limit  L x  5 / 100   (bytes; no setting of its own)
 *     insert_burst          L x  4 / 100, at most 64 MiB (two pools: 8%)
 *     http_body_budget      L x 10 / 100, at least max_object_size
 *     store_index_lag       L / 8 (the deferred index's tail: one budget
 *                           for all generations, src/gen)
 *     archive_filter_budget L x  5 / 100, at most 64 MiB (with archive=rados)
 *
 * Together they may hold at most 75.5% of L (80.5% with the archive, and
 * its write buffers, archive_inflight MiB, count too); the rest is for what no budget
 * counts: the store's key blocks and spill buffers, the threads' stacks,
 * h2o's connections, the allocator's metadata and fragmentation. What a
 * budget may hold at most is 2 x cache_budget (the node cache's hard
 * limit), 2 x insert_burst (pending and committing pools), the
 * http_body_budget, the store_index_lag (the tail's table, derived or
 * set), with the archive its filter budget and write buffers, and the key cache's hard
 * limit. All of them together
 * (explicit and derived) may hold at most the HIGH mark of L, or finish
 * refuses them naming each explicit one with its source (a derived
 * http_body_budget raised to max_object_size counts as the operator's, named
 * with max_object_size), how far each alone must come down, and the limit
 * that would hold them: at the high mark the node sheds every write, so
 * budgets that reach it leave nothing for what no budget counts (the lab's
 * --memory-limit 64MiB --cache-budget 24MiB, 98%, went 10.5% past L).
 * Explicit ones alone over L keep the older wording. Over the soft mark is
 * one warning. An explicit cache_budget 0 is an error: a node cache opened
 * without a limit is one the governor cannot shrink.
 *
 * Invariants:
 *   1. After a successful finish with memory_limit != 0, memory_limit >=
 *      TIDE_CONFIG_MEMORY_LIMIT_MIN, cache_budget != 0, and all the
 *      budgets' most-held bytes add up to at most the high mark of it.
 *   2. A derived value's source is TIDE_SRC_DERIVED; an operator's value is
 *      never replaced by a derived one, only lowered to the cgroup's limit,
 *      and that is logged with both figures.
 *   3. memory_levels and memory_hysteresis obey tide_mem_overload_init's rules
 *      (1 <= soft < high < critical <= 100, 1 <= hysteresis < soft).
 *
 * Never: raise an operator's limit; take a limit from a cgroup file that
 * could not be read or parsed (that warns and changes nothing).
 */
#include "node/config_impl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mem/cgroup.h"
#include "mem/overload.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

/* The split (the essay above; config.h, docs/MEMORY-LIMIT.md). */
#define SHARE_CACHE_PCT      20u
#define SHARE_KEY_CACHE_PCT   5u
#define SHARE_BURST_PCT       4u
#define SHARE_BURST_MAX      (64 * MiB)
#define SHARE_ARCHIVE_FILTER_PCT 5u
#define SHARE_ARCHIVE_FILTER_MAX (64 * MiB)   /* the setting's default */
#define SHARE_BODY_PCT       10u

static const char *kind_word(int kind)
{
    switch (kind) {
    case TIDE_SRC_FLAG: return "flag";
    case TIDE_SRC_ENV:  return "env";
    case TIDE_SRC_FILE: return "file";
    default:            return "";
    }
}

/* ---- the cgroup ---------------------------------------------------------- */

int tide_config_apply_cgroup(tide_config *c, const char *root)
{
    tide_mem_cgroup_limit_info info;
    const tide_config_source *s = &c->src[TIDE_CFG_MEMORY_LIMIT];
    char cg[32], op[32];
    int rc = tide_mem_cgroup_limit(root, &info);

    if (rc == TIDE_ENOENT) return 0;            /* no memory controller: nothing known */
    if (rc) {
        tide_log(TIDE_LOG_WARN, "memory limit: the cgroup's could not be read, so none is taken from it "
                 "(%s: %s)", tide_strerror(rc), tide_last_error());
        return 0;
    }
    if (!info.limited) return 0;
    /* No machine has more than 4 PiB (config.h): capped there, the limit
     * obeys memory_limit's range and twice a budget stays exact. */
    if (info.limit_bytes > TIDE_CONFIG_BYTES_MAX) info.limit_bytes = TIDE_CONFIG_BYTES_MAX;
    c->cgroup_limited = 1;
    c->cgroup_limit = info.limit_bytes;
    c->cgroup_version = info.version;
    snprintf(c->cgroup_path, sizeof c->cgroup_path, "%s", info.path);
    ti_config_size_text(info.limit_bytes, cg, sizeof cg);
    if (s->kind < TIDE_SRC_FILE) {               /* not the operator's: the cgroup's */
        c->memory_limit = info.limit_bytes;
        ti_config_set_source(c, TIDE_CFG_MEMORY_LIMIT, TIDE_SRC_DERIVED, "cgroup v%d %s", info.version,
                             info.path);
    } else if (c->memory_limit > info.limit_bytes) {
        char where[sizeof s->where];
        int kind = s->kind;

        ti_config_size_text(c->memory_limit, op, sizeof op);
        snprintf(where, sizeof where, "%s", s->where);
        tide_log(TIDE_LOG_WARN, "memory_limit=%s (%s %s) is above the cgroup's memory limit, %s (cgroup v%d "
                 "%s): using %s, the cgroup's, which the kernel enforces", op, kind_word(kind), where, cg,
                 info.version, info.path, cg);
        c->memory_limit = info.limit_bytes;
        ti_config_set_source(c, TIDE_CFG_MEMORY_LIMIT, TIDE_SRC_DERIVED, "cgroup v%d %s, lowered from %s "
                             "(%s %s)", info.version, info.path, op, kind_word(kind), where);
    }
    return 0;
}

/* ---- the levels ---------------------------------------------------------------- */

/* The governor's options these settings give (limit_bytes: the limit, or
 * the smallest one when there is none yet, so the levels are checked even
 * then: SIGHUP or a cgroup may bring a limit later). */
static void overload_opts(const tide_config *c, tide_mem_overload_opts *o)
{
    tide_mem_overload_opts_init(o);
    o->limit_bytes = c->memory_limit ? c->memory_limit : TIDE_CONFIG_MEMORY_LIMIT_MIN;
    memcpy(o->pct, c->memory_levels, sizeof o->pct);
    o->hysteresis_pct = c->memory_hysteresis;
}

/* memory_levels with memory_hysteresis, by tide_mem_overload_init's rules
 * (levels alone were checked where they were parsed, naming the source;
 * the pair here, naming both; then tide_mem_overload_init itself, so that
 * what finish accepts the governor accepts). */
static int check_levels(const tide_config *c)
{
    char hs[200], ls[200];
    tide_mem_overload_opts o;
    tide_mem_overload st;

    if (c->memory_hysteresis >= 1 && c->memory_hysteresis < c->memory_levels[TIDE_OVERLOAD_SOFT]) {
        overload_opts(c, &o);
        return tide_mem_overload_init(&st, &o);
    }
    tide_config_source_text(c, TIDE_CFG_MEMORY_HYSTERESIS, hs, sizeof hs);
    tide_config_source_text(c, TIDE_CFG_MEMORY_LEVELS, ls, sizeof ls);
    if (c->memory_levels[TIDE_OVERLOAD_SOFT] <= 1)
        return tide_err_set(TIDE_EINVAL, "memory_levels=%u,%u,%u (%s): a soft mark of 1%% leaves no room for "
                            "memory_hysteresis, which is at least 1: raise the soft mark", c->memory_levels[1],
                            c->memory_levels[2], c->memory_levels[3], ls);
    return tide_err_set(TIDE_EINVAL, "memory_hysteresis=%u (%s) is not below the soft mark of memory_levels="
                        "%u,%u,%u (%s): a level is left (mark - hysteresis)%% below its mark, so the "
                        "hysteresis takes 1 to %u", c->memory_hysteresis, hs, c->memory_levels[1],
                        c->memory_levels[2], c->memory_levels[3], ls, c->memory_levels[TIDE_OVERLOAD_SOFT] - 1);
}

/* ---- the split -------------------------------------------------------------------- */

/* Derive `id` from the limit when the operator did not set it. */
static void derive(tide_config *c, int id, uint64_t *value, uint64_t v, const char *fmt, unsigned pct)
{
    if (c->src[id].kind >= TIDE_SRC_FILE) return;
    *value = v;
    ti_config_set_source(c, id, TIDE_SRC_DERIVED, fmt, pct);
}

/* The archive's filters derived from a limit l: a share, at most the
 * setting's default. */
static uint64_t archive_filters_at(uint64_t l)
{
    uint64_t v = l * SHARE_ARCHIVE_FILTER_PCT / 100;
    return v > SHARE_ARCHIVE_FILTER_MAX ? SHARE_ARCHIVE_FILTER_MAX : v;
}

static void derive_budgets(tide_config *c)
{
    uint64_t l = c->memory_limit, burst = l * SHARE_BURST_PCT / 100, body = l * SHARE_BODY_PCT / 100;

    derive(c, TIDE_CFG_CACHE_BUDGET, &c->cache_budget, l * SHARE_CACHE_PCT / 100, "memory_limit %u%%",
           SHARE_CACHE_PCT);
    c->key_cache_hard_limit = l * SHARE_KEY_CACHE_PCT / 100;
    if (burst > SHARE_BURST_MAX)
        derive(c, TIDE_CFG_INSERT_BURST, &c->insert_burst, SHARE_BURST_MAX, "memory_limit %u%%, at most 64MiB",
               SHARE_BURST_PCT);
    else
        derive(c, TIDE_CFG_INSERT_BURST, &c->insert_burst, burst, "memory_limit %u%%", SHARE_BURST_PCT);
    if (body < c->max_object_size)
        derive(c, TIDE_CFG_HTTP_BODY_BUDGET, &c->http_body_budget, c->max_object_size,
               "memory_limit %u%%, raised to max_object_size", SHARE_BODY_PCT);
    else
        derive(c, TIDE_CFG_HTTP_BODY_BUDGET, &c->http_body_budget, body, "memory_limit %u%%", SHARE_BODY_PCT);
    derive(c, TIDE_CFG_STORE_INDEX_LAG, &c->store_index_lag, l / 8, "memory_limit / %u", 8);
    if (c->archive == TIDE_ARCHIVE_RADOS)
        derive(c, TIDE_CFG_ARCHIVE_FILTER_BUDGET, &c->archive_filter_budget, archive_filters_at(l),
               "memory_limit %u%%, at most 64MiB", SHARE_ARCHIVE_FILTER_PCT);
}

/* The budgets and what each may hold at most. */
static const struct held_rule { int id; unsigned times; const char *why; } held_rules[] = {
    { TIDE_CFG_CACHE_BUDGET,     2, "the node cache's hard limit is twice it" },
    { TIDE_CFG_INSERT_BURST,     2, "two insert pools, pending and committing" },
    { TIDE_CFG_HTTP_BODY_BUDGET, 1, "request bodies held" },
    { TIDE_CFG_STORE_INDEX_LAG,  1, "the deferred index's tail, over all generations" },
    /* The archive's (0 with archive=off: budget_value). */
    { TIDE_CFG_ARCHIVE_FILTER_BUDGET, 1, "the archive's key filters" },
    { TIDE_CFG_ARCHIVE_INFLIGHT, 1u << 20, "the archive's write buffers, 1 MiB each" },
};
#define N_HELD (sizeof held_rules / sizeof held_rules[0])

/* The key cache's hard limit the node uses when none is given (node.h). */
#define NODE_KEY_CACHE_DEFAULT (32 * MiB)

/* 0 for a budget that holds nothing in this configuration: the archive's
 * with the archive off. */
static int counts(const tide_config *c, int id)
{
    return !((id == TIDE_CFG_ARCHIVE_FILTER_BUDGET || id == TIDE_CFG_ARCHIVE_INFLIGHT) &&
             c->archive != TIDE_ARCHIVE_RADOS);
}

static uint64_t budget_value(const tide_config *c, int id)
{
    return counts(c, id) ? ti_config_number(c, id) : 0;
}

/* pct% of l, rounded down, without overflow (the governor's marks). */
static uint64_t pct_of(uint64_t l, unsigned pct)
{
    return l / 100 * pct + l % 100 * pct / 100;
}

/* A derived http_body_budget raised to max_object_size: the operator's
 * max_object_size chose it, so it counts as theirs (named with it). */
static int body_raised(const tide_config *c)
{
    return c->src[TIDE_CFG_HTTP_BODY_BUDGET].kind == TIDE_SRC_DERIVED
        && c->memory_limit * SHARE_BODY_PCT / 100 < c->max_object_size;
}

/* The operator chose budget `id` (set it, or for the body budget raised it
 * through max_object_size). */
static int chosen(const tide_config *c, int id)
{
    return c->src[id].kind >= TIDE_SRC_FILE || (id == TIDE_CFG_HTTP_BODY_BUDGET && body_raised(c));
}

/* What the budgets may hold in all under a limit l: the chosen ones as
 * they are, the others derived from l as derive_budgets would. */
static uint64_t held_at(const tide_config *c, uint64_t l)
{
    uint64_t burst = l * SHARE_BURST_PCT / 100, body = l * SHARE_BODY_PCT / 100;

    if (burst > SHARE_BURST_MAX) burst = SHARE_BURST_MAX;
    if (body < c->max_object_size) body = c->max_object_size;
    return l * SHARE_KEY_CACHE_PCT / 100
        + 2 * (c->src[TIDE_CFG_CACHE_BUDGET].kind >= TIDE_SRC_FILE ? c->cache_budget : l * SHARE_CACHE_PCT / 100)
        + 2 * (c->src[TIDE_CFG_INSERT_BURST].kind >= TIDE_SRC_FILE ? c->insert_burst : burst)
        + (c->src[TIDE_CFG_HTTP_BODY_BUDGET].kind >= TIDE_SRC_FILE ? c->http_body_budget : body)
        + (c->src[TIDE_CFG_STORE_INDEX_LAG].kind >= TIDE_SRC_FILE ? c->store_index_lag : l / 8)
        + (c->archive != TIDE_ARCHIVE_RADOS ? 0
           : (c->src[TIDE_CFG_ARCHIVE_FILTER_BUDGET].kind >= TIDE_SRC_FILE ? c->archive_filter_budget
                                                                         : archive_filters_at(l))
             + (uint64_t)c->archive_inflight * (1u << 20));
}

/* Append to out (cap bytes, NUL-terminated). */
static void append(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *out, size_t cap, const char *fmt, ...)
{
    size_t used = strlen(out);
    va_list ap;

    if (used + 1 >= cap) return;
    va_start(ap, fmt);
    vsnprintf(out + used, cap - used, fmt, ap);
    va_end(ap);
}

/* "cache_budget=512MiB (flag --cache-budget) may hold 1GiB (why)" (the
 * why only with `why`: an error's text has 512 bytes) for
 * each budget whose being chosen is `chosen_` (in_force: every one), after
 * `out`'s text; returns their most-held bytes. */
static uint64_t list_held(const tide_config *c, int chosen_, int in_force, int why, char *out, size_t cap)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < N_HELD; i++) {
        const struct held_rule *r = &held_rules[i];
        char v[32], h[32], src[200];
        uint64_t held = budget_value(c, r->id) * r->times;

        if (!in_force && chosen(c, r->id) != chosen_) continue;
        if (!counts(c, r->id)) continue;        /* the archive's, with the archive off */
        sum += held;
        ti_config_size_text(budget_value(c, r->id), v, sizeof v);
        ti_config_size_text(held, h, sizeof h);
        tide_config_source_text(c, r->id, src, sizeof src);
        append(out, cap, "%s%s=%s (%s) may hold %s%s%s%s", out[0] ? ", " : "", tide_config_name(r->id), v, src,
               h, why ? " (" : "", why ? r->why : "", why ? ")" : "");
        if (r->id == TIDE_CFG_HTTP_BODY_BUDGET && body_raised(c) && !in_force) {
            tide_config_source_text(c, TIDE_CFG_MAX_OBJECT_SIZE, src, sizeof src);
            ti_config_size_text(c->max_object_size, v, sizeof v);
            append(out, cap, ", as max_object_size=%s (%s)", v, src);
        }
    }
    return sum;
}

/* v rounded down (up: `up`) to a whole MiB from 1 MiB on, else a KiB. */
static void size_rounded(uint64_t v, int up, char *out, size_t cap)
{
    uint64_t unit = v >= MiB ? MiB : v >= 1024 ? 1024 : 1;

    ti_config_size_text(up ? (v + unit - 1) / unit * unit : v / unit * unit, out, cap);
}

/* The smallest limit (rounded up to a MiB) at which held_at fits under the
 * high mark, into out; 0 when none up to the largest. */
static int raise_to(const tide_config *c, int in_force, uint64_t in_force_held, char *out, size_t cap)
{
    unsigned high = c->memory_levels[TIDE_OVERLOAD_HIGH];
    uint64_t lo = c->memory_limit, hi = TIDE_CONFIG_BYTES_MAX;

#define FITS(l) ((in_force ? in_force_held : held_at(c, (l))) <= pct_of((l), high))
    if (!FITS(hi)) return 0;
    while (hi - lo > 1) {            /* FITS(hi), and lo is where it did not */
        uint64_t mid = lo + (hi - lo) / 2;
        if (FITS(mid)) hi = mid; else lo = mid;
    }
    uint64_t up = (hi + MiB - 1) / MiB * MiB;
    ti_config_size_text(up <= TIDE_CONFIG_BYTES_MAX && FITS(up) ? up : hi, out, cap);
#undef FITS
    return 1;
}

/* "lower cache_budget to at most 21MiB, or ..., or raise memory_limit to
 * at least 72MiB": each chosen budget (or max_object_size for a raised
 * body budget) lowered alone by `excess` bytes of what it may hold. */
static void advice(const tide_config *c, uint64_t excess, int in_force, uint64_t held, char *out, size_t cap)
{
    char v[32];

    out[0] = '\0';
    for (size_t i = 0; !in_force && i < N_HELD; i++) {
        const struct held_rule *r = &held_rules[i];
        uint64_t value = budget_value(c, r->id), cut = (excess + r->times - 1) / r->times;
        int raised = r->id == TIDE_CFG_HTTP_BODY_BUDGET && body_raised(c);
        uint64_t floor = raised ? c->memory_limit * SHARE_BODY_PCT / 100 : 0;

        if (!chosen(c, r->id) || value <= cut || value - cut < floor || value - cut < 1024) continue;
        size_rounded(value - cut, 0, v, sizeof v);
        append(out, cap, "%slower %s to at most %s", out[0] ? ", or " : "",
               raised ? "max_object_size" : tide_config_name(r->id), v);
    }
    /* The derived store_index_lag counts in the sum too: name it, though
     * the operator did not choose it. */
    uint64_t lag = c->store_index_lag;
    int lag_derived = !in_force && !chosen(c, TIDE_CFG_STORE_INDEX_LAG) && lag > 0;
    int lag_alone = lag_derived && lag > excess && lag - excess >= 1024;
    if (lag_alone) {
        size_rounded(lag - excess, 0, v, sizeof v);
        append(out, cap, "%sset store_index_lag (derived: memory_limit / 8) to at most %s", out[0] ? ", or " : "", v);
    }
    if (raise_to(c, in_force, held, v, sizeof v))
        append(out, cap, "%sraise memory_limit to at least %s", out[0] ? ", or " : "", v);
    if (lag_derived && !lag_alone) {
        ti_config_size_text(lag, v, sizeof v);
        append(out, cap, "%sstore_index_lag (derived: memory_limit / 8 = %s) counts too: a lower one (0: the "
               "deferred index off) takes its difference off the sum", out[0] ? "; " : "", v);
    }
    if (!out[0]) append(out, cap, "lower the budgets");
}

/* An explicit cache_budget 0 under a limit: an unbounded node cache,
 * which the governor cannot shrink. */
static int check_unbounded_cache(const tide_config *c, const char *lim, const char *ls)
{
    char src[200];

    if (c->cache_budget != 0) return 0;
    tide_config_source_text(c, TIDE_CFG_CACHE_BUDGET, src, sizeof src);
    return tide_err_set(TIDE_EINVAL, "cache_budget=0 (%s) leaves the node cache unbounded, which memory_limit=%s "
                        "(%s) cannot hold: set a cache_budget, or leave it unset to derive %u%% of the limit", src,
                        lim, ls, SHARE_CACHE_PCT);
}

static int check_budgets(const tide_config *c)
{
    char list[1600] = "", mine_list[600] = "", lim[32], ls[200], sum_text[32], all_text[32], key[32], mark[32],
         rest[32], fix[300];
    uint64_t l = c->memory_limit, mine, all, soft, high;
    int rc;

    ti_config_size_text(l, lim, sizeof lim);
    tide_config_source_text(c, TIDE_CFG_MEMORY_LIMIT, ls, sizeof ls);
    if ((rc = check_unbounded_cache(c, lim, ls)) != 0) return rc;
    mine = list_held(c, 1, 0, 1, list, sizeof list);
    ti_config_size_text(mine, sum_text, sizeof sum_text);
    if (mine > l)
        return tide_err_set(TIDE_EINVAL, "the budgets set explicitly may hold %s, more than memory_limit=%s "
                            "(%s): %s; lower them, or leave them unset to derive them from memory_limit%s",
                            sum_text, lim, ls, list, body_raised(c) ? " (the body budget: lower max_object_size)"
                            : "");
    list_held(c, 1, 0, 0, mine_list, sizeof mine_list);
    all = mine + list_held(c, 0, 0, 1, list, sizeof list) + c->key_cache_hard_limit;
    TIDE_ASSERT(all == held_at(c, l));
    soft = pct_of(l, c->memory_levels[TIDE_OVERLOAD_SOFT]);
    high = pct_of(l, c->memory_levels[TIDE_OVERLOAD_HIGH]);
    ti_config_size_text(all, all_text, sizeof all_text);
    ti_config_size_text(c->key_cache_hard_limit, key, sizeof key);
    /* The derived split alone (75.5% at most, 67.5% from 1.6 GiB on) is the
     * design's and stands whatever memory_levels says: the rule is for the
     * budgets the operator chose. */
    if (mine > 0 && all > high) {
        advice(c, all - high, 0, all, fix, sizeof fix);
        ti_config_size_text(high, mark, sizeof mark);
        ti_config_size_text(all - mine, rest, sizeof rest);
        return tide_err_set(TIDE_EINVAL, "the budgets may hold %s in all, more than the high mark of memory_limit="
                            "%s (%s), %u%% = %s, where writes are shed: %s, the derived ones and the key cache %s; "
                            "%s", all_text, lim, ls, c->memory_levels[TIDE_OVERLOAD_HIGH], mark, mine_list, rest, fix);
    }
    if (mine > 0 && all > soft) {
        /* In a lab run, --memory-limit 64MiB --cache-budget 24MiB (98% of the
         * limit in the budgets) went 10.5% past the limit between two readings,
         * the cache refilling to its hard limit after each restore. Under the
         * high mark, so not an error; but past the soft mark the caches alone
         * keep the node at its marks, which the operator should hear about. */
        tide_log(TIDE_LOG_WARN, "the budgets may hold %s in all, %u%% of memory_limit=%s (%s), above its soft mark "
                 "(%u%%): %s, the key cache's hard limit %s; the caches alone can keep the node at its memory "
                 "levels, and a burst of inserts between two readings can pass the limit (docs/MEMORY-LIMIT.md): "
                 "lower the %s", all_text, (unsigned)((all * 100 + l - 1) / l), lim, ls,
                 c->memory_levels[TIDE_OVERLOAD_SOFT], list, key, body_raised(c) ? "explicit ones or max_object_size"
                 : "explicit ones");
    }
    return 0;
}

/* (config.h) */
int tide_config_check_limit_in_force(const tide_config *running, uint64_t limit, const unsigned pct[4])
{
    char list[600] = "", lim[32], all_text[32], key[32], mark[32], fix[300];
    tide_config c = *running;
    uint64_t k = running->key_cache_hard_limit ? running->key_cache_hard_limit : NODE_KEY_CACHE_DEFAULT, all, high;

    if (limit == 0) return 0;                    /* no limit: nothing to hold */
    c.memory_limit = limit;
    memcpy(c.memory_levels, pct, sizeof c.memory_levels);
    ti_config_size_text(limit, lim, sizeof lim);
    if (c.cache_budget == 0)
        return tide_err_set(TIDE_EINVAL, "the node cache in force is unbounded (cache_budget=0), which "
                            "memory_limit=%s cannot hold; a restart derives new budgets from the limit", lim);
    all = list_held(&c, 1, 1, 0, list, sizeof list) + k;
    high = pct_of(limit, pct[TIDE_OVERLOAD_HIGH]);
    if (all <= high) return 0;
    ti_config_size_text(all, all_text, sizeof all_text);
    ti_config_size_text(k, key, sizeof key);
    ti_config_size_text(high, mark, sizeof mark);
    advice(&c, all - high, 1, all, fix, sizeof fix);
    return tide_err_set(TIDE_EINVAL, "the budgets in force (fixed at startup) may hold %s in all, more than the high "
                        "mark of memory_limit=%s, %u%% = %s: %s, the key cache's hard limit %s; a restart derives new "
                        "budgets from the limit, or %s", all_text, lim, pct[TIDE_OVERLOAD_HIGH], mark, list, key,
                        fix);
}

int ti_config_finish_memory(tide_config *c)
{
    char ls[200], lim[32], min[32];
    int rc = check_levels(c);

    if (rc || c->memory_limit == 0) return rc;
    if (c->memory_limit < TIDE_CONFIG_MEMORY_LIMIT_MIN) {
        ti_config_size_text(c->memory_limit, lim, sizeof lim);
        ti_config_size_text(TIDE_CONFIG_MEMORY_LIMIT_MIN, min, sizeof min);
        tide_config_source_text(c, TIDE_CFG_MEMORY_LIMIT, ls, sizeof ls);
        return tide_err_set(TIDE_EINVAL, "memory_limit=%s (%s) is below %s, the smallest limit tided runs "
                            "in%s", lim, ls, min, c->src[TIDE_CFG_MEMORY_LIMIT].kind == TIDE_SRC_DERIVED
                            ? ": raise the cgroup's memory limit" : "");
    }
    derive_budgets(c);
    rc = check_budgets(c);
    if (rc == 0 && c->ram_bytes && c->memory_limit > c->ram_bytes) {
        char ram[32];
        ti_config_size_text(c->memory_limit, lim, sizeof lim);
        tide_config_source_text(c, TIDE_CFG_MEMORY_LIMIT, ls, sizeof ls);
        tide_log(TIDE_LOG_WARN, "memory_limit=%s (%s) is above total RAM, %s: the marks may never be "
                 "reached before the kernel swaps or kills tided", lim, ls,
                 tide_size_format(c->ram_bytes, ram, sizeof ram));
    }
    TIDE_ASSERT(rc != 0 || c->memory_limit >= TIDE_CONFIG_MEMORY_LIMIT_MIN);
    return rc;
}
