# bench-read (benchmark, not a test; runs only when named): read latency of memory.current and
# memory.stat through the shadow tree and directly, and the FUSE floor beside them (floorfs: a
# libfuse server that answers from memory, with the daemon's loop settings, at a path as deep as
# the shadow's), two ways each
# (pread on one open fd; the cat path: open + read to EOF + close), N = 2000 reads after a
# warm-up (readlat lat; the three files take turns at every iteration, so all see the same
# conditions), and, to tell where the cat path's time goes, N/4 of stat (a LOOKUP and a GETATTR
# on FUSE) and of open + close without a read. Prints one BENCH line per file and way (median,
# p99, mean in microseconds: direct, shadow, floor) and the ratios.
# timeout: 900
. /oomd/lib.sh
N=${OOMD_BENCH_READS:-2000}
start_daemon /shadow
mkdir -p /floor
floorfs -t 0 /floor & # time-outs 0, as when DESIGN's read table was taken (bench-walk uses the tuned floor)
FLOOR_PID=$!
wait_for 10000 _mounted /floor || fail "floorfs did not mount /floor"
cg=$(mkcg r); s=/shadow${cg#$CGROOT}
# the floor's path has the shadow's depth: a path walk LOOKUPs every component (timeouts 0)
fp=/floor${cg#$CGROOT}
# something to account: a small hog holding 8 MiB in the cgroup, so memory.stat has content
start_hog "$cg" 8
wait_for 10000 above "$cg" $((4 * MiB)) || fail "the hog did not start"
summary=''
for f in memory.current memory.stat; do
	readlat lat -n "$N" "$cg/$f" "$s/$f" "$fp/$f" >/tmp/bench.lat || fail "readlat on $f failed"
	# where the cat path's time goes: stat (LOOKUP + GETATTR), open + close (no read); N/4 reads
	readlat lat -n $((N / 4)) -w stat,openclose "$cg/$f" "$s/$f" "$fp/$f" >>/tmp/bench.lat ||
		fail "readlat stat,openclose on $f failed"
	for way in pread open stat openclose; do
		d=$(awk -v w="$way" -v f="$cg/$f" '$1 == w && $2 == f {print $4, $5, $6}' /tmp/bench.lat)
		sh=$(awk -v w="$way" -v f="$s/$f" '$1 == w && $2 == f {print $4, $5, $6}' /tmp/bench.lat)
		fl=$(awk -v w="$way" -v f="$fp/$f" '$1 == w && $2 == f {print $4, $5, $6}' /tmp/bench.lat)
		line=$(echo "$d $sh $fl" | awk '{printf "median %.1f -> %.1f us (x%.1f; floor %.1f), p99 %.1f -> %.1f us (x%.1f; floor %.1f)",
			$1, $4, $4 / $1, $7, $2, $5, $5 / $2, $8}')
		echo "BENCH $OOMD_KERNEL read $f $way $d $sh $fl"
		summary="$summary $f/$way: $line;"
	done
done
kill "$HOG_PID" 2>/dev/null
kill -TERM "$FLOOR_PID"
wait_for 5000 dead "$FLOOR_PID" || fail "floorfs did not stop on SIGTERM"
stop_daemon
pass "n=$N direct -> shadow:$summary"
