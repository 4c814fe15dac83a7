# The latency chart of scripts/bench.sh: per allocator, the fraction of allocator calls that took
# at least t (the complementary CDF), log-log, so that the tail shows: a curve further left and
# lower is better, and where a curve ends is that allocator's worst call.
#   gnuplot -e "ccdf='ccdf.dat'; out='latency.png'; subtitle='...'" scripts/latency-chart.gnuplot
# ccdf.dat (from bench-report): one block per allocator, two blank lines apart, each headed by
# its title in quotes, then "NS FRACTION" lines.
set terminal pngcairo size 1200,800 font "sans,10"
set output out
set title "Time per allocator call in the latency workload (".subtitle.")"
set logscale xy 10
set format x "10^{%L}"
set format y "10^{%L}"
set xlabel "t (ns)"
set ylabel "fraction of calls that took t or longer"
set xrange [1:*]
set grid xtics ytics mxtics mytics
set key top right
set linetype 1 lc rgb "#888888"
set linetype 2 lc rgb "#1f77b4"
set linetype 3 lc rgb "#2ca02c"
set linetype 4 lc rgb "#9467bd"
set linetype 5 lc rgb "#d62728"
set linetype 6 lc rgb "#ff7f0e"
set linetype 7 lc rgb "#17becf"
set linetype 8 lc rgb "#8c564b"
set arrow from 10000, graph 0 to 10000, graph 1 nohead dt 2 lc rgb "black"
set arrow from 100000, graph 0 to 100000, graph 1 nohead dt 2 lc rgb "black"
plot for [i=0:*] ccdf index i using 1:2 with steps lw 2 title columnheader(1)
