# s-listener-wedge (issue 10, deliverable 1): uid 1000 registers, on a root-owned cgroup's
# readable memory.oom_control, a blocking eventfd whose counter it filled to 2^64-2 (a write
# of 1 sleeps until someone reads), and never reads. Before the fix the daemon's write slept
# at that cgroup's OOM onset, under a lock on the kill path's thread: neither that cgroup nor
# an unrelated one was killed within 8 s. Now: both (T = 600 ms, L = 32 MiB) are killed on
# time (the kernel's kill within 2 s of each deadline, never before), a legitimate listener
# of the same uid beside the wedged one hears the onset, and a knob write right after
# answers at once.
# Figures: each kill's lateness after its deadline, the legitimate listener's signal time
# after the onset, the knob write's duration.
# timeout: 150
. /oomd/lib.sh
start_daemon /shadow
L=$((32 * MiB))
cga=$(mkcg wa); sa=/shadow${cga#$CGROOT}
cgb=$(mkcg wb); sb=/shadow${cgb#$CGROOT}
for s in "$sa" "$sb"; do
	setknob "$s" memory.max "$L"
	setknob "$s" memory.oom_delay_millisecs 600
done
[ "$(stat -c %u "$sa/memory.oom_control")" = 0 ] || fail "memory.oom_control of $sa is not root's"
rm -f /tmp/w.ready /tmp/g.ready
odt asuser 1000 1000 evhostile wedge "$sa" --ready /tmp/w.ready >/tmp/w.out 2>&1 &
wait_for 5000 test -e /tmp/w.ready || fail "the wedged listener did not register: $(cat /tmp/w.out)"
odt asuser 1000 1000 v1listener "$sa" --count 1 --timeout 60000 --ready /tmp/g.ready >/tmp/g.out 2>&1 &
GPID=$!
wait_for 5000 test -e /tmp/g.ready || fail "the legitimate listener did not register: $(cat /tmp/g.out)"
ka=$(evkey "$cga" oom_kill); kb=$(evkey "$cgb" oom_kill)
kill_watch "$cga"; kill_watch "$cgb"
start_hog "$cga" 256; ha=$HOG_PID
start_hog "$cgb" 256; hb=$HOG_PID
# two hogs on an emulated CPU: one can pass L seconds after the other
wait_for 20000 _has_deadline "$cga" || fail "no hold of $cga within 20 s ($(hold_state "$cga" "$sa"))"
wait_for 20000 _has_deadline "$cgb" || fail "no hold of $cgb within 20 s ($(hold_state "$cgb" "$sb"))"
dla=$(deadline_ns "$cga")
dlb=$(deadline_ns "$cgb")
wait_for 10000 dead "$ha" || fail "the wedged listener's cgroup: hog alive 10 s after the deadline ($(hold_state "$cga" "$sa"))"
wait_for 10000 dead "$hb" || fail "the unrelated cgroup: hog alive 10 s after the deadline ($(hold_state "$cgb" "$sb"))"
kla=$(kill_late "$cga" "$dla")
klb=$(kill_late "$cgb" "$dlb")
for x in "$kla" "$klb"; do
	awk -v l="$x" 'BEGIN { exit !(l < 2000) }' || fail "a kill came $x ms after its deadline (a: $kla, b: $klb)"
done
[ "$(evkey "$cga" oom_kill)" -gt "$ka" ] || fail "the kernel's oom_kill of $cga did not move"
[ "$(evkey "$cgb" oom_kill)" -gt "$kb" ] || fail "the kernel's oom_kill of $cgb did not move"
wait_for 5000 grep -q '^signal 1 ' /tmp/g.out || fail "the legitimate listener beside the wedged one heard nothing: $(cat /tmp/g.out)"
wait "$GPID" || fail "v1listener exited $?: $(cat /tmp/g.out)"
tsig=$(awk '/^signal 1 /{print $3}' /tmp/g.out)
onset=$((dla / 1000000 - 600))
t0=$(now_ms)
setknob "$sb" memory.oom_delay_millisecs 600
tw=$(($(now_ms) - t0))
[ "$tw" -lt 3000 ] || fail "a knob write took $tw ms (two forks of odt included)"
alive "$DAEMON_PID" || fail "the daemon died"
grep -E "dropped the OOM listener|cannot signal" /tmp/oomdelayfs.log
stop_daemon
pass "kills after their deadlines: wedged listener's cgroup +$kla ms, unrelated cgroup +$klb ms;" \
	"legitimate listener (uid 1000) signalled $(awk -v s="$tsig" -v o="$onset" 'BEGIN{printf "%.0f", s - o}') ms after the onset;" \
	"knob write after: $tw ms"
