# SPDX-License-Identifier: BSD-2-Clause
#
# scripts/help2roff.awk: one of Tide's --help texts, read on stdin, as man(7)
# roff on stdout; scripts/gen-man runs it and adds the page's .TH and SEE
# ALSO. The help texts are written man-shaped, and this maps their shape
# one to one, so a man page says what --help says, nothing more or less.
#
# The shape read (the texts keep to it; scripts/gen-man's test checks the
# result renders without warnings and holds every option):
#   - a heading is a line at column 0 ("NAME", "EXIT STATUS"): .SH, or .SS
#     under -v nested=1 (a verb's text inside tide(1));
#   - the body is indented 4; a blank line ends a paragraph;
#   - NAME is "prog - what it is": "prog \- what it is", apropos' form;
#   - SYNOPSIS, EXAMPLES and ENDPOINTS are kept line for line (.nf): they
#     are commands and tables, whose line breaks and columns mean something;
#   - elsewhere, a body line with a gap of two or more blanks is an item
#     "TERM  text" (.TP, indented to where the text began), its continuation
#     lines indented to the text; a body line followed by deeper lines is an
#     item too, TERM alone on its line ("--config FILE", then its text
#     indented 8); other lines are prose, filled (.PP);
#   - in an item's text a line beginning "Range:", "Values:", "Default:" or
#     "Environment " starts a new line (.br): tided's option texts give one
#     fact a line;
#   - that second kind of item begins a paragraph (or follows a line ending
#     in ':') and does not itself end in [.,;:]; otherwise deeper lines
#     belong to no item (an example inside prose, "... e.g." then a
#     command) and are kept line for line, indented (.RS/.nf);
#   - a line indented 2 is a heading inside the section: .SS, or a bold
#     line in a verb's text (where .SS is taken).
# In a TERM, the words beginning with '-' (options) are bold, and so is the
# first word of a VERBS item (the verb). Text is escaped for roff: '\' is
# \e, every '-' is \- (a minus, so an option copied from the page works), a
# line beginning with '.' or "'" gets \& before it.
#
# Variables (-v): nested=1 makes the headings .SS and the NAME section the
# page's .SH heading for the verb; from=HEADING skips every section before
# that heading; upto=HEADING stops at it (gen-man splits tide's own text
# around its verbs' texts with them).
#
# Never: invent text; reflow what the rules above keep line for line.

function indent_of(s,    n) {
    n = match(s, /[^ ]/)
    return n ? n - 1 : -1
}

