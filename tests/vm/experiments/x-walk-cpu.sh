# x-walk-cpu: an experiment, not part of the suite (issue 23). Where an all-files read's time goes
# on each side of the FUSE connection: the server's user and system CPU (/proc/PID/stat, ticks
# of 10 ms) and the rescheduling IPIs of the whole VM (/proc/interrupts RES: a wake-up sent to
# the other CPU) over cat */memory.current of 2,000 cgroups, 3 runs each, for the daemon with
# its default workers, floorfs -r -F 0 -s, and the daemon with --max-threads 1.
#   cp tests/vm/experiments/x-walk-cpu.sh tests/vm/scenarios/
#   OOMD_VM_MEM=3072 tests/vm/run-vm.sh --build-dir build --kernel 6.12 --scenario x-walk-cpu
#   rm tests/vm/scenarios/x-walk-cpu.sh
# timeout: 1200
. /oomd/lib.sh
N=2000
res() { awk '/^ *RES:/ { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s }' /proc/interrupts; }
cpu() { awk '{ print "user " $14 " sys " $15 }' "/proc/$1/stat"; }
# run LABEL DIR PID
run() {
	cat "$2"/*/memory.current >/dev/null
	for r in 1 2 3; do
		c0=$(cpu "$3"); r0=$(res); t0=$(now_ms)
		cat "$2"/*/memory.current >/dev/null
		t1=$(now_ms); r1=$(res); c1=$(cpu "$3")
		echo "X $1 run $r: $((t1 - t0)) ms, RES IPIs $((r1 - r0)), server ticks $c0 -> $c1"
	done
}
p=$(mkcg x)
setknob "$p" cgroup.subtree_control +memory
(cd "$p" && seq 0 $((N - 1)) | sed 's/^/c/' | xargs mkdir) || fail "mkdir"
floor_exact "$p" $N /floorx
start_daemon /shadow
run shadow "/shadow${p#$CGROOT}" "$DAEMON_PID"
run floor "/floorx${p#$CGROOT}" "$FLOOR_PID"
stop_daemon
start_daemon /shadow --max-threads 1
run shadow-1-worker "/shadow${p#$CGROOT}" "$DAEMON_PID"
run floor "/floorx${p#$CGROOT}" "$FLOOR_PID"
stop_daemon
kill -TERM "$FLOOR_PID"
pass "measured"
