# f-listener-restart (issue 20, deliverable 1): cgroup.event_control registrations outlive the
# server. Two v1 listeners (progs/v1listener.c: eventfd + cgroup.event_control on the shadow
# memory.oom_control, then blocking in read(2), as the kernel's cgroup_event_listener does) are
# registered before anything happens; one of them forks and its parent exits (a daemonizing
# handler: only the child holds the eventfd). The server of a --supervise --watchdog-sec 3
# daemon is then ended three ways: SIGKILL, SIGSTOP (the watchdog kills it), SIGUSR2 to the
# supervisor (the upgrade path). After each, a hog over L (T = 400 ms) is held and killed: both
# listeners must hear that onset. Then, during a hold, the server is SIGKILLed once more and a
# third listener registers with the successor: it is signalled at once (the hold was adopted).
# Last, the cgroup is removed: the carried listeners get their last signal (v1's rmdir).
# Figures: the gaps, the signal latency after each onset, the listeners carried.
# timeout: 300
. /oomd/lib.sh
command -v v1listener >/dev/null || skip "tests/vm/progs/v1listener is not built"
uoom() { grep -q '^under_oom 1' "$1/memory.oom_control"; }
sigs() { grep -c '^signal' "$1"; }
retaken() { grep -c 'OOM listeners carried over' /tmp/oomdelayfs.log; }
more_retaken() { [ "$(retaken)" -gt "$1" ]; }
holds() { grep -c 'hold [0-9]* ended' /tmp/oomdelayfs.log; }
more() { [ "$(sigs "$1")" -gt "$2" ]; } # more FILE N: FILE has more than N signals
start_daemon /shadow --supervise --watchdog-sec 3
L=$((32 * MiB))
cg=$(mkcg lr); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max "$L"
setknob "$s" memory.oom_delay_millisecs 400
rm -f /tmp/lr.ready /tmp/lf.ready
v1listener "$s" --timeout 280000 --ready /tmp/lr.ready >/tmp/lr.out 2>&1 &
LP=$!
v1listener "$s" --timeout 280000 --fork --ready /tmp/lf.ready >/tmp/lf.out 2>&1 &
wait_for 10000 test -e /tmp/lr.ready -a -e /tmp/lf.ready || fail "the listeners did not register: $(cat /tmp/lr.out /tmp/lf.out)"
figs=""
for kind in kill watchdog upgrade; do
	n1=$(sigs /tmp/lr.out); n2=$(sigs /tmp/lf.out); h0=$(holds)
	c0=$(retaken)
	gap=$(restart_server "$kind")
	wait_for 10000 more_retaken "$c0" || fail "after the $kind: the listeners were not re-taken: $(grep -i 'listener' /tmp/oomdelayfs.log | tail -n 4)"
	carried=$(grep 'OOM listeners carried over' /tmp/oomdelayfs.log | tail -n 1 | sed -n 's/.*takeover: \([0-9]*\) OOM listeners carried over.*/\1/p')
	[ "$carried" = 2 ] || fail "after the $kind: '$carried' listeners carried, not 2: $(grep -i 'listener' /tmp/oomdelayfs.log | tail -n 4)"
	setknob "$s" memory.oom_delay_millisecs 400 # the delay is one-shot: armed again for this onset
	t0=$(now_ms)
	start_hog "$cg" 256
	wait_for 15000 dead "$HOG_PID" || fail "after the $kind: the hog was not killed ($(hold_state "$cg" "$s"))"
	wait_for 5000 more /tmp/lr.out "$n1" || fail "after the $kind: the listener heard nothing: $(cat /tmp/lr.out)"
	wait_for 5000 more /tmp/lf.out "$n2" || fail "after the $kind: the forked listener heard nothing: $(cat /tmp/lf.out)"
	[ "$(holds)" -gt "$h0" ] || fail "after the $kind: the hog was killed without a hold"
	ts=$(grep '^signal' /tmp/lr.out | tail -n 1 | awk -v t="$t0" '{ printf "%d", $3 - t }')
	figs="$figs $kind: gap ${gap} ms, heard +${ts} ms after the hog started;"
done
# a registration with the successor during a hold the previous server began
setknob "$s" memory.oom_delay_millisecs 20000
start_hog "$cg" 256
H=$HOG_PID
wait_for 15000 uoom "$s" || fail "no hold: $(hold_state "$cg" "$s")"
gap=$(restart_server kill)
wait_for 10000 uoom "$s" || fail "the successor does not show the hold: $(cat "$s/memory.oom_control")"
r=$(v1listener "$s" --count 1 --timeout 5000 2>&1) || fail "a registration during the hold, after the takeover, was not signalled at once: $r"
kill -KILL "$H"
wait_for 5000 dead "$H"
# rmdir: the last signal to the carried listeners
n1=$(sigs /tmp/lr.out); n2=$(sigs /tmp/lf.out)
wait_for 5000 unpopulated "$cg" || fail "the cgroup still has tasks"
rmdir "$cg" || fail "rmdir $cg"
wait_for 5000 more /tmp/lr.out "$n1" || fail "no signal at rmdir: $(cat /tmp/lr.out)"
wait_for 5000 more /tmp/lf.out "$n2" || fail "no signal at rmdir to the forked listener: $(cat /tmp/lf.out)"
kill "$LP" 2>/dev/null
stop_daemon
pass "2 listeners (one forked, its parent gone) carried over:$figs a registration during a hold after a SIGKILL (gap ${gap} ms) signalled at once; both signalled at rmdir"
