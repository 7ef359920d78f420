# rotation-final-rss.gp: written by tide lab (docs/LAB.md, "The chart"). Redraw in this directory
# with `gnuplot rotation-final-rss.gp`: it reads the CSVs beside it and writes rotation-final-rss.png and
# rotation-final-rss.svg. One panel per variant on shared axes; the key outside, on the right.

set datafile separator ","
MiB = 1048576.0
T = 1    # seconds per unit of the x axis
rss = "rotation-final-rss.csv"
sweeps = "rotation-final-sweeps.csv"
disk = "rotation-final-disk.csv"
rotations = "rotation-final-rotations.csv"
is(v, r) = strcol(2) eq v && column(1) == r
rep_colour(r) = word("#1f77b4 #9467bd #ff7f0e #8c564b #17becf #e377c2 #7f7f7f #bcbd22", (r - 1) % 8 + 1)
rep_dash(r) = r == 1 ? 1 : 2

do for [out in "png svg"] {
if (out eq "png") {
    set terminal pngcairo size 1360,750 font "sans,10" noenhanced
    set output "rotation-final-rss.png"
} else {
    set terminal svg size 1360,750 font "sans,10" noenhanced background rgb "white"
    set output "rotation-final-rss.svg"
}
set multiplot layout 2,2 margins 0.06,0.71,0.080,0.853 spacing 0.13,0.080 title "tided RSS and disk under the same ledger workload, one panel per variant (1 repetition, sweep every 10 s)\ntide lab --variant rot2,rot2-notrim,rot4 --baseline rot2-notrim --duration 600 --out /tmp/labrf --prefix rotation-final --heartbeat 60" font ",11"
set xrange [0:600]
set yrange [0:829.402]
set grid ytics lc rgb "#dddddd"
set ylabel "MiB"
set boxwidth 2.4 absolute
set style fill solid 1.0 noborder
set y2range [0:800.774]
set y2tics
set y2label "data directory (MiB), dashed"

unset object
unset arrow
unset label
set title "rot2: plateau 272.2 MiB, -0.0% vs rot2-notrim"
set object 1 rect from 0, graph 0 to 120, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set arrow 2 from 120, first 272.241 to graph 1, first 272.241 nohead lw 1 lc rgb "#333333" dt 3
unset key
unset xlabel
V = "rot2"
plot for [r=1:1] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:1] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:1] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     for [r=1:1] disk using (is(V, r) && $4 > 0 ? $3/T : NaN):($4/MiB) axes x1y2 with lines lw 1 lc rgb rep_colour(r) dt 2 notitle, \
     for [r=1:1] rotations using (is(V, r) && $6 == 0 ? $4/T : NaN):(0):(0):(829.402) with vectors nohead lc rgb rep_colour(r) dt 2 notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "rot2-notrim: plateau 272.3 MiB"
set object 1 rect from 0, graph 0 to 120, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set arrow 2 from 120, first 272.258 to graph 1, first 272.258 nohead lw 1 lc rgb "#333333" dt 3
set key outside at screen 0.78, screen 0.853 left top vertical Left reverse
set xlabel "time since the workload started (s)"
V = "rot2-notrim"
plot for [r=1:1] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:1] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:1] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     for [r=1:1] disk using (is(V, r) && $4 > 0 ? $3/T : NaN):($4/MiB) axes x1y2 with lines lw 1 lc rgb rep_colour(r) dt 2 notitle, \
     for [r=1:1] rotations using (is(V, r) && $6 == 0 ? $4/T : NaN):(0):(0):(829.402) with vectors nohead lc rgb rep_colour(r) dt 2 notitle, \
     for [r=1:1] NaN with lines lw 2 lc rgb rep_colour(r) dt rep_dash(r) title sprintf("RSS, repetition %d", r), \
     NaN with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" title "anonymous RSS, at each sweep", \
     NaN with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" title "live: bytes the consumers count", \
     NaN with lines lw 1 lc rgb "#333333" dt 3 title "plateau mean, when reached", \
     NaN with boxes lc rgb "#1a9641" title "trim (RSS before to after): lowered", \
     NaN with boxes lc rgb "#d7191c" title "trim: not lowered", \
     NaN with lines lc rgb "#555555" dt 2 title "disk (right axis); rotation", \
     NaN notitle

unset object
unset arrow
unset label
set title "rot4: plateau 552.9 MiB, +103.1% vs rot2-notrim"
set object 1 rect from 0, graph 0 to 120, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set arrow 2 from 120, first 552.917 to graph 1, first 552.917 nohead lw 1 lc rgb "#333333" dt 3
unset key
set xlabel "time since the workload started (s)"
V = "rot4"
plot for [r=1:1] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:1] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with linespoints lw 1 pt 6 ps 0.5 lc rgb "black" notitle, \
     for [r=1:1] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints lw 1.5 pt 7 ps 0.4 lc rgb "#555555" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:1] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     for [r=1:1] disk using (is(V, r) && $4 > 0 ? $3/T : NaN):($4/MiB) axes x1y2 with lines lw 1 lc rgb rep_colour(r) dt 2 notitle, \
     for [r=1:1] rotations using (is(V, r) && $6 == 0 ? $4/T : NaN):(0):(0):(829.402) with vectors nohead lc rgb rep_colour(r) dt 2 notitle, \
     NaN notitle

unset multiplot
set output
}
