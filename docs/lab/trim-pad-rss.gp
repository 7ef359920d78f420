# trim-pad-rss.gp: written by tide lab (docs/LAB.md, "The chart"). Redraw in this directory
# with `gnuplot trim-pad-rss.gp`: it reads the CSVs beside it and writes trim-pad-rss.png and
# trim-pad-rss.svg. One panel per variant on shared axes; the key outside, on the right.

set datafile separator ","
MiB = 1048576.0
T = 1    # seconds per unit of the x axis
rss = "trim-pad-rss.csv"
sweeps = "trim-pad-sweeps.csv"
is(v, r) = strcol(2) eq v && column(1) == r
rep_colour(r) = word("#1f77b4 #9467bd #ff7f0e #8c564b #17becf #e377c2 #7f7f7f #bcbd22", (r - 1) % 8 + 1)
rep_dash(r) = r == 1 ? 1 : 2

do for [out in "png svg"] {
if (out eq "png") {
    set terminal pngcairo size 1360,1650 font "sans,10" noenhanced
    set output "trim-pad-rss.png"
} else {
    set terminal svg size 1360,1650 font "sans,10" noenhanced background rgb "white"
    set output "trim-pad-rss.svg"
}
set multiplot layout 5,2 margins 0.06,0.77,0.036,0.933 spacing 0.08,0.036 title "tided RSS under the same ledger workload, one panel per variant (3 repetitions)\ntide lab --variant notrim --custom pad0-off=--cache-arena off --trim-pad 0 --custom pad256k-off=--cache-arena off --trim-pad 256KiB --custom\npad1m-off=--cache-arena off --trim-pad 1MiB --custom pad16m-off=--cache-arena off --trim-pad 16MiB --custom pad0-on=--trim-pad 0 --custom\npad256k-on=--trim-pad 256KiB --custom pad1m-on=--trim-pad 1MiB --custom pad16m-on=--trim-pad 16MiB --repeat 3 --duration 240 --warmup 60 --objects\n1000 --reads 500 --clients 2 --quiet --out /tmp/padlab --prefix pad" font ",11"
set xrange [0:240]
set yrange [0:161.333]
set grid ytics lc rgb "#dddddd"
set ylabel "MiB"
set boxwidth 0.96 absolute
set style fill solid 1.0 noborder

unset object
unset arrow
unset label
set title "notrim: no plateau (+61.2 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "notrim"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "pad0-off: no plateau (+63.8 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set key outside at screen 0.79, screen 0.933 left top vertical Left reverse
unset xlabel
V = "pad0-off"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     for [r=1:3] NaN with lines lw 2 lc rgb rep_colour(r) dt rep_dash(r) title sprintf("RSS, repetition %d", r), \
     NaN with lines lw 1 lc rgb "#333333" dt 3 title "plateau mean, when reached", \
     NaN with boxes lc rgb "#1a9641" title "trim (RSS before to after): lowered", \
     NaN with boxes lc rgb "#d7191c" title "trim: not lowered", \
     NaN notitle

unset object
unset arrow
unset label
set title "pad256k-off: no plateau (+64.1 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "pad256k-off"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "pad1m-off: no plateau (+63.9 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "pad1m-off"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "pad16m-off: no plateau (+63.8 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "pad16m-off"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "pad0-on: no plateau (+61.1 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "pad0-on"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "pad256k-on: no plateau (+62.2 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
unset xlabel
V = "pad256k-on"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "pad1m-on: no plateau (+61.2 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
set xlabel "time since the workload started (s)"
V = "pad1m-on"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "pad16m-on: no plateau (+61.9 MiB over the last 120 s): run longer"
set object 1 rect from 0, graph 0 to 60, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
unset key
set xlabel "time since the workload started (s)"
V = "pad16m-on"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset multiplot
set output
}
