# bench-read (benchmark, not a test; runs only when named): read latency of memory.current and
# memory.stat through the shadow tree and directly, two ways each (pread on one open fd;
# open + read + close), N = 2000 reads after a warm-up (readlat lat). Prints one BENCH line per
# file and way: median and p99 in microseconds, direct then shadow, and the shadow/direct ratios.
# timeout: 240
. /oomd/lib.sh
N=${OOMD_BENCH_READS:-2000}
start_daemon /shadow
cg=$(mkcg r); s=/shadow${cg#$CGROOT}
# something to account: a small hog holding 8 MiB in the cgroup, so memory.stat has content
start_hog "$cg" 8
wait_for 10000 above "$cg" $((4 * MiB)) || fail "the hog did not start"
summary=''
for f in memory.current memory.stat; do
	readlat lat "$cg/$f" "$N" >/tmp/bench.direct || fail "readlat on $cg/$f failed"
	readlat lat "$s/$f" "$N" >/tmp/bench.shadow || fail "readlat on $s/$f failed"
	for way in pread open; do
		d=$(awk -v w="$way" '$1 == w {print $3, $4, $5}' /tmp/bench.direct)
		sh=$(awk -v w="$way" '$1 == w {print $3, $4, $5}' /tmp/bench.shadow)
		line=$(echo "$d $sh" | awk '{printf "median %.1f -> %.1f us (x%.1f), p99 %.1f -> %.1f us (x%.1f), mean %.1f -> %.1f us",
			$1, $4, $4 / $1, $2, $5, $5 / $2, $3, $6}')
		echo "BENCH $OOMD_KERNEL read $f $way $d $sh"
		summary="$summary $f/$way: $line;"
	done
done
kill "$HOG_PID" 2>/dev/null
stop_daemon
pass "n=$N direct -> shadow:$summary"
