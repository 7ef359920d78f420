# rotation-rss.gp: written by tide lab (docs/LAB.md, "The chart"). Redraw in this directory
# with `gnuplot rotation-rss.gp`: it reads the CSVs beside it and writes rotation-rss.png and
# rotation-rss.svg. One panel per variant on shared axes; the key outside, on the right.

set datafile separator ","
MiB = 1048576.0
T = 60    # seconds per unit of the x axis
rss = "rotation-rss.csv"
sweeps = "rotation-sweeps.csv"
disk = "rotation-disk.csv"
rotations = "rotation-rotations.csv"
is(v, r) = strcol(2) eq v && column(1) == r
rep_colour(r) = word("#1f77b4 #9467bd #ff7f0e #8c564b #17becf #e377c2 #7f7f7f #bcbd22", (r - 1) % 8 + 1)
rep_dash(r) = r == 1 ? 1 : 2

do for [out in "png svg"] {
if (out eq "png") {
    set terminal pngcairo size 1360,750 font "sans,10" noenhanced
    set output "rotation-rss.png"
} else {
    set terminal svg size 1360,750 font "sans,10" noenhanced background rgb "white"
    set output "rotation-rss.svg"
}
set multiplot layout 2,2 margins 0.06,0.71,0.080,0.853 spacing 0.13,0.080 title "tided RSS and disk under the same ledger workload, one panel per variant (1 repetition)\ntide lab --variant rot2,rot2-notrim,rot4 --baseline rot2-notrim --node-args --insert-burst 16MiB --duration 3600 --out docs/lab --prefix rotation\n--keep --scratch /tmp/i12lab-rot" font ",11"
set xrange [0:60]
set yrange [0:118.606]
set grid ytics lc rgb "#dddddd"
set ylabel "MiB"
set boxwidth 0.24 absolute
set style fill solid 1.0 noborder
set y2range [0:818.296]
set y2tics
set y2label "data directory (MiB), dashed"

unset object
unset arrow
unset label
set title "rot2: plateau 101.0 MiB, -1.9% vs rot2-notrim"
set object 1 rect from 0, graph 0 to 12, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set arrow 2 from 12, first 100.978 to graph 1, first 100.978 nohead lw 1 lc rgb "#333333" dt 3
unset key
unset xlabel
V = "rot2"
plot for [r=1:1] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     for [r=1:1] disk using (is(V, r) && $4 > 0 ? $3/T : NaN):($4/MiB) axes x1y2 with lines lw 1 lc rgb rep_colour(r) dt 2 notitle, \
     for [r=1:1] rotations using (is(V, r) && $6 == 0 ? $4/T : NaN):(0):(0):(118.606) with vectors nohead lc rgb rep_colour(r) dt 2 notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "rot2-notrim: plateau 103.0 MiB"
set object 1 rect from 0, graph 0 to 12, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set arrow 2 from 12, first 102.985 to graph 1, first 102.985 nohead lw 1 lc rgb "#333333" dt 3
set key outside at screen 0.78, screen 0.853 left top vertical Left reverse
set xlabel "time since the workload started (min)"
V = "rot2-notrim"
plot for [r=1:1] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     for [r=1:1] disk using (is(V, r) && $4 > 0 ? $3/T : NaN):($4/MiB) axes x1y2 with lines lw 1 lc rgb rep_colour(r) dt 2 notitle, \
     for [r=1:1] rotations using (is(V, r) && $6 == 0 ? $4/T : NaN):(0):(0):(118.606) with vectors nohead lc rgb rep_colour(r) dt 2 notitle, \
     for [r=1:1] NaN with lines lw 2 lc rgb rep_colour(r) dt rep_dash(r) title sprintf("RSS, repetition %d", r), \
     NaN with lines lw 1 lc rgb "#333333" dt 3 title "plateau mean, when reached", \
     NaN with boxes lc rgb "#1a9641" title "trim (RSS before to after): lowered", \
     NaN with boxes lc rgb "#d7191c" title "trim: not lowered", \
     NaN with lines lc rgb "#555555" dt 2 title "disk (right axis); rotation", \
     NaN notitle

unset object
unset arrow
unset label
set title "rot4: plateau 98.6 MiB, -4.2% vs rot2-notrim"
set object 1 rect from 0, graph 0 to 12, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set arrow 2 from 12, first 98.6347 to graph 1, first 98.6347 nohead lw 1 lc rgb "#333333" dt 3
unset key
set xlabel "time since the workload started (min)"
V = "rot4"
plot for [r=1:1] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     for [r=1:1] disk using (is(V, r) && $4 > 0 ? $3/T : NaN):($4/MiB) axes x1y2 with lines lw 1 lc rgb rep_colour(r) dt 2 notitle, \
     for [r=1:1] rotations using (is(V, r) && $6 == 0 ? $4/T : NaN):(0):(0):(118.606) with vectors nohead lc rgb rep_colour(r) dt 2 notitle, \
     NaN notitle

unset multiplot
set output
}
