# ghost-matrix.gp: written by tide ghost (docs/GHOST.md, "The chart"). Redraw in this
# directory with `gnuplot ghost-matrix.gp`: it reads ghost-matrix.csv beside it and writes
# ghost-matrix.png and ghost-matrix.svg. One group of bars per variant, one bar per scenario;
# the key outside, on the right.

set datafile separator ","
MiB = 1048576.0
csv = "ghost-matrix.csv"
scenarios = "small-batch medium-batch large-batch mixed lifetime business threads"
variants = "glibc glibc-mmap16k glibc-trim glibc-arena2 jemalloc jemalloc-bg tcmalloc mimalloc arena"
NS = words(scenarios)
NV = words(variants)
W = 0.84 / NS
# columns: 1 scenario, 2 variant, 4 status, 7 rss_start, 8 rss_peak, 10 live, 11 ghost (bytes)
vi(v) = sum [i=1:NV] (word(variants, i) eq v ? i : 0)
x(s) = vi(strcol(2)) + (s - (NS + 1) / 2.0) * W
ok(s) = strcol(1) eq word(scenarios, s) && strcol(4) eq "ok"
colour(s) = word("#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf", (s - 1) % 10 + 1)

do for [out in "png svg"] {
if (out eq "png") {
    set terminal pngcairo size 1360,680 font "sans,10" noenhanced
    set output "ghost-matrix.png"
} else {
    set terminal svg size 1360,680 font "sans,10" noenhanced background rgb "white"
    set output "ghost-matrix.svg"
}
set title "tide ghost: the RSS that stays after the frees, per allocator variant and scenario\npage 4096 B, kernel Linux 6.18.44-fc-v1300 x86_64, glibc 2.36, jemalloc 5.3.0, tcmalloc gperftools 2.10, mimalloc 2.0.9; size 1. Filled: the ghost,\nRSS after the frees - start - live. Outline: what the frees could give back, peak - start - live." font ",11"
set xrange [0.5:9.5]
set yrange [0:16.5501]
set ylabel "MiB"
set grid ytics lc rgb "#dddddd"
set xzeroaxis lt -1
set bmargin 5
set tmargin 5
set xtics nomirror scale 0 ("glibc" 1, "glibc-mmap16k" 2, "glibc-trim" 3, "glibc-arena2" 4, "jemalloc" 5, "jemalloc-bg" 6, "tcmalloc" 7, "mimalloc" 8, "arena" 9)
set xlabel "allocator variant"
set key outside right top vertical Left reverse title "scenario"
set boxwidth W * 0.9 absolute
plot for [s=1:NS] csv skip 1 using (ok(s) ? x(s) : NaN):($11/MiB) with boxes fs solid 0.85 noborder lc rgb colour(s) title word(scenarios, s), \
     for [s=1:NS] csv skip 1 using (ok(s) ? x(s) : NaN):(($8 - $7 - $10)/MiB) with boxes fs empty lw 1.2 lc rgb "#333333" notitle, \
     NaN with boxes fs empty lw 1.2 lc rgb "#333333" title "outline: peak - start - live"
set output
}
