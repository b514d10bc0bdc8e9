# x-read-perf: an experiment, not part of the suite (issue 23). Where the daemon's CPU goes while
# one client reads every cgroup's memory.current through the shadow (cat */memory.current over
# 500 cgroups, repeated): `perf record` (cpu-clock, call graphs) on the daemon, then perf's
# report by symbol, with and without children. Needs perf in the image:
#   cp tests/vm/experiments/x-read-perf.sh tests/vm/scenarios/
#   OOMD_VM_EXTRA_BINS=/usr/bin/perf tests/vm/run-vm.sh --build-dir build --kernel 6.12 \
#     --scenario x-read-perf
#   rm tests/vm/scenarios/x-read-perf.sh
# timeout: 900
. /oomd/lib.sh
command -v perf >/dev/null || skip "perf is not in the image (OOMD_VM_EXTRA_BINS=/usr/bin/perf)"
start_daemon /shadow
p=$(mkcg x); sp=/shadow${p#$CGROOT}
setknob "$p" cgroup.subtree_control +memory
(cd "$p" && seq 0 499 | sed 's/^/c/' | xargs mkdir) || fail "mkdir"
# profile PID DIR: the all-files read of DIR, 6 times, with PID under perf
profile() {
	cat "$2"/*/memory.current >/dev/null
	perf record -F 2000 -e cpu-clock -g -o /tmp/perf.data -p "$1" -- sleep 15 >/tmp/perf.log 2>&1 &
	PP=$!
	sleep 1
	t0=$(now_ms)
	i=0
	while [ $i -lt 6 ]; do cat "$2"/*/memory.current >/dev/null; i=$((i + 1)); done
	log "$2: 6 x 500 files in $(($(now_ms) - t0)) ms"
	wait $PP
	cat /tmp/perf.log
	perf report -i /tmp/perf.data --stdio --no-children --sort dso,sym -g none 2>/dev/null | grep "%" | head -40
	echo "=== by dso"
	perf report -i /tmp/perf.data --stdio --no-children --sort dso -g none 2>/dev/null | grep "%" | head -12
}
floor_exact "$p" 500 /floorx
echo "===== the shadow"
profile "$DAEMON_PID" "$sp"
echo "===== floorfs -r -F 0 -s"
profile "$FLOOR_PID" "/floorx${p#$CGROOT}"
kill -TERM "$FLOOR_PID"
stop_daemon
pass "profiled"
