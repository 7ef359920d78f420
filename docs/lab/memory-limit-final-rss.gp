# memory-limit-final-rss.gp: written by tide lab (docs/LAB.md, "The chart"). Redraw in this directory
# with `gnuplot memory-limit-final-rss.gp`: it reads the CSVs beside it and writes memory-limit-final-rss.png and
# memory-limit-final-rss.svg. One panel per variant on shared axes; the key outside, on the right.

set datafile separator ","
MiB = 1048576.0
T = 1    # seconds per unit of the x axis
rss = "memory-limit-final-rss.csv"
sweeps = "memory-limit-final-sweeps.csv"
is(v, r) = strcol(2) eq v && column(1) == r
rep_colour(r) = word("#1f77b4 #9467bd #ff7f0e #8c564b #17becf #e377c2 #7f7f7f #bcbd22", (r - 1) % 8 + 1)
rep_dash(r) = r == 1 ? 1 : 2

do for [out in "png svg"] {
if (out eq "png") {
    set terminal pngcairo size 1360,750 font "sans,10" noenhanced
    set output "memory-limit-final-rss.png"
} else {
    set terminal svg size 1360,750 font "sans,10" noenhanced background rgb "white"
    set output "memory-limit-final-rss.svg"
}
set multiplot layout 2,2 margins 0.06,0.77,0.080,0.853 spacing 0.08,0.080 title "tided RSS under the same ledger workload, one panel per variant (3 repetitions)\ntide lab --variant limit64,limit128,limit256,unlimited --baseline unlimited --duration 180 --wave 60 --sample-interval 0.1 --object-size 256KiB-1MiB\n--inner-pct 0 --objects 60 --reads 120 --clients 32 --repeat 3 --out docs/lab --prefix memory-limit-final" font ",11"
set xrange [0:180]
set yrange [0:276.48]
set grid ytics lc rgb "#dddddd"
set ylabel "MiB"
set boxwidth 0.72 absolute
set style fill solid 1.0 noborder

unset object
unset arrow
unset label
set title "limit64: plateau 40.6 MiB, -75.1% vs unlimited (-75.4 to -74.7)"
set object 1 rect from 0, graph 0 to 36, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set arrow 1 from graph 0, first 64 to graph 1, first 64 nohead lw 2 lc rgb "black" dt 4 front
set label 2 "limit 64 MiB" at graph 0.99, first 64 right offset 0,0.6 front
set arrow 2 from 36, first 40.5307 to graph 1, first 40.5307 nohead lw 1 lc rgb "#333333" dt 3
unset key
unset xlabel
V = "limit64"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "limit128: plateau 80.4 MiB, -51.0% vs unlimited (-51.6 to -50.4)"
set object 1 rect from 0, graph 0 to 36, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set arrow 1 from graph 0, first 128 to graph 1, first 128 nohead lw 2 lc rgb "black" dt 4 front
set label 2 "limit 128 MiB" at graph 0.99, first 128 right offset 0,0.6 front
set arrow 2 from 36, first 79.7082 to graph 1, first 79.7082 nohead lw 1 lc rgb "#333333" dt 3
set key outside at screen 0.79, screen 0.853 left top vertical Left reverse
unset xlabel
V = "limit128"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     for [r=1:3] NaN with lines lw 2 lc rgb rep_colour(r) dt rep_dash(r) title sprintf("RSS, repetition %d", r), \
     NaN with lines lw 2 lc rgb "black" dt 4 title "memory limit", \
     NaN with lines lw 1 lc rgb "#333333" dt 3 title "plateau mean, when reached", \
     NaN with boxes lc rgb "#1a9641" title "trim (RSS before to after): lowered", \
     NaN with boxes lc rgb "#d7191c" title "trim: not lowered", \
     NaN notitle

unset object
unset arrow
unset label
set title "limit256: plateau 139.9 MiB, -14.8% vs unlimited (-18.3 to -14.1)"
set object 1 rect from 0, graph 0 to 36, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set arrow 1 from graph 0, first 256 to graph 1, first 256 nohead lw 2 lc rgb "black" dt 4 front
set label 2 "limit 256 MiB" at graph 0.99, first 256 right offset 0,0.6 front
set arrow 2 from 36, first 141.525 to graph 1, first 141.525 nohead lw 1 lc rgb "#333333" dt 3
unset key
set xlabel "time since the workload started (s)"
V = "limit256"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset object
unset arrow
unset label
set title "unlimited: plateau 164.2 MiB"
set object 1 rect from 0, graph 0 to 36, graph 1 behind fc rgb "#eeeeee" fs solid noborder
set label 1 "warm-up" at graph 0.01, graph 0.95 tc rgb "#888888"
set arrow 2 from 36, first 164.669 to graph 1, first 164.669 nohead lw 1 lc rgb "#333333" dt 3
unset key
set xlabel "time since the workload started (s)"
V = "unlimited"
plot for [r=1:3] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 lc rgb rep_colour(r) dt rep_dash(r) notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):($9/MiB):($9/MiB) with candlesticks lc rgb "#1a9641" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):($10/MiB):($10/MiB) with candlesticks lc rgb "#d7191c" notitle, \
     for [r=1:3] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points pt 7 ps 0.4 lc rgb "#d7191c" notitle, \
     NaN notitle

unset multiplot
set output
}
