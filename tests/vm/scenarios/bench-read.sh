# bench-read (benchmark, not a test; runs only when named): read latency of memory.current and
# memory.stat through the shadow tree and directly, two ways each (pread on one open fd;
# open + read + close), N = 2000 reads after a warm-up (readlat lat; the direct and the shadow
# file take turns at every iteration, so both see the same conditions). Prints one BENCH line per
# file and way (median, p99, mean in microseconds: direct, then shadow) and the ratios.
# timeout: 300
. /oomd/lib.sh
N=${OOMD_BENCH_READS:-2000}
start_daemon /shadow
cg=$(mkcg r); s=/shadow${cg#$CGROOT}
# something to account: a small hog holding 8 MiB in the cgroup, so memory.stat has content
start_hog "$cg" 8
wait_for 10000 above "$cg" $((4 * MiB)) || fail "the hog did not start"
summary=''
for f in memory.current memory.stat; do
	readlat lat -n "$N" "$cg/$f" "$s/$f" >/tmp/bench.lat || fail "readlat on $f failed"
	for way in pread open; do
		d=$(awk -v w="$way" -v f="$cg/$f" '$1 == w && $2 == f {print $4, $5, $6}' /tmp/bench.lat)
		sh=$(awk -v w="$way" -v f="$s/$f" '$1 == w && $2 == f {print $4, $5, $6}' /tmp/bench.lat)
		line=$(echo "$d $sh" | awk '{printf "median %.1f -> %.1f us (x%.1f), p99 %.1f -> %.1f us (x%.1f)",
			$1, $4, $4 / $1, $2, $5, $5 / $2}')
		echo "BENCH $OOMD_KERNEL read $f $way $d $sh"
		summary="$summary $f/$way: $line;"
	done
done
kill "$HOG_PID" 2>/dev/null
stop_daemon
pass "n=$N direct -> shadow:$summary"
