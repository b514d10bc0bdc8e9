# f-levels-restart (issues 20 and 22): usage thresholds and memory.pressure_level listeners
# outlive the server, as OOM listeners do (f-listener-restart). Two listeners of the kernel's
# cgroup_event_listener kind (progs/cgevl.c) register through the shadow of a --supervise
# daemon: "memory.usage_in_bytes 16M" and "memory.pressure_level low". The server is then ended
# twice: SIGKILL (a crash) and SIGUSR2 to the supervisor (the upgrade). Each time a 24 MiB hog
# holds the usage above 16M across the restart: the successor must carry both listeners (one
# of each, no doubles, nothing dropped: its log line) and must not signal the threshold for the
# restart (it takes the usage at the re-take as its baseline); the hog is then killed
# (cgroup.kill): the threshold hears exactly one crossing, downwards. Then the limit is
# lowered to 32 MiB and a 48 MiB hog is killed by the kernel: the threshold hears the crossing
# upwards and the pressure listener the limit/OOM (as d-v1notify). Last, rmdir: both get
# v1's last signal. Figures: the gaps, the listeners carried, the signals after each restart.
# timeout: 300
. /oomd/lib.sh
command -v cgevl >/dev/null || skip "tests/vm/progs/cgevl is not built"
# heard FILE: the signals a cgevl transcript counted so far (event lines' count=)
heard() { awk '$1 == "event" { split($3, c, "="); n += c[2] } END { print n + 0 }' "$1"; }
more() { [ "$(heard "$1")" -gt "$2" ]; } # more FILE N: FILE heard more than N
retaken() { grep -c 'OOM listeners carried over' /tmp/oomdelayfs.log; }
more_retaken() { [ "$(retaken)" -gt "$1" ]; }
registered() { grep -q '^registered' "$1"; }
start_daemon /shadow --supervise --watchdog-sec 3
cg=$(mkcg lv); s=/shadow${cg#$CGROOT}
setknob "$s" memory.max $((64 * MiB))
cgevl listen "$s/memory.usage_in_bytes" 16M --timeout 280000 >/tmp/lv.thr 2>&1 &
TP=$!
cgevl listen "$s/memory.pressure_level" low --timeout 280000 >/tmp/lv.low 2>&1 &
LP=$!
wait_for 10000 registered /tmp/lv.thr || fail "the threshold did not register: $(cat /tmp/lv.thr)"
wait_for 10000 registered /tmp/lv.low || fail "the pressure listener did not register: $(cat /tmp/lv.low)"
figs=""
for kind in kill upgrade; do
	# usage above 16M across the restart
	t0=$(heard /tmp/lv.thr)
	cgevl hog "$cg" 24 60000 >/tmp/lv.hog.$kind 2>&1 &
	HP=$!
	wait_for 15000 more /tmp/lv.thr "$t0" || fail "before the $kind: 24 MiB, the 16M threshold heard nothing: $(cat /tmp/lv.thr); usage $(current "$cg")"
	usleep 500000
	t1=$(heard /tmp/lv.thr) l1=$(heard /tmp/lv.low)
	c0=$(retaken)
	gap=$(restart_server "$kind")
	wait_for 10000 more_retaken "$c0" || fail "after the $kind: the listeners were not re-taken: $(grep -i 'listener' /tmp/oomdelayfs.log | tail -n 4)"
	line=$(grep 'OOM listeners carried over' /tmp/oomdelayfs.log | tail -n 1)
	echo "$line"
	case "$line" in
	*"takeover: 0 OOM listeners carried over, 1 usage thresholds, 1 pressure level listeners (0 dropped; 0 signalled"*) ;;
	*) fail "after the $kind: not exactly the two listeners carried: $line; why: $(grep 'not carried over' /tmp/oomdelayfs.log | tail -n 2 | tr '\n' ' ')" ;;
	esac
	u=$(current "$cg")
	[ "$u" -gt $((16 * MiB)) ] || fail "after the $kind: the hog no longer holds the usage above 16M ($u): the check below would prove nothing"
	sleep 1
	[ "$(heard /tmp/lv.thr)" = "$t1" ] || fail "after the $kind: the threshold was signalled for the restart (usage $u stayed above 16M): $(tail -n 3 /tmp/lv.thr)"
	# the crossing downwards: heard once (twice would be a doubled listener)
	echo 1 >"$cg/cgroup.kill"
	wait_for 5000 dead "$HP" || fail "the hog survived cgroup.kill"
	wait_for 5000 more /tmp/lv.thr "$t1" || fail "after the $kind: the crossing downwards was not heard: $(tail -n 3 /tmp/lv.thr)"
	sleep 1
	t2=$(heard /tmp/lv.thr)
	[ "$t2" = $((t1 + 1)) ] || fail "after the $kind: $((t2 - t1)) signals for one crossing"
	# the limit: the threshold crossed upwards, the pressure listener hears the reclaim/OOM
	setknob "$s" memory.max $((32 * MiB))
	cgevl hog "$cg" 48 1000 >/tmp/lv.oom.$kind 2>&1
	grep -q killed /tmp/lv.oom.$kind || fail "after the $kind: the 48 MiB hog was not killed at 32 MiB: $(cat /tmp/lv.oom.$kind)"
	wait_for 5000 more /tmp/lv.thr "$t2" || fail "after the $kind: the limit hog's crossing was not heard: $(tail -n 3 /tmp/lv.thr)"
	wait_for 5000 more /tmp/lv.low "$l1" || fail "after the $kind: the pressure listener heard nothing at the limit: $(cat /tmp/lv.low)"
	setknob "$s" memory.max $((64 * MiB))
	wait_for 5000 unpopulated "$cg" || fail "tasks left in $cg"
	sleep 1
	figs="$figs $kind: gap ${gap} ms, threshold +$(($(heard /tmp/lv.thr) - t1)) pressure +$(($(heard /tmp/lv.low) - l1));"
done
t3=$(heard /tmp/lv.thr) l3=$(heard /tmp/lv.low)
rmdir "$cg" || fail "rmdir $cg"
wait_for 5000 grep -q '^removed' /tmp/lv.thr || fail "the threshold listener did not see the removal: $(tail -n 3 /tmp/lv.thr)"
wait_for 5000 grep -q '^removed' /tmp/lv.low || fail "the pressure listener did not see the removal: $(tail -n 3 /tmp/lv.low)"
[ "$(heard /tmp/lv.thr)" -gt "$t3" ] || fail "no rmdir signal to the carried threshold: $(tail -n 3 /tmp/lv.thr)"
[ "$(heard /tmp/lv.low)" -gt "$l3" ] || fail "no rmdir signal to the carried pressure listener: $(tail -n 3 /tmp/lv.low)"
wait "$TP" "$LP" 2>/dev/null
stop_daemon
pass "a 16M threshold and a low pressure listener carried over (1 each, none doubled, no signal for the restart):$figs both signalled at rmdir"
