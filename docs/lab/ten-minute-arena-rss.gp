# ten-minute-arena-rss.gp: written by tide lab (docs/LAB.md, "The chart"). Redraw in this directory
# with `gnuplot ten-minute-arena-rss.gp`: it reads the CSVs beside it and writes ten-minute-arena-rss.png and
# ten-minute-arena-rss.svg. One panel per variant on shared axes; the key outside, on the right.

set datafile separator ","
MiB = 1048576.0
T = 1    # seconds per unit of the x axis
rss = "ten-minute-arena-rss.csv"
sweeps = "ten-minute-arena-sweeps.csv"
is(v, r) = strcol(2) eq v && column(1) == r
rep_colour(r) = word("#1f77b4 #9467bd #ff7f0e #8c564b #17becf #e377c2 #7f7f7f #bcbd22", (r - 1) % 8 + 1)
rep_dash(r) = r == 1 ? 1 : 2

do for [out in "png svg"] {
if (out eq "png") {
    set terminal pngcairo size 1360,750 font "sans,10" noenhanced
    set output "ten-minute-arena-rss.png"
} else {
    set terminal svg size 1360,750 font "sans,10" noenhanced background rgb "white"
    set output "ten-minute-arena-rss.svg"
}
set multiplot layout 2,1 margins 0.06,0.77,0.080,0.853 spacing 0.08,0.080 title "tided RSS under the same ledger workload, one panel per variant (1 repetition, sweep every 10 s)\ntide lab --duration 600 --out /tmp/lab10 --prefix ten-minute --heartbeat 60" font ",11"
set xrange [0:600]
set yrange [0:1021.65]
set grid ytics lc rgb "#dddddd"
set ylabel "MiB"
set boxwidth 2.4 absolute
set style fill solid 1.0 noborder

unset object
unset arrow
unset label
set title "trim: no plateau (+357.2 MiB over the last 240 s): run longer"
set object 1 rect from 0, graph 0 to 120, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set key outside at screen 0.79, screen 0.853 left top vertical Left reverse
unset xlabel
V = "trim"
plot for [r=1:1] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:1] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:1] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     for [r=1:1] NaN with lines lw 2 lc rgb rep_colour(r) dt rep_dash(r) title sprintf("RSS, repetition %d", r), \
     NaN with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" title "anonymous RSS, at each sweep", \
     NaN with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" title "live: bytes the consumers count", \
     NaN with lines lw 1 lc rgb "#333333" dt 3 title "plateau mean, when reached", \
     NaN with boxes lc rgb "#1a9641" title "trim (RSS before to after): lowered", \
     NaN with boxes lc rgb "#d7191c" title "trim: not lowered", \
     NaN notitle

unset object
unset arrow
unset label
set title "notrim: no plateau (+357.1 MiB over the last 240 s): run longer"
set object 1 rect from 0, graph 0 to 120, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
set xlabel "time since the workload started (s)"
V = "notrim"
plot for [r=1:1] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:1] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:1] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset multiplot
set output
}
