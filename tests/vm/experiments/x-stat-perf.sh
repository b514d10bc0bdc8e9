# x-stat-perf: an experiment, not part of the suite (issue 23). Why an all-files read of
# memory.stat costs the shadow more over floor-exact than one of memory.current: the whole
# VM's CPU (perf record -a, cpu-clock, no call graphs) during 3 walks of 500 cgroups, for
# each server and each file; the top symbols of each, and the time of each walk.
#   cp tests/vm/experiments/x-stat-perf.sh tests/vm/scenarios/
#   OOMD_VM_EXTRA_BINS=/usr/bin/perf OOMD_VM_MEM=3072 tests/vm/run-vm.sh --build-dir build \
#     --kernel 7 --scenario x-stat-perf
#   rm tests/vm/scenarios/x-stat-perf.sh
# timeout: 900
. /oomd/lib.sh
command -v perf >/dev/null || skip "perf is not in the image (OOMD_VM_EXTRA_BINS=/usr/bin/perf)"
N=500
p=$(mkchildren x $N)
floor_exact "$p" $N /floorx
start_daemon /shadow
for w in shadow floorx; do
	d=/$w${p#$CGROOT}
	for f in memory.current memory.stat; do
		cat "$d"/*/$f >/dev/null; cat "$d"/*/$f >/dev/null
		perf record -a -F 4000 -e cpu-clock -o /tmp/perf.data -- sleep 30 >/tmp/perf.log 2>&1 &
		pp=$!
		sleep 1
		t0=$(now_ms)
		for i in 1 2 3; do cat "$d"/*/$f >/dev/null; done
		t=$(($(now_ms) - t0))
		kill -INT $pp; wait $pp
		echo "X $w $f: 3 walks in $t ms"
		perf report -i /tmp/perf.data --stdio --sort comm,sym 2>/dev/null | grep "%" | head -28 | sed 's/^/X   /'
	done
done
stop_daemon
kill -TERM "$FLOOR_PID"
pass "measured"
