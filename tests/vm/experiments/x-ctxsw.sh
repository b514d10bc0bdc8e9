# x-ctxsw: an experiment, not part of the suite (issue 23). Which of the daemon's threads switch,
# and how often, while one client reads every cgroup's memory.current through the shadow (cat
# */memory.current over 500 cgroups, 4 times): voluntary and involuntary context switches per
# thread (/proc/PID/task/*/status) before and after, per file read, beside floorfs -r -F 0 -s.
#   cp tests/vm/experiments/x-ctxsw.sh tests/vm/scenarios/
#   tests/vm/run-vm.sh --build-dir build --kernel 6.12 --scenario x-ctxsw
#   rm tests/vm/scenarios/x-ctxsw.sh
# timeout: 600
. /oomd/lib.sh
start_daemon /shadow
p=$(mkcg x); sp=/shadow${p#$CGROOT}
setknob "$p" cgroup.subtree_control +memory
(cd "$p" && seq 0 499 | sed 's/^/c/' | xargs mkdir) || fail "mkdir"
# snap PID: "tid comm vol invol" per thread
snap() {
	for t in /proc/$1/task/*; do
		echo "$(basename $t) $(tr ' ' _ <$t/comm) $(awk '/^voluntary_ctxt/ {v=$2} /^nonvoluntary_ctxt/ {n=$2} END {print v, n}' $t/status)"
	done | sort -n
}
# count PID DIR: per-thread switches over 4 reads of DIR/*/memory.current
count() {
	cat "$2"/*/memory.current >/dev/null
	snap "$1" >/tmp/cs.a
	t0=$(now_ms)
	i=0
	while [ $i -lt 4 ]; do cat "$2"/*/memory.current >/dev/null; i=$((i + 1)); done
	t1=$(now_ms)
	snap "$1" >/tmp/cs.b
	awk -v t=$((t1 - t0)) '
		NR == FNR { v0[$1] = $3; n0[$1] = $4; next }
		{ dv = $3 - v0[$1]; dn = $4 - n0[$1]; if (dv + dn) printf "  %-8s %-18s vol %6d invol %5d  (%.2f/file)\n", $1, $2, dv, dn, (dv + dn) / 2000; V += dv; N += dn }
		END { printf "  total vol %d invol %d: %.2f switches per file; %d ms for 2000 files\n", V, N, (V + N) / 2000, t }' /tmp/cs.a /tmp/cs.b
}
floor_exact "$p" 500 /floorx
echo "===== the shadow"
count "$DAEMON_PID" "$sp"
echo "===== floorfs -r -F 0 -s"
count "$FLOOR_PID" "/floorx${p#$CGROOT}"
echo "===== the shadow again"
count "$DAEMON_PID" "$sp"
echo "===== floorfs -r -F 0 -s again"
count "$FLOOR_PID" "/floorx${p#$CGROOT}"
stop_daemon
# the best a single reader could do for one client: the shadow with one worker
start_daemon /shadow --max-threads 1
echo "===== the shadow, --max-threads 1"
count "$DAEMON_PID" "$sp"
count "$DAEMON_PID" "$sp"
kill -TERM "$FLOOR_PID"
stop_daemon
pass "counted"
