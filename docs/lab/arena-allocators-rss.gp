# arena-allocators-rss.gp: written by tide lab (docs/LAB.md, "The chart"). Redraw in this directory
# with `gnuplot arena-allocators-rss.gp`: it reads the CSVs beside it and writes arena-allocators-rss.png and
# arena-allocators-rss.svg. One panel per variant on shared axes; the key outside, on the right.

set datafile separator ","
MiB = 1048576.0
T = 1    # seconds per unit of the x axis
rss = "arena-allocators-rss.csv"
sweeps = "arena-allocators-sweeps.csv"
is(v, r) = strcol(2) eq v && column(1) == r
rep_colour(r) = word("#1f77b4 #9467bd #ff7f0e #8c564b #17becf #e377c2 #7f7f7f #bcbd22", (r - 1) % 8 + 1)
rep_dash(r) = r == 1 ? 1 : 2

do for [out in "png svg"] {
if (out eq "png") {
    set terminal pngcairo size 1360,1350 font "sans,10" noenhanced
    set output "arena-allocators-rss.png"
} else {
    set terminal svg size 1360,1350 font "sans,10" noenhanced background rgb "white"
    set output "arena-allocators-rss.svg"
}
set multiplot layout 4,2 margins 0.06,0.77,0.044,0.919 spacing 0.08,0.044 title "tided RSS under the same ledger workload, one panel per variant (3 repetitions)\ntide lab --variant trim,noarena,jemalloc,jemalloc-noarena,tcmalloc,tcmalloc-noarena,mimalloc,mimalloc-noarena --baseline noarena --repeat 3 --duration\n180 --warmup 60 --objects 1000 --reads 500 --clients 2 --quiet --json --out /tmp/alab --prefix arena-allocators" font ",11"
set xrange [0:180]
set yrange [0:169.725]
set grid ytics lc rgb "#dddddd"
set ylabel "MiB"
set boxwidth 0.72 absolute
set style fill solid 1.0 noborder

unset object
unset arrow
unset label
set title "trim: no plateau (+85.1 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "trim"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "noarena: no plateau (+91.5 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set key outside at screen 0.79, screen 0.918 left top vertical Left reverse
unset xlabel
V = "noarena"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     for [r=1:3] NaN with lines lw 2 lc rgb rep_colour(r) dt rep_dash(r) title sprintf("RSS, repetition %d", r), \
     NaN with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" title "anonymous RSS, at each sweep", \
     NaN with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" title "live: bytes the consumers count", \
     NaN with lines lw 1 lc rgb "#333333" dt 3 title "plateau mean, when reached", \
     NaN with boxes lc rgb "#1a9641" title "trim (RSS before to after): lowered", \
     NaN with boxes lc rgb "#d7191c" title "trim: not lowered", \
     NaN notitle

unset object
unset arrow
unset label
set title "jemalloc: no plateau (+85.2 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "jemalloc"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "jemalloc-noarena: no plateau (+89.7 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "jemalloc-noarena"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "tcmalloc: no plateau (+86.2 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "tcmalloc"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "tcmalloc-noarena: no plateau (+91.1 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "tcmalloc-noarena"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "mimalloc: no plateau (+85.6 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
set xlabel "time since the workload started (s)"
V = "mimalloc"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "mimalloc-noarena: no plateau (+90.9 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
set xlabel "time since the workload started (s)"
V = "mimalloc-noarena"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:3] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset multiplot
set output
}
