# The chart of scripts/bench.sh: two panels of grouped bars, one group per workload and one bar
# per allocator, each the allocator's median relative to glibc's (1 = as glibc), log scale.
#   gnuplot -e "timedat='time.dat'; rssdat='rss.dat'; out='bench.png'; ncols=6; subtitle='...'" \
#     scripts/bench-chart.gnuplot
# The .dat files (from bench-report): a header line "workload glibc jemalloc ...", then one line
# per workload.
set terminal pngcairo size 1800,1100 font "sans,10"
set output out
set multiplot layout 2,1 title "poolalloc vs glibc, jemalloc, mimalloc, tcmalloc (".subtitle.")"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 2
set grid ytics
set xtics rotate by -35 scale 0 nomirror
set key outside right top vertical
set yrange [*:*]
set ytics ("1/64" 0.015625, "1/32" 0.03125, "1/16" 0.0625, "1/8" 0.125, "1/4" 0.25, "1/2" 0.5, "1" 1, "2" 2, "4" 4, "8" 8, "16" 16, "32" 32, "64" 64)
set linetype 1 lc rgb "#888888"
set linetype 2 lc rgb "#1f77b4"
set linetype 3 lc rgb "#2ca02c"
set linetype 4 lc rgb "#9467bd"
set linetype 5 lc rgb "#d62728"
set linetype 6 lc rgb "#ff7f0e"
set linetype 7 lc rgb "#17becf"
set linetype 8 lc rgb "#8c564b"

set title "Median wall time relative to glibc (lower is faster)"
set ylabel "time / glibc time"
plot for [i=2:ncols] timedat using i:xtic(1) title columnhead(i), 1 with lines lc rgb "black" dt 2 notitle

set title "Median peak RSS relative to glibc (lower is smaller)"
set ylabel "peak RSS / glibc peak RSS"
plot for [i=2:ncols] rssdat using i:xtic(1) title columnhead(i), 1 with lines lc rgb "black" dt 2 notitle
unset multiplot
