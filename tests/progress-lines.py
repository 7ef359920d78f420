#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
#
# tests/progress-lines.py: check the progress line in what a terminal got.
#
#   progress-lines.py TYPESCRIPT VERB [PLAIN_STDOUT]
#
# TYPESCRIPT is what `script` captured of `tide VERB ...` run on a pseudo-
# terminal (stdout and stderr together, newlines as CR LF). The progress
# line is drawn as "\rtide VERB: WHAT  P%  DONE of TOTAL[ UNIT]...\033[K"
# and ended by one "\n" (src/cli/cli_progress.c). This checks that
#   - there is at least one drawing, and every drawing is of that form;
#   - within each step (WHAT less its pass/walk numbers) P never decreases,
#     and P is DONE/TOTAL of the same line to within 2 points (the sizes
#     are rounded for reading): one measure on a line;
#   - for rekey, P never decreases over the whole run from the first pass
#     on (the measure is the whole run's);
#   - the last drawing of every step says 100% with DONE equal to TOTAL;
#   - with PLAIN_STDOUT (the stdout of the same command without a
#     terminal), the typescript less the drawings and the newline that
#     ends them (or the erasure before a log line) is that stdout byte for
#     byte: the output is unchanged.
# Prints what is wrong and exits 1, or exits 0 silently.
import re
import sys

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def amount(text, unit):
    """DONE or TOTAL as a number: "1.5 MiB" (bytes) or "705" (a count)."""
    parts = text.split()
    if len(parts) == 2 and parts[1] in UNITS:
        return float(parts[0]) * UNITS[parts[1]]
    return float(parts[0])


def main():
    ts = open(sys.argv[1], "rb").read().decode("utf-8", "replace").replace("\r\n", "\n")
    verb = sys.argv[2]
    draw = re.compile(r"\r(tide " + verb + r": [^\r\n]*?)\x1b\[K")
    line = re.compile(r"^tide " + verb + r": (.+?)  +(\d+)%  (.+?) of (.+?)"
                      r"(?: (buckets))?(?:  \S+ \S+/s)?$")
    errors = []
    steps = {}
    last_whole = -1
    seen_pass = False
    found = draw.findall(ts)
    if not found:
        errors.append("no progress line was drawn")
    for full in found:
        m = line.match(full)
        if not m:
            errors.append("not a progress line: %r" % full)
            continue
        what, pct, done, total, unit = m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5)
        d, t = amount(done, unit), amount(total, unit)
        if d > t:
            errors.append("done above total: %r" % full)
        if t > 0 and abs(100.0 * d / t - pct) > 2.0:
            errors.append("the percent is not done/total of the same line: %r" % full)
        step = re.sub(r"\d+/\d+", "N", what) if verb == "rekey" else what
        prev = steps.get(step)
        if prev is not None and pct < prev[0]:
            errors.append("the percent went back within %r: %d%% after %d%%" % (step, pct, prev[0]))
        steps[step] = (pct, d, t, full)
        if verb == "rekey":
            seen_pass = seen_pass or what.startswith("pass")
            if seen_pass and pct < last_whole:
                errors.append("rekey's percent went back: %r after %d%%" % (full, last_whole))
            if seen_pass:
                last_whole = pct
    for step, (pct, d, t, full) in steps.items():
        if verb == "rekey" and not step.startswith("pass"):
            continue            # the counting walk ends where pass 1 begins
        if pct != 100 or d != t:
            errors.append("the last line of %r is not 100%%: %r" % (step, full))
    if len(sys.argv) > 3:
        plain = open(sys.argv[3], "rb").read().decode("utf-8", "replace")
        # A run of drawings ends with the newline of cli_progress_end, or
        # with the erasure before a log line.
        rest = re.sub(r"(?:\rtide " + verb + r": [^\r\n]*?\x1b\[K)+(?:\r\x1b\[K|\n)", "", ts)
        if rest != plain:
            errors.append("the output less the progress line differs from the plain output:\n"
                          "--- typescript less progress\n%s\n--- without a terminal\n%s"
                          % (rest[:600], plain[:600]))
    for e in errors:
        print(e)
    sys.exit(1 if errors else 0)


main()