function esc(s,    out) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    # A comma inside a word (a CSV header) may end a line there.
    out = ""
    while (match(s, /,[^ ]/)) {
        out = out substr(s, 1, RSTART) "\\:"
        s = substr(s, RSTART + 1)
    }
    s = out s
    if (s ~ /^[.']/) s = "\\&" s
    return s
}

# A TERM with its options bold (and the verb, in VERBS).
function term(s,    n, w, i, out, word, tail) {
    n = split(s, w, / /)
    out = ""
    for (i = 1; i <= n; i++) {
        word = w[i]
        tail = ""
        if (word ~ /,$/) { tail = ","; word = substr(word, 1, length(word) - 1) }
        if (word != "" && (word ~ /^-/ || (i == 1 && section == "VERBS")))
            word = "\\fB" esc(word) "\\fR"
        else
            word = esc(word)
        out = out (i > 1 ? " " : "") word tail
    }
    if (out ~ /^[.']/) out = "\\&" out
    return out
}

function heading(name) {
    if (nested && name == "NAME") return
    print (nested ? ".SS" : ".SH") " \"" esc(name) "\""
}

function body_line(s) {
    if (s ~ /^(Range:|Values:|Default:|Environment )/) print ".br"
    print esc(s)
}

# The body of the section just read (lines[1..nl], indents stripped to
# the base) as roff.
function flush(    i, j, s, ind, gap, rest, col, t) {
    if (nl == 0 || skipping) { nl = 0; return }
    if (section == "NAME") {
        s = ""
        for (i = 1; i <= nl; i++) if (lines[i] != "") s = s (s == "" ? "" : " ") lines[i]
        if (nested) {
            t = s; sub(/ - .*/, "", t)
            print ".SH \"" esc(toupper(t)) "\""
            print ".PP"
            sub(/ - /, " \\- ", s)
            # esc() would escape the \- again: escape the parts around it.
            split(s, parts, / \\- /)
            print "\\fB" esc(parts[1]) "\\fR \\- " esc(parts[2])
        } else {
            split(s, parts, / - /)
            print esc(parts[1]) " \\- " esc(substr(s, length(parts[1]) + 4))
        }
        nl = 0
        return
    }
    if (section == "SYNOPSIS" || section == "EXAMPLES" || section == "ENDPOINTS") {
        print ".nf"
        for (i = 1; i <= nl; i++) print (lines[i] == "" ? ".sp" : esc(lines[i]))
        print ".fi"
        nl = 0
        return
    }
    para = 1
    for (i = 1; i <= nl; i++) {
        s = lines[i]
        if (s == "") { uncompact(); para = 1; continue }
        ind = indent_of(s)
        if (ind > 0) {
            uncompact()
            # Deeper lines belonging to no item: kept as they are.
            print ".RS 4"
            print ".nf"
            for (; i <= nl && lines[i] != "" && indent_of(lines[i]) > 0; i++) print esc(lines[i])
            print ".fi"
            print ".RE"
            i--
            continue
        }
        gap = index(s, "  ")
        if (gap > 0) {
            # "TERM  text": .TP indented to the text's column; a run of
            # them is set without blank lines between (.PD 0), as in --help.
            rest = substr(s, gap)
            col = gap - 1 + indent_of(rest)
            print ".TP " col
            print term(substr(s, 1, gap - 1))
            body_line(substr(rest, indent_of(rest) + 1))
            for (j = i + 1; j <= nl && lines[j] != "" && indent_of(lines[j]) > 0; j++)
                body_line(substr(lines[j], indent_of(lines[j]) + 1))
            i = j - 1
            para = 1
            if (!compact) print ".PD 0"
            compact = 1
            compact_col = col
            continue
        }
        if (s ~ /^\001/) {
            uncompact()
            # A heading inside the section (indented 2 in the text).
            if (nested) {
                print ".PP"
                print "\\fB" esc(substr(s, 2)) "\\fR"
                print ".br"
                para = 0
            } else {
                print ".SS \"" esc(substr(s, 2)) "\""
                para = 1
            }
            continue
        }
        if (i < nl && lines[i + 1] != "" && indent_of(lines[i + 1]) > 0 &&
            (para || lines[i - 1] ~ /:$/) && s !~ /[.,;:]$/) {
            # TERM alone, its text on the deeper lines after it; inside a
            # run of "TERM  text" items it is one of them.
            print ".TP" (compact ? " " compact_col : "")
            print term(s)
            for (j = i + 1; j <= nl && lines[j] != "" && indent_of(lines[j]) > 0; j++)
                body_line(substr(lines[j], indent_of(lines[j]) + 1))
            i = j - 1
            para = 1
            continue
        }
        uncompact()
        if (para) print ".PP"
        para = 0
        print esc(s)
    }
    uncompact()
    nl = 0
}

# The end of a run of "TERM  text" items: paragraphs spaced again.
function uncompact() {
    if (compact) print ".PD"
    compact = 0
}

BEGIN {
    nl = 0
    section = ""
    skipping = (from != "")
    stopped = 0
}

stopped { next }

/^[A-Z][A-Z0-9 ]*$/ {
    flush()
    section = $0
    if (upto != "" && section == upto) { stopped = 1; next }
    if (from != "" && section == from) skipping = 0
    if (!skipping) heading(section)
    next
}

{
    s = $0
    sub(/[ \t]+$/, "", s)
    if (s == "") { lines[++nl] = ""; next }
    if (indent_of(s) == 2) { lines[++nl] = "\001" substr(s, 3); next }
    if (indent_of(s) < 4) {
        printf "help2roff: line %d is not indented under a heading: %s\n", NR, s > "/dev/stderr"
        bad = 1
    }
    lines[++nl] = substr(s, 5)
}

END {
    flush()
    if (bad) exit 1
}
